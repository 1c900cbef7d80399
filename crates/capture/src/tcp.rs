//! TCP stream reassembly: segments in capture order in, each connection's
//! two byte streams out, in order, with retransmissions and overlaps
//! removed and holes reported.
//!
//! Connections are numbered from 0 in the order their first packet appears
//! (for a connection captured from its start, its SYN). The side that sent
//! the SYN is the client; without a SYN, the side that sent a SYN-ACK is
//! the server; without either, the side with the lower port is guessed to
//! be the server.

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;

use crate::packet::{flags, TcpSegment};

/// Client to server, or back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Direction {
    /// From the connection's client (who sent the SYN) to its server.
    ClientToServer,
    /// From the server to the client.
    ServerToClient,
}

impl Direction {
    /// 0 for client to server, 1 for back: an index into per-direction arrays.
    pub fn index(self) -> usize {
        self as usize
    }

    /// `c2s` or `s2c`, for logs.
    pub fn short(self) -> &'static str {
        match self {
            Direction::ClientToServer => "c2s",
            Direction::ServerToClient => "s2c",
        }
    }
}

/// Something that happened on a connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamEvent {
    /// A connection's first packet.
    Opened {
        /// The connection's number, in the order connections were seen.
        conn: usize,
        /// The client's address.
        client: SocketAddr,
        /// The server's address.
        server: SocketAddr,
        /// False when the capture missed the handshake and the roles are a
        /// guess.
        roles_known: bool,
    },
    /// The next in-order bytes of one direction.
    Data {
        /// The connection's number.
        conn: usize,
        /// Which direction.
        dir: Direction,
        /// The bytes.
        bytes: Vec<u8>,
    },
    /// The capture lacks `missing` bytes of one direction (or they were cut
    /// by the snapshot length, or lie past stream offset `u64::MAX`: then
    /// `missing` is 0); the stream cannot be followed past here.
    Gap {
        /// The connection's number.
        conn: usize,
        /// Which direction.
        dir: Direction,
        /// How many bytes are missing.
        missing: u64,
    },
    /// The direction ended (FIN or RST seen).
    Closed {
        /// The connection's number.
        conn: usize,
        /// Which direction.
        dir: Direction,
    },
}

#[derive(Default)]
struct HalfStream {
    /// Stream offset the next delivered byte has, once the start is known.
    next: Option<u64>,
    /// Sequence number of stream offset 0.
    isn: u32,
    /// Out-of-order bytes by stream offset.
    pending: BTreeMap<u64, Vec<u8>>,
    /// Delivery stopped at a hole.
    broken: bool,
    closed: bool,
}

impl HalfStream {
    /// The stream offset of `seq`, unwrapped near the expected offset.
    fn offset(&self, seq: u32) -> u64 {
        let rel = seq.wrapping_sub(self.isn) as u64;
        let next = self.next.unwrap_or(0);
        let base = next & !0xffff_ffff;
        let mut best = base | rel;
        for cand in [best.wrapping_add(1 << 32), best.wrapping_sub(1 << 32)] {
            if cand.abs_diff(next) < best.abs_diff(next) {
                best = cand;
            }
        }
        best
    }

    fn push(&mut self, seq: u32, payload: &[u8], out: &mut Vec<u8>) -> Result<(), OffsetOverflow> {
        if self.next.is_none() {
            self.isn = seq;
            self.next = Some(0);
        }
        let next = self.next.unwrap_or(0);
        let off = self.offset(seq);
        let end = off
            .checked_add(payload.len() as u64)
            .ok_or(OffsetOverflow)?;
        if end <= next || payload.is_empty() {
            return Ok(()); // retransmission of delivered bytes
        }
        // The bytes not delivered yet (some are: `end > next`).
        let skip = next.saturating_sub(off);
        let Some(fresh) = usize::try_from(skip).ok().and_then(|s| payload.get(s..)) else {
            return Ok(());
        };
        self.pending
            .entry(off.max(next))
            .and_modify(|v| {
                if v.len() < fresh.len() {
                    *v = fresh.to_vec();
                }
            })
            .or_insert_with(|| fresh.to_vec());
        self.drain(out)
    }

