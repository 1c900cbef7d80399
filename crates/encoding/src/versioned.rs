//! The versioned envelope of ENCODE_START / DECODE_START
//! (src/include/encoding.h): `u8 struct_v, u8 struct_compat, le32 struct_len`,
//! then `struct_len` bytes of body.
//!
//! Rules kept from Ceph: a decoder that implements version `v` refuses an
//! envelope whose `struct_compat > v`; the body may not extend past
//! `struct_len`; unknown trailing bytes of a newer version are skipped.

use bytes::BufMut;

use crate::decoder::Decoder;
use crate::error::{DecodeError, DecodeResult};

/// The header bytes of an envelope (version, compat, length).
pub const ENVELOPE_HEADER_LEN: usize = 6;

/// Writes an envelope around what `body` appends to `out`.
pub fn encode_versioned(
    out: &mut Vec<u8>,
    version: u8,
    compat: u8,
    body: impl FnOnce(&mut Vec<u8>),
) {
    out.put_u8(version);
    out.put_u8(compat);
    let len_at = out.len();
    out.put_u32_le(0);
    body(out);
    // The body only appends, so the length slot is still at `len_at` and
    // the body is everything after it.
    if let Some((slot, body)) = out
        .get_mut(len_at..)
        .and_then(|tail| tail.split_first_chunk_mut::<4>())
    {
        *slot = (body.len() as u32).to_le_bytes();
    }
}

/// Reads an envelope and hands its body, and its version, to `body`.
/// `supported` is the newest version this decoder implements.
pub fn decode_versioned<T>(
    d: &mut Decoder<'_>,
    what: &'static str,
    supported: u8,
    body: impl FnOnce(&mut Decoder<'_>, u8) -> DecodeResult<T>,
) -> DecodeResult<T> {
    let version = d.u8(what)?;
    let compat = d.u8(what)?;
    if compat > supported {
        return Err(DecodeError::IncompatibleVersion {
            what,
            compat,
            supported,
        });
    }
    let len = d.u32(what)? as usize;
    if len > d.remaining() {
        return Err(DecodeError::LengthTooLarge {
            what,
            claimed: len as u64,
            max: d.remaining() as u64,
        });
    }
    let mut inner = d.sub(len, what)?;
    body(&mut inner, version).map_err(|e| match e {
        // Running out of the envelope's bytes is an overrun of the envelope
        // (DECODE_FINISH's "buffer::malformed_input"), not a short input.
        DecodeError::Truncated { .. } => DecodeError::EnvelopeOverrun { what },
        other => other,
    })
    // Whatever the body did not read is a newer version's fields: skipped.
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn envelope_roundtrip_and_skip_unknown_tail() {
        let mut out = Vec::new();
        encode_versioned(&mut out, 3, 1, |o| {
            o.put_u32_le(7);
            o.put_u8(0xaa); // a field only version 3 knows
        });
        out.put_u8(0x55); // the next value after the envelope
        assert_eq!(&out[..], &[3, 1, 5, 0, 0, 0, 7, 0, 0, 0, 0xaa, 0x55]);

        let mut d = Decoder::new(&out);
        let (v, x) = decode_versioned(&mut d, "t", 2, |d, v| Ok((v, d.u32("x")?))).unwrap();
        assert_eq!((v, x), (3, 7));
        assert_eq!(d.u8("next").unwrap(), 0x55);
    }

    #[test]
    fn newer_compat_is_refused() {
        let wire = [5, 4, 0, 0, 0, 0];
        let r = decode_versioned(&mut Decoder::new(&wire), "t", 3, |_, _| Ok(()));
        assert_eq!(
            r,
            Err(DecodeError::IncompatibleVersion {
                what: "t",
                compat: 4,
                supported: 3
            })
        );
    }

    #[test]
    fn body_cannot_read_past_its_length() {
        let wire = [1, 1, 2, 0, 0, 0, 1, 2, 3, 4];
        let r = decode_versioned(&mut Decoder::new(&wire), "t", 1, |d, _| d.u32("x"));
        assert_eq!(r, Err(DecodeError::EnvelopeOverrun { what: "t" }));
    }

    #[test]
    fn length_beyond_input_is_refused() {
        let wire = [1, 1, 0xff, 0xff, 0xff, 0x7f, 0];
        let r = decode_versioned(&mut Decoder::new(&wire), "t", 1, |_, _| Ok(()));
        assert!(matches!(r, Err(DecodeError::LengthTooLarge { .. })));
    }
}
