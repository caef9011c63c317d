//! The live monitor on hostile streams: every log of every dialect mangled as `mangled` mangles
//! it, and worse — a line torn mid-way and joined to another, a number out of any range, nesting
//! ten thousand deep, bytes that are not UTF-8, a line past the length limit, a lone `\r` — fed
//! to [`live::Monitor`] a line at a time, then finished. Whatever comes in, the monitor never
//! panics and never stops: each input error names a line it was fed, with a message, and its
//! summary counts every line and every report it gave. Two logs of one dialect interleaved, one
//! of them mangled: the other's sessions are judged as they are beside the log unmangled while no
//! input error names them, and (in the canonical form, where a session is known from its first
//! line) a bad line naming only a session of the mangled log stops none of the other's.
//!
//! Every input that ever broke the monitor or the checker is kept in `fixtures/hostile/`, and
//! replayed through both.

use std::path::Path;

use proptest::prelude::*;
use proptest::sample::select;
use proptest::test_runner::TestCaseError;
use serde_json::Value;
use turnfence_checks::dialect;
use turnfence_checks::live;
use turnfence_checks::trace::{self, limits, Dialect};

use crate::mangled::{self, Edit};
use crate::{fixtures, interop_corpus, read};

/// Cases of each property: in a debug build, about 8 s of one core for the streams and 5 s for
/// the interleaved logs. 20 000 and 5 000 cases run in about 100 s on two cores.
const STREAM_CASES: u32 = 2_048;
const INTERLEAVED_CASES: u32 = 512;

