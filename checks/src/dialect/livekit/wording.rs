//! A LiveKit session's findings in LiveKit's words: replies, tool calls and audio.

use super::Livekit;
use crate::trace::Finding;

impl Livekit {
    /// A finding in LiveKit's words: replies, tool calls and audio, not turns, children,
    /// generations and frames; a finding about an interruption starts its story at the user's
    /// speech it came after, unless it names an earlier line already.
    pub(super) fn reword_finding(&self, f: &mut Finding) {
        crate::trace::stack_words::reword(f, words);
        f.ids.retain(|i| i.parse::<u64>().is_err());
        let interruption = [
            "no_late_delivery",
            "interruption_decided_once",
            "uninterruptible_output_survives",
        ];
        if f.since.is_none() && interruption.contains(&f.name()) {
            f.since = self
                .speech_lines
                .get(&f.session)
                .and_then(|lines| lines.iter().rev().find(|l| **l < f.line).copied());
        }
    }
}

/// A model's sentence in LiveKit's words.
fn words(message: &str) -> String {
    if crate::trace::stack_words::is_late_audio(message) {
        return "audio of the reply played after it was interrupted".to_owned();
    }
    message
        .replace("a frame of turn ", "audio of reply ")
        .replace("turn speech_", "reply speech_")
        .replace("turn=speech_", "reply=speech_")
        .replace("the turn ", "the reply ")
        .replace("child call_", "tool call call_")
        .replace("child=", "tool_call=")
}
