//! Authentication for msgr2, sans-IO.
//!
//! The handshake (msgr-protocol) drives one authenticator per connection
//! through the auth phase of the msgr2 document ("Authentication"):
//!
//! - the connector's [`ClientAuth`] builds AUTH_REQUEST, answers each
//!   AUTH_REPLY_MORE with AUTH_REQUEST_MORE, may be told AUTH_BAD_METHOD
//!   (and then picks another method), and finally turns AUTH_DONE into an
//!   [`AuthOutcome`]: the session key and the connection secret;
//! - the acceptor's [`ServerAuth`] picks the connection mode, answers each
//!   request with "more", "done" or an error that becomes AUTH_BAD_METHOD.
//!
//! Ceph's interfaces are src/auth/AuthClient.h and AuthServer.h; the mode
//! choice follows ms_{mon_,}client_mode / ms_{mon_,}service_mode. Auth
//! `none` lives here; cephx has its own module.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod base64;
pub mod cephx;
mod error;
mod exchange;
mod identity;
mod keys;
mod modes;
mod multi;
mod none;
mod random;
mod secret;

pub use error::AuthError;
pub use exchange::{
    method, system_clock, AuthOutcome, AuthPeer, AuthProvider, AuthRequest, ClientAuth, Clock,
    ServerAuth, ServerStep,
};
pub use identity::{Caps, Identity};
pub use keys::{Msgr1Signer, SessionKey};
pub use modes::{pick_mode, ConMode};
pub use multi::{FallbackClient, MultiProvider, MultiServer};
pub use none::{NoneClient, NoneProvider, NoneServer};
pub use random::{splitmix64, Random, SeededRandom, SystemRandom};
pub use secret::{ct_eq, Secret};
