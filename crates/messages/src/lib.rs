//! Ceph message types carried in msgr2 MESSAGE frames. The messenger moves
//! a header and front / middle / data segments; this crate gives them
//! meaning.
#![forbid(unsafe_code)]

pub mod mon;
pub mod monmap;
pub mod osd_op;
pub mod osd_types;
pub mod simple;
mod typed;
mod types;

pub use mon::*;
pub use monmap::{MonInfo, MonMap};
pub use osd_op::{MOSDOp, MOSDOpReply, MSG_OSD_OP, MSG_OSD_OPREPLY};
pub use simple::{MCommand, MCommandReply, MPing};
pub use typed::{MessageError, TypedMessage};
pub use types::{message_type_name, MESSAGE_TYPES};
