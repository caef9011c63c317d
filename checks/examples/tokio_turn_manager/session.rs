//! The turn manager's state: its turns, their phases and cancel flags, the audio waiting for the
//! speaker, and what each message does to them (recorded as it happens).

use super::*;

#[derive(Default)]
pub(crate) struct Session {
    /// Only this generation's deltas reach the user.
    pub(crate) active_generation: u64,
    pub(crate) highest_generation: u64,
    pub(crate) turns: BTreeMap<String, Turn>,
    /// Audio frames waiting for the speaker: (turn, generation, seq).
    pub(crate) playback: VecDeque<(String, u64, u64)>,
    pub(crate) speaker: Arc<Notify>,
}

pub(crate) struct Turn {
    pub(crate) generation: u64,
    pub(crate) mode: Mode,
    pub(crate) phase: Phase,
    pub(crate) last_seq: u64,
    /// Children not yet ended.
    pub(crate) running: Vec<&'static str>,
    pub(crate) model_done: bool,
    pub(crate) cancel: watch::Sender<bool>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    Running,
    Stopping,
    Ended(&'static str),
}

impl Session {
    /// A new turn, unless one is running; its cancel flag.
    pub(crate) fn accept(&mut self, turn: &str, mode: Mode) -> Option<watch::Receiver<bool>> {
        // Above every generation used; a barge-in's fenced one included.
        let generation = self.highest_generation + 1;
        let mode_name = if mode == Mode::Audio { "audio" } else { "text" };
        record!(input = "accept", turn, generation, mode = mode_name);
        if self.turns.values().any(|t| t.phase == Phase::Running) {
            record!(output = "turn_refused", turn, reason = "active_turn_exists");
            return None;
        }
        let (cancel, flag) = watch::channel(false);
        self.active_generation = generation;
        self.highest_generation = generation;
        let t = Turn {
            generation,
            mode,
            phase: Phase::Running,
            last_seq: 0,
            running: Vec::new(),
            model_done: false,
            cancel,
        };
        self.turns.insert(turn.to_owned(), t);
        Some(flag)
    }

    pub(crate) fn spawn(&mut self, turn: &str, child: &'static str) {
        if let Some(t) = self.turns.get_mut(turn) {
            t.running.push(child);
        }
    }

    /// The client's stop: answered, and the turn's children told to stop.
    pub(crate) fn stop(&mut self, turn: &str, request_id: &str) {
        record!(input = "stop", turn, request_id);
        let Some(t) = self.turns.get(turn) else {
            return;
        };
        match t.phase {
            Phase::Running => {
                record!(
                    output = "stop_answered",
                    turn,
                    request_id,
                    answer = "requested"
                );
                self.cancel(turn);
            }
            Phase::Stopping => {
                record!(
                    output = "stop_answered",
                    turn,
                    request_id,
                    answer = "already_requested"
                );
            }
            Phase::Ended(state) => {
                record!(
                    output = "stop_answered",
                    turn,
                    request_id,
                    answer.already_terminal.state = state
                );
            }
        }
    }

    /// Barge-in: the user speaks over an audio turn that is speaking. Its frames are cleared,
    /// its generation fenced off, the turn cancelled.
    pub(crate) fn speech(&mut self, confidence: f64) {
        record!(input = "speech_started", confidence);
        let active = self.active_generation;
        let playback = &self.playback;
        let speaking = self.turns.iter().find(|(id, t)| {
            t.phase == Phase::Running
                && t.mode == Mode::Audio
                && t.generation == active
                && (t.last_seq > 0 || playback.iter().any(|(turn, _, _)| turn == *id))
        });
        let Some((turn, t)) = speaking else { return };
        let (turn, generation) = (turn.clone(), t.generation);
        let frames = self.playback.len();
        self.playback.clear();
        record!(output = "playback_cleared", turn = %turn, frames);
        self.active_generation = generation + 1;
        record!(output = "generation_fenced", turn = %turn, generation);
        self.cancel(&turn);
    }

    pub(crate) fn cancel(&mut self, turn: &str) {
        let before = self.playback.len();
        self.playback.retain(|(t, _, _)| t != turn);
        let frames = before - self.playback.len();
        if frames > 0 {
            record!(output = "playback_cleared", turn, frames);
        }
        let Some(t) = self.turns.get_mut(turn) else {
            return;
        };
        t.phase = Phase::Stopping;
        for child in &t.running {
            record!(output = "child_cancel_requested", turn, child);
        }
        t.cancel.send_replace(true);
        self.settle(turn);
    }

    /// A child ended; whether its turn still runs.
    pub(crate) fn child_ended(&mut self, turn: &str, child: &str) -> bool {
        let Some(t) = self.turns.get_mut(turn) else {
            return false;
        };
        t.running.retain(|c| *c != child);
        self.settle(turn);
        self.turns
            .get(turn)
            .is_some_and(|t| t.phase == Phase::Running)
    }

    /// Ends the turn once nothing is left to wait for: no child running, no frame to play.
    pub(crate) fn settle(&mut self, turn: &str) {
        let buffered = self.playback.iter().any(|(t, _, _)| t == turn);
        let Some(t) = self.turns.get_mut(turn) else {
            return;
        };
        let state = match t.phase {
            Phase::Running if t.model_done && t.running.is_empty() && !buffered => "completed",
            Phase::Stopping if t.running.is_empty() => "cancelled",
            _ => return,
        };
        t.phase = Phase::Ended(state);
        record!(output = "terminal", turn, state);
    }

    /// The delivery gate: a delta reaches the user only if its generation is the active one,
    /// its turn is not stopping or over, and it is the next in order. `check_stop` false is the
    /// planted bug's gate, which leaves the stop to the stream task.
    pub(crate) fn offer(
        &mut self,
        turn: &str,
        generation: u64,
        seq: u64,
        frames: u32,
        check_stop: bool,
    ) {
        let active = self.active_generation;
        let Some(t) = self.turns.get_mut(turn) else {
            return;
        };
        let dropped = match t.phase {
            _ if generation != t.generation || generation != active => Some("stale_generation"),
            Phase::Ended(_) => Some("terminal"),
            Phase::Stopping if check_stop => Some("cancel_requested"),
            _ if seq != t.last_seq + 1 => Some("out_of_order"),
            _ => None,
        };
        if let Some(reason) = dropped {
            record!(output = "late_dropped", turn, generation, seq, reason);
            return;
        }
        t.last_seq = seq;
        record!(output = "delivered", turn, generation, seq);
        if frames > 0 {
            for _ in 0..frames {
                self.playback.push_back((turn.to_owned(), generation, seq));
            }
            self.speaker.notify_one();
        }
    }

    /// The speaker consumed the head of the playback buffer: the frame it played, if any.
    pub(crate) fn play_head(&mut self) -> Option<String> {
        let (turn, generation, seq) = self.playback.pop_front()?;
        record!(input = "frame_played");
        record!(output = "played", turn = %turn, generation, seq);
        Some(turn)
    }
}
