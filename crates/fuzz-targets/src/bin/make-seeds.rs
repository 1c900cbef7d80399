//! Writes the seed inputs of every fuzz target into fuzz/corpus/TARGET/:
//! real frames and captures from testdata/captures, and frames of every
//! mode made by our encoder. Run from the repository root:
//! `cargo run -p msgr-fuzz-targets --bin make-seeds`.
#![forbid(unsafe_code)]
// A tool over its own inputs and counts, not a peer's bytes.
#![allow(clippy::arithmetic_side_effects, clippy::indexing_slicing)]

use std::path::Path;

use bytes::Bytes;
use msgr_encoding::{Encode, EntityAddr, EntityAddrvec, EntityName, UTime};
use msgr_frames::banner::Banner;
use msgr_frames::compression::{self, Algorithm, TxCompression};
use msgr_frames::crypto::{Role, SecureKeys};
use msgr_frames::preamble::Preamble;
use msgr_frames::{FrameEncoder, Tag, WireQueue};

fn write(target: &str, name: &str, data: &[u8]) {
    let dir = Path::new("fuzz/corpus").join(target);
    std::fs::create_dir_all(&dir).expect("corpus folder");
    std::fs::write(dir.join(format!("seed-{name}")), data).expect("seed file");
}

fn main() {
    let captures = Path::new("testdata/captures");
    let mut pcaps: Vec<_> = std::fs::read_dir(captures)
        .expect("run from the repository root")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "pcap"))
        .collect();
    pcaps.sort();
    // The smallest capture, whole, and the first KiBs of each.
    for p in &pcaps {
        let data = std::fs::read(p).expect("capture");
        let stem = p
            .file_stem()
            .expect("a fixed input of this tool")
            .to_string_lossy()
            .to_string();
        write("capture", &stem, &data[..data.len().min(6000)]);
    }

    let addr: EntityAddr = "v2:127.0.0.1:3300/7".parse().expect("a valid literal");
    let addrs: EntityAddrvec = "[v2:127.0.0.1:3300/0,v1:127.0.0.1:6789/0]"
        .parse()
        .expect("a valid literal");
    let v6: EntityAddr = "v2:[::1]:6800/1".parse().expect("a valid literal");
    for (i, v) in [
        [&[0u8][..], &addr.to_bytes()].concat(),
        [&[0u8][..], &v6.to_bytes()].concat(),
        [&[1u8][..], &addrs.to_bytes()].concat(),
        [
            &[2u8][..],
            &EntityName::new(msgr_encoding::EntityType::OSD, 3).to_bytes(),
        ]
        .concat(),
        [&[3u8][..], &UTime::new(5, 6).to_bytes()].concat(),
        [&[4u8][..], &"hello".to_string().to_bytes()].concat(),
        [&[5u8][..], &vec![1u32, 2, 3].to_bytes()].concat(),
    ]
    .iter()
    .enumerate()
    {
        write("encoding", &i.to_string(), v);
    }

    write("banner", "default", &Banner::DEFAULT.encode());
    write(
        "preamble",
        "message",
        &Preamble::new(Tag::MESSAGE, [41, 100, 0, 4096], [8, 8, 8, 4096], 0).encode(),
    );
    write(
        "preamble",
        "wait",
        &Preamble::new(Tag::WAIT, [0; 4], [8; 4], 1).encode(),
    );

    let sample: Vec<u8> = (0..3000u32).map(|i| (i / 7) as u8).collect();
    for alg in Algorithm::ALL {
        let mut c = Vec::new();
        compression::compress(alg, &sample, &mut c).expect("a fixed input of this tool");
        write(
            "decompress",
            alg.name(),
            &[&[alg as u8 - 1][..], &c].concat(),
        );
    }

    // Frame streams in every mode (first byte: mode bits, second: step).
    let secret = [0x42u8; 64];
    for mode in [0u8, 1, 2, 3, 5, 7 | (2 << 3)] {
        let rev1 = mode & 1 != 0;
        let mut enc = FrameEncoder::new(rev1);
        if mode & 2 != 0 {
            let k = SecureKeys::from_connection_secret(&secret, Role::Connector)
                .expect("a fixed input of this tool");
            enc.set_cipher(k.ciphers(rev1).0);
        }
        if mode & 4 != 0 {
            let alg = Algorithm::from_wire(((mode >> 3) % 4 + 1) as u32)
                .expect("a fixed input of this tool");
            enc.set_compression(Some(TxCompression::new(alg)));
        }
        let mut q = WireQueue::new();
        let hello = msgr_frames::control::Hello {
            entity_type: msgr_encoding::EntityType::CLIENT,
            peer_addr: addr,
        };
        enc.encode(Tag::HELLO, &[hello.to_bytes()], &mut q)
            .expect("a fixed input of this tool");
        let header = msgr_frames::MsgHeader2 {
            seq: 1,
            msg_type: 42,
            ..Default::default()
        };
        enc.encode(
            Tag::MESSAGE,
            &[
                header.to_bytes(),
                Bytes::from(sample.clone()),
                Bytes::new(),
                Bytes::from_static(&[7; 100]),
            ],
            &mut q,
        )
        .expect("a fixed input of this tool");
        write(
            "frame_stream",
            &format!("mode{mode}"),
            &[&[mode, 200][..], &q.take_all()].concat(),
        );
        // Control payloads.
    }
    for (i, c) in [
        msgr_frames::ControlFrame::from(msgr_frames::control::Hello {
            entity_type: msgr_encoding::EntityType::MON,
            peer_addr: addr,
        }),
        msgr_frames::control::ClientIdent {
            addrs: addrs.clone(),
            target_addr: addr,
            gid: -1,
            global_seq: 1,
            supported_features: u64::MAX,
            required_features: 0,
            flags: 1,
            cookie: 99,
        }
        .into(),
        msgr_frames::control::AuthRequest {
            method: 2,
            preferred_modes: vec![2, 1],
            auth_payload: Bytes::from_static(b"cephx"),
        }
        .into(),
        msgr_frames::control::CompressionRequest {
            is_compress: true,
            preferred_methods: vec![1, 3],
        }
        .into(),
    ]
    .iter()
    .enumerate()
    {
        write(
            "control_payload",
            &i.to_string(),
            &[&[c.tag().0][..], &c.payload()].concat(),
        );
    }
    more_seeds();
    println!("seeds written to fuzz/corpus");
}

