//! Replies and their audio: LLM responses and `TTSSpeakFrame`s, the TTS contexts that speak them,
//! the audio synthesized for each and the chunks the output transport plays, and interruptions.

use turnfence_model::turn::Mode;

use super::*;

impl Line<'_> {
    /// A new reply, not given to the model yet: interruptible unless the pipeline lets nothing
    /// interrupt or the frame says it is not. The TTS will speak it after those before it.
    fn new_reply(&self, s: &mut Pipecat, prefix: &str, uninterruptible: bool) -> usize {
        let generation = s.replies.len() as u64 + 1;
        s.replies.push(Reply {
            id: format!("{prefix}_{generation}"),
            generation,
            interruptible: s.options.allow_interruptions && !uninterruptible,
            seq: 0,
            accepted: false,
            done: false,
            llm_ended: false,
            speak: prefix == "speak",
            given: 0,
            spoken: 0,
            open_contexts: 0,
            late_seq: None,
            held: false,
            keeps: uninterruptible,
            dropped: false,
        });
        let r = s.replies.len() - 1;
        s.tts_order.push_back(r);
        r
    }

    /// The replies before `end` not given to the model yet are accepted, in order: a reply
    /// begins for the model where the TTS takes it up (or where it acts, or is interrupted), as
    /// Pipecat's TTS speaks one reply after another; the replies before it whose generation
    /// ended are done by then.
    pub(super) fn accept_up_to(&self, s: &mut Pipecat, end: usize) -> Events {
        let mut out = Vec::new();
        for r in 0..end.min(s.replies.len()) {
            // A reply held in the LLM's queue reaches the TTS only when its response ends.
            if s.replies[r].accepted || s.replies[r].dropped || s.replies[r].held {
                continue;
            }
            for q in 0..r {
                let before = &s.replies[q];
                if before.accepted && !before.done && (before.llm_ended || before.speak) {
                    out.push(self.done(s, q));
                }
            }
            let reply = &mut s.replies[r];
            reply.accepted = true;
            out.push(self.input(InputKind::Accept {
                turn: reply.id.clone().into(),
                generation: reply.generation,
                mode: Mode::Audio,
                deadline_ms: None,
                budget: None,
                interruptible: reply.interruptible,
            }));
        }
        out
    }

    /// The pipeline ends: every reply whose generation ended is done (0.0.84's TTS closes each
    /// sentence, so a response's last `TTSStoppedFrame` may come before its end).
    pub(super) fn finish_all(&self, s: &mut Pipecat) -> Events {
        let mut out = Vec::new();
        for r in 0..s.replies.len() {
            let reply = &s.replies[r];
            if reply.accepted && !reply.done && (reply.llm_ended || reply.speak) {
                out.push(self.done(s, r));
            }
        }
        out
    }

    /// The reply `r`, accepted (with those before it).
    pub(super) fn accept(&self, s: &mut Pipecat, r: usize) -> Events {
        self.accept_up_to(s, r + 1)
    }

    /// The reply's generation is over: its LLM response ended and the TTS spoke all of it.
    fn done(&self, s: &mut Pipecat, r: usize) -> Event<TurnMachine> {
        let reply = &mut s.replies[r];
        reply.done = true;
        s.tts_order.retain(|q| *q != r);
        self.input(InputKind::ModelDone {
            turn: reply.id.clone().into(),
        })
    }

    /// `LLMFullResponseStartFrame`: the LLM begins a response.
    pub(super) fn response_started(&self, s: &mut Pipecat) -> Events {
        let r = self.new_reply(s, "response", false);
        s.response = Some(r);
        s.last_response = Some(r);
        Vec::new()
    }

    /// `LLMTextFrame`: the response gives the TTS words.
    pub(super) fn llm_text(&self, s: &mut Pipecat) -> Events {
        if let Some(r) = s.response {
            s.replies[r].given += letters(self.f.text.as_deref());
        }
        Vec::new()
    }

    /// `TTSTextFrame`: the TTS spoke words of a reply (0.0.84 says so after the sentence's
    /// `TTSStoppedFrame`): it may be done with it.
    pub(super) fn tts_text(&self, s: &mut Pipecat) -> Events {
        let Some(r) = self.reply_of_context(s) else {
            return Vec::new();
        };
        s.replies[r].spoken += letters(self.f.text.as_deref());
        self.done_if_spoken(s, r)
    }

    /// `LLMFullResponseEndFrame`: the response's generation ended (cancelled or not: Pipecat
    /// ends an interrupted response too). It is done when the TTS has spoken what it was given
    /// — at once if it gave the TTS nothing since an interruption (the TTS dropped the rest).
    pub(super) fn response_ended(&self, s: &mut Pipecat) -> Events {
        let Some(r) = s.response.take() else {
            return Vec::new();
        };
        s.replies[r].llm_ended = true;
        // The LLM takes up the frames that waited for its response: on to the TTS.
        for reply in &mut s.replies {
            reply.held = false;
        }
        // The TTS is still speaking a reply before it: this one begins when the TTS takes it up.
        let behind = s.tts_order.iter().any(|q| *q < r);
        if behind {
            return Vec::new();
        }
        let mut out = self.accept(s, r);
        out.extend(self.done_if_spoken(s, r));
        out
    }

    /// A reply whose generation ended is done once the TTS has no context of it open and has
    /// spoken every word it was given: the TTS speaks one reply after another, so the next
    /// context is the next reply's.
    fn done_if_spoken(&self, s: &mut Pipecat, r: usize) -> Events {
        let reply = &s.replies[r];
        let ended = reply.llm_ended || reply.speak;
        if reply.done || !ended || reply.open_contexts > 0 || reply.spoken < reply.given {
            return Vec::new();
        }
        let mut out = self.accept(s, r);
        out.push(self.done(s, r));
        out
    }

    /// `TTSSpeakFrame`: the application speaks a text of its own, a reply without an LLM
    /// (`uninterruptible`: `TTSSpeakFrame(interruptible=False)`). Queued behind a reply the TTS
    /// still speaks (a speech queued back to back with another), it begins where the TTS takes
    /// it up: the TTS speaks one after the other, each its own context.
    ///
    /// One that comes while the LLM streams a response waits in the LLM's queue (`Reply::held`):
    /// the LLM generates inside its `process_frame` (`LLMService.process_frame`, the LLM
    /// services' `_process_context`), so its process task takes the next frame only when the
    /// response ends.
    pub(super) fn speak(&self, s: &mut Pipecat) -> Events {
        let r = self.new_reply(s, "speak", self.f.uninterruptible);
        s.replies[r].given = letters(self.f.text.as_deref());
        s.replies[r].held = s.response.is_some();
        if s.tts_order.iter().any(|q| *q < r) {
            return Vec::new();
        }
        self.accept(s, r)
    }

    /// `TTSStartedFrame`: a TTS context begins, for the first reply the TTS has still to speak
    /// (else the LLM response in progress, or the last one: an interrupted generation that
    /// streams on).
    pub(super) fn tts_started(&self, s: &mut Pipecat) -> Events {
        let Some(r) = s
            .tts_order
            .front()
            .copied()
            .or(s.response)
            .or(s.last_response)
        else {
            return Vec::new();
        };
        s.tts = Some(r);
        s.replies[r].open_contexts += 1;
        if let Some(c) = self.f.context_id.as_ref() {
            s.contexts.insert(c.clone(), r);
        }
        self.accept(s, r)
    }

    /// `TTSStoppedFrame`: the context is synthesized (0.0.84: a sentence of it).
    pub(super) fn tts_stopped(&self, s: &mut Pipecat) -> Events {
        let Some(r) = self.reply_of_context(s) else {
            return Vec::new();
        };
        let reply = &mut s.replies[r];
        reply.open_contexts = reply.open_contexts.saturating_sub(1);
        self.done_if_spoken(s, r)
    }

    fn reply_of_context(&self, s: &Pipecat) -> Option<usize> {
        match self.f.context_id.as_ref() {
            Some(c) => s.contexts.get(c).copied().or(s.tts),
            None => s.tts,
        }
    }

    /// `TTSAudioRawFrame`: audio synthesized for a reply (`played: false`, a delta of `ms`
    /// frames of a millisecond), or a chunk the output transport played (`played: true`).
    pub(super) fn audio(&self, s: &mut Pipecat) -> Result<Events, InputError> {
        let ms = self
            .f
            .ms
            .filter(|ms| ms.is_finite() && *ms >= 0.0 && *ms < 1e7)
            .ok_or_else(|| self.error("TTSAudioRawFrame needs `ms`: its length in ms"))?
            .round() as Millis;
        let played = self.f.played.ok_or_else(|| {
            self.error("TTSAudioRawFrame needs `played`: true for the output transport's chunks, false for synthesized audio")
        })?;
        if played {
            return Ok(self.played(s, ms));
        }
        let Some(r) = self.reply_of_context(s) else {
            return Err(self.error(
                "audio synthesized before any response or TTSSpeakFrame: no reply to speak it",
            ));
        };
        if ms == 0 {
            return Ok(Vec::new());
        }
        let mut out = self.accept(s, r);
        let reply = &mut s.replies[r];
        reply.seq += 1;
        let seq = reply.seq;
        s.queue.push_back(Queued { reply: r, seq, ms });
        out.push(self.input(InputKind::Delta {
            turn: reply.id.clone().into(),
            generation: reply.generation,
            seq,
            text: None,
            frames: u32::try_from(ms).unwrap_or(u32::MAX),
        }));
        Ok(out)
    }

    /// A chunk played: taken from the head of what was synthesized (the transport pads a
    /// context's last chunk: a chunk never plays two replies). Where the model holds that audio
    /// at the head of its buffer, the speaker consumed it; otherwise the log shows audio the model
    /// no longer holds — its reply's, played.
    fn played(&self, s: &mut Pipecat, ms: Millis) -> Events {
        // The chunk the output was writing at an interruption, logged at its end after it: it
        // was counted played at the interruption. One begun in the interruption's millisecond
        // is that chunk too: the output's audio task takes the next chunk as soon as it pushed
        // the last, in that instant, and an interruption that reached the output first would
        // have left it no interruptible audio to take (`MediaSender.handle_interruptions`
        // empties the queue and keeps the task writing).
        //
        // Where chunks are logged at their start (before 0.0.86), the chunk in the write is one
        // the output took in the interruption's millisecond, before the interruption reached it:
        // `MediaSender._audio_task_handler` (0.0.84 `transports/base_output.py`) takes a chunk
        // from its queue, pushes it (the observer logs it) and then writes it, and
        // `MediaSender.handle_interruptions` cancels that task and gives its successor a new,
        // empty queue — no interrupted chunk is taken after the interruption arrived.
        let at_end = s.options.logs_chunk_at_end();
        if let Some(cut) = s.in_write.take() {
            let start = if at_end {
                self.at.saturating_sub(ms)
            } else {
                self.at
            };
            if start <= cut {
                return Vec::new();
            }
        }
        s.last_chunk_at = Some(self.at);
        if s.queue.is_empty() {
            std::mem::swap(&mut s.queue, &mut s.cleared);
        }
        let Some((r, seq, take)) = take_head(s, ms) else {
            // Nothing synthesized is left: the padding of a context's last chunk.
            return Vec::new();
        };
        let id = s.replies[r].id.clone();
        // The model's frames of that reply at the head of its buffer: the chunk plays them, and
        // the log shows each of its deltas played.
        let mut left = u32::try_from(take).unwrap_or(u32::MAX);
        let mut shown = Vec::new();
        // A reply the `CancelFrame` stopped at this very line: the machine as it stood before
        // the stop still holds its audio.
        let stopped = s.stopped_by_cancel.contains(&r);
        let runs = self
            .machine
            .filter(|_| !stopped)
            .into_iter()
            .flat_map(|m| m.session().playback.runs());
        for (frame, n) in runs.take_while(|(frame, _)| frame.turn == id.as_str()) {
            if left == 0 {
                break;
            }
            let n = (*n).min(left);
            left -= n;
            shown.push(self.observed(Output::Played {
                turn: frame.turn.clone(),
                generation: frame.generation,
                seq: frame.seq,
                frames: n,
            }));
        }
        if !shown.is_empty() {
            let frames = u32::try_from(take).unwrap_or(u32::MAX) - left;
            let mut out = vec![self.input(InputKind::FramePlayed { frames })];
            out.extend(shown);
            return out;
        }
        let seq = *s.replies[r].late_seq.get_or_insert(seq);
        let reply = &s.replies[r];
        vec![
            self.input(InputKind::Tick),
            self.observed(Output::Played {
                turn: reply.id.clone().into(),
                generation: reply.generation,
                seq,
                frames: u32::try_from(take).unwrap_or(u32::MAX),
            }),
        ]
    }

    /// What a `STTMuteFilter` that pushes no `STTMuteFrame` (after 0.0.84) does with this
    /// interruption, where it sees it: pushed into it (`dst`), or injected at the pipeline's
    /// start by the task (`PipelineTask#N::Source`, 0.0.85 on: `push_interruption_task_frame`).
    fn filter_decides(&self, s: &Pipecat) -> Option<Mute> {
        let filter = s.mute_filter.as_ref().filter(|_| !s.mute_frames)?;
        if !self.reaches_filter() {
            return None;
        }
        if filter.is_guessed() {
            Some(Mute::Unknown)
        } else if filter.is_muted() {
            Some(Mute::Drops)
        } else {
            None
        }
    }

    /// The interruption passes through the pipeline's `STTMuteFilter`, if it has one: pushed
    /// into it (`dst`), or injected at the pipeline's start by the task (`PipelineTask#N::Source`),
    /// whence it travels down through every processor — the input transport passes a system
    /// frame on (0.0.84 `BaseInputTransport.process_frame`), and the observer logs it only at
    /// that first push, not where it enters the filter.
    fn reaches_filter(&self) -> bool {
        let into_filter = self
            .f
            .dst
            .as_deref()
            .is_some_and(|d| d.starts_with("STTMuteFilter"));
        into_filter || self.injected_by_task()
    }

    /// Injected at the pipeline's start by the application's task (`PipelineTask#N::Source`;
    /// 1.x: `PipelineWorker#N::Source`).
    fn injected_by_task(&self) -> bool {
        self.f.src.as_deref().is_some_and(|d| {
            (d.starts_with("PipelineTask#") || d.starts_with("PipelineWorker#"))
                && d.ends_with("::Source")
        })
    }

    /// A filter whose strategy the log cannot follow (`CUSTOM`'s callback, or an unknown name):
    /// whether it dropped the interruption is not guessed, so late audio of the replies it
    /// would cut is not judged.
    fn mute_not_judged(&self, s: &Pipecat) -> Events {
        let ids: Vec<String> = s
            .tts_order
            .iter()
            .chain(s.queue.iter().map(|q| &q.reply))
            .filter(|r| s.replies[**r].interruptible)
            .map(|r| s.replies[*r].id.clone())
            .collect();
        if ids.is_empty() {
            return Vec::new();
        }
        vec![Event::NotJudged {
            session: SESSION.to_owned(),
            rule: "no_late_delivery",
            ids,
            needs: "the STTMuteFilter's mute state at this interruption: its strategy is the \
                    application's (CUSTOM) or unknown, and after 0.0.84 it pushes no STTMuteFrame"
                .to_owned(),
        }]
    }

    /// An interruption (`InterruptionFrame`; `StartInterruptionFrame` before 0.0.85): the
    /// user's speech, given to the model — unless it passes through a `STTMuteFilter` that mutes
    /// the user, which drops it (0.0.84: `STTMuteFilter.process_frame` suppresses a
    /// `StartInterruptionFrame` while `is_muted`, the application's as the user's). The chunk
    /// being written while the bot speaks plays out: counted played first — where chunks are
    /// logged at the end of their playback, the one in the write; where they are logged at their
    /// start, the one the output takes in the interruption's millisecond, its last one's write
    /// over. The output transport drops the interruptible audio it still holds, as the model
    /// clears it.
    pub(super) fn interruption(&self, s: &mut Pipecat) -> Events {
        if s.filter_muted && self.reaches_filter() {
            return Vec::new();
        }
        // 1.x: the user aggregator drops an `InterruptionFrame` while the user is muted
        // (`LLMUserAggregator._maybe_mute_frame`), the application's among them: one the task
        // injected at the pipeline's start passes through it before the LLM, the TTS and the
        // output.
        if s.user_muted && self.injected_by_task() {
            return Vec::new();
        }
        let mut out = Vec::new();
        match self.filter_decides(s) {
            Some(Mute::Drops) => return Vec::new(),
            Some(Mute::Unknown) => out.extend(self.mute_not_judged(s)),
            None => {}
        }
        s.interruptions.push(self.line);
        self.drop_held(s);
        out.extend(self.accept_up_to(s, s.replies.len()));
        let head_interruptible = s
            .queue
            .front()
            .is_some_and(|q| s.replies[q.reply].interruptible);
        let chunk = s.options.chunk_ms;
        // Logged at their start: a chunk is taken now only if the last one's write has ended.
        let taking = s.options.logs_chunk_at_end()
            || s.last_chunk_at
                .is_some_and(|last| last.saturating_add(chunk) <= self.at);
        if s.speaking && taking && head_interruptible {
            out.extend(self.played(s, chunk));
            s.in_write = Some(self.at);
        }
        out.push(self.input(InputKind::SpeechStarted {
            confidence: 1.0,
            since: None,
        }));
        // The TTS drops the interrupted replies' text it held (the response the LLM still
        // streams may give it more), and the output their audio.
        for r in s.tts_order.iter().copied() {
            let reply = &mut s.replies[r];
            if reply.interruptible {
                reply.spoken = reply.given;
                reply.open_contexts = 0;
            }
        }
        let replies = &s.replies;
        let streaming = s.response;
        let (cut, kept): (VecDeque<Queued>, VecDeque<Queued>) = s
            .queue
            .drain(..)
            .partition(|q| replies[q.reply].interruptible);
        s.queue = kept;
        // Each interruption clears what it finds; one in the same instant as another finds
        // nothing left, and what the first cleared stays cleared (an output that kept it plays
        // it on, in order).
        s.cleared.extend(cut);
        s.tts_order
            .retain(|r| !replies[*r].interruptible || Some(*r) == streaming);
        out
    }
}

