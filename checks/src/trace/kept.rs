//! What one pass over a trace keeps of its lines for what is said after it (a finding's story,
//! its fingerprint), so that nothing reads the trace a second time.
//!
//! The pass hands every line to a [`KeepLines`] as it reads it, each finding as it is found, and,
//! as the judging goes on, the first line a finding still to come may name; the keeper drops what
//! no finding can need. A finding of a session names lines of that session at or after its first
//! line (and the lines a story shows before them), so a line before the first line of every
//! session still open, and of every line a reader still holds back, is needed only by the
//! findings already found.

use super::{Finding, Reading};

/// What keeps a trace's lines during the one pass over it. The reading thread calls
/// [`KeepLines::line`], the judging thread the others (the same thread on a short trace).
pub trait KeepLines: Send + Sync {
    /// The trace is read as `reading` says (before its first line).
    fn begin(&self, _reading: &Reading) {}

    /// Line `line` of the trace, as read (its line ending cut).
    fn line(&self, line: usize, text: &str);

    /// A finding, found: the lines it names are kept, and with `span`, every line of that span
    /// (the first line of its session to its own, where the reader's telling may yet start
    /// its story anywhere in it).
    fn found(&self, finding: &Finding, span: Option<(usize, usize)>);

    /// No finding still to come names a line before `line` (as its own, or as the first of its
    /// story).
    fn settled(&self, line: usize);
}
