//! The interface is the real one: a third machine — a counter that must never go below zero,
//! with one invariant and one planted flaw — written here against the public traits alone
//! (`Machine`, `Monitor`, `Invariant`, `Plantable`; `Fuzz`, `Explore`, `Conform`), is checked,
//! fuzzed (its flaw found and shrunk) and explored exactly as the turn and fence machines are.

use std::collections::{BTreeMap, VecDeque};
use std::hash::{Hash, Hasher};

use serde::{Deserialize, Serialize};
use turnfence_checks::explore::{self, Coverage, Explore};
use turnfence_checks::fuzz::{self, FaultMix, Fuzz, Gen};
use turnfence_checks::trace::canonical::CanonicalReader;
use turnfence_checks::trace::conform::Conform;
use turnfence_checks::trace::{self, FindingKind};
use turnfence_model::{
    Findings, Flaw, Invariant, Machine, Millis, Monitor, Plantable, TickKind, Timed,
};

// The machine: a dozen lines of behaviour.

type In = Timed<Kind>;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "input", rename_all = "snake_case", deny_unknown_fields)]
enum Kind {
    Inc,
    Dec,
    Tick,
}

impl TickKind for Kind {
    const TICK: Kind = Kind::Tick;
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "output", rename_all = "snake_case", deny_unknown_fields)]
enum Out {
    Value {
        n: i64,
    },
    /// A decrement at zero, refused.
    Refused,
}

#[derive(Clone, Debug, Default)]
struct Counter {
    n: i64,
    now: Millis,
    out: VecDeque<Out>,
    /// The planted flaw: a decrement at zero goes through. (The counter is its own planted
    /// machine; the turn and fence machines take theirs as a type parameter.)
    flawed: bool,
}

impl Machine for Counter {
    type Input = In;
    type Output = Out;
    type Misuse = String;
    type Invariant = Never;
    type Monitor = Watch;
    const NAME: &'static str = "counter";

    fn advance_to(&mut self, at: Millis) -> Result<(), String> {
        if at < self.now {
            return Err(format!("time went backwards: {at} after {}", self.now));
        }
        self.now = at;
        Ok(())
    }

    fn handle(&mut self, input: &In) -> Result<(), String> {
        self.advance_to(input.at)?;
        match input.kind {
            Kind::Inc => self.n += 1,
            Kind::Dec if self.n > 0 || self.flawed => self.n -= 1,
            Kind::Dec => {
                self.out.push_back(Out::Refused);
                return Ok(());
            }
            Kind::Tick => return Ok(()),
        }
        self.out.push_back(Out::Value { n: self.n });
        Ok(())
    }

    fn poll_output(&mut self) -> Option<Out> {
        self.out.pop_front()
    }

    fn poll_timeout(&self) -> Option<Millis> {
        None
    }

    fn fingerprint<H: Hasher>(&self, h: &mut H) {
        self.n.hash(h);
    }
}

impl Plantable for Counter {
    type Flaw = DecAtZero;
    type Planted = Counter;

    fn with_flaw(_: DecAtZero) -> Counter {
        Counter {
            flawed: true,
            ..Counter::default()
        }
    }
}

/// The planted flaw: a decrement at zero goes through.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
struct DecAtZero;

impl Flaw for DecAtZero {
    type Invariant = Never;
    const ALL: &'static [DecAtZero] = &[DecAtZero];

    fn breaks(self) -> Never {
        Never::NeverNegative
    }
}

// Its one invariant, as a monitor over outputs.

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Never {
    NeverNegative,
}

impl Invariant for Never {
    const ALL: &'static [Never] = &[Never::NeverNegative];

    fn name(self) -> &'static str {
        "never_negative"
    }

    fn reached(self) -> &'static str {
        "a decrement at zero was refused"
    }
}

#[derive(Clone, Debug, Default)]
struct Watch {
    now: Millis,
    findings: Findings<Never>,
}

impl Monitor for Watch {
    type Input = In;
    type Output = Out;
    type Invariant = Never;

    fn findings(&self) -> &Findings<Never> {
        &self.findings
    }

    fn findings_mut(&mut self) -> &mut Findings<Never> {
        &mut self.findings
    }

    fn input(&mut self, input: &In) {
        self.now = input.at;
    }

    fn output(&mut self, output: &Out) {
        match output {
            Out::Value { n } if *n < 0 => {
                let message = format!("the counter went to {n}");
                let id = n.to_string();
                self.findings
                    .violate(Never::NeverNegative, self.now, &[&id], message);
            }
            Out::Refused => self.findings.reach(Never::NeverNegative),
            Out::Value { .. } => {}
        }
    }

    fn end_step(&mut self) {
        self.findings.end_step();
    }

    fn fingerprint<H: Hasher>(&self, _: &mut H) {}
}

// What each checker needs of it beyond the machine.

impl Fuzz for Counter {
    fn next_input(&self, g: &mut Gen, _: &FaultMix, at: &mut Millis) -> In {
        *at += g.range(0, 3);
        let kind = if g.chance(40) { Kind::Dec } else { Kind::Inc };
        In::new(*at, kind)
    }

    fn faults(_: &FaultMix) -> String {
        "none".to_owned()
    }

    fn summary(&self) -> BTreeMap<String, String> {
        BTreeMap::from([("n".to_owned(), self.n.to_string())])
    }
}

impl Explore for Counter {
    /// The highest value explored.
    type Bounds = i64;

    fn ci_bounds() -> Vec<(&'static str, i64)> {
        vec![("three", 3)]
    }

    fn hunt_bounds() -> i64 {
        3
    }

