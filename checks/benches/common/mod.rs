//! What more than one benchmark measures the same way.

/// Peak resident set size of this process, in KiB (Linux), or 0.
pub fn peak_rss_kib() -> u64 {
    #[allow(clippy::disallowed_methods)] // A benchmark reads its own memory use.
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}
