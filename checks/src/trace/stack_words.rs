//! A verdict said in a real stack's words: each dialect's sentence for each of the model's, and
//! the model's sentences the dialects all say their own way.

use super::Finding;

/// A finding and what it explains, each message said by `words`.
pub fn reword(f: &mut Finding, words: fn(&str) -> String) {
    f.message = words(&f.message);
    for d in &mut f.derived {
        d.message = words(&d.message);
    }
}

/// The model's sentence for audio played after its turn was stopped (`no_late_delivery`): a
/// stack says it of its reply, response or item.
pub fn is_late_audio(message: &str) -> bool {
    message.starts_with("a frame of generation") && message.contains("after its turn was stopped")
}
