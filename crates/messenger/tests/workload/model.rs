//! What the workload promised and what arrived: one record per connection
//! handle a messenger holds (its outgoing stream of numbered messages, the
//! resets it heard), and the checks that compare them.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use bytes::{BufMut, Bytes, BytesMut};
use msgr_encoding::EntityName;
use msgr_messenger::{ConnState, Connection, IncomingMessage, Message, Policy};

/// splitmix64: the workload's only source of randomness.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }
    pub fn next(&mut self) -> u64 {
        msgr_auth::splitmix64(&mut self.0)
    }
    /// Uniform in 0..n (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const MSG_TYPE: u16 = 0x7357;
const MAGIC: u32 = 0x574b_4c44; // "WKLD"
const HEADER_LEN: usize = 36;

/// The payload body of a message: `len` bytes from `seed`.
fn body(seed: u64, len: usize) -> Bytes {
    let mut rng = Rng::new(seed);
    let mut b = BytesMut::with_capacity(len + 8);
    while b.len() < len {
        b.put_u64_le(rng.next());
    }
    b.truncate(len);
    b.freeze()
}

/// The front every workload message carries.
#[derive(Debug, Clone, Copy)]
struct Header {
    sender: u32,
    stream: u64,
    seq: u64,
    body_seed: u64,
    len: u32,
}

impl Header {
    fn encode(&self) -> Bytes {
        let mut b = BytesMut::with_capacity(HEADER_LEN);
        b.put_u32_le(MAGIC);
        b.put_u32_le(self.sender);
        b.put_u64_le(self.stream);
        b.put_u64_le(self.seq);
        b.put_u64_le(self.body_seed);
        b.put_u32_le(self.len);
        b.freeze()
    }

    fn decode(b: &[u8]) -> Option<Header> {
        if b.len() != HEADER_LEN || b[..4] != MAGIC.to_le_bytes() {
            return None;
        }
        let u32_at = |o: usize| u32::from_le_bytes(b[o..o + 4].try_into().unwrap());
        let u64_at = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().unwrap());
        Some(Header {
            sender: u32_at(4),
            stream: u64_at(8),
            seq: u64_at(16),
            body_seed: u64_at(24),
            len: u32_at(32),
        })
    }
}

/// One connection handle held by messenger `owner`: its outgoing stream
/// and what happened to it.
struct Held {
    conn: Connection,
    peer: Option<usize>,
    lossy: bool,
    /// Messages numbered so far (next seq).
    sent: u64,
    /// Messages below this seq may be lost (a reset or mark_down allowed it).
    loss_below: u64,
    /// Seqs the peer received, ascending.
    received: Vec<u64>,
    /// Messages below this seq may arrive a second time: the receiver
    /// marked its session down and our policy has no resetcheck, so, as in
    /// Ceph (handle_existing_connection reuses without reset_session), the
    /// unacknowledged tail is sent again into the receiver's new session.
    replay_below: u64,
    marked_down: bool,
    closed: bool,
    resets: u32,
    remote_resets: u32,
    /// A server's session whose client marked its side down: what it holds
    /// waits for that client to come back (Ceph's standby), so it is not
    /// counted in flight.
    orphaned: bool,
}

impl Held {
    fn in_flight(&self) -> u64 {
        if self.closed || self.orphaned {
            return 0;
        }
        let arrived = self.received.len() - self.received.partition_point(|&s| s < self.loss_below);
        (self.sent - self.loss_below) - arrived as u64
    }
}

struct Member {
    policy: Policy,
    name: EntityName,
}

#[derive(Default)]
struct Counts {
    messages: u64,
    bytes: u64,
    replies: u64,
    resets: u64,
    remote_resets: u64,
    /// Remote resets over msgr1 that no mark_down explains (see `reset`).
    msgr1_cut_resets: u64,
    mark_downs: u64,
    replayed: u64,
}

pub struct Model {
    rng: Rng,
    members: Vec<Option<Member>>,
    held: BTreeMap<(usize, u64), Held>,
    /// mark_downs between two messengers (smaller index first).
    mark_downs: BTreeMap<(usize, usize), u32>,
    errors: Vec<String>,
    counts: Counts,
    /// FNV-1a over every event, to show a replay is the same run.
    trace: u64,
}

