//! A small tokio turn manager that records its trace with turnfence's recorder.
//!
//! One conversation (`call-7`), three turns: a text turn that calls a tool and completes, a text
//! turn the client stops mid-stream (and stops once more after it ended), and an audio turn the
//! user barges in on. Each turn's model stream is a task of its own that hands the provider's
//! deltas to the delivery gate; a speaker task plays the audio frames; the client and the voice
//! detector send their messages to the manager's channel. It is a turn manager with its own
//! state, channels and cancel flags — nothing here asks turnfence's model what to do — and its
//! `tracing` events of target `turnfence` are its log.
//!
//! ```sh
//! cargo run -p turnfence-checks --example tokio_turn_manager -- OUT.jsonl
//! turnfence check OUT.jsonl      # CONFORMS
//! cargo run -p turnfence-checks --example tokio_turn_manager -- OUT.jsonl --bug late-delivery
//! turnfence check OUT.jsonl      # no_late_delivery, at the line of the delta sent after the stop
//! ```
//!
//! The recorder also judges the trace as it writes it: each finding is counted by the callback
//! the manager installs, and printed on standard error as it is given, from the recorder's
//! warning event (`warning: no_late_delivery at line 25 …` with the bug, nothing without).
//!
//! Time is tokio's, paused: the runtime has one thread and, whenever every task waits, moves its
//! clock straight to the next timer. A run takes no real time and writes the same bytes every
//! time; the recorder's clock reads that virtual time, and so does its live judge.

use std::collections::{BTreeMap, VecDeque};
use std::io::Write;
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::runtime::Runtime;
use tokio::sync::{mpsc, watch, Notify};
use tokio::time::{sleep, sleep_until, Instant};
use tracing_subscriber::layer::SubscriberExt;
use turnfence_checks::recorder::Recorder;
use turnfence_checks::trace::Finding;

/// The conversation, as the trace names it.
pub const SESSION: &str = "call-7";

/// What this manager logs on every path: the gate logs each delivery, the stop handler each
/// answer, and `Session::settle` ends every turn.
pub const COMPLETE: [&str; 3] = ["delivered", "stop_answered", "terminal"];

/// How long the speaker takes to play one audio frame.
const FRAME_MS: u64 = 20;

/// Records one event of this conversation.
macro_rules! record {
    ($($field:tt)*) => {
        tracing::info!(target: "turnfence", session = SESSION, $($field)*)
    };
}

#[path = "session.rs"]
mod session;
use session::Session;

#[path = "warnings.rs"]
mod warnings;
pub use warnings::Warnings;

/// A planted bug.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bug {
    /// The stream task checks the stop flag at the head of its loop, waits for the next delta,
    /// then hands it to a gate that checks only the generation: a stop that comes during the
    /// wait lets one more delta through.
    LateDelivery,
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (out, bug) = match args.as_slice() {
        [out] => (out, None),
        [out, flag, name] if flag == "--bug" && name == "late-delivery" => {
            (out, Some(Bug::LateDelivery))
        }
        _ => {
            eprintln!("usage: tokio_turn_manager OUT.jsonl [--bug late-delivery]");
            return ExitCode::from(2);
        }
    };
    let file = match std::fs::File::create(out) {
        Ok(file) => file,
        Err(e) => {
            eprintln!("{out}: {e}");
            return ExitCode::from(2);
        }
    };
    let (runtime, start) = runtime();
    // Every `turnfence` event from here on is a line of OUT, judged as it is written; each
    // finding is counted, and printed by the warnings layer.
    let findings = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&findings);
    let recorder = recorder(file, start, move |_| {
        counter.fetch_add(1, Ordering::SeqCst);
    });
    let recording = recorder.recording();
    let subscriber = tracing_subscriber::registry()
        .with(recorder)
        .with(Warnings::to(std::io::stderr()));
    if tracing::subscriber::set_global_default(subscriber).is_err() {
        eprintln!("a tracing subscriber is already installed");
        return ExitCode::from(2);
    }
    runtime.block_on(converse(bug));
    // The end of the trace: what only the end decides is judged too.
    let summary = recording.finish_judging().unwrap_or_default();
    let found = findings.load(Ordering::SeqCst);
    let (lines, at_end) = (recording.lines(), summary.finding_count);
    println!("{out}: {lines} lines; {found} findings as it ran, {at_end} at its end");
    if recording.rejected() > 0 {
        eprintln!("{} events not recorded", recording.rejected());
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

/// The manager's recorder: its trace written to `writer` on the runtime's virtual time since
/// `start`, judged as it is written, `on_finding` called with each finding as it is given.
pub fn recorder(
    writer: impl Write + Send + 'static,
    start: Instant,
    on_finding: impl Fn(&Finding) + Send + Sync + 'static,
) -> Recorder {
    Recorder::new(writer, virtual_ms(start))
        .complete(COMPLETE)
        .on_finding(on_finding)
}

/// The runtime — one thread, time paused — and the instant its clock starts at.
pub fn runtime() -> (Runtime, Instant) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a current-thread runtime builds");
    let start = runtime.block_on(async { Instant::now() });
    (runtime, start)
}

