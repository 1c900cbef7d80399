//! Each op's encoding against the bytes librados's `ObjectOperation`
//! produces (src/osdc/Objecter.h: the `ceph_osd_op` union member it fills,
//! its input data), and the output decoders against Ceph's encodings.

use super::*;
use crate::request::flag;
use crate::snap::decode_snap_set;
use msgr_messages::osd_types::NOSNAP;
use msgr_messages::CloneInfo;

fn u64s(args: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(args[at..at + 8].try_into().unwrap())
}

fn u32s(args: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(args[at..at + 4].try_into().unwrap())
}

fn only(ops: &[Op]) -> &Op {
    assert_eq!(ops.len(), 1);
    &ops[0]
}

#[test]
fn cmpxattr_fills_the_xattr_member_with_its_comparison() {
    let mut w = WriteOp::new();
    w.cmpxattr_mode("size", CmpOp::Gte, CmpMode::U64, b"42");
    let o = only(w.ops());
    // `add_xattr_cmp`: name_len, value_len, cmp_op, cmp_mode; name then value.
    assert_eq!(o.op.op, 0x1303);
    assert_eq!((u32s(&o.op.args, 0), u32s(&o.op.args, 4)), (4, 2));
    assert_eq!((o.op.args[8], o.op.args[9]), (4, 2));
    assert_eq!(&o.indata[..], b"size42");
    assert!(!o.writes(), "CMPXATTR is a read op");
    let mut r = ReadOp::new();
    r.cmpxattr("a", CmpOp::Eq, b"v");
    assert_eq!((r.ops()[0].op.args[8], r.ops()[0].op.args[9]), (1, 1));
}

#[test]
fn assert_version_goes_in_the_second_word() {
    let mut w = WriteOp::new();
    w.assert_version(0x0102_0304_0506_0708);
    let o = only(w.ops());
    // `struct { __le64 unused; __le64 ver; } assert_ver`.
    assert_eq!(o.op.op, 0x1208);
    assert_eq!(u64s(&o.op.args, 0), 0);
    assert_eq!(u64s(&o.op.args, 8), 0x0102_0304_0506_0708);
    assert!(o.indata.is_empty());
}

#[test]
fn writesame_carries_offset_length_and_data_length() {
    let mut w = WriteOp::new();
    w.writesame(4096, 1 << 20, Bytes::from_static(b"pattern!"));
    let o = only(w.ops());
    assert_eq!(o.op.op, 0x2226);
    assert_eq!(u64s(&o.op.args, 0), 4096);
    assert_eq!(u64s(&o.op.args, 8), 1 << 20);
    assert_eq!(u64s(&o.op.args, 16), 8);
    assert_eq!(&o.indata[..], b"pattern!");
}

#[test]
fn cmpext_is_an_extent_of_the_compared_bytes() {
    let mut r = ReadOp::new();
    r.cmpext(7, Bytes::from_static(b"abc"));
    let o = only(r.ops());
    assert_eq!(o.op.op, 0x1220);
    assert_eq!(o.op.extent_range(), (7, 3));
    assert_eq!(&o.indata[..], b"abc");
    assert_eq!(cmpext_mismatch(-4095 - 5), Some(5));
    assert_eq!(cmpext_mismatch(-4095), Some(0));
    assert_eq!(cmpext_mismatch(-125), None);
    assert_eq!(cmpext_mismatch(0), None);
}

#[test]
fn checksum_fills_its_member_and_a_seed_of_the_type_width() {
    let mut r = ReadOp::new();
    r.checksum(ChecksumType::Crc32c, 0xffff_ffff, 8, 64, 16);
    r.checksum(ChecksumType::XxHash64, 0x1122_3344_5566_7788, 0, 0, 0);
    let (a, b) = (&r.ops()[0], &r.ops()[1]);
    // offset u64, length u64, chunk_size u32, type u8.
    assert_eq!(a.op.op, 0x121f);
    assert_eq!((u64s(&a.op.args, 0), u64s(&a.op.args, 8)), (8, 64));
    assert_eq!((u32s(&a.op.args, 16), a.op.args[20]), (16, 2));
    assert_eq!(&a.indata[..], &[0xff; 4]);
    assert_eq!(b.op.args[20], 1);
    assert_eq!(&b.indata[..], &0x1122_3344_5566_7788u64.to_le_bytes());
}

