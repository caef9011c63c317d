//! A Realtime session's findings in the Realtime API's words: responses and function calls.

use turnfence_model::said::{Noun, Vocabulary};

/// The Realtime API's names for the model's things: a turn is a response, a tool call a
/// function call; a child of another kind (the response's stream) and a frame (the client's
/// playback counts its audio in frames) keep the model's names.
pub(super) struct Words;

impl Vocabulary for Words {
    fn noun(&self, noun: Noun) -> String {
        match noun {
            Noun::Turn => "response",
            Noun::Child => "child",
            Noun::Call => "function call",
            Noun::Frame => "a frame",
        }
        .to_owned()
    }

    fn field(&self, noun: Noun) -> String {
        noun.field().to_owned()
    }
}

#[cfg(test)]
mod tests {
    use turnfence_model::said::Gist;

    use super::Words;
    use crate::dialect::every_thing;

    #[test]
    fn every_thing_of_the_model_in_the_realtime_apis_words() {
        let s = every_thing(&["resp_1"]);
        assert_eq!(
            s.said_in(&Words),
            "response, a frame, response resp_1, child c, function call call_1, turn=x, child=x, \
             child=x"
        );
        // No sentence of its own: a gist is said in words.
        let late = s.clone().with_gist(Gist::LateFrame);
        assert_eq!(late.said_in(&Words), s.said_in(&Words));
    }
}
