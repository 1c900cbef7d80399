//! cls_lock's replies (src/cls/lock/cls_lock_ops.h): `lock.get_info`'s
//! `cls_lock_get_info_reply` and `lock.list_locks`'
//! `cls_lock_list_locks_reply`, as an OSD's CALL output hands them to the
//! client. Any input decodes or is refused, within what it holds.

use msgr_rados::lock::{decode_list_locks, decode_lock_info};

/// Byte 0 picks the reply (even: get_info, odd: list_locks); the rest is
/// the output.
pub fn cls_lock(data: &[u8]) {
    let Some((&sel, out)) = data.split_first() else {
        return;
    };
    if sel % 2 == 0 {
        if let Ok(info) = decode_lock_info(out) {
            // Each locker took bytes of the input: no count beyond it.
            assert!(info.lockers.len() <= out.len() / 40);
            for l in &info.lockers {
                assert!(l.cookie.len() + l.description.len() <= out.len());
            }
        }
    } else if let Ok(names) = decode_list_locks(out) {
        assert!(names.len() <= out.len() / 4);
    }
}
