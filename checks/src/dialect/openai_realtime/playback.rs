//! What the user heard: server VAD's speech, the app's player (its positions, its clear) and the
//! client's truncation.

use turnfence_model::turn::Input;
use turnfence_model::turn::{InputKind, Invariant, Output, TurnMachine};
use turnfence_model::{Invariant as _, Millis};

use super::{Events, Line, Session};
use crate::trace::turn_facts::Fact;
use crate::trace::{Event, InputError};

impl Line<'_> {
    /// Server VAD heard the user. Where it interrupts (`interrupt_response`, on by default), the
    /// speech is held until the app shows what it did about it: a player's position read as it
    /// stops counts as played before the stop, and the app's clear is the cut. Where it does
    /// not, the speech interrupts nothing of itself: the app's own clear or truncation (or its
    /// cancel) is the interruption, if it makes one.
    pub(super) fn speech_started(&self, s: &mut Session) {
        if s.vad_interrupts {
            s.held.get_or_insert((self.at, self.line));
        }
    }

    /// The held speech, given now, as of its own line and time (or the last time the machine
    /// saw, where a position read at the stop came later), then the stop's reactions held with
    /// it, each as of its own line and at this time: the playback buffer the speech clears is
    /// cleared before what this line does.
    pub(super) fn release_speech(&self, s: &mut Session, not_before: Millis) -> Events {
        let Some((at, line)) = s.held.take() else {
            return Vec::new();
        };
        s.read_at_stop.clear();
        self.cut.set(true);
        let now = self
            .machine
            .map_or(at, |m| m.session().now)
            .max(at)
            .max(s.last_at)
            .max(not_before);
        let mut out = vec![Event::Held {
            line,
            event: Box::new(self.speech(now)),
        }];
        let now = now.max(self.at);
        out.extend(s.reactions.drain(..).map(|e| retimed(e, now)));
        out
    }

    fn speech(&self, at: Millis) -> Event<TurnMachine> {
        Event::Input {
            session: self.session.to_owned(),
            input: Input::new(
                at,
                InputKind::SpeechStarted {
                    confidence: 1.0,
                    since: None,
                },
            ),
        }
    }

    /// The response a player event is of, and the key its position is kept under: the item it
    /// names (what players track, and what a truncation names), else the response.
    fn player_subject(&self, s: &mut Session) -> Result<(String, String), InputError> {
        s.player = true;
        if let Some(item) = self.str_at(&["item_id"]) {
            let turn = match (s.items.get(item), self.str_at(&["response_id"])) {
                (Some(turn), _) => turn.clone(),
                (None, Some(turn)) => {
                    s.items.insert(item.to_owned(), turn.to_owned());
                    turn.to_owned()
                }
                (None, None) => {
                    return Err(self.error_at(format!(
                        "{} of item {item:?}, which no response's output named: add its \
                         `response_id`",
                        self.kind()
                    )))
                }
            };
            return Ok((item.to_owned(), turn));
        }
        match self.str_at(&["response_id"]) {
            Some(turn) => Ok((turn.to_owned(), turn.to_owned())),
            None => Err(self.error_at(format!(
                "{} needs the `item_id` or the `response_id` it plays",
                self.kind()
            ))),
        }
    }

    /// `playback.started`: the app's player began an item's audio (nothing played yet).
    pub(super) fn started(&self, s: &mut Session) -> Result<Events, InputError> {
        let (key, turn) = self.player_subject(s)?;
        Ok(self.begins(s, key, &turn))
    }

    /// The player begins `key`'s audio (its start, or its first position): judged where it is
    /// an out-of-band response's.
    fn begins(&self, s: &mut Session, key: String, turn: &str) -> Events {
        if !s.begun.insert(key) {
            Vec::new()
        } else if s.out_of_band(turn) {
            self.heard_beside(s, turn)
        } else {
            self.heard_over(s, turn)
        }
    }

    /// A conversation's response began to play while an out-of-band response the player had
    /// begun still had audio queued: two heard at once (the player, one queue in arrival
    /// order, interleaves them).
    fn heard_over(&self, s: &Session, turn: &str) -> Events {
        let mut queued: Vec<(&String, u64)> = s
            .responses
            .iter()
            .filter(|(id, r)| r.out_of_band && self.begun_any(s, id))
            .map(|(id, r)| (id, Self::queued_of(s, id, r)))
            .filter(|(_, ms)| *ms > 0)
            .collect();
        queued.sort();
        queued
            .into_iter()
            .map(|(other, left)| Event::Fact {
                session: self.session.to_owned(),
                at: self.at,
                fact: Fact::HeardOver {
                    turn: turn.to_owned(),
                    other: other.clone(),
                    left,
                },
            })
            .collect()
    }

    /// The player began some audio of response `id` (its own key, or an item of it).
    fn begun_any(&self, s: &Session, id: &str) -> bool {
        s.begun
            .iter()
            .any(|key| key == id || s.items.get(key).is_some_and(|r| r == id))
    }

    /// What an out-of-band response has queued in the player: received, less what the player's
    /// positions say it played and what a clear dropped.
    fn queued_of(s: &Session, id: &str, r: &super::Response) -> u64 {
        r.audio_ms
            .saturating_sub(Self::played_of(s, id))
            .saturating_sub(r.dropped_ms)
    }

    /// What the player's positions say it played of response `id`.
    fn played_of(s: &Session, id: &str) -> u64 {
        s.positions
            .iter()
            .filter(|(key, _)| *key == id || s.items.get(*key).is_some_and(|r| r == id))
            .map(|(_, ms)| *ms)
            .sum()
    }

    /// The app's `playback.played`: its player reached `audio_end_ms` into the item's (or the
    /// response's) audio — the speaker consumed what lies between, and played it.
    pub(super) fn played(&self, s: &mut Session) -> Result<Events, InputError> {
        let (key, turn) = self.player_subject(s)?;
        let position = self
            .event
            .audio_end_ms
            .ok_or_else(|| self.error_at("playback.played needs `audio_end_ms`"))?;
        self.advance(s, key, turn, position)
    }

    /// The player moved from its last position in `key`'s audio to `position`: those frames
    /// played. What the playback buffer holds of the response is consumed; what it does not
    /// hold (audio the app was to drop: cleared, or of a response it stopped) played all the
    /// same, after the stop.
    fn advance(
        &self,
        s: &mut Session,
        key: String,
        turn: String,
        position: u64,
    ) -> Result<Events, InputError> {
        let r = s.responses.get(&turn).ok_or_else(|| {
            self.error_at(format!(
                "playback of {turn:?}, which no response.created began"
            ))
        })?;
        let (generation, out_of_band) = (r.generation, r.out_of_band);
        let last = s.positions.entry(key.clone()).or_default();
        if position < *last {
            return Err(self.error_at(format!(
                "the played position went back from {} to {position} ms",
                *last
            )));
        }
        let frames = position - *last;
        *last = position;
        if frames == 0 {
            return Ok(Vec::new());
        }
        let frames = u32::try_from(frames).map_err(|_| self.error_at("position too large"))?;
        if out_of_band {
            return Ok(self.begins(s, key, &turn));
        }
        let queued = match self.machine {
            Some(m) if !self.cut.get() => m.session().playback.frames_of(&turn),
            _ => 0,
        };
        let mut out = Vec::new();
        if queued > 0 {
            out.push(self.input(InputKind::FramePlayed {
                frames: frames.min(queued),
            }));
        }
        out.push(self.observed(
            Output::Played {
                turn: turn.into(),
                generation,
                seq: 0,
                frames,
            },
            &["seq", "frames"],
        ));
        Ok(out)
    }

    /// An out-of-band response began to play: the conversation's newest response is named
    /// beside it, and the model judges whether that one had begun to play and still had audio
    /// to play (two heard at once) or not (one after the other).
    fn heard_beside(&self, s: &Session, turn: &str) -> Events {
        let newest = s
            .responses
            .iter()
            .filter(|(_, r)| !r.out_of_band)
            .max_by_key(|(_, r)| r.generation);
        let Some((other, _)) = newest else {
            return Vec::new();
        };
        vec![Event::Fact {
            session: self.session.to_owned(),
            at: self.at,
            fact: Fact::HeardBeside {
                turn: turn.to_owned(),
                other: other.clone(),
            },
        }]
    }

    /// The app's `playback.cleared` (or WebRTC's `output_audio_buffer.cleared`): the item's (or
    /// the response's) queued audio was dropped unplayed (`cleared_ms` of it, where stated), at
    /// the position `audio_end_ms` where it states one. This is the cut: a speech held till now
    /// is given here; with none, where the response still had audio to play, the app's clear is
    /// the interruption (server VAD that does not interrupt, a stop the user asked for).
    pub(super) fn cleared(&self, s: &mut Session) -> Result<Events, InputError> {
        let (key, turn) = self.player_subject(s)?;
        // The player drops its whole queue: an out-of-band response's audio queued goes too.
        let oob: Vec<String> = s
            .responses
            .iter()
            .filter(|(_, r)| r.out_of_band)
            .map(|(id, _)| id.clone())
            .collect();
        for id in oob {
            let played = Self::played_of(s, &id);
            if let Some(r) = s.responses.get_mut(&id) {
                r.dropped_ms = r.audio_ms.saturating_sub(played);
            }
        }
        if s.out_of_band(&turn) {
            return Ok(self.cleared_behind(s));
        }
        let mut out = match self.event.audio_end_ms {
            Some(position) => self.advance(s, key, turn.clone(), position)?,
            None => Vec::new(),
        };
        let left = self.left(&turn, &out);
        if self.kind() == "output_audio_buffer.cleared" && left == 0 && self.runs_no_longer(&turn) {
            // The server's WebRTC clear of a response already stopped (its cancel given, or its
            // done) with nothing of it queued: the server's buffer drops nothing the user was
            // still to hear (the scripted server, as the API, clears it at a cancelled
            // response's done), and it is no cut of its own. Read and skipped, as it is in a
            // session whose app reports its player, which a session's first lines may not yet
            // show (generated session `false_alarm_server_clear_before_first_play`).
            return Ok(out);
        }
        if s.held.is_some() {
            // The cut, after the position read at it.
            out.extend(self.release_speech(s, self.at));
        } else if self.cuts(s, &turn, &out) {
            out.push(self.speech(self.at));
            self.cut.set(true);
        }
        let stated = self.event.cleared_ms;
        let again = !s.cleared.insert(turn.clone());
        if left == 0 && (stated == Some(0) || stated.is_none() && again) {
            // A stop with nothing of it left to drop (its audio all played), or the clear
            // already shown, reported again from the other side (the server's WebRTC
            // `output_audio_buffer.cleared` after the app's own clear), saying nothing more.
            return Ok(out);
        }
        let mut frames = stated.map_or(0, |ms| u32::try_from(ms).unwrap_or(u32::MAX));
        // The player drops its whole queue at a clear and says so once, naming what it was
        // playing: past the named response's own queued audio, what it states is an out-of-band
        // response's, queued behind it.
        let beside = u64::from(frames.saturating_sub(left));
        if beside > 0 && beside <= self.out_of_band_queued(s) {
            frames = left;
        }
        let wildcards: &'static [&'static str] = if stated.is_some() { &[] } else { &["frames"] };
        out.push(self.observed(
            Output::PlaybackCleared {
                turn: turn.into(),
                frames,
            },
            wildcards,
        ));
        Ok(out)
    }

    /// A clear that names an out-of-band response's item: the player drops its whole queue, and
    /// a conversation's response queued behind it goes too (the app's player, one queue in
    /// arrival order as the SDK's demo, clears it all at the SDK's `audio_interrupted`). Where
    /// the playback buffer holds audio of one, this is the cut: the held speech, else the
    /// app's own interruption, then each such response's clear. Where it holds none, the clear
    /// is the out-of-band response's alone, nothing of the conversation's turns.
    fn cleared_behind(&self, s: &mut Session) -> Events {
        let Some(m) = self.machine.filter(|_| !self.cut.get()) else {
            return Vec::new();
        };
        let mut behind: Vec<(u64, String)> = s
            .responses
            .iter()
            .filter(|(id, r)| !r.out_of_band && m.session().playback.frames_of(id) > 0)
            .map(|(id, r)| (r.generation, id.clone()))
            .collect();
        if behind.is_empty() {
            return Vec::new();
        }
        behind.sort();
        let mut out = Vec::new();
        if s.held.is_some() {
            out.extend(self.release_speech(s, self.at));
        } else {
            out.push(self.speech(self.at));
            self.cut.set(true);
        }
        for (_, turn) in behind {
            s.cleared.insert(turn.clone());
            out.push(self.observed(
                Output::PlaybackCleared {
                    turn: turn.into(),
                    frames: 0,
                },
                &["frames"],
            ));
        }
        out
    }

    /// A clear or truncation cuts the response off: no speech was given at this line, and the
    /// response still runs, or the playback buffer holds more of it than the position just read
    /// consumed (`out`).
    fn cuts(&self, s: &Session, turn: &str, out: &Events) -> bool {
        let Some(m) = self.machine else {
            return false;
        };
        if self.cut.get() || s.held.is_some() {
            return false;
        }
        let running = m
            .session()
            .turns
            .iter()
            .any(|t| *t.id == *turn && t.phase.is_running());
        running || self.left(turn, out) > 0
    }

    /// The machine holds `turn` and it runs no longer (stopped or ended).
    fn runs_no_longer(&self, turn: &str) -> bool {
        self.machine.is_some_and(|m| {
            m.session()
                .turns
                .iter()
                .any(|t| *t.id == *turn && !t.phase.is_running())
        })
    }

    /// What the playback buffer holds of `turn` after this line's events so far (`out`).
    fn left(&self, turn: &str, out: &Events) -> u32 {
        let Some(m) = self.machine.filter(|_| !self.cut.get()) else {
            return 0;
        };
        let consumed: u32 = out
            .iter()
            .map(|e| match e {
                Event::Input { input, .. } => match input.kind {
                    InputKind::FramePlayed { frames } => frames,
                    _ => 0,
                },
                _ => 0,
            })
            .sum();
        m.session()
            .playback
            .frames_of(turn)
            .saturating_sub(consumed)
    }

    /// `conversation.item.truncate`: the item's response truncated to `audio_end_ms` heard. What
    /// was heard is the app's player's to say: in a session whose app reported no position, the
    /// truncation is not judged. A truncation that cuts the response off (as the clear does)
    /// with no interruption given yet is the app's own.
    pub(super) fn truncate(&self, s: &mut Session) -> Result<Events, InputError> {
        let item = self.need_str(&["item_id"])?;
        let heard = self
            .event
            .audio_end_ms
            .ok_or_else(|| self.error_at("conversation.item.truncate needs `audio_end_ms`"))?;
        let heard = u32::try_from(heard).map_err(|_| self.error_at("`audio_end_ms` too large"))?;
        // An item no audio delta named: truncated as itself, which no response is.
        let turn = s.items.get(&item).cloned().unwrap_or_else(|| item.clone());
        // `audio_end_ms` is a place in the item's audio; the model counts what the server keeps
        // of the whole response: the truncation cuts this item only, and the response's other
        // items stay as they are, each what the player read of it or, where more of it was
        // received (an item queued behind this one), all it was sent.
        let before: u64 = s
            .items
            .iter()
            .filter(|(key, of)| **key != item && **of == turn)
            .map(|(key, _)| {
                let played = s.positions.get(key).copied().unwrap_or(0);
                played.max(s.item_audio.get(key).copied().unwrap_or(0))
            })
            .sum();
        let heard = u32::try_from(u64::from(heard) + before)
            .map_err(|_| self.error_at("`audio_end_ms` too large"))?;
        if s.out_of_band(&turn) {
            // Not an item of the conversation: nothing the model keeps to truncate.
            return Ok(Vec::new());
        }
        let generation = s.responses.get(&turn).map_or(0, |r| r.generation);
        let mut out = Vec::new();
        // The app's own interruption, its truncation first (the SDK truncates as it tells the
        // app's player to stop): held as a speech is, so that the position the player reads as
        // it stops (its clear's, which the log writes after the truncation) counts as played
        // before it; the truncation is the stop's first reaction.
        let cuts = self.cuts(s, &turn, &out);
        if !s.player {
            out.push(Event::NotJudged {
                session: self.session.to_owned(),
                rule: Invariant::TruncatedToHeard.name(),
                ids: vec![turn.clone()],
                needs: "the app's player positions (`playback.played` lines): what was heard is \
                        the player's to say, and no line of this session reports it"
                    .to_owned(),
            });
        }
        // A truncation to all the response played, nothing of it left to play, drops nothing,
        // and the model, which truncates what it clears, gives none: the app's own interruption
        // of a response still generating (the SDK truncates the item it owns to its full length,
        // `_interrupt_audio_playback`), or of a finished one whose audio all played out, no line
        // having cleared it (the SDK's playback tracker still names the last item it played, and
        // truncates it where it ended), or server VAD's held speech over a response still
        // generating whose audio the player had all played (the `speech_started` branch of
        // `_handle_ws_event` truncates the tracker's item at its elapsed ms, all of it).
        let played_out = !s.cleared.contains(&turn)
            && self.machine.is_some_and(|m| {
                let t = m.session().turn(&turn);
                t.is_some_and(|t| t.phase.is_terminal())
            });
        let drops_nothing = (cuts || played_out || s.held.is_some())
            && self.machine.is_some_and(|m| {
                let s = m.session();
                s.playback.frames_of(&turn) == 0 && s.turn(&turn).is_some_and(|t| t.played == heard)
            });
        if !drops_nothing {
            out.push(self.observed(
                Output::Truncated {
                    turn: turn.into(),
                    generation,
                    heard,
                },
                &[],
            ));
        }
        if cuts {
            s.held = Some((self.at, self.line));
            let line = self.line;
            s.reactions.extend(out.drain(..).map(|event| Event::Held {
                line,
                event: Box::new(event),
            }));
        }
        Ok(out)
    }
}

