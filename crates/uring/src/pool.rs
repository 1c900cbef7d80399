//! A shard's receive memory: equal buffers lent to the kernel through a
//! provided-buffer ring (`IORING_REGISTER_PBUF_RING`). A receive posted
//! with `IOSQE_BUFFER_SELECT` holds no memory while it waits; the kernel
//! picks a buffer only when bytes arrive, and the completion names it.
//! The buffer is the connection's until it gives it back ([`Pool::give_back`]),
//! once its bytes are copied out.
//!
//! Layout (io_uring_register_buf_ring(3)): a page-aligned array of
//! `struct io_uring_buf { u64 addr; u32 len; u16 bid; u16 resv; }`, whose
//! first entry's `resv` is the ring's tail, written by the application
//! (release) and read by the kernel; the kernel keeps the head.

use std::alloc::{self, Layout};
use std::io;
use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicU16, Ordering};

/// The buffer group of a ring's pool (one pool per ring).
pub(crate) const GROUP: u16 = 0;

/// `struct io_uring_buf` (include/uapi/linux/io_uring.h).
#[repr(C)]
struct BufDesc {
    addr: u64,
    len: u32,
    bid: u16,
    /// Entry 0's is the ring's tail.
    resv: u16,
}

const PAGE: usize = 4096;

/// What each buffer is set apart from the next beyond its size. Buffers a
/// power of two apart start in the same cache sets, so a small message
/// received into each (its bytes at the start of its buffer) would compete
/// for a few sets' ways while most of the cache stays unused: with 64 KiB
/// buffers, L2's sets repeat every 64 or 128 KiB, and only 8-16 buffers'
/// first page could be cached at a time. One page more per buffer starts
/// each buffer one page further along the sets than the last.
const COLOR: usize = PAGE;

pub(crate) struct Pool {
    /// `count` descriptors, page-aligned, zeroed at start.
    descs: NonNull<BufDesc>,
    descs_layout: Layout,
    /// `count` buffers the kernel writes into, `stride` bytes apart.
    mem: NonNull<u8>,
    mem_layout: Layout,
    /// A power of two, at most 32768 (the kernel's limit).
    count: u16,
    size: u32,
    /// From one buffer's start to the next: `size` rounded up to a cache
    /// line, and [`COLOR`].
    stride: usize,
    /// Our copy of the tail (the next descriptor to fill).
    tail: u16,
    /// Buffers completions handed to us and not yet given back.
    lent_out: u16,
}

// SAFETY: the pool's memory is reached only through `&self`/`&mut self`
// under the ring's mutex (and by the kernel, as the protocol above
// allows); the raw pointers carry no thread affinity.
#[allow(unsafe_code)]
unsafe impl Send for Pool {}

impl Pool {
    /// `count` buffers of `size` bytes, all lent to the kernel.
    pub fn new(count: u16, size: u32) -> io::Result<Pool> {
        if !count.is_power_of_two() || count > 32768 || size == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("pool of {count} buffers of {size} bytes: want a power of two ≤ 32768 buffers of ≥ 1 byte"),
            ));
        }
        let bad = |_| io::Error::new(io::ErrorKind::InvalidInput, "pool too large");
        let descs_layout = Layout::from_size_align(
            usize::from(count).saturating_mul(size_of::<BufDesc>()),
            PAGE,
        )
        .map_err(bad)?;
        let stride = (size as usize)
            .checked_next_multiple_of(64)
            .and_then(|s| s.checked_add(COLOR))
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "pool too large"))?;
        let mem_len = usize::from(count)
            .checked_mul(stride)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "pool too large"))?;
        let mem_layout = Layout::from_size_align(mem_len, PAGE).map_err(bad)?;
        let descs = alloc_zeroed(descs_layout)?.cast::<BufDesc>();
        let mem = match alloc_zeroed(mem_layout) {
            Ok(m) => m,
            Err(e) => {
                // SAFETY: allocated just above with this layout.
                #[allow(unsafe_code)]
                unsafe {
                    alloc::dealloc(descs.as_ptr().cast(), descs_layout)
                };
                return Err(e);
            }
        };
        let mut pool = Pool {
            descs,
            descs_layout,
            mem,
            mem_layout,
            count,
            size,
            stride,
            tail: 0,
            lent_out: 0,
        };
        for bid in 0..count {
            pool.lend(bid);
        }
        Ok(pool)
    }

    /// The descriptor ring's address and length, to register.
    pub fn ring(&self) -> (u64, u16) {
        (self.descs.as_ptr() as u64, self.count)
    }

    /// Bytes `off..off + len` of buffer `bid`, which a completion handed
    /// back (the kernel is done writing it); None if out of range.
    pub fn bytes(&self, bid: u16, off: u32, len: u32) -> Option<&[u8]> {
        let end = off.checked_add(len)?;
        if bid >= self.count || end > self.size {
            return None;
        }
        let at = usize::from(bid) * self.stride + off as usize;
        // SAFETY: `at + len` lies inside the `count * stride` allocation
        // (bid < count, off + len ≤ size ≤ stride). The buffer is not lent
        // to the kernel (a completion returned it and it is not given back
        // yet), so nothing writes it while the slice lives; the kernel wrote
        // these bytes (or they are the zeroes of the allocation).
        #[allow(unsafe_code)]
        Some(unsafe { std::slice::from_raw_parts(self.mem.as_ptr().add(at), len as usize) })
    }

    /// A completion handed us buffer `bid`: it is ours until given back.
    pub fn taken(&mut self, bid: u16) {
        if bid < self.count {
            self.lent_out = self.lent_out.saturating_add(1);
        }
    }

    /// Buffers completions handed to us and not yet given back.
    #[cfg(test)]
    pub fn lent_out(&self) -> u16 {
        self.lent_out
    }

    /// Lends buffer `bid`, which a completion handed us, to the kernel
    /// again.
    pub fn give_back(&mut self, bid: u16) {
        if bid < self.count {
            self.lent_out = self.lent_out.saturating_sub(1);
            self.lend(bid);
        }
    }

    /// Lends buffer `bid` to the kernel.
    fn lend(&mut self, bid: u16) {
        if bid >= self.count {
            return;
        }
        let mask = self.count.wrapping_sub(1);
        let idx = usize::from(self.tail & mask);
        let addr = self.mem.as_ptr() as u64 + (usize::from(bid) * self.stride) as u64;
        // SAFETY: idx < count, inside the descriptor array. The descriptor
        // at the tail is not the kernel's until the tail moves past it (the
        // kernel reads only between its head and our published tail).
        // Fields are written through raw pointers: entry 0's `resv` is the
        // tail, which the kernel may read at any time, so no reference to
        // a whole descriptor is made.
        #[allow(unsafe_code)]
        unsafe {
            let d = self.descs.as_ptr().add(idx);
            ptr::addr_of_mut!((*d).addr).write(addr);
            ptr::addr_of_mut!((*d).len).write(self.size);
            ptr::addr_of_mut!((*d).bid).write(bid);
        }
        self.tail = self.tail.wrapping_add(1);
        // SAFETY: the tail is entry 0's `resv`, a u16 aligned as a u16,
        // inside the allocation; the kernel reads it with acquire, and
        // every access of ours goes through this atomic.
        #[allow(unsafe_code)]
        let tail = unsafe { AtomicU16::from_ptr(ptr::addr_of_mut!((*self.descs.as_ptr()).resv)) };
        tail.store(self.tail, Ordering::Release);
    }
}

