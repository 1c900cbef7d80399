//! Times as Ceph's tools print them.

/// `utime_t`'s `operator<<`, as `rados stat` prints an mtime:
/// `2026-11-26T04:50:00.123456+0000` (UTC here).
pub fn format_time(sec: u32, nsec: u32) -> String {
    let days = i64::from(sec / 86400);
    let secs = sec % 86400;
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:06}+0000",
        secs / 3600,
        secs / 60 % 60,
        secs % 60,
        nsec / 1000
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_as_utime_prints_them() {
        assert_eq!(format_time(0, 0), "1970-01-01T00:00:00.000000+0000");
        // `date -u -d @951782400`: a leap day.
        assert_eq!(
            format_time(951_782_400, 0),
            "2000-02-29T00:00:00.000000+0000"
        );
        assert_eq!(
            format_time(1_795_306_128, 929_448_737),
            "2026-11-22T00:08:48.929448+0000"
        );
    }
}
