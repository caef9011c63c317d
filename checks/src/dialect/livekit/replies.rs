//! Replies: their beginnings (a speech created, tool results committed), their audio, their
//! pauses, and their ends (the assistant's message).

use super::*;

impl Line<'_> {
    /// A reply that allows no interruption on the session's `allow_interruptions` alone, cut by
    /// speech: a speech's own flag (`say()`'s, `generate_reply()`'s) may allow what the session
    /// does not, and LiveKit's events leave it out (`SpeechCreatedEvent.speech_handle` is
    /// `exclude=True`). Where the log states no speech's flag, whether speech may cut the reply
    /// is not judged.
    fn flag_unstated(&self, s: &Session, turn: &str) -> Option<Event<TurnMachine>> {
        (!s.states_flags && s.options.speech_interrupts).then(|| {
            self.not_judged(
                TurnInvariant::UninterruptibleOutputSurvives,
                vec![turn.to_owned()],
                "the speech's own allow_interruptions (a say() or generate_reply() may allow what \
                 the session does not; LiveKit's speech_created leaves it out: add it as \
                 `allow_interruptions`, docs/MAPPING.md)"
                    .to_owned(),
            )
        })
    }

    /// The agent starts thinking: a new reply unless one is in progress. It starts speaking: the
    /// reply's audio is out (one frame for the speaker), and a reply that speaks without
    /// thinking first (`say()`) begins there; a paused reply speaking again resumed (its
    /// `agent_false_interruption` says so). It stops speaking while the user speaks: LiveKit
    /// paused or interrupted the reply — the speech held back is given to the model now.
    pub(super) fn agent_state(&self, s: &mut Session) -> Events {
        let mut out = Vec::new();
        s.agent_speaking = self.ev.new_state.as_deref() == Some("speaking");
        if matches!(self.ev.new_state.as_deref(), Some("thinking" | "speaking")) {
            self.end_unheard(s);
        }
        match self.ev.new_state.as_deref() {
            Some("thinking")
                if s.current.is_none()
                    && s.continuing.is_none()
                    && (s.may_begin || !s.records_speeches) =>
            {
                out.push(self.begin_reply(s))
            }
            Some("speaking") => {
                if s.first_spoke.is_none() {
                    s.first_spoke = Some(self.at);
                    out.extend(self.speech_into_warmup(s));
                }
                s.continuing = None;
                if s.current.is_none() && s.records_speeches && !s.may_begin {
                    // No speech was created since the last reply ended: this is its audio.
                    return self.late_audio(s);
                }
                if s.current.is_none() {
                    out.push(self.begin_reply(s));
                }
                let Some(reply) = s.current.as_mut() else {
                    return out;
                };
                reply.paused = false;
                reply.speaking_since = self.at;
                if !reply.spoke {
                    reply.spoke = true;
                    let turn = reply.id.clone();
                    out.push(self.input(InputKind::Delta {
                        turn: turn.into(),
                        generation: s.replies,
                        seq: 1,
                        text: None,
                        frames: 1,
                    }));
                }
            }
            // A reply that spoke and has not ended stops speaking for `thinking`: its speech
            // ended with no message, so nothing of it was forwarded (LiveKit commits one
            // `if forwarded_text`) — it was interrupted — and another speech waits on its tools
            // (`"thinking" if self._background_speeches`, the say's and the reply's end alike).
            // Unless another speech's inference began at this instant and said `thinking` while
            // this one plays on (`_pipeline_reply_task_impl` once its speech is scheduled: a
            // speech just created, or a tool reply, whose speech was scheduled before).
            Some("thinking")
                if s.created_when != Some(self.at) && s.executed_when != Some(self.at) =>
            {
                self.stopped_under_speech(s, &mut out)
            }
            Some("listening" | "idle") => {
                s.continuing = None;
                let unheard = self.transcript_paused(s);
                self.stopped_under_speech(s, &mut out);
                // Not speaking yet, under the speech held over it: LiveKit paused it before its
                // first audio (`_interrupt_by_audio_activity`'s pause says `listening`) — it
                // took the speech.
                if s.current.as_ref().is_some_and(|r| !r.spoke) {
                    out.extend(self.release_speech(s, true));
                }
                if unheard {
                    s.speech = None;
                    out.push(self.input(InputKind::SpeechStopped));
                }
            }
            _ => {}
        }
        out
    }

    /// The reply speaking stops at the instant an interim transcript with words came, with no
    /// speech the voice detector shows: the transcript was the user's activity
    /// (`on_interim_transcript` calls `_interrupt_by_audio_activity`, which weighs only the
    /// words), taken whole at once, and the user not speaking for the detector, the resume's
    /// timer runs from now (`_start_false_interruption_timer` when `speaking is False`). A
    /// speech of this instant is held over the reply, for `stopped_under_speech` to give;
    /// whether one was made is returned, for its end to follow.
    fn transcript_paused(&self, s: &mut Session) -> bool {
        if s.speech.is_some() || s.interim_at != Some(self.at) || !s.options.speech_interrupts {
            return false;
        }
        // Whether the reply allowed it is for `stopped_under_speech` to say: one that allows no
        // interruption, stopped by a transcript, is the speech that cut it.
        let Some(reply) = s.current.as_ref().filter(|r| r.spoke) else {
            return false;
        };
        s.speech = Some(Speech {
            began: self.at,
            counts_from: self.at,
            held_over: Some(reply.id.clone()),
            transcribed: true,
        });
        true
    }

    /// The reply speaking stopped while the user speaks: LiveKit paused or interrupted it, and
    /// the speech held back is given to the model now. One that allows no interruption: said,
    /// for the model (which never pauses it) to judge.
    fn stopped_under_speech(&self, s: &mut Session, out: &mut Events) {
        let speaking = s.speech.is_some();
        let Some(reply) = s.current.as_ref().filter(|r| r.spoke && speaking) else {
            return;
        };
        let (allows, since) = (reply.allows, reply.speaking_since);
        if !allows && !self.speech_weighed_now(s, since) {
            // A reply that allows no interruption stops where LiveKit does not weigh the speech:
            // the speech cannot have paused it (`_interrupt_by_audio_activity` runs only
            // there), so it was interrupted by force — the app's `session.interrupt()` or the
            // session's close — and is over: what it still plays is late, and a message of it
            // is its end said again.
            let turn = reply.id.clone();
            s.last = s.current.take();
            s.pre_paused = false;
            out.push(self.interrupt_asked(&turn));
            return;
        }
        let Some(reply) = s.current.as_mut() else {
            return;
        };
        reply.paused = true;
        let turn = reply.id.clone();
        out.extend(self.release_speech(s, true));
        if !allows {
            out.extend(self.flag_unstated(s, &turn));
            out.push(self.observed(Output::PlaybackPaused { turn: turn.into() }));
        }
    }

    /// A new speech was created since the current reply, which the model already ended (its
    /// interruption confirmed), began: interrupted with nothing heard, LiveKit commits no message
    /// for it (`_tts_task_impl` adds one only `if forwarded_text`), so it ended unheard and what
    /// begins now is the new speech's reply.
    fn end_unheard(&self, s: &mut Session) {
        let ended = |id: &str| {
            self.machine
                .and_then(|m| m.session().turn(id))
                .is_some_and(|t| t.phase.is_terminal())
        };
        if !(s.records_speeches && s.may_begin) {
            return;
        }
        let Some(reply) = s.current.take_if(|r| ended(&r.id)) else {
            return;
        };
        s.pre_paused = false;
        s.last = Some(reply);
    }

    /// A speech was made (`say()`, `generate_reply()`): the next `thinking` or `speaking` may
    /// begin a reply, or, one already waiting, the one after.
    pub(super) fn speech_created(&self, s: &mut Session) -> Events {
        s.records_speeches = true;
        s.states_flags |= self.ev.allow_interruptions.is_some();
        s.flags.push_back(self.ev.allow_interruptions);
        // Created while the user speaks: once current, its output is paused before its first
        // audio (`AgentActivity._reconcile_playout_pause`).
        if s.speech.is_some() && s.current.is_none() {
            s.pre_paused = true;
        }
        if s.may_begin {
            s.queued += 1;
        }
        s.may_begin = true;
        s.created_when = Some(self.at);
        Vec::new()
    }

    /// A user's turn committed with a reply created for it while another reply, none of whose
    /// audio is out, is in progress: LiveKit interrupted that one for the turn (a speech that
    /// allows no interruption makes it skip the turn, creating no reply:
    /// `AgentActivity._user_turn_completed_impl`), and, nothing of it heard, commits no message
    /// for it (`_pipeline_reply_task_impl`): it ends here, stopped.
    fn silent_reply_interrupted(&self, s: &mut Session) -> Events {
        let Some(reply) = s.current.take_if(|r| !r.spoke) else {
            return Vec::new();
        };
        s.pre_paused = false;
        let turn = reply.id.clone();
        s.last = Some(reply);
        vec![self.input(InputKind::Stop {
            turn: turn.clone().into(),
            request_id: format!("{turn}-user-turn"),
        })]
    }

    /// The agent speaks with no reply in progress and no speech created since the last ended:
    /// the last reply's audio, played after it ended.
    pub(super) fn late_audio(&self, s: &Session) -> Events {
        let Some(last) = s.last.as_ref() else {
            return Vec::new();
        };
        vec![
            self.input(InputKind::Tick),
            self.observed(Output::Played {
                turn: last.id.clone().into(),
                generation: last.generation,
                seq: 1,
                frames: 1,
            }),
        ]
    }

    /// The next reply begins: its accept (interruptible as its speech's `allow_interruptions`
    /// says where the log states it, else as the session's).
    pub(super) fn begin_reply(&self, s: &mut Session) -> Event<TurnMachine> {
        s.replies += 1;
        let allows = s.reply_allows();
        // The next queued speech, if one waits, may begin once this one has ended; none does,
        // the flags of speeches that never began (a preemptive generation dropped) go.
        if s.queued == 0 {
            s.flags.clear();
        }
        s.may_begin = s.queued > 0;
        s.queued = s.queued.saturating_sub(1);
        let turn = format!("speech_{}", s.replies);
        // Begun while the user speaks: LiveKit pauses its output before its first audio
        // (`_reconcile_playout_pause`, or `_interrupt_by_audio_activity` once the speech counts).
        if s.speech.is_some() {
            s.pre_paused = true;
        }
        let reply = Reply {
            id: turn.clone(),
            generation: s.replies,
            allows,
            ..Reply::default()
        };
        // Speech leaves it alone where it allows no interruption, or where the session's turn
        // detection lets no audio activity interrupt (`Options::speech_interrupts`).
        let interruptible = allows && s.options.speech_interrupts;
        s.current = Some(reply);
        self.input(InputKind::Accept {
            turn: turn.into(),
            generation: s.replies,
            mode: Mode::Audio,
            deadline_ms: None,
            budget: None,
            interruptible,
        })
    }

    /// The app's or the close's interrupt of `turn` asked (`session.interrupt()`,
    /// `_aclose_impl`), which LiveKit logs no event of: shown as the model's answer to it, for
    /// the declared unlogged step (`Unlogged`) to explain.
    fn interrupt_asked(&self, turn: &str) -> Event<TurnMachine> {
        self.observed(Output::StopAnswered {
            turn: turn.into(),
            request_id: format!("{turn}-interrupt"),
            answer: StopAnswer::Requested,
        })
    }

    /// The model runs `turn` as it was before this line, and this line's events so far (`out`)
    /// give it nothing: neither the speech that cut it nor a stop.
    fn cut_by_nothing_shown(&self, turn: &str, out: &Events) -> bool {
        let running = self
            .machine
            .is_some_and(|m| m.session().turn(turn).is_some_and(|t| t.phase.is_running()));
        running && !out.iter().any(|e| matches!(e, Event::Input { .. }))
    }

    /// The assistant's message: the reply ended — interrupted (cancelled), or played out (the
    /// model done, its audio played, completed). A reply with a tool call still running ends
    /// when its calls do (they run through an interruption), so its end is not this line's. The
    /// same message committed again is the reply ending again.
    pub(super) fn item_added(&self, s: &mut Session) -> Events {
        let item = self.ev.item.as_ref();
        let assistant = item.is_some_and(|i| {
            i.role.as_deref() == Some("assistant")
                && i.kind.as_deref().unwrap_or("message") == "message"
        });
        if !assistant {
            if item.is_some_and(|i| i.role.as_deref() == Some("user")) {
                // The user's turn committed: LiveKit counts the next one's words afresh; a
                // speech created now is its reply.
                s.turn_words = 0;
                s.interim_words = 0;
                if s.created_when == Some(self.at) {
                    return self.silent_reply_interrupted(s);
                }
            }
            return Vec::new();
        }
        let interrupted = item.and_then(|i| i.interrupted) == Some(true);
        let id = item.and_then(|i| i.id.clone());
        let state = if interrupted {
            Terminal::Cancelled
        } else {
            Terminal::Completed
        };
        let again = id.as_ref().and_then(|id| s.messages.get(id)).cloned();
        // With no reply in progress, a message is the last one's, committed again.
        let again = again.or_else(|| {
            s.current
                .is_none()
                .then(|| s.last.as_ref().map(|r| r.id.clone()))
                .flatten()
        });
        if let Some(turn) = again {
            let mut out = vec![self.input(InputKind::Tick)];
            // Its message committed before (perhaps while its tools ran, its end then the
            // calls'): this is its second.
            if s.committed.contains(&turn) {
                out.push(Event::Fact {
                    session: self.session.to_owned(),
                    at: self.at,
                    fact: Fact::Turn {
                        turn: turn.clone(),
                        what: TurnFact::TerminalEvents(2),
                    },
                });
            }
            out.push(self.observed(Output::Terminal {
                turn: turn.into(),
                state,
            }));
            return out;
        }
        let mut out = Vec::new();
        // Interrupted at once by the speech held over it, never paused: what a session without
        // resuming does, and LiveKit's default resumes. Unless the options are stated, the log
        // cannot say which: the reply's interruption is not judged.
        let held_over = s.speech.as_ref().and_then(|sp| sp.held_over.clone());
        let at_once = interrupted
            && !s.options.pause_stated
            && s.options.interruption.pauses()
            && s.current
                .as_ref()
                .is_some_and(|r| !r.paused && held_over.as_ref() == Some(&r.id));
        if let Some(turn) = held_over.filter(|_| at_once) {
            if let Some(sp) = s.speech.as_mut() {
                sp.held_over = None;
            }
            let needs = format!("the session's resume_false_interruption and false_interruption_timeout: {turn} was interrupted at once by speech, as a session without resuming does, where LiveKit's default pauses it (state them in the meta line's options)");
            out.push(self.not_judged(TurnInvariant::InterruptionDecidedOnce, vec![turn], needs));
        } else {
            out.extend(self.speech_over_ended_reply(s, interrupted));
        }
        let Some(mut reply) = s.current.take() else {
            return out;
        };
        reply.interrupted = interrupted;
        s.pre_paused = false;
        s.last = Some(reply.clone());
        let turn = reply.id;
        if let Some(id) = id {
            s.messages.insert(id, turn.clone());
        }
        s.committed.insert(turn.clone());
        let pending = s
            .calls
            .iter()
            .any(|(id, t)| *t == turn && !s.ended.contains_key(id));
        if interrupted {
            if !reply.allows && reply.spoke && self.speech_weighed_now(s, reply.speaking_since) {
                // Speech cut a reply the session lets nothing interrupt: said as the pause it
                // is (for the model, which never pauses it, to judge), then the reply stopped,
                // so that what follows is judged from where LiveKit went. Cut at another
                // instant, it was a forced interrupt (the app's, or the session's close:
                // `Unlogged`), which the model is left to find.
                out.extend(self.flag_unstated(s, &turn));
                out.push(self.observed(Output::PlaybackPaused {
                    turn: turn.clone().into(),
                }));
                out.push(self.input(InputKind::Stop {
                    turn: turn.clone().into(),
                    request_id: format!("{turn}-cut"),
                }));
            }
            // LiveKit commits an interrupted reply when its playout has ended (the output's
            // playback_finished): committed well after its interruption was confirmed, it
            // played on meanwhile.
            let late = reply
                .confirmed_at
                .is_some_and(|t| self.at > t.saturating_add(PLAYOUT_END_MS));
            if late {
                out.push(self.input(InputKind::Tick));
                out.push(self.observed(Output::Played {
                    turn: turn.clone().into(),
                    generation: reply.generation,
                    seq: 1,
                    frames: 1,
                }));
            }
            if !pending {
                // What fell due by now happened (a resume the model owed).
                out.push(self.input(InputKind::Tick));
                out.push(self.observed(Output::Terminal {
                    turn: turn.into(),
                    state,
                }));
            } else if reply.spoke
                && !reply.paused
                && s.speech.is_none()
                && self.cut_by_nothing_shown(&turn, &out)
            {
                // Interrupted with its calls still running (they run through an interruption),
                // the reply speaking, the user not (speech going on may be what cut it), and
                // nothing of this log's cutting it: the app's
                // `session.interrupt()` or the session's close (`_aclose_impl` interrupts with
                // force, then drains: the calls run on, and a user's turn committed meanwhile
                // still gets its reply). Its end is the calls', so what this line shows is the
                // interrupt asked, for the unlogged step (`Unlogged`) to explain.
                out.push(self.interrupt_asked(&turn));
            }
            return out;
        }
        // Played out: the audio the model still holds for it, and its model done, where the
        // model has not ended it already (an interruption confirmed before this message).
        let model = self.machine.map(|m| m.session());
        let holds = model.is_none_or(|m| m.playback.holds(&turn));
        let running = model.is_none_or(|m| m.turn(&turn).is_some_and(|t| t.phase.is_running()));
        if reply.spoke && holds {
            out.push(self.input(InputKind::FRAME_PLAYED));
        }
        if running {
            out.push(self.input(InputKind::ModelDone {
                turn: turn.clone().into(),
            }));
        }
        if pending {
            s.continuing = Some(turn.clone());
        }
        if !pending {
            out.push(self.observed(Output::Terminal {
                turn: turn.into(),
                state,
            }));
        }
        out
    }
}
