//! The `Encode` / `Decode` traits and their implementations for Ceph's
//! primitive and container encodings (src/include/encoding.h):
//! little-endian integers, `bool` as one byte, strings and bufferlists with a
//! u32 length, vectors / sets / maps with a u32 count, `std::optional` as a
//! presence byte, pairs as their two halves, fixed arrays raw.

use std::collections::{BTreeMap, BTreeSet};

use bytes::{BufMut, Bytes};

use crate::decoder::Decoder;
use crate::error::{DecodeError, DecodeResult};

/// A value with a Ceph encoding.
pub trait Encode {
    /// Appends the encoding to `out`.
    fn encode(&self, out: &mut Vec<u8>);

    /// The encoding as a fresh buffer.
    fn to_bytes(&self) -> Bytes {
        let mut out = Vec::new();
        self.encode(&mut out);
        Bytes::from(out)
    }
}

/// A value that can be decoded from untrusted bytes.
pub trait Decode: Sized {
    /// The fewest bytes an encoding of this type takes. Collection counts are
    /// capped by `remaining / MIN_ENCODED_LEN` before anything is allocated.
    const MIN_ENCODED_LEN: usize = 1;

    /// Reads one value from `d`, bounded by what `d` holds; errors name what was being read.
    fn decode(d: &mut Decoder<'_>) -> DecodeResult<Self>;

    /// Decodes a value that must use all of `bytes`.
    fn decode_exact(bytes: &[u8], what: &'static str) -> DecodeResult<Self> {
        let mut d = Decoder::new(bytes);
        let v = Self::decode(&mut d)?;
        d.finish(what)?;
        Ok(v)
    }

    /// Like [`Decode::decode_exact`], sharing byte strings with `bytes`.
    fn decode_exact_bytes(bytes: &Bytes, what: &'static str) -> DecodeResult<Self> {
        let mut d = Decoder::from_bytes(bytes);
        let v = Self::decode(&mut d)?;
        d.finish(what)?;
        Ok(v)
    }
}

macro_rules! le_int {
    ($($t:ty => $put:ident, $size:literal);* $(;)?) => {$(
        impl Encode for $t {
            #[inline]
            fn encode(&self, out: &mut Vec<u8>) {
                out.$put(*self);
            }
        }
        impl Decode for $t {
            const MIN_ENCODED_LEN: usize = $size;
            #[inline]
            fn decode(d: &mut Decoder<'_>) -> DecodeResult<Self> {
                Ok(<$t>::from_le_bytes(d.array::<$size>("")?))
            }
        }
    )*};
}

le_int! {
    u8 => put_u8, 1;
    i8 => put_i8, 1;
    u16 => put_u16_le, 2;
    i16 => put_i16_le, 2;
    u32 => put_u32_le, 4;
    i32 => put_i32_le, 4;
    u64 => put_u64_le, 8;
    i64 => put_i64_le, 8;
    f64 => put_f64_le, 8;
}

/// `bool` is one byte; any non-zero value decodes as true, as in Ceph.
impl Encode for bool {
    fn encode(&self, out: &mut Vec<u8>) {
        out.put_u8(*self as u8);
    }
}
impl Decode for bool {
    fn decode(d: &mut Decoder<'_>) -> DecodeResult<Self> {
        Ok(d.u8("")? != 0)
    }
}

/// A bufferlist: u32 length, then the bytes.
impl Encode for Bytes {
    fn encode(&self, out: &mut Vec<u8>) {
        out.put_u32_le(self.len() as u32);
        out.extend_from_slice(self);
    }
}
impl Decode for Bytes {
    const MIN_ENCODED_LEN: usize = 4;
    fn decode(d: &mut Decoder<'_>) -> DecodeResult<Self> {
        let len = d.length("bufferlist", 1)?;
        d.take_bytes(len, "bufferlist")
    }
}

/// `std::string`: u32 length, then the bytes (which must be UTF-8 here).
impl Encode for String {
    fn encode(&self, out: &mut Vec<u8>) {
        self.as_str().encode(out);
    }
}
impl Encode for str {
    fn encode(&self, out: &mut Vec<u8>) {
        out.put_u32_le(self.len() as u32);
        out.extend_from_slice(self.as_bytes());
    }
}
impl Decode for String {
    const MIN_ENCODED_LEN: usize = 4;
    fn decode(d: &mut Decoder<'_>) -> DecodeResult<Self> {
        let len = d.length("string", 1)?;
        let raw = d.take(len, "string")?;
        match std::str::from_utf8(raw) {
            Ok(s) => Ok(s.to_owned()),
            Err(e) => Err(DecodeError::InvalidValue {
                what: "string (not UTF-8)",
                value: e.valid_up_to() as u64,
            }),
        }
    }
}

/// Fixed-size arrays are raw bytes, no count (`std::array`, sha256 digests).
impl<const N: usize> Encode for [u8; N] {
    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self);
    }
}
impl<const N: usize> Decode for [u8; N] {
    const MIN_ENCODED_LEN: usize = N;
    fn decode(d: &mut Decoder<'_>) -> DecodeResult<Self> {
        d.array("")
    }
}