impl Line<'_> {
    /// The interruption reaches the LLM: it cancels its process task and makes a new queue
    /// (`FrameProcessor._start_interruption`), so the `TTSSpeakFrame`s that waited there behind
    /// the response it streamed are never spoken — 0.0.84 drops every queued frame, 1.x keeps
    /// the uninterruptible ones (`__reset_process_queue`), which the new task takes up once the
    /// interrupted response has ended (its `LLMFullResponseEndFrame`, pushed from the `finally`
    /// of the generation cancelled). A dropped one is no reply: never given to the model.
    fn drop_held(&self, s: &mut Pipecat) {
        for (r, reply) in s.replies.iter_mut().enumerate() {
            if reply.held && !reply.keeps {
                reply.held = false;
                reply.dropped = true;
                s.tts_order.retain(|q| *q != r);
            }
        }
    }
}

/// Up to `ms` of the audio at the head of the queue, all of one reply: its reply, the seq of the
/// delta it came from, and how much.
fn take_head(s: &mut Pipecat, ms: Millis) -> Option<(usize, u64, Millis)> {
    let head = s.queue.front()?;
    let reply = head.reply;
    let seq = head.seq;
    let mut left = ms;
    while left > 0 {
        let Some(q) = s.queue.front_mut().filter(|q| q.reply == reply) else {
            break;
        };
        let take = q.ms.min(left);
        q.ms -= take;
        left -= take;
        if q.ms == 0 {
            s.queue.pop_front();
        }
    }
    Some((reply, seq, ms - left))
}

/// The letters and digits of a text: what the LLM gave and the TTS spoke are compared by these
/// (the TTS re-splits words into sentences, its spacing differs).
fn letters(text: Option<&str>) -> usize {
    text.map_or(0, |t| t.chars().filter(|c| c.is_alphanumeric()).count())
}

/// What a `STTMuteFilter` the log does not show does with an interruption it sees.
enum Mute {
    /// It mutes: the interruption goes no further.
    Drops,
    /// Its strategy is the application's: not guessed.
    Unknown,
}
