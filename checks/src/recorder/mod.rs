//! Records a Rust system's canonical trace from its `tracing` events: a `tracing-subscriber`
//! [`Layer`] that writes each event of target `turnfence` as one line of the canonical form, so
//! a turn manager records what `turnfence check` judges with one line of setup:
//!
//! ```no_run
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use turnfence_checks::recorder::{self, MonotonicClock};
//! let recording = recorder::install(std::fs::File::create("trace.jsonl")?, MonotonicClock::start())?;
//! # Ok(()) }
//! ```
//!
//! # The event convention
//!
//! An event is recorded when its target is [`TARGET`] (`"turnfence"`), at any level. Its fields
//! are the canonical line's fields, named as the canonical form names them (docs/MAPPING.md):
//!
//! ```
//! tracing::info!(target: "turnfence", session = "call-7", input = "delta",
//!                turn = "t1", generation = 1, seq = 3, text = "Storage ");
//! tracing::info!(target: "turnfence", session = "call-7", output = "delivered",
//!                turn = "t1", generation = 1, seq = 3);
//! tracing::info!(target: "turnfence", session = "call-7", session_end = true);
//! ```
//!
//! * `input = "…"` or `output = "…"` names the line's kind (or `session_end = true` ends the
//!   session); `session` is optional (the checker's default is `main`).
//! * Numbers, booleans and strings are written as JSON numbers, booleans and strings. `%value`
//!   records a value's `Display` text as a string; prefer it (or `.as_str()`) to `?value`, whose
//!   `Debug` text of a `String` keeps its quotes. An `Option` that is `None` writes no field.
//! * A dotted name builds a nested object: `kind.tool.name = "refund", kind.tool.cancellable =
//!   false` is `"kind":{"tool":{"name":"refund","cancellable":false}}`; likewise
//!   `budget.model_ms = 300`, `answer.already_terminal.state = "cancelled"`,
//!   `state.failed.code = "DEADLINE_EXCEEDED"`.
//! * A name ending in `_json` holds JSON text, parsed and written under the name without the
//!   suffix: `budget_json = r#"{"retrieval_ms":100,"model_ms":300,"reserve_ms":100}"#` is
//!   `"budget":{…}`. For what dots cannot say (the fence machine's `restore` lists).
//! * `message` (the event's format string, if it has one) is not part of the line; the
//!   event's other fields all are, so a field the canonical form does not know makes the event
//!   malformed.
//! * `at` is never a field: it is the recorder's [`Clock`], read when the event is recorded.
//!
//! # What is written, and what is reported
//!
//! Each event is built into its line, which is then read back with the checker's own parser
//! ([`crate::trace::canonical::read_line`]) for the recorder's machine (the turn machine unless
//! [`Recorder::machine`] says otherwise): only a line `check` can read is written, one line per
//! event, flushed. A malformed event (an unknown field, a missing one, a value of the wrong
//! kind, JSON text that does not parse) is not written; it is **counted** — [`Recording::rejected`],
//! with the reasons in [`Recording::rejections`] — and **reported as one line on standard error**
//! (or to [`Recorder::report_to`]), naming the event's source file and line. So is a write that
//! fails. Nothing the recorder meets panics the host: a test that records should assert
//! `recording.rejected() == 0`.
//!
//! The meta line, if asked for ([`Recorder::machine`], [`Recorder::complete`],
//! [`Recorder::partial`]), is the first line, written when the recorder is installed.
//!
//! # Time
//!
//! The recorder reads no clock of its own: `at` comes from the [`Clock`] it is given — a
//! [`ManualClock`] a test advances, a closure over a runtime's virtual time (tokio's paused
//! clock, say), or [`MonotonicClock`], milliseconds since it started, for a real system. The
//! clock is read under the recorder's lock, just before the line is written, so `at` never goes
//! backwards in the file, whichever thread records.
//!
//! # Judging as it writes
//!
//! [`Recorder::judge`] (or [`Recorder::on_finding`], which also installs a callback) feeds every
//! line written, the meta line first, to a live monitor ([`crate::live::Monitor`]), read
//! as `check` reads the file and timed by the recorder's clock. A finding is told at the line
//! that decides it: as a `tracing` warning of target [`FINDING_TARGET`] (never recorded: its
//! target is not [`TARGET`]), and to the callback. [`Recording::finish_judging`] judges what
//! only the end decides and gives the summary; its findings are `check`'s of the file.
//!
//! ```
//! use std::sync::atomic::{AtomicUsize, Ordering};
//! use std::sync::Arc;
//! use turnfence_checks::recorder::{ManualClock, Recorder, SharedBuffer};
//!
//! let found = Arc::new(AtomicUsize::new(0));
//! let counter = Arc::clone(&found);
//! let scoped = Recorder::new(SharedBuffer::new(), ManualClock::new())
//!     .on_finding(move |_| {
//!         counter.fetch_add(1, Ordering::Relaxed);
//!     })
//!     .install_scoped();
//! tracing::info!(target: "turnfence", input = "accept", turn = "t1", generation = 1);
//! // The turn is never ended: only the end of the trace decides that.
//! let summary = scoped.recording.finish_judging().expect("it judges");
//! assert_eq!((summary.finding_count, found.load(Ordering::Relaxed)), (1, 1));
//! ```

