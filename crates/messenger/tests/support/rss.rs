//! Resident memory of this test process, for tests that bound it.

#![allow(dead_code)]

/// Resident memory now (`VmRSS`) or at its highest so far (`VmHWM`), KiB.
pub fn rss_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse().ok())
        .unwrap_or(0)
}

/// Starts a new peak (Linux resets VmHWM to VmRSS on "5"); returns VmRSS.
pub fn reset_peak() -> u64 {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    rss_kib("VmRSS:")
}
