//! A raw msgr1 peer over TCP, for tests that must say what our own
//! messenger never would: a CONNECT without an authorizer or with another
//! host type, a message header naming another sender, a connector's
//! RETRY_GLOBAL past msgr1's 32 bits. Each step is one exchange; every
//! read is bounded in time.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use msgr_auth::{AuthPeer, ClientAuth, ConMode, Msgr1Signer};
use msgr_encoding::{EntityAddr, EntityName, EntityType};
use msgr_frames::v1::header::signature_block;
use msgr_frames::v1::{write, Connect, ConnectReply, MsgHeader, ServerHello, Tag, BANNER};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// How long a read waits before the peer counts as silent.
const READ_WAIT: Duration = Duration::from_secs(5);

/// `CEPH_OSDC_PROTOCOL`: a client's msgr1 version with an OSD.
pub const OSDC_PROTOCOL: u32 = 24;
/// `CEPH_OSD_PROTOCOL`: between OSDs.
pub const OSD_PROTOCOL: u32 = 10;

pub struct RawV1 {
    sock: TcpStream,
    /// Signs our messages once a keyed CONNECT was answered (CEPHX_V2).
    signer: Option<Msgr1Signer>,
    /// The footers carry a signature field (the session has MSG_AUTH).
    msg_auth: bool,
    seq: u64,
}

async fn read_exact(s: &mut TcpStream, b: &mut [u8]) -> Option<()> {
    match tokio::time::timeout(READ_WAIT, s.read_exact(b)).await {
        Ok(Ok(_)) => Some(()),
        _ => None,
    }
}

/// A CONNECT of a client at `global_seq` and `connect_seq`, offering our
/// default features, with no authorizer.
pub fn connect(host_type: EntityType, global_seq: u32, connect_seq: u32) -> Connect {
    Connect {
        features: msgr_protocol::features::SUPPORTED_DEFAULT,
        host_type: u32::from(host_type.0),
        global_seq,
        connect_seq,
        protocol_version: match host_type {
            EntityType::OSD => OSD_PROTOCOL,
            _ => OSDC_PROTOCOL,
        },
        ..Default::default()
    }
}

impl RawV1 {
    /// Banners and addresses with the msgr1 server at `server`: we claim
    /// to be at `me`.
    pub async fn hello(server: SocketAddr, me: EntityAddr) -> Option<RawV1> {
        let mut sock = TcpStream::connect(server).await.ok()?;
        sock.write_all(BANNER).await.ok()?;
        let mut hello = [0u8; ServerHello::LEN];
        read_exact(&mut sock, &mut hello).await?;
        ServerHello::decode(&hello).ok()?;
        sock.write_all(&me.encode_legacy()).await.ok()?;
        Some(RawV1 {
            sock,
            signer: None,
            msg_auth: false,
            seq: 0,
        })
    }

    /// One CONNECT, with an authorizer from `auth` if given (answering one
    /// CHALLENGE_AUTHORIZER), and the server's verdict; None if it closed
    /// instead. A READY or SEQ opens the stream (SEQ answered with our
    /// in_seq 0); with a keyed authorizer, our messages are signed.
    pub async fn connect(
        &mut self,
        mut c: Connect,
        mut auth: Option<&mut dyn ClientAuth>,
    ) -> Option<ConnectReply> {
        let peer = AuthPeer {
            entity_type: EntityType::OSD,
        };
        let mut authorizer = match auth.as_deref_mut() {
            Some(a) => {
                let r = a.request(&peer, &[]).ok()?;
                c.authorizer_protocol = r.method;
                r.payload
            }
            None => Bytes::new(),
        };
        loop {
            c.authorizer_len = u32::try_from(authorizer.len()).ok()?;
            let out = [&c.encode()[..], &authorizer[..]].concat();
            self.sock.write_all(&out).await.ok()?;
            let mut r = [0u8; ConnectReply::LEN];
            read_exact(&mut self.sock, &mut r).await?;
            let reply = ConnectReply::decode(&r).ok()?;
            let mut reply_auth = vec![0u8; usize::try_from(reply.authorizer_len).ok()?.min(4096)];
            read_exact(&mut self.sock, &mut reply_auth).await?;
            match (reply.tag, auth.as_deref_mut()) {
                (Tag::ChallengeAuthorizer, Some(a)) => {
                    authorizer = a.reply_more(&reply_auth).ok()?;
                    continue;
                }
                (Tag::Ready | Tag::Seq, a) => {
                    if reply.tag == Tag::Seq {
                        let mut seq = [0u8; 8];
                        read_exact(&mut self.sock, &mut seq).await?;
                        self.sock.write_all(&0u64.to_le_bytes()).await.ok()?;
                    }
                    self.msg_auth = reply.features & msgr_protocol::features::MSG_AUTH != 0;
                    if let Some(a) = a {
                        let outcome = a.done(0, ConMode::CRC, &reply_auth).ok()?;
                        self.signer = outcome.session_key.msgr1_signer();
                    }
                }
                _ => {}
            }
            return Some(reply);
        }
    }

