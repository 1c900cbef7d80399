//! `msgr decode` on real captures from Ceph 16 and Ceph 20 daemons
//! (testdata/captures, see its README for how each was made), and on
//! synthetic captures for secure mode with keys, truncation and garbage.

use std::net::SocketAddr;

use bytes::Bytes;
use msgr_capture::packet::{build_ipv4_tcp, flags};
use msgr_capture::{write_pcap, Direction};
use msgr_encoding::{EntityAddr, EntityType};
use msgr_frames::banner::Banner;
use msgr_frames::control::{con_mode, AuthDone, AuthRequest, AuthSignature, Hello};
use msgr_frames::crypto::{Role, SecureKeys};
use msgr_frames::message::{MessageFrame, MsgHeader2};
use msgr_frames::{ControlFrame, FrameEncoder, Tag, WireQueue};
use msgr_inspect::decode::decode;
use msgr_inspect::{analyze, KeyLog, Problem, Record};

const CAPTURES: &[&str] = &[
    "pacific-ceph-s",
    "pacific-ceph-s-secure",
    "pacific-rados-put-get",
    "pacific-client-tentacle-ceph-s",
    "tentacle-ceph-s",
    "tentacle-rados-put-get",
    "tentacle-perf-msgr",
];

/// OSD-to-OSD traffic of Ceph 20 with on-wire compression forced, one
/// capture per algorithm (testdata/captures/README.md, "compression").
const COMPRESSED: &[(&str, &str)] = &[
    ("tentacle-osd-compress-snappy", "snappy"),
    ("tentacle-osd-compress-zlib", "zlib"),
    ("tentacle-osd-compress-zstd", "zstd"),
    ("tentacle-osd-compress-lz4", "lz4"),
];

fn all_captures() -> impl Iterator<Item = &'static str> {
    CAPTURES
        .iter()
        .copied()
        .chain(COMPRESSED.iter().map(|c| c.0))
}

