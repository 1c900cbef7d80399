//! A queue of bytes waiting to be written: the encoder's output.
//!
//! Small pieces (preambles, crcs, epilogues, short segments) are copied into
//! one growing arena so that a burst of small frames becomes one buffer; big
//! payload segments are queued as the caller's own `Bytes`, uncopied. A
//! runtime writes the queue with one vectored write and then
//! [`WireQueue::advance`]s by what the socket took.

use std::collections::VecDeque;
use std::io::IoSlice;

use bytes::{Buf, BufMut, Bytes, BytesMut};

/// Segments at least this long are queued by reference, not copied.
pub const DEFAULT_COPY_THRESHOLD: usize = 1024;
/// The first arena's size: a handshake frame, a lone message's header.
const MIN_ARENA: usize = 1024;
/// The largest: the small pieces of a burst of many frames.
const MAX_ARENA: usize = 64 * 1024;

/// What a per-connection queue does once emptied: a small buffer (a
/// connection that has a few items at a time) goes back to the allocator,
/// and the next item comes in a block it has just had back, warm, rather
/// than in this connection's own, cold when connections are many
/// (BENCHMARKS.md, "What grows with connections"); a large one (a busy connection's, warm
/// anyway) stays, rather than growing again item by item.
pub fn let_go_if_small<T>(q: &mut VecDeque<T>) {
    const SMALL: usize = 16;
    if q.is_empty() && q.capacity() <= SMALL {
        *q = VecDeque::new();
    }
}

/// Whether an emptied queue kept its buffer (a large one: see
/// `let_go_if_small`), which a trim of an idle connection lets go.
pub fn holds_spare<T>(q: &VecDeque<T>) -> bool {
    q.is_empty() && q.capacity() > 0
}

/// Bytes waiting to be written, oldest first: the encoder's output. Small
/// pieces (preambles, crcs, short segments) are copied into one growing
/// arena, so that a burst of small frames becomes one buffer; large payload
/// segments are queued as the caller's own `Bytes`, uncopied. A runtime
/// writes it with one vectored write and [`WireQueue::advance`]s by what the
/// socket took.
#[derive(Debug, Default)]
pub struct WireQueue {
    /// Finished chunks, oldest first.
    chunks: VecDeque<Bytes>,
    /// Bytes appended since the last chunk was cut; logically after `chunks`.
    arena: BytesMut,
    /// Bytes in `chunks` (the arena's are `arena.len()`). Adds saturate
    /// rather than wrap: a queue's buffers are far from usize::MAX bytes
    /// long together.
    chunks_len: usize,
    /// The next arena's size (0: MIN_ARENA): it doubles, up to MAX_ARENA,
    /// each time a burst of small pieces fills one, so a connection that
    /// sends a frame at a time (a handshake, depth 1) allocates little and
    /// a busy one cuts few chunks.
    arena_size: usize,
}

impl WireQueue {
    /// An empty queue; it allocates with its first bytes.
    pub fn new() -> Self {
        Self::default()
    }

    /// Bytes queued.
    pub fn len(&self) -> usize {
        self.chunks_len.saturating_add(self.arena.len())
    }

    /// Whether no bytes wait to be written.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Appends a copy of `data`.
    pub fn put_slice(&mut self, data: &[u8]) {
        self.reserve(data.len());
        self.arena.extend_from_slice(data);
    }

    /// Makes room for `n` more bytes in the arena. A full arena's bytes
    /// become a chunk (not copied into a bigger one), and the next arena
    /// is bigger.
    fn reserve(&mut self, n: usize) {
        if self.arena.spare_capacity_mut().len() >= n {
            return;
        }
        let size = self.arena_size.max(MIN_ARENA);
        if !self.arena.is_empty() {
            self.cut();
            self.arena_size = size.saturating_mul(2).min(MAX_ARENA);
        }
        self.arena = BytesMut::with_capacity(n.max(size));
    }

