//! The user's speech as LiveKit dates and takes it: held back over a reply until LiveKit shows
//! what it made of it, transcripts, and false interruptions.

use super::*;

impl Line<'_> {
    /// The user starts speaking, dated to the detector's start. Over a reply speaking (or not
    /// yet, the turn's words too few to interrupt it) that speech may interrupt (it allows interruptions, as far as the log says, and the turn
    /// detection lets audio activity interrupt), it is held back until LiveKit shows what it
    /// made of it: a pause or an interruption gives it to the model; its end with neither leaves
    /// the reply's interruption unjudged.
    pub(super) fn speech_started(&self, s: &mut Session) -> Events {
        let began = self.stated.min(self.at);
        let warm = s
            .first_spoke
            .zip(s.options.aec_warmup_ms)
            .map(|(spoke, warmup)| spoke.saturating_add(warmup));
        // During AEC warm-up speech interrupts nothing: it counts as if it began its minimum
        // before the warm-up's end, where that is later than its start.
        let min = s.options.interruption.min_ms;
        let counts_from = warm.map_or(began, |end| began.max(end.saturating_sub(min)));
        // Over a reply not speaking yet too, while the user's turn has fewer words than
        // `min_interruption_words`: `_interrupt_by_audio_activity` weighs the words first,
        // whatever the agent's state, and returns.
        let few = s.turn_words.saturating_add(s.interim_words) < s.options.min_words;
        let over = s
            .current
            .as_ref()
            .filter(|r| (r.spoke || few) && !r.paused && r.allows && s.options.speech_interrupts)
            .map(|r| r.id.clone());
        let held = over.is_some();
        if !s.agent_speaking && s.holds_unpaused() {
            s.pre_paused = true;
        }
        s.speech = Some(Speech {
            began,
            counts_from,
            held_over: over,
            transcribed: false,
        });
        if held {
            return Vec::new();
        }
        vec![self.input(InputKind::SpeechStarted {
            confidence: 1.0,
            since: Some(counts_from),
        })]
    }

    /// The speech held back is given to the model once LiveKit took it for an interruption (it
    /// paused or interrupted the reply, or a transcript came): it counted, from its start —
    /// unless LiveKit did not show that it took it (`taken` false) and the user's turn so far
    /// has fewer words than `min_interruption_words`: then `_interrupt_by_audio_activity`
    /// returned first, and it counts from now at the earliest.
    pub(super) fn release_speech(&self, s: &mut Session, taken: bool) -> Events {
        let few = s.turn_words.saturating_add(s.interim_words) < s.options.min_words;
        let Some(speech) = s.speech.as_mut().filter(|sp| sp.held_over.is_some()) else {
            return Vec::new();
        };
        speech.held_over = None;
        if few && !taken {
            return vec![self.input(InputKind::SpeechStarted {
                confidence: 1.0,
                since: Some(self.at.max(speech.counts_from)),
            })];
        }
        // LiveKit measured it counted by now (or took a transcript for it); its measure runs up
        // to a detector window behind the start it dates the speech to.
        let min = s.options.interruption.min_ms;
        let lasted = self.at.saturating_sub(speech.began);
        let since =
            if lasted.saturating_add(DETECTOR_WINDOW_MS) >= min || (taken && speech.transcribed) {
                speech.began.min(self.at.saturating_sub(min))
            } else {
                speech.began
            };
        vec![self.input(InputKind::SpeechStarted {
            confidence: 1.0,
            since: Some(since),
        })]
    }

    /// The user stopped speaking. A speech held back over a reply that LiveKit neither paused
    /// nor interrupted: long enough to count, the reply did not allow interruptions or LiveKit
    /// failed to take one — the log cannot say which, so the reply's interruption is not judged;
    /// too short to count, it is given to the model (which takes it for no interruption).
    pub(super) fn speech_stopped(&self, s: &mut Session) -> Events {
        let Some(speech) = s.speech.take() else {
            return vec![self.input(InputKind::SpeechStopped)];
        };
        let ended = self.stated.min(self.at);
        let Some(reply) = speech.held_over.clone() else {
            return vec![self.input(InputKind::SpeechStopped)];
        };
        // A turn of fewer words than `min_interruption_words` interrupted nothing however long
        // it lasted (`_interrupt_by_audio_activity` returns first): it counts from now at the
        // earliest.
        let few = s.turn_words.saturating_add(s.interim_words) < s.options.min_words;
        let counted = !few
            && ended
                >= speech
                    .counts_from
                    .saturating_add(s.options.interruption.min_ms);
        if !counted {
            return vec![
                self.input(InputKind::SpeechStarted {
                    confidence: 1.0,
                    since: Some(if few {
                        self.at.max(speech.counts_from)
                    } else {
                        speech.counts_from
                    }),
                }),
                self.input(InputKind::SpeechStopped),
            ];
        }
        self.played_on(reply, ended.saturating_sub(speech.began))
    }

    /// A reply the user spoke over, long enough to count, that LiveKit neither paused nor
    /// interrupted: it did not allow interruptions, or LiveKit failed to take one — the log
    /// cannot say which, so its interruption is not judged.
    fn played_on(&self, reply: String, lasted: Millis) -> Events {
        let needs = format!(
            "whether {reply} allowed interruptions: the user spoke over it for {lasted} ms and it played on, which a speech made with allow_interruptions=False does and an interruptible one must not; LiveKit's log does not say which it was (a session whose replies never allow them states allow_interruptions: false in the meta line's options)"
        );
        vec![
            self.not_judged(
                TurnInvariant::InterruptionDecidedOnce,
                vec![reply.clone()],
                needs.clone(),
            ),
            self.not_judged(
                TurnInvariant::UninterruptibleOutputSurvives,
                vec![reply],
                needs,
            ),
        ]
    }

    /// The reply the user's speech is held over ended (its message). Interrupted, LiveKit took
    /// the speech. Played out, it did not: had the speech counted (and the turn its words),
    /// the reply played on through it — not judged, as at the speech's end; else it is given
    /// to the model as not counted yet. Either way it goes on over no reply.
    pub(super) fn speech_over_ended_reply(&self, s: &mut Session, interrupted: bool) -> Events {
        if interrupted {
            return self.release_speech(s, true);
        }
        let few = s.turn_words.saturating_add(s.interim_words) < s.options.min_words;
        let min = s.options.interruption.min_ms;
        let Some(speech) = s.speech.as_mut() else {
            return Vec::new();
        };
        let Some(reply) = speech.held_over.take() else {
            return Vec::new();
        };
        let counted = !few && self.at >= speech.counts_from.saturating_add(min);
        let mut out = Vec::new();
        if counted {
            out = self.played_on(reply, self.at.saturating_sub(speech.began));
        }
        // From now at the earliest, and never before it may count (AEC warm-up).
        let since = if counted || few {
            self.at.max(speech.counts_from)
        } else {
            speech.counts_from
        };
        out.push(self.input(InputKind::SpeechStarted {
            confidence: 1.0,
            since: Some(since),
        }));
        out
    }

    /// A final transcript: the user's turn is committed, which confirms a paused interruption —
    /// and, over a reply speaking that the user is no longer talking over, interrupts it as
    /// LiveKit does (a committed user turn interrupts the speech in progress): the model has no
    /// turn commit, so this is the speech that counted, then its transcript. A turn of fewer
    /// words than `min_interruption_words` interrupts nothing (`_interrupt_by_audio_activity`
    /// and `on_end_of_turn` return first); one whose own words are fewer but whose earlier
    /// finals make up the count interrupts unless the app cleared the turn
    /// (`clear_user_turn`, no event): not judged.
    pub(super) fn transcribed(&self, s: &mut Session) -> Events {
        let own = word_count(self.ev.transcript.as_deref().unwrap_or_default());
        s.turn_words = s.turn_words.saturating_add(own);
        s.interim_words = 0;
        // A speech held is given now, as not taken (its transcript's words weigh only where
        // LiveKit showed it took the speech: `release_speech`), and never held again.
        let mut out = self.release_speech(s, false);
        if let Some(reply) = s.current.as_mut().filter(|r| r.paused) {
            reply.confirmed_at.get_or_insert(self.at);
        }
        let speaking = s
            .current
            .as_ref()
            .filter(|r| r.spoke && !r.paused && r.allows && s.options.speech_interrupts)
            .map(|r| r.id.clone());
        let min = s.options.min_words;
        let interrupts = speaking.filter(|_| s.speech.is_none());
        match interrupts {
            Some(_) if s.turn_words >= min && own >= min => {
                out.push(self.input(InputKind::SpeechStarted {
                    confidence: 1.0,
                    since: Some(0),
                }));
                out.push(self.input(InputKind::Transcribed));
                out.push(self.input(InputKind::SpeechStopped));
                return out;
            }
            Some(reply) if s.turn_words >= min => {
                let needs = format!(
                    "whether the app cleared the user's turn (clear_user_turn, no event): its final transcripts since the last user message have {} words, min_interruption_words {min}, this one {own}",
                    s.turn_words
                );
                out.push(self.not_judged(
                    TurnInvariant::InterruptionDecidedOnce,
                    vec![reply],
                    needs,
                ));
            }
            _ => {}
        }
        out.push(self.input(InputKind::Transcribed));
        out
    }

    /// The agent speaks for the first time, and AEC warm-up begins, while the user speaks: the
    /// speech, given to the model and not counted yet, counts as if it began its minimum before
    /// the warm-up's end, where that is later (as one begun during the warm-up does): given
    /// again from there.
    pub(super) fn speech_into_warmup(&self, s: &mut Session) -> Events {
        let Some(warmup) = s.options.aec_warmup_ms else {
            return Vec::new();
        };
        let counting = self
            .machine
            .is_some_and(|m| m.session().interruption_due.is_some());
        let Some(speech) = s.speech.as_mut().filter(|sp| sp.held_over.is_none()) else {
            return Vec::new();
        };
        let from = self
            .at
            .saturating_add(warmup)
            .saturating_sub(s.options.interruption.min_ms);
        if !counting || from <= speech.counts_from {
            return Vec::new();
        }
        speech.counts_from = from;
        vec![
            self.input(InputKind::SpeechStopped),
            self.input(InputKind::SpeechStarted {
                confidence: 1.0,
                since: Some(from),
            }),
        ]
    }

    /// Whether LiveKit weighs the user's speech in progress now, over a reply speaking since
    /// `speaking_since`: where its voice detector first finds it long enough while the agent
    /// speaks (`on_vad_inference_done` calls `_interrupt_by_audio_activity` from then on, its
    /// measure up to a detector window behind), or at an interim transcript with words
    /// (`on_interim_transcript`). Only there can the speech cut the reply; a reply that allows
    /// no interruption cut elsewhere under the speech was interrupted by force, by the app or
    /// the session's close (`_aclose_impl`: `activity.interrupt(force=True)`).
    pub(super) fn speech_weighed_now(&self, s: &Session, speaking_since: Millis) -> bool {
        let Some(speech) = s.speech.as_ref() else {
            return false;
        };
        if s.interim_at == Some(self.at) {
            return true;
        }
        let counted = speech
            .counts_from
            .saturating_add(s.options.interruption.min_ms)
            .max(speaking_since);
        self.at.saturating_add(DETECTOR_WINDOW_MS) >= counted
            && self.at <= counted.saturating_add(DETECTOR_WINDOW_MS)
    }

    /// An interim transcript: the user's turn so far has its words after the finals'.
    pub(super) fn interim(&self, s: &mut Session) -> Events {
        s.interim_words = word_count(self.ev.transcript.as_deref().unwrap_or_default());
        if s.interim_words > 0 {
            s.interim_at = Some(self.at);
        }
        if let Some(sp) = s.speech.as_mut() {
            sp.transcribed |= s.interim_words > 0;
        }
        Vec::new()
    }

    /// `agent_false_interruption{resumed}`: a resumed pause is the output going on — with no
    /// reply in progress, of the last one. Not resumed while the reply is still paused: the
    /// session says its output stays paused. A pause LiveKit opened while the agent was not
    /// speaking (`pre_paused`: before the reply's first audio) held none of the audio the model
    /// knows, so its resume is nothing to the model; not resumed, the speech LiveKit holds
    /// current (begun here if the log had not shown it yet) stays paused, undecided. A resume
    /// with no reply in progress while a speech waits is such a pause: of the waiting speech.
    pub(super) fn false_interruption(&self, s: &mut Session) -> Events {
        let paused = s.current.as_ref().is_some_and(|r| r.paused);
        if self.ev.resumed == Some(true) {
            // Resumed, LiveKit restores the agent's state as it was at the pause (1.6.4 may say
            // `thinking` while the reply plays on): the reply is not paused any more.
            if let Some(r) = s.current.as_mut() {
                r.paused = false;
            }
        }
        // No reply in progress while a speech created waits: LiveKit made it current and paused
        // it before its first audio, the user still speaking (`_reconcile_playout_pause`), and
        // the log shows its beginning no sooner than this resume.
        let waiting =
            s.current.is_none() && s.continuing.is_none() && s.records_speeches && s.may_begin;
        // The reply in progress has no audio out and the model holds no pause of it: LiveKit
        // paused it before its first audio too (while it thought, `_interrupt_by_audio_activity`;
        // `_restore_paused_speech_state` says `thinking` again just before this resume).
        let unspoken = s.current.as_ref().is_some_and(|r| {
            !r.spoke
                && !self.machine.is_some_and(|m| {
                    m.session()
                        .paused
                        .as_ref()
                        .is_some_and(|(t, _)| t.as_str() == r.id)
                })
        });
        let pre = (std::mem::take(&mut s.pre_paused) || waiting || unspoken) && !paused;
        let mut out = Vec::new();
        if pre && self.ev.resumed == Some(true) {
            return out;
        }
        if pre && s.current.is_none() && s.continuing.is_none() {
            out.push(self.begin_reply(s));
        }
        let turn = s
            .current
            .as_ref()
            .map(|r| r.id.clone())
            .or_else(|| s.continuing.clone())
            .unwrap_or_else(|| format!("speech_{}", s.replies));
        match self.ev.resumed {
            Some(true) => out.push(self.observed(Output::PlaybackResumed { turn: turn.into() })),
            _ if paused || pre => out.push(Event::Fact {
                session: self.session.to_owned(),
                at: self.at,
                fact: Fact::Turn {
                    turn,
                    what: TurnFact::KeptPaused,
                },
            }),
            _ => {}
        }
        out
    }
}

