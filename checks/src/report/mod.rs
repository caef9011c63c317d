//! Saying a verdict, in every form `check` (and the explorer and fuzzer, for JUnit) writes: text
//! ([`text`]), a trace's outcome as text, JSON, JUnit or Markdown ([`outcome`], [`junit`],
//! [`markdown`]), a finding's story in the stack's own words ([`words`], [`story`], its lines
//! kept by `check`'s one pass in [`story_lines`]), and the baseline of acknowledged findings CI
//! holds new ones against ([`baseline`]). Nothing here decides a verdict: it is given one.

pub mod baseline;
pub mod junit;
pub mod markdown;
pub mod outcome;
pub mod story;
pub mod story_lines;
pub mod text;
pub mod words;