    fn drain(&mut self, out: &mut Vec<u8>) -> Result<(), OffsetOverflow> {
        let Some(mut next) = self.next else {
            return Ok(());
        };
        while let Some(entry) = self.pending.first_entry() {
            // Stop at a hole (the first pending bytes start past `next`).
            let Some(skip) = next.checked_sub(*entry.key()) else {
                break;
            };
            let (off, bytes) = entry.remove_entry();
            if let Some(fresh) = usize::try_from(skip)
                .ok()
                .and_then(|s| bytes.get(s..))
                .filter(|f| !f.is_empty())
            {
                out.extend_from_slice(fresh);
                next = off.checked_add(bytes.len() as u64).ok_or(OffsetOverflow)?;
            }
        }
        self.next = Some(next);
        Ok(())
    }
}

/// A segment whose stream offsets would pass `u64::MAX`: only a hostile
/// capture gets there (an honest stream would need 2^64 bytes).
struct OffsetOverflow;

struct Conn {
    client: SocketAddr,
    halves: [HalfStream; 2],
}

impl Conn {
    fn half(&mut self, dir: Direction) -> &mut HalfStream {
        let [c2s, s2c] = &mut self.halves;
        match dir {
            Direction::ClientToServer => c2s,
            Direction::ServerToClient => s2c,
        }
    }
}

/// Reassembles every TCP connection of a capture.
#[derive(Default)]
pub struct Reassembler {
    conns: Vec<Conn>,
    by_endpoints: HashMap<(SocketAddr, SocketAddr), usize>,
}

impl Reassembler {
    /// A reassembler that has seen no packet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes the next segment of the capture; returns what it revealed.
    pub fn push(&mut self, seg: &TcpSegment<'_>) -> Vec<StreamEvent> {
        let mut events = Vec::new();
        let syn = seg.flags & flags::SYN != 0;
        let ack = seg.flags & flags::ACK != 0;
        let key = |a: SocketAddr, b: SocketAddr| if a < b { (a, b) } else { (b, a) };
        let existing = self.by_endpoints.get(&key(seg.src, seg.dst)).copied();
        let conn = match existing.map(|c| (c, self.conns.get(c))) {
            // A new SYN on a closed connection's ports is a new connection.
            Some((c, Some(known))) if !(syn && !ack && known.halves.iter().all(|h| h.closed)) => c,
            _ => {
                let (client, roles_known) = match (syn, ack) {
                    (true, false) => (seg.src, true),
                    (true, true) => (seg.dst, true),
                    _ if seg.src.port() > seg.dst.port() => (seg.src, false),
                    _ => (seg.dst, false),
                };
                let server = if client == seg.src { seg.dst } else { seg.src };
                let c = self.conns.len();
                self.conns.push(Conn {
                    client,
                    halves: Default::default(),
                });
                self.by_endpoints.insert(key(seg.src, seg.dst), c);
                events.push(StreamEvent::Opened {
                    conn: c,
                    client,
                    server,
                    roles_known,
                });
                c
            }
        };
        // `by_endpoints` holds only indices of `conns`.
        let Some(c) = self.conns.get_mut(conn) else {
            return events;
        };
        let dir = if seg.src == c.client {
            Direction::ClientToServer
        } else {
            Direction::ServerToClient
        };
        let half = c.half(dir);
        if syn {
            // Data starts after the SYN's sequence number (a retransmitted
            // SYN changes nothing).
            if half.next.is_none() {
                half.isn = seg.seq.wrapping_add(1);
                half.next = Some(0);
            }
            return events;
        }
        if !half.broken {
            let mut bytes = Vec::new();
            let overflow = half.push(seg.seq, seg.payload, &mut bytes).is_err();
            if !bytes.is_empty() {
                events.push(StreamEvent::Data { conn, dir, bytes });
            }
            if seg.payload_cut || overflow {
                half.broken = true;
                events.push(StreamEvent::Gap {
                    conn,
                    dir,
                    missing: 0,
                });
            }
        }
        if seg.flags & (flags::FIN | flags::RST) != 0 && !half.closed {
            half.closed = true;
            events.push(StreamEvent::Closed { conn, dir });
        }
        events
    }

