//! The bounded cursor all decoding goes through.
//!
//! A [`Decoder`] reads from a borrowed slice and never reads past its end:
//! every read is checked, every length is compared with what is left before
//! anything is allocated, and failures are typed [`DecodeError`]s. When the
//! slice is backed by a [`Bytes`], byte-string fields are returned as
//! zero-copy sub-slices of it.

use bytes::Bytes;

use crate::error::{DecodeError, DecodeResult};

/// The error of a read past the end (out of line: reads are hot, this
/// is not).
#[cold]
#[inline(never)]
fn truncated(what: &'static str, needed: usize, remaining: usize) -> DecodeError {
    DecodeError::Truncated {
        what,
        needed,
        remaining,
    }
}

/// A cursor over untrusted input.
#[derive(Clone)]
pub struct Decoder<'a> {
    /// Everything this decoder reads, consumed or not.
    data: &'a [u8],
    /// The bytes not yet consumed: always a suffix of `data`, so reads
    /// split it and never index.
    rest: &'a [u8],
    /// The `Bytes` that `data` is a sub-slice of, if any, for zero-copy
    /// byte strings.
    backing: Option<&'a Bytes>,
}

impl<'a> Decoder<'a> {
    /// Reads from a plain slice; byte strings are copied out.
    #[inline]
    pub fn new(data: &'a [u8]) -> Self {
        Decoder {
            data,
            rest: data,
            backing: None,
        }
    }

    /// Reads from a `Bytes`; byte strings are returned as sub-slices of it.
    #[inline]
    pub fn from_bytes(bytes: &'a Bytes) -> Self {
        Decoder {
            data: bytes.as_ref(),
            rest: bytes.as_ref(),
            backing: Some(bytes),
        }
    }

    /// Bytes not yet consumed.
    #[inline]
    pub fn remaining(&self) -> usize {
        self.rest.len()
    }

    /// Bytes consumed so far.
    #[inline]
    pub fn position(&self) -> usize {
        // `rest` is a suffix of `data`: this never saturates.
        self.data.len().saturating_sub(self.rest.len())
    }

    /// True when everything was consumed.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.rest.is_empty()
    }

    /// Fails with [`DecodeError::TrailingBytes`] unless everything was consumed.
    pub fn finish(&self, what: &'static str) -> DecodeResult<()> {
        match self.remaining() {
            0 => Ok(()),
            left => Err(DecodeError::TrailingBytes { what, left }),
        }
    }

    /// Takes the next `n` bytes.
    #[inline]
    pub fn take(&mut self, n: usize, what: &'static str) -> DecodeResult<&'a [u8]> {
        match self.rest.split_at_checked(n) {
            Some((out, rest)) => {
                self.rest = rest;
                Ok(out)
            }
            None => Err(truncated(what, n, self.rest.len())),
        }
    }

    /// Takes the next `N` bytes as an array.
    #[inline]
    pub fn array<const N: usize>(&mut self, what: &'static str) -> DecodeResult<[u8; N]> {
        match self.rest.split_first_chunk::<N>() {
            Some((out, rest)) => {
                self.rest = rest;
                Ok(*out)
            }
            None => Err(truncated(what, N, self.rest.len())),
        }
    }

    /// Skips `n` bytes.
    #[inline]
    pub fn skip(&mut self, n: usize, what: &'static str) -> DecodeResult<()> {
        self.take(n, what).map(|_| ())
    }

    /// Takes `n` bytes as a `Bytes`: a sub-slice of the backing buffer when
    /// there is one, otherwise a copy.
    #[inline]
    pub fn take_bytes(&mut self, n: usize, what: &'static str) -> DecodeResult<Bytes> {
        let slice = self.take(n, what)?;
        Ok(match self.backing {
            // `slice` lies within the backing buffer (`data` does).
            Some(b) => b.slice_ref(slice),
            None => Bytes::copy_from_slice(slice),
        })
    }

    /// A decoder over the next `n` bytes, which this one skips.
    #[inline]
    pub fn sub(&mut self, n: usize, what: &'static str) -> DecodeResult<Decoder<'a>> {
        let data = self.take(n, what)?;
        Ok(Decoder {
            data,
            rest: data,
            backing: self.backing,
        })
    }

    /// Reads a u8; `what` names it in an error.
    #[inline]
    pub fn u8(&mut self, what: &'static str) -> DecodeResult<u8> {
        Ok(self.array::<1>(what)?[0])
    }
    /// Reads a little-endian u16; `what` names it in an error.
    #[inline]
    pub fn u16(&mut self, what: &'static str) -> DecodeResult<u16> {
        Ok(u16::from_le_bytes(self.array(what)?))
    }
    /// Reads a little-endian u32; `what` names it in an error.
    #[inline]
    pub fn u32(&mut self, what: &'static str) -> DecodeResult<u32> {
        Ok(u32::from_le_bytes(self.array(what)?))
    }
    /// Reads a little-endian u64; `what` names it in an error.
    #[inline]
    pub fn u64(&mut self, what: &'static str) -> DecodeResult<u64> {
        Ok(u64::from_le_bytes(self.array(what)?))
    }

    /// Reads a u32 length and checks that `len * min_item_len` bytes could
    /// follow, so a hostile count can never make us allocate more than the
    /// input itself holds.
    #[inline]
    pub fn length(&mut self, what: &'static str, min_item_len: usize) -> DecodeResult<usize> {
        let claimed = self.u32(what)? as u64;
        // No minimum (zero-sized items): any u32 count.
        let max = match self.remaining().checked_div(min_item_len) {
            Some(fit) => fit as u64,
            None => u32::MAX as u64,
        };
        if claimed > max {
            return Err(DecodeError::LengthTooLarge { what, claimed, max });
        }
        Ok(claimed as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_are_bounded() {
        let mut d = Decoder::new(&[1, 2, 3]);
        assert_eq!(d.u16("a").unwrap(), 0x0201);
        assert_eq!(
            d.u32("b"),
            Err(DecodeError::Truncated {
                what: "b",
                needed: 4,
                remaining: 1
            })
        );
        assert_eq!(d.u8("c").unwrap(), 3);
        assert!(d.is_empty());
    }

    #[test]
    fn hostile_length_is_refused_before_allocating() {
        let mut d = Decoder::new(&[0xff, 0xff, 0xff, 0xff, 0, 0]);
        assert!(matches!(
            d.length("vec", 4),
            Err(DecodeError::LengthTooLarge {
                claimed: 0xffff_ffff,
                max: 0,
                ..
            })
        ));
    }

    #[test]
    fn byte_strings_share_the_backing_buffer() {
        let b = Bytes::from_static(b"abcdef");
        let mut d = Decoder::from_bytes(&b);
        d.skip(1, "x").unwrap();
        let s = d.take_bytes(3, "s").unwrap();
        assert_eq!(&s[..], b"bcd");
        assert_eq!(s.as_ptr(), b[1..].as_ptr());
        let mut sub = d.sub(2, "sub").unwrap();
        let t = sub.take_bytes(1, "t").unwrap();
        assert_eq!(&t[..], b"e");
        assert_eq!(t.as_ptr(), b[4..].as_ptr());
    }
}
