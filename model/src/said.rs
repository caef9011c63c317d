//! What a finding says, with its subjects typed: a sentence of the model's as parts — words, and
//! the things it is about (a turn, a child, a frame, …) with their ids — so that a stack can say
//! it in its own words (a reply, a tool call, audio) by giving a [`Vocabulary`], and nobody
//! rewrites the model's English.
//!
//! A [`Said`] shows in the model's own words ([`Display`](fmt::Display), and as a plain string
//! when serialized); [`Said::said_in`] says it in a vocabulary's. A sentence a stack says wholly
//! its own way carries a [`Gist`], which the vocabulary may give a sentence for.

use std::fmt::{self, Write as _};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A thing of the model a sentence names, which a stack may name its own way.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Noun {
    /// A turn: a reply of the agent, a response.
    Turn,
    /// A child of a turn (a tool call, a retrieval, the model's stream).
    Child,
    /// A child that is a tool call.
    Call,
    /// A frame of a turn's output: audio.
    Frame,
}

impl Noun {
    /// The model's word for it.
    pub fn word(self) -> &'static str {
        match self {
            Noun::Turn => "turn",
            Noun::Child => "child",
            Noun::Call => "tool call",
            Noun::Frame => "a frame",
        }
    }

    /// The model's name for an output field that holds its id (`child=c1`).
    pub fn field(self) -> &'static str {
        match self {
            Noun::Turn => "turn",
            Noun::Child | Noun::Call => "child",
            Noun::Frame => "frame",
        }
    }
}

/// A sentence a stack may say wholly its own way (its gist, not its words).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Gist {
    /// Output of a turn played after the turn was stopped (`no_late_delivery`).
    LateFrame,
    /// A child's result taken after the child was cancelled (`cancelled_tool_leaves_nothing`):
    /// its subject is the child.
    CancelledResultTaken,
}

/// One part of a sentence.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Part {
    /// Words no stack says otherwise (facts, numbers, the model's verbs).
    Text(String),
    /// A kind of thing, without an id: "the turn".
    Noun(Noun),
    /// A thing and its id: "turn t1".
    Subject(Noun, String),
    /// An output's field naming a thing: "child=c1".
    Field(Noun, String),
}

impl From<&str> for Part {
    fn from(text: &str) -> Part {
        Part::Text(text.to_owned())
    }
}

impl From<String> for Part {
    fn from(text: String) -> Part {
        Part::Text(text)
    }
}

impl From<Noun> for Part {
    fn from(noun: Noun) -> Part {
        Part::Noun(noun)
    }
}

/// A turn and its id, as a part of a sentence.
pub fn turn(id: &str) -> Part {
    Part::Subject(Noun::Turn, id.to_owned())
}

/// A child and its id, as a part of a sentence.
pub fn child(id: &str) -> Part {
    Part::Subject(Noun::Child, id.to_owned())
}

/// A tool call and its id, as a part of a sentence.
pub fn call(id: &str) -> Part {
    Part::Subject(Noun::Call, id.to_owned())
}

/// A sentence as parts, and its gist where a stack may say it wholly its own way. Two are equal
/// when they say the same in the model's words (one read back from a report is words alone).
#[derive(Clone, Debug, Default)]
pub struct Said {
    gist: Option<Gist>,
    parts: Vec<Part>,
}

/// A [`Said`] of its parts: `said!["the ", Noun::Turn, " ended"]`.
#[macro_export]
macro_rules! said {
    ($($part:expr),* $(,)?) => {
        $crate::said::Said::of(vec![$($crate::said::Part::from($part)),*])
    };
}

impl Said {
    /// A sentence of these parts.
    pub fn of(parts: Vec<Part>) -> Said {
        Said { gist: None, parts }
    }

    /// The sentence, with the gist a stack may say its own way.
    pub fn with_gist(mut self, gist: Gist) -> Said {
        self.gist = Some(gist);
        self
    }

    /// Words put before it.
    pub fn prefix(&mut self, part: impl Into<Part>) {
        self.parts.insert(0, part.into());
    }

    /// A part put after it.
    pub fn push(&mut self, part: impl Into<Part>) {
        self.parts.push(part.into());
    }

    /// The things it names, in order, each once.
    pub fn subjects(&self) -> Vec<(Noun, &str)> {
        let mut out: Vec<(Noun, &str)> = Vec::new();
        for p in &self.parts {
            if let Part::Subject(n, id) | Part::Field(n, id) = p {
                if !out.contains(&(*n, id.as_str())) {
                    out.push((*n, id));
                }
            }
        }
        out
    }

