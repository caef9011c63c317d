//! A Pipecat session's findings in Pipecat's words: responses, `TTSSpeakFrame`s, tool calls and
//! audio.

use turnfence_model::said::{Gist, Noun, Said, Vocabulary};

/// Pipecat's names for the model's things: a turn is a response (or the speech of a queued
/// `TTSSpeakFrame`, whose ids the dialect gives as `speak_…`), a child a tool call, a frame
/// audio.
pub(super) struct Words;

impl Vocabulary for Words {
    fn noun(&self, noun: Noun) -> String {
        match noun {
            Noun::Turn => "response",
            Noun::Child | Noun::Call => "tool call",
            Noun::Frame => "audio",
        }
        .to_owned()
    }

    fn subject(&self, noun: Noun, id: &str) -> String {
        match noun {
            Noun::Turn if id.starts_with("speak_") => "TTSSpeakFrame".to_owned(),
            noun => self.noun(noun),
        }
    }

    fn field(&self, noun: Noun) -> String {
        match noun {
            Noun::Child | Noun::Call => "tool_call".to_owned(),
            noun => noun.field().to_owned(),
        }
    }

    fn sentence(&self, gist: Gist, said: &Said) -> Option<String> {
        match gist {
            Gist::LateFrame => {
                Some("audio of the response played after it was interrupted".to_owned())
            }
            Gist::CancelledResultTaken => {
                let (_, call) = said
                    .subjects()
                    .into_iter()
                    .find(|(n, _)| *n == Noun::Child)?;
                Some(format!("tool call {call}'s result was taken after the interruption cancelled it (cancel_on_interruption): a cancelled call leaves nothing"))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use turnfence_model::said::{self, Gist, Said};

    use super::Words;
    use crate::dialect::every_thing;

    #[test]
    fn every_thing_of_the_model_in_pipecats_words() {
        let s = every_thing(&["response_1", "speak_1"]);
        assert_eq!(
            s.said_in(&Words),
            "response, audio, response response_1, TTSSpeakFrame speak_1, tool call c, tool call \
             call_1, turn=x, tool_call=x, tool_call=x"
        );
        let late = s.clone().with_gist(Gist::LateFrame);
        assert_eq!(
            late.said_in(&Words),
            "audio of the response played after it was interrupted"
        );
        let taken = Said::of(vec![said::child("call_9"), " is logged cancelled".into()])
            .with_gist(Gist::CancelledResultTaken);
        assert_eq!(
            taken.said_in(&Words),
            "tool call call_9's result was taken after the interruption cancelled it \
             (cancel_on_interruption): a cancelled call leaves nothing"
        );
        // Without its subject, the gist is said in words.
        let bare = Said::of(vec!["x".into()]).with_gist(Gist::CancelledResultTaken);
        assert_eq!(bare.said_in(&Words), "x");
    }
}