use std::fmt;
use std::io::{self, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use serde_json::Map;
use tracing::subscriber::{DefaultGuard, SetGlobalDefaultError};
use tracing::{Dispatch, Event, Metadata, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use turnfence_model::fence::{self, FenceMachine};
use turnfence_model::turn::{self, TurnMachine};

use crate::live::Summary;
use crate::trace::canonical::read_line;
use crate::trace::{Finding, Machine};

mod fields;
mod judge;

use fields::Fields;
pub use judge::FINDING_TARGET;
use judge::{Judging, OnFinding};

/// The target of the events the recorder writes: `tracing::info!(target: "turnfence", …)`.
pub const TARGET: &str = "turnfence";

/// How many rejections a [`Recording`] keeps the reasons of (it counts every one).
const KEPT_REJECTIONS: usize = 64;

/// Where `at` comes from: milliseconds on a clock the caller chooses.
pub trait Clock: Send + Sync + 'static {
    fn now_ms(&self) -> u64;
}

/// Any `Fn() -> u64` is a clock: a runtime's virtual time, a test's counter.
impl<F: Fn() -> u64 + Send + Sync + 'static> Clock for F {
    fn now_ms(&self) -> u64 {
        self()
    }
}

/// A clock that moves only when told: for tests. Clones share the time.
#[derive(Clone, Debug, Default)]
pub struct ManualClock(Arc<AtomicU64>);

impl ManualClock {
    pub fn new() -> ManualClock {
        ManualClock::default()
    }

    pub fn set(&self, ms: u64) {
        self.0.store(ms, Ordering::SeqCst);
    }

    pub fn advance(&self, ms: u64) {
        self.0.fetch_add(ms, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }
}

/// Real time: milliseconds since [`MonotonicClock::start`]. The recorder reads it only when its
/// caller passes it.
#[derive(Clone, Copy, Debug)]
pub struct MonotonicClock {
    start: std::time::Instant,
}

impl MonotonicClock {
    pub fn start() -> MonotonicClock {
        #[allow(clippy::disallowed_methods)]
        // A real system's trace is on its real time, asked for.
        let start = std::time::Instant::now();
        MonotonicClock { start }
    }
}

impl Clock for MonotonicClock {
    fn now_ms(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX)
    }
}

/// An in-memory writer whose clones share one buffer: record a trace in a test, then read it.
#[derive(Clone, Debug, Default)]
pub struct SharedBuffer(Arc<Mutex<Vec<u8>>>);

impl SharedBuffer {
    pub fn new() -> SharedBuffer {
        SharedBuffer::default()
    }

    /// Everything written so far, as text.
    pub fn contents(&self) -> String {
        String::from_utf8_lossy(&lock(&self.0)).into_owned()
    }
}

impl Write for SharedBuffer {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        lock(&self.0).extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A lock whose holder panicked is still usable: the recorder never passes a panic on.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The `tracing` layer that writes `turnfence` events as canonical lines. Build it, choose the
/// meta line, then install it ([`Recorder::install`], [`Recorder::install_scoped`]) or put it
/// beside other layers (`tracing_subscriber::registry().with(recorder)`).
pub struct Recorder {
    state: Arc<Mutex<State>>,
}

/// What the recorder has done so far; read it while it records or after. Clones share it.
#[derive(Clone)]
pub struct Recording {
    state: Arc<Mutex<State>>,
}

/// A recorder installed for the current thread only (tests, current-thread runtimes); it stops
/// recording when dropped.
pub struct Scoped {
    pub recording: Recording,
    _guard: DefaultGuard,
}

/// Installs a recorder as the process's default subscriber: every thread's `turnfence` events
/// become lines of `writer`, timed by `clock`. Fails if a default is already set.
pub fn install(
    writer: impl Write + Send + 'static,
    clock: impl Clock,
) -> Result<Recording, SetGlobalDefaultError> {
    Recorder::new(writer, clock).install()
}

impl Recorder {
    pub fn new(writer: impl Write + Send + 'static, clock: impl Clock) -> Recorder {
        let state = State {
            writer: Box::new(writer),
            report: Box::new(io::stderr()),
            clock: Box::new(clock),
            meta: MetaWish::default(),
            started: false,
            lines: 0,
            rejected: 0,
            rejections: Vec::new(),
            judging: Judging::default(),
        };
        Recorder {
            state: Arc::new(Mutex::new(state)),
        }
    }

