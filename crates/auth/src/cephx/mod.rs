//! cephx (src/auth/cephx/): keys, keyrings, the ticket protocol, and the
//! client and server authenticators built on them.

pub mod crypto;
pub mod key;
pub mod keyring;
pub mod wire;

pub use crypto::{usage, CryptoError};
pub use key::{CryptoKey, KeyKind};
pub use keyring::{Keyring, KeyringEntry};
