//! Reports people look at beside the text and JSON ones: a finding's story in the stack's own
//! words ([`words`], [`story`]), the Markdown report a pull request comment holds ([`markdown`]),
//! and the baseline of acknowledged findings CI holds new ones against ([`baseline`]). Nothing
//! here opens a file: the CLI hands in the lines it read.

pub mod baseline;
pub mod markdown;
pub mod story;
pub mod words;
