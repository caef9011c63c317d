//! `turnfence check --follow PATH` (or `-`, a pipe): a log judged as it is written. Each finding
//! is printed when the line that decides it is read; a session's end-of-session rules when it
//! ends, or — silent longer than `--idle-timeout` — reported not judged. A line that cannot be
//! read is an input error for its session, and the rest goes on. Exit 0 at the end of the input
//! or on SIGINT/SIGTERM, with the summary; with `--fail-fast`, 1 at the first finding.
//!
//! A thread reads (the file, polled as `tail -F` does; or standard input) and hands each line to
//! the judging thread through a bounded channel: a line is never dropped — when the judging falls
//! behind, the reading waits, and how far behind it is (lines waiting, and for how long, and a
//! file's bytes unread) is said on standard error every ten seconds and in the summary.

use std::io::{BufRead, Write};
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, RecvTimeoutError, SyncSender};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;

use super::tail::{Change, Follow};
use super::{Monitor, Report, Summary};
use crate::dialect::{self, Flags};
use crate::report::text::{finding_text, not_judged_line};
use crate::trace;

/// Lines read and not yet judged, at most: past it the reading waits.
const WAITING: usize = 4096;
/// How long the reader waits at the end of a followed file before it looks again.
const POLL: Duration = Duration::from_millis(1);
/// How often being behind is said.
const BEHIND_EVERY: Duration = Duration::from_secs(10);

/// What `--follow` was asked for.
pub struct Live {
    /// JSON lines (else text).
    pub json: bool,
    pub idle_timeout: Option<Duration>,
    pub fail_fast: bool,
}

/// What the reading thread hands over.
enum Read {
    Line(Vec<u8>, Instant),
    /// The file was rotated or truncated: its next line is its new first.
    Anew(String),
    End,
    Failed(String),
}

/// How far behind the judging is.
#[derive(Default)]
struct Behind {
    /// Lines read and not yet judged.
    waiting: AtomicUsize,
    /// A followed file's bytes not yet read.
    unread: AtomicU64,
}

/// Follows `path` (`-`: standard input), judging each line as it comes.
#[allow(clippy::disallowed_methods)] // A live monitor's idle time and lag are the wall clock's.
pub fn run(path: &Path, flags: &Flags, live: &Live) -> ExitCode {
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        if let Err(e) = signal_hook::flag::register(signal, Arc::clone(&stop)) {
            eprintln!("turnfence check: cannot watch for signals: {e}");
        }
    }
    let behind = Arc::new(Behind::default());
    let (to, from) = sync_channel::<Read>(WAITING);
    let reading = {
        let (path, stop, behind) = (path.to_owned(), Arc::clone(&stop), Arc::clone(&behind));
        std::thread::spawn(move || read(&path, &to, &stop, &behind))
    };
    let mut out = Out::new(live.json);
    let started = Instant::now();
    let mut monitor: Option<Monitor> = None;
    let mut said_behind = Instant::now();
    let mut most_behind = (0usize, Duration::ZERO);
    let mut last_expiry = Instant::now();
    let mut first_line: Option<Vec<u8>> = None;
    let mut anew = false;
    let mut draining: Option<usize> = None;
    let code = loop {
        // On a signal, the lines already read (waiting then) are judged before the end.
        let got = if stop.load(Ordering::Relaxed) {
            let left = draining.get_or_insert_with(|| behind.waiting.load(Ordering::Relaxed));
            match from.try_recv() {
                Ok(read) if *left > 0 => {
                    *left -= 1;
                    Ok(read)
                }
                _ => break None,
            }
        } else {
            from.recv_timeout(Duration::from_millis(50))
        };
        let now = ms(started.elapsed());
        let mut reports = Vec::new();
        match got {
            Ok(Read::Line(bytes, read_at)) => {
                behind.waiting.fetch_sub(1, Ordering::Relaxed);
                // A new file's first line that is the log's own (its meta line, written again at
                // the top of each file) is passed over, not read as a second meta line.
                if std::mem::take(&mut anew) && first_line.as_deref() == Some(&bytes[..]) {
                    eprintln!("turnfence check: the new file opens with the log's first line: passed over");
                    continue;
                }
                if first_line.is_none() {
                    first_line = Some(bytes.clone());
                }
                let m = match &mut monitor {
                    Some(m) => m,
                    None => match first(&bytes, flags) {
                        Ok(m) => monitor.insert(m),
                        Err(e) => {
                            eprintln!("turnfence check: {e}");
                            break Some(ExitCode::from(2));
                        }
                    },
                };
                reports = m.feed_bytes(&bytes, now);
                let late = read_at.elapsed();
                let waiting = behind.waiting.load(Ordering::Relaxed);
                if late > most_behind.1 {
                    most_behind.1 = late;
                }
                most_behind.0 = most_behind.0.max(waiting);
                let unread = behind.unread.load(Ordering::Relaxed);
                if (waiting > 0 || unread > 0) && said_behind.elapsed() >= BEHIND_EVERY {
                    said_behind = Instant::now();
                    out.behind(waiting, late, unread);
                }
            }
            Ok(Read::Anew(what)) => {
                eprintln!("turnfence check: {what}");
                anew = true;
            }
            Ok(Read::End) | Err(RecvTimeoutError::Disconnected) => break None,
            Ok(Read::Failed(e)) => {
                eprintln!("turnfence check: {e}");
                break None;
            }
            Err(RecvTimeoutError::Timeout) => {}
        }
        if let (Some(m), Some(idle)) = (&mut monitor, live.idle_timeout) {
            if last_expiry.elapsed() >= Duration::from_millis(100) {
                last_expiry = Instant::now();
                reports.extend(m.expire(now, ms(idle)));
            }
        }
        if out.reports(&reports) && live.fail_fast {
            break Some(ExitCode::from(1));
        }
    };
    // The reading thread stops at its next poll, or its next send; one blocked reading a pipe is
    // left to the process's exit.
    stop.store(true, Ordering::Relaxed);
    drop(from);
    drop(reading);
    let Some(monitor) = monitor else {
        return code.unwrap_or_else(|| {
            eprintln!("turnfence check: no line was read");
            ExitCode::SUCCESS
        });
    };
    let summary = match code {
        // Failing fast: the summary so far, the open sessions not judged to their end.
        Some(_) => monitor.summary().clone(),
        None => {
            let (reports, summary) = monitor.finish();
            out.reports(&reports);
            summary
        }
    };
    out.summary(&summary, most_behind);
    code.unwrap_or(ExitCode::SUCCESS)
}