    fn alphabet(&self, max: &i64) -> Vec<In> {
        let at = self.now;
        let mut out = vec![In {
            at,
            kind: Kind::Dec,
        }];
        if self.n < *max {
            out.push(In {
                at,
                kind: Kind::Inc,
            });
        }
        out
    }

    fn covered(&self, input: &In, _: &[Out], point: &mut dyn FnMut(&[&str])) {
        point(&[&format!("{:?} at {}", input.kind, self.n.min(1))]);
    }

    fn coverage() -> Coverage {
        Coverage {
            required: vec!["Dec at 0".into(), "Dec at 1".into(), "Inc at 0".into()],
            impossible: BTreeMap::new(),
        }
    }
}

impl Conform for Counter {
    type Fact = std::convert::Infallible;

    fn is_bare(_: &In) -> bool {
        true
    }

    fn subject(_: &Out) -> Option<&str> {
        None
    }

    fn input_subject(_: &In) -> Option<&str> {
        None
    }
}

// The three checkers over it.

fn check(text: &str) -> trace::Verdict {
    trace::check(text.as_bytes(), &mut CanonicalReader::<Counter>::default()).unwrap()
}

#[test]
fn check_judges_the_counters_traces() {
    let good = "{\"at\":0,\"input\":\"inc\"}\n{\"at\":0,\"output\":\"value\",\"n\":1}\n\
                {\"at\":1,\"input\":\"dec\"}\n{\"at\":1,\"output\":\"value\",\"n\":0}\n\
                {\"at\":2,\"input\":\"dec\"}\n{\"at\":2,\"output\":\"refused\"}\n";
    assert!(check(good).conforms(), "{:?}", check(good));
    // The system went below zero where the model refuses: the invariant names the line.
    let bad = good.replace(
        "{\"at\":2,\"output\":\"refused\"}",
        "{\"at\":2,\"output\":\"value\",\"n\":-1}",
    );
    let v = check(&bad);
    let named: Vec<(usize, Option<&str>)> = v
        .findings
        .iter()
        .filter(|f| f.kind == FindingKind::Invariant)
        .map(|f| (f.line, f.invariant))
        .collect();
    assert_eq!(named, vec![(6, Some("never_negative"))], "{v:?}");
}

#[test]
fn a_fieldless_output_takes_no_second_kind() {
    // serde lets a fieldless variant ignore keys beside its tag; a key of a second kind still
    // makes the line unreadable, as on every line.
    let line = "{\"at\":0,\"output\":\"refused\",\"input\":\"inc\"}\n";
    let e = trace::check(line.as_bytes(), &mut CanonicalReader::<Counter>::default()).unwrap_err();
    assert!(e.message.starts_with("expected exactly one of"), "{e}");
}

#[test]
fn fuzzing_finds_and_shrinks_the_counters_flaw() {
    let correct = (0..200)
        .map(|i| fuzz::run_case::<Counter>(fuzz::case_seed(1, i), 50, None, &Counter::default));
    for (i, r) in correct.enumerate() {
        assert!(
            r.is_ok(),
            "case {i} of the correct counter broke an invariant"
        );
    }
    let flawed = || Counter::with_flaw(DecAtZero);
    let found = (0..200)
        .find_map(|i| fuzz::run_case::<Counter>(fuzz::case_seed(1, i), 50, None, &flawed).err())
        .expect("the flaw is found");
    assert_eq!(found.broken.invariant, Never::NeverNegative);
    // Shrunk to the one input that shows it: a decrement at zero.
    let kinds: Vec<&Kind> = found.shrunk.iter().map(|i| &i.kind).collect();
    assert_eq!(kinds, vec![&Kind::Dec], "shrunk to {:?}", found.shrunk);
}

#[test]
fn exploration_covers_the_counter_and_finds_its_flaw() {
    let (name, bounds) = Counter::ci_bounds().remove(0);
    let e = explore::exhaustive::<Counter>(&Counter::default, &bounds);
    assert!(!e.truncated && e.counterexample.is_none(), "{name}");
    // Values 0..=3: four distinct states.
    assert_eq!(e.states, 4);
    let (missing, wrong) = Counter::coverage().gaps(&e.coverage);
    assert!(
        missing.is_empty() && wrong.is_empty(),
        "{missing:?} {wrong:?}"
    );
    assert!(e.reached.contains(&Never::NeverNegative));
    let flawed = || Counter::with_flaw(DecAtZero);
    let e = explore::exhaustive::<Counter>(&flawed, &bounds);
    let (path, broken) = e.counterexample.expect("the explorer finds the flaw");
    assert_eq!(broken.invariant, Never::NeverNegative);
    assert_eq!(
        path.len(),
        1,
        "a shortest counterexample: one decrement at zero"
    );
}

/// A machine and a monitor that keep no [`turnfence_model::Hashed`] parts are restored by a
/// whole copy (the default `restore_from`): a copy that took an input since is its source again,
/// and so is its monitor that observed the step.
#[test]
fn a_machine_without_parts_is_restored_whole() {
    let source = Counter::default();
    let source_watch = source.monitor();
    let (mut copy, mut watch) = (source.clone(), source_watch.clone());
    let (steps, ok) = turnfence_checks::shared::take(&mut copy, &In::new(5, Kind::Dec));
    assert!(ok);
    steps.iter().for_each(|s| drop(watch.observe(s)));
    assert_ne!(format!("{copy:?}"), format!("{source:?}"));
    assert_ne!(format!("{watch:?}"), format!("{source_watch:?}"));
    copy.restore_from(&source);
    watch.restore_from(&source_watch);
    assert_eq!(format!("{copy:?}"), format!("{source:?}"));
    assert_eq!(format!("{watch:?}"), format!("{source_watch:?}"));
}
