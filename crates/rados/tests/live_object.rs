//! An object as a file and a pool's listing as a stream, against librados
//! on a live cluster (see tests/support/live.rs for how these run).

mod support;

use std::io::SeekFrom;

use support::live::{connect, rados_cli_in, rados_ok, unique};
use tokio::io::{AsyncReadExt, AsyncSeekExt, AsyncWriteExt};

const POOL: &str = "test";

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u32).wrapping_mul(2_654_435_761).to_le_bytes()[3] ^ seed)
        .collect()
}

/// 9 MiB written through AsyncWrite (4 MiB pieces, several in flight) is
/// what `rados get` reads; 6 MiB put by `rados` is what AsyncRead reads,
/// from the start and after seeks.
#[tokio::test]
#[ignore = "needs a cluster: scripts/interop/rados.sh"]
async fn an_object_handle_agrees_with_rados_both_ways() {
    let rados = connect().await;
    let io = rados.ioctx(POOL).expect("pool test");

    let ours = unique("object-ours");
    let data = pattern(9 << 20, 1);
    let mut w = io.object(ours.as_bytes());
    w.write_all(&data).await.expect("written");
    w.shutdown().await.expect("acknowledged");
    let got = rados_ok(&["-p", POOL, "get", &ours, "-"]);
    assert!(got == data, "rados read {} bytes of 9 MiB", got.len());

    let theirs = unique("object-theirs");
    let data = pattern(6 << 20, 2);
    let put = rados_cli_in(&["-p", POOL, "put", &theirs, "-"], &data);
    assert!(put.status.success(), "{put:?}");
    let mut r = io.object(theirs.as_bytes()).with_window(1 << 20, 4);
    let mut back = Vec::new();
    r.read_to_end(&mut back).await.expect("read");
    assert!(back == data, "read {} bytes of 6 MiB", back.len());
    r.seek(SeekFrom::End(-(1 << 20) - 7)).await.expect("seek");
    let mut tail = Vec::new();
    r.read_to_end(&mut tail).await.expect("the tail");
    assert!(tail[..] == data[data.len() - (1 << 20) - 7..]);

    for name in [&ours, &theirs] {
        io.remove(name.as_bytes()).await.expect("removed");
    }
    rados.shutdown().await;
}

/// The stream lists what `rados` put in a namespace, as `rados ls` does.
#[tokio::test]
#[ignore = "needs a cluster: scripts/interop/rados.sh"]
async fn the_listing_stream_sees_what_rados_lists() {
    let rados = connect().await;
    let mut io = rados.ioctx(POOL).expect("pool test");
    let ns = unique("list-ns");
    io.set_namespace(&ns);
    let mut made: Vec<String> = (0..40).map(|i| format!("o{i}")).collect();
    for name in &made {
        let put = rados_cli_in(&["-p", POOL, "-N", &ns, "put", name, "-"], b"x");
        assert!(put.status.success(), "{put:?}");
    }
    let mut listed = Vec::new();
    let mut stream = io.list_objects();
    while let Some(entry) = stream.next().await {
        let e = entry.expect("an entry");
        assert_eq!(e.nspace, ns);
        listed.push(String::from_utf8(e.name.to_vec()).expect("utf-8"));
    }
    let theirs = String::from_utf8(rados_ok(&["-p", POOL, "-N", &ns, "ls"])).expect("utf-8");
    let mut theirs: Vec<String> = theirs.lines().map(str::to_string).collect();
    listed.sort();
    made.sort();
    theirs.sort();
    assert_eq!(listed, made);
    assert_eq!(theirs, made);
    for name in &made {
        io.remove(name.as_bytes()).await.expect("removed");
    }
    rados.shutdown().await;
}
