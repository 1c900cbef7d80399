//! A server's dispatcher that answers every message, for runtime tests.
#![allow(dead_code)] // each test binary uses what it needs

use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use msgr_messenger::{Connection, Dispatcher, IncomingMessage, Message};

/// CEPH_MSG_PING: answered with an empty reply, and counted apart.
pub const MSG_PING: u16 = 2;
/// The reply's type (CEPH_MSG_OSD_OPREPLY), with the request's tid.
pub const REPLY: u16 = 43;
/// A message type Echo answers with `burst` empty replies.
pub const AMPLIFY: u16 = 44;

/// Answers every message with a REPLY of its tid: of `reply_len` bytes,
/// empty for an MPing, and `burst` empty ones for an AMPLIFY; counts what
/// it answered, and the MPings apart. [`Echo::new`]: one empty reply to
/// each.
pub struct Echo {
    pub reply_len: usize,
    pub burst: usize,
    pub served: AtomicU64,
    pub pings: AtomicU64,
}

impl Echo {
    /// One empty reply to each message.
    pub fn new() -> Echo {
        Echo::sized(0, 1)
    }

    /// Replies of `reply_len` bytes, and `burst` of them to an AMPLIFY.
    pub fn sized(reply_len: usize, burst: usize) -> Echo {
        Echo {
            reply_len,
            burst,
            served: AtomicU64::new(0),
            pings: AtomicU64::new(0),
        }
    }
}

impl Dispatcher for Echo {
    fn ms_dispatch(&self, conn: &Connection, msg: IncomingMessage) {
        self.served.fetch_add(1, Ordering::Relaxed);
        let (replies, len) = match msg.msg_type {
            MSG_PING => {
                self.pings.fetch_add(1, Ordering::Relaxed);
                (1, 0)
            }
            AMPLIFY => (self.burst, 0),
            _ => (1, self.reply_len),
        };
        for _ in 0..replies {
            let mut reply = Message::new(REPLY, Bytes::from(vec![0u8; len]));
            reply.tid = msg.tid;
            conn.send_nowait(reply);
        }
    }
}
