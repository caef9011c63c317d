//! The live monitor (`live::Monitor`) as a log is written.
//!
//! Latency: a writer thread writes a canonical log at 10 000 lines/s (sleeping to a schedule)
//! into a pipe (a Unix socket pair); a reader thread reads it line by line and feeds each line to
//! a monitor. For each finding, the time from the write of the line that decides it (the
//! finding's `line`) to the report. Alternating with it, the same log through the `turnfence`
//! binary (`check --follow - --format json` on its standard input: the time from the deciding
//! line's write to the finding's record read from its standard output), and the plain cost of the
//! pipe: the time from a line's write to its being read, nothing judged, at the lines that decide
//! a finding and over every line. The log is the gate's scenarios interleaved, 100 sessions open
//! at a time, every third session a copy of a rejected fixture's (a delivery after a stop).
//!
//! Memory: 10^7 lines (`LIVE_LINES`) of the gate's scenarios, 1 000 sessions open at a time, made
//! as they are fed (never held), fed to one monitor: the process's peak resident memory at a tenth
//! of the log and at its end.
//!
//! Run: `cargo bench -p turnfence-checks --bench live` (with `LIVE_LATENCY_ONLY=1` the latency
//! alone, with `LIVE_MEMORY_ONLY=1` the memory alone).

/// The allocator the `turnfence` binary runs on: a benchmark measures what the command costs.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use turnfence_checks::dialect;
use turnfence_checks::gate::synthetic::Interleaved;
use turnfence_checks::live;

use common::{peak_rss_kib, status_field};

/// Lines written per second.
const RATE_LINES_PER_S: u64 = 10_000;

/// The rejected fixture copied among the conforming sessions, and the session it holds.
const REJECTED: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../fixtures/rejected/0005_no_late_delivery_delta_after_stop.jsonl"
));
const REJECTED_SESSION: &str = "cancel_tree";

/// The latency run's log: `sessions` sessions, 100 open at a time, every third a rejected one.
fn latency_log(sessions: usize) -> Interleaved {
    Interleaved::new(sessions, 100).with_odd(REJECTED_SESSION, REJECTED, 3)
}

/// Writes `log` into `out` at [`RATE_LINES_PER_S`], each line when its time comes: the instant
/// each line's write began.
fn paced_write(log: Interleaved, mut out: impl Write) -> Vec<Instant> {
    let step = Duration::from_nanos(1_000_000_000 / RATE_LINES_PER_S);
    let mut written = Vec::new();
    let mut text = String::new();
    #[allow(clippy::disallowed_methods)] // Benchmarks measure wall-clock time, by definition.
    let start = Instant::now();
    for (i, line) in log.enumerate() {
        let due = start + step * u32::try_from(i).expect("fewer than 2^32 lines");
        #[allow(clippy::disallowed_methods)] // The writer keeps to its schedule.
        let now = Instant::now();
        if due > now {
            thread::sleep(due - now);
        }
        text.clear();
        text.push_str(&line);
        text.push('\n');
        #[allow(clippy::disallowed_methods)] // Benchmarks measure wall-clock time, by definition.
        written.push(Instant::now());
        out.write_all(text.as_bytes()).expect("the pipe is open");
    }
    written
}

/// What the reading side saw: when each line was read, and each finding's line, when it was
/// reported, and whether it was reported at the line that decides it.
#[derive(Default)]
struct Seen {
    received: Vec<Instant>,
    /// How many times the reading thread was taken off its core while it could run.
    preempted: u64,
    /// How long each line's `feed` took.
    fed: Vec<Duration>,
    findings: Vec<(usize, Instant, bool)>,
}

/// Reads `input` line by line, feeding each line to a monitor when `judge`.
fn read_lines(input: impl Read, judge: bool) -> Seen {
    let mut input = BufReader::new(input);
    let mut seen = Seen::default();
    let mut monitor: Option<live::Monitor> = None;
    let mut buf = String::new();
    #[allow(clippy::disallowed_methods)] // Benchmarks measure wall-clock time, by definition.
    let start = Instant::now();
    let preempted = || status_field("/proc/thread-self/status", "nonvoluntary_ctxt_switches:");
    let preempted_before = preempted();
    loop {
        buf.clear();
        if input.read_line(&mut buf).expect("the pipe reads") == 0 {
            break;
        }
        #[allow(clippy::disallowed_methods)] // Benchmarks measure wall-clock time, by definition.
        seen.received.push(Instant::now());
        if !judge {
            continue;
        }
        let line = buf.trim_end_matches('\n');
        let monitor = monitor.get_or_insert_with(|| {
            let reading =
                dialect::reading(line, &dialect::Flags::default()).expect("a canonical log");
            live::Monitor::new(&reading).expect("a canonical log")
        });
        let now_ms = u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX);
        #[allow(clippy::disallowed_methods)] // Benchmarks measure wall-clock time, by definition.
        let feeding = Instant::now();
        let reports = monitor.feed(line, now_ms);
        seen.fed.push(feeding.elapsed());
        for report in reports {
            if let live::Report::Finding(f) = report {
                let at_its_line = f.line == seen.received.len();
                #[allow(clippy::disallowed_methods)] // Benchmarks measure wall-clock time.
                seen.findings.push((f.line, Instant::now(), at_its_line));
            }
        }
    }
    seen.preempted = preempted() - preempted_before;
    if let Some(monitor) = monitor {
        let (reports, _) = monitor.finish();
        for report in reports {
            if let live::Report::Finding(f) = report {
                #[allow(clippy::disallowed_methods)] // Benchmarks measure wall-clock time.
                seen.findings.push((f.line, Instant::now(), false));
            }
        }
    }
    seen
}

