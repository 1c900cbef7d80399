//! Hostile peers against a server over TCP: a thousand connections that
//! send half a banner and stall, 4 GiB length claims, 5-segment
//! preambles, floods of bad crcs, garbage, msgr1 banners and
//! decompression bombs, all at once. The server keeps serving a
//! well-behaved client, every hostile connection ends (by error or by the
//! handshake timeout), nothing leaks, and resident memory stays bounded
//! (measured and printed).

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use msgr_auth::NoneProvider;
use msgr_encoding::{EntityName, EntityType};
use msgr_frames::compression::Algorithm;
use msgr_frames::message::MsgHeader2;
use msgr_frames::{FrameLimits, Tag, WireQueue};
use msgr_messenger::{
    Connection, Dispatcher, IncomingMessage, Message, Messenger, Options, Policy,
};
use msgr_protocol::{CompressionConfig, PolicySet};
use msgr_transport::tcp::Tcp;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

#[path = "support/raw_peer.rs"]
mod raw_peer;
use raw_peer::RawPeer;
#[path = "support/rss.rs"]
mod rss;
use rss::rss_kib;
#[path = "support/echo.rs"]
mod echo;
use echo::Echo;

/// The tests here each load the machine (a thousand stalled sockets, a
/// connection limit raced against): they run one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

struct Count(tokio::sync::mpsc::UnboundedSender<u64>);
impl Dispatcher for Count {
    fn ms_dispatch(&self, _: &Connection, msg: IncomingMessage) {
        let _ = self.0.send(msg.tid);
    }
}

/// File descriptors this process may open (soft limit).
fn fd_limit() -> usize {
    std::fs::read_to_string("/proc/self/limits")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .and_then(|l| l.split_whitespace().nth(3))
        .and_then(|v| v.parse().ok())
        .unwrap_or(1024)
}

/// A preamble with chosen segment lengths and count, and a valid crc.
fn preamble(tag: Tag, lens: [u32; 4], count: u8) -> [u8; 32] {
    let mut p = msgr_frames::Preamble::new(tag, lens, [8; 4], 0);
    p.num_segments = count;
    p.encode()
}