/// One hostile change to a log.
#[derive(Clone, Debug)]
enum Hostile {
    /// One of `mangled`'s changes.
    Mangle(Edit),
    /// The line at this fraction of the lines cut at this fraction of its bytes and the line at
    /// this fraction joined to it (and taken from where it was): a torn write.
    Splice(f64, f64, f64),
    /// On the line at this fraction, the value at this fraction replaced by this text.
    Raw(f64, f64, Nasty),
    /// This text as a line of its own, before the line at this fraction.
    Line(f64, Nasty),
    /// These bytes, not UTF-8, at this fraction of the text.
    Bytes(f64, &'static [u8]),
}

/// Text no log should hold.
#[derive(Clone, Copy, Debug)]
enum Nasty {
    /// `1e400`, `-1e400`, `1e-400`, `-0.0e99999`: exponents out of a double's range.
    Exponent(&'static str),
    /// 10^30, past every integer type the readers hold.
    Big,
    /// A number of 100 000 digits.
    Digits,
    /// 10 000 arrays opened, never closed.
    OpenArrays,
    /// 10 000 arrays, each in the last, closed.
    Arrays,
    /// 10 000 objects `{"a":`, each in the last, closed.
    Objects,
    /// 100 arrays, each in the last: deep, but within serde_json's limit of 128.
    Shallow,
    /// A string of 2 MiB, twice the line limit.
    Long,
    /// A lone carriage return.
    Return,
}

impl Nasty {
    fn text(self) -> String {
        const DEEP: usize = 10_000;
        match self {
            Nasty::Exponent(e) => e.to_owned(),
            Nasty::Big => format!("1{}", "0".repeat(30)),
            Nasty::Digits => format!("9{}", "8".repeat(99_999)),
            Nasty::OpenArrays => "[".repeat(DEEP),
            Nasty::Arrays => format!("{}1{}", "[".repeat(DEEP), "]".repeat(DEEP)),
            Nasty::Objects => format!("{}1{}", "{\"a\":".repeat(DEEP), "}".repeat(DEEP)),
            Nasty::Shallow => format!("{}1{}", "[".repeat(100), "]".repeat(100)),
            Nasty::Long => format!("\"{}\"", "x".repeat(2 * limits::MAX_LINE_BYTES)),
            Nasty::Return => "\r".to_owned(),
        }
    }
}

/// Bytes that are not UTF-8: a stray continuation byte, a sequence cut short, a surrogate, past
/// U+10FFFF, an overlong NUL, a byte UTF-8 never uses.
const NOT_UTF8: [&[u8]; 6] = [
    b"\x80",
    b"\xc3",
    b"\xed\xa0\x80",
    b"\xf4\x90\x80\x80",
    b"\xc0\x80",
    b"\xff",
];

fn nasty() -> impl Strategy<Value = Nasty> {
    prop_oneof![
        select(&["1e400", "-1e400", "1e-400", "-0.0e99999"][..]).prop_map(Nasty::Exponent),
        Just(Nasty::Big),
        Just(Nasty::Digits),
        Just(Nasty::OpenArrays),
        Just(Nasty::Arrays),
        Just(Nasty::Objects),
        Just(Nasty::Shallow),
        Just(Nasty::Long),
        Just(Nasty::Return),
    ]
}

fn hostile() -> impl Strategy<Value = Hostile> {
    use mangled::fraction;
    prop_oneof![
        2 => mangled::edit().prop_map(Hostile::Mangle),
        1 => (fraction(), fraction(), fraction()).prop_map(|(l, at, j)| Hostile::Splice(l, at, j)),
        1 => (fraction(), fraction(), nasty()).prop_map(|(l, v, n)| Hostile::Raw(l, v, n)),
        1 => (fraction(), nasty()).prop_map(|(l, n)| Hostile::Line(l, n)),
        1 => (fraction(), select(&NOT_UTF8[..])).prop_map(|(at, b)| Hostile::Bytes(at, b)),
    ]
}

fn apply(text: &mut Vec<u8>, edit: &Hostile) {
    let lines =
        |text: &[u8]| -> Vec<Vec<u8>> { text.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect() };
    match edit {
        Hostile::Mangle(e) => mangled::apply(text, e),
        Hostile::Splice(line, cut, other) => {
            let mut ls = lines(text);
            let i = mangled::at(*line, ls.len().saturating_sub(1));
            let j = mangled::at(*other, ls.len().saturating_sub(1));
            let tail = if i == j { Vec::new() } else { ls.remove(j) };
            let i = if j < i { i - 1 } else { i };
            let keep = mangled::at(*cut, ls[i].len());
            ls[i].truncate(keep);
            ls[i].extend(tail);
            *text = ls.join(&b'\n');
        }
        Hostile::Raw(line, value, n) => mangled::bend(text, *line, *value, &n.text()),
        Hostile::Line(line, n) => {
            let mut ls = lines(text);
            let i = mangled::at(*line, ls.len());
            ls.insert(i, n.text().into_bytes());
            *text = ls.join(&b'\n');
        }
        Hostile::Bytes(at, bytes) => {
            let i = mangled::at(*at, text.len());
            text.splice(i..i, bytes.iter().copied());
        }
    }
}

/// A log's lines as a writer wrote them: split at each `\n`, the newline ending the last one
/// not making another.
fn lines_of(text: &[u8]) -> Vec<&[u8]> {
    if text.is_empty() {
        return Vec::new();
    }
    let text = text.strip_suffix(b"\n").unwrap_or(text);
    text.split(|&b| b == b'\n').collect()
}

/// What a live monitor gave for a log fed a line at a time, then finished: each report with the
/// line fed when it came (the end: one past the last).
struct Fed {
    lines: usize,
    reports: Vec<(usize, live::Report)>,
    summary: live::Summary,
}

/// `lines` fed to a monitor of the reading their first line names (else `fallback`, as a caller
/// that names the dialect reads them), each at its index as the time, then finished.
fn feed(lines: &[&[u8]], fallback: &trace::Reading) -> Fed {
    let first = lines
        .first()
        .map(|l| String::from_utf8_lossy(l))
        .unwrap_or_default();
    let mut monitor = dialect::reading(&first, &Default::default())
        .ok()
        .and_then(|r| live::Monitor::new(&r).ok())
        .unwrap_or_else(|| live::Monitor::new(fallback).expect("a monitor of the log's reading"));
    let mut reports = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let fed = monitor.feed_bytes(line, i as u64);
        reports.extend(fed.into_iter().map(|r| (i + 1, r)));
    }
    let (end, summary) = monitor.finish();
    reports.extend(end.into_iter().map(|r| (lines.len() + 1, r)));
    Fed {
        lines: lines.len(),
        reports,
        summary,
    }
}

/// What every run of the monitor holds: each input error at a line it was fed, with a message;
/// every line counted; the summary's counts those of its reports.
fn monitor_holds(name: &str, fed: &Fed) -> Result<(), TestCaseError> {
    let (mut errors, mut findings, mut withdrawn, mut not_judged) = (0, 0, 0, 0);
    for (_, r) in &fed.reports {
        match r {
            live::Report::InputError { error, .. } => {
                errors += 1;
                prop_assert!(
                    (1..=fed.lines).contains(&error.line),
                    "{name}: input error at line {} of {}: {}",
                    error.line,
                    fed.lines,
                    error.message
                );
                prop_assert!(!error.message.is_empty(), "{name}: no message");
            }
            live::Report::Finding(_) => findings += 1,
            live::Report::Withdrawn(_) => withdrawn += 1,
            live::Report::NotJudged(_) => not_judged += 1,
        }
    }
    let s = &fed.summary;
    prop_assert_eq!(s.lines, fed.lines, "{}: lines counted", name);
    prop_assert_eq!(s.input_error_count, errors, "{}: input errors", name);
    prop_assert_eq!(s.finding_count + withdrawn, findings, "{}: findings", name);
    prop_assert_eq!(s.withdrawn, withdrawn, "{}: withdrawn", name);
    prop_assert_eq!(s.not_judged_count, not_judged, "{}: not judged", name);
    prop_assert!(s.lines_not_read <= fed.lines, "{}: lines not read", name);
    Ok(())
}

/// Every log a dialect reads: the fixtures and the interop corpus, each with its reading.
fn logs() -> Vec<(String, Vec<u8>, trace::Reading)> {
    let mut paths = fixtures("accepted");
    paths.extend(fixtures("rejected"));
    paths.extend(interop_corpus());
    paths
        .into_iter()
        .filter_map(|p| {
            let text = read(&p);
            let first = text.lines().next().unwrap_or_default();
            let reading = dialect::reading(first, &Default::default()).ok()?;
            Some((name_of(&p), text.into_bytes(), reading))
        })
        .collect()
}

fn name_of(path: &Path) -> String {
    let dir = path.parent().and_then(Path::file_name).unwrap_or_default();
    let file = path.file_name().unwrap_or_default();
    format!("{}/{}", dir.to_string_lossy(), file.to_string_lossy())
}

/// Runs `test` over `cases` of proptest's cases from the seed, panicking with how to reproduce a
/// failure.
fn run<S: Strategy>(cases: u32, strategy: &S, test: impl Fn(S::Value) -> Result<(), TestCaseError>)
where
    S::Value: std::fmt::Debug,
{
    let seed = crate::seed();
    let config = proptest::test_runner::Config {
        cases,
        failure_persistence: None,
        ..Default::default()
    };
    if let Err(e) = crate::runner_with(seed, config).run(strategy, test) {
        panic!("reproduce: TURNFENCE_SEED={seed} cargo test -p turnfence-checks --test it hostile::\n{e}");
    }
}

#[test]
fn a_hostile_stream_is_reports_and_input_errors_at_its_lines_never_a_stop() {
    let logs = logs();
    let dialects: Vec<Dialect> = logs.iter().map(|(_, _, r)| r.dialect).collect();
    for d in dialect::DIALECTS.iter().map(|e| Dialect(*e)) {
        assert!(dialects.contains(&d), "no log of {d:?}");
    }
    let strategy = (0..logs.len(), proptest::collection::vec(hostile(), 1..4));
    run(STREAM_CASES, &strategy, |(which, edits)| {
        let (name, original, reading) = &logs[which];
        let mut text = original.clone();
        for e in &edits {
            apply(&mut text, e);
        }
        let fed = feed(&lines_of(&text), reading);
        monitor_holds(name, &fed)
    });
}

/// The key that names a line's session in `reading`'s dialect, where the line can name one (a
/// Realtime line only in its envelope). Not a Pipecat log's (one session) nor the lab's (a
/// scenario ends where the next begins: two lab logs do not interleave).
fn session_key<'a>(
    reading: &'a trace::Reading,
    line: &serde_json::Map<String, Value>,
) -> Option<&'a str> {
    match reading.dialect.name() {
        "canonical" => Some("session"),
        "openai-realtime" if line.contains_key("event") => Some("session"),
        "livekit-agents" => Some(reading.session_key.as_deref().unwrap_or("session")),
        _ => None,
    }
}

