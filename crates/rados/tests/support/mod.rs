//! What the integration tests share.
pub mod live;
pub mod memory;
