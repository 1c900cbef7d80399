//! `msgr mon status` against a hostile msgr1 "monitor" (issue 33 §2): a
//! scripted peer on 127.0.0.1 that opens the msgr1 session, never answers
//! the client's MAuth, and pushes what a monitor would send only to a
//! client it has authenticated: an MOSDMap whose full map is keyed
//! u32::MAX with oldest_map u32::MAX (twice: the first gives the client a
//! map, the second had it loop for ever under its state lock), and a tid-0
//! MMonCommandAck. The tool must end on its own with a clear error, not
//! hang. Every loop here is bounded by count and by time.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use bytes::Bytes;
use msgr_encoding::{EntityAddr, EntityName, EntityType, Uuid};
use msgr_frames::v1::handshake::CLIENT_HELLO_LEN;
use msgr_frames::v1::{write, Connect, ConnectReply, MsgHeader, ServerHello, Tag, FLAG_LOSSY};
use msgr_messages::{MMonCommandAck, MOSDMap, TypedMessage};

const MSGR: &str = env!("CARGO_BIN_EXE_msgr");

/// How long the tool may take: its connect timeout (20 s) and a margin.
const DEADLINE: Duration = Duration::from_secs(35);
/// The most connections the fake monitor serves (the tool hunts again
/// every 3 s within its 20 s).
const MAX_CONNECTIONS: usize = 20;

/// The poison: a real full map (epoch 10) sent as epoch u32::MAX.
fn poison() -> MOSDMap {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../testdata/osdmaps/pacific/full-10.bin"
    );
    let full = Bytes::from(std::fs::read(path).expect("testdata"));
    MOSDMap {
        fsid: Uuid::default(),
        incremental_maps: BTreeMap::new(),
        maps: BTreeMap::from([(u32::MAX, full)]),
        oldest_map: u32::MAX,
        newest_map: u32::MAX,
    }
}

/// One message as msgr1 frames it: tag, header, sections, footer (the
/// new form when the session has MSG_AUTH).
fn frame(m: &msgr_protocol::Message, seq: u64, msg_auth: bool) -> Vec<u8> {
    let h = MsgHeader {
        seq,
        tid: m.tid,
        msg_type: m.msg_type,
        priority: m.priority,
        version: m.version,
        front_len: m.front.len() as u32,
        middle_len: m.middle.len() as u32,
        data_len: m.data.len() as u32,
        data_off: m.data_off,
        src: EntityName::new(EntityType::MON, 0),
        compat_version: m.compat_version,
        ..MsgHeader::default()
    };
    let mut out = write::msg_head(&h).to_vec();
    out.extend_from_slice(&m.front);
    out.extend_from_slice(&m.middle);
    out.extend_from_slice(&m.data);
    let (_, footer) = write::footer(&m.front, &m.middle, &m.data, None, msg_auth);
    out.extend_from_slice(&footer);
    out
}