/// The recorder's clock: milliseconds of the runtime's virtual time since `start`.
pub fn virtual_ms(start: Instant) -> impl Fn() -> u64 + Send + Sync + 'static {
    move || u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// The conversation, from the first user turn to the hang-up.
pub async fn converse(bug: Option<Bug>) {
    let (to_manager, mut inbox) = mpsc::unbounded_channel();
    let session = Shared::default();
    tokio::spawn(client(to_manager.clone()));
    tokio::spawn(voice_detector(to_manager.clone()));
    tokio::spawn(speaker(session.clone(), to_manager.clone()));
    let manager = Manager {
        session,
        to_manager,
        bug,
    };
    while let Some(message) = inbox.recv().await {
        if !manager.handle(message) {
            return;
        }
    }
}

/// What reaches the manager.
enum Message {
    /// The client sends a user turn.
    UserTurn {
        turn: String,
        mode: Mode,
        prompt: &'static str,
    },
    /// The client presses stop.
    Stop { turn: String, request_id: String },
    /// The voice detector hears the user speak.
    Speech { confidence: f64 },
    /// A child of a turn finished its work (`completed`) or stopped at a checkpoint.
    ChildEnded {
        turn: String,
        child: &'static str,
        completed: bool,
    },
    /// The model finished its answer.
    ModelDone { turn: String },
    /// The speaker played a frame of the turn.
    Played { turn: String },
    /// The client hung up.
    Hangup,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Text,
    Audio,
}

/// The client: two text turns, a stop (and a second press after the turn ended), an audio
/// turn, the hang-up.
async fn client(to_manager: mpsc::UnboundedSender<Message>) {
    let start = Instant::now();
    let script = [
        (0, turn("t1", Mode::Text, "Where is my order?")),
        (200, turn("t2", Mode::Text, "Tell me a story.")),
        (250, stop("t2", "stop-1")),
        (300, stop("t2", "stop-2")),
        (400, turn("t3", Mode::Audio, "Read me the news.")),
        (600, Message::Hangup),
    ];
    for (at_ms, message) in script {
        sleep_until(start + Duration::from_millis(at_ms)).await;
        if to_manager.send(message).is_err() {
            return;
        }
    }
}

fn turn(turn: &str, mode: Mode, prompt: &'static str) -> Message {
    Message::UserTurn {
        turn: turn.into(),
        mode,
        prompt,
    }
}

fn stop(turn: &str, request_id: &str) -> Message {
    Message::Stop {
        turn: turn.into(),
        request_id: request_id.into(),
    }
}

/// The voice detector: the user speaks over the audio turn.
async fn voice_detector(to_manager: mpsc::UnboundedSender<Message>) {
    sleep(Duration::from_millis(470)).await;
    let _ = to_manager.send(Message::Speech { confidence: 0.92 });
}

/// A piece of the model's answer: how long after the previous it comes, its text, its frames.
struct Piece {
    after_ms: u64,
    text: &'static str,
    frames: u32,
}

/// The model provider: a prompt's answer as a stream of pieces, then its end.
fn provider(prompt: &str) -> mpsc::Receiver<Piece> {
    let piece = |after_ms, text, frames| Piece {
        after_ms,
        text,
        frames,
    };
    let answer = match prompt {
        "Where is my order?" => vec![
            piece(20, "Your order ", 0),
            piece(20, "shipped on ", 0),
            piece(20, "Monday.", 0),
        ],
        "Tell me a story." => vec![
            piece(20, "Once ", 0),
            piece(20, "upon ", 0),
            piece(20, "a time ", 0),
            piece(20, "there was ", 0),
        ],
        _ => vec![
            piece(20, "Markets ", 2),
            piece(30, "rose ", 2),
            piece(35, "today.", 2),
        ],
    };
    let (tx, rx) = mpsc::channel(4);
    tokio::spawn(async move {
        for piece in answer {
            sleep(Duration::from_millis(piece.after_ms)).await;
            if tx.send(piece).await.is_err() {
                return; // The stream stopped listening.
            }
        }
        sleep(Duration::from_millis(10)).await;
    });
    rx
}

/// The conversation's state, shared by the manager, the stream tasks (through the gate) and
/// the speaker. Locked briefly, never across an await.
#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Session>>);

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Session> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

struct Manager {
    session: Shared,
    to_manager: mpsc::UnboundedSender<Message>,
    bug: Option<Bug>,
}