impl Line<'_> {
    /// The milliseconds of the out-of-band responses' audio received and not yet played, as
    /// the player's positions say.
    fn out_of_band_queued(&self, s: &Session) -> u64 {
        s.responses
            .iter()
            .filter(|(_, r)| r.out_of_band)
            .map(|(id, r)| {
                let played: u64 = s
                    .positions
                    .iter()
                    .filter(|(key, _)| *key == id || s.items.get(*key) == Some(id))
                    .map(|(_, ms)| *ms)
                    .sum();
                r.audio_ms.saturating_sub(played)
            })
            .sum()
    }
}

/// `event`, held back, at `now` where it was earlier (the machine's clock moved on meanwhile).
fn retimed(event: Event<TurnMachine>, now: Millis) -> Event<TurnMachine> {
    match event {
        Event::Held { line, event } => Event::Held {
            line,
            event: Box::new(retimed(*event, now)),
        },
        Event::Input { session, mut input } => {
            input.at = input.at.max(now);
            Event::Input { session, input }
        }
        Event::Output {
            session,
            at,
            observed,
        } => Event::Output {
            session,
            at: at.max(now),
            observed,
        },
        Event::Fact { session, at, fact } => Event::Fact {
            session,
            at: at.max(now),
            fact,
        },
        other => other,
    }
}