impl Drop for Pool {
    /// The ring that registered the pool is closed first (the pool is
    /// declared after it), so the kernel no longer reaches this memory.
    fn drop(&mut self) {
        // SAFETY: both were allocated by `new` with these layouts.
        #[allow(unsafe_code)]
        unsafe {
            alloc::dealloc(self.descs.as_ptr().cast(), self.descs_layout);
            alloc::dealloc(self.mem.as_ptr(), self.mem_layout);
        }
    }
}

fn alloc_zeroed(layout: Layout) -> io::Result<NonNull<u8>> {
    if layout.size() == 0 {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "empty pool"));
    }
    // SAFETY: the layout's size is not zero.
    #[allow(unsafe_code)]
    let p = unsafe { alloc::alloc_zeroed(layout) };
    NonNull::new(p).ok_or_else(|| io::Error::from(io::ErrorKind::OutOfMemory))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pool_lends_every_buffer_and_checks_ranges() {
        let mut p = Pool::new(4, 16).unwrap();
        assert_eq!(p.tail, 4);
        assert_eq!(p.bytes(3, 0, 16).unwrap().len(), 16);
        assert!(p.bytes(4, 0, 1).is_none());
        assert!(p.bytes(0, 10, 7).is_none());
        assert!(p.bytes(0, u32::MAX, 2).is_none());
        p.give_back(2);
        assert_eq!(p.tail, 5);
        p.give_back(9);
        assert_eq!(p.tail, 5);
        assert!(Pool::new(3, 16).is_err());
        assert!(Pool::new(4, 0).is_err());
    }

    /// Buffers whose size is a power of two do not start at the same
    /// offset into a cache's set span (64 KiB here, L2's on this kind of
    /// machine): each starts a page further along than the one before, and
    /// the descriptor lent to the kernel names the memory `bytes` reads.
    #[test]
    fn buffers_start_a_page_apart_in_the_caches_sets() {
        const SPAN: u64 = 64 * 1024;
        let p = Pool::new(16, 64 * 1024).unwrap();
        let starts: Vec<u64> = (0..16)
            .map(|bid| {
                // SAFETY: bid < count: inside the descriptor array.
                #[allow(unsafe_code)]
                let d = unsafe { &*p.descs.as_ptr().add(usize::from(bid)) };
                assert_eq!(d.bid, bid);
                assert_eq!(d.len, 64 * 1024);
                let at = p.bytes(bid, 0, 1).unwrap().as_ptr() as u64;
                assert_eq!(d.addr, at, "buffer {bid}");
                at
            })
            .collect();
        let mut offsets: Vec<u64> = starts.iter().map(|a| (a - starts[0]) % SPAN).collect();
        offsets.sort_unstable();
        offsets.dedup();
        assert_eq!(offsets.len(), 16, "{offsets:?}");
        assert!(starts.windows(2).all(|w| w[1] - w[0] >= 64 * 1024));
    }
}