fn is_meta(line: &[u8]) -> bool {
    serde_json::from_slice::<Value>(line).is_ok_and(|v| v.get("meta").is_some())
}

/// `text`'s lines after its meta line, each naming its session `{tag}~{name}`; `None` where a
/// line cannot name its own.
fn renamed(text: &[u8], reading: &trace::Reading, tag: &str) -> Option<Vec<Vec<u8>>> {
    let rename = |line: &[u8]| -> Option<Vec<u8>> {
        let Ok(Value::Object(mut o)) = serde_json::from_slice(line) else {
            return None;
        };
        let key = session_key(reading, &o)?;
        let name = match o.get(key) {
            None => "default".to_owned(),
            Some(Value::String(s)) => s.clone(),
            Some(Value::Number(n)) => n.to_string(),
            Some(_) => return None,
        };
        o.insert(key.to_owned(), Value::String(format!("{tag}~{name}")));
        serde_json::to_vec(&o).ok()
    };
    body(text).into_iter().map(rename).collect()
}

/// `text`'s lines after its meta line.
fn body(text: &[u8]) -> Vec<&[u8]> {
    let mut lines = lines_of(text);
    if lines.first().is_some_and(|l| is_meta(l)) {
        lines.remove(0);
    }
    lines
}

/// `a`'s and `b`'s lines interleaved as `picks` say (cycled: `true` takes `a`'s next), after
/// `head`; each with whether it is `b`'s.
fn interleave<'a>(
    head: Option<&'a [u8]>,
    a: &[&'a [u8]],
    b: &[&'a [u8]],
    picks: &[bool],
) -> Vec<(bool, &'a [u8])> {
    let mut out: Vec<(bool, &[u8])> = head.into_iter().map(|h| (false, h)).collect();
    let (mut i, mut j) = (0, 0);
    for k in 0.. {
        let take_a = match (i < a.len(), j < b.len()) {
            (false, false) => break,
            (true, true) => picks[k % picks.len()],
            (from_a, _) => from_a,
        };
        if take_a {
            out.push((false, a[i]));
            i += 1;
        } else {
            out.push((true, b[j]));
            j += 1;
        }
    }
    out
}

/// What a run gave `a`'s sessions, each with the line fed when it came, and without the lines it
/// names (they move as `b`'s lines do).
fn given_to_a(fed: &Fed) -> Vec<(usize, String)> {
    fed.reports
        .iter()
        .filter_map(|(at, r)| {
            let key = match r {
                live::Report::Finding(f) | live::Report::Withdrawn(f)
                    if f.session.starts_with("a~") =>
                {
                    let kind = if matches!(r, live::Report::Finding(_)) {
                        "finding"
                    } else {
                        "withdrawn"
                    };
                    format!("{kind} {} {} {:?} {}", f.session, f.name(), f.ids, f.at)
                }
                live::Report::NotJudged(n) if n.session.starts_with("a~") => {
                    format!("not judged {} {} {:?}", n.session, n.rule, n.ids)
                }
                _ => return None,
            };
            Some((*at, key))
        })
        .collect()
}

/// What ends a session, as the dialects that can be interleaved write it: a canonical session's
/// end, a Realtime session closed, a LiveKit session's `close`.
const ENDS: [&str; 3] = ["\"session_end\"", "\"session.closed\"", "\"close\""];

/// The quoted session names of `text`, of either log.
fn named(text: &str) -> Vec<&str> {
    let mut names = Vec::new();
    for (i, _) in text.match_indices("\"a~").chain(text.match_indices("\"b~")) {
        if let Some(end) = text[i + 1..].find('"') {
            names.push(&text[i + 1..i + 1 + end]);
        }
    }
    names.sort_unstable();
    names.dedup();
    names
}

/// The input errors of a run at a line of `b`'s that clearly belongs to one of its sessions: the
/// line names that session alone, and the monitor knows it (a line of it was read without an
/// error, and no line of it ended it since). Each as its line, the line's text, the sessions it
/// stops and its message.
fn clearly_of_b(mixed: &[(bool, &[u8])], fed: &Fed) -> Vec<(usize, String, Vec<String>, String)> {
    let mut known: Vec<String> = Vec::new();
    let mut out = Vec::new();
    for (i, (of_b, text)) in mixed.iter().enumerate() {
        let line = i + 1;
        let text = String::from_utf8_lossy(text);
        let names = named(&text);
        let mine = matches!(names.as_slice(), [one] if one.starts_with("b~") && known.iter().any(|s| s == one));
        let mut read = true;
        for (at, r) in &fed.reports {
            let live::Report::InputError { error, sessions } = r else {
                continue;
            };
            if *at != line {
                continue;
            }
            read = false;
            if *of_b && error.line == line && mine {
                let message = error.message.clone();
                out.push((line, text.to_string(), sessions.clone(), message));
            }
        }
        if ENDS.iter().any(|e| text.contains(e)) {
            known.retain(|s| !names.contains(&s.as_str()));
        } else if read {
            known.extend(names.iter().map(|s| s.to_string()));
            known.sort();
            known.dedup();
        }
    }
    out
}

/// The input errors of a run that name a session of `a`'s.
fn errors_of_a(fed: &Fed) -> usize {
    fed.reports
        .iter()
        .filter(|(_, r)| {
            matches!(r, live::Report::InputError { sessions, .. }
                if sessions.iter().any(|s| s.starts_with("a~")))
        })
        .count()
}

#[test]
fn a_mangled_log_interleaved_with_another_leaves_the_others_sessions_judged() {
    let logs = logs();
    let strategy = (
        0..logs.len(),
        mangled::fraction(),
        proptest::collection::vec(hostile(), 1..4),
        proptest::collection::vec(any::<bool>(), 1..16),
    );
    let isolated = std::cell::Cell::new(0);
    run(
        INTERLEAVED_CASES,
        &strategy,
        |(which, other, edits, picks)| {
            let (name, a_text, reading) = &logs[which];
            let same: Vec<usize> = (0..logs.len())
                .filter(|&k| logs[k].2.dialect == reading.dialect)
                .collect();
            let (b_name, b_text, _) = &logs[same[mangled::at(other, same.len() - 1)]];
            let name = format!("{name} with {b_name}");
            let head = lines_of(a_text).first().copied().filter(|l| is_meta(l));
            let names = renamed(a_text, reading, "a").zip(renamed(b_text, reading, "b"));
            let (a, b_clean) = match &names {
                Some((a, b)) => (a.iter().map(Vec::as_slice).collect(), b.join(&b'\n')),
                None => (body(a_text), body(b_text).join(&b'\n')),
            };
            let mut b_mangled = b_clean.clone();
            for e in &edits {
                apply(&mut b_mangled, e);
            }
            let b = lines_of(&b_mangled);
            let mixed = interleave(head, &a, &b, &picks);
            let lines: Vec<&[u8]> = mixed.iter().map(|(_, l)| *l).collect();
            let fed = feed(&lines, reading);
            monitor_holds(&name, &fed)?;
            if names.is_none() {
                return Ok(());
            }
            let clean = interleave(head, &a, &lines_of(&b_clean), &picks);
            let clean = feed(&clean.iter().map(|(_, l)| *l).collect::<Vec<_>>(), reading);
            if clean.summary.input_error_count > 0 {
                // The two logs do not make one log of this dialect (a lab scenario ends where the
                // next begins): nothing to hold apart.
                return Ok(());
            }
            // A line of `b`'s that names only one of `b`'s sessions stops none of `a`'s: in the
            // canonical form and a Realtime envelope, whose `session` field names it (even a
            // session whose first lines made no event yet, a Realtime `session.created`).
            if matches!(reading.dialect.name(), "canonical" | "openai-realtime") {
                for (line, text, sessions, message) in clearly_of_b(&mixed, &fed) {
                    let text: String = text.chars().take(300).collect();
                    prop_assert!(
                        sessions.iter().all(|s| !s.starts_with("a~")),
                        "{name}: line {line} ({text}) of the mangled log stops {sessions:?}: \
                         {message}"
                    );
                }
            }
            // While no input error names them, `a`'s sessions are judged as they are beside `b`
            // unmangled, after `b`'s input errors as before them.
            if errors_of_a(&fed) == 0 {
                let keys = |fed: &Fed| {
                    let mut keys: Vec<String> =
                        given_to_a(fed).into_iter().map(|(_, k)| k).collect();
                    keys.sort();
                    keys
                };
                prop_assert_eq!(keys(&fed), keys(&clean), "{}", name);
                let first_error = fed.reports.iter().find_map(|(at, r)| {
                    matches!(r, live::Report::InputError { .. }).then_some(*at)
                });
                if let Some(first) = first_error {
                    if given_to_a(&fed).iter().any(|(at, _)| *at > first) {
                        isolated.set(isolated.get() + 1);
                    }
                }
            }
            Ok(())
        },
    );
    // A run that never judged a log after another's input error holds nothing.
    eprintln!(
        "{} cases judged a log after another's input error",
        isolated.get()
    );
    assert!(
        isolated.get() > 0,
        "no case judged a log after another's input error"
    );
}

#[test]
fn every_kept_hostile_input_is_a_verdict_or_input_errors_at_its_lines() {
    let canonical = dialect::reading("", &Default::default()).expect("the default reading");
    let files = crate::fixture_files("hostile", "bin");
    assert!(files.len() >= 15, "{files:?}");
    for path in files {
        let name = name_of(&path);
        #[allow(clippy::disallowed_methods)]
        // A kept input is the test's input, bytes as they broke.
        let text = std::fs::read(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
        mangled::check_holds(&name, &text).unwrap_or_else(|e| panic!("{e}"));
        let fed = feed(&lines_of(&text), &canonical);
        monitor_holds(&name, &fed).unwrap_or_else(|e| panic!("{e}"));
    }
}