impl Manager {
    /// One message; false once the conversation is over.
    fn handle(&self, message: Message) -> bool {
        match message {
            Message::UserTurn { turn, mode, prompt } => self.user_turn(turn, mode, prompt),
            Message::Stop { turn, request_id } => self.session.lock().stop(&turn, &request_id),
            Message::Speech { confidence } => self.session.lock().speech(confidence),
            Message::ChildEnded {
                turn,
                child,
                completed,
            } => {
                let running = self.session.lock().child_ended(&turn, child);
                // The order lookup feeds the model's answer.
                if completed && child == "lookup" && running {
                    self.start_model(&turn, "Where is my order?");
                }
            }
            Message::ModelDone { turn } => {
                let mut session = self.session.lock();
                if let Some(t) = session.turns.get_mut(&turn) {
                    t.model_done = true;
                }
                session.child_ended(&turn, "llm");
            }
            Message::Played { turn } => self.session.lock().settle(&turn),
            Message::Hangup => {
                record!(session_end = true);
                return false;
            }
        }
        true
    }

    fn user_turn(&self, turn: String, mode: Mode, prompt: &'static str) {
        let cancel = {
            let mut session = self.session.lock();
            let Some(cancel) = session.accept(&turn, mode) else {
                return;
            };
            cancel
        };
        if prompt == "Where is my order?" {
            // First the tool; the model answers with what it found.
            self.session.lock().spawn(&turn, "lookup");
            record!(input = "spawn", turn = %turn, child = "lookup",
                kind.tool.name = "order_lookup", kind.tool.cancellable = true);
            tokio::spawn(order_lookup(turn, cancel, self.to_manager.clone()));
        } else {
            self.start_model(&turn, prompt);
        }
    }

    fn start_model(&self, turn: &str, prompt: &str) {
        let (generation, cancel) = {
            let mut session = self.session.lock();
            session.spawn(turn, "llm");
            let t = &session.turns[turn];
            (t.generation, t.cancel.subscribe())
        };
        record!(input = "spawn", turn = %turn, child = "llm", kind = "model");
        let stream = Stream {
            turn: turn.to_owned(),
            generation,
            gate: self.session.clone(),
            cancel,
            to_manager: self.to_manager.clone(),
            bug: self.bug,
        };
        tokio::spawn(stream.run(provider(prompt)));
    }
}

/// The order lookup tool: a checkpoint where it looks for a cancel, then its answer.
async fn order_lookup(
    turn: String,
    cancel: watch::Receiver<bool>,
    to_manager: mpsc::UnboundedSender<Message>,
) {
    sleep(Duration::from_millis(20)).await;
    record!(input = "checkpoint", turn = %turn, child = "lookup", phase = "fetched");
    let cancelled = *cancel.borrow();
    if cancelled {
        record!(output = "child_cancelled", turn = %turn, child = "lookup", checkpoint = "fetched");
    } else {
        sleep(Duration::from_millis(15)).await;
        record!(input = "child_completed", turn = %turn, child = "lookup");
    }
    let _ = to_manager.send(Message::ChildEnded {
        turn,
        child: "lookup",
        completed: !cancelled,
    });
}

/// A turn's model stream: the provider's pieces to the delivery gate, one by one, with a
/// checkpoint between them where the stream looks for its cancel.
struct Stream {
    turn: String,
    generation: u64,
    gate: Shared,
    cancel: watch::Receiver<bool>,
    to_manager: mpsc::UnboundedSender<Message>,
    bug: Option<Bug>,
}

impl Stream {
    async fn run(self, mut pieces: mpsc::Receiver<Piece>) {
        let (turn, generation) = (self.turn.as_str(), self.generation);
        let mut seq = 0;
        loop {
            if *self.cancel.borrow() {
                record!(
                    input = "checkpoint",
                    turn,
                    child = "llm",
                    phase = "between_chunks"
                );
                record!(
                    output = "child_cancelled",
                    turn,
                    child = "llm",
                    checkpoint = "between_chunks"
                );
                let _ = self.to_manager.send(Message::ChildEnded {
                    turn: self.turn.clone(),
                    child: "llm",
                    completed: false,
                });
                return;
            }
            // The wait: the stop checked above may come during it.
            let Some(piece) = pieces.recv().await else {
                record!(input = "model_done", turn);
                let _ = self.to_manager.send(Message::ModelDone {
                    turn: self.turn.clone(),
                });
                return;
            };
            seq += 1;
            let frames = (piece.frames > 0).then_some(piece.frames);
            record!(
                input = "delta",
                turn,
                generation,
                seq,
                text = piece.text,
                frames
            );
            // Correct: the gate checks the stop itself, as it delivers, under the session's lock.
            let check_stop = self.bug != Some(Bug::LateDelivery);
            self.gate
                .lock()
                .offer(turn, generation, seq, piece.frames, check_stop);
        }
    }
}

/// The speaker: plays the head frame every `FRAME_MS` while there are frames.
async fn speaker(session: Shared, to_manager: mpsc::UnboundedSender<Message>) {
    let ready = session.lock().speaker.clone();
    loop {
        if session.lock().playback.is_empty() {
            ready.notified().await;
            continue;
        }
        sleep(Duration::from_millis(FRAME_MS)).await;
        let played = session.lock().play_head();
        if let Some(turn) = played {
            let _ = to_manager.send(Message::Played { turn });
        }
    }
}