impl Model {
    pub fn new(seed: u64, members: usize) -> Model {
        Model {
            rng: Rng::new(seed),
            members: (0..members).map(|_| None).collect(),
            held: BTreeMap::new(),
            mark_downs: BTreeMap::new(),
            errors: Vec::new(),
            counts: Counts::default(),
            trace: 0xcbf2_9ce4_8422_2325,
        }
    }

    pub fn add_messenger(&mut self, i: usize, policy: Policy, name: EntityName) {
        self.members[i] = Some(Member { policy, name });
    }

    pub fn fail(&mut self, why: String) {
        if self.errors.len() < 20 {
            self.errors.push(why);
        }
    }

    fn note(&mut self, words: &[u64]) {
        if std::env::var_os("MSGR_WORKLOAD_TRACE").is_some() {
            let what = [
                "",
                "connect",
                "accept",
                "send",
                "recv",
                "reset",
                "remote_reset",
                "mark_down",
            ];
            eprintln!(
                "{:?} {} {:?}",
                tokio::time::Instant::now(),
                what[words[0] as usize],
                &words[1..]
            );
        }
        for w in words {
            for b in w.to_le_bytes() {
                self.trace = (self.trace ^ b as u64).wrapping_mul(0x100_0000_01b3);
            }
        }
    }

    fn policy(&self, i: usize) -> Policy {
        self.members[i].as_ref().expect("registered").policy
    }

    fn index_of(&self, name: Option<EntityName>) -> Option<usize> {
        let name = name?;
        self.members
            .iter()
            .position(|m| m.as_ref().is_some_and(|m| m.name == name))
    }

    /// The messenger at the other end of `conn`: by its name, or (msgr1
    /// names a peer only in its messages' headers) by its address's nonce,
    /// which the workload sets to 1000 + its index.
    fn peer_of(&self, conn: &Connection) -> Option<usize> {
        self.index_of(conn.peer_name()).or_else(|| {
            let nonce = conn.peer_addrs().0.first()?.nonce;
            let i = usize::try_from(nonce.checked_sub(1000)?).ok()?;
            self.members.get(i)?.as_ref().map(|_| i)
        })
    }

    fn held_mut(&mut self, owner: usize, conn: &Connection) -> &mut Held {
        let lossy = self.policy(owner).lossy;
        let peer = self.peer_of(conn);
        let h = self.held.entry((owner, conn.id())).or_insert_with(|| Held {
            conn: conn.clone(),
            peer,
            lossy,
            sent: 0,
            loss_below: 0,
            received: Vec::new(),
            replay_below: 0,
            marked_down: false,
            closed: false,
            resets: 0,
            remote_resets: 0,
            orphaned: false,
        });
        if h.peer.is_none() {
            h.peer = peer;
        }
        h
    }

    pub fn connected(&mut self, from: usize, to: usize, conn: &Connection) {
        self.note(&[1, from as u64, to as u64, conn.id()]);
        let h = self.held_mut(from, conn);
        h.peer = Some(to);
    }

    pub fn accepted(&mut self, me: usize, conn: &Connection) {
        self.note(&[2, me as u64, conn.id()]);
        // An accept does not end an orphaning: a socket the client opened
        // before it marked its connection down may still arrive and resume
        // the old session, which no one will use again (seed 5022). Only a
        // new session (a remote reset) makes the stream live again.
        self.held_mut(me, conn);
    }

    /// Numbers a new message on `conn` (held by `from`).
    pub fn make_message(
        &mut self,
        from: usize,
        conn: &Connection,
        len: usize,
        rng: &mut Rng,
    ) -> Message {
        let body_seed = rng.next();
        let h = self.held_mut(from, conn);
        let header = Header {
            sender: from as u32,
            stream: conn.id(),
            seq: h.sent,
            body_seed,
            len: len as u32,
        };
        h.sent += 1;
        self.note(&[3, from as u64, conn.id(), header.seq, len as u64]);
        let mut m = Message::new(MSG_TYPE, header.encode());
        m.data = body(body_seed, len);
        m
    }

