//! A messenger as the admin socket's `messenger dump` shows it (Ceph 20's
//! AsyncMessenger hook; docs/research/admin-socket.md §6): its name,
//! nonce and addresses, what it listens on, and each connection's peer,
//! state, protocol, policy, seqs, queues and counters. Ceph's layout
//! where it has the same thing (`addrvec`, `async_connection`,
//! `worker_id`), ours where it does not.

use msgr_admin::json::{Object, Value};
use msgr_encoding::{EntityAddrType, EntityAddrvec, EntityName};
use msgr_transport::Transport;

use super::Messenger;
use crate::connection::Connection;

impl<T: Transport> Messenger<T> {
    /// `messenger dump`: `contents` picks sections (`listen_sockets`,
    /// `by_type`, `connections`; none or `all`: every one).
    pub fn dump(&self, contents: &[String]) -> Value {
        let all = contents.is_empty() || contents.iter().any(|c| c == "all");
        let want = |s: &str| all || contents.iter().any(|c| c == s);
        let addrs = self.addrs();
        let mut m = Object::new();
        m.set("nonce", addrs.0.first().map_or(0, |a| a.nonce))
            .set("my_name", name(&self.name()))
            .set("my_addrs", addrvec(&addrs));
        if want("listen_sockets") {
            let listening = self
                .inner
                .listening
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            m.set("listen_sockets", addrvec(&listening));
        }
        if want("by_type") {
            let mut types = Object::new();
            for (name, t) in self.traffic_by_type() {
                let mut o = Object::new();
                o.set("recv_messages", t.recv_messages)
                    .set("recv_bytes", t.recv_bytes)
                    .set("send_messages", t.send_messages)
                    .set("send_bytes", t.send_bytes);
                types.set(name, o.into_value());
            }
            m.set("by_type", types.into_value());
        }
        let conns = self.connections();
        m.set("connections_count", conns.len());
        if want("connections") {
            m.set(
                "connections",
                Value::Array(conns.iter().map(connection).collect()),
            );
        }
        m.into_value()
    }
}

fn name(n: &EntityName) -> Value {
    let mut o = Object::new();
    o.set("type", n.kind.to_string()).set("num", n.num);
    o.into_value()
}

fn addrvec(v: &EntityAddrvec) -> Value {
    let list =
        v.0.iter()
            .map(|a| {
                let kind = match a.kind {
                    EntityAddrType::MSGR2 => "v2",
                    EntityAddrType::LEGACY => "v1",
                    EntityAddrType::ANY => "any",
                    _ => "none",
                };
                let mut o = Object::new();
                o.set("type", kind)
                    .set("addr", a.addr.map(|s| s.to_string()))
                    .set("nonce", a.nonce);
                o.into_value()
            })
            .collect();
    let mut o = Object::new();
    o.set("addrvec", Value::Array(list));
    o.into_value()
}

fn connection(c: &Connection) -> Value {
    let peer_addrs = c.peer_addrs();
    let mut peer = Object::new();
    peer.set("entity_name", c.peer_name().map(|n| n.to_string()))
        .set("type", c.peer_type().to_string())
        .set("global_id", c.peer_identity().map(|i| i.global_id))
        .set("addr", addrvec(&peer_addrs));
    let mut protocol = Object::new();
    protocol
        .set("state", format!("{:?}", c.state()))
        .set("con_mode", c.con_mode().map(|m| m.to_string()))
        .set("rev1", c.rev1())
        .set("compression", c.compression().map(|a| format!("{a:?}")))
        .set("features", c.features());
    let mut proto = Object::new();
    proto.set(
        if c.is_msgr1() { "v1" } else { "v2" },
        protocol.into_value(),
    );
    let (in_seq, out_seq) = c.seqs();
    let (messages, bytes) = c.queued();
    let (bytes_in, bytes_out) = c.bytes();
    let s = c.stats();
    let mut counters = Object::new();
    counters
        .set("messages_in", s.messages_in)
        .set("messages_out", s.messages_out)
        .set("bytes_in", bytes_in)
        .set("bytes_out", bytes_out)
        .set("connect_attempts", s.connect_attempts)
        .set("reconnects", s.reconnects)
        .set("faults", s.faults)
        .set("duplicates_dropped", s.duplicates_dropped)
        .set("last_handshake_us", s.last_handshake_ns / 1000);
    let mut conn = Object::new();
    conn.set("conn_id", c.id())
        .set("state", format!("{:?}", c.state()))
        .set("worker_id", c.shard())
        .set("peer", peer.into_value())
        .set("protocol", proto.into_value())
        .set("policy", c.policy().map(policy))
        .set("in_seq", in_seq)
        .set("out_seq", out_seq)
        .set("queued_messages", messages)
        .set("queued_bytes", bytes)
        .set("counters", counters.into_value())
        .set("last_fault", c.last_fault().map(|e| e.to_string()));
    let mut o = Object::new();
    o.set("addrvec", addrvec(&peer_addrs).get("addrvec").cloned())
        .set("async_connection", conn.into_value());
    o.into_value()
}

fn policy(p: msgr_protocol::Policy) -> Value {
    let mut o = Object::new();
    o.set(
        "name",
        msgr_protocol::PolicyName::of(&p).map(|n| n.as_str()),
    )
    .set("lossy", p.lossy)
    .set("server", p.server)
    .set("standby", p.standby)
    .set("resetcheck", p.resetcheck);
    o.into_value()
}
