//! The negative errno librados returns for each failure of ours.

use msgr_monc::MonError;
use msgr_rados::RadosError;

/// The negative errno librados returns for `e`.
pub fn errno_of(e: &RadosError) -> i32 {
    if let Some(n) = e.errno() {
        return n;
    }
    match e {
        RadosError::Mon(m) => mon_errno(m),
        RadosError::NoPool(_) => -libc::ENOENT,
        RadosError::Config(_) | RadosError::InvalidArgument(_) => -libc::EINVAL,
        RadosError::Os { errno, .. } => *errno,
        RadosError::BadReply(_) | RadosError::NoProgress { .. } => -libc::EIO,
        RadosError::Shutdown => -libc::ESHUTDOWN,
    }
}

/// The negative errno librados returns for a monitor failure.
pub fn mon_errno(e: &MonError) -> i32 {
    match e {
        MonError::Command { r, .. } => *r,
        MonError::AuthFailed(_) => -libc::EACCES,
        MonError::Timeout(_) | MonError::Unreachable { .. } => -libc::ETIMEDOUT,
        MonError::NoMonitors | MonError::NoSuchOsd(_) => -libc::ENOENT,
        MonError::Shutdown => -libc::ESHUTDOWN,
        MonError::BadReply(_) => -libc::EIO,
        MonError::TimeoutTooLong(_) => -libc::EINVAL,
    }
}