    /// A message arrived at `me` on `conn`: check it; maybe answer.
    pub fn received(
        &mut self,
        me: usize,
        conn: &Connection,
        msg: &IncomingMessage,
    ) -> Option<Message> {
        let Some(h) = Header::decode(&msg.front) else {
            self.fail(format!("messenger {me}: a message with a mangled front"));
            return None;
        };
        self.note(&[4, me as u64, h.sender as u64, h.stream, h.seq]);
        if msg.data.len() != h.len as usize || msg.data != body(h.body_seed, h.len as usize) {
            self.fail(format!(
                "messenger {me}: corrupt body on stream {}/{} seq {}",
                h.sender, h.stream, h.seq
            ));
        }
        let Some(stream) = self.held.get_mut(&(h.sender as usize, h.stream)) else {
            self.fail(format!(
                "messenger {me}: a message from unknown stream {}/{}",
                h.sender, h.stream
            ));
            return None;
        };
        if stream.received.last().is_some_and(|&l| h.seq <= l) && h.seq < stream.replay_below {
            // The unacknowledged tail again, into the receiver's new session.
            let keep = stream.received.partition_point(|&s| s < h.seq);
            stream.received.truncate(keep);
            self.counts.replayed += 1;
        }
        let last = stream.received.last().copied();
        let error = if stream.peer.is_some_and(|p| p != me) {
            Some(format!("delivered to {me}, sent to {:?}", stream.peer))
        } else if h.seq >= stream.sent {
            Some(format!("seq {} never sent ({} sent)", h.seq, stream.sent))
        } else if last.is_some_and(|l| h.seq <= l) {
            Some(format!(
                "seq {} after seq {}: {}",
                h.seq,
                last.unwrap_or(0),
                if stream.received.contains(&h.seq) {
                    "duplicate"
                } else {
                    "reordered"
                }
            ))
        } else {
            None
        };
        match error {
            Some(e) => {
                self.fail(format!("stream {}/{}: {e}", h.sender, h.stream));
                return None;
            }
            None => stream.received.push(h.seq),
        }
        self.counts.messages += 1;
        self.counts.bytes += h.len as u64;
        // Answer one in four on the same connection (the reverse stream).
        let mine = self.held.get(&(me, conn.id()));
        if self.rng.below(4) != 0 || mine.is_some_and(|m| m.marked_down || m.closed) {
            return None;
        }
        self.counts.replies += 1;
        let len = 32 + self.rng.below(2048) as usize;
        let mut rng = Rng::new(self.rng.next());
        Some(self.make_message(me, conn, len, &mut rng))
    }

    /// `me` heard ms_handle_reset (or ms_handle_remote_reset) on `conn`.
    pub fn reset(&mut self, me: usize, conn: &Connection, remote: bool) {
        self.note(&[5 + remote as u64, me as u64, conn.id()]);
        let h = self.held_mut(me, conn);
        let (lossy, peer, marked_down) = (h.lossy, h.peer, h.marked_down);
        h.loss_below = h.sent;
        let mut errors = Vec::new();
        if remote {
            h.remote_resets += 1;
            h.orphaned = false;
            self.counts.remote_resets += 1;
            if lossy {
                errors.push("ms_handle_remote_reset on a lossy connection".to_string());
            }
            let pair = peer.map(|p| (me.min(p), me.max(p)));
            let explained = pair.and_then(|p| self.mark_downs.get(&p)).is_some();
            if !explained && conn.is_msgr1() {
                // msgr1 has no session cookies: when a handshake is cut
                // after the acceptor's READY, the connector does not know
                // the session exists, and the acceptor's own reconnect
                // (connect_seq > 0 against a connection still at 0) is
                // answered RESETSESSION by resetcheck (ProtocolV1's row
                // E10, Ceph's behaviour; docs/research/msgr1-wire.md §4.6).
                // The reset is reported and loss is allowed below it, as
                // for any remote reset; msgr2 resumes such a session by
                // its cookie, so there it stays an error.
                self.counts.msgr1_cut_resets += 1;
            } else if !explained {
                errors.push(format!(
                    "ms_handle_remote_reset with peer {peer:?} though no session was marked down"
                ));
            }
        } else {
            h.resets += 1;
            h.closed = true;
            let resets = h.resets;
            self.counts.resets += 1;
            if !lossy {
                errors.push("ms_handle_reset on a lossless connection".to_string());
            }
            if resets > 1 {
                errors.push(format!("{resets} ms_handle_reset on one connection"));
            }
            if marked_down {
                errors.push("ms_handle_reset after mark_down".to_string());
            }
        }
        for e in errors {
            self.fail(format!("messenger {me} conn {}: {e}", conn.id()));
        }
    }

