//! Authentication errors, with the errno Ceph would put in AUTH_BAD_METHOD.

use std::fmt;

/// Why authentication failed, and what errno Ceph would answer with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthError {
    /// The method is not allowed (EOPNOTSUPP).
    MethodNotSupported {
        /// The method asked for (`CEPH_AUTH_*`).
        method: u32,
    },
    /// No connection mode both sides allow (EOPNOTSUPP).
    NoCommonMode,
    /// The server allows none of the connection modes we offered: what we
    /// offered, and what it allows (AUTH_BAD_METHOD's allowed modes).
    ModeRefused {
        /// The modes we offered.
        offered: Vec<crate::ConMode>,
        /// The modes the server allows.
        allowed: Vec<crate::ConMode>,
    },
    /// The peer's auth payload does not decode (EINVAL).
    Malformed(String),
    /// The credentials are wrong: bad key, bad ticket (EACCES / EPERM).
    Denied(String),
    /// A ticket or key has expired (EKEYEXPIRED... Ceph answers EACCES).
    Expired(String),
    /// A replayed authorizer or challenge (EACCES).
    Replayed,
    /// The server is busy; the client should retry later (EBUSY).
    Busy,
    /// We have no key for what is asked (ENOENT).
    NoKey(String),
    /// The server refused every method we have.
    NoMethodLeft,
}

impl AuthError {
    /// The negative errno Ceph sends in AUTH_BAD_METHOD for this error.
    pub fn errno(&self) -> i32 {
        // Negated, as sent.
        const ENOENT: i32 = -2;
        const EBUSY: i32 = -16;
        const EINVAL: i32 = -22;
        const EACCES: i32 = -13;
        const EOPNOTSUPP: i32 = -95;
        match self {
            AuthError::MethodNotSupported { .. }
            | AuthError::NoCommonMode
            | AuthError::ModeRefused { .. }
            | AuthError::NoMethodLeft => EOPNOTSUPP,
            AuthError::Malformed(_) => EINVAL,
            AuthError::Denied(_) | AuthError::Expired(_) | AuthError::Replayed => EACCES,
            AuthError::Busy => EBUSY,
            AuthError::NoKey(_) => ENOENT,
        }
    }
}

impl fmt::Display for AuthError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AuthError::MethodNotSupported { method } => {
                write!(f, "auth method {method} not supported")
            }
            AuthError::NoCommonMode => f.write_str("no connection mode allowed by both sides"),
            AuthError::ModeRefused { offered, allowed } => {
                let list = |modes: &[crate::ConMode]| {
                    let names: Vec<String> = modes.iter().map(|m| m.to_string()).collect();
                    names.join(",")
                };
                write!(
                    f,
                    "the peer allows connection mode {}, we offered {} \
                     (ms_client_mode / ms_mon_client_mode, or --mode)",
                    list(allowed),
                    list(offered)
                )
            }
            AuthError::Malformed(why) => write!(f, "malformed auth payload: {why}"),
            AuthError::Denied(why) => write!(f, "authentication denied: {why}"),
            AuthError::Expired(why) => write!(f, "expired: {why}"),
            AuthError::Replayed => f.write_str("replayed authenticator"),
            AuthError::Busy => f.write_str("auth server busy"),
            AuthError::NoKey(what) => write!(f, "no key for {what}"),
            AuthError::NoMethodLeft => f.write_str("the server allows none of our auth methods"),
        }
    }
}

impl std::error::Error for AuthError {}