    /// The machine the events are of: their lines are validated against its types, and the
    /// meta line names it.
    pub fn machine(self, machine: Machine) -> Recorder {
        lock(&self.state).meta.machine = Some(machine);
        self
    }

    /// Declares output kinds the system records every time they happen (the meta line's
    /// `complete`). An unknown kind is reported and left out.
    pub fn complete<K: Into<String>>(self, kinds: impl IntoIterator<Item = K>) -> Recorder {
        let kinds = kinds.into_iter().map(Into::into).collect();
        lock(&self.state).meta.complete = Some(kinds);
        self
    }

    /// Declares the capture partial: it may end with turns unfinished (the meta line's
    /// `partial`).
    pub fn partial(self) -> Recorder {
        lock(&self.state).meta.partial = true;
        self
    }

    /// Where malformed events are reported, one line each (standard error unless told).
    pub fn report_to(self, report: impl Write + Send + 'static) -> Recorder {
        lock(&self.state).report = Box::new(report);
        self
    }

    /// Judges the trace as it is written: every line written, the meta line first, is fed to a
    /// live monitor ([`crate::live::Monitor`]) read as `check` reads the file, on the
    /// recorder's clock. Each finding, at the line that decides it, is emitted as a `tracing`
    /// warning of target [`FINDING_TARGET`] (fields `rule`, `session`, `line`, `at`, `since`,
    /// `ids`, `withdrawn`; the message is the finding's), to the subscriber the recorder is part
    /// of. [`Recording::finish_judging`] judges the sessions still open and gives the summary.
    pub fn judge(self) -> Recorder {
        lock(&self.state).judging.on = true;
        self
    }

    /// Judges as [`Recorder::judge`] does, and calls `on_finding` with each finding as it is
    /// given (a counter, an alert). It is called with no lock of the recorder held.
    pub fn on_finding(self, on_finding: impl Fn(&Finding) + Send + Sync + 'static) -> Recorder {
        let on_finding: OnFinding = Arc::new(on_finding);
        lock(&self.state).judging.on_finding = Some(on_finding);
        self.judge()
    }

    /// Calls `on_withdrawn` with each finding given before its session ended that the session's
    /// end does not hold (rare: a later line showed an output the walk had judged the model's).
    pub fn on_withdrawn(self, on_withdrawn: impl Fn(&Finding) + Send + Sync + 'static) -> Recorder {
        let on_withdrawn: OnFinding = Arc::new(on_withdrawn);
        lock(&self.state).judging.on_withdrawn = Some(on_withdrawn);
        self.judge()
    }

    pub fn recording(&self) -> Recording {
        Recording {
            state: Arc::clone(&self.state),
        }
    }

    /// Installs the recorder as the process's default subscriber (every thread).
    pub fn install(self) -> Result<Recording, SetGlobalDefaultError> {
        let recording = self.recording();
        tracing::subscriber::set_global_default(tracing_subscriber::registry().with(self))?;
        Ok(recording)
    }

    /// Installs the recorder as the current thread's default subscriber, until dropped.
    pub fn install_scoped(self) -> Scoped {
        let recording = self.recording();
        let guard = tracing::subscriber::set_default(tracing_subscriber::registry().with(self));
        Scoped {
            recording,
            _guard: guard,
        }
    }
}

impl<S: Subscriber> Layer<S> for Recorder {
    /// The subscriber the recorder is part of, kept weakly (it holds the recorder): where its
    /// warnings go.
    fn on_register_dispatch(&self, subscriber: &Dispatch) {
        lock(&self.state).judging.dispatch = Some(subscriber.downgrade());
    }

    /// Installed: the meta line goes first.
    fn on_layer(&mut self, _: &mut S) {
        lock(&self.state).start();
    }

    fn on_event(&self, event: &Event<'_>, _: Context<'_, S>) {
        let metadata = event.metadata();
        if metadata.target() != TARGET {
            return;
        }
        let mut fields = Fields::default();
        event.record(&mut fields);
        let told = {
            let mut state = lock(&self.state);
            state.record(fields, metadata);
            state.judging.told()
        };
        told.tell();
    }
}

impl Recording {
    /// Lines written, the meta line included.
    pub fn lines(&self) -> usize {
        lock(&self.state).lines
    }

    /// Events not written (malformed, or the writer failed), and meta settings left out.
    pub fn rejected(&self) -> usize {
        lock(&self.state).rejected
    }

    /// Why, for the first 64 rejections: each as reported.
    pub fn rejections(&self) -> Vec<String> {
        lock(&self.state).rejections.clone()
    }

