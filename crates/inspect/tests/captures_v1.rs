//! `msgr decode` and the msgr1 wire layer on Ceph's own msgr1 traffic:
//! Ceph 16 and 20 clients against daemons that speak msgr1 only, and the
//! perf tools (testdata/captures/README.md, "msgr1").

use bytes::Bytes;
use msgr_capture::{read_packets, write_pcap};
use msgr_frames::v1::{write, Footer, Item, Tag};
use msgr_inspect::decode::decode;
use msgr_inspect::v1::Event;
use msgr_inspect::{analyze, KeyLog, Record};

const V1_CAPTURES: &[&str] = &[
    "pacific-v1-ceph-s",
    "pacific-v1-rados-put-get",
    "tentacle-v1-ceph-s",
    "tentacle-v1-rados-put-get",
    "tentacle-v1-perf-msgr",
];

fn path(name: &str) -> String {
    format!(
        "{}/../../testdata/captures/{name}",
        env!("CARGO_MANIFEST_DIR")
    )
}

fn capture(name: &str) -> Vec<u8> {
    let p = path(&format!("{name}.pcap"));
    std::fs::read(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
}

/// Every msgr1 event of a capture: (conn, client-to-server, event, raw).
fn events(name: &str) -> Vec<(usize, bool, Event, Bytes)> {
    let mut out = Vec::new();
    analyze(&capture(name), &KeyLog::default(), |r| match r {
        Record::Msgr1 {
            conn,
            dir,
            event,
            raw,
        } => out.push((conn, dir.index() == 0, event, raw)),
        Record::Problem { conn, dir, problem } => {
            panic!("{name}: conn {conn:?} {dir:?}: {problem}")
        }
        Record::Frame(_) => panic!("{name}: an msgr2 frame in an msgr1 capture"),
        _ => {}
    });
    out
}

fn messages(name: &str) -> Vec<(bool, Box<msgr_frames::v1::Msg>)> {
    events(name)
        .into_iter()
        .filter_map(|(_, c2s, e, _)| match e {
            Event::Item(Item::Msg(m)) => Some((c2s, m)),
            _ => None,
        })
        .collect()
}

/// Every connection decodes to its end in both directions, every complete
/// message's crcs hold, and each connection went through the handshake
/// (banners, CONNECT, a READY or SEQ reply) before its messages.
#[test]
fn msgr1_captures_decode_whole() {
    for name in V1_CAPTURES {
        let evs = events(name);
        let conns = evs.iter().map(|e| e.0).max().unwrap() + 1;
        for conn in 0..conns {
            let tags: Vec<&str> = evs
                .iter()
                .filter(|e| e.0 == conn)
                .map(|e| e.2.tag_name())
                .collect();
            assert!(tags.contains(&"CONNECT"), "{name} conn {conn}: {tags:?}");
            let first_msg = tags.iter().position(|t| *t == "MSG");
            let reply = evs.iter().filter(|e| e.0 == conn).position(|e| {
                matches!(&e.2, Event::ConnectReply { reply, .. } if matches!(reply.tag, Tag::Ready | Tag::Seq))
            });
            assert!(reply.is_some(), "{name} conn {conn}: not opened");
            if let Some(m) = first_msg {
                assert!(reply.unwrap() < m, "{name} conn {conn}");
            }
        }
        let msgs = messages(name);
        assert!(msgs.len() >= 10, "{name}: {} messages", msgs.len());
        for (_, m) in &msgs {
            assert!(m.complete());
            m.check_crcs().unwrap_or_else(|e| panic!("{name}: {e}"));
        }
    }
}

/// Each event re-encodes, through our types, to the bytes Ceph sent:
/// banners and legacy addresses, CONNECT and its reply, message headers
/// (with their crc) and footers (with their section crcs), acks and
/// keepalives.
#[test]
fn msgr1_events_reencode_byte_identically() {
    for name in V1_CAPTURES {
        for (conn, _, event, raw) in events(name) {
            let ours: Vec<u8> = match &event {
                Event::Banner => msgr_frames::v1::BANNER.to_vec(),
                Event::ServerHello(h) => h.encode().to_vec(),
                Event::ClientAddr(a) => a.encode_legacy().to_vec(),
                Event::Connect {
                    connect,
                    authorizer,
                } => [&connect.encode()[..], authorizer].concat(),
                Event::ConnectReply {
                    reply,
                    authorizer,
                    in_seq,
                } => {
                    let seq = in_seq.map(u64::to_le_bytes);
                    [
                        &reply.encode()[..],
                        authorizer,
                        seq.as_ref().map_or(&[][..], |s| &s[..]),
                    ]
                    .concat()
                }
                Event::Seq(s) => s.to_le_bytes().to_vec(),
                Event::Item(Item::Msg(m)) => {
                    let (footer, bytes) = write::footer(
                        &m.front,
                        &m.middle,
                        &m.data,
                        (m.footer.sig != 0).then_some(m.footer.sig),
                        raw.len() - m.header.payload_len() as usize - 54 == Footer::LEN,
                    );
                    assert_eq!(footer.flags, m.footer.flags, "{name} conn {conn}");
                    [
                        &write::msg_head(&m.header)[..],
                        &m.front,
                        &m.middle,
                        &m.data,
                        &bytes,
                    ]
                    .concat()
                }
                Event::Item(Item::Ack(s)) => write::tagged_u64(Tag::Ack, *s).to_vec(),
                Event::Item(Item::Keepalive2(t)) => {
                    write::tagged_u64(Tag::Keepalive2, write::stamp(*t)).to_vec()
                }
                Event::Item(Item::Keepalive2Ack(t)) => {
                    write::tagged_u64(Tag::Keepalive2Ack, write::stamp(*t)).to_vec()
                }
                Event::Item(Item::Keepalive) => vec![Tag::Keepalive as u8],
                Event::Item(Item::Close) => vec![Tag::Close as u8],
            };
            assert_eq!(ours, raw, "{name} conn {conn}: {}", event.tag_name());
        }
    }
}

/// ceph_perf_msgr_client's 20 writes of 4 KiB and the server's replies,
/// in order, on one lossless-client / stateless-server session. (The client
/// closes with its last two writes unanswered, over msgr2 too:
/// tentacle-perf-msgr.pcap has 20 and 18.)
#[test]
fn perf_tools_over_msgr1() {
    let msgs = messages("tentacle-v1-perf-msgr");
    let ops: Vec<_> = msgs.iter().filter(|m| m.0).map(|m| &m.1).collect();
    let replies: Vec<_> = msgs.iter().filter(|m| !m.0).map(|m| &m.1).collect();
    assert_eq!((ops.len(), replies.len()), (20, 18));
    for (i, (op, reply)) in ops.iter().zip(&replies).enumerate() {
        assert_eq!((op.header.msg_type, op.header.seq), (42, i as u64 + 1));
        assert_eq!(op.data.len(), 4096);
        assert_eq!(
            (reply.header.msg_type, reply.header.seq),
            (43, i as u64 + 1)
        );
        assert_eq!(op.footer.sig, 0, "auth none: unsigned");
    }
    let evs = events("tentacle-v1-perf-msgr");
    let connect = evs.iter().find_map(|e| match &e.2 {
        Event::Connect { connect, .. } => Some(*connect),
        _ => None,
    });
    let c = connect.unwrap();
    assert!(!c.lossy(), "lossless_client");
    assert_eq!((c.host_type, c.protocol_version), (8, 24));
}

/// rados over msgr1 with cephx, both releases: the monitor session has no
/// authorizer and unsigned messages (auth runs over MAuth / MAuthReply);
/// each OSD session is challenged (CHALLENGE_AUTHORIZER, then a second
/// CONNECT), opened with SEQ, and every message on it is signed; the
/// object written is in an MOSDOp's data and comes back in a reply's.
#[test]
fn rados_over_msgr1_is_challenged_and_signed() {
    let object = std::fs::read(path("rados-object-10KiB.bin")).unwrap();
    for name in ["pacific-v1-rados-put-get", "tentacle-v1-rados-put-get"] {
        let evs = events(name);
        let osd_conns: Vec<usize> = evs
            .iter()
            .filter_map(|e| match &e.2 {
                Event::Connect { connect, .. } if connect.protocol_version == 24 => Some(e.0),
                _ => None,
            })
            .collect();
        assert!(!osd_conns.is_empty(), "{name}");
        for conn in &osd_conns {
            let replies: Vec<Tag> = evs
                .iter()
                .filter(|e| e.0 == *conn)
                .filter_map(|e| match &e.2 {
                    Event::ConnectReply { reply, .. } => Some(reply.tag),
                    _ => None,
                })
                .collect();
            assert_eq!(
                replies,
                [Tag::ChallengeAuthorizer, Tag::Seq],
                "{name} conn {conn}"
            );
        }
        let mut auth = 0;
        let mut wrote = false;
        let mut read = false;
        for (conn, _, e, _) in &evs {
            let Event::Item(Item::Msg(m)) = e else {
                continue;
            };
            let on_osd = osd_conns.contains(conn);
            assert_eq!(
                m.footer.sig != 0,
                on_osd,
                "{name} conn {conn}: signed on OSD sessions only"
            );
            auth += usize::from(matches!(m.header.msg_type, 17 | 18));
            wrote |= on_osd && m.header.msg_type == 42 && m.data[..] == object[..];
            read |= on_osd && m.header.msg_type == 43 && m.data[..] == object[..];
        }
        assert!(auth >= 4, "{name}: {auth} MAuth/MAuthReply");
        assert!(
            wrote && read,
            "{name}: object written {wrote}, read back {read}"
        );
    }
}

/// `--json` lines say which protocol each frame is; msgr1 lines carry the
/// tag, CONNECT_REPLY its reply_tag, MSG its type, sequence, lengths,
/// source and whether its crcs held. A capture with msgr1 and msgr2
/// connections side by side decodes both.
#[test]
fn json_lines_name_the_protocol_and_a_mixed_capture_decodes_both() {
    let mut packets: Vec<Vec<u8>> = Vec::new();
    let mut linktype = 0;
    for name in ["tentacle-v1-perf-msgr", "tentacle-perf-msgr"] {
        let file = capture(name);
        let (ps, err) = read_packets(&file);
        assert!(err.is_none());
        linktype = ps[0].linktype;
        packets.extend(ps.iter().map(|p| p.data.to_vec()));
    }
    let mixed = write_pcap(linktype, &packets);
    let mut out = Vec::new();
    let summary = decode(&mixed, &KeyLog::default(), true, &mut out).unwrap();
    assert_eq!((summary.connections, summary.problems), (2, 0));
    let text = String::from_utf8(out).unwrap();
    let v1: Vec<&str> = text
        .lines()
        .filter(|l| l.contains(r#""protocol":"msgr1""#))
        .collect();
    let v2: Vec<&str> = text
        .lines()
        .filter(|l| l.contains(r#""protocol":"msgr2""#))
        .collect();
    assert!(v1
        .iter()
        .all(|l| l.starts_with(r#"{"protocol":"msgr1","conn":0,"dir":"#)));
    assert!(v2
        .iter()
        .all(|l| l.starts_with(r#"{"protocol":"msgr2","conn":1,"dir":"#)));
    assert!(v1
        .iter()
        .any(|l| l.contains(r#""tag":"CONNECT_REPLY""#) && l.contains(r#""reply_tag":"SEQ""#)));
    let ops = v1
        .iter()
        .filter(|l| {
            l.contains(r#""tag":"MSG""#) && l.contains(r#""msg_type_name":"CEPH_MSG_OSD_OP""#)
        })
        .filter(|l| l.contains(r#""src":"client.0""#) && l.contains(r#""data_len":4096"#))
        .filter(|l| l.contains(r#""crc_ok":true"#))
        .count();
    assert_eq!(ops, 20);
    assert!(
        v2.iter()
            .filter(|l| l.contains(r#""tag":"MESSAGE""#))
            .count()
            == 38
    );
}

/// A flipped byte in a message's data is reported as a bad crc on that
/// message, and decoding goes on to the next.
#[test]
fn a_bad_data_crc_is_reported_and_decoding_goes_on() {
    let file = capture("tentacle-v1-perf-msgr");
    let (ps, _) = read_packets(&file);
    let linktype = ps[0].linktype;
    let mut packets: Vec<Vec<u8>> = ps.iter().map(|p| p.data.to_vec()).collect();
    // The first packet big enough to hold an MOSDOp with its 4 KiB: flip
    // its last data byte (the 21-byte footer ends the message).
    let p = packets.iter_mut().find(|p| p.len() > 4096 + 300).unwrap();
    let at = p.len() - Footer::LEN - 1;
    p[at] ^= 0xff;
    let mut out = Vec::new();
    let summary = decode(
        &write_pcap(linktype, &packets),
        &KeyLog::default(),
        true,
        &mut out,
    )
    .unwrap();
    let text = String::from_utf8(out).unwrap();
    assert_eq!(summary.problems, 0);
    let bad: Vec<&str> = text
        .lines()
        .filter(|l| l.contains(r#""crc_ok":false"#))
        .collect();
    assert_eq!(bad.len(), 1, "{text}");
    assert!(bad[0].contains("bad data crc"), "{}", bad[0]);
    assert_eq!(
        text.matches(r#""msg_type_name":"CEPH_MSG_OSD_OP""#).count(),
        20
    );
}

/// One direction's events of a capture's connection `conn`, in order.
fn direction(name: &str, conn: usize, c2s: bool) -> Vec<(Event, Bytes)> {
    events(name)
        .into_iter()
        .filter(|e| e.0 == conn && e.1 == c2s)
        .map(|e| (e.2, e.3))
        .collect()
}

fn config(name: &str, policy: msgr_protocol::Policy) -> std::sync::Arc<msgr_protocol::Config> {
    std::sync::Arc::new(msgr_protocol::Config::new(
        name.parse().unwrap(),
        std::sync::Arc::new(msgr_auth::NoneProvider),
        msgr_protocol::PolicySet::new(policy),
    ))
}

/// Feeds `bytes` to `conn` and returns the tids of the messages it
/// delivered, failing on any fault.
fn feed(conn: &mut msgr_protocol::Conn, bytes: &[u8], now: std::time::Instant) -> Vec<u64> {
    let mut input = bytes::BytesMut::from(bytes);
    conn.handle_input(&mut input, now);
    assert!(input.is_empty(), "{} bytes left unread", input.len());
    let mut seqs = Vec::new();
    while let Some(e) = conn.poll_event() {
        match e {
            msgr_protocol::Event::Fault(f) => panic!("fault: {f}"),
            msgr_protocol::Event::Message(m) => seqs.push(m.seq),
            _ => {}
        }
    }
    seqs
}

/// Our msgr1 connector, fed what Ceph 20's ceph_perf_msgr_server sent
/// (its banner and addresses, its SEQ reply, its MOSDOpReplies): it
/// answers with its address and a CONNECT Ceph would take, its in_seq
/// after SEQ, and delivers every reply in order.
#[test]
fn our_connector_takes_a_ceph_servers_bytes() {
    let name = "tentacle-v1-perf-msgr";
    let server = direction(name, 0, false);
    let now = std::time::Instant::now();
    let mut conn = msgr_protocol::Conn::connect(
        config("client.0", msgr_protocol::Policy::lossless_client()),
        "[v1:127.0.0.1:26901/0]".parse().unwrap(),
        msgr_encoding::EntityType::OSD,
        "[v1:127.0.0.1:0/4506]".parse().unwrap(),
        now,
        1,
    );
    assert!(matches!(
        conn.poll_event(),
        Some(msgr_protocol::Event::Connect { .. })
    ));
    assert!(conn.socket_connected(None, now));
    let mut out = msgr_frames::WireQueue::new();
    conn.fill_output(&mut out, now);
    assert_eq!(&out.take_all()[..], b"ceph v027");

    let (hello, reply) = (&server[0], &server[1]);
    assert!(matches!(hello.0, Event::ServerHello(_)));
    assert!(matches!(&reply.0, Event::ConnectReply { reply, .. } if reply.tag == Tag::Seq));
    feed(&mut conn, &hello.1, now);
    conn.fill_output(&mut out, now);
    let ours = out.take_all();
    // Our address (as the acceptor's banner saw us: 127.0.0.1, port 0,
    // our nonce), then a CONNECT to an OSD as a client.
    let addr = msgr_encoding::EntityAddr::decode_legacy(ours[..136].try_into().unwrap()).unwrap();
    assert_eq!(addr.to_string(), "v1:127.0.0.1:0/4506");
    let connect = msgr_frames::v1::Connect::decode(ours[136..169].try_into().unwrap());
    assert_eq!((connect.host_type, connect.protocol_version), (8, 24));
    assert_eq!((connect.global_seq > 0, connect.connect_seq), (true, 0));
    assert_eq!(ours.len(), 169 + connect.authorizer_len as usize);

    feed(&mut conn, &reply.1, now);
    conn.fill_output(&mut out, now);
    assert_eq!(
        &out.take_all()[..],
        &0u64.to_le_bytes(),
        "our in_seq after SEQ"
    );
    assert_eq!(conn.state(), msgr_protocol::ConnState::Ready);
    let rest: Vec<u8> = server[2..].iter().flat_map(|e| e.1.to_vec()).collect();
    let seqs = feed(&mut conn, &rest, now);
    assert_eq!(seqs, (1..=18).collect::<Vec<_>>());
    // The server's reply made the session lossy (its policy decides,
    // whatever ours asked): nothing is acknowledged.
    assert!(conn.peer().policy.lossy);
    conn.flush_acks(now);
    conn.fill_output(&mut out, now);
    assert!(out.is_empty());
}

/// Our msgr1 acceptor, fed what Ceph 20's ceph_perf_msgr_client sent: its
/// CONNECT (no authorizer) is decided on, answered SEQ with our in_seq,
/// and its 20 MOSDOps are delivered in order.
#[test]
fn our_acceptor_takes_a_ceph_clients_bytes() {
    let name = "tentacle-v1-perf-msgr";
    let client = direction(name, 0, true);
    let now = std::time::Instant::now();
    // The acceptor's endpoint: its connection table and registry.
    let mut endpoint = msgr_protocol::Endpoint::new(
        config("osd.0", msgr_protocol::Policy::stateless_server()),
        "[v1:127.0.0.1:26901/0]".parse().unwrap(),
        0,
    );
    let peer = "127.0.0.1:41024".parse().unwrap();
    let id = endpoint.accept(msgr_protocol::Protocol::V1, peer, now);
    let conn = endpoint.conn_mut(id).unwrap();
    let mut out = msgr_frames::WireQueue::new();
    conn.fill_output(&mut out, now);
    let hello = out.take_all();
    let server = direction(name, 0, false);
    assert_eq!(
        &hello[..],
        &server[0].1[..],
        "our banner and addresses are Ceph's, byte for byte"
    );

    // Banner, address, CONNECT: then the messenger decides.
    let handshake: Vec<u8> = client[..3].iter().flat_map(|e| e.1.to_vec()).collect();
    let mut input = bytes::BytesMut::from(&handshake[..]);
    conn.handle_input(&mut input, now);
    let req = std::iter::from_fn(|| conn.poll_event())
        .find_map(|e| match e {
            msgr_protocol::Event::IdentReceived(r) => Some(r),
            msgr_protocol::Event::Fault(f) => panic!("fault: {f}"),
            _ => None,
        })
        .expect("the CONNECT goes to the messenger");
    assert!(
        msgr_protocol::registry::lookup_key(conn, &req).is_none(),
        "a lossy server keeps clients anonymous"
    );
    let resolved = endpoint.handle_ident(id, req, Default::default(), now);
    assert_eq!(resolved, msgr_protocol::Resolved::Registered);
    let conn = endpoint.conn_mut(id).unwrap();
    conn.fill_output(&mut out, now);
    let reply = out.take_all();
    let r = msgr_frames::v1::ConnectReply::decode(reply[..26].try_into().unwrap()).unwrap();
    assert_eq!(
        (r.tag, r.connect_seq, r.protocol_version, r.lossy()),
        (Tag::Seq, 1, 24, true)
    );
    assert_eq!(&reply[26..], &0u64.to_le_bytes());

    let rest: Vec<u8> = client[3..].iter().flat_map(|e| e.1.to_vec()).collect();
    assert!(matches!(client[3].0, Event::Seq(0)));
    let seqs = feed(conn, &rest, now);
    assert_eq!(seqs, (1..=20).collect::<Vec<_>>());
    assert_eq!(conn.state(), msgr_protocol::ConnState::Ready);
}
