//! cephx (src/auth/cephx/): keys, keyrings, the ticket protocol, and the
//! client and server authenticators built on them.

pub mod client;
pub mod crypto;
pub mod key;
pub mod key_server;
pub mod keyring;
pub mod provider;
pub mod server;
pub mod tickets;
pub mod wire;

pub use client::{CephxClient, CephxConnAuth};
pub use crypto::{usage, CryptoError};
pub use key::{CryptoKey, KeyKind};
pub use key_server::KeyServer;
pub use keyring::{Keyring, KeyringEntry};
pub use provider::CephxProvider;
pub use server::{CephxServer, CephxServerAuth};