#[test]
fn omap_ops_encode_as_add_data_does() {
    let mut w = WriteOp::new();
    w.omap_cmp(&BTreeMap::from([(
        "k".to_string(),
        (Bytes::from_static(b"vv"), CmpOp::Lt),
    )]));
    w.omap_rm_range("a", "bc");
    w.omap_set_header(Bytes::from_static(b"HDR"));
    w.omap_clear();
    w.omap_rm_keys(&BTreeSet::from(["x".to_string()]));
    let ops = w.ops();
    // map<string, pair<bufferlist, int>>: count, key, value, the op.
    let cmp: &[u8] = &[
        1, 0, 0, 0, 1, 0, 0, 0, b'k', 2, 0, 0, 0, b'v', b'v', 5, 0, 0, 0,
    ];
    assert_eq!((ops[0].op.op, &ops[0].indata[..]), (0x1219, cmp));
    assert_eq!(ops[0].op.extent_range(), (0, cmp.len() as u64));
    let range: &[u8] = &[1, 0, 0, 0, b'a', 2, 0, 0, 0, b'b', b'c'];
    assert_eq!((ops[1].op.op, &ops[1].indata[..]), (0x222c, range));
    assert_eq!(ops[1].op.extent_range(), (0, 11));
    assert_eq!((ops[2].op.op, &ops[2].indata[..]), (0x2216, &b"HDR"[..]));
    assert_eq!(ops[2].op.extent_range(), (0, 3));
    assert_eq!((ops[3].op.op, ops[3].indata.len()), (0x2217, 0));
    let keys: &[u8] = &[1, 0, 0, 0, 1, 0, 0, 0, b'x'];
    assert_eq!((ops[4].op.op, &ops[4].indata[..]), (0x2218, keys));
    assert!(ops[1..].iter().all(Op::writes));
    assert!(!ops[0].writes());
    let mut r = ReadOp::new();
    r.omap_get_vals_by_keys(&BTreeSet::from(["b".to_string(), "a".to_string()]));
    r.omap_get_header();
    let by: &[u8] = &[2, 0, 0, 0, 1, 0, 0, 0, b'a', 1, 0, 0, 0, b'b'];
    assert_eq!((r.ops()[0].op.op, &r.ops()[0].indata[..]), (0x1214, by));
    assert_eq!(r.ops()[0].op.extent_range(), (0, by.len() as u64));
    assert_eq!(r.ops()[1].op.op, 0x1213);
}

#[test]
fn flags_go_on_the_last_op_and_on_the_request() {
    let mut w = WriteOp::new();
    w.create(true);
    w.write_full(Bytes::from_static(b"x"));
    w.set_op_flags(op_flag::FADVISE_DONTNEED | op_flag::FAILOK);
    assert_eq!(w.ops()[0].op.flags, op_flag::EXCL);
    assert_eq!(w.ops()[1].op.flags, 0x22);
    // Only the flags a caller may set; librados's bits translated.
    w.set_flags(flag::FULL_TRY | flag::WRITE | flag::PGOP);
    assert_eq!(w.b.flags, 0x80_0000);
    assert_eq!(flag::from_librados(1 | 2), 0x2100);
    assert_eq!(flag::from_librados(4 | 8 | 16), 0x1_c000);
    assert_eq!(flag::from_librados(64 | 512 | 1024), 0x480_0040);
    assert_eq!(flag::from_librados(1 << 20), 0);
    let mut r = ReadOp::new();
    assert!(!r.snapdir);
    r.list_snaps();
    assert!(r.snapdir, "list_snaps reads the snap dir");
    assert_eq!(r.ops()[0].op.op, 0x120a);
}

