//! Follows the msgr2 and msgr1 conversations in a packet capture:
//! reassembles each TCP connection, reads both banners, then, for msgr2,
//! frames in each direction, switching to secure mode after AUTH_DONE
//! picked it (decrypting when the connection secret is known) and to
//! compressed frames after COMPRESSION_DONE enabled them; for msgr1
//! (`ceph v027`), the handshake and the streams ([`v1`]).
//!
//! The analyzer is callback driven: each [`Record`] is handed out as soon as
//! the capture reveals it, so captures of any size stream through.
//! [`describe`] names each frame's and message's fields, for people and as
//! JSON; [`decode`] prints a whole capture that way (`msgr decode`).
#![forbid(unsafe_code)]
#![warn(missing_docs)]

use std::collections::HashMap;
use std::net::SocketAddr;

use bytes::{Bytes, BytesMut};
use msgr_capture::{read_packets, tcp_segment, CaptureError, Direction, Reassembler, StreamEvent};
use msgr_frames::banner::Banner;
use msgr_frames::compression::Algorithm;
use msgr_frames::control::con_mode;
use msgr_frames::crypto::{Role, SecureKeys};
use msgr_frames::v1::{WireError, BANNER as MSGR1_BANNER};
use msgr_frames::{
    read_banner, ControlFrame, FrameDecoder, FrameError, FrameLimits, FrameReader, Received,
    WireFormat,
};

pub mod decode;
pub mod describe;
pub mod v1;

/// Connection secrets for decrypting secure-mode connections.
#[derive(Debug, Default, Clone)]
pub struct KeyLog {
    by_endpoints: HashMap<(SocketAddr, SocketAddr), Vec<u8>>,
    by_conn: HashMap<usize, Vec<u8>>,
}

impl KeyLog {
    /// Parses a key file: one connection per line, `#` starts a comment.
    /// A line is `CLIENT_IP:PORT SERVER_IP:PORT SECRET_HEX` (the connection
    /// by its endpoints, as seen in the capture) or `conn=N SECRET_HEX` (by
    /// its index in this capture). The secret is the connection secret the
    /// auth phase produced (64 bytes with cephx; at least 40 are used).
    pub fn parse(text: &str) -> Result<KeyLog, String> {
        let mut keys = KeyLog::default();
        for (n, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let bad = |why: &str| format!("key file line {}: {why}", n.saturating_add(1));
            let words: Vec<&str> = line.split_whitespace().collect();
            let hex = |s: &str| msgr_encoding::hex::decode(s).map_err(|e| bad(&e));
            match words.as_slice() {
                [conn, secret] if conn.starts_with("conn=") => {
                    let c = conn[5..].parse().map_err(|_| bad("bad connection index"))?;
                    keys.by_conn.insert(c, hex(secret)?);
                }
                [client, server, secret] => {
                    let c = client.parse().map_err(|_| bad("bad client address"))?;
                    let s = server.parse().map_err(|_| bad("bad server address"))?;
                    keys.by_endpoints.insert((c, s), hex(secret)?);
                }
                _ => return Err(bad("expected `CLIENT SERVER SECRET` or `conn=N SECRET`")),
            }
        }
        Ok(keys)
    }

    fn find(&self, conn: usize, client: SocketAddr, server: SocketAddr) -> Option<&Vec<u8>> {
        self.by_conn
            .get(&conn)
            .or_else(|| self.by_endpoints.get(&(client, server)))
    }
}

/// What the analyzer found, in capture order.
#[derive(Debug)]
pub enum Record {
    /// A TCP connection was seen.
    Connection {
        /// The connection's number, in the order connections were seen.
        conn: usize,
        /// The client's address.
        client: SocketAddr,
        /// The server's address.
        server: SocketAddr,
        /// False when the capture missed the handshake and the roles are a guess.
        roles_known: bool,
    },
    /// An msgr2 banner.
    Banner {
        /// The connection's number, in the order connections were seen.
        conn: usize,
        /// Which direction.
        dir: Direction,
        /// The banner.
        banner: Banner,
    },
    /// An msgr2 frame.
    Frame(FrameRecord),
    /// What an msgr1 connection's direction said, with its wire bytes.
    Msgr1 {
        /// The connection's number, in the order connections were seen.
        conn: usize,
        /// Which direction.
        dir: Direction,
        /// The decoded event.
        event: v1::Event,
        /// Its bytes as they were on the wire.
        raw: Bytes,
    },
    /// Secure-mode bytes that could not be decrypted (no key).
    Encrypted {
        /// The connection's number, in the order connections were seen.
        conn: usize,
        /// Which direction.
        dir: Direction,
        /// How many bytes.
        bytes: usize,
    },
    /// Something stopped the decoding of one direction (or, without a
    /// connection, of the whole capture file).
    Problem {
        /// The connection, if the problem is one connection's.
        conn: Option<usize>,
        /// The direction, if the problem is one direction's.
        dir: Option<Direction>,
        /// What went wrong.
        problem: Problem,
    },
}