impl<T: Encode> Encode for Vec<T> {
    fn encode(&self, out: &mut Vec<u8>) {
        self.as_slice().encode(out);
    }
}
impl<T: Encode> Encode for [T] {
    fn encode(&self, out: &mut Vec<u8>) {
        out.put_u32_le(self.len() as u32);
        for item in self {
            item.encode(out);
        }
    }
}
impl<T: Decode> Decode for Vec<T> {
    const MIN_ENCODED_LEN: usize = 4;
    fn decode(d: &mut Decoder<'_>) -> DecodeResult<Self> {
        let count = d.length("vector", T::MIN_ENCODED_LEN)?;
        let mut out = Vec::with_capacity(count);
        for _ in 0..count {
            out.push(T::decode(d)?);
        }
        Ok(out)
    }
}

impl<T: Encode> Encode for BTreeSet<T> {
    fn encode(&self, out: &mut Vec<u8>) {
        out.put_u32_le(self.len() as u32);
        for item in self {
            item.encode(out);
        }
    }
}
impl<T: Decode + Ord> Decode for BTreeSet<T> {
    const MIN_ENCODED_LEN: usize = 4;
    fn decode(d: &mut Decoder<'_>) -> DecodeResult<Self> {
        let count = d.length("set", T::MIN_ENCODED_LEN)?;
        let mut out = BTreeSet::new();
        for _ in 0..count {
            out.insert(T::decode(d)?);
        }
        Ok(out)
    }
}

impl<K: Encode, V: Encode> Encode for BTreeMap<K, V> {
    fn encode(&self, out: &mut Vec<u8>) {
        out.put_u32_le(self.len() as u32);
        for (k, v) in self {
            k.encode(out);
            v.encode(out);
        }
    }
}
impl<K: Decode + Ord, V: Decode> Decode for BTreeMap<K, V> {
    const MIN_ENCODED_LEN: usize = 4;
    fn decode(d: &mut Decoder<'_>) -> DecodeResult<Self> {
        let count = d.length("map", <(K, V)>::MIN_ENCODED_LEN)?;
        let mut out = BTreeMap::new();
        for _ in 0..count {
            let k = K::decode(d)?;
            let v = V::decode(d)?;
            out.insert(k, v);
        }
        Ok(out)
    }
}

/// `std::optional<T>`: a presence byte, then the value if present.
impl<T: Encode> Encode for Option<T> {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            None => out.put_u8(0),
            Some(v) => {
                out.put_u8(1);
                v.encode(out);
            }
        }
    }
}
impl<T: Decode> Decode for Option<T> {
    fn decode(d: &mut Decoder<'_>) -> DecodeResult<Self> {
        match d.u8("optional")? {
            0 => Ok(None),
            _ => Ok(Some(T::decode(d)?)),
        }
    }
}

/// `std::pair<A, B>`: the two values in order.
impl<A: Encode, B: Encode> Encode for (A, B) {
    fn encode(&self, out: &mut Vec<u8>) {
        self.0.encode(out);
        self.1.encode(out);
    }
}
impl<A: Decode, B: Decode> Decode for (A, B) {
    const MIN_ENCODED_LEN: usize = A::MIN_ENCODED_LEN + B::MIN_ENCODED_LEN;
    fn decode(d: &mut Decoder<'_>) -> DecodeResult<Self> {
        Ok((A::decode(d)?, B::decode(d)?))
    }
}

impl<T: Encode + ?Sized> Encode for &T {
    fn encode(&self, out: &mut Vec<u8>) {
        (**self).encode(out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roundtrip<T: Encode + Decode + PartialEq + std::fmt::Debug>(v: T, wire: &[u8]) {
        assert_eq!(&v.to_bytes()[..], wire, "encoding of {v:?}");
        assert_eq!(T::decode_exact(wire, "test").unwrap(), v);
    }

    #[test]
    fn primitives_match_ceph() {
        roundtrip(0x0102_0304u32, &[4, 3, 2, 1]);
        roundtrip(-2i32, &[0xfe, 0xff, 0xff, 0xff]);
        roundtrip(true, &[1]);
        roundtrip(String::from("ab"), &[2, 0, 0, 0, b'a', b'b']);
        roundtrip(Bytes::from_static(b"x"), &[1, 0, 0, 0, b'x']);
        roundtrip(vec![1u16, 2], &[2, 0, 0, 0, 1, 0, 2, 0]);
        roundtrip(Some(7u8), &[1, 7]);
        roundtrip(None::<u8>, &[0]);
        roundtrip((1u8, 2u8), &[1, 2]);
        roundtrip([9u8; 3], &[9, 9, 9]);
        let mut m = BTreeMap::new();
        m.insert(String::from("k"), 5u32);
        roundtrip(m, &[1, 0, 0, 0, 1, 0, 0, 0, b'k', 5, 0, 0, 0]);
    }

    #[test]
    fn any_nonzero_bool_is_true() {
        assert!(bool::decode_exact(&[7], "b").unwrap());
    }

    #[test]
    fn counts_are_capped_by_remaining_input() {
        // 1000 u64s claimed, 8 bytes present.
        let wire = [0xe8, 0x03, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8];
        assert!(matches!(
            Vec::<u64>::decode_exact(&wire, "v"),
            Err(DecodeError::LengthTooLarge {
                claimed: 1000,
                max: 1,
                ..
            })
        ));
    }

    #[test]
    fn invalid_utf8_is_typed() {
        assert!(matches!(
            String::decode_exact(&[1, 0, 0, 0, 0xff], "s"),
            Err(DecodeError::InvalidValue { .. })
        ));
    }

    #[test]
    fn trailing_bytes_are_reported() {
        assert_eq!(
            u8::decode_exact(&[1, 2], "one byte"),
            Err(DecodeError::TrailingBytes {
                what: "one byte",
                left: 1
            })
        );
    }
}
