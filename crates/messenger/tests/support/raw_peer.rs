//! A hand-driven msgr2 client over TCP, for tests that play a hostile or
//! broken peer: the banner, then the frames the test chooses. It can run
//! any auth method through its [`ClientAuth`] (keeping the transcript that
//! AUTH_SIGNATURE signs), so an attacker holding a real cephx ticket gets
//! exactly as far as the protocol lets it.

#![allow(dead_code)]

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use msgr_auth::{AuthOutcome, AuthPeer, ClientAuth, ConMode};
use msgr_encoding::{EntityAddr, EntityAddrType, EntityType};
use msgr_frames::compression::{self, Algorithm};
use msgr_frames::control::*;
use msgr_frames::{Banner, ControlFrame, FrameDecoder, FrameEncoder, FrameLimits, Tag, WireQueue};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// CEPH_MSG_PING: an empty message, answered in kind by `msgr serve`.
pub const MSG_PING: u16 = 2;

/// `n` MESSAGE frames of `msg_type` carrying `data` (empty: an empty
/// message), numbered from `first` (tids likewise, acknowledging nothing),
/// framed by `enc` in one buffer: many messages in one write.
pub fn messages(
    enc: &mut FrameEncoder,
    first: u64,
    n: u64,
    msg_type: u16,
    data: &Bytes,
) -> std::io::Result<Vec<u8>> {
    let mut q = WireQueue::new();
    for seq in first..first.saturating_add(n) {
        let h = msgr_frames::message::MsgHeader2 {
            seq,
            tid: seq,
            msg_type,
            priority: 127,
            ..Default::default()
        };
        let header = Bytes::copy_from_slice(&h.to_array());
        let segs = [header, Bytes::new(), Bytes::new(), data.clone()];
        enc.encode(Tag::MESSAGE, &segs, &mut q)
            .map_err(std::io::Error::other)?;
    }
    Ok(q.take_all().to_vec())
}

/// What arrived from the server.
#[derive(Debug)]
pub enum Frame {
    Control(ControlFrame),
    /// A MESSAGE frame (its tag only: tests count them).
    Message,
}

/// The bytes AUTH_SIGNATURE covers, in each direction, until AUTH_DONE.
#[derive(Default)]
struct Transcript {
    rx: Vec<u8>,
    tx: Vec<u8>,
}

pub struct RawPeer {
    pub s: TcpStream,
    pub server: std::net::SocketAddr,
    pub enc: FrameEncoder,
    pub dec: FrameDecoder,
    buf: BytesMut,
    transcript: Option<Transcript>,
}

impl RawPeer {
    /// Connects and exchanges banners.
    pub async fn connect(addr: std::net::SocketAddr) -> std::io::Result<RawPeer> {
        let mut s = TcpStream::connect(addr).await?;
        let ours = Banner::DEFAULT.encode();
        s.write_all(&ours).await?;
        let mut prefix = [0u8; 10];
        s.read_exact(&mut prefix).await?;
        let len = Banner::decode_prefix(&prefix).map_err(std::io::Error::other)?;
        let mut payload = vec![0u8; len];
        s.read_exact(&mut payload).await?;
        let peer = Banner::decode_payload(&payload).map_err(std::io::Error::other)?;
        let n = Banner::DEFAULT
            .negotiate(&peer)
            .map_err(std::io::Error::other)?;
        let mut transcript = Transcript::default();
        transcript.tx.extend_from_slice(&ours);
        transcript.rx.extend_from_slice(&prefix);
        transcript.rx.extend_from_slice(&payload);
        Ok(RawPeer {
            s,
            server: addr,
            enc: FrameEncoder::new(n.rev1),
            dec: FrameDecoder::new(n.rev1, FrameLimits::default()),
            buf: BytesMut::new(),
            transcript: Some(transcript),
        })
    }

    /// The server's msgr2 address (nonce 0, as `bind` gives it).
    pub fn server_addr(&self, nonce: u32) -> EntityAddr {
        EntityAddr::new(EntityAddrType::MSGR2, self.server, nonce)
    }