/// Serves one connection: the acceptor's side of the handshake (READY,
/// the client's features echoed), then the poison, and whatever the
/// client sends read and dropped until it closes or `until`.
fn serve(mut s: TcpStream, me: SocketAddr, until: Instant) -> std::io::Result<()> {
    s.set_read_timeout(Some(Duration::from_millis(500)))?;
    s.set_write_timeout(Some(Duration::from_secs(5)))?;
    let peer = s.peer_addr()?;
    let legacy = |a: SocketAddr| {
        format!("v1:{a}/0")
            .parse::<EntityAddr>()
            .expect("an address")
    };
    let hello = ServerHello {
        addr: legacy(me),
        peer_addr: legacy(peer),
    };
    s.write_all(&hello.encode())?;
    let mut client_hello = [0u8; CLIENT_HELLO_LEN];
    read_exact_by(&mut s, &mut client_hello, until)?;
    let mut head = [0u8; Connect::LEN];
    read_exact_by(&mut s, &mut head, until)?;
    let connect = Connect::decode(&head);
    let mut authorizer = vec![0u8; connect.authorizer_len.min(4096) as usize];
    read_exact_by(&mut s, &mut authorizer, until)?;
    let reply = ConnectReply {
        tag: Tag::Ready,
        features: connect.features,
        global_seq: 1,
        connect_seq: connect.connect_seq.saturating_add(1),
        protocol_version: connect.protocol_version,
        authorizer_len: 0,
        flags: FLAG_LOSSY,
    };
    s.write_all(&reply.encode())?;
    let msg_auth = connect.features & msgr_protocol::features::MSG_AUTH != 0;
    // Never an MAuthReply: the client is never authenticated.
    let ack = MMonCommandAck {
        tid: 0,
        r: 0,
        rs: "forged".into(),
        cmd: Vec::new(),
        output: Bytes::from_static(b"{\"forged\": true}"),
    };
    let msgs = [
        poison().to_message(connect.features),
        poison().to_message(connect.features),
        ack.to_message(connect.features),
    ];
    for (seq, m) in (1u64..).zip(&msgs) {
        s.write_all(&frame(m, seq, msg_auth))?;
    }
    // What the client sends (its MAuth, keepalives) is read and dropped.
    let mut sink = [0u8; 4096];
    while Instant::now() < until {
        match s.read(&mut sink) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) if is_timeout(&e) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

fn is_timeout(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
    )
}

/// `read_exact` with the socket's read timeout, giving up at `until`.
fn read_exact_by(s: &mut TcpStream, buf: &mut [u8], until: Instant) -> std::io::Result<()> {
    let mut at = 0;
    while at < buf.len() {
        if Instant::now() >= until {
            return Err(std::io::ErrorKind::TimedOut.into());
        }
        let rest = buf.get_mut(at..).unwrap_or_default();
        match s.read(rest) {
            Ok(0) => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => at = at.saturating_add(n),
            Err(e) if is_timeout(&e) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[test]
fn mon_status_ends_against_a_monitor_that_never_authenticates_us() {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let me = listener.local_addr().expect("addr");
    listener.set_nonblocking(true).expect("nonblocking");
    let dir = std::env::temp_dir().join(format!("msgr-hostile-mon-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let conf = dir.join("ceph.conf");
    std::fs::write(&conf, "[global]\nauth_client_required = none\n").expect("conf");

    let started = Instant::now();
    let until = started.checked_add(DEADLINE).expect("a deadline");
    let mut child = Command::new(MSGR)
        .args(["mon", "-c"])
        .arg(&conf)
        .args(["-m", &format!("v1:{me}"), "status"])
        .env_remove("CEPH_ARGS")
        .env_remove("CEPH_CONF")
        .env("HOME", &dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("msgr runs");

    // Serve each connection the tool makes until it exits or the time is
    // up; a bounded number of them.
    let mut served = Vec::new();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break Some(status);
        }
        if Instant::now() >= until {
            break None;
        }
        match listener.accept() {
            Ok((s, _)) if served.len() < MAX_CONNECTIONS => {
                s.set_nonblocking(false).expect("blocking");
                served.push(std::thread::spawn(move || serve(s, me, until)));
            }
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => panic!("accept: {e}"),
        }
    };
    let took = started.elapsed();
    let Some(status) = status else {
        let _ = child.kill();
        let _ = child.wait();
        let _ = std::fs::remove_dir_all(&dir);
        panic!("msgr mon status still running after {took:?}: it hangs");
    };
    let mut stderr = String::new();
    if let Some(mut e) = child.stderr.take() {
        e.read_to_string(&mut stderr).expect("stderr");
    }
    drop(listener);
    for t in served {
        let _ = t.join();
    }
    std::fs::remove_dir_all(&dir).expect("clean up");

    assert!(!status.success(), "{status:?}: {stderr}");
    // The hunt ends at the connect timeout, saying which monitor did what.
    assert!(stderr.contains("no monitor session within 20s"), "{stderr}");
    assert!(stderr.contains(&format!("v1:{me}")), "{stderr}");
    assert!(stderr.contains("before authenticating us"), "{stderr}");
    assert!(took < DEADLINE, "took {took:?}");
}