    /// `who` is about to mark `conn` down: what it had queued may be lost,
    /// and the peer's sessions with `who` may be reset.
    pub fn marking_down(&mut self, who: usize, conn: &Connection) {
        self.note(&[7, who as u64, conn.id()]);
        self.counts.mark_downs += 1;
        let h = self.held_mut(who, conn);
        h.marked_down = true;
        h.closed = true;
        h.loss_below = h.sent;
        if let Some(peer) = h.peer {
            *self
                .mark_downs
                .entry((who.min(peer), who.max(peer)))
                .or_default() += 1;
            let peer_policy = self.policy(peer);
            for ((owner, _), other) in self.held.iter_mut() {
                if *owner == peer && other.peer == Some(who) {
                    other.orphaned |= peer_policy.server;
                    if !peer_policy.resetcheck {
                        other.replay_below = other.sent;
                    }
                }
            }
        }
    }

    /// Notes connections whose state went to Closed.
    pub fn prune_closed(&mut self) {
        for h in self.held.values_mut() {
            if !h.closed && h.conn.state() == ConnState::Closed {
                h.closed = true;
                h.loss_below = h.sent;
            }
        }
    }

    pub fn open_connections(&self) -> Vec<(usize, Connection)> {
        self.held
            .iter()
            .filter(|(_, h)| !h.closed)
            .map(|(&(owner, _), h)| (owner, h.conn.clone()))
            .collect()
    }

    pub fn in_flight(&self) -> u64 {
        self.held.values().map(Held::in_flight).sum()
    }

    pub fn describe_in_flight(&self) -> String {
        let mut s = String::new();
        for (&(owner, id), h) in &self.held {
            if h.in_flight() != 0 {
                let _ = write!(
                    s,
                    "\n  {owner}/{id} -> {:?} {:?}: sent {} loss_below {} received {} (last {:?}) resets {}/{}",
                    h.peer,
                    h.conn.state(),
                    h.sent,
                    h.loss_below,
                    h.received.len(),
                    h.received.last(),
                    h.resets,
                    h.remote_resets
                );
            }
        }
        s
    }

    /// End-of-run checks, before shutdown closes everything.
    pub fn check_quiet(&mut self) {
        self.prune_closed();
        let mut errors = Vec::new();
        for (&(owner, id), h) in &self.held {
            if !h.lossy && !h.orphaned {
                let missing: Vec<u64> = (h.loss_below..h.sent)
                    .filter(|s| h.received.binary_search(s).is_err())
                    .collect();
                if !missing.is_empty() {
                    errors.push(format!("{owner}/{id}: lost seqs {missing:?}"));
                }
            }
            let initiated = !self.policy(owner).server;
            if h.lossy && initiated && h.closed && !h.marked_down && h.resets != 1 {
                errors.push(format!(
                    "{owner}/{id}: a lossy connection closed by fault reported {} resets",
                    h.resets
                ));
            }
        }
        for e in errors {
            self.fail(e);
        }
    }

    pub fn verdict(&self, injected: u64) -> Result<String, String> {
        if !self.errors.is_empty() {
            return Err(self.errors.join("; "));
        }
        let c = &self.counts;
        Ok(format!(
            "{} messages ({} replies, {} KiB, {} replayed after a peer's mark_down) over \
             {} connections, {} mark_downs, {} resets, {} remote resets ({} after an msgr1 \
             handshake cut), {} injected failures, trace {:016x}",
            c.messages,
            c.replies,
            c.bytes >> 10,
            c.replayed,
            self.held.len(),
            c.mark_downs,
            c.resets,
            c.remote_resets,
            c.msgr1_cut_resets,
            injected,
            self.trace
        ))
    }
}