/// The monitor of a log whose first line is `bytes`.
fn first(bytes: &[u8], flags: &Flags) -> Result<Monitor, trace::InputError> {
    let text = String::from_utf8_lossy(bytes);
    let read = dialect::reading(text.trim_start_matches('\u{feff}'), flags)?;
    for why in &read.overrides {
        eprintln!("turnfence check: {why}");
    }
    Monitor::new(&read)
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// The reading thread: every line of `path` (`-`: standard input) sent, in order, until its end
/// (standard input) or `stop`.
#[allow(clippy::disallowed_methods)] // When a line was read: how far behind the judging is.
fn read(path: &Path, to: &SyncSender<Read>, stop: &AtomicBool, behind: &Behind) {
    let send = |r: Read| {
        if matches!(r, Read::Line(..)) {
            behind.waiting.fetch_add(1, Ordering::Relaxed);
        }
        to.send(r).is_ok()
    };
    if path == Path::new("-") {
        let mut input = std::io::stdin().lock();
        let mut line = Vec::new();
        loop {
            line.clear();
            match input.read_until(b'\n', &mut line) {
                Ok(0) => break,
                Ok(_) => {
                    let bytes = line.strip_suffix(b"\n").unwrap_or(&line).to_vec();
                    if !send(Read::Line(bytes, Instant::now())) {
                        return;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    send(Read::Failed(format!("cannot read standard input: {e}")));
                    return;
                }
            }
        }
        send(Read::End);
        return;
    }
    let mut follow = match Follow::open(path) {
        Ok(f) => f,
        Err(e) => {
            send(Read::Failed(format!("cannot read {}: {e}", path.display())));
            return;
        }
    };
    let mut lines = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        let change = match follow.poll(&mut lines) {
            Ok(c) => c,
            Err(e) => {
                send(Read::Failed(format!("cannot read {}: {e}", path.display())));
                return;
            }
        };
        match change {
            Change::None => {}
            Change::Rotated => {
                send(Read::Anew(format!(
                    "{} was rotated: reading the new file",
                    path.display()
                )));
            }
            Change::Truncated => {
                send(Read::Anew(format!(
                    "{} was truncated: reading it from its start",
                    path.display()
                )));
            }
        }
        let got = !lines.is_empty();
        let now = Instant::now();
        for l in lines.drain(..) {
            if !send(Read::Line(l, now)) {
                return;
            }
        }
        behind.unread.store(follow.unread(), Ordering::Relaxed);
        if !got && change == Change::None {
            std::thread::sleep(POLL);
        }
    }
}

/// Where reports go: standard output, one per line, flushed as they come.
struct Out {
    json: bool,
    out: std::io::Stdout,
}

impl Out {
    fn new(json: bool) -> Out {
        Out {
            json,
            out: std::io::stdout(),
        }
    }

    /// Writes `reports`; whether one was a finding.
    fn reports(&mut self, reports: &[Report]) -> bool {
        if reports.is_empty() {
            return false;
        }
        let mut text = String::new();
        let mut found = false;
        for r in reports {
            found |= matches!(r, Report::Finding(_));
            match self.json {
                true => {
                    text.push_str(&serde_json::to_string(r).unwrap_or_default());
                    text.push('\n');
                }
                _ => text.push_str(&report_text(r)),
            }
        }
        let mut out = self.out.lock();
        let _ = out.write_all(text.as_bytes());
        let _ = out.flush();
        found
    }

    fn behind(&mut self, waiting: usize, late: Duration, unread: u64) {
        let secs = late.as_secs_f64();
        match self.json {
            true => {
                let line = json!({ "behind": { "lines": waiting, "seconds": secs, "bytes_unread": unread } });
                let mut out = self.out.lock();
                let _ = writeln!(out, "{line}");
                let _ = out.flush();
            }
            _ => eprintln!(
                "turnfence check: behind by {waiting} lines ({secs:.3} s), {unread} bytes unread"
            ),
        }
    }

    fn summary(&mut self, s: &Summary, behind: (usize, Duration)) {
        let text = match self.json {
            true => {
                let mut v = serde_json::to_value(s).unwrap_or_default();
                v["most_behind"] = json!({ "lines": behind.0, "seconds": behind.1.as_secs_f64() });
                format!("{}\n", json!({ "summary": v }))
            }
            _ => summary_text(s, behind),
        };
        let mut out = self.out.lock();
        let _ = out.write_all(text.as_bytes());
        let _ = out.flush();
    }
}

fn report_text(r: &Report) -> String {
    match r {
        Report::Finding(f) => finding_text(f),
        Report::Withdrawn(f) => format!(
            "withdrawn at the end of session {}: {} at line {} (the end does not hold it)\n",
            f.session,
            f.name(),
            f.line
        ),
        Report::NotJudged(n) => format!("{}\n", not_judged_line(n)),
        Report::InputError { error, sessions } if sessions.is_empty() => {
            format!("input error: {error}\n")
        }
        Report::InputError { error, sessions } => format!(
            "input error: {error} (session {}: not judged after it)\n",
            sessions.join(", ")
        ),
    }
}

fn summary_text(s: &Summary, behind: (usize, Duration)) -> String {
    let status = match (s.conforms(), s.input_error_count) {
        (false, _) => "VIOLATIONS",
        (true, 0) => "CONFORMS",
        (true, _) => "NO FINDINGS, UNREADABLE LINES",
    };
    let mut out = format!(
        "{status}: {} findings in {} lines ({} sessions, {} open at most; {} given before their \
         session ended, {} withdrawn), {} input errors, {} rules not judged\n",
        s.finding_count,
        s.lines,
        s.sessions,
        s.peak_open_sessions,
        s.given_early,
        s.withdrawn,
        s.input_error_count,
        s.not_judged_count
    );
    for (name, count) in &s.counts {
        if *count > 0 {
            out.push_str(&format!("  {count:>7}  {name}\n"));
        }
    }
    if s.expired > 0 || s.lines_not_read > 0 {
        out.push_str(&format!(
            "{} sessions ended for their silence; {} lines of sessions no longer judged\n",
            s.expired, s.lines_not_read
        ));
    }
    out.push_str(&format!(
        "most behind: {} lines waiting, {:.3} s\n",
        behind.0,
        behind.1.as_secs_f64()
    ));
    out
}
