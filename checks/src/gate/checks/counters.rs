//! Run-wide counts for `metrics.json`: the cancel effects beyond the first, and the commits
//! acknowledged after a cancel was requested — each with what the run shows about it, so the
//! count says what it means.

use serde::Serialize;
use turnfence_model::turn::{ChildId, DeferReason, InputKind, Output, StopAnswer, TurnId};
use turnfence_model::Millis;

use super::facts::Facts;
use super::{terminal_label, ScenarioRun};

/// Cancel effects beyond the first, per turn.
pub fn duplicate_stop_effects(run: &ScenarioRun) -> usize {
    let f = Facts { run };
    let mut turns: Vec<TurnId> = f
        .outputs()
        .filter_map(|(_, o)| o.turn().map(TurnId::from))
        .collect();
    turns.sort();
    turns.dedup();
    turns
        .iter()
        .map(|t| {
            f.answers(t)
                .iter()
                .filter(|a| **a == StopAnswer::Requested)
                .count()
                .saturating_sub(1)
        })
        .sum()
}

/// A side effect acknowledged after its turn's cancel was requested, and what the run shows
/// about it: when its commit was sent, what the tool answered the cancel, how the turn ended and
/// whether the effect was handed to reconciliation.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CommitAfterCancel {
    pub scenario: &'static str,
    pub turn: TurnId,
    pub child: ChildId,
    pub idempotency_key: Option<String>,
    pub commit_sent_ms: Option<Millis>,
    /// What asked the turn to stop: `stop` (a client's cancel request), `barge_in` or `deadline`.
    pub cancel: &'static str,
    pub cancel_ms: Millis,
    /// The tool's answer to the cancel, if it deferred it.
    pub cancel_deferred: Option<DeferReason>,
    pub committed_ms: Millis,
    /// The turn's terminal state (`none` if it has not ended).
    pub turn_terminal: String,
    pub reconcile_enqueued: bool,
    /// The facts above as one sentence.
    pub note: String,
}

/// Commits acknowledged for a turn after its cancel was requested.
pub fn commits_after_cancel(run: &ScenarioRun) -> Vec<CommitAfterCancel> {
    let f = Facts { run };
    f.inputs()
        .filter_map(|(at, k)| match k {
            InputKind::CommitAcked { turn, child } => {
                let (cancel_ms, cancel) = cancel_before(&f, turn, at)?;
                Some(commit_after_cancel(&f, turn, child, at, cancel, cancel_ms))
            }
            _ => None,
        })
        .collect()
}

/// The first request to stop the turn at or before `at`: its time and what it was.
fn cancel_before(f: &Facts, turn: &str, at: Millis) -> Option<(Millis, &'static str)> {
    f.outputs().find_map(|(c, o)| {
        let cause = match o {
            Output::StopAnswered {
                turn: t,
                answer: StopAnswer::Requested,
                ..
            } if t == turn => "stop",
            Output::GenerationFenced { turn: t, .. } if t == turn => "barge_in",
            Output::DeadlineExceeded { turn: t } if t == turn => "deadline",
            _ => return None,
        };
        (c <= at).then_some((c, cause))
    })
}

fn commit_after_cancel(
    f: &Facts,
    turn: &str,
    child: &str,
    committed_ms: Millis,
    cancel: &'static str,
    cancel_ms: Millis,
) -> CommitAfterCancel {
    let sent = f.inputs().find_map(|(at, k)| match k {
        InputKind::CommitSent {
            turn: t,
            child: c,
            idempotency_key,
        } if t == turn && c == child => Some((at, idempotency_key.clone())),
        _ => None,
    });
    let cancel_deferred = f.outputs().find_map(|(_, o)| match o {
        Output::CancelDeferred {
            turn: t,
            child: c,
            reason,
        } if t == turn && c == child => Some(*reason),
        _ => None,
    });
    let reconcile_enqueued = f.outputs().any(|(_, o)| {
        matches!(o, Output::ReconcileEnqueued { turn: t, child: c, .. } if t == turn && c == child)
    });
    let mut c = CommitAfterCancel {
        scenario: f.run.name,
        turn: turn.into(),
        child: child.into(),
        commit_sent_ms: sent.as_ref().map(|(at, _)| *at),
        idempotency_key: sent.map(|(_, key)| key),
        cancel,
        cancel_ms,
        cancel_deferred,
        committed_ms,
        turn_terminal: terminal_label(&f.terminals(turn)),
        reconcile_enqueued,
        note: String::new(),
    };
    c.note = note(&c);
    c
}

/// The facts of one commit after a cancel, in the order they happened, as one sentence.
fn note(c: &CommitAfterCancel) -> String {
    let cancel = match c.cancel {
        "stop" => "the cancel request",
        "barge_in" => "the barge-in",
        _ => "the deadline",
    };
    let key = c.idempotency_key.as_deref().unwrap_or("without a key");
    let sent = match c.commit_sent_ms {
        Some(at) if at <= c.cancel_ms => {
            format!(
                "commit {key} sent at {at}ms, before {cancel} at {}ms",
                c.cancel_ms
            )
        }
        Some(at) => format!(
            "commit {key} sent at {at}ms, after {cancel} at {}ms",
            c.cancel_ms
        ),
        None => format!(
            "a commit never logged as sent, then {cancel} at {}ms",
            c.cancel_ms
        ),
    };
    let deferred = match c.cancel_deferred {
        Some(reason) => format!("the tool deferred the cancel ({})", label(&reason)),
        None => "the tool did not defer the cancel".to_owned(),
    };
    let ended = match c.turn_terminal.as_str() {
        "none" => "the turn has not ended".to_owned(),
        t => format!("the turn ended {t}"),
    };
    let enqueued = if c.reconcile_enqueued {
        "the effect was enqueued for reconciliation"
    } else {
        "the effect was not enqueued for reconciliation"
    };
    format!(
        "{sent}; {deferred}; committed at {}ms; {ended}; {enqueued}",
        c.committed_ms
    )
}

/// A serialized enum's name (`commit_in_flight`).
fn label(value: &impl Serialize) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(s)) => s,
        _ => "?".to_owned(),
    }
}