#[test]
fn sparse_read_output_decodes_and_splits() {
    // map<u64,u64> {0: 2, 10: 3}, then the 5 bytes as a bufferlist.
    let mut out = vec![2, 0, 0, 0];
    for (o, l) in [(0u64, 2u64), (10, 3)] {
        out.extend_from_slice(&o.to_le_bytes());
        out.extend_from_slice(&l.to_le_bytes());
    }
    out.extend_from_slice(&[5, 0, 0, 0]);
    out.extend_from_slice(b"abXYZ");
    let s = decode_sparse_read(&out).unwrap();
    assert_eq!(s.extents, vec![(0, 2), (10, 3)]);
    let pieces = s.pieces().unwrap();
    assert_eq!(pieces[1], (10, Bytes::from_static(b"XYZ")));
    // Extents claiming more than the data: no pieces, no panic.
    let short = SparseRead {
        extents: vec![(0, 6)],
        data: Bytes::from_static(b"abc"),
    };
    assert_eq!(short.pieces(), None);
    let huge = SparseRead {
        extents: vec![(0, u64::MAX)],
        data: Bytes::from_static(b"abc"),
    };
    assert_eq!(huge.pieces(), None);
    // A hostile count is refused before allocating.
    assert!(decode_sparse_read(&[0xff, 0xff, 0xff, 0x7f]).is_err());
    assert!(decode_sparse_read(&out[..out.len() - 1]).is_err());
}

#[test]
fn checksum_output_is_a_count_then_sums() {
    let out = [2, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0];
    assert_eq!(decode_checksums(4, &out).unwrap(), Checksums(vec![1, 2]));
    let mut op = OsdOp::default();
    op.args[20] = 1;
    let wide = [1, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 1];
    let sums = Checksums::decode_output(&op, &Bytes::copy_from_slice(&wide)).unwrap();
    assert_eq!(sums, Checksums(vec![0x0100_0000_0000_0009]));
    assert!(decode_checksums(4, &[3, 0, 0, 0, 1, 0, 0, 0]).is_err());
    assert!(decode_checksums(8, &[0xff, 0xff, 0xff, 0xff]).is_err());
}

/// `obj_list_snap_response_t` v2 with a clone (snaps [3, 4], one
/// overlap, size 100) and the head, seq 4.
fn list_snaps_bytes() -> Vec<u8> {
    let mut clone = Vec::new();
    clone.extend_from_slice(&4u64.to_le_bytes());
    clone.extend_from_slice(&[2, 0, 0, 0]);
    clone.extend_from_slice(&3u64.to_le_bytes());
    clone.extend_from_slice(&4u64.to_le_bytes());
    clone.extend_from_slice(&[1, 0, 0, 0]);
    clone.extend_from_slice(&0u64.to_le_bytes());
    clone.extend_from_slice(&50u64.to_le_bytes());
    clone.extend_from_slice(&100u64.to_le_bytes());
    let mut head = Vec::new();
    head.extend_from_slice(&NOSNAP.to_le_bytes());
    head.extend_from_slice(&[0; 8]);
    head.extend_from_slice(&120u64.to_le_bytes());
    let mut body = vec![2, 0, 0, 0];
    for c in [&clone, &head] {
        body.extend_from_slice(&[1, 1]);
        body.extend_from_slice(&(c.len() as u32).to_le_bytes());
        body.extend_from_slice(c);
    }
    body.extend_from_slice(&4u64.to_le_bytes());
    let mut out = vec![2, 1];
    out.extend_from_slice(&(body.len() as u32).to_le_bytes());
    out.extend_from_slice(&body);
    out
}

#[test]
fn list_snaps_output_decodes() {
    let s = decode_snap_set(&list_snaps_bytes()).unwrap();
    assert_eq!(s.seq, 4);
    assert_eq!(
        s.clones,
        vec![
            CloneInfo {
                cloneid: 4,
                snaps: vec![3, 4],
                overlap: vec![(0, 50)],
                size: 100
            },
            CloneInfo {
                cloneid: NOSNAP,
                snaps: vec![],
                overlap: vec![],
                size: 120
            },
        ]
    );
    // Every truncation is an error, never a panic.
    let full = list_snaps_bytes();
    for n in 0..full.len() {
        assert!(decode_snap_set(&full[..n]).is_err(), "{n} bytes");
    }
}