fn message_header(tid: u64) -> Bytes {
    let h = MsgHeader2 {
        seq: 1,
        tid,
        msg_type: 42,
        flags: 3,
        ..Default::default()
    };
    Bytes::copy_from_slice(&h.to_array())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_under_hostile_peers_keeps_serving() {
    let _serial = serial();
    let mut o = Options::new(
        "osd.0".parse().unwrap(),
        PolicySet::new(Policy::stateless_server()),
        Arc::new(NoneProvider),
    );
    // The raw peers reach it at nonce 0.
    o.nonce = 0;
    o.timeouts.connect = Duration::from_secs(3);
    o.compression = CompressionConfig {
        force: true,
        all_peers: true,
        algorithms: vec![Algorithm::Zstd],
        ..Default::default()
    };
    o.frame_limits = FrameLimits {
        max_segment_len: 64 << 20,
        max_frame_len: 64 << 20,
        max_decompressed_len: 16 << 20,
    };
    let server = Messenger::new(Tcp::default(), o, Arc::new(Echo::new()));
    let addrs = server
        .bind(&"v2:127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let sock = addrs.msgr2().unwrap().addr.unwrap();
    let rss0 = rss_kib("VmRSS:");

    // 1. Half a banner, then silence, from many sockets at once.
    let stallers = (fd_limit().saturating_sub(200) / 2).min(1000);
    let mut stalled = Vec::new();
    for _ in 0..stallers {
        let mut s = TcpStream::connect(sock).await.unwrap();
        s.write_all(b"ceph ").await.unwrap();
        stalled.push(s);
    }

    // 2. The rest of the zoo, each on its own connection, concurrently.
    let mut zoo = Vec::new();
    // Garbage and msgr1 instead of a banner.
    for bytes in [
        &b"GET / HTTP/1.1\r\n\r\n"[..],
        &b"ceph v027\x00\x00\x00\x00"[..],
        &[0xff; 64][..],
    ] {
        zoo.push(tokio::spawn(async move {
            let mut s = TcpStream::connect(sock).await.unwrap();
            s.write_all(bytes).await.unwrap();
            let mut b = [0u8; 256];
            // The server answers with its banner, then closes.
            let closed = loop {
                match tokio::time::timeout(Duration::from_secs(5), s.read(&mut b)).await {
                    Err(_) => break false,
                    Ok(Ok(0)) | Ok(Err(_)) => break true,
                    Ok(Ok(_)) => continue,
                }
            };
            ("garbage or msgr1", closed)
        }));
    }
    // A 4 GiB length claim in the first frame, and a 5-segment preamble.
    for (what, pre) in [
        ("4 GiB claim", preamble(Tag::HELLO, [u32::MAX, 0, 0, 0], 1)),
        ("5 segments", preamble(Tag::HELLO, [8, 8, 8, 8], 5)),
    ] {
        zoo.push(tokio::spawn(async move {
            let mut p = RawPeer::connect(sock).await.unwrap();
            p.s.write_all(&pre).await.unwrap();
            (what, p.closed_by_server(Duration::from_secs(5)).await)
        }));
    }
    // After READY: a 4 GiB MESSAGE claim, bad crcs, a decompression bomb.
    for i in 0..100 {
        zoo.push(tokio::spawn(async move {
            let mut p = RawPeer::connect(sock).await.unwrap();
            if p.handshake(None).await.is_none() {
                return ("bad crc: handshake", false);
            }
            let mut q = WireQueue::new();
            p.enc
                .encode(
                    Tag::MESSAGE,
                    &[message_header(i), Bytes::from_static(b"0123456789")],
                    &mut q,
                )
                .unwrap();
            let mut frame = q.take_all().to_vec();
            let n = frame.len();
            frame[n - 12] ^= 0x55; // segment 1's crc in the 13-byte rev1 epilogue
            p.s.write_all(&frame).await.unwrap();
            ("bad crc", p.closed_by_server(Duration::from_secs(5)).await)
        }));
    }
    zoo.push(tokio::spawn(async move {
        let mut p = RawPeer::connect(sock).await.unwrap();
        if p.handshake(None).await.is_none() {
            return ("4 GiB message: handshake", false);
        }
        let pre = preamble(Tag::MESSAGE, [41, 0, 0, u32::MAX], 4);
        p.s.write_all(&pre).await.unwrap();
        (
            "4 GiB message",
            p.closed_by_server(Duration::from_secs(5)).await,
        )
    }));
    zoo.push(tokio::spawn(async move {
        let mut p = RawPeer::connect(sock).await.unwrap();
        if p.handshake(Some(Algorithm::Zstd)).await.is_none() {
            return ("bomb: handshake", false);
        }
        // 256 MiB of zeros, compressed to a few KiB: over the 16 MiB cap.
        // Made off the runtime's workers: seconds of compressing on one
        // would hold the tasks queued there (other peers' handshakes) past
        // the server's handshake timeout.
        let frame = tokio::task::block_in_place(|| {
            let bomb = Bytes::from(vec![0u8; 256 << 20]);
            let mut q = WireQueue::new();
            let segs = [message_header(1), Bytes::new(), Bytes::new(), bomb];
            p.enc.encode(Tag::MESSAGE, &segs, &mut q).unwrap();
            q.take_all()
        });
        p.s.write_all(&frame).await.unwrap();
        (
            "decompression bomb",
            p.closed_by_server(Duration::from_secs(10)).await,
        )
    }));

    // 3. Meanwhile a well-behaved client gets every answer.
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let mut co = Options::new(
        "client.1".parse().unwrap(),
        PolicySet::new(Policy::lossless_client()),
        Arc::new(NoneProvider),
    );
    co.nonce = 5;
    let client = Messenger::new(Tcp::default(), co, Arc::new(Count(tx)));
    let conn = client.connect(&addrs, EntityType::OSD);
    for tid in 1..=500u64 {
        let mut m = Message::new(42, Bytes::from(vec![tid as u8; 4096]));
        m.tid = tid;
        conn.send(m).await;
    }
    let mut got = Vec::new();
    while got.len() < 500 {
        match tokio::time::timeout(Duration::from_secs(20), rx.recv()).await {
            Ok(Some(t)) => got.push(t),
            _ => break,
        }
    }
    assert_eq!(
        got,
        (1..=500).collect::<Vec<_>>(),
        "the good client was served"
    );

    for z in zoo {
        let (what, closed) = z.await.unwrap();
        assert!(
            closed,
            "{what}: the server should have closed the connection"
        );
    }
    let rss_peak = rss_kib("VmHWM:");

    // 4. The stalled handshakes time out (3 s here) and nothing is left
    //    but the good client's session.
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let live = server.connections().len();
        if live <= 1 {
            break;
        }
        assert!(Instant::now() < deadline, "{live} connections still open");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    drop(stalled);
    eprintln!(
        "hostile peers: {stallers} stalled half-banners, 105 protocol abusers; resident memory {} MiB before, {} MiB at the peak (client, server and all peers in this process)",
        rss0 / 1024,
        rss_peak / 1024
    );
    // Bounded: a few KiB per stalled connection, never the claimed sizes.
    assert!(
        rss_peak < rss0 + 200 * 1024,
        "resident memory grew from {rss0} to {rss_peak} KiB"
    );
    client.shutdown().await;
    server.shutdown().await;
}

#[tokio::test]
async fn connections_beyond_the_limit_are_refused_at_accept() {
    let _serial = serial();
    let mut o = Options::new(
        "osd.0".parse().unwrap(),
        PolicySet::new(Policy::stateless_server()),
        Arc::new(NoneProvider),
    );
    o.max_connections = 10;
    let server = Messenger::new(Tcp::default(), o, Arc::new(Echo::new()));
    let addrs = server
        .bind(&"v2:127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let sock = addrs.msgr2().unwrap().addr.unwrap();
    let mut held = Vec::new();
    for _ in 0..15 {
        let mut s = TcpStream::connect(sock).await.unwrap();
        s.write_all(b"ceph ").await.unwrap();
        held.push(s);
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    while server.refused_accepts() < 5 {
        assert!(
            Instant::now() < deadline,
            "refused {}",
            server.refused_accepts()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(server.connections().len(), 10);
    let _ = EntityName::default();
    server.shutdown().await;
}

/// A raw msgr1 client: banner and address, then one CONNECT (no
/// authorizer, as Ceph's perf client sends), answered READY or SEQ (then
/// our in_seq 0): the socket is open for messages.
async fn msgr1_open(sock: std::net::SocketAddr) -> Option<(TcpStream, u64)> {
    use msgr_frames::v1::{Connect, ConnectReply, ServerHello, Tag as T1, BANNER};
    let mut s = TcpStream::connect(sock).await.ok()?;
    let mut hello = [0u8; ServerHello::LEN];
    s.write_all(BANNER).await.ok()?;
    s.read_exact(&mut hello).await.ok()?;
    let me: msgr_encoding::EntityAddr = "v1:127.0.0.1:0/77".parse().unwrap();
    let c = Connect {
        features: msgr_protocol::features::SUPPORTED_DEFAULT,
        host_type: 8,
        global_seq: 1,
        connect_seq: 0,
        protocol_version: 24,
        ..Default::default()
    };
    s.write_all(&[&me.encode_legacy()[..], &c.encode()[..]].concat())
        .await
        .ok()?;
    let mut r = [0u8; ConnectReply::LEN];
    s.read_exact(&mut r).await.ok()?;
    let reply = ConnectReply::decode(&r).ok()?;
    if reply.tag == T1::Seq {
        let mut seq = [0u8; 8];
        s.read_exact(&mut seq).await.ok()?;
        s.write_all(&0u64.to_le_bytes()).await.ok()?;
    }
    Some((s, reply.features))
}

/// Whether the server closes `s` within `wait` (reading what it sends).
async fn closed_within(s: &mut TcpStream, wait: Duration) -> bool {
    let mut b = [0u8; 4096];
    loop {
        match tokio::time::timeout(wait, s.read(&mut b)).await {
            Err(_) => return false,
            Ok(Ok(0)) | Ok(Err(_)) => return true,
            Ok(Ok(_)) => continue,
        }
    }
}

/// The same against an msgr1 listener: half banners that stall, a CONNECT
/// claiming a 4 GiB authorizer, CONNECTs repeated without end (each
/// refused with BADPROTOVER), and on open sessions a bad header crc, a bad
/// data crc and a 4 GiB message claim. The server keeps serving an msgr1
/// client, every hostile connection is closed, and memory stays bounded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_msgr1_server_under_hostile_peers_keeps_serving() {
    let _serial = serial();
    use msgr_frames::v1::{write, Connect, MsgHeader, ServerHello, BANNER};
    let mut o = Options::new(
        "osd.0".parse().unwrap(),
        PolicySet::new(Policy::stateless_server()),
        Arc::new(NoneProvider),
    );
    o.nonce = 0;
    o.timeouts.connect = Duration::from_secs(3);
    let server = Messenger::new(Tcp::default(), o, Arc::new(Echo::new()));
    let addrs = server
        .bind(&"v1:127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let sock = addrs.legacy().unwrap().addr.unwrap();
    let rss0 = rss_kib("VmRSS:");

    let stallers = (fd_limit().saturating_sub(200) / 2).min(1000);
    let mut stalled = Vec::new();
    for _ in 0..stallers {
        let mut s = TcpStream::connect(sock).await.unwrap();
        s.write_all(b"ceph v0").await.unwrap();
        stalled.push(s);
    }

    let mut zoo = Vec::new();
    // Handshake abuse.
    for what in ["4 GiB authorizer", "endless CONNECTs"] {
        zoo.push(tokio::spawn(async move {
            let mut s = TcpStream::connect(sock).await.unwrap();
            let mut hello = [0u8; ServerHello::LEN];
            s.write_all(BANNER).await.unwrap();
            s.read_exact(&mut hello).await.unwrap();
            let me: msgr_encoding::EntityAddr = "v1:127.0.0.1:0/78".parse().unwrap();
            s.write_all(&me.encode_legacy()).await.unwrap();
            let mut c = Connect {
                features: msgr_protocol::features::SUPPORTED_DEFAULT,
                host_type: 8,
                protocol_version: 24,
                ..Default::default()
            };
            if what == "4 GiB authorizer" {
                c.authorizer_protocol = 2;
                c.authorizer_len = u32::MAX;
                let _ = s.write_all(&c.encode()).await;
            } else {
                // A wrong version, over and over, never reading the answers.
                c.protocol_version = 99;
                for _ in 0..10_000 {
                    if s.write_all(&c.encode()).await.is_err() {
                        break;
                    }
                }
            }
            // Cut off after a few rounds, well before the 3 s handshake
            // timeout would close it.
            (what, closed_within(&mut s, Duration::from_secs(2)).await)
        }));
    }
    // Abuse on open sessions.
    for what in ["bad header crc", "bad data crc", "4 GiB message"] {
        zoo.push(tokio::spawn(async move {
            let Some((mut s, _)) = msgr1_open(sock).await else {
                return (what, false);
            };
            let data = vec![7u8; 4096];
            let mut h = MsgHeader {
                seq: 1,
                msg_type: 42,
                data_len: 4096,
                ..Default::default()
            };
            let mut head = write::msg_head(&h).to_vec();
            match what {
                "bad header crc" => head[10] ^= 1,
                "4 GiB message" => {
                    h.data_len = u32::MAX;
                    head = write::msg_head(&h).to_vec();
                }
                _ => {}
            }
            let (mut f, _) = write::footer(&[], &[], &data, None, true);
            if what == "bad data crc" {
                f.data_crc ^= 1;
            }
            let _ = s.write_all(&head).await;
            let _ = s.write_all(&data).await;
            let _ = s.write_all(&f.encode()).await;
            (what, closed_within(&mut s, Duration::from_secs(5)).await)
        }));
    }

    // Meanwhile an msgr1 client gets every answer.
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let mut co = Options::new(
        "client.1".parse().unwrap(),
        PolicySet::new(Policy::lossless_client()),
        Arc::new(NoneProvider),
    );
    co.nonce = 5;
    let client = Messenger::new(Tcp::default(), co, Arc::new(Count(tx)));
    let conn = client.connect(&addrs, EntityType::OSD);
    for tid in 1..=500u64 {
        let mut m = Message::new(42, Bytes::from(vec![tid as u8; 4096]));
        m.tid = tid;
        conn.send(m).await;
    }
    let mut got = Vec::new();
    while got.len() < 500 {
        match tokio::time::timeout(Duration::from_secs(20), rx.recv()).await {
            Ok(Some(t)) => got.push(t),
            _ => break,
        }
    }
    assert_eq!(
        got,
        (1..=500).collect::<Vec<_>>(),
        "the msgr1 client was served"
    );
    assert!(conn.is_msgr1());
    for z in zoo {
        let (what, closed) = z.await.unwrap();
        assert!(
            closed,
            "{what}: the server should have closed the connection"
        );
    }
    let rss_peak = rss_kib("VmHWM:");
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let live = server.connections().len();
        if live <= 1 {
            break;
        }
        assert!(Instant::now() < deadline, "{live} connections still open");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    drop(stalled);
    eprintln!(
        "hostile msgr1 peers: {stallers} stalled half-banners, 5 protocol abusers; resident memory {} MiB before, {} MiB at the peak",
        rss0 / 1024,
        rss_peak / 1024
    );
    assert!(
        rss_peak < rss0 + 200 * 1024,
        "resident memory grew from {rss0} to {rss_peak} KiB"
    );
    client.shutdown().await;
    server.shutdown().await;
}
