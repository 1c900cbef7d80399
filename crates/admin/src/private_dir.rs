//! Private directories, for what a program makes for itself (a keyring,
//! an admin socket staged before it is linked into place). A fixed or guessable name in the shared
//! temporary directory lets another local user put a file there first (a
//! keyring whose keys they know, which `msgr serve --keyring` would load,
//! or a symlink that a write follows); a directory made fresh under a
//! random name, that only its owner may enter, does not.

use std::fs::{DirBuilder, Permissions};
use std::hash::{BuildHasher, Hasher};
use std::io;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// A directory only its owner may enter, made fresh in the system's
/// temporary directory; removed, with what it holds, when dropped.
#[derive(Debug)]
pub struct PrivateDir {
    path: PathBuf,
}

impl PrivateDir {
    /// A new directory `PREFIX-RANDOM` in the system's temporary directory.
    pub fn new(prefix: &str) -> io::Result<PrivateDir> {
        PrivateDir::new_in(&std::env::temp_dir(), prefix)
    }

    /// A new directory `PREFIX-RANDOM` in `parent`, mode 0700. Creation
    /// fails rather than reuse a directory that is there already (someone
    /// else's, or a symlink), and another name is tried.
    pub fn new_in(parent: &Path, prefix: &str) -> io::Result<PrivateDir> {
        let mut last = None;
        for attempt in 0u32..16 {
            // RandomState's keys come from the system's random source.
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_u32(attempt);
            let path = parent.join(format!("{prefix}-{:016x}", h.finish()));
            // 0700 less the umask: never open to others, from creation.
            match DirBuilder::new().mode(0o700).create(&path) {
                Ok(()) => {
                    let dir = PrivateDir { path };
                    // The umask may have taken the owner's bits too.
                    std::fs::set_permissions(&dir.path, Permissions::from_mode(0o700))?;
                    return Ok(dir);
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some(e),
                Err(e) => {
                    return Err(io::Error::new(
                        e.kind(),
                        format!("making a directory in {}: {e}", parent.display()),
                    ))
                }
            }
        }
        Err(last.unwrap_or_else(|| io::Error::from(io::ErrorKind::AlreadyExists)))
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `name` in the directory.
    pub fn join(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }
}

impl Drop for PrivateDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fresh_directory_only_its_owner_may_enter() {
        let a = PrivateDir::new("msgr-tempdir-test").expect("a private directory");
        let b = PrivateDir::new("msgr-tempdir-test").expect("another");
        assert_ne!(a.path(), b.path());
        let meta = std::fs::symlink_metadata(a.path()).expect("stat it");
        assert!(meta.is_dir());
        assert_eq!(meta.permissions().mode() & 0o7777, 0o700);
        assert_eq!(a.path().parent(), Some(std::env::temp_dir().as_path()));
        std::fs::write(a.join("f"), b"x").expect("write in it");
        let path = a.path().to_path_buf();
        drop(a);
        assert!(!path.exists(), "removed with what it held");
    }
}
