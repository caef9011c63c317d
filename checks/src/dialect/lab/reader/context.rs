//! What a handler of one lab line works with: the line itself ([`Line`]), a read-only look at
//! its session's model state ([`View`]), what the reader remembers from earlier lines
//! ([`Memory`]), and the events the line turns into ([`Out`]).

use turnfence_model::turn::{ChildId, ChildKind, Input, InputKind, Mode, Output, TurnId};
use turnfence_model::Millis;

use super::detail::Detail;
use super::{Event, LabLine, Sessions};
use crate::trace::conform::Observed;
use crate::trace::turn_facts::{Fact, TurnFact};
use crate::trace::InputError;

/// One lab line, as its handler reads it.
pub(super) struct Line<'a> {
    pub l: &'a LabLine,
    /// The line's number in the trace, for input errors.
    pub line: usize,
    pub d: Detail<'a>,
    pub view: View<'a>,
}

impl<'a> Line<'a> {
    /// The line's detail, once it is known to have only `known` keys.
    pub fn only(&self, known: &[&str]) -> Result<&Detail<'a>, InputError> {
        self.d.only(known)?;
        Ok(&self.d)
    }

    /// The turn the line names.
    pub fn turn(&self) -> String {
        self.l.turn_id.clone()
    }

    /// The turn the line is about: the turn it names, unless a generation it names is another
    /// turn's.
    pub fn turn_at(&self, generation: Option<u64>) -> String {
        generation
            .and_then(|g| self.view.turn_of(g))
            .map_or_else(|| self.turn(), String::from)
    }

    /// The turn the line names and the string `key` of its detail, once the detail is known to
    /// have that key alone.
    pub fn turn_and(&self, key: &str) -> Result<(String, String), InputError> {
        self.d.only(&[key])?;
        Ok((self.turn(), self.d.need_str(key)?))
    }

    /// The delta a line about one names: its turn and generation (as `turn_and_generation`
    /// finds them) and its `seq`.
    pub fn delta(&self, generation: Option<u64>) -> Result<(String, u64, u64), InputError> {
        let (turn, generation) = self.turn_and_generation(generation);
        Ok((turn, generation, self.d.need_u64("seq")?))
    }

    /// The turn a line about a delta or a frame is about, and the generation: the one the line
    /// names, else the turn's (0 for a turn the session does not know).
    pub fn turn_and_generation(&self, generation: Option<u64>) -> (String, u64) {
        let turn = self.turn_at(generation);
        let generation = generation
            .or_else(|| self.view.generation_of(&turn))
            .unwrap_or(0);
        (turn, generation)
    }
}

/// What the reader remembers from earlier lines.
#[derive(Default)]
pub(super) struct Memory {
    /// Per-turn: the request id of its last stop (the lab's answers do not repeat it).
    pub last_stop: Vec<(String, String)>,
    /// How many unnamed children the lab's lines mentioned so far (each gets its own name).
    pub hidden: usize,
    /// The generation a barge-in announced for the turn created from it.
    pub new_generation: Option<u64>,
}

impl Memory {
    pub fn stop_request(&self, turn: &str) -> String {
        self.last_stop
            .iter()
            .rev()
            .find(|(t, _)| t == turn)
            .map_or_else(String::new, |(_, r)| r.clone())
    }
}

/// What one lab line says, as events.
pub(super) struct Out {
    pub session: String,
    pub at: Millis,
    pub events: Vec<Event>,
}

impl Out {
    pub fn input(&mut self, kind: InputKind) {
        self.events.push(Event::Input {
            session: self.session.clone(),
            input: Input::new(self.at, kind),
        });
    }

    /// A fact the line states beside its events, judged where it is stated.
    pub fn fact(&mut self, fact: Fact) {
        self.events.push(Event::Fact {
            session: self.session.clone(),
            at: self.at,
            fact,
        });
    }

    /// A fact about `turn` that a detail key states, when the line has it: `what` of its value.
    pub fn stated<T>(&mut self, turn: &str, value: Option<T>, what: fn(T) -> TurnFact) {
        let Some(v) = value else { return };
        self.fact(Fact::Turn {
            turn: turn.to_owned(),
            what: what(v),
        });
    }

    /// The committed side effects of a child that a line states, when it states them;
    /// `claims_cancelled` when the line says the child was cancelled.
    pub fn stated_commits(
        &mut self,
        turn: String,
        child: String,
        count: Option<u64>,
        claims_cancelled: bool,
    ) {
        let Some(count) = count else { return };
        self.fact(Fact::CommittedSideEffects {
            turn,
            child,
            count,
            claims_cancelled,
        });
    }

    /// An observed output, every field as the line states it.
    pub fn exact(&mut self, output: Output) {
        self.output(output, &[]);
    }

    /// An observed output; `wildcards` names the fields the line does not state.
    pub fn output(&mut self, output: Output, wildcards: &'static [&'static str]) {
        self.events.push(Event::Output {
            session: self.session.clone(),
            at: self.at,
            observed: Observed { output, wildcards },
        });
    }
}

/// A read-only look at a session's model state, for resolving what a lab line leaves out.
pub(super) struct View<'a> {
    session: Option<&'a turnfence_model::turn::state::Session>,
}

impl<'a> View<'a> {
    pub fn new(sessions: &'a Sessions, name: &str) -> View<'a> {
        View {
            session: sessions.peek(name).map(|s| s.machine().session()),
        }
    }

    pub fn turn_of(&self, generation: u64) -> Option<TurnId> {
        self.session?
            .turns
            .iter()
            .rev()
            .find(|t| t.generation == generation)
            .map(|t| t.id.clone())
    }

    pub fn generation_of(&self, turn: &str) -> Option<u64> {
        self.session?.turn(turn).map(|t| t.generation)
    }

    pub fn mode_of(&self, turn: &str) -> Option<Mode> {
        self.session?.turn(turn).map(|t| t.mode)
    }

    /// The generation a turn the log accepts without naming one takes: the lowest the model
    /// allows (its own rule, so the reader never disagrees with the model about it).
    pub fn next_generation(&self) -> u64 {
        self.session.map_or(1, |s| s.next_generation())
    }

    pub fn child_of(&self, turn: &str, kind: &ChildKind, running: bool) -> Option<ChildId> {
        let t = self.session?.turn(turn)?;
        t.children
            .iter()
            .rev()
            .find(|c| {
                let same = match (kind, &c.kind) {
                    (ChildKind::Tool { .. }, ChildKind::Tool { .. }) => true,
                    (a, b) => a == b,
                };
                same && (!running || c.state.is_pending())
            })
            .map(|c| c.id.clone())
    }

    pub fn received(&self) -> u64 {
        self.session.map_or(0, |s| s.client.received)
    }
}