/// One paced run over a pipe: the writer's instants and what the reader saw.
fn paced_run(sessions: usize, judge: bool) -> (Vec<Instant>, Seen) {
    // A Unix socket pair stands for a pipe (`std::io::pipe` is newer than this crate's MSRV): a
    // byte stream through the kernel, read as it is written.
    let (reader, writer) = UnixStream::pair().expect("a socket pair");
    let reading = thread::spawn(move || read_lines(reader, judge));
    let written = paced_write(latency_log(sessions), writer);
    let seen = reading.join().expect("the reader ends");
    (written, seen)
}

/// One paced run through the `turnfence` binary, `check --follow - --format json` reading the log
/// from its standard input: the writer's instants, and each finding's line and when its record
/// was read from the binary's standard output.
fn paced_run_binary(sessions: usize) -> (Vec<Instant>, Vec<(usize, Instant)>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_turnfence"))
        .args(["check", "--follow", "-", "--format", "json"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("the turnfence binary runs");
    let stdout = child.stdout.take().expect("its standard output");
    let reading = thread::spawn(move || {
        let mut findings = Vec::new();
        for record in BufReader::new(stdout).lines() {
            let record = record.expect("the binary's output reads");
            #[allow(clippy::disallowed_methods)] // Benchmarks measure wall-clock time.
            let at = Instant::now();
            let value: serde_json::Value = serde_json::from_str(&record).expect("a JSON record");
            if let Some(line) = value["finding"]["line"].as_u64() {
                findings.push((usize::try_from(line).expect("a line number"), at));
            }
        }
        findings
    });
    // The process started before its first line is written, as a monitor beside a service is.
    thread::sleep(Duration::from_millis(200));
    let stdin = child.stdin.take().expect("its standard input");
    let written = paced_write(latency_log(sessions), stdin);
    let findings = reading
        .join()
        .expect("the binary's output is read to its end");
    let status = child.wait().expect("the binary ends");
    assert!(matches!(status.code(), Some(0 | 1)), "{status}");
    (written, findings)
}

/// Median, 99th percentile and maximum of `v`, in microseconds (none: zeros).
fn spread(mut v: Vec<Duration>) -> (f64, f64, f64) {
    if v.is_empty() {
        return (0.0, 0.0, 0.0);
    }
    v.sort_unstable();
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    let p99 = (v.len() * 99 / 100).min(v.len() - 1);
    (us(v[v.len() / 2]), us(v[p99]), us(v[v.len() - 1]))
}

fn show((median, p99, max): (f64, f64, f64)) -> String {
    format!("median {median:.0} µs, p99 {p99:.0} µs, max {max:.0} µs")
}

/// The latency of findings, and of the plain read beside it, `rounds` alternating runs each of a
/// log of `sessions` sessions.
fn latency(sessions: usize, rounds: usize) {
    let log = latency_log(sessions);
    println!(
        "live latency: {} lines at {RATE_LINES_PER_S} lines/s, {sessions} sessions ({} rejected), {rounds} alternating runs of each",
        log.lines(),
        log.odd_sessions()
    );
    let (mut judged_p99, mut plain_p99, mut binary_p99) = (Vec::new(), Vec::new(), Vec::new());
    for round in 1..=rounds {
        let (written, seen) = paced_run(sessions, true);
        let late = seen.findings.iter().filter(|f| !f.2).count();
        let to_report = seen
            .findings
            .iter()
            .map(|&(line, at, _)| at - written[line - 1]);
        let judged = spread(to_report.collect());
        let lines = spread(lines_read(&written, &seen.received, None));
        println!(
            "  run {round}, judged: written at {:.0} lines/s; {} findings ({late} after their line), write to report {}; every line's write to read {}; a feed {}; the reader preempted {} times",
            rate(&written),
            seen.findings.len(),
            show(judged),
            show(lines),
            show(spread(seen.fed)),
            seen.preempted
        );
        judged_p99.push(judged.1);
        let deciding: Vec<usize> = seen.findings.iter().map(|f| f.0).collect();

        let (written, seen) = paced_run(sessions, false);
        let at_deciding = spread(lines_read(&written, &seen.received, Some(&deciding)));
        let lines = spread(lines_read(&written, &seen.received, None));
        println!(
            "  run {round}, plain read: write to read at the {} deciding lines {}; every line {}; the reader preempted {} times",
            deciding.len(),
            show(at_deciding),
            show(lines),
            seen.preempted
        );
        plain_p99.push(at_deciding.1);

        let (written, findings) = paced_run_binary(sessions);
        let lines: Vec<usize> = findings.iter().map(|f| f.0).collect();
        assert_eq!(lines, deciding, "the binary finds what the monitor finds");
        let binary = spread(
            findings
                .iter()
                .map(|&(l, at)| at - written[l - 1])
                .collect(),
        );
        println!(
            "  run {round}, the binary (check --follow - --format json): {} findings, write to the record read {}",
            findings.len(),
            show(binary)
        );
        binary_p99.push(binary.1);
    }
    let best_median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        (v[0], v[v.len() / 2])
    };
    let (judged_best, judged_median) = best_median(judged_p99);
    let (plain_best, plain_median) = best_median(plain_p99);
    let (binary_best, binary_median) = best_median(binary_p99);
    println!(
        "live latency, p99 over {rounds} alternating runs (best, median): the monitor's write to report {judged_best:.0} µs, {judged_median:.0} µs; the binary's write to its record {binary_best:.0} µs, {binary_median:.0} µs; plain write to read at the same lines {plain_best:.0} µs, {plain_median:.0} µs"
    );
}

/// The lines written per second, first write to last.
fn rate(written: &[Instant]) -> f64 {
    match (written.first(), written.last()) {
        (Some(first), Some(last)) if last > first => {
            (written.len() - 1) as f64 / (*last - *first).as_secs_f64()
        }
        _ => 0.0,
    }
}

/// Each line's time from write to read (only the lines numbered in `only`, when given).
fn lines_read(written: &[Instant], received: &[Instant], only: Option<&[usize]>) -> Vec<Duration> {
    assert_eq!(written.len(), received.len(), "every line written is read");
    match only {
        Some(lines) => lines
            .iter()
            .map(|&l| received[l - 1] - written[l - 1])
            .collect(),
        None => received.iter().zip(written).map(|(r, w)| *r - *w).collect(),
    }
}

/// About `lines` lines, 1 000 sessions open at a time, fed to one monitor: peak resident memory
/// at a tenth of the log and at its end.
fn memory(lines: usize) {
    let per_round = Interleaved::new(8, 1).lines() - 1;
    let sessions = lines * 8 / per_round;
    let mut log = Interleaved::new(sessions, 1_000);
    let total = log.lines();
    #[allow(clippy::disallowed_methods)] // Benchmarks measure wall-clock time, by definition.
    let start = Instant::now();
    let first = log.next().expect("a meta line");
    let reading = dialect::reading(&first, &dialect::Flags::default()).expect("a canonical log");
    let mut monitor = live::Monitor::new(&reading).expect("a canonical log");
    let mut fed = 0usize;
    let mut tenth_kib = 0;
    for line in std::iter::once(first).chain(log) {
        fed += 1;
        let now_ms = (fed / 10) as u64;
        let reports = monitor.feed(&line, now_ms);
        assert!(reports.is_empty(), "line {fed}: {reports:?}");
        if fed == total / 10 {
            tenth_kib = peak_rss_kib();
        }
    }
    let end_kib = peak_rss_kib();
    let seconds = start.elapsed().as_secs_f64();
    let (reports, summary) = monitor.finish();
    assert!(reports.is_empty() && summary.conforms(), "the log conforms");
    assert_eq!((fed, summary.sessions), (total, sessions));
    println!(
        "live memory: {fed} lines, {sessions} sessions, at most {} open, in {seconds:.1} s ({:.0} lines/s); peak RSS at a tenth {:.1} MiB, at the end {:.1} MiB, ratio {:.3}",
        summary.peak_open_sessions,
        fed as f64 / seconds,
        tenth_kib as f64 / 1024.0,
        end_kib as f64 / 1024.0,
        end_kib as f64 / tenth_kib as f64
    );
}

fn main() {
    // `cargo bench` passes `--bench`; a plain `cargo test --benches` run passes nothing and only
    // needs to know the benchmark builds and runs, so it takes short runs alone.
    let full = std::env::args().any(|a| a == "--bench");
    let lines = std::env::var("LIVE_LINES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000_000);
    let (latency_only, memory_only) = (
        std::env::var_os("LIVE_LATENCY_ONLY").is_some(),
        std::env::var_os("LIVE_MEMORY_ONLY").is_some(),
    );
    let (sessions, rounds, lines) = if full || latency_only || memory_only {
        (9_000, 5, lines)
    } else {
        (300, 1, 100_000)
    };
    if !memory_only {
        latency(sessions, rounds);
    }
    if !latency_only {
        memory(lines);
    }
}
