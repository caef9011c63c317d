//! The checker's own mutation test: every accepted fixture, mutated systematically — a line
//! dropped, duplicated, swapped with the next, moved past a stop or a deadline, a stated count
//! changed, a terminal state changed, an id changed — must be rejected (a finding, or refused as
//! input), or shown equivalent by replay: the model accepts the mutated inputs as they stand and
//! produces the mutated outputs, supplying nothing (no hidden step), or the checker's effective
//! trace is the original's (the mutation changed what the log shows, not what happened). The rest
//! are survivors: the score is printed and the survivors are a reviewed snapshot, each with why
//! the checker let it through.

use serde_json::{Map, Value};
use turnfence_checks::dialect;
use turnfence_checks::trace::{self, Keep, Verdict};

use crate::{fixtures, read, snapshot_settings};

/// How the checker took a mutant.
#[derive(Debug, PartialEq)]
enum Outcome {
    /// Rejected: a finding, or refused as input.
    Caught,
    /// Accepted, and equivalent by replay.
    Equivalent,
    /// Accepted, and not shown equivalent: why it passed.
    Survived(String),
}

fn time_key(line: &Value) -> Option<&'static str> {
    ["t_ms", "at"].into_iter().find(|k| line.get(*k).is_some())
}

/// Where a log says the turn was stopped or its deadline passed.
fn stops(line: &Value) -> bool {
    let s = |k: &str| line.get(k).and_then(Value::as_str).unwrap_or_default();
    matches!(
        (s("component"), s("event")),
        ("client", "turn.cancel")
            | ("deadline", "exceeded")
            | ("vad", "input_audio.speech_started")
    ) || matches!(s("input"), "stop" | "speech_started")
        || s("output") == "deadline_exceeded"
}

/// The fields of a line a mutation may change: its detail (lab) or the line itself (canonical).
fn fields(line: &mut Value) -> Option<&mut Map<String, Value>> {
    if line.get("detail").is_some() {
        return line.get_mut("detail").and_then(Value::as_object_mut);
    }
    line.as_object_mut()
}

const IDS: [&str; 8] = [
    "turn_id",
    "turn",
    "child",
    "request_id",
    "idempotency_key",
    "worker",
    "token",
    "new_turn",
];

const NOT_COUNTS: [&str; 2] = ["t_ms", "at"];

const TERMINALS: [&str; 4] = ["completed", "cancelled", "failed", "reconcile_required"];

/// At most this many lines of a fixture are mutated: every line of a small one, an even spread
/// of a long one (the ack-pruning fixture has 1 841 lines), so the test stays quick.
const MUTATED_LINES: usize = 60;

/// Every mutant of a fixture's lines (`body`, the meta line apart), handed to `each` one at a
/// time with what was done (so a long fixture's mutants are never all in memory at once).
fn mutants(meta: &Value, body: &[Value], mut each: impl FnMut(String, Vec<Value>)) {
    let mut push = |what: String, lines: Vec<Value>| {
        let mut all = vec![meta.clone()];
        all.extend(lines);
        each(what, all);
    };
    let n = body.len();
    let stride = n.div_ceil(MUTATED_LINES).max(1);
    for i in (0..n).step_by(stride) {
        let line = i + 2;
        let mut v = body.to_vec();
        v.remove(i);
        push(format!("drop line {line}"), v);
        let mut v = body.to_vec();
        v.insert(i, body[i].clone());
        push(format!("duplicate line {line}"), v);
        if i + 1 < n {
            let mut v = body.to_vec();
            v.swap(i, i + 1);
            push(format!("swap lines {line} and {}", line + 1), v);
        }
        // Moved past the next stop or deadline, at its time.
        if let Some(j) = (i + 1..n).find(|&j| stops(&body[j])) {
            let mut moved = body[i].clone();
            if let (Some(k), Some(t)) = (time_key(&moved), time_key(&body[j])) {
                moved[k] = body[j][t].clone();
            }
            let mut v = body.to_vec();
            v.insert(j + 1, moved);
            v.remove(i);
            push(format!("move line {line} past line {}", j + 2), v);
        }
        let mut changed = body[i].clone();
        let keys: Vec<String> = fields(&mut changed)
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default();
        for key in keys {
            let mut v = body.to_vec();
            let Some(m) = fields(&mut v[i]) else { continue };
            let value = m.get(&key).cloned().unwrap_or(Value::Null);
            if let Some(x) = value
                .as_u64()
                .filter(|_| !NOT_COUNTS.contains(&key.as_str()))
            {
                m.insert(key.clone(), Value::from(x + 1));
                push(format!("line {line}: {key} {x} → {}", x + 1), v);
            } else if let (true, Some(s)) = (IDS.contains(&key.as_str()), value.as_str()) {
                m.insert(key.clone(), Value::from(format!("{s}-x")));
                push(format!("line {line}: {key} {s} → {s}-x"), v);
            }
        }
        if let Some(s) = body[i].get("turn_id").and_then(Value::as_str) {
            let mut v = body.to_vec();
            v[i]["turn_id"] = Value::from(format!("{s}-x"));
            push(format!("line {line}: turn_id {s} → {s}-x"), v);
        }
        terminal_mutants(&body[i], |what, changed| {
            let mut v = body.to_vec();
            v[i] = changed;
            push(format!("line {line}: {what}"), v);
        });
    }
}

