//! A session's findings as one story each: what follows from an invariant broken goes with it
//! (`derived`), rather than standing as findings of its own.

use std::collections::HashMap;

use crate::trace::{Finding, FindingKind};

/// The conformance findings an invariant finding explains — an output the model does not produce,
/// or produces otherwise, or one it produces that a complete log never shows, or a subject left
/// open, or a stated fact it contradicts, at the very line where an invariant is
/// broken; or a stated fact that breaks the same invariant there — go with it rather than
/// standing alone: one finding per broken event. So does an output about a subject (a turn) whose
/// invariant broke at an earlier line: it follows from the first break; and an output missing
/// within the story of a later finding about the same subject (between its `since` and its line).
pub(super) fn attach_derived(conformance: Vec<Finding>, mut judged: Vec<Finding>) -> Vec<Finding> {
    // The invariant findings at each line, looked up once per conformance finding (a search of
    // them all for each would be quadratic in a trace with many findings).
    let mut at_line: HashMap<usize, Vec<usize>> = HashMap::new();
    for (i, j) in judged.iter().enumerate() {
        at_line.entry(j.line).or_default().push(i);
    }
    let mut out = Vec::new();
    for f in conformance {
        let here = at_line.get(&f.line).and_then(|here| {
            here.iter().copied().find(|&i| match f.kind {
                FindingKind::UnexpectedOutput
                | FindingKind::ContradictedOutput
                | FindingKind::ContradictedFact
                | FindingKind::MissingOutput
                | FindingKind::LeftOpen => true,
                FindingKind::Invariant => judged[i].invariant == f.invariant,
                _ => false,
            })
        });
        // An output about a subject whose invariant broke at an earlier line follows from it: the
        // system went on from a state the model never reached.
        let earlier = || {
            let subject = f.ids.first()?;
            let follows = matches!(
                f.kind,
                FindingKind::UnexpectedOutput
                    | FindingKind::ContradictedOutput
                    | FindingKind::MissingOutput
                    | FindingKind::LeftOpen
            );
            follows.then_some(())?;
            judged
                .iter()
                .position(|j| j.line < f.line && j.ids.first() == Some(subject))
        };
        // An output missing about a subject whose invariant finding, found at a later line,
        // tells a story that began before it (`since`): the output the invariant says never
        // came (a truncation a held interruption owed, found where the clear it was owed at
        // came).
        let later = || {
            let subject = f.ids.first()?;
            (f.kind == FindingKind::MissingOutput).then_some(())?;
            judged.iter().position(|j| {
                j.kind == FindingKind::Invariant
                    && j.session == f.session
                    && j.line > f.line
                    && j.since.is_some_and(|since| since <= f.line)
                    && j.ids.first() == Some(subject)
            })
        };
        let cause = here.or_else(earlier).or_else(later);
        match cause {
            Some(i) => judged[i].derived.push(f),
            None => out.push(f),
        }
    }
    out.extend(judged);
    fold_repeats(out)
}

/// An invariant broken again about the same subjects, later, is the same story going on (a pause
/// reported kept, then found undecided when it ends): it goes with the first finding (`also`).
/// So is a turn's audio played after an interruption its system never cut (no truncation, no
/// clear): the audio the interruption left playing is that interruption ignored.
fn fold_repeats(mut findings: Vec<Finding>) -> Vec<Finding> {
    findings.sort_by_key(|f| f.line);
    let mut out: Vec<Finding> = Vec::with_capacity(findings.len());
    for f in findings {
        let first = (f.kind == FindingKind::Invariant)
            .then(|| {
                out.iter().position(|o| {
                    o.kind == FindingKind::Invariant
                        && o.line < f.line
                        && o.session == f.session
                        && (o.invariant == f.invariant && o.ids == f.ids || played_on(o, &f))
                })
            })
            .flatten();
        match first {
            Some(i) => out[i].derived.push(f),
            None => out.push(f),
        }
    }
    out
}

/// `later` is audio of the turn whose interruption `first` found never cut.
fn played_on(first: &Finding, later: &Finding) -> bool {
    first.invariant == Some("truncated_to_heard")
        && later.invariant == Some("no_late_delivery")
        && first.ids.first() == later.ids.first()
}