#[test]
fn results_report_each_ops_rval_and_decode_outputs() {
    use crate::request::OpReply;
    let mut r = ReadOp::new();
    let stat = r.stat();
    let attr = r.getxattr("a");
    let keys = r.omap_get_keys("", 10);
    let mut stat_out = 7u64.to_le_bytes().to_vec();
    stat_out.extend_from_slice(&[1, 0, 0, 0, 2, 0, 0, 0]);
    let results = OpResults {
        ops: r.ops().iter().map(|o| o.op).collect(),
        reply: Reply {
            result: -61,
            ops: vec![
                OpReply {
                    rval: 0,
                    outdata: Bytes::from(stat_out),
                },
                OpReply {
                    rval: -61,
                    outdata: Bytes::new(),
                },
                OpReply {
                    rval: 0,
                    outdata: Bytes::from_static(&[0xff, 0xff, 0xff, 0xff]),
                },
            ],
            version: 9,
            osd: 1,
        },
    };
    assert_eq!(results.get(stat).unwrap().size, 7);
    let e = results.get(attr).unwrap_err();
    assert_eq!(e.errno(), Some(-61));
    assert!(e.to_string().contains("op 1 (getxattr)"), "{e}");
    let e = results.get(keys).unwrap_err();
    assert!(matches!(e, RadosError::BadReply(_)), "{e}");
    assert_eq!(results.failed(), Some((1, -61)));
    assert_eq!(results.version(), 9);
    let e = into_result(b"obj", results).unwrap_err();
    assert_eq!(
        e.to_string(),
        "obj: op 1 (getxattr): error -61: ENODATA (no such attribute)"
    );
}

mod balanced_reads {
    //! The objecter's choice of OSD for reads that may go to a replica,
    //! against a real map (Ceph 16's at epoch 43: pool 1 replicated size
    //! 3 on osd.0-2).
    use std::sync::Arc;
    use std::time::Instant;

    use bytes::Bytes;
    use msgr_messages::MOSDOpReply;
    use msgr_osdmap::OsdMap;

    use super::super::{ReadOp, WriteOp};
    use crate::objecter::{Limits, Object, Objecter, Request, Transmit};
    use crate::request::{flag, Ops};

    fn map() -> Arc<OsdMap> {
        let bytes = include_bytes!("../../../../testdata/osdmaps/pacific/full-43.bin");
        Arc::new(OsdMap::decode(bytes).expect("map"))
    }

    fn req(name: &str, ops: &[crate::request::Op], flags: u32) -> Request {
        let object = Object {
            pool: 1,
            name: Bytes::copy_from_slice(name.as_bytes()),
            ..Object::default()
        };
        Request {
            flags,
            ..Request::new(object, Ops(ops.to_vec()))
        }
    }

    fn send(o: &mut Objecter, r: Request) -> Transmit {
        o.submit(r, Instant::now());
        o.place_now();
        o.poll_transmit().expect("sent")
    }

    #[test]
    fn balanced_reads_spread_over_the_acting_set_and_writes_do_not() {
        let m = map();
        let mut o = Objecter::new(m.clone(), Limits::default());
        let mut r = ReadOp::new();
        r.read(0, 0);
        let mut w = WriteOp::new();
        w.write_full(Bytes::from_static(b"x"));
        let mut replicas = 0;
        for i in 0..32 {
            let name = format!("obj{i}");
            let place = m.place(1, name.as_bytes(), b"").expect("placed");
            let primary = place.osds.acting_primary;
            let plain = send(&mut o, req(&name, r.ops(), 0));
            assert_eq!(plain.osd, primary);
            let t = send(&mut o, req(&name, r.ops(), flag::BALANCE_READS));
            assert!(place.osds.acting.contains(&t.osd));
            assert_eq!(t.msg.flags & flag::BALANCE_READS, flag::BALANCE_READS);
            replicas += usize::from(t.osd != primary);
            let wt = send(&mut o, req(&name, w.ops(), flag::BALANCE_READS));
            assert_eq!(wt.osd, primary, "writes go to the primary");
            // LOCALIZE_READS with no CRUSH location: the primary.
            let l = send(&mut o, req(&name, r.ops(), flag::LOCALIZE_READS));
            assert_eq!(l.osd, primary);
        }
        // 32 reads over 3 OSDs: all on the primary would be (1/3)^32.
        assert!(replicas > 0);
    }