#[derive(Debug, Clone, PartialEq)]
/// Why decoding stopped.
pub enum Problem {
    /// The capture file itself is unreadable from some point.
    Capture(CaptureError),
    /// Neither msgr2 nor msgr1 (`msgr1: true` is not produced since msgr1
    /// is decoded too; kept for the kind's name).
    NotMsgr2 {
        /// An msgr1 banner was seen.
        msgr1: bool,
    },
    /// An msgr1 wire error (bad crc, a tag out of place, ...).
    Msgr1(WireError),
    /// A frame error (bad crc, failed decryption, ...).
    Frame(FrameError),
    /// Bytes are missing from the capture.
    Gap {
        /// How many bytes (0: cut by the snapshot length).
        missing: u64,
    },
    /// The direction ended in the middle of a banner or frame.
    Truncated {
        /// The bytes held that did not make a whole banner or frame.
        pending: usize,
    },
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Problem::Capture(e) => write!(f, "{e}"),
            Problem::NotMsgr2 { msgr1: true } => f.write_str("not msgr2: msgr1 banner (ceph v027)"),
            Problem::NotMsgr2 { msgr1: false } => f.write_str("not msgr2: no \"ceph v2\" banner"),
            Problem::Frame(e) => write!(f, "{e}"),
            Problem::Msgr1(e) => write!(f, "msgr1: {e}"),
            Problem::Gap { missing: 0 } => f.write_str("capture cut the stream (snapshot length)"),
            Problem::Gap { missing } => write!(f, "{missing} bytes missing from the capture"),
            Problem::Truncated { pending } => {
                write!(f, "stream ends inside a frame ({pending} bytes pending)")
            }
        }
    }
}

impl Problem {
    /// A short machine-readable name.
    pub fn kind(&self) -> &'static str {
        match self {
            Problem::Capture(_) => "capture",
            Problem::NotMsgr2 { msgr1: true } => "msgr1",
            Problem::NotMsgr2 { msgr1: false } => "not_msgr2",
            Problem::Frame(_) | Problem::Msgr1(_) => "frame",
            Problem::Gap { .. } => "gap",
            Problem::Truncated { .. } => "truncated",
        }
    }
}

/// One decoded frame.
#[derive(Debug)]
pub struct FrameRecord {
    /// The connection's number, in the order connections were seen.
    pub conn: usize,
    /// Which direction.
    pub dir: Direction,
    /// Framing it arrived in.
    pub format: WireFormat,
    /// Its bytes as they were on the wire.
    pub raw: Bytes,
    /// The decoded frame.
    pub frame: Received,
    /// Decrypted with a key from the key log.
    pub decrypted: bool,
}

enum Stage {
    Banner,
    /// Banner read; waiting for the peer's to pick the revision.
    PeerBanner,
    Frames,
    Encrypted,
    /// The connection speaks msgr1: its `Conn::v1` decodes this direction.
    Msgr1,
    Stopped,
}

struct Half {
    stage: Stage,
    buf: BytesMut,
    banner: Option<Banner>,
    /// The frames of this direction, once both banners are in.
    reader: Option<FrameReader>,
}

impl Half {
    fn new() -> Self {
        Half {
            stage: Stage::Banner,
            buf: BytesMut::new(),
            banner: None,
            reader: None,
        }
    }

    fn decoder_mut(&mut self) -> Option<&mut FrameDecoder> {
        self.reader.as_mut().map(|r| r.decoder_mut())
    }
}

struct Conn {
    client: SocketAddr,
    server: SocketAddr,
    halves: [Half; 2],
    /// Set once either direction starts with msgr1's banner.
    v1: Option<v1::Session>,
}

impl Conn {
    fn half(&self, dir: Direction) -> &Half {
        let [c2s, s2c] = &self.halves;
        match dir {
            Direction::ClientToServer => c2s,
            Direction::ServerToClient => s2c,
        }
    }

    fn half_mut(&mut self, dir: Direction) -> &mut Half {
        half_mut(&mut self.halves, dir)
    }
}

fn half_mut(halves: &mut [Half; 2], dir: Direction) -> &mut Half {
    let [c2s, s2c] = halves;
    match dir {
        Direction::ClientToServer => c2s,
        Direction::ServerToClient => s2c,
    }
}

const DIRS: [Direction; 2] = [Direction::ClientToServer, Direction::ServerToClient];

/// The direction opposite `dir`.
fn other(dir: Direction) -> Direction {
    match dir {
        Direction::ClientToServer => Direction::ServerToClient,
        Direction::ServerToClient => Direction::ClientToServer,
    }
}

