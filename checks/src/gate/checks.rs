//! The gate's 24 checks. Each is a measurement of the run — an output, a time on the virtual
//! clock, a count — held against a threshold, and passes only if the invariants it stands on
//! found nothing in the scenario. None is a literal.

use turnfence_model::prelude::*;
use turnfence_model::turn::{
    DropReason, InputKind, Invariant, Output, StopAnswer, Terminal, TurnId,
};
use turnfence_model::Millis;

use super::{Scenario, ScenarioRun};

/// One check of the gate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Check {
    pub name: &'static str,
    pub passed: bool,
    pub expected: String,
    pub actual: String,
    /// The invariants this check stands on.
    pub invariants: Vec<Invariant>,
}

impl Check {
    pub fn status(&self) -> &'static str {
        if self.passed {
            "PASS"
        } else {
            "FAIL"
        }
    }
}

/// The run, seen as facts to measure.
struct Facts<'a> {
    run: &'a ScenarioRun,
}

impl<'a> Facts<'a> {
    fn outputs(&self) -> impl Iterator<Item = (Millis, &'a Output)> + 'a {
        self.run
            .steps
            .iter()
            .flat_map(|s| s.outputs.iter().map(move |o| (s.input.at, o)))
    }

    fn inputs(&self) -> impl Iterator<Item = (Millis, &'a InputKind)> + 'a {
        self.run.steps.iter().map(|s| (s.input.at, &s.input.kind))
    }

    fn accept(&self, turn: &str) -> Option<(Millis, u64, Option<u64>)> {
        self.inputs().find_map(|(at, k)| match k {
            InputKind::Accept {
                turn: t,
                generation,
                deadline_ms,
                ..
            } if t == turn => Some((at, *generation, *deadline_ms)),
            _ => None,
        })
    }

    fn terminals(&self, turn: &str) -> Vec<(Millis, Terminal)> {
        self.outputs()
            .filter_map(|(at, o)| match o {
                Output::Terminal { turn: t, state } if t == turn => Some((at, *state)),
                _ => None,
            })
            .collect()
    }

    /// The time of the stop that moved the turn (or of the first stop, if none did).
    fn stop_at(&self, turn: &str) -> Option<Millis> {
        self.inputs().find_map(|(at, k)| match k {
            InputKind::Stop { turn: t, .. } if t == turn => Some(at),
            _ => None,
        })
    }

    fn delivered_after(&self, turn: &str, from: Millis) -> Vec<u64> {
        self.outputs()
            .filter_map(|(at, o)| match o {
                Output::Delivered { turn: t, seq, .. } if t == turn && at >= from => Some(*seq),
                _ => None,
            })
            .collect()
    }

    fn dropped_after(&self, turn: &str, from: Millis) -> Vec<u64> {
        self.outputs()
            .filter_map(|(at, o)| match o {
                Output::LateDropped {
                    turn: t,
                    seq,
                    reason,
                    ..
                } if t == turn && at >= from && *reason != DropReason::OutOfOrder => Some(*seq),
                _ => None,
            })
            .collect()
    }

    fn answers(&self, turn: &str) -> Vec<StopAnswer> {
        self.outputs()
            .filter_map(|(_, o)| match o {
                Output::StopAnswered {
                    turn: t, answer, ..
                } if t == turn => Some(*answer),
                _ => None,
            })
            .collect()
    }
}

fn labels(terminals: &[(Millis, Terminal)]) -> String {
    match terminals {
        [] => "none".to_owned(),
        [(_, s)] => format!("{} x1", s.label()),
        many => format!(
            "{} x{}",
            many.iter()
                .map(|(_, s)| s.label())
                .collect::<Vec<_>>()
                .join("+"),
            many.len()
        ),
    }
}

fn seqs(prefix: &str, seqs: &[u64], verb: &str) -> String {
    let list: Vec<String> = seqs.iter().map(u64::to_string).collect();
    format!("{prefix}seq={} {verb}", list.join(","))
}

/// Builds checks, folding in the invariants each stands on and any misuse.
struct Checks<'a> {
    run: &'a ScenarioRun,
    out: Vec<Check>,
}

impl Checks<'_> {
    fn add(
        &mut self,
        name: &'static str,
        expected: String,
        ok: bool,
        actual: String,
        invariants: &[Invariant],
    ) {
        let broken: Vec<&str> = invariants
            .iter()
            .filter(|i| self.run.violations.iter().any(|v| v.invariant == **i))
            .map(|i| i.name())
            .collect();
        let mut actual = actual;
        if !broken.is_empty() {
            actual = format!("{actual} (violated: {})", broken.join(", "));
        }
        if let Some((index, misuse)) = &self.run.misuse {
            actual = format!("{actual} (misuse at input {index}: {misuse})");
        }
        self.out.push(Check {
            name,
            passed: ok && broken.is_empty() && self.run.misuse.is_none(),
            expected,
            actual,
            invariants: invariants.to_vec(),
        });
    }
}