    #[test]
    fn a_replica_bouncing_a_read_sends_it_to_the_primary() {
        let m = map();
        let mut o = Objecter::new(m.clone(), Limits::default());
        let mut r = ReadOp::new();
        r.read(0, 0);
        // An object whose balanced read goes to a replica.
        let (name, t) = (0..64)
            .find_map(|i| {
                let name = format!("bounce{i}");
                let primary = m
                    .place(1, name.as_bytes(), b"")
                    .unwrap()
                    .osds
                    .acting_primary;
                let t = send(&mut o, req(&name, r.ops(), flag::BALANCE_READS));
                (t.osd != primary).then_some((name, t))
            })
            .expect("one read on a replica");
        let mut bounce = MOSDOpReply::answering(t.msg.clone(), -11);
        bounce.retry_attempt = t.msg.retry_attempt;
        o.handle_reply(t.osd, bounce);
        o.place_now();
        let again = o.poll_transmit().expect("sent again");
        let primary = m
            .place(1, name.as_bytes(), b"")
            .unwrap()
            .osds
            .acting_primary;
        assert_eq!(again.osd, primary);
        assert_eq!(again.msg.tid, t.msg.tid);
        assert_eq!(again.msg.flags & flag::BALANCE_READS, 0);
    }
}

mod localized_reads {
    //! LOCALIZE_READS against the same map: the acting OSD sharing the
    //! lowest CRUSH bucket with the client's location.
    use std::sync::Arc;
    use std::time::Instant;

    use bytes::Bytes;
    use msgr_osdmap::OsdMap;

    use super::super::ReadOp;
    use crate::objecter::{Limits, Object, Objecter, Request};
    use crate::request::{flag, Ops};

    fn map() -> Arc<OsdMap> {
        let bytes = include_bytes!("../../../../testdata/osdmaps/pacific/full-43.bin");
        Arc::new(OsdMap::decode(bytes).expect("map"))
    }

    /// The host bucket holding `osd`.
    fn host_of(m: &OsdMap, osd: i32) -> String {
        let host_type = m
            .crush
            .type_names
            .iter()
            .find(|(_, n)| *n == "host")
            .map(|(t, _)| *t)
            .expect("a host type");
        let b = m
            .crush
            .buckets
            .iter()
            .flatten()
            .find(|b| i32::from(b.type_id) == host_type && b.items.contains(&osd))
            .expect("a host");
        m.crush.names[&b.id].clone()
    }

    #[test]
    fn localized_reads_go_to_the_osd_on_the_clients_host() {
        let m = map();
        let mut r = ReadOp::new();
        r.read(0, 0);
        for i in 0..16 {
            let name = format!("local{i}");
            let place = m.place(1, name.as_bytes(), b"").expect("placed");
            for &osd in &place.osds.acting {
                let host = host_of(&m, osd);
                // Only this OSD on that host among the acting set?
                let alone = place
                    .osds
                    .acting
                    .iter()
                    .filter(|&&o| host_of(&m, o) == host)
                    .count()
                    == 1;
                let mut o = Objecter::new(m.clone(), Limits::default());
                o.set_crush_location(vec![
                    ("host".into(), host.clone()),
                    ("root".into(), "default".into()),
                ]);
                let object = Object {
                    pool: 1,
                    name: Bytes::copy_from_slice(name.as_bytes()),
                    ..Object::default()
                };
                let req = Request {
                    flags: flag::LOCALIZE_READS,
                    ..Request::new(object, Ops(r.ops().to_vec()))
                };
                o.submit(req, Instant::now());
                o.place_now();
                let t = o.poll_transmit().expect("sent");
                if alone {
                    assert_eq!(t.osd, osd, "{name}: the OSD on host {host}");
                } else {
                    assert_eq!(host_of(&m, t.osd), host, "{name}");
                }
            }
        }
    }
}