/// Decodes every msgr2 conversation in `capture` (a pcap or pcapng file).
pub fn analyze(capture: &[u8], keys: &KeyLog, mut emit: impl FnMut(Record)) {
    let (packets, err) = read_packets(capture);
    let mut tcp = Reassembler::new();
    let mut conns: Vec<Conn> = Vec::new();
    for p in &packets {
        let Some(seg) = tcp_segment(p) else { continue };
        for ev in tcp.push(&seg) {
            handle(ev, &mut conns, keys, &mut emit);
        }
    }
    for ev in tcp.finish() {
        handle(ev, &mut conns, keys, &mut emit);
    }
    for (conn, c) in conns.iter().enumerate() {
        for dir in DIRS {
            let h = c.half(dir);
            let pending = h.buf.len();
            let open = matches!(
                h.stage,
                Stage::Banner | Stage::PeerBanner | Stage::Frames | Stage::Msgr1
            );
            if pending > 0 && open {
                emit(Record::Problem {
                    conn: Some(conn),
                    dir: Some(dir),
                    problem: Problem::Truncated { pending },
                });
            }
        }
    }
    if let Some(e) = err {
        emit(Record::Problem {
            conn: None,
            dir: None,
            problem: Problem::Capture(e),
        });
    }
}

fn handle(ev: StreamEvent, conns: &mut Vec<Conn>, keys: &KeyLog, emit: &mut impl FnMut(Record)) {
    match ev {
        StreamEvent::Opened {
            conn,
            client,
            server,
            roles_known,
        } => {
            conns.push(Conn {
                client,
                server,
                halves: [Half::new(), Half::new()],
                v1: None,
            });
            emit(Record::Connection {
                conn,
                client,
                server,
                roles_known,
            });
        }
        StreamEvent::Data { conn, dir, bytes } => {
            // The reassembler numbers connections as they open, from 0.
            let Some(c) = conns.get_mut(conn) else { return };
            let h = c.half_mut(dir);
            match h.stage {
                Stage::Stopped => return,
                Stage::Encrypted => {
                    emit(Record::Encrypted {
                        conn,
                        dir,
                        bytes: bytes.len(),
                    });
                    return;
                }
                _ => h.buf.extend_from_slice(&bytes),
            }
            progress(conn, c, dir, keys, emit);
        }
        StreamEvent::Gap { conn, dir, missing } => {
            let Some(h) = conns.get_mut(conn).map(|c| c.half_mut(dir)) else {
                return;
            };
            if !matches!(h.stage, Stage::Stopped | Stage::Encrypted) {
                h.stage = Stage::Stopped;
                emit(Record::Problem {
                    conn: Some(conn),
                    dir: Some(dir),
                    problem: Problem::Gap { missing },
                });
            }
        }
        StreamEvent::Closed { .. } => {}
    }
}

/// Decodes whatever `dir` has buffered, then lets the other direction go on
/// (its banner may have been waiting for ours).
fn progress(
    conn: usize,
    c: &mut Conn,
    dir: Direction,
    keys: &KeyLog,
    emit: &mut impl FnMut(Record),
) {
    step(conn, c, dir, keys, emit);
    let other = other(dir);
    if matches!(c.half(other).stage, Stage::PeerBanner | Stage::Msgr1) {
        step(conn, c, other, keys, emit);
    }
}

fn stop(
    conn: usize,
    c: &mut Conn,
    dir: Direction,
    problem: Problem,
    emit: &mut impl FnMut(Record),
) {
    c.half_mut(dir).stage = Stage::Stopped;
    emit(Record::Problem {
        conn: Some(conn),
        dir: Some(dir),
        problem,
    });
}