impl Session {
    /// Whether the reply beginning now may be interrupted: where the log states each speech's
    /// `allow_interruptions`, the flag every speech it may be (the speeches created and not yet
    /// begun, a tool reply's) states alike, else (they differ, or one is not stated) taken to
    /// allow them, which judges no interruption wrong; where it states none, the session's.
    pub(super) fn reply_allows(&mut self) -> bool {
        let tool = self.tool_reply_flag.take();
        let first = self.flags.pop_front();
        if !self.states_flags {
            return self.options.allow_interruptions;
        }
        let candidates: Vec<Option<bool>> = first
            .into_iter()
            .chain(self.flags.iter().copied())
            .chain(tool.map(Some))
            .collect();
        match candidates.split_first() {
            None => self.options.allow_interruptions,
            Some((one, rest)) if rest.iter().all(|c| c == one) => one.unwrap_or(true),
            Some(_) => true,
        }
    }

    /// A speech is current, or about to be, and not paused: a reply in progress, a speech
    /// created and not yet begun, or a reply waiting on its tool calls to speak again.
    pub(super) fn holds_unpaused(&self) -> bool {
        match &self.current {
            Some(r) => !r.paused,
            None => self.may_begin || self.continuing.is_some(),
        }
    }
}

/// The words of a transcript as LiveKit counts them (`split_words(text, split_character=True)`):
/// runs between spaces that hold a letter or digit, each character of a script written without
/// spaces (kana, CJK ideographs, Thai) a word of its own.
pub(super) fn word_count(text: &str) -> u64 {
    let by_character = |c: char| matches!(c, '\u{3040}'..='\u{30ff}' | '\u{3400}'..='\u{4dbf}' | '\u{4e00}'..='\u{9fff}' | '\u{0e00}'..='\u{0e7f}');
    let mut count = 0u64;
    for run in text.split(char::is_whitespace) {
        let mut word = false;
        for c in run.chars() {
            if by_character(c) {
                count += u64::from(word) + 1;
                word = false;
            } else if c.is_alphanumeric() {
                word = true;
            }
        }
        count += u64::from(word);
    }
    count
}

#[cfg(test)]
mod tests {
    use super::word_count;

    #[test]
    fn words_are_counted_as_livekit_splits_them() {
        assert_eq!(word_count("Question0 juliet"), 2);
        assert_eq!(word_count("  hello,   world! "), 2);
        assert_eq!(word_count("... - ?"), 0);
        assert_eq!(word_count("你好 world"), 3);
        assert_eq!(word_count("ok你好"), 3);
        assert_eq!(word_count(""), 0);
    }
}
