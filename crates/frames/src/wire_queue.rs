//! A queue of bytes waiting to be written: the encoder's output.
//!
//! Small pieces (preambles, crcs, epilogues, short segments) are copied into
//! one growing arena so that a burst of small frames becomes one buffer; big
//! payload segments are queued as the caller's own `Bytes`, uncopied. A
//! runtime writes the queue with one vectored write and then
//! [`WireQueue::advance`]s by what the socket took.

use std::collections::VecDeque;
use std::io::IoSlice;

use bytes::{Buf, Bytes, BytesMut};

/// Segments at least this long are queued by reference, not copied.
pub const DEFAULT_COPY_THRESHOLD: usize = 1024;
const ARENA_CHUNK: usize = 64 * 1024;

#[derive(Debug, Default)]
pub struct WireQueue {
    /// Finished chunks, oldest first.
    chunks: VecDeque<Bytes>,
    /// Bytes appended since the last chunk was cut; logically after `chunks`.
    arena: BytesMut,
    len: usize,
}

impl WireQueue {
    pub fn new() -> Self {
        Self::default()
    }

    /// Bytes queued.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Appends a copy of `data`.
    pub fn put_slice(&mut self, data: &[u8]) {
        if self.arena.capacity() - self.arena.len() < data.len() {
            self.arena.reserve(data.len().max(ARENA_CHUNK));
        }
        self.arena.extend_from_slice(data);
        self.len += data.len();
    }

    /// Appends `data` by reference (or by copy when it is short).
    pub fn put_bytes(&mut self, data: Bytes) {
        if data.len() < DEFAULT_COPY_THRESHOLD {
            self.put_slice(&data);
            return;
        }
        self.cut();
        self.len += data.len();
        self.chunks.push_back(data);
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
        const ZEROS: [u8; 64] = [0; 64];
        let mut left = n;
        while left > 0 {
            let k = left.min(ZEROS.len());
            self.put_slice(&ZEROS[..k]);
            left -= k;
        }
    }

    /// Lets `fill` append to the arena directly (e.g. to encrypt in place
    /// what it appended), with room for `expected` bytes reserved.
    pub(crate) fn append_with<R>(
        &mut self,
        expected: usize,
        fill: impl FnOnce(&mut BytesMut) -> R,
    ) -> R {
        if self.arena.capacity() - self.arena.len() < expected {
            self.arena.reserve(expected.max(ARENA_CHUNK));
        }
        let before = self.arena.len();
        let r = fill(&mut self.arena);
        self.len += self.arena.len() - before;
        r
    }

    /// Turns the arena's pending bytes into a chunk.
    fn cut(&mut self) {
        if !self.arena.is_empty() {
            let piece = self.arena.split().freeze();
            self.chunks.push_back(piece);
        }
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
        let mut n = 0;
        for (slot, chunk) in out.iter_mut().zip(self.chunks.iter()) {
            *slot = IoSlice::new(chunk);
            n += 1;
        }
        n
    }

    /// Makes every queued byte visible to [`WireQueue::slices`].
    pub fn seal(&mut self) {
        self.cut();
    }

    /// Moves everything queued in `other` to the end of this queue, without
    /// copying.
    pub fn append(&mut self, other: &mut WireQueue) {
        if other.is_empty() {
            return;
        }
        self.cut();
        other.cut();
        self.len += other.len;
        other.len = 0;
        self.chunks.append(&mut other.chunks);
    }

    /// Drops everything queued.
    pub fn clear(&mut self) {
        self.chunks.clear();
        self.arena.clear();
        self.len = 0;
    }

    /// Drops the first `n` queued bytes (what a write consumed).
    pub fn advance(&mut self, mut n: usize) {
        self.cut();
        assert!(n <= self.len, "advance past the end of the queue");
        self.len -= n;
        while n > 0 {
            let front = self.chunks.front_mut().expect("len accounts for chunks");
            if n < front.len() {
                front.advance(n);
                return;
            }
            n -= front.len();
            self.chunks.pop_front();
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
        self.len -= c.len();
        Some(c)
    }

    /// Takes everything as one contiguous buffer (copies unless it is
    /// already one chunk). For tests and tools.
    pub fn take_all(&mut self) -> Bytes {
        self.cut();
        if self.chunks.len() == 1 {
            return self.pop_chunk().unwrap_or_default();
        }
        let mut out = BytesMut::with_capacity(self.len);
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
