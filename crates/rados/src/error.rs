//! What a RADOS request can fail with, and the names of the errnos OSDs
//! answer with.

use msgr_monc::MonError;

/// What went wrong with a request.
#[derive(Debug)]
pub enum RadosError {
    /// The monitors could not be reached or refused us.
    Mon(MonError),
    /// No pool of that name.
    NoPool(String),
    /// The configuration could not be read or holds a bad value (which
    /// file or option, and why): fix it before connecting.
    Config(String),
    /// An OSD (or the objecter) answered with an errno.
    Os {
        /// The negative errno.
        errno: i32,
        /// What was being done.
        what: String,
    },
    /// A reply that could not be read.
    BadReply(String),
    /// The client is shut down.
    Shutdown,
    /// An OSD's paging did not move on (a listing cursor that is not past
    /// the one asked with, omap keys not after the last one, with more
    /// promised): asking again would go round for ever. The OSD's fault.
    NoProgress {
        /// The OSD that did not move on.
        osd: i32,
        /// What was being paged (a listing, omap keys).
        what: String,
        /// What was asked and what the OSD answered.
        detail: String,
    },
    /// An argument the request cannot carry (e.g. a class name longer
    /// than the 255 bytes CEPH_OSD_OP_CALL has room for); nothing was
    /// sent. Reported as EINVAL by [`RadosError::errno`].
    InvalidArgument(String),
}

/// The name of an errno an OSD returns (negative or not).
pub fn errno_name(errno: i32) -> &'static str {
    match errno.saturating_abs() {
        1 => "EPERM (operation not permitted)",
        2 => "ENOENT (no such object)",
        5 => "EIO (input/output error)",
        6 => "ENXIO (no such device: not up, or not the active one)",
        7 => "E2BIG (argument list too long)",
        11 => "EAGAIN (try again)",
        13 => "EACCES (permission denied)",
        16 => "EBUSY (resource busy: e.g. locked by another)",
        17 => "EEXIST (object exists)",
        22 => "EINVAL (invalid argument)",
        27 => "EFBIG (object too large)",
        28 => "ENOSPC (no space left)",
        34 => "ERANGE (out of range)",
        61 => "ENODATA (no such attribute)",
        95 => "EOPNOTSUPP (operation not supported)",
        108 => "ESHUTDOWN (client blocklisted)",
        110 => "ETIMEDOUT (timed out)",
        122 => "EDQUOT (quota exceeded)",
        125 => "ECANCELED (canceled)",
        _ => "unknown errno",
    }
}

impl std::fmt::Display for RadosError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RadosError::Mon(e) => write!(f, "monitors: {e}"),
            RadosError::NoPool(p) => write!(f, "pool {p} does not exist"),
            RadosError::Config(why) => write!(f, "configuration: {why}"),
            RadosError::Os { errno, what } => {
                write!(f, "{what}: error {errno}: {}", errno_name(*errno))
            }
            RadosError::BadReply(why) => write!(f, "an OSD's reply: {why}"),
            RadosError::Shutdown => write!(f, "the client is shut down"),
            RadosError::NoProgress { osd, what, detail } => write!(
                f,
                "osd.{osd} made no progress in {what} (the OSD is at fault): {detail}"
            ),
            RadosError::InvalidArgument(why) => write!(f, "invalid argument: {why}"),
        }
    }
}

impl std::error::Error for RadosError {}

impl From<MonError> for RadosError {
    fn from(e: MonError) -> Self {
        RadosError::Mon(e)
    }
}

impl RadosError {
    /// The errno, for errors that have one.
    pub fn errno(&self) -> Option<i32> {
        match self {
            RadosError::Os { errno, .. } => Some(*errno),
            RadosError::InvalidArgument(_) => Some(-22),
            _ => None,
        }
    }
}
