//! A LiveKit session's findings in LiveKit's words: replies, tool calls and audio.

use turnfence_model::said::{Gist, Noun, Said, Vocabulary};

use super::Livekit;
use crate::trace::Finding;

/// LiveKit's names for the model's things: a turn is a reply (a `SpeechHandle`'s), a child a
/// tool call, a frame audio.
pub(super) struct Words;

impl Vocabulary for Words {
    fn noun(&self, noun: Noun) -> String {
        match noun {
            Noun::Turn => "reply",
            Noun::Child | Noun::Call => "tool call",
            Noun::Frame => "audio",
        }
        .to_owned()
    }

    fn field(&self, noun: Noun) -> String {
        match noun {
            Noun::Turn => "reply",
            Noun::Child | Noun::Call => "tool_call",
            Noun::Frame => "frame",
        }
        .to_owned()
    }

    fn sentence(&self, gist: Gist, _said: &Said) -> Option<String> {
        (gist == Gist::LateFrame)
            .then(|| "audio of the reply played after it was interrupted".to_owned())
    }
}

impl Livekit {
    /// A finding as LiveKit tells it: the ids it has (not the model's sequence numbers); a
    /// finding about an interruption starts its story at the user's speech it came after,
    /// unless it names an earlier line already.
    pub(super) fn place_finding(&self, f: &mut Finding) {
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

#[cfg(test)]
mod tests {
    use turnfence_model::said::{self, Gist, Said};

    use super::Words;
    use crate::dialect::every_thing;

    #[test]
    fn every_thing_of_the_model_in_livekits_words() {
        let s = every_thing(&["speech_1"]);
        assert_eq!(
            s.said_in(&Words),
            "reply, audio, reply speech_1, tool call c, tool call call_1, reply=x, tool_call=x, \
             tool_call=x"
        );
        let late = s.clone().with_gist(Gist::LateFrame);
        assert_eq!(
            late.said_in(&Words),
            "audio of the reply played after it was interrupted"
        );
        let taken = Said::of(vec![said::child("c")]).with_gist(Gist::CancelledResultTaken);
        assert_eq!(taken.said_in(&Words), "tool call c");
    }
}
