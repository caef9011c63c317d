//! The plain stream (`baseline_stream`: the first token, one terminal state, the deadline) and
//! its replay after a reconnect (`reconnect_replay`: from the cursor, duplicates suppressed, the
//! text exactly once).

use turnfence_model::turn::{InputKind, Invariant, Output, Terminal};

use super::facts::Facts;
use super::{labels, Checks, Scenario};

/// `baseline_stream`: the first token is visible in time, the turn completes once, within its
/// deadline.
pub(super) fn baseline_stream(c: &mut Checks, f: &Facts, turn: &str) {
    let (accepted, _, deadline) = f.accept(turn).unwrap_or((0, 0, None));
    let first = f.outputs().find_map(|(at, o)| match o {
        Output::Delivered { turn: t, seq, .. } if t == turn => Some((at, *seq)),
        _ => None,
    });
    let (ok, actual) = match first {
        Some((at, seq)) => (
            at - accepted < 100 && seq == 1,
            format!("{}ms", at - accepted),
        ),
        None => (false, "no delta delivered".to_owned()),
    };
    c.add(
        "first-token-visible",
        "ttft<100ms, seqs 1,2,... in order".into(),
        ok,
        actual,
        &[Invariant::SeqMonotonic],
    );

    let terminals = f.terminals(turn);
    let once = matches!(terminals.as_slice(), [(_, Terminal::Completed)]);
    c.add(
        "one-terminal-state",
        "COMPLETED exactly once".into(),
        once,
        labels(&terminals),
        &[Invariant::OneTerminalState],
    );

    let deadline = deadline.unwrap_or(0);
    let (ok, actual) = match terminals.first() {
        Some((at, _)) => (at - accepted <= deadline, format!("{}ms", at - accepted)),
        None => (false, "never ended".to_owned()),
    };
    c.add(
        "deadline-respected",
        format!("e2e<={deadline}ms"),
        ok,
        actual,
        &[
            Invariant::DeadlineRespected,
            Invariant::QuiescentTurnsTerminal,
        ],
    );
}

/// `reconnect_replay`: the replay starts at the cursor, a duplicate is suppressed, the text
/// arrives exactly once.
pub(super) fn reconnect_replay(c: &mut Checks, f: &Facts, turn: &str, scenario: &Scenario) {
    cursor_replay(c, f);
    duplicate_suppressed(c, f);
    text_exactly_once(c, f, turn, scenario);
}

/// The replay after the resume starts right after the client's cursor and ends at the last
/// persisted event.
fn cursor_replay(c: &mut Checks, f: &Facts) {
    let after = f.inputs().find_map(|(_, k)| match k {
        InputKind::Resume { after_seq } => Some(*after_seq),
        _ => None,
    });
    let replayed = f.outputs().find_map(|(_, o)| match o {
        Output::Replayed { from, to } => Some((*from, *to)),
        _ => None,
    });
    let last = f
        .outputs()
        .filter(|(_, o)| matches!(o, Output::Persisted { .. }))
        .count() as u64;
    let expected = format!("replay starts after seq={}", after.unwrap_or(0));
    let (ok, actual) = match (after, replayed) {
        (Some(k), Some((from, to))) => (from == k + 1 && to == last, format!("{from}..{to}")),
        _ => (false, "no replay".to_owned()),
    };
    c.add(
        "cursor-replay",
        expected,
        ok,
        actual,
        &[Invariant::ReplayExactlyOnce],
    );
}

/// A seq the transport hands over again is rendered once.
fn duplicate_suppressed(c: &mut Checks, f: &Facts) {
    // The seq the transport handed over more than once after the resume.
    let received: Vec<u64> = f
        .inputs()
        .filter_map(|(_, k)| match k {
            InputKind::ClientReceive { seq } => Some(*seq),
            _ => None,
        })
        .collect();
    let repeated = received
        .iter()
        .copied()
        .find(|s| received.iter().filter(|r| *r == s).count() > 1);
    let ignored = f
        .outputs()
        .filter(|(_, o)| matches!(o, Output::DuplicateIgnored { seq } if Some(*seq) == repeated))
        .count();
    let copies = repeated.map_or(0, |s| received.iter().filter(|r| **r == s).count());
    let rendered_times = copies.saturating_sub(ignored);
    let actual = match rendered_times {
        1 => "once".to_owned(),
        n => format!("{n} times"),
    };
    c.add(
        "duplicate-suppressed",
        format!("seq={} rendered once", repeated.unwrap_or(0)),
        repeated.is_some() && rendered_times == 1,
        actual,
        &[Invariant::ReplayExactlyOnce],
    );
}

/// The text rendered and persisted is what the model said, exactly once.
fn text_exactly_once(c: &mut Checks, f: &Facts, turn: &str, scenario: &Scenario) {
    // What the model said, in seq order, straight from the script: the independent expectation.
    let mut said: Vec<(u64, &str)> = scenario
        .inputs
        .iter()
        .filter_map(|i| match &i.kind {
            InputKind::Delta {
                turn: t,
                seq,
                text: Some(text),
                ..
            } if t == turn => Some((*seq, text.as_str())),
            _ => None,
        })
        .collect();
    said.sort_by_key(|(seq, _)| *seq);
    said.dedup_by_key(|(seq, _)| *seq);
    let said: String = said.iter().map(|(_, t)| *t).collect();
    let persisted: String = f
        .outputs()
        .filter_map(|(_, o)| match o {
            Output::Persisted {
                turn: t,
                text: Some(text),
                ..
            } if t == turn => Some(text.as_str()),
            _ => None,
        })
        .collect();
    let rendered = f.outputs().find_map(|(_, o)| match o {
        Output::Rendered { turn: t, text } if t == turn => Some(text.clone()),
        _ => None,
    });
    let ok = rendered.as_deref() == Some(said.as_str()) && persisted == said;
    c.add(
        "text-exactly-once",
        "exact text".into(),
        ok,
        rendered.unwrap_or_else(|| "nothing rendered".to_owned()),
        &[Invariant::ReplayExactlyOnce],
    );
}