    pub async fn send(&mut self, tag: Tag, segs: &[Bytes]) -> std::io::Result<()> {
        let mut q = WireQueue::new();
        self.enc
            .encode(tag, segs, &mut q)
            .map_err(std::io::Error::other)?;
        let bytes = q.take_all();
        if let Some(t) = self.transcript.as_mut() {
            t.tx.extend_from_slice(&bytes);
        }
        // No server signs more than this; an attacker's flood keeps none.
        if self
            .transcript
            .as_ref()
            .is_some_and(|t| t.tx.len() > msgr_protocol::MAX_PRE_AUTH)
        {
            self.transcript = None;
        }
        self.s.write_all(&bytes).await
    }

    pub async fn control(&mut self, c: ControlFrame) -> std::io::Result<()> {
        self.send(c.tag(), &[c.payload()]).await
    }

    /// The next frame from the server, or `None` on close, error or 5 s of
    /// silence.
    pub async fn recv_frame(&mut self) -> Option<Frame> {
        let mut head = None;
        loop {
            if head.is_none() && self.buf.len() >= self.dec.head_len() {
                head = Some(self.dec.decode_head(&self.buf).ok()?);
            }
            if let Some(h) = head.as_ref().filter(|h| self.buf.len() >= h.frame_len) {
                let frame = self.buf.split_to(h.frame_len);
                if let Some(t) = self.transcript.as_mut() {
                    t.rx.extend_from_slice(&frame);
                }
                let r = self.dec.decode_frame(h, frame).ok()??;
                if r.tag == Tag::MESSAGE {
                    return Some(Frame::Message);
                }
                return ControlFrame::decode(r.tag, &r.segments[0])
                    .ok()
                    .map(Frame::Control);
            }
            let mut chunk = [0u8; 16384];
            let n = tokio::time::timeout(Duration::from_secs(5), self.s.read(&mut chunk))
                .await
                .ok()?
                .ok()?;
            if n == 0 {
                return None;
            }
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }

    /// The next control frame (MESSAGE frames are skipped).
    pub async fn recv(&mut self) -> Option<ControlFrame> {
        loop {
            match self.recv_frame().await? {
                Frame::Control(c) => return Some(c),
                Frame::Message => continue,
            }
        }
    }

    /// HELLO as `entity_type`.
    pub async fn hello(&mut self, entity_type: EntityType) -> std::io::Result<()> {
        let peer_addr = self.server_addr(0);
        self.control(
            Hello {
                entity_type,
                peer_addr,
            }
            .into(),
        )
        .await
    }

    /// The auth exchange through `auth` (to a server of `server_type`),
    /// then AUTH_SIGNATURE both ways. Crc mode only. `Err` says how the
    /// server ended it (an AUTH_BAD_METHOD's errno, a close).
    pub async fn authenticate(
        &mut self,
        auth: &mut dyn ClientAuth,
        server_type: EntityType,
    ) -> Result<AuthOutcome, String> {
        let peer = AuthPeer {
            entity_type: server_type,
        };
        let req = auth.request(&peer, &[]).map_err(|e| e.to_string())?;
        self.control(
            AuthRequest {
                method: req.method,
                preferred_modes: vec![ConMode::CRC.0],
                auth_payload: req.payload,
            }
            .into(),
        )
        .await
        .map_err(|e| e.to_string())?;
        let outcome = loop {
            match self.recv().await {
                Some(ControlFrame::Hello(_)) => continue,
                Some(ControlFrame::AuthReplyMore(m)) => {
                    let more = auth
                        .reply_more(&m.auth_payload)
                        .map_err(|e| e.to_string())?;
                    self.control(AuthRequestMore { auth_payload: more }.into())
                        .await
                        .map_err(|e| e.to_string())?;
                }
                Some(ControlFrame::AuthDone(d)) => {
                    break auth
                        .done(d.global_id, ConMode(d.con_mode), &d.auth_payload)
                        .map_err(|e| e.to_string())?;
                }
                Some(ControlFrame::AuthBadMethod(b)) => {
                    return Err(format!("AUTH_BAD_METHOD {}", b.result))
                }
                Some(other) => return Err(format!("unexpected {:?}", other.tag())),
                None => return Err("closed".into()),
            }
        };
        let t = self.transcript.take().unwrap_or_default();
        let sha256 = outcome.session_key.signature([&t.rx[..]]);
        self.control(AuthSignature { sha256 }.into())
            .await
            .map_err(|e| e.to_string())?;
        match self.recv().await {
            Some(ControlFrame::AuthSignature(s))
                if s.sha256 == outcome.session_key.signature([&t.tx[..]]) =>
            {
                Ok(outcome)
            }
            other => Err(format!("no valid AUTH_SIGNATURE: {other:?}")),
        }
    }

    /// COMPRESSION_REQUEST (asking for `compress`) and its answer.
    pub async fn compression(&mut self, compress: Option<Algorithm>) -> Option<()> {
        self.control(
            CompressionRequest {
                is_compress: compress.is_some(),
                preferred_methods: compress.map(|a| vec![a as u32]).unwrap_or_default(),
            }
            .into(),
        )
        .await
        .ok()?;
        let ControlFrame::CompressionDone(done) = self.recv().await? else {
            return None;
        };
        if let Some(a) = compress.filter(|_| done.is_compress) {
            self.enc.set_compression(Some(compression::TxCompression {
                algorithm: a,
                min_frame_len: 0,
            }));
        }
        Some(())
    }

    /// A MESSAGE frame numbered `seq` (and tid `seq`) carrying `data`.
    pub async fn message(&mut self, seq: u64, data: Bytes) -> std::io::Result<()> {
        let h = msgr_frames::message::MsgHeader2 {
            seq,
            tid: seq,
            msg_type: 42,
            priority: 127,
            ..Default::default()
        };
        let header = Bytes::copy_from_slice(&h.to_array());
        self.send(Tag::MESSAGE, &[header, Bytes::new(), Bytes::new(), data])
            .await
    }

    /// HELLO as a client, auth none, no compression, and a CLIENT_IDENT
    /// from `v2:127.0.0.1:0/nonce` (lossy or not): a READY session, or
    /// `None`.
    pub async fn session(&mut self, nonce: u32, lossy: bool) -> Option<()> {
        self.session_as(&format!("client.{nonce}"), nonce, lossy, None)
            .await
    }

    /// HELLO as a client, auth none, signature, compression (asking for
    /// `compress`), a lossy client ident: a READY session.
    pub async fn handshake(&mut self, compress: Option<Algorithm>) -> Option<()> {
        self.session_as("client.evil", 7, true, compress).await
    }

    /// HELLO as a client, auth none as `name`, compression (asking for
    /// `compress`), CLIENT_IDENT from `v2:127.0.0.1:0/nonce` with gid
    /// `nonce`: a READY session, or `None`.
    async fn session_as(
        &mut self,
        name: &str,
        nonce: u32,
        lossy: bool,
        compress: Option<Algorithm>,
    ) -> Option<()> {
        self.hello(EntityType::CLIENT).await.ok()?;
        let mut none = msgr_auth::NoneClient {
            name: name.into(),
            global_id: nonce as u64,
            modes: vec![ConMode::CRC],
        };
        self.authenticate(&mut none, EntityType::OSD).await.ok()?;
        self.compression(compress).await?;
        let me: EntityAddr = format!("v2:127.0.0.1:0/{nonce}").parse().ok()?;
        let target = self.server_addr(0);
        self.control(
            ClientIdent {
                addrs: msgr_encoding::EntityAddrvec::single(me),
                target_addr: target,
                gid: nonce as i64,
                global_seq: 1,
                supported_features: msgr_protocol::features::SUPPORTED_DEFAULT,
                required_features: 0,
                flags: if lossy { CONNECT_FLAG_LOSSY } else { 0 },
                cookie: nonce as u64 | 1,
            }
            .into(),
        )
        .await
        .ok()?;
        match self.recv().await? {
            ControlFrame::ServerIdent(_) => Some(()),
            _ => None,
        }
    }

    /// Whether the server closed the socket (within `wait`).
    pub async fn closed_by_server(&mut self, wait: Duration) -> bool {
        let mut chunk = [0u8; 4096];
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            match tokio::time::timeout_at(deadline, self.s.read(&mut chunk)).await {
                Err(_) => return false,
                Ok(Ok(0)) | Ok(Err(_)) => return true,
                Ok(Ok(_)) => continue,
            }
        }
    }
}