/// Computes the scenario's three checks.
pub fn compute(run: &ScenarioRun, scenario: &Scenario) -> Vec<Check> {
    let mut c = Checks {
        run,
        out: Vec::new(),
    };
    let f = Facts { run };
    let turn = run.turn;
    match run.name {
        "baseline_stream" => baseline_stream(&mut c, &f, turn),
        "cancel_tree" => cancel_tree(&mut c, &f, turn),
        "voice_barge_in" => voice_barge_in(&mut c, &f, turn),
        "deadline_budget" => deadline_budget(&mut c, &f, turn),
        "cancellable_tool" => cancellable_tool(&mut c, &f, turn),
        "noncancellable_tool" => noncancellable_tool(&mut c, &f, turn),
        "reconnect_replay" => reconnect_replay(&mut c, &f, turn, scenario),
        "idempotent_stop" => idempotent_stop(&mut c, &f, turn),
        _ => {}
    }
    c.out
}

fn baseline_stream(c: &mut Checks, f: &Facts, turn: &str) {
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

fn children_started_before(f: &Facts, turn: &str, before: Millis) -> Vec<String> {
    let refused: Vec<&str> = f
        .outputs()
        .filter_map(|(_, o)| match o {
            Output::ToolNotStarted { turn: t, child, .. } if t == turn => Some(child.as_str()),
            _ => None,
        })
        .collect();
    f.inputs()
        .filter_map(|(at, k)| match k {
            InputKind::Spawn { turn: t, child, .. }
                if t == turn && at < before && !refused.contains(&child.as_str()) =>
            {
                Some(child.clone())
            }
            _ => None,
        })
        .collect()
}

fn cancel_tree(c: &mut Checks, f: &Facts, turn: &str) {
    let stop = f.stop_at(turn).unwrap_or(Millis::MAX);
    let terminals = f.terminals(turn);
    let end = terminals.first().map(|(at, _)| *at);
    let children = children_started_before(f, turn, stop);
    let late_started = children_started_before(f, turn, Millis::MAX).len() - children.len();
    let stopped = f
        .outputs()
        .filter(|(at, o)| {
            matches!(o, Output::ChildCancelled { turn: t, child, .. }
                if t == turn && children.contains(child) && end.is_some_and(|e| *at <= e))
        })
        .count();
    let cancelled = matches!(terminals.as_slice(), [(_, Terminal::Cancelled)]);
    let ok = cancelled && stopped == children.len() && !children.is_empty() && late_started == 0;
    let mut actual = format!("{stopped} stopped");
    if late_started > 0 {
        actual = format!("{actual}, {late_started} started after the stop");
    }
    c.add(
        "cancel-tree-drained",
        format!("{} children stopped", children.len()),
        ok,
        actual,
        &[Invariant::CancelTreeDrained],
    );

    let (ok, actual) = match end {
        Some(end) if stop != Millis::MAX => (end - stop <= 50, format!("{}ms", end - stop)),
        _ => (false, "never ended".to_owned()),
    };
    c.add(
        "propagation-slo",
        "<=50ms".into(),
        ok,
        actual,
        &[Invariant::OneTerminalState],
    );

    late_delivery_check(
        c,
        f,
        turn,
        "no-late-delivery",
        "late generation dropped".into(),
        stop,
        None,
    );
}

/// After `from`, nothing of the turn is delivered and at least one delta was dropped.
fn late_delivery_check(
    c: &mut Checks,
    f: &Facts,
    turn: &str,
    name: &'static str,
    expected: String,
    from: Millis,
    actual_ok: Option<String>,
) {
    let delivered = f.delivered_after(turn, from);
    let dropped = f.dropped_after(turn, from);
    let ok = delivered.is_empty() && !dropped.is_empty();
    let actual = if !delivered.is_empty() {
        seqs("", &delivered, "delivered")
    } else if dropped.is_empty() {
        "no late delta seen".to_owned()
    } else {
        actual_ok.unwrap_or_else(|| seqs("", &dropped, "dropped"))
    };
    c.add(name, expected, ok, actual, &[Invariant::NoLateDelivery]);
}

fn voice_barge_in(c: &mut Checks, f: &Facts, turn: &str) {
    let (_, generation, _) = f.accept(turn).unwrap_or((0, 0, None));
    let fenced = f.outputs().find_map(|(at, o)| match o {
        Output::GenerationFenced { generation: g, .. } if *g == generation => Some(at),
        _ => None,
    });
    let fence_at = fenced.unwrap_or(Millis::MAX);
    let cleared = f.outputs().find_map(|(at, o)| match o {
        Output::PlaybackCleared { turn: t, frames } if t == turn && at == fence_at => Some(*frames),
        _ => None,
    });
    let old_played = f
        .outputs()
        .filter(|(at, o)| matches!(o, Output::Played { generation: g, .. } if *g == generation && *at >= fence_at))
        .count();
    let ok = cleared.is_some_and(|n| n > 0) && old_played == 0;
    let actual = match cleared {
        Some(n) if old_played == 0 => format!("{n} frames cleared"),
        Some(n) => format!("{n} frames cleared, {old_played} old frames played after"),
        None => format!("not cleared, {old_played} old frames played after"),
    };
    c.add(
        "audible-output-cleared",
        "buffer cleared".into(),
        ok,
        actual,
        &[Invariant::NoLateDelivery],
    );

    let expected = format!("generation {generation} blocked");
    if fenced.is_none() {
        c.add(
            "old-generation-fenced",
            expected,
            false,
            "not fenced".into(),
            &[Invariant::NoLateDelivery],
        );
    } else {
        let dropped = f.dropped_after(turn, fence_at);
        let actual = seqs("late ", &dropped, "dropped");
        late_delivery_check(
            c,
            f,
            turn,
            "old-generation-fenced",
            expected,
            fence_at,
            Some(actual),
        );
    }

    let successor = f.inputs().find_map(|(at, k)| match k {
        InputKind::Accept {
            turn: t,
            generation: g,
            ..
        } if *g == generation.saturating_add(1) && at >= fence_at => Some(t.clone()),
        _ => None,
    });
    let guards = [Invariant::SingleRunningTurn, Invariant::OneTerminalState];
    let expected = format!("generation {} completes", generation.saturating_add(1));
    match successor {
        Some(next) => {
            let terminals = f.terminals(&next);
            let ok = matches!(terminals.as_slice(), [(_, Terminal::Completed)]);
            let actual = match terminals.as_slice() {
                [(_, s)] => s.label().to_owned(),
                other => labels(other),
            };
            c.add("new-turn-continues", expected, ok, actual, &guards);
        }
        None => c.add(
            "new-turn-continues",
            expected,
            false,
            "no successor turn".into(),
            &guards,
        ),
    }
}

fn deadline_budget(c: &mut Checks, f: &Facts, turn: &str) {
    let (accepted, _, deadline_ms) = f.accept(turn).unwrap_or((0, 0, None));
    let deadline_at = accepted + deadline_ms.unwrap_or(0);
    let fired = f.outputs().find_map(|(at, o)| match o {
        Output::DeadlineExceeded { turn: t } if t == turn => Some(at),
        _ => None,
    });
    let model_stopped = f.outputs().find_map(|(at, o)| match o {
        Output::ChildCancelled { turn: t, child, .. }
            if t == turn && fired.is_some_and(|d| at >= d) && child.contains("model") =>
        {
            Some(at)
        }
        _ => None,
    });
    let (ok, actual) = match (fired, model_stopped) {
        (Some(d), Some(m)) => (
            d == deadline_at,
            format!("observed (fired@{d}ms, model stopped@{m}ms)"),
        ),
        (Some(d), None) => (false, format!("fired@{d}ms, model never stopped")),
        (None, _) => (false, "deadline never fired".to_owned()),
    };
    c.add(
        "deadline-propagated",
        "model observes deadline".into(),
        ok,
        actual,
        &[Invariant::DeadlineRespected],
    );

    // Tools that asked to start with less time left than they need, or after the deadline.
    let budget_tools: Vec<(Millis, &str, bool)> = f
        .inputs()
        .filter_map(|(at, k)| match k {
            InputKind::Spawn {
                turn: t,
                child,
                kind,
                need_ms,
            } if t == turn && kind.is_tool() => {
                let late = at >= deadline_at || deadline_at - at < need_ms.unwrap_or(0);
                late.then_some((at, child.as_str(), late))
            }
            _ => None,
        })
        .collect();
    let started = budget_tools
        .iter()
        .filter(|(_, child, _)| {
            !f.outputs().any(|(_, o)| {
                matches!(o, Output::ToolNotStarted { turn: t, child: c, .. } if t == turn && c == child)
            })
        })
        .count();
    let ok = !budget_tools.is_empty() && started == 0;
    let actual = format!("{started} of {} late tools started", budget_tools.len());
    c.add(
        "unsafe-late-tool-blocked",
        "tool starts=0".into(),
        ok,
        actual,
        &[Invariant::DeadlineRespected],
    );

    let terminals = f.terminals(turn);
    let ok = matches!(terminals.as_slice(), [(_, Terminal::Failed { .. })]);
    let actual = match terminals.as_slice() {
        [(_, s)] => s.label().to_owned(),
        other => labels(other),
    };
    c.add(
        "explicit-terminal-error",
        "DEADLINE_EXCEEDED".into(),
        ok,
        actual,
        &[Invariant::DeadlineRespected, Invariant::OneTerminalState],
    );
}

fn cancellable_tool(c: &mut Checks, f: &Facts, turn: &str) {
    let stop = f.stop_at(turn).unwrap_or(Millis::MAX);
    let tool = f.inputs().find_map(|(_, k)| match k {
        InputKind::Spawn {
            turn: t,
            child,
            kind,
            ..
        } if t == turn && kind.is_cancellable_tool() => Some(child.clone()),
        _ => None,
    });
    let tool = tool.unwrap_or_default();
    let next_checkpoint = f.inputs().find_map(|(at, k)| match k {
        InputKind::Checkpoint {
            turn: t,
            child,
            phase,
            ..
        } if t == turn && *child == tool && at >= stop => Some(phase.clone()),
        _ => None,
    });
    let observed = f.outputs().find_map(|(_, o)| match o {
        Output::ChildCancelled {
            turn: t,
            child,
            checkpoint,
        } if t == turn && *child == tool => Some(checkpoint.clone()),
        _ => None,
    });
    let ok = observed.is_some() && observed == next_checkpoint;
    let expected = format!(
        "cancel at {}",
        next_checkpoint.as_deref().unwrap_or("the next checkpoint")
    );
    let actual = observed.unwrap_or_else(|| "never observed".to_owned());
    c.add(
        "cooperative-checkpoint",
        expected,
        ok,
        actual,
        &[Invariant::CancelTreeDrained],
    );

    let created: u32 = f
        .inputs()
        .filter_map(|(at, k)| match k {
            InputKind::Checkpoint {
                turn: t,
                child,
                temporary_outputs,
                ..
            } if t == turn && *child == tool && at < stop => Some(*temporary_outputs),
            _ => None,
        })
        .sum();
    let removed: u32 = f
        .outputs()
        .filter_map(|(_, o)| match o {
            Output::TemporaryOutputRemoved { turn: t, count, .. } if t == turn => Some(*count),
            _ => None,
        })
        .sum();
    let left = created.saturating_sub(removed);
    let actual = format!("{left} ({created} created, {removed} removed)");
    c.add(
        "temporary-work-cleaned",
        "temporary files=0".into(),
        created > 0 && left == 0,
        actual,
        &[Invariant::CancelledToolLeavesNothing],
    );

    let effects = commits(f, turn);
    let cancelled = matches!(f.terminals(turn).as_slice(), [(_, Terminal::Cancelled)]);
    c.add(
        "no-committed-side-effect",
        "side effects=0".into(),
        effects == 0 && cancelled,
        format!("{effects}"),
        &[
            Invariant::CancelledToolLeavesNothing,
            Invariant::NoFalseCancelClaim,
        ],
    );
}

/// Commits acknowledged (or failed, so possibly applied) for the turn.
fn commits(f: &Facts, turn: &str) -> usize {
    f.inputs()
        .filter(|(_, k)| {
            matches!(k, InputKind::CommitAcked { turn: t, .. } | InputKind::CommitFailed { turn: t, .. } if t == turn)
        })
        .count()
}

fn noncancellable_tool(c: &mut Checks, f: &Facts, turn: &str) {
    let terminals = f.terminals(turn);
    let ok = matches!(terminals.as_slice(), [(_, Terminal::ReconcileRequired)]);
    let actual = match terminals.as_slice() {
        [(_, s)] => s.label().to_owned(),
        other => labels(other),
    };
    c.add(
        "no-false-cancel-claim",
        "RECONCILE_REQUIRED".into(),
        ok,
        actual,
        &[Invariant::NoFalseCancelClaim],
    );

    let stop = f.stop_at(turn).unwrap_or(Millis::MAX);
    let actual = format!("stopped@{stop}ms");
    late_delivery_check(
        c,
        f,
        turn,
        "delivery-stopped",
        "no more user output".into(),
        stop,
        Some(actual),
    );

    let keys: Vec<&str> = f
        .inputs()
        .filter_map(|(_, k)| match k {
            InputKind::CommitSent {
                turn: t,
                idempotency_key,
                ..
            } if t == turn => Some(idempotency_key.as_str()),
            _ => None,
        })
        .collect();
    let enqueued: Vec<&str> = f
        .outputs()
        .filter_map(|(_, o)| match o {
            Output::ReconcileEnqueued {
                turn: t,
                idempotency_key,
                ..
            } if t == turn => Some(idempotency_key.as_str()),
            _ => None,
        })
        .collect();
    let effects = commits(f, turn);
    let recorded = keys.iter().filter(|k| enqueued.contains(k)).count();
    let ok = effects == 1 && recorded == effects;
    c.add(
        "commit-audited",
        "side effects=1 and recorded".into(),
        ok,
        format!(
            "{effects} committed, {recorded} recorded ({})",
            enqueued.join(",")
        ),
        &[Invariant::NoFalseCancelClaim],
    );
}

fn reconnect_replay(c: &mut Checks, f: &Facts, turn: &str, scenario: &Scenario) {
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

fn idempotent_stop(c: &mut Checks, f: &Facts, turn: &str) {
    let answers = f.answers(turn);
    let effects = answers
        .iter()
        .filter(|a| **a == StopAnswer::Requested)
        .count();
    c.add(
        "idempotent-stop",
        "cancel effects=1".into(),
        effects == 1,
        format!("{effects}"),
        &[Invariant::IdempotentStop],
    );

    let terminals = f.terminals(turn);
    let stable = answers.iter().all(|a| match a {
        StopAnswer::AlreadyTerminal { state } => *state == Terminal::Cancelled,
        _ => true,
    });
    let ok = stable && matches!(terminals.as_slice(), [(_, Terminal::Cancelled)]);
    let actual = match terminals.as_slice() {
        [(_, s)] if stable => s.label().to_owned(),
        other => labels(other),
    };
    c.add(
        "stable-terminal-state",
        "CANCELLED".into(),
        ok,
        actual,
        &[Invariant::IdempotentStop, Invariant::OneTerminalState],
    );

    let stops = f
        .inputs()
        .filter(|(_, k)| matches!(k, InputKind::Stop { turn: t, .. } if t == turn))
        .count();
    c.add(
        "safe-client-retry",
        format!("{stops} requests answered"),
        stops > 1 && answers.len() == stops,
        format!("{} answered", answers.len()),
        &[Invariant::IdempotentStop],
    );
}

/// Cancel effects beyond the first, per turn.
pub fn duplicate_stop_effects(run: &ScenarioRun) -> usize {
    let f = Facts { run };
    let mut turns: Vec<TurnId> = f
        .outputs()
        .filter_map(|(_, o)| o.turn().map(str::to_owned))
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

/// Commits acknowledged for a turn after its cancel was requested.
pub fn commits_after_cancel(run: &ScenarioRun) -> usize {
    let f = Facts { run };
    f.inputs()
        .filter(|(at, k)| match k {
            InputKind::CommitAcked { turn, .. } => f.outputs().any(|(c, o)| {
                c <= *at
                    && matches!(o,
                        Output::StopAnswered { turn: t, answer: StopAnswer::Requested, .. }
                        | Output::GenerationFenced { turn: t, .. }
                        | Output::DeadlineExceeded { turn: t } if t == turn)
            }),
            _ => false,
        })
        .count()
}