    /// Appends `data` by reference (or by copy when it is short).
    pub fn put_bytes(&mut self, data: Bytes) {
        if data.len() < DEFAULT_COPY_THRESHOLD {
            self.put_slice(&data);
            return;
        }
        self.cut();
        self.push_chunk(data);
    }

    /// Appends a shared buffer: by reference when large, else copied.
    pub fn put_shared(&mut self, data: &Bytes) {
        if data.len() < DEFAULT_COPY_THRESHOLD {
            self.put_slice(data);
        } else {
            self.put_bytes(data.clone());
        }
    }

    /// Appends `n` zero bytes.
    pub fn put_zeros(&mut self, n: usize) {
        self.reserve(n);
        self.arena.put_bytes(0, n);
    }

    /// Lets `fill` append to the arena directly (e.g. to encrypt in place
    /// what it appended), with room for `expected` bytes reserved.
    pub(crate) fn append_with<R>(
        &mut self,
        expected: usize,
        fill: impl FnOnce(&mut BytesMut) -> R,
    ) -> R {
        self.reserve(expected);
        fill(&mut self.arena)
    }

    /// Turns the arena's pending bytes into a chunk.
    fn cut(&mut self) {
        if !self.arena.is_empty() {
            let piece = self.arena.split().freeze();
            self.push_chunk(piece);
        }
    }

    fn push_chunk(&mut self, chunk: Bytes) {
        self.chunks_len = self.chunks_len.saturating_add(chunk.len());
        self.chunks.push_back(chunk);
    }

    /// Fills `out` with slices of the queued bytes, oldest first; returns how
    /// many were filled.
    pub fn io_slices<'a>(&'a mut self, out: &mut [IoSlice<'a>]) -> usize {
        self.cut();
        self.slices(out)
    }

    /// Like [`WireQueue::io_slices`] without cutting: call
    /// [`WireQueue::seal`] first, or the newest small bytes are left out.
    pub fn slices<'a>(&'a self, out: &mut [IoSlice<'a>]) -> usize {
        out.iter_mut()
            .zip(self.chunks.iter())
            .map(|(slot, chunk)| *slot = IoSlice::new(chunk))
            .count()
    }

    /// The queued chunks, oldest first, in two runs (call
    /// [`WireQueue::seal`] first, or the newest small bytes are left out).
    pub fn as_slices(&self) -> (&[Bytes], &[Bytes]) {
        self.chunks.as_slices()
    }

    /// Makes every queued byte visible to [`WireQueue::slices`].
    pub fn seal(&mut self) {
        self.cut();
    }

    /// Moves everything queued in `other` to the end of this queue, without
    /// copying. `other` lets its arena go (what was cut from it lives on
    /// in this queue), and a short list (`let_go_if_small`): a queue
    /// emptied this way, as a connection's frame output is each time the
    /// runtime takes it, holds no memory between frames.
    pub fn append(&mut self, other: &mut WireQueue) {
        if other.is_empty() {
            return;
        }
        self.cut();
        other.cut();
        self.chunks_len = self.chunks_len.saturating_add(other.chunks_len);
        other.chunks_len = 0;
        if self.chunks.is_empty() {
            // The list moves with its chunks.
            std::mem::swap(&mut self.chunks, &mut other.chunks);
        } else {
            self.chunks.append(&mut other.chunks);
        }
        let_go_if_small(&mut other.chunks);
        other.arena = BytesMut::new();
    }

    /// Whether the queue is empty and still holds a buffer of its own (a
    /// list of chunks, an arena): what [`WireQueue::trim`] lets go.
    pub fn holds_spare(&self) -> bool {
        self.is_empty() && (holds_spare(&self.chunks) || self.arena.capacity() > 0)
    }

    /// Lets go of the capacity an empty queue kept (its list of chunks).
    pub fn trim(&mut self) {
        if self.is_empty() {
            self.chunks = VecDeque::new();
            self.arena = BytesMut::new();
        }
    }

    /// Drops everything queued.
    pub fn clear(&mut self) {
        self.chunks.clear();
        self.arena.clear();
        self.chunks_len = 0;
    }