/// Seeds of the cephx, config, monitor message and session targets.
fn more_seeds() {
    // session: every mode clean, and one rewrite of each kind.
    for cfg in 0u8..16 {
        write("session", &format!("clean-{cfg}"), &[cfg]);
        for kind in 0u8..5 {
            write(
                "session",
                &format!("op{kind}-{cfg}"),
                &[cfg, kind, 0, 60, 4, 1, 2, 3, 4],
            );
        }
    }
    // cephx: each selector, empty and with a plausible payload, both key types.
    for sel in 0u8..10 {
        for k in [0u8, 0x80] {
            write("cephx", &format!("sel{sel}-{k}"), &[sel | k]);
            write(
                "cephx",
                &format!("sel{sel}-{k}-payload"),
                &[
                    &[sel | k][..],
                    &[
                        10, 8, 0, 0, 0, 5, 0, 0, 0, b'a', b'd', b'm', b'i', b'n', 0, 0, 0, 0, 0, 0,
                        0, 0,
                    ],
                ]
                .concat(),
            );
        }
    }
    write(
        "cephx",
        "keyring",
        &[&[7u8][..], b"[client.admin]\n\tkey = AQCHMgJroUZtMhAA/czX9pKg7epCVWv5s12dAw==\n\tcaps mon = \"allow *\"\n"].concat(),
    );
    // config: the test clusters' files, mon_host forms, CEPH_ARGS, JSON.
    let conf = std::fs::read("scripts/ceph/pacific-cluster.sh").unwrap_or_default();
    write(
        "config",
        "script",
        &[&[0u8][..], &conf[..conf.len().min(4000)]].concat(),
    );
    write("config", "conf", b"\x00[global]\nmon host = [v2:127.0.0.1:3300,v1:127.0.0.1:6789]\n[client.admin]\nkeyring = \"/k # x\"\nx = a\\\nb\n");
    for (i, m) in [
        "[v2:1.2.3.4:3300,v1:1.2.3.4:6789]",
        "10.0.0.1:6789;10.0.0.2 [::1]:3300",
        "v2:[::1]",
    ]
    .iter()
    .enumerate()
    {
        write(
            "config",
            &format!("mon_host-{i}"),
            &[&[1u8][..], m.as_bytes()].concat(),
        );
    }
    write(
        "config",
        "ceph_args",
        b"\x02-c /etc/ceph/ceph.conf --id admin -m 10.0.0.1 --debug_ms=1",
    );
    write(
        "config",
        "json",
        b"\x03{\"fsid\": \"x\", \"a\": [1, -2, 3.5e2, true, null, {\"b\": \"\\u00e9\"}]}",
    );
    // osd_messages: the MOSDOps (v8 from Ceph 16's rados, v9 from Ceph 20's
    // perf client) and MOSDOpReplies of two captures, the first few of each.
    for name in ["pacific-rados-put-get", "tentacle-osd-compress-lz4"] {
        let mut n = 0;
        for_each_message(name, |mf| {
            let sel = match mf.header.msg_type {
                42 => 0u8,
                43 => 1,
                _ => return,
            };
            n += 1;
            if n <= 6 {
                write(
                    "osd_messages",
                    &format!("{name}-{n}"),
                    &[&[sel, mf.header.version as u8][..], &mf.front[..]].concat(),
                );
            }
        });
    }
    write("osd_messages", "command", b"\x02\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x02\x00\x00\x00{}");
    // stats_messages: each usage message as our encoders write it (the
    // layouts of src/messages/MStatfs*.h and MGetPoolStats*.h).
    {
        use msgr_messages::statfs::*;
        use msgr_messages::TypedMessage;
        let fsid = msgr_encoding::Uuid([7; 16]);
        let stat = PoolStat {
            sum: ObjectStatSum {
                num_bytes: 8192,
                num_objects: 2,
                num_object_copies: 4,
                num_wr: 2,
                num_wr_kb: 8,
                num_omap_keys: 1,
                ..Default::default()
            },
            log_size: 2,
            up: 2,
            acting: 2,
            store_stats: StoreStatfs {
                allocated: 16384,
                data_stored: 8192,
                ..Default::default()
            },
            num_store_stats: 2,
            ..Default::default()
        };
        let msgs: [(u8, &str, msgr_protocol::Message); 4] = [
            (
                0,
                "statfs",
                MStatfs {
                    tid: 1,
                    fsid,
                    data_pool: Some(3),
                }
                .to_message(0),
            ),
            (
                1,
                "statfs-reply",
                MStatfsReply {
                    tid: 1,
                    fsid,
                    version: 9,
                    st: CephStatfs {
                        kb: 300,
                        kb_used: 100,
                        kb_avail: 200,
                        num_objects: 2,
                    },
                }
                .to_message(0),
            ),
            (
                2,
                "getpoolstats",
                MGetPoolStats {
                    tid: 2,
                    fsid,
                    pools: vec!["test".into()],
                }
                .to_message(0),
            ),
            (
                3,
                "getpoolstats-reply",
                MGetPoolStatsReply {
                    tid: 2,
                    fsid,
                    pool_stats: [("test".to_string(), stat)].into(),
                    per_pool: true,
                }
                .to_message(0),
            ),
        ];
        let log = msgr_messages::log::MLog {
            fsid,
            entries: vec![msgr_messages::log::LogEntry {
                name: msgr_encoding::AuthName {
                    kind: msgr_encoding::EntityType::CLIENT,
                    id: "admin".into(),
                },
                rank: EntityName::new(msgr_encoding::EntityType::CLIENT, 4123),
                addrs: "v2:127.0.0.1:0/77".parse().expect("addr"),
                stamp: UTime { sec: 5, nsec: 6 },
                seq: 1,
                prio: msgr_messages::log::prio::INFO,
                msg: "hello".into(),
                channel: "cluster".into(),
            }],
        };
        let msgs = msgs.into_iter().chain([(4, "log", log.to_message(0))]);
        for (sel, name, m) in msgs {
            write(
                "stats_messages",
                name,
                &[&[sel, m.version as u8][..], &m.front[..]].concat(),
            );
        }
    }
    // mon_messages: every monitor message of a Ceph 16 and a Ceph 20 `ceph -s`.
    let types = [4u16, 5, 15, 17, 18, 19, 20, 41, 50, 51, 62];
    for name in ["pacific-ceph-s", "tentacle-ceph-s"] {
        let mut n = 0;
        for_each_message(name, |mf| {
            let t = mf.header.msg_type;
            if let Some(i) = types.iter().position(|x| *x == t) {
                n += 1;
                let front = &mf.front[..mf.front.len().min(8000)];
                write(
                    "mon_messages",
                    &format!("{name}-{n}"),
                    &[&[i as u8 + 1, mf.header.version as u8][..], front].concat(),
                );
                if t == 4 {
                    // The MonMap itself (after the bufferlist length).
                    write(
                        "mon_messages",
                        &format!("{name}-{n}-monmap"),
                        &[&[0u8, 0][..], &mf.front[4..]].concat(),
                    );
                }
            }
        });
    }
    msgr1_seeds();
}