    /// The sentence in `words`' vocabulary.
    pub fn said_in(&self, words: &dyn Vocabulary) -> String {
        if let Some(sentence) = self.gist.and_then(|g| words.sentence(g, self)) {
            return sentence;
        }
        let mut out = String::new();
        for p in &self.parts {
            match p {
                Part::Text(t) => out.push_str(t),
                Part::Noun(n) => out.push_str(&words.noun(*n)),
                Part::Subject(n, id) => {
                    let _ = write!(out, "{} {id}", words.subject(*n, id));
                }
                Part::Field(n, id) => {
                    let _ = write!(out, "{}={id}", words.field(*n));
                }
            }
        }
        out
    }
}

impl From<String> for Said {
    fn from(text: String) -> Said {
        Said::of(vec![Part::Text(text)])
    }
}

impl From<&str> for Said {
    fn from(text: &str) -> Said {
        Said::from(text.to_owned())
    }
}

impl PartialEq for Said {
    fn eq(&self, other: &Said) -> bool {
        // The model's words are the parts' alone (its vocabulary has no gist of its own).
        self.parts == other.parts || self.to_string() == other.to_string()
    }
}

impl Eq for Said {}

impl fmt::Display for Said {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.said_in(&ModelWords))
    }
}

/// Serialized in the model's words: a report's message is a sentence.
impl Serialize for Said {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// Read back as words alone: its subjects are not typed again.
impl<'de> Deserialize<'de> for Said {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Said, D::Error> {
        String::deserialize(d).map(Said::from)
    }
}

/// How a stack names the model's things. Every method has the model's own words by default.
pub trait Vocabulary {
    /// The word for a kind of thing ("turn": "reply").
    fn noun(&self, noun: Noun) -> String {
        noun.word().to_owned()
    }

    /// The word before a thing's id ("turn t1": "reply speech_1"), which may depend on the id.
    fn subject(&self, noun: Noun, _id: &str) -> String {
        self.noun(noun)
    }

    /// An output field's name for a thing's id ("child=": "tool_call=").
    fn field(&self, noun: Noun) -> String {
        noun.field().to_owned()
    }

    /// The whole sentence for a gist, where the stack says it its own way.
    fn sentence(&self, _gist: Gist, _said: &Said) -> Option<String> {
        None
    }
}

/// The model's own words.
pub struct ModelWords;

impl Vocabulary for ModelWords {}

#[cfg(test)]
mod tests {
    use super::*;

    struct Replies;

    impl Vocabulary for Replies {
        fn noun(&self, noun: Noun) -> String {
            match noun {
                Noun::Turn => "reply".into(),
                Noun::Child | Noun::Call => "tool call".into(),
                Noun::Frame => "audio".into(),
            }
        }

        fn subject(&self, noun: Noun, id: &str) -> String {
            match noun {
                Noun::Turn if id.starts_with("speak_") => "speech".into(),
                n => self.noun(n),
            }
        }

        fn field(&self, noun: Noun) -> String {
            match noun {
                Noun::Child => "tool_call".into(),
                n => n.field().into(),
            }
        }

        fn sentence(&self, gist: Gist, said: &Said) -> Option<String> {
            (gist == Gist::LateFrame).then(|| format!("late audio ({})", said.subjects().len()))
        }
    }

    #[test]
    fn said_in_the_model_words_and_a_stack() {
        let s = crate::said![
            "the ",
            Noun::Turn,
            " ended with ",
            child("c1"),
            " open; ",
            turn("speak_2"),
            " gave ",
            Part::Field(Noun::Child, "c1".into())
        ];
        assert_eq!(
            s.to_string(),
            "the turn ended with child c1 open; turn speak_2 gave child=c1"
        );
        assert_eq!(
            s.said_in(&Replies),
            "the reply ended with tool call c1 open; speech speak_2 gave tool_call=c1"
        );
        assert_eq!(
            s.subjects(),
            vec![(Noun::Child, "c1"), (Noun::Turn, "speak_2")]
        );
    }

    #[test]
    fn two_are_equal_when_they_say_the_same_in_the_model_words() {
        let typed = crate::said!["a frame of ", turn("t1"), " played"];
        assert_eq!(typed.clone().with_gist(Gist::LateFrame), typed);
        assert_eq!(Said::from("a frame of turn t1 played"), typed);
        assert_ne!(Said::from("a frame of turn t2 played"), typed);
        assert_ne!(crate::said!["a frame of ", turn("t2"), " played"], typed);
    }

    #[test]
    fn a_gist_is_said_whole_where_the_stack_has_a_sentence() {
        let s = crate::said!["a frame of ", turn("t1"), " played"].with_gist(Gist::LateFrame);
        assert_eq!(s.to_string(), "a frame of turn t1 played");
        assert_eq!(s.said_in(&Replies), "late audio (1)");
        let other = crate::said!["x"].with_gist(Gist::CancelledResultTaken);
        assert_eq!(other.said_in(&Replies), "x");
    }
}
