//! The RADOS client's decoders of op outputs (crates/rados/src/compound.rs
//! and request.rs): SPARSE_READ's extents and data, CHECKSUM's sums,
//! LIST_SNAPS' `obj_list_snap_response_t`, OMAPGETVALSBYKEYS' map, a
//! STAT, omap pages. Any input decodes or is refused, never panics, and
//! what decodes stays within the input.

use bytes::Bytes;
use msgr_messages::osd_types::OsdOp;
use msgr_rados::compound::{decode_checksums, decode_sparse_read, Checksums, Output};
use msgr_rados::request::{decode_omap_keys, decode_omap_vals, decode_stat, decode_xattrs};

/// Byte 0 picks the decoder; the rest is the op's output.
pub fn rados_outputs(data: &[u8]) {
    let [sel, rest @ ..] = data else {
        return;
    };
    match sel % 8 {
        0 => {
            if let Ok(s) = decode_sparse_read(rest) {
                assert!(s.data.len() <= rest.len());
                // Splitting never panics; the pieces hold the data at most.
                if let Some(p) = s.pieces() {
                    let total: usize = p.iter().map(|(_, b)| b.len()).sum();
                    assert!(total <= s.data.len());
                }
            }
        }
        1 | 2 => {
            let width = if sel % 8 == 1 { 4 } else { 8 };
            if let Ok(Checksums(sums)) = decode_checksums(width, rest) {
                assert!(sums.len() * width <= rest.len());
            }
            let mut op = OsdOp::default();
            op.args[20] = *sel;
            let _ = Checksums::decode_output(&op, &Bytes::copy_from_slice(rest));
        }
        3 => {
            if let Ok(s) = msgr_rados::decode_snap_set(rest) {
                // A clone takes at least 30 bytes of input.
                assert!(s.clones.len() * 30 <= rest.len());
            }
        }
        4 => {
            let _ = decode_xattrs(rest);
        }
        5 => {
            let _ = decode_stat(rest);
        }
        6 => {
            let _ = decode_omap_keys(rest);
        }
        _ => {
            let _ = decode_omap_vals(rest);
        }
    }
}