/// msgr1 seeds from Ceph's msgr1 captures: each handshake struct under its
/// mode, and the first KiBs of each direction's stream (both footer forms:
/// the captures' sessions have MSG_AUTH, mode bit 4).
fn msgr1_seeds() {
    use msgr_inspect::v1::Event;
    for name in ["tentacle-v1-perf-msgr", "pacific-v1-rados-put-get"] {
        let data = std::fs::read(format!("testdata/captures/{name}.pcap")).expect("capture");
        let mut streams: [Vec<u8>; 2] = Default::default();
        let mut n = 0;
        msgr_inspect::analyze(&data, &Default::default(), |r| {
            let msgr_inspect::Record::Msgr1 {
                dir, event, raw, ..
            } = r
            else {
                return;
            };
            n += 1;
            let mode = match event {
                Event::ServerHello(_) | Event::Connect { .. } => Some(0u8),
                Event::ConnectReply { .. } => Some(1),
                Event::Item(_) => {
                    let s = &mut streams[dir.index()];
                    if s.len() < 8000 {
                        s.extend_from_slice(&raw);
                    }
                    if matches!(event, Event::Item(msgr_frames::v1::Item::Msg(_))) {
                        write(
                            "msgr1",
                            &format!("{name}-{n}-header"),
                            &[&[2u8, 0][..], &raw[1..54]].concat(),
                        );
                    }
                    None
                }
                _ => None,
            };
            if let Some(mode) = mode {
                write(
                    "msgr1",
                    &format!("{name}-{n}"),
                    &[&[mode, 0][..], &raw].concat(),
                );
            }
        });
        for (d, s) in streams.iter().enumerate() {
            write(
                "msgr1",
                &format!("{name}-stream{d}"),
                &[&[3u8 | 4, 200][..], s].concat(),
            );
            write(
                "msgr1",
                &format!("{name}-stream{d}-old"),
                &[&[3u8, 0][..], s].concat(),
            );
        }
    }
    // mgr_messages: the MgrMaps captured from Ceph 16 and 20
    // (crates/messages/testdata), an MMgrCommand and its reply.
    {
        use msgr_messages::mgr::{MMgrCommand, MMgrCommandReply};
        use msgr_messages::TypedMessage;
        for release in ["pacific", "tentacle"] {
            let map = std::fs::read(format!("crates/messages/testdata/mgrmap-{release}.bin"))
                .expect("captured MgrMap");
            write(
                "mgr_messages",
                &format!("mgrmap-{release}"),
                &[&[0u8][..], &map].concat(),
            );
        }
        let cmd = MMgrCommand {
            tid: 1,
            fsid: Default::default(),
            cmd: vec![r#"{"prefix": "balancer status"}"#.into()],
            input: Default::default(),
        };
        write(
            "mgr_messages",
            "command",
            &[&[1u8][..], &cmd.to_message(0).front].concat(),
        );
        let reply = MMgrCommandReply {
            tid: 1,
            r: -22,
            rs: "No handler found for 'x'".into(),
            output: Default::default(),
        };
        write(
            "mgr_messages",
            "command-reply",
            &[&[2u8][..], &reply.to_message(0).front].concat(),
        );
    }
}

/// Calls `f` with every MESSAGE frame of capture `name` (testdata/captures).
fn for_each_message(name: &str, mut f: impl FnMut(&msgr_frames::MessageFrame)) {
    let data = std::fs::read(format!("testdata/captures/{name}.pcap")).expect("capture");
    msgr_inspect::analyze(&data, &Default::default(), |r| {
        if let msgr_inspect::Record::Frame(frame) = r {
            if let Ok(mf) = msgr_frames::MessageFrame::from_received(&frame.frame) {
                f(&mf);
            }
        }
    });
}