    /// What live judging ([`Recorder::judge`]) found so far; `None` if the recorder does not
    /// judge.
    pub fn judged(&self) -> Option<Summary> {
        lock(&self.state).judging.summary()
    }

    /// Ends live judging: the sessions still open are judged as at the end of the file (a turn
    /// left open, an output a complete log never showed), each finding told as the others were,
    /// and the summary returned — what `check` of the written trace finds. `None` if the
    /// recorder does not judge, or judging already ended. Lines recorded later are written, not
    /// judged.
    pub fn finish_judging(&self) -> Option<Summary> {
        let (summary, told) = {
            let mut state = lock(&self.state);
            state.start();
            let summary = state.judging.finish();
            (summary, state.judging.told())
        };
        told.tell();
        summary
    }
}

impl fmt::Debug for Recording {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = lock(&self.state);
        f.debug_struct("Recording")
            .field("lines", &state.lines)
            .field("rejected", &state.rejected)
            .finish()
    }
}

/// The meta line asked for.
#[derive(Default)]
struct MetaWish {
    machine: Option<Machine>,
    complete: Option<Vec<String>>,
    partial: bool,
}

struct State {
    writer: Box<dyn Write + Send>,
    report: Box<dyn Write + Send>,
    clock: Box<dyn Clock>,
    meta: MetaWish,
    /// The meta line's moment has passed: it was written, or there was none to write.
    started: bool,
    lines: usize,
    rejected: usize,
    rejections: Vec<String>,
    judging: Judging,
}

impl State {
    fn machine(&self) -> Machine {
        self.meta.machine.unwrap_or(Machine::Turn)
    }

    /// Writes the meta line, once, before anything else.
    fn start(&mut self) {
        if std::mem::replace(&mut self.started, true) {
            return;
        }
        let mut meta = Map::new();
        if let Some(machine) = self.meta.machine {
            meta.insert("machine".into(), machine.name().into());
        }
        if let Some(kinds) = self.meta.complete.take() {
            let machine = self.machine();
            let (known, unknown): (Vec<String>, Vec<String>) =
                kinds.into_iter().partition(|k| known_output(machine, k));
            for k in unknown {
                let why = format!("`complete` names an unknown output kind {k:?}: left out");
                self.reject("the meta line", why);
            }
            meta.insert("complete".into(), known.into());
        }
        if self.meta.partial {
            meta.insert("partial".into(), true.into());
        }
        if !meta.is_empty() {
            let line = serde_json::json!({ "meta": meta }).to_string();
            let now = self.clock.now_ms();
            self.write(&line, "the meta line", now);
        }
    }

    fn record(&mut self, fields: Fields, metadata: &Metadata<'_>) {
        self.start();
        let origin = match (metadata.file(), metadata.line()) {
            (Some(file), Some(line)) => format!("event at {file}:{line}"),
            _ => format!("event {}", metadata.name()),
        };
        let at = self.clock.now_ms();
        let line = fields.line(at).and_then(|text| {
            let n = self.lines + 1;
            let read = match self.machine() {
                Machine::Turn => read_line::<TurnMachine>(&text, n).map(drop),
                Machine::Fence => read_line::<FenceMachine>(&text, n).map(drop),
            };
            read.map(|()| text).map_err(|e| e.message)
        });
        match line {
            Ok(text) => self.write(&text, &origin, at),
            Err(why) => self.reject(&origin, format!("not recorded: {why}")),
        }
    }

    /// Writes a line read at `now`, and judges it if asked to.
    fn write(&mut self, line: &str, origin: &str, now: u64) {
        let mut bytes = Vec::with_capacity(line.len() + 1);
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b'\n');
        let written = self
            .writer
            .write_all(&bytes)
            .and_then(|()| self.writer.flush());
        match written {
            Ok(()) => {
                self.lines += 1;
                self.judging.feed(line, now, &mut *self.report);
            }
            Err(e) => self.reject(origin, format!("not recorded: the writer failed: {e}")),
        }
    }

    fn reject(&mut self, origin: &str, why: String) {
        let said = format!("{origin}: {why}");
        // The report is best effort: a closed standard error must not take the host down.
        let _ = writeln!(self.report, "turnfence recorder: {said}");
        let _ = self.report.flush();
        self.rejected += 1;
        if self.rejections.len() < KEPT_REJECTIONS {
            self.rejections.push(said);
        }
    }
}

/// Whether a machine has an output of this kind (what `check` asks of `complete`).
fn known_output(machine: Machine, kind: &str) -> bool {
    let probe = serde_json::json!({ "output": kind });
    let error = match machine {
        Machine::Turn => serde_json::from_value::<turn::Output>(probe).err(),
        Machine::Fence => serde_json::from_value::<fence::Output>(probe).err(),
    };
    error.is_none_or(|e| !e.to_string().starts_with("unknown variant"))
}
