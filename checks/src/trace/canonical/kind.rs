//! A canonical line's kind, seen from its keys before it is parsed, and the session of a line
//! that names none: what the canonical reader's typed parse and its one pass both read.

use std::sync::LazyLock;

use memchr::memmem::Finder;

/// The session a line without `session` belongs to.
pub const DEFAULT_SESSION: &str = "main";

/// The four keys that say a line's kind, each as a prepared substring search.
static KIND_KEYS: LazyLock<[Finder<'static>; 4]> = LazyLock::new(|| {
    [
        Finder::new("\"input\":"),
        Finder::new("\"output\":"),
        Finder::new("\"meta\":"),
        Finder::new("\"session_end\":"),
    ]
});

/// The line's kind, from its keys, when exactly one of the four shows. A key's `"name":` cannot
/// occur inside a JSON string (its quotes would be escaped), so the one that shows is the line's
/// key, or the line is malformed and the typed parse says so. Otherwise (`None`) the keys are
/// read properly.
pub(super) fn shown_kind(text: &str) -> Option<(bool, bool, bool, bool)> {
    let shows = |key: usize| KIND_KEYS[key].find(text.as_bytes()).is_some();
    match (shows(0), shows(1), shows(2), shows(3)) {
        kind @ ((true, false, false, false)
        | (false, true, false, false)
        | (false, false, true, false)
        | (false, false, false, true)) => Some(kind),
        _ => None,
    }
}