    /// Ends the capture: reports every direction left waiting at a hole.
    pub fn finish(&mut self) -> Vec<StreamEvent> {
        let mut events = Vec::new();
        for (conn, c) in self.conns.iter_mut().enumerate() {
            for dir in [Direction::ClientToServer, Direction::ServerToClient] {
                let half = c.half(dir);
                if let (Some((&off, _)), Some(next)) = (half.pending.first_key_value(), half.next) {
                    if !half.broken {
                        half.broken = true;
                        events.push(StreamEvent::Gap {
                            conn,
                            dir,
                            // Never saturates: draining leaves only bytes
                            // that start past `next`.
                            missing: off.saturating_sub(next),
                        });
                    }
                }
            }
        }
        events
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(src: &str, dst: &str, seq: u32, fl: u8, payload: &'static [u8]) -> TcpSegment<'static> {
        TcpSegment {
            src: src.parse().unwrap(),
            dst: dst.parse().unwrap(),
            seq,
            flags: fl,
            payload,
            payload_cut: false,
        }
    }

    fn data(events: &[StreamEvent]) -> Vec<(usize, Direction, Vec<u8>)> {
        events
            .iter()
            .filter_map(|e| match e {
                StreamEvent::Data { conn, dir, bytes } => Some((*conn, *dir, bytes.clone())),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn reorders_and_drops_retransmissions() {
        let (c, s) = ("10.0.0.1:40000", "10.0.0.2:3300");
        let mut r = Reassembler::new();
        let mut ev = r.push(&seg(c, s, 999, flags::SYN, b""));
        assert!(matches!(
            ev[0],
            StreamEvent::Opened {
                conn: 0,
                roles_known: true,
                ..
            }
        ));
        ev.extend(r.push(&seg(c, s, 1005, flags::ACK, b"world")));
        ev.extend(r.push(&seg(c, s, 1000, flags::ACK, b"hello")));
        ev.extend(r.push(&seg(c, s, 1000, flags::ACK, b"hello")));
        ev.extend(r.push(&seg(c, s, 1003, flags::ACK, b"loworld!")));
        ev.extend(r.push(&seg(s, c, 5000, flags::ACK, b"x")));
        let d = data(&ev);
        let c2s: Vec<u8> = d
            .iter()
            .filter(|x| x.1 == Direction::ClientToServer)
            .flat_map(|x| x.2.clone())
            .collect();
        assert_eq!(c2s, b"helloworld!");
        assert_eq!(d.last().unwrap().1, Direction::ServerToClient);
        assert!(r.finish().is_empty());
    }

    #[test]
    fn holes_are_reported_at_the_end() {
        let (c, s) = ("10.0.0.1:40000", "10.0.0.2:3300");
        let mut r = Reassembler::new();
        r.push(&seg(c, s, 0, flags::SYN, b""));
        r.push(&seg(c, s, 1, flags::ACK, b"ab"));
        r.push(&seg(c, s, 10, flags::ACK, b"zz"));
        assert_eq!(
            r.finish(),
            vec![StreamEvent::Gap {
                conn: 0,
                dir: Direction::ClientToServer,
                missing: 7
            }]
        );
    }

    #[test]
    fn mid_stream_capture_guesses_roles() {
        let mut r = Reassembler::new();
        let ev = r.push(&seg(
            "10.0.0.2:3300",
            "10.0.0.1:40000",
            7,
            flags::ACK,
            b"hi",
        ));
        assert!(matches!(
            ev[0],
            StreamEvent::Opened {
                roles_known: false,
                ..
            }
        ));
        assert_eq!(data(&ev)[0].1, Direction::ServerToClient);
    }

    #[test]
    fn sequence_numbers_wrap() {
        let (c, s) = ("10.0.0.1:40000", "10.0.0.2:3300");
        let mut r = Reassembler::new();
        r.push(&seg(c, s, u32::MAX - 2, flags::SYN, b""));
        let a = r.push(&seg(c, s, u32::MAX - 1, flags::ACK, b"abcd"));
        let b = r.push(&seg(c, s, 2, flags::ACK, b"ef"));
        assert_eq!(data(&a)[0].2, b"abcd");
        assert_eq!(data(&b)[0].2, b"ef");
    }

    #[test]
    fn offsets_past_u64_max_end_the_stream() {
        let (c, s) = ("10.0.0.1:40000", "10.0.0.2:3300");
        let mut r = Reassembler::new();
        r.push(&seg(c, s, 99, flags::SYN, b""));
        // As if 2^64 - 2 bytes had been delivered already.
        r.conns[0].halves[0].next = Some(u64::MAX - 1);
        let seq = 100u32.wrapping_add(u32::MAX - 1);
        let ev = r.push(&seg(c, s, seq, flags::ACK, b"abcd"));
        assert_eq!(
            ev,
            vec![StreamEvent::Gap {
                conn: 0,
                dir: Direction::ClientToServer,
                missing: 0
            }]
        );
        assert!(r.push(&seg(c, s, seq, flags::ACK, b"ab")).is_empty());
    }
}
