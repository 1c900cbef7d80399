//! Human- and machine-readable descriptions of msgr2 frames: the fields a
//! reader of a capture wants per tag.

use msgr_encoding::EntityType;
use msgr_frames::compression::Algorithm;
use msgr_frames::control::{auth_method, con_mode};
use msgr_frames::{ControlFrame, MessageFrame, Received, Tag};
use msgr_messages::message_type_name;

use msgr_admin::json::Object;

fn auth_method_name(m: u32) -> String {
    match m {
        auth_method::NONE => "none".into(),
        auth_method::CEPHX => "cephx".into(),
        auth_method::GSS => "gss".into(),
        other => other.to_string(),
    }
}

fn con_mode_name(m: u32) -> String {
    match m {
        con_mode::CRC => "crc".into(),
        con_mode::SECURE => "secure".into(),
        other => other.to_string(),
    }
}

fn entity_type_name(t: EntityType) -> String {
    t.to_string()
}

fn hex(v: u64) -> String {
    format!("{v:#x}")
}

fn algorithm_name(m: u32) -> String {
    Algorithm::from_wire(m).map_or_else(|| m.to_string(), |a| a.name().to_string())
}

/// The tag-specific fields of a frame, appended to `o`.
pub fn frame_fields(frame: &Received, o: &mut Object) {
    if frame.tag == Tag::MESSAGE {
        match MessageFrame::from_received(frame) {
            Ok(m) => {
                let h = m.header;
                o.set("seq", h.seq)
                    .set("tid", h.tid)
                    .set("msg_type", h.msg_type)
                    .set("msg_type_name", message_type_name(h.msg_type))
                    .set("priority", h.priority)
                    .set("version", h.version)
                    .set("compat_version", h.compat_version)
                    .set("ack_seq", h.ack_seq)
                    .set("data_off", h.data_off)
                    .set("flags", h.flags)
                    .set("front_len", m.front.len())
                    .set("middle_len", m.middle.len())
                    .set("data_len", m.data.len());
            }
            Err(e) => {
                o.set("payload_error", e.to_string());
            }
        }
        return;
    }
    if !frame.tag.is_known() {
        return;
    }
    let control = match ControlFrame::from_received(frame) {
        Ok(c) => c,
        Err(e) => {
            o.set("payload_error", e.to_string());
            return;
        }
    };
    match control {
        ControlFrame::Hello(h) => {
            o.set("entity_type", entity_type_name(h.entity_type))
                .set("peer_addr", h.peer_addr.to_string());
        }
        ControlFrame::AuthRequest(a) => {
            o.set("method", auth_method_name(a.method))
                .set(
                    "preferred_modes",
                    a.preferred_modes
                        .into_iter()
                        .map(con_mode_name)
                        .collect::<Vec<_>>(),
                )
                .set("auth_payload_len", a.auth_payload.len());
        }
        ControlFrame::AuthBadMethod(a) => {
            o.set("method", auth_method_name(a.method))
                .set("result", a.result)
                .set(
                    "allowed_methods",
                    a.allowed_methods
                        .into_iter()
                        .map(auth_method_name)
                        .collect::<Vec<_>>(),
                )
                .set(
                    "allowed_modes",
                    a.allowed_modes
                        .into_iter()
                        .map(con_mode_name)
                        .collect::<Vec<_>>(),
                );
        }
        ControlFrame::AuthReplyMore(a) => {
            o.set("auth_payload_len", a.auth_payload.len());
        }
        ControlFrame::AuthRequestMore(a) => {
            o.set("auth_payload_len", a.auth_payload.len());
        }
        ControlFrame::AuthDone(a) => {
            o.set("global_id", a.global_id)
                .set("con_mode", con_mode_name(a.con_mode))
                .set("auth_payload_len", a.auth_payload.len());
        }
        ControlFrame::AuthSignature(_) => {}
        ControlFrame::ClientIdent(c) => {
            o.set("addrs", c.addrs.to_string())
                .set("target_addr", c.target_addr.to_string())
                .set("gid", c.gid)
                .set("global_seq", c.global_seq)
                .set("supported_features", hex(c.supported_features))
                .set("required_features", hex(c.required_features))
                .set("flags", c.flags)
                .set("cookie", c.cookie);
        }
        ControlFrame::ServerIdent(s) => {
            o.set("addrs", s.addrs.to_string())
                .set("gid", s.gid)
                .set("global_seq", s.global_seq)
                .set("supported_features", hex(s.supported_features))
                .set("required_features", hex(s.required_features))
                .set("flags", s.flags)
                .set("cookie", s.cookie);
        }
        ControlFrame::IdentMissingFeatures(m) => {
            o.set("features", hex(m.features));
        }
        ControlFrame::SessionReconnect(r) => {
            o.set("addrs", r.addrs.to_string())
                .set("client_cookie", r.client_cookie)
                .set("server_cookie", r.server_cookie)
                .set("global_seq", r.global_seq)
                .set("connect_seq", r.connect_seq)
                .set("msg_seq", r.msg_seq);
        }
        ControlFrame::SessionReset(r) => {
            o.set("full", r.full);
        }
        ControlFrame::SessionRetry(r) => {
            o.set("connect_seq", r.connect_seq);
        }
        ControlFrame::SessionRetryGlobal(r) => {
            o.set("global_seq", r.global_seq);
        }
        ControlFrame::SessionReconnectOk(r) => {
            o.set("msg_seq", r.msg_seq);
        }
        ControlFrame::Wait(_) => {}
        ControlFrame::Keepalive2(k) => {
            o.set("timestamp", k.timestamp.to_string());
        }
        ControlFrame::Keepalive2Ack(k) => {
            o.set("timestamp", k.timestamp.to_string());
        }
        ControlFrame::Ack(a) => {
            o.set("seq", a.seq);
        }
        ControlFrame::CompressionRequest(c) => {
            o.set("is_compress", c.is_compress).set(
                "preferred_methods",
                c.preferred_methods
                    .into_iter()
                    .map(algorithm_name)
                    .collect::<Vec<_>>(),
            );
        }
        ControlFrame::CompressionDone(c) => {
            o.set("is_compress", c.is_compress)
                .set("method", algorithm_name(c.method));
        }
    }
}