    /// A message of `msg_type` whose header names `src` as its sender.
    pub async fn send(&mut self, src: EntityName, msg_type: u16, front: &[u8]) -> Option<()> {
        self.seq += 1;
        let mut header = MsgHeader {
            seq: self.seq,
            tid: self.seq,
            msg_type,
            priority: 127,
            version: 1,
            front_len: u32::try_from(front.len()).ok()?,
            middle_len: 0,
            data_len: 0,
            data_off: 0,
            src,
            compat_version: 1,
            reserved: 0,
            crc: 0,
        };
        let head = write::msg_head(&header);
        header.crc = u32::from_le_bytes(*head.last_chunk::<4>()?);
        let (unsigned, _) = write::footer(front, &[], &[], None, self.msg_auth);
        let sig = self
            .signer
            .as_ref()
            .map(|s| s.sign(&signature_block(&header, &unsigned, true), true));
        let (_, footer) = write::footer(front, &[], &[], sig, self.msg_auth);
        let out = [&head[..], front, &footer[..]].concat();
        self.sock.write_all(&out).await.ok()
    }

    /// The socket, for a test that writes on it from a task of its own
    /// (a flood of [`empty_messages`]), and whether the session's footers
    /// carry a signature field (MSG_AUTH).
    #[allow(dead_code)] // bounds.rs's, not every test's
    pub fn into_socket(self) -> (TcpStream, bool) {
        (self.sock, self.msg_auth)
    }

    /// Whether the server closes the socket within `wait` (what it sends
    /// meanwhile is read and dropped); `bytes` counts it.
    pub async fn closed_within(&mut self, wait: Duration) -> (bool, usize) {
        let mut b = [0u8; 4096];
        let mut bytes = 0;
        loop {
            match tokio::time::timeout(wait, self.sock.read(&mut b)).await {
                Err(_) => return (false, bytes),
                Ok(Ok(0)) | Ok(Err(_)) => return (true, bytes),
                Ok(Ok(n)) => bytes += n,
            }
        }
    }
}

/// `n` empty messages of `msg_type` whose headers name `src`, numbered
/// from `first` (tids likewise), unsigned (a session without a keyed
/// authorizer), in one buffer: a flood written a buffer at a time.
/// `msg_auth`: the footers carry a signature field.
#[allow(dead_code)] // bounds.rs's, not every test's
pub fn empty_messages(
    src: EntityName,
    msg_type: u16,
    first: u64,
    n: u64,
    msg_auth: bool,
) -> Vec<u8> {
    let (_, footer) = write::footer(&[], &[], &[], None, msg_auth);
    let mut out = Vec::new();
    for seq in first..first.saturating_add(n) {
        let header = MsgHeader {
            seq,
            tid: seq,
            msg_type,
            priority: 127,
            version: 1,
            src,
            compat_version: 1,
            ..Default::default()
        };
        out.extend_from_slice(&write::msg_head(&header));
        out.extend_from_slice(&footer);
    }
    out
}

/// A scripted msgr1 server on 127.0.0.1 that answers each CONNECT of the
/// first `sockets` connectors with `reply` (its tag and numbers), as a
/// hostile peer we dial would. Returns its address, nonce 0.
pub async fn scripted_server(reply: ConnectReply, sockets: usize) -> EntityAddr {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let at = l.local_addr().unwrap();
    let me: EntityAddr = format!("v1:{at}/0").parse().unwrap();
    tokio::spawn(async move {
        for _ in 0..sockets {
            let Ok(Ok((mut s, peer))) =
                tokio::time::timeout(Duration::from_secs(30), l.accept()).await
            else {
                return;
            };
            let hello = ServerHello {
                addr: me,
                peer_addr: format!("v1:{peer}/0").parse().unwrap(),
            };
            tokio::spawn(async move {
                // The hello starts with the banner.
                if s.write_all(&hello.encode()).await.is_err() {
                    return;
                }
                let mut banner_and_addr = [0u8; 9 + msgr_frames::v1::ADDR_LEN];
                if read_exact(&mut s, &mut banner_and_addr).await.is_none() {
                    return;
                }
                // Each CONNECT (and its authorizer) gets the same answer.
                for _ in 0..16 {
                    let mut c = [0u8; Connect::LEN];
                    if read_exact(&mut s, &mut c).await.is_none() {
                        return;
                    }
                    let c = Connect::decode(&c);
                    let mut a = vec![0u8; (c.authorizer_len as usize).min(4096)];
                    if read_exact(&mut s, &mut a).await.is_none() {
                        return;
                    }
                    if s.write_all(&reply.encode()).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    me
}