fn capture(name: &str) -> Vec<u8> {
    let path = format!(
        "{}/../../testdata/captures/{name}.pcap",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn records(file: &[u8], keys: &KeyLog) -> Vec<Record> {
    let mut out = Vec::new();
    analyze(file, keys, |r| out.push(r));
    out
}

fn problems(recs: &[Record]) -> Vec<String> {
    recs.iter()
        .filter_map(|r| match r {
            Record::Problem { conn, dir, problem } => {
                Some(format!("conn {conn:?} {dir:?}: {problem}"))
            }
            _ => None,
        })
        .collect()
}

#[test]
fn real_captures_decode_without_problems() {
    for name in all_captures() {
        let recs = records(&capture(name), &KeyLog::default());
        assert_eq!(problems(&recs), Vec::<String>::new(), "{name}");
        let frames = recs
            .iter()
            .filter(|r| matches!(r, Record::Frame(_)))
            .count();
        assert!(frames >= 10, "{name}: only {frames} frames");
    }
}

/// Every crc-mode frame re-encodes to the bytes Ceph put on the wire: the
/// framing (preamble, crcs, epilogue) and each control payload and message
/// header, through our typed structures. (Compressed frames are left out:
/// our compressors need not produce Ceph's compressors' exact bytes.)
#[test]
fn real_frames_reencode_byte_identically() {
    for name in all_captures() {
        let mut checked = 0;
        for r in records(&capture(name), &KeyLog::default()) {
            let Record::Frame(f) = r else { continue };
            assert!(!f.format.secure);
            if f.frame.preamble.is_compressed() {
                continue;
            }
            let n = f.frame.num_segments();
            let segments: Vec<Bytes> = if f.frame.tag == Tag::MESSAGE {
                let m = MessageFrame::from_received(&f.frame).unwrap();
                m.segments()[..n].to_vec()
            } else {
                let c = ControlFrame::from_received(&f.frame).unwrap();
                vec![c.payload()]
            };
            let mut enc = FrameEncoder::new(f.format.rev1);
            let mut q = WireQueue::new();
            enc.encode(f.frame.tag, &segments, &mut q).unwrap();
            assert_eq!(q.take_all(), f.raw, "{name}: {} frame", f.frame.tag);
            checked += 1;
        }
        assert!(checked > 0, "{name}");
    }
}

/// Our decode agrees, frame by frame, with the independent decoder that
/// summarised the captures when they were made (testdata/captures/SUMMARY.txt,
/// scripts/ceph/msgr2-pcap-summary.py): tag, segment lengths, message type.
#[test]
fn decode_agrees_with_the_capture_summary() {
    let summary = std::fs::read_to_string(format!(
        "{}/../../testdata/captures/SUMMARY.txt",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    for name in CAPTURES {
        let section = summary
            .split("== ")
            .find(|s| s.starts_with(&format!("{name}.pcap")))
            .unwrap_or_else(|| panic!("{name} not in SUMMARY.txt"));
        // Theirs: per connection, per direction, "TAG segs [type]".
        let mut theirs: Vec<[Vec<String>; 2]> = Vec::new();
        for line in section.lines() {
            let line = line.trim();
            if line.starts_with("-- ") {
                theirs.push(Default::default());
                continue;
            }
            let words: Vec<&str> = line.split_whitespace().collect();
            if words.len() < 4
                || !(words[1] == "C>S" || words[1] == "S>C")
                || words[2] == "encrypted"
            {
                continue;
            }
            let dir = usize::from(words[1] == "S>C");
            let segs = words[3].trim_start_matches("segs=");
            let ty = words
                .iter()
                .find_map(|w| w.strip_prefix("type="))
                .map(|t| t.split('(').next().unwrap_or(t).to_string())
                .unwrap_or_default();
            theirs.last_mut().unwrap()[dir].push(format!("{} {segs} {ty}", words[2]));
        }
        // Ours.
        let mut ours: Vec<[Vec<String>; 2]> = Vec::new();
        for r in records(&capture(name), &KeyLog::default()) {
            match r {
                Record::Connection { .. } => ours.push(Default::default()),
                Record::Frame(f) => {
                    let segs: Vec<String> = f
                        .frame
                        .preamble
                        .used()
                        .iter()
                        .map(|s| s.len.to_string())
                        .collect();
                    let ty = if f.frame.tag == Tag::MESSAGE {
                        MessageFrame::from_received(&f.frame)
                            .unwrap()
                            .header
                            .msg_type
                            .to_string()
                    } else {
                        String::new()
                    };
                    ours[f.conn][f.dir.index()].push(format!(
                        "{} {} {ty}",
                        f.frame.tag,
                        segs.join("+")
                    ));
                }
                _ => {}
            }
        }
        assert_eq!(ours, theirs, "{name}");
    }
}

#[test]
fn message_types_of_ceph_s_and_rados() {
    let types = |name: &str| -> Vec<u16> {
        records(&capture(name), &KeyLog::default())
            .iter()
            .filter_map(|r| match r {
                Record::Frame(f) if f.frame.tag == Tag::MESSAGE => Some(
                    MessageFrame::from_received(&f.frame)
                        .unwrap()
                        .header
                        .msg_type,
                ),
                _ => None,
            })
            .collect()
    };
    for release in ["pacific", "tentacle"] {
        let s = types(&format!("{release}-ceph-s"));
        // MON_GET_MAP, MON_SUBSCRIBE, MON_MAP, CONFIG, MON_COMMAND(_ACK), OSD_MAP, MGR_MAP.
        for t in [5, 15, 4, 62, 50, 51, 41, 0x704] {
            assert!(s.contains(&t), "{release} ceph -s lacks type {t}");
        }
        let r = types(&format!("{release}-rados-put-get"));
        assert_eq!(
            r.iter().filter(|&&t| t == 42).count(),
            2,
            "{release}: two OSD_OPs"
        );
        assert_eq!(
            r.iter().filter(|&&t| t == 43).count(),
            2,
            "{release}: two OSD_OPREPLYs"
        );
    }
    // The perf tool writes 20 MOSDOps (and hangs up before all replies).
    let p = types("tentacle-perf-msgr");
    assert_eq!(p.iter().filter(|&&t| t == 42).count(), 20);
}

/// MOSDOp (v8 from Ceph 16, v9 from Ceph 20) and MOSDOpReply as Ceph's
/// librados, OSDs and perf tools sent them decode into our types and
/// encode back to the same front, version and compat.
#[test]
fn osd_ops_and_replies_reencode_byte_identically() {
    use msgr_messages::{MOSDOp, MOSDOpReply, TypedMessage};
    let mut seen = (0, 0);
    for name in [
        "pacific-rados-put-get",
        "tentacle-rados-put-get",
        "tentacle-perf-msgr",
    ] {
        for r in records(&capture(name), &KeyLog::default()) {
            let Record::Frame(f) = r else { continue };
            if f.frame.tag != Tag::MESSAGE {
                continue;
            }
            let mf = MessageFrame::from_received(&f.frame).unwrap();
            let msg = msgr_protocol::Message::from_frame(mf, Default::default());
            let again = match msg.msg_type {
                42 => {
                    let op = MOSDOp::from_message(&msg).unwrap();
                    seen.0 += 1;
                    let features = if msg.version == 9 {
                        msgr_protocol::features::SERVER_SQUID
                    } else {
                        0
                    };
                    op.to_message(features)
                }
                43 => {
                    seen.1 += 1;
                    MOSDOpReply::from_message(&msg).unwrap().to_message(0)
                }
                _ => continue,
            };
            assert_eq!(again.front, msg.front, "{name}: type {}", msg.msg_type);
            assert_eq!(
                (again.version, again.compat_version),
                (msg.version, msg.compat_version)
            );
            assert_eq!(again.data, msg.data);
            assert_eq!(again.tid, msg.tid);
        }
    }
    assert_eq!(seen, (24, 22), "ops and replies seen");
}

/// Every monitor message `ceph -s` and rados exchanged (monmap, subscribe,
/// config, commands and acks, osdmap) decodes into our types and encodes
/// back byte for byte; the monmaps decode as v9 (Ceph 16) and v10 (Ceph 20).
#[test]
fn mon_messages_reencode_byte_identically() {
    use msgr_messages::*;
    let mut seen = std::collections::BTreeMap::<u16, usize>::new();
    let mut map_versions = std::collections::BTreeSet::new();
    for name in [
        "pacific-ceph-s",
        "tentacle-ceph-s",
        "pacific-client-tentacle-ceph-s",
        "pacific-rados-put-get",
        "tentacle-rados-put-get",
    ] {
        for r in records(&capture(name), &KeyLog::default()) {
            let Record::Frame(f) = r else { continue };
            if f.frame.tag != Tag::MESSAGE {
                continue;
            }
            let mf = MessageFrame::from_received(&f.frame).unwrap();
            let msg = msgr_protocol::Message::from_frame(mf, Default::default());
            let again = match msg.msg_type {
                MSG_MON_MAP => {
                    let m = MMonMap::from_message(&msg).unwrap();
                    let map = MonMap::decode(&mut msgr_encoding::Decoder::new(&m.monmap)).unwrap();
                    map_versions.insert(map.struct_v);
                    let mut re = Vec::new();
                    map.encode(&mut re);
                    assert_eq!(&re[..], &m.monmap[..], "{name}: monmap");
                    m.to_message(0)
                }
                MSG_MON_GET_MAP => MMonGetMap::from_message(&msg).unwrap().to_message(0),
                MSG_MON_SUBSCRIBE => MMonSubscribe::from_message(&msg).unwrap().to_message(0),
                MSG_CONFIG => MConfig::from_message(&msg).unwrap().to_message(0),
                MSG_MON_COMMAND => MMonCommand::from_message(&msg).unwrap().to_message(0),
                MSG_MON_COMMAND_ACK => MMonCommandAck::from_message(&msg).unwrap().to_message(0),
                MSG_OSD_MAP => {
                    let m = MOSDMap::from_message(&msg).unwrap();
                    assert!(m.newest_epoch() > 0);
                    m.to_message(0)
                }
                _ => continue,
            };
            *seen.entry(msg.msg_type).or_default() += 1;
            assert_eq!(again.front, msg.front, "{name}: type {}", msg.msg_type);
            assert_eq!(
                (again.version, again.compat_version, again.tid),
                (msg.version, msg.compat_version, msg.tid),
                "{name}: type {}",
                msg.msg_type
            );
            assert_eq!(again.data, msg.data);
        }
    }
    for t in [4, 5, 15, 41, 50, 51, 62] {
        assert!(
            seen.get(&t).copied().unwrap_or(0) > 0,
            "type {t} seen: {seen:?}"
        );
    }
    assert_eq!(map_versions.into_iter().collect::<Vec<_>>(), [9, 10]);
}

#[test]
fn ceph_20_runs_the_compression_handshake_and_ceph_16_does_not() {
    let tags = |name: &str| -> Vec<Tag> {
        records(&capture(name), &KeyLog::default())
            .iter()
            .filter_map(|r| match r {
                Record::Frame(f) => Some(f.frame.tag),
                _ => None,
            })
            .collect()
    };
    assert!(tags("tentacle-ceph-s").contains(&Tag::COMPRESSION_REQUEST));
    assert!(tags("tentacle-ceph-s").contains(&Tag::COMPRESSION_DONE));
    assert!(!tags("pacific-ceph-s").contains(&Tag::COMPRESSION_REQUEST));
}

/// Frames compressed by Ceph 20's own compressor plugins decompress: every
/// OSD-to-OSD connection negotiated the algorithm, its large messages
/// arrived compressed, and each decompressed message header and segment
/// lengths are consistent.
#[test]
fn ceph_compressed_frames_decompress() {
    for (name, alg) in COMPRESSED {
        let recs = records(&capture(name), &KeyLog::default());
        assert_eq!(problems(&recs), Vec::<String>::new(), "{name}");
        let mut negotiated = false;
        let mut compressed = 0;
        let mut big = 0;
        for r in &recs {
            let Record::Frame(f) = r else { continue };
            if let Ok(ControlFrame::CompressionDone(d)) = ControlFrame::from_received(&f.frame) {
                if d.is_compress {
                    assert_eq!(
                        msgr_frames::compression::Algorithm::from_wire(d.method)
                            .unwrap()
                            .name(),
                        *alg
                    );
                    negotiated = true;
                }
            }
            if f.frame.preamble.is_compressed() {
                compressed += 1;
                assert_eq!(f.frame.tag, Tag::MESSAGE);
                let m = MessageFrame::from_received(&f.frame).unwrap();
                let logical: usize = [&m.front, &m.middle, &m.data]
                    .iter()
                    .map(|s| s.len())
                    .sum::<usize>()
                    + 41;
                // Ceph compresses frames of at least ms_osd_compress_min_size.
                assert!(logical >= 1024, "{name}: {logical}-byte frame compressed");
                if m.header.msg_type == 112 && m.data.len() > 60000 {
                    // The 64 KiB write, replicated (MOSDRepOp), squeezed a lot.
                    let wire: u32 = f.frame.preamble.used().iter().map(|s| s.len).sum();
                    assert!(wire < 8000, "{name}: {wire} bytes on the wire");
                    big += 1;
                }
            }
        }
        assert!(negotiated, "{name}: no COMPRESSION_DONE with is_compress");
        assert!(compressed >= 50, "{name}: {compressed} compressed frames");
        assert!(big >= 1, "{name}: no 64 KiB replication op");
    }
}

#[test]
fn secure_frames_are_marked_encrypted_without_keys() {
    let mut out = Vec::new();
    let summary = decode(
        &capture("pacific-ceph-s-secure"),
        &KeyLog::default(),
        true,
        &mut out,
    )
    .unwrap();
    let text = String::from_utf8(out).unwrap();
    assert_eq!(summary.problems, 0);
    assert!(summary.encrypted_chunks > 0);
    let lines: Vec<&str> = text.lines().collect();
    // Readable up to AUTH_DONE, encrypted after it.
    let done = lines
        .iter()
        .position(|l| l.contains(r#""tag":"AUTH_DONE""#))
        .unwrap();
    assert!(lines[done].contains(r#""con_mode":"secure""#));
    assert!(lines[done..]
        .iter()
        .any(|l| l.contains(r#""tag":null,"encrypted":true"#)));
    assert!(!lines.iter().any(|l| l.contains(r#""tag":"MESSAGE""#)));
}

#[test]
fn json_lines_carry_the_required_keys() {
    let mut out = Vec::new();
    decode(
        &capture("tentacle-rados-put-get"),
        &KeyLog::default(),
        true,
        &mut out,
    )
    .unwrap();
    let text = String::from_utf8(out).unwrap();
    let mut saw_op = false;
    for line in text.lines() {
        assert!(line.starts_with('{') && line.ends_with('}'), "{line}");
        if line.contains(r#""tag":"#) {
            assert!(line.starts_with(r#"{"protocol":"msgr2","conn":"#), "{line}");
            assert!(line.contains(r#""dir":"c2s""#) || line.contains(r#""dir":"s2c""#));
            assert!(line.contains(r#""encrypted":false"#));
        }
        if line.contains(r#""tag":"MESSAGE""#) && line.contains(r#""msg_type":42,"#) {
            saw_op = true;
            assert!(line.contains(r#""msg_type_name":"CEPH_MSG_OSD_OP""#));
        }
    }
    assert!(saw_op);
    // Connections are numbered from 0 in order of their SYN; the first is
    // the client's first monitor session.
    assert!(text.starts_with(r#"{"conn":0,"event":"connection","client":"127.0.0.1:"#));
}

#[test]
fn truncated_captures_are_reported_not_fatal() {
    let file = capture("pacific-rados-put-get");
    for cut in [30, 100, file.len() / 3, file.len() / 2, file.len() - 7] {
        let recs = records(&file[..cut], &KeyLog::default());
        let p = problems(&recs);
        assert!(!p.is_empty(), "cut at {cut}");
    }
}

/// A TCP conversation written out as a pcap.
struct Conversation {
    client: SocketAddr,
    server: SocketAddr,
    seq: [u32; 2],
    packets: Vec<Vec<u8>>,
}

impl Conversation {
    fn new() -> Self {
        let client: SocketAddr = "127.0.0.1:45000".parse().unwrap();
        let server: SocketAddr = "127.0.0.1:3300".parse().unwrap();
        let mut c = Conversation {
            client,
            server,
            seq: [1000, 9000],
            packets: Vec::new(),
        };
        c.packets
            .push(build_ipv4_tcp(client, server, 999, flags::SYN, b""));
        c.packets.push(build_ipv4_tcp(
            server,
            client,
            8999,
            flags::SYN | flags::ACK,
            b"",
        ));
        c
    }

    fn send(&mut self, dir: Direction, bytes: &[u8]) {
        let (src, dst) = match dir {
            Direction::ClientToServer => (self.client, self.server),
            Direction::ServerToClient => (self.server, self.client),
        };
        let i = dir.index();
        for chunk in bytes.chunks(1400) {
            self.packets
                .push(build_ipv4_tcp(src, dst, self.seq[i], flags::ACK, chunk));
            self.seq[i] = self.seq[i].wrapping_add(chunk.len() as u32);
        }
    }

    fn pcap(&self) -> Vec<u8> {
        write_pcap(1, &self.packets)
    }
}

fn frame(enc: &mut FrameEncoder, c: impl Into<ControlFrame>) -> Bytes {
    let c = c.into();
    let mut q = WireQueue::new();
    enc.encode(c.tag(), &[c.payload()], &mut q).unwrap();
    q.take_all()
}

/// A secure-mode conversation made with our own encoder and a known
/// connection secret: `--keys` decrypts it, without keys it is marked
/// encrypted.
#[test]
fn keys_decrypt_secure_mode() {
    let secret: Vec<u8> = (0..64u8).map(|i| i.wrapping_mul(13)).collect();
    let addr: EntityAddr = "v2:127.0.0.1:3300/0".parse().unwrap();
    for rev1 in [false, true] {
        let mut conv = Conversation::new();
        let banner = Banner {
            supported: u64::from(rev1),
            required: 0,
        };
        conv.send(Direction::ClientToServer, &banner.encode());
        conv.send(Direction::ServerToClient, &banner.encode());
        let mut c_enc = FrameEncoder::new(rev1);
        let mut s_enc = FrameEncoder::new(rev1);
        let hello = Hello {
            entity_type: EntityType::CLIENT,
            peer_addr: addr,
        };
        conv.send(Direction::ClientToServer, &frame(&mut c_enc, hello));
        let req = AuthRequest {
            method: 1,
            preferred_modes: vec![con_mode::SECURE],
            auth_payload: Bytes::new(),
        };
        conv.send(Direction::ClientToServer, &frame(&mut c_enc, req));
        let done = AuthDone {
            global_id: 1,
            con_mode: con_mode::SECURE,
            auth_payload: Bytes::new(),
        };
        conv.send(Direction::ServerToClient, &frame(&mut s_enc, done));
        let ck = SecureKeys::from_connection_secret(&secret, Role::Connector).unwrap();
        let sk = SecureKeys::from_connection_secret(&secret, Role::Acceptor).unwrap();
        c_enc.set_cipher(ck.ciphers(rev1).0);
        s_enc.set_cipher(sk.ciphers(rev1).0);
        conv.send(
            Direction::ServerToClient,
            &frame(&mut s_enc, AuthSignature { sha256: [1; 32] }),
        );
        conv.send(
            Direction::ClientToServer,
            &frame(&mut c_enc, AuthSignature { sha256: [2; 32] }),
        );
        let msg = MessageFrame {
            header: MsgHeader2 {
                seq: 1,
                msg_type: 42,
                ..Default::default()
            },
            front: Bytes::from(vec![5u8; 3000]),
            ..Default::default()
        };
        let mut q = WireQueue::new();
        c_enc.encode(Tag::MESSAGE, &msg.segments(), &mut q).unwrap();
        conv.send(Direction::ClientToServer, &q.take_all());
        let pcap = conv.pcap();

        let plain = records(&pcap, &KeyLog::default());
        assert!(problems(&plain).is_empty());
        assert!(plain.iter().any(|r| matches!(r, Record::Encrypted { .. })));

        let keys = KeyLog::parse(&format!(
            "# test secret\n127.0.0.1:45000 127.0.0.1:3300 {}\n",
            secret
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<String>()
        ))
        .unwrap();
        let recs = records(&pcap, &keys);
        assert!(
            problems(&recs).is_empty(),
            "rev1={rev1}: {:?}",
            problems(&recs)
        );
        let frames: Vec<(Direction, Tag, bool)> = recs
            .iter()
            .filter_map(|r| match r {
                Record::Frame(f) => Some((f.dir, f.frame.tag, f.decrypted)),
                _ => None,
            })
            .collect();
        assert_eq!(
            frames
                .iter()
                .filter(|f| f.2)
                .map(|f| f.1)
                .collect::<Vec<_>>(),
            vec![Tag::AUTH_SIGNATURE, Tag::AUTH_SIGNATURE, Tag::MESSAGE],
            "rev1={rev1}"
        );
        let m = recs
            .iter()
            .find_map(|r| match r {
                Record::Frame(f) if f.frame.tag == Tag::MESSAGE => {
                    Some(MessageFrame::from_received(&f.frame).unwrap())
                }
                _ => None,
            })
            .unwrap();
        assert_eq!(m.front, msg.front);

        // The wrong secret fails authentication: a typed problem, no crash.
        let wrong = KeyLog::parse(&format!("conn=0 {}", "ab".repeat(64))).unwrap();
        let recs = records(&pcap, &wrong);
        assert!(recs.iter().any(|r| matches!(
            r,
            Record::Problem {
                problem: Problem::Frame(
                    msgr_frames::FrameError::DecryptFailed
                        | msgr_frames::FrameError::BadPreambleCrc { .. }
                ),
                ..
            }
        )));
    }
}

#[test]
fn a_bad_msgr1_answer_and_garbage_streams_are_reported() {
    // An msgr1 banner answered by something that is not msgr1's: the
    // answer is a typed msgr1 error; the connector's half-sent address is
    // a truncated stream.
    let mut conv = Conversation::new();
    conv.send(Direction::ClientToServer, b"ceph v027\x00\x00\x00\x00\x00");
    let mut answer = b"\x00\x01garbage garbage garbage".to_vec();
    answer.resize(msgr_frames::v1::ServerHello::LEN, b'x');
    conv.send(Direction::ServerToClient, &answer);
    let recs = records(&conv.pcap(), &KeyLog::default());
    let problems: Vec<&Problem> = recs
        .iter()
        .filter_map(|r| match r {
            Record::Problem { problem, .. } => Some(problem),
            _ => None,
        })
        .collect();
    assert_eq!(
        problems,
        [
            &Problem::Msgr1(msgr_frames::v1::WireError::NotMsgr1 { msgr2: false }),
            &Problem::Truncated { pending: 5 }
        ]
    );

    let mut conv = Conversation::new();
    conv.send(Direction::ClientToServer, b"GET / HTTP/1.1\r\n\r\n");
    let recs = records(&conv.pcap(), &KeyLog::default());
    let kinds: Vec<&str> = recs
        .iter()
        .filter_map(|r| match r {
            Record::Problem { problem, .. } => Some(problem.kind()),
            _ => None,
        })
        .collect();
    assert_eq!(kinds, vec!["not_msgr2"]);
    assert_eq!(records(b"not a capture", &KeyLog::default()).len(), 1);
}