    /// Drops the first `n` queued bytes (what a write consumed). Once all
    /// is written the arena's memory goes too, and a short list of chunks
    /// (`let_go_if_small`): a connection with nothing to send holds none.
    pub fn advance(&mut self, mut n: usize) {
        self.cut();
        self.chunks_len = self
            .chunks_len
            .checked_sub(n)
            .expect("advance past the end of the queue");
        while n > 0 {
            let front = self.chunks.front_mut().expect("len accounts for chunks");
            match n.checked_sub(front.len()) {
                // The write ended inside this chunk.
                None => {
                    front.advance(n);
                    return;
                }
                Some(left) => {
                    n = left;
                    self.chunks.pop_front();
                }
            }
        }
        if self.chunks.is_empty() {
            let_go_if_small(&mut self.chunks);
            self.arena = BytesMut::new();
        }
    }

    /// Number of separate buffers queued.
    pub fn chunk_count(&mut self) -> usize {
        self.cut();
        self.chunks.len()
    }

    /// Takes the oldest chunk.
    pub fn pop_chunk(&mut self) -> Option<Bytes> {
        self.cut();
        let c = self.chunks.pop_front()?;
        // `chunks_len` counts every chunk, so this is exact.
        self.chunks_len = self.chunks_len.saturating_sub(c.len());
        Some(c)
    }

    /// Takes everything as one contiguous buffer (copies unless it is
    /// already one chunk). For tests and tools.
    pub fn take_all(&mut self) -> Bytes {
        self.cut();
        if self.chunks.len() == 1 {
            return self.pop_chunk().unwrap_or_default();
        }
        let mut out = BytesMut::with_capacity(self.chunks_len);
        while let Some(c) = self.pop_chunk() {
            out.extend_from_slice(&c);
        }
        out.freeze()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_queue_written_out_holds_no_arena() {
        let mut q = WireQueue::new();
        q.put_slice(b"abc");
        q.put_slice(b"def");
        q.seal();
        q.advance(4);
        assert!(q.arena.capacity() > 0, "still in use: bytes are queued");
        assert!(!q.holds_spare(), "in use");
        q.advance(2);
        assert!(q.is_empty());
        assert_eq!(q.arena.capacity(), 0);
        assert!(!q.holds_spare(), "nothing for a trim to let go");
        q.put_slice(b"again");
        assert_eq!(q.take_all(), Bytes::from_static(b"again"));

        // A burst grows the next arena, without copying what was put.
        let mut q = WireQueue::new();
        for i in 0..100u8 {
            q.put_slice(&[i; 50]);
        }
        assert!(q.arena_size > MIN_ARENA);
        assert!(q.chunk_count() > 1);
        let all = q.take_all();
        assert!(all.chunks(50).enumerate().all(|(i, c)| c == [i as u8; 50]));

        // Taken by another queue: the same.
        let mut into = WireQueue::new();
        q.put_slice(b"moved");
        into.append(&mut q);
        assert_eq!(q.arena.capacity(), 0);
        assert_eq!(into.take_all(), Bytes::from_static(b"moved"));
    }

    #[test]
    fn small_pieces_coalesce_and_big_ones_are_shared() {
        let mut q = WireQueue::new();
        q.put_slice(b"abc");
        let big = Bytes::from(vec![7u8; 5000]);
        q.put_bytes(big.clone());
        q.put_slice(b"xyz");
        assert_eq!(q.len(), 5006);
        let mut slices = [IoSlice::new(&[]); 8];
        let n = q.io_slices(&mut slices);
        assert_eq!(n, 3);
        assert_eq!(
            slices[1].as_ptr(),
            big.as_ptr(),
            "no copy of the big segment"
        );
        q.advance(4);
        assert_eq!(q.len(), 5002);
        let all = q.take_all();
        assert_eq!(all.len(), 5002);
        assert_eq!(&all[4998..], b"\x07xyz");
    }
}
