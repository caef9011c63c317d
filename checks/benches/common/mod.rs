//! What more than one benchmark measures the same way.

/// Peak resident set size of this process, in KiB (Linux), or 0.
pub fn peak_rss_kib() -> u64 {
    status_field("/proc/self/status", "VmHWM:")
}

/// A number a `/proc` status file (`/proc/self/status`, `/proc/thread-self/status`) gives after
/// `key` (its unit, if any, left out), or 0.
pub fn status_field(path: &str, key: &str) -> u64 {
    #[allow(clippy::disallowed_methods)] // A benchmark reads its own resource use.
    let status = std::fs::read_to_string(path).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}
