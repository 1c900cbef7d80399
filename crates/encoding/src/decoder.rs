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
    data: &'a [u8],
    pos: usize,
    /// The `Bytes` that owns `data`, if any, and where `data` starts in it,
    /// for zero-copy byte strings.
    backing: Option<(&'a Bytes, usize)>,
}

impl<'a> Decoder<'a> {
    /// Reads from a plain slice; byte strings are copied out.
    #[inline]
    pub fn new(data: &'a [u8]) -> Self {
        Decoder {
            data,
            pos: 0,
            backing: None,
        }
    }

    /// Reads from a `Bytes`; byte strings are returned as sub-slices of it.
    #[inline]
    pub fn from_bytes(bytes: &'a Bytes) -> Self {
        Decoder {
            data: bytes.as_ref(),
            pos: 0,
            backing: Some((bytes, 0)),
        }
    }

    /// Bytes not yet consumed.
    #[inline]
    pub fn remaining(&self) -> usize {
        self.data.len() - self.pos
    }

    /// Bytes consumed so far.
    #[inline]
    pub fn position(&self) -> usize {
        self.pos
    }

    /// True when everything was consumed.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.remaining() == 0
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
        let remaining = self.remaining();
        if n > remaining {
            return Err(truncated(what, n, remaining));
        }
        let out = &self.data[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    /// Takes the next `N` bytes as an array.
    #[inline]
    pub fn array<const N: usize>(&mut self, what: &'static str) -> DecodeResult<[u8; N]> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N, what)?);
        Ok(out)
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
        let start = self.pos;
        let slice = self.take(n, what)?;
        Ok(match self.backing {
            Some((b, base)) => b.slice(base + start..base + start + n),
            None => Bytes::copy_from_slice(slice),
        })
    }

    /// A decoder over the next `n` bytes, which this one skips.
    #[inline]
    pub fn sub(&mut self, n: usize, what: &'static str) -> DecodeResult<Decoder<'a>> {
        let start = self.pos;
        let data = self.take(n, what)?;
        Ok(Decoder {
            data,
            pos: 0,
            backing: self.backing.map(|(b, base)| (b, base + start)),
        })
    }

    #[inline]
    pub fn u8(&mut self, what: &'static str) -> DecodeResult<u8> {
        Ok(self.array::<1>(what)?[0])
    }
    #[inline]
    pub fn u16(&mut self, what: &'static str) -> DecodeResult<u16> {
        Ok(u16::from_le_bytes(self.array(what)?))
    }
    #[inline]
    pub fn u32(&mut self, what: &'static str) -> DecodeResult<u32> {
        Ok(u32::from_le_bytes(self.array(what)?))
    }
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
        let max = match min_item_len {
            0 => u32::MAX as u64,
            n => (self.remaining() / n) as u64,
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