fn step(conn: usize, c: &mut Conn, dir: Direction, keys: &KeyLog, emit: &mut impl FnMut(Record)) {
    loop {
        match c.half(dir).stage {
            Stage::Banner => {
                if c.half(dir).buf.starts_with(MSGR1_BANNER) {
                    c.v1 = Some(v1::Session::default());
                    for h in &mut c.halves {
                        if matches!(h.stage, Stage::Banner) {
                            h.stage = Stage::Msgr1;
                        }
                    }
                    continue;
                }
                let h = c.half_mut(dir);
                match read_banner(&mut h.buf) {
                    Ok(None) => return,
                    Ok(Some((banner, _))) => {
                        h.banner = Some(banner);
                        h.stage = Stage::PeerBanner;
                        emit(Record::Banner { conn, dir, banner });
                    }
                    Err(FrameError::NotMsgr2 { msgr1 }) => {
                        return stop(conn, c, dir, Problem::NotMsgr2 { msgr1 }, emit)
                    }
                    Err(e) => return stop(conn, c, dir, Problem::Frame(e), emit),
                }
            }
            Stage::PeerBanner => {
                let own = c.half(dir).banner.expect("banner read");
                let Some(peer) = c.half(other(dir)).banner else {
                    return;
                };
                // Each side frames as both agree; a failed negotiation ends
                // the conversation, and the peer's error frame, if any,
                // follows in rev0 framing.
                let rev1 = own.negotiate(&peer).map(|n| n.rev1).unwrap_or(false);
                let h = c.half_mut(dir);
                h.reader = Some(FrameReader::new(FrameDecoder::new(
                    rev1,
                    FrameLimits::default(),
                )));
                h.stage = Stage::Frames;
            }
            Stage::Frames => {
                let h = c.half_mut(dir);
                let reader = h.reader.as_mut().expect("reader set with the stage");
                let format = reader.decoder().format();
                let raw = match reader.next_raw(&mut h.buf) {
                    Ok(Some(raw)) => raw,
                    Ok(None) => return,
                    Err(e) => return stop(conn, c, dir, Problem::Frame(e), emit),
                };
                let bytes = Bytes::copy_from_slice(raw.bytes());
                match reader.decode(raw) {
                    Ok(Some(frame)) => {
                        let effect = after_frame(&frame, dir);
                        emit(Record::Frame(FrameRecord {
                            conn,
                            dir,
                            format,
                            raw: bytes,
                            frame,
                            decrypted: format.secure,
                        }));
                        apply(conn, c, effect, keys, emit);
                    }
                    Ok(None) => {}
                    Err(e) => return stop(conn, c, dir, Problem::Frame(e), emit),
                }
            }
            Stage::Encrypted => {
                let h = c.half_mut(dir);
                if !h.buf.is_empty() {
                    let bytes = h.buf.len();
                    h.buf.clear();
                    emit(Record::Encrypted { conn, dir, bytes });
                }
                return;
            }
            Stage::Msgr1 => {
                let Some(session) = c.v1.as_mut() else { return };
                let h = half_mut(&mut c.halves, dir);
                let r = session.step(dir, &mut h.buf, &mut |event, raw| {
                    emit(Record::Msgr1 {
                        conn,
                        dir,
                        event,
                        raw,
                    })
                });
                if let Err(e) = r {
                    stop(conn, c, dir, Problem::Msgr1(e), emit);
                }
                return;
            }
            Stage::Stopped => return,
        }
    }
}

/// What a frame changes for the rest of the connection.
enum Effect {
    None,
    /// AUTH_DONE chose secure mode.
    Secure,
    /// COMPRESSION_DONE enabled compression.
    Compress(Algorithm),
}

fn after_frame(frame: &Received, dir: Direction) -> Effect {
    if dir != Direction::ServerToClient {
        return Effect::None;
    }
    match ControlFrame::from_received(frame) {
        Ok(ControlFrame::AuthDone(d)) if d.con_mode == con_mode::SECURE => Effect::Secure,
        Ok(ControlFrame::CompressionDone(d)) if d.is_compress => {
            Algorithm::from_wire(d.method).map_or(Effect::None, Effect::Compress)
        }
        _ => Effect::None,
    }
}

/// Applies a frame's effect to both directions: the server switches right
/// after sending AUTH_DONE / COMPRESSION_DONE, the client right after
/// receiving it, and the client sends nothing in between.
fn apply(conn: usize, c: &mut Conn, effect: Effect, keys: &KeyLog, emit: &mut impl FnMut(Record)) {
    match effect {
        Effect::None => {}
        Effect::Compress(alg) => {
            for h in &mut c.halves {
                if let Some(d) = h.decoder_mut() {
                    d.set_decompression(Some(alg));
                }
            }
        }
        Effect::Secure => {
            let secret = keys.find(conn, c.client, c.server).cloned();
            for dir in DIRS {
                let h = c.half_mut(dir);
                if !matches!(h.stage, Stage::Frames) {
                    continue;
                }
                let rev1 = h.reader.as_ref().is_some_and(|r| r.decoder().format().rev1);
                // Decode each direction as its receiver does: the server
                // (acceptor) receives c2s, the client (connector) s2c.
                let role = match dir {
                    Direction::ClientToServer => Role::Acceptor,
                    Direction::ServerToClient => Role::Connector,
                };
                match secret
                    .as_deref()
                    .map(|s| SecureKeys::from_connection_secret(s, role))
                {
                    Some(Ok(k)) => {
                        if let Some(d) = h.decoder_mut() {
                            d.set_cipher(k.ciphers(rev1).1);
                        }
                    }
                    Some(Err(e)) => {
                        h.stage = Stage::Stopped;
                        emit(Record::Problem {
                            conn: Some(conn),
                            dir: Some(dir),
                            problem: Problem::Frame(e),
                        });
                    }
                    None => h.stage = Stage::Encrypted,
                }
            }
            for dir in DIRS {
                step(conn, c, dir, keys, emit);
            }
        }
    }
}
