//! Trace checking throughput: `turnfence check`'s engine over a synthetic canonical trace of
//! about a million events, streamed (never held whole). Prints events/s and the process's peak
//! resident memory for two trace lengths, so that memory not growing with the trace shows.
//!
//! The same for the `openai-realtime` dialect over a synthetic realtime log (lines/s: a line is
//! one Realtime event; skipped events count, as they must be read).
//!
//! And the realtime dialect over logs as the Agents SDK writes them (the interop corpus's
//! `vad_barge_in`, real-size base64 audio, 100 ms a delta), copied into many sessions: bytes/s of
//! log text, beside a plain JSON parse of the same lines (`serde_json::Value`, one thread) in the
//! same run, best of five alternating runs each.
//!
//! Run: `cargo bench -p turnfence-checks --bench check_throughput` (with `RT_ONLY=1`, the
//! realtime dialect's million lines alone, with `CANONICAL_ONLY=1` the canonical trace's million
//! events alone, with `RT_CORPUS_ONLY=1` the corpus-shaped realtime log alone: for a profile).

/// The allocator the `turnfence` binary runs on: a benchmark measures what the command costs.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod common;

use std::time::Instant;

use turnfence_checks::dialect::openai_realtime::{sample, RealtimeReader};
use turnfence_checks::gate::synthetic::SyntheticTrace;
use turnfence_checks::trace::{canonical::CanonicalReader, check, check_as, Keep};
use turnfence_model::turn::{Profile, TurnMachine};

use common::peak_rss_kib;

fn run(target_events: usize) {
    let per_round = SyntheticTrace::new(0).lines_per_round();
    let sessions = target_events * 8 / per_round;
    #[allow(clippy::disallowed_methods)] // Benchmarks measure wall-clock time, by definition.
    let start = Instant::now();
    let verdict = check(
        SyntheticTrace::new(sessions),
        &mut CanonicalReader::<TurnMachine>::default(),
    )
    .expect("the synthetic trace is well formed");
    let seconds = start.elapsed().as_secs_f64();
    assert!(verdict.conforms(), "the synthetic trace must conform");
    println!(
        "check canonical: {} events, {} sessions in {:.3} s = {:.0} events/s; peak RSS {} MiB",
        verdict.events,
        verdict.sessions,
        seconds,
        verdict.events as f64 / seconds,
        peak_rss_kib() / 1024
    );
}

/// The realtime dialect over a synthetic realtime log of about `target_events` lines.
fn run_realtime(target_events: usize) {
    let per_round =
        SyntheticTrace::of_session(sample::SESSION_NAME, sample::SESSION, 0).lines_per_round();
    let sessions = target_events / per_round;
    #[allow(clippy::disallowed_methods)] // Benchmarks measure wall-clock time, by definition.
    let start = Instant::now();
    let verdict = check_as(
        SyntheticTrace::of_session(sample::SESSION_NAME, sample::SESSION, sessions),
        &mut RealtimeReader::default(),
        Keep::Findings,
        TurnMachine::with_profile(Profile::OpenaiRealtime),
    )
    .expect("the synthetic realtime log is well formed");
    let seconds = start.elapsed().as_secs_f64();
    assert!(
        verdict.conforms(),
        "the synthetic realtime log must conform"
    );
    println!(
        "check openai-realtime: {} lines, {} events, {} sessions in {:.3} s = {:.0} lines/s; peak RSS {} MiB",
        sessions * per_round,
        verdict.events,
        verdict.sessions,
        seconds,
        (sessions * per_round) as f64 / seconds,
        peak_rss_kib() / 1024
    );
}

/// The interop corpus's `vad_barge_in` log, its lines copied into `copies` sessions.
fn corpus_log(copies: usize) -> String {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../fixtures/interop/openai-realtime@0.24.0/vad_barge_in.jsonl"
    );
    #[allow(clippy::disallowed_methods)] // A benchmark reads its input from the corpus.
    let text = std::fs::read_to_string(path).expect("the corpus log is readable");
    let mut out = String::from("{\"meta\":{\"dialect\":\"openai-realtime\"}}\n");
    for copy in 0..copies {
        for line in text.lines().skip(1) {
            out.push_str(&format!("{{\"session\":\"s{copy}\","));
            out.push_str(&line[1..]);
            out.push('\n');
        }
    }
    out
}

/// The realtime dialect over the corpus-shaped log, beside a plain JSON parse of its lines:
/// seconds of each, best of `rounds` alternating runs.
fn run_realtime_corpus(copies: usize, rounds: usize) {
    let log = corpus_log(copies);
    let (mut check_s, mut parse_s) = (f64::MAX, f64::MAX);
    for _ in 0..rounds {
        #[allow(clippy::disallowed_methods)] // Benchmarks measure wall-clock time, by definition.
        let start = Instant::now();
        let verdict = check_as(
            log.as_bytes(),
            &mut RealtimeReader::default(),
            Keep::Findings,
            TurnMachine::with_profile(Profile::OpenaiRealtime),
        )
        .expect("the corpus-shaped log is well formed");
        check_s = check_s.min(start.elapsed().as_secs_f64());
        assert!(verdict.conforms(), "the corpus-shaped log must conform");
        #[allow(clippy::disallowed_methods)] // Benchmarks measure wall-clock time, by definition.
        let start = Instant::now();
        let mut values = 0usize;
        for line in log.lines() {
            let v: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
            values += usize::from(v.is_object());
        }
        parse_s = parse_s.min(start.elapsed().as_secs_f64());
        assert_eq!(values, log.lines().count());
    }
    let gb = log.len() as f64 / 1e9;
    println!(
        "check openai-realtime, corpus-shaped ({} MB, {copies} sessions): {:.2} GB/s; plain JSON parse of the same lines {:.2} GB/s; ratio {:.2} (best of {rounds} alternating)",
        log.len() / 1_000_000,
        gb / check_s,
        gb / parse_s,
        parse_s / check_s,
    );
}

fn main() {
    // `cargo bench` passes `--bench`; a plain `cargo test --benches` run passes nothing and only
    // needs to know the benchmark builds and runs, so it takes the short trace alone.
    let full = std::env::args().any(|a| a == "--bench");
    if std::env::var_os("RT_ONLY").is_some() {
        run_realtime(1_000_000);
        return;
    }
    if std::env::var_os("CANONICAL_ONLY").is_some() {
        run(1_000_000);
        return;
    }
    if std::env::var_os("RT_CORPUS_ONLY").is_some() {
        run_realtime_corpus(300, 5);
        return;
    }
    run(100_000);
    run_realtime(100_000);
    run_realtime_corpus(10, 1);
    if full {
        run(1_000_000);
        run_realtime(1_000_000);
        run_realtime_corpus(300, 5);
    }
}
