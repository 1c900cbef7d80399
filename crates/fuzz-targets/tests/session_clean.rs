//! The session target's own check: with no rewrites, every mode (msgr2.0
//! and 2.1, crc and secure, with and without compression, fixed-key auth
//! and cephx, either side tapped, with and without a socket reset and the
//! reconnect after it) reaches READY and delivers every message once, in
//! order; and a handful of rewrites of each kind end without a panic.

#[test]
fn clean_sessions_in_every_mode() {
    for cfg in 0u8..64 {
        msgr_fuzz_targets::session(&[cfg]);
    }
}

#[test]
fn rewrites_of_every_kind() {
    for cfg in 0u8..64 {
        for kind in 0u8..6 {
            for at in [0u16, 5, 26, 40, 100, 200, 400, 800, 1600] {
                let [hi, lo] = at.to_be_bytes();
                msgr_fuzz_targets::session(&[cfg, kind, hi, lo, 3, 0xff, 0, 0x10]);
            }
        }
    }
}