/// A terminal line as each other terminal state.
fn terminal_mutants(line: &Value, mut push: impl FnMut(String, Value)) {
    let lab = line.get("component").and_then(Value::as_str) == Some("turn")
        && line
            .get("event")
            .and_then(Value::as_str)
            .is_some_and(|e| TERMINALS.contains(&e));
    let canonical = line.get("output").and_then(Value::as_str) == Some("terminal");
    for state in TERMINALS {
        let mut changed = line.clone();
        if lab && line["event"] != state {
            changed["event"] = Value::from(state);
            if state == "failed" {
                changed["detail"]["code"] = Value::from("DEADLINE_EXCEEDED");
            }
        } else if canonical && line["state"] != state {
            changed["state"] = match state {
                "failed" => serde_json::json!({"failed": {"code": "DEADLINE_EXCEEDED"}}),
                s => Value::from(s),
            };
        } else {
            continue;
        }
        push(format!("terminal → {state}"), changed);
    }
}

fn verdict(lines: &[Value]) -> Result<Verdict, trace::InputError> {
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    dialect::check_input_keeping(text.as_bytes(), &Default::default(), Keep::Effective).verdict
}

fn outcome(original: &Verdict, mutant: &Result<Verdict, trace::InputError>) -> Outcome {
    let Ok(v) = mutant else {
        return Outcome::Caught;
    };
    if !v.conforms() {
        return Outcome::Caught;
    }
    // The model accepts the mutated inputs and produces the mutated outputs with nothing
    // supplied beyond what the original needed; or what happened is the original's.
    if v.hidden == original.hidden || v.effective == original.effective {
        return Outcome::Equivalent;
    }
    let at = v
        .effective
        .iter()
        .zip(&original.effective)
        .position(|(a, b)| a != b)
        .unwrap_or(v.effective.len().min(original.effective.len()));
    Outcome::Survived(format!(
        "accepted with {} hidden steps supplied (the original needs {}); its effective trace departs from the original's at step {at}",
        v.hidden.len(),
        original.hidden.len()
    ))
}

#[test]
fn every_accepted_fixture_mutated_is_rejected_or_equivalent() {
    let (mut caught, mut equivalent) = (0usize, 0usize);
    let mut survivors = Vec::new();
    for path in fixtures("accepted") {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let text = read(&path);
        let lines: Vec<Value> = text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let original = verdict(&lines).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(original.conforms(), "{name} is accepted");
        mutants(&lines[0], &lines[1..], |what, mutant| {
            match outcome(&original, &verdict(&mutant)) {
                Outcome::Caught => caught += 1,
                Outcome::Equivalent => equivalent += 1,
                Outcome::Survived(why) => survivors.push(format!("{name}: {what}: {why}")),
            }
        });
    }
    let judged = caught + survivors.len();
    let score = caught as f64 / judged.max(1) as f64;
    let summary = format!(
        "{caught} caught, {} survived, {equivalent} equivalent by replay: {:.1} % of the non-equivalent mutants caught",
        survivors.len(),
        100.0 * score
    );
    println!("checker mutation score: {summary}");
    let mut report = format!("{summary}\n\n");
    for s in &survivors {
        report.push_str(s);
        report.push('\n');
    }
    snapshot_settings().bind(|| insta::assert_snapshot!("checker_mutation_survivors", report));
    assert!(score >= 0.95, "{summary}");
}