/// The fields of an msgr1 event, appended to `o`.
pub fn msgr1_fields(event: &crate::v1::Event, o: &mut Object) {
    use crate::v1::Event;
    use msgr_frames::v1::{header::footer_flags, Item};
    match event {
        Event::Banner => {}
        Event::ServerHello(h) => {
            o.set("addr", h.addr.to_string())
                .set("peer_addr", h.peer_addr.to_string());
        }
        Event::ClientAddr(a) => {
            o.set("addr", a.to_string());
        }
        Event::Connect {
            connect: c,
            authorizer,
        } => {
            o.set("features", hex(c.features))
                .set("host_type", entity_type_name(EntityType(c.host_type as u8)))
                .set("global_seq", c.global_seq)
                .set("connect_seq", c.connect_seq)
                .set("protocol_version", c.protocol_version)
                .set(
                    "authorizer_protocol",
                    auth_method_name(c.authorizer_protocol),
                )
                .set("authorizer_len", authorizer.len())
                .set("lossy", c.lossy());
        }
        Event::ConnectReply {
            reply: r,
            authorizer,
            in_seq,
        } => {
            o.set("reply_tag", r.tag.name())
                .set("features", hex(r.features))
                .set("global_seq", r.global_seq)
                .set("connect_seq", r.connect_seq)
                .set("protocol_version", r.protocol_version)
                .set("authorizer_len", authorizer.len())
                .set("lossy", r.lossy())
                .set("in_seq", *in_seq);
        }
        Event::Seq(s) => {
            o.set("in_seq", *s);
        }
        Event::Item(Item::Msg(m)) => {
            let h = &m.header;
            o.set("seq", h.seq)
                .set("tid", h.tid)
                .set("msg_type", h.msg_type)
                .set("msg_type_name", message_type_name(h.msg_type))
                .set("priority", h.priority)
                .set("version", h.version)
                .set("compat_version", h.compat_version)
                .set("src", h.src.to_string())
                .set("front_len", h.front_len)
                .set("middle_len", h.middle_len)
                .set("data_len", h.data_len)
                .set("data_off", h.data_off)
                .set("footer_flags", m.footer.flags)
                .set("signed", m.footer.flags & footer_flags::SIGNED != 0)
                .set("complete", m.complete());
            match m.check_crcs() {
                Ok(()) => o.set("crc_ok", true),
                Err(e) => o.set("crc_ok", false).set("crc_error", e.to_string()),
            };
        }
        Event::Item(Item::Ack(seq)) => {
            o.set("seq", *seq);
        }
        Event::Item(Item::Keepalive2(t) | Item::Keepalive2Ack(t)) => {
            o.set("stamp", format!("{}.{:09}", t.sec, t.nsec));
        }
        Event::Item(Item::Keepalive | Item::Close) => {}
    }
}
