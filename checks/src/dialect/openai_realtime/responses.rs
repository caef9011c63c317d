//! The responses: their creation, refusal, deltas, cancel and done.

use turnfence_model::turn::state::Phase;
use turnfence_model::turn::{ChildKind, InputKind, Mode, Output, RefuseReason, Terminal, TurnId};

use serde_json::Value;

use super::{Events, Line, Response, Session, STREAM};
use crate::trace::InputError;

impl Line<'_> {
    /// The audio format (bytes per ms) and whether VAD interrupts, from a session object (GA:
    /// `audio.output.format.type`, `audio.input.turn_detection`; beta: `output_audio_format`,
    /// `turn_detection`).
    pub(super) fn session_config(&self, s: &mut Session) {
        let session: Option<Value> = self
            .event
            .session
            .and_then(|raw| serde_json::from_str(raw.get()).ok());
        let at = |path: &[&str]| -> Option<String> {
            let mut v = session.as_ref()?;
            for k in path {
                v = v.get(*k)?;
            }
            v.as_str().map(str::to_owned)
        };
        let format =
            at(&["audio", "output", "format", "type"]).or_else(|| at(&["output_audio_format"]));
        if let Some(f) = format {
            s.bytes_per_ms = match f.as_str() {
                "audio/pcmu" | "audio/pcma" | "g711_ulaw" | "g711_alaw" => 8,
                _ => 48,
            };
        }
        let session = session.as_ref();
        let detection = session
            .and_then(|v| v.get("audio"))
            .and_then(|v| v.get("input"))
            .and_then(|v| v.get("turn_detection"))
            .or_else(|| session.and_then(|v| v.get("turn_detection")));
        if let Some(d) = detection {
            s.vad_interrupts = !d.is_null()
                && d.get("interrupt_response")
                    .and_then(Value::as_bool)
                    .unwrap_or(true);
        }
    }

    /// `response.created`: a response starts (answering the oldest create, if one waits), its
    /// model stream a child of it.
    pub(super) fn created(&self, s: &mut Session) -> Result<Events, InputError> {
        let id = self.need_str(&["response", "id"])?;
        // The server's `conversation_id` says which it is where it is stated (an id: the
        // conversation's; `null`: out of band, the API's reference for `response.created`), and
        // answers the first create of its kind: a response the server's VAD started
        // (`create_response`) answers none of the client's, and an out-of-band create still
        // pending is left for its own response.
        let stated = self
            .event
            .response
            .as_ref()
            .and_then(|r| r.conversation_id)
            .map(|c| c.get() == "null");
        let out_of_band = match stated {
            Some(oob) => {
                if let Some(i) = s.creates.iter().position(|c| c.1 == oob) {
                    s.creates.remove(i);
                }
                oob
            }
            None => !s.creates.is_empty() && s.creates.remove(0).1,
        };
        if out_of_band {
            s.responses.insert(
                id,
                Response {
                    out_of_band,
                    ..Response::default()
                },
            );
            return Ok(Vec::new());
        }
        let modalities = self
            .event
            .response
            .as_ref()
            .and_then(|r| r.output_modalities.as_ref().or(r.modalities.as_ref()));
        let text_only = modalities.is_some_and(|m| !m.iter().any(|x| x == "audio"));
        let generation = self.next_generation();
        s.responses.insert(
            id.clone(),
            Response {
                generation,
                ..Response::default()
            },
        );
        Ok(vec![
            self.input(InputKind::Accept {
                turn: id.clone().into(),
                generation,
                mode: if text_only { Mode::Text } else { Mode::Audio },
                deadline_ms: None,
                budget: None,
                interruptible: true,
            }),
            self.input(InputKind::Spawn {
                turn: id.into(),
                child: STREAM.into(),
                kind: ChildKind::Model,
                need_ms: None,
                timeout_ms: None,
            }),
        ])
    }

    /// `error`: a create refused beside an active response is that create's turn refused;
    /// other codes have no turn semantics (a cancel with nothing active; a truncation the server
    /// refused, whose claim is judged at its own line).
    pub(super) fn error(&self, s: &mut Session) -> Result<Events, InputError> {
        let code = self.str_at(&["error", "code"]);
        let message = self.str_at(&["error", "message"]).unwrap_or("");
        let refused = code == Some("conversation_already_has_active_response")
            || (code.is_none() && message.contains("already has an active response"));
        if !refused {
            return Ok(Vec::new());
        }
        let named = self.str_at(&["error", "event_id"]).map(str::to_owned);
        let turn = match named {
            Some(id) => {
                s.creates.retain(|(c, _)| *c != id);
                id
            }
            None if !s.creates.is_empty() => s.creates.remove(0).0,
            None => format!("create@{}", self.line),
        };
        Ok(vec![
            self.input(InputKind::Accept {
                turn: turn.clone().into(),
                generation: self.next_generation(),
                mode: Mode::Audio,
                deadline_ms: None,
                budget: None,
                interruptible: true,
            }),
            self.observed(
                Output::TurnRefused {
                    turn: turn.into(),
                    reason: RefuseReason::ActiveTurnExists,
                },
                &[],
            ),
        ])
    }

    /// The response a delta is of, with its next seq.
    pub(super) fn next_delta<'s>(
        &self,
        s: &'s mut Session,
    ) -> Result<(String, &'s mut Response), InputError> {
        let id = self.need_str(&["response_id"])?;
        if let Some(item) = self.str_at(&["item_id"]) {
            s.items.insert(item.to_owned(), id.clone());
        }
        let r = s.responses.get_mut(&id).ok_or_else(|| {
            self.error_at(format!(
                "a delta of response {id:?}, which no response.created began"
            ))
        })?;
        r.seq += 1;
        Ok((id, r))
    }

    /// An audio delta: its milliseconds go to the playback buffer (from `audio_ms` where the
    /// capture states it, else from the audio's bytes — the base64 `delta`'s length, or
    /// `audio_bytes` where the capture kept the count instead — and the session's format).
    pub(super) fn audio_delta(&self, s: &mut Session) -> Result<Events, InputError> {
        let stated = self.event.audio_ms;
        let bytes = match (self.event.audio_bytes, self.str_at(&["delta"])) {
            (Some(n), _) => Some(n),
            (None, Some(b64)) if stated.is_none() => Some(base64_len(b64).ok_or_else(|| {
                self.error_at(format!(
                    "an audio delta whose `delta` is not base64 ({}), so its length is unknown: \
                     keep the base64, or add `audio_ms` (its milliseconds) or `audio_bytes` (its \
                     byte count)",
                    excerpt(b64)
                ))
            })?),
            (None, _) => None,
        };
        let bpm = s.bytes_per_ms.max(1);
        let (turn, r) = self.next_delta(s)?;
        let frames = match (stated, bytes) {
            (Some(ms), _) => ms,
            (None, Some(b)) => {
                r.bytes += b;
                let ms = r.bytes / bpm;
                let new = ms - r.ms.min(ms);
                r.ms = ms;
                new
            }
            (None, None) => {
                return Err(self.error_at(
                    "an audio delta needs its `delta` (base64), or `audio_ms` or `audio_bytes`",
                ))
            }
        };
        let frames = u32::try_from(frames).map_err(|_| self.error_at("`audio_ms` too large"))?;
        r.audio_ms = r.audio_ms.saturating_add(u64::from(frames));
        let (out_of_band, generation, seq) = (r.out_of_band, r.generation, r.seq);
        if let Some(item) = self.str_at(&["item_id"]) {
            *s.item_audio.entry(item.to_owned()).or_default() += u64::from(frames);
        }
        if out_of_band {
            // Not the conversation's: only its audio queued at a clear is counted.
            return Ok(Vec::new());
        }
        Ok(vec![self.input(InputKind::Delta {
            turn: turn.into(),
            generation,
            seq,
            text: None,
            frames,
        })])
    }

    pub(super) fn text_delta(&self, s: &mut Session) -> Result<Events, InputError> {
        let text = self.need_str(&["delta"])?;
        let (turn, r) = self.next_delta(s)?;
        if r.out_of_band {
            return Ok(Vec::new());
        }
        Ok(vec![self.input(InputKind::Delta {
            turn: turn.into(),
            generation: r.generation,
            seq: r.seq,
            text: Some(text),
            frames: 0,
        })])
    }

    /// `response.done`: the response's stream ended — finished (`completed`, `incomplete`,
    /// `failed`: the model is done) or stopped (`cancelled`: its stream stops at the done, the
    /// checkpoint that acknowledges the cancel); the terminal state the log shows is held
    /// against the model's. A response the app already stopped (its cancel, or its own clear
    /// where the server does not interrupt) that the server finished all the same was done
    /// before the stop reached it — the cancel crossed the done, and the server answers it
    /// `response_cancel_not_active`: it ends here, stopped as the app stopped it, in the status
    /// the server gives.
    pub(super) fn done(&self, s: &mut Session) -> Result<Events, InputError> {
        let turn = self.need_str(&["response", "id"])?;
        let status = self.need_str(&["response", "status"])?;
        let Some(r) = s.responses.get(&turn) else {
            return Err(self.error_at(format!(
                "response.done for {turn:?}, which no response.created began"
            )));
        };
        if r.out_of_band {
            return Ok(Vec::new());
        }
        // A speech held back will stop it, before this done is given.
        let stopped = self.stopped(&turn) || s.held.is_some();
        let checkpoint = InputKind::Checkpoint {
            turn: turn.clone().into(),
            child: STREAM.into(),
            phase: "response.done".to_owned(),
            temporary_outputs: 0,
        };
        let (input, state, wildcards): (_, _, &'static [&'static str]) = match status.as_str() {
            "completed" | "incomplete" | "failed" if stopped => {
                (checkpoint, Terminal::Completed, &["state"])
            }
            "completed" | "incomplete" | "failed" => (
                InputKind::ModelDone { turn: turn.clone().into() },
                Terminal::Completed,
                &[],
            ),
            "cancelled" => (checkpoint, Terminal::Cancelled, &[]),
            other => {
                return Err(self.error_at(format!(
                    "response.done status {other:?}; expected completed, cancelled, incomplete or failed"
                )))
            }
        };
        Ok(vec![
            self.input(input),
            self.observed(
                Output::Terminal {
                    turn: turn.into(),
                    state,
                },
                wildcards,
            ),
        ])
    }

    /// The model has `turn` stopped (cancel requested, not yet ended), or a speech given at
    /// this line stops it (it cancels the turn running).
    pub(super) fn stopped(&self, turn: &str) -> bool {
        self.machine.is_some_and(|m| {
            m.session().turns.iter().any(|t| {
                *t.id == *turn
                    && (t.phase.is_cancel_requested() || self.cut.get() && t.phase.is_running())
            })
        })
    }

    /// `response.output_item.added`: which response the item is of (a player may name either).
    pub(super) fn output_item(&self, s: &mut Session) {
        let item = self.event.item.as_ref();
        let Some(response) = self.str_at(&["response_id"]) else {
            return;
        };
        if let Some(id) = item.and_then(|i| i.id.as_deref()) {
            s.items.insert(id.to_owned(), response.to_owned());
        }
        let call = item.and_then(|i| i.call_id.as_deref());
        if let Some(call) = call.filter(|_| !s.out_of_band(response)) {
            s.calls
                .entry(call.to_owned())
                .or_insert_with(|| super::Call {
                    response: response.to_owned(),
                    ..super::Call::default()
                });
        }
    }

    /// `response.cancel`: a stop of the response it names, else of the active one; with none
    /// active and none named there is no turn to stop (the server answers
    /// `response_cancel_not_active`).
    pub(super) fn cancel(&self, s: &Session) -> Events {
        let named = self.str_at(&["response_id"]).map(TurnId::from);
        if named.as_ref().is_some_and(|n| s.out_of_band(n)) {
            return Vec::new();
        }
        let active = self.machine.and_then(|m| {
            m.session()
                .turns
                .iter()
                .find(|t| !matches!(t.phase, Phase::Terminal { .. }))
                .map(|t| t.id.clone())
        });
        let Some(turn) = named.or(active) else {
            return Vec::new();
        };
        let request_id = self.str_or("event_id", || format!("cancel@{}", self.line));
        vec![self.input(InputKind::Stop { turn, request_id })]
    }
}

/// Decoded bytes of a base64 string, from its length; `None`: it is not base64 (a capture that
/// redacted the audio).
fn base64_len(s: &str) -> Option<u64> {
    let body = s.trim_end_matches('=');
    // Comparisons folded with `&`, no table and no early exit within a chunk: the compiler turns
    // the check into vector code, and it runs at the speed of reading.
    let base64 = s.len() - body.len() <= 2
        && body
            .as_bytes()
            .chunks(64)
            .all(|c| c.iter().fold(true, |ok, &b| ok & is_base64(b)));
    base64.then(|| (body.len() as u64 * 3) / 4)
}

/// A byte of the base64 alphabet (padding aside).
fn is_base64(b: u8) -> bool {
    let letter = (b | 0x20).wrapping_sub(b'a') < 26;
    let digit = b.wrapping_sub(b'0') < 10;
    letter | digit | (b == b'+') | (b == b'/')
}

/// The start of a field's text, for a message.
fn excerpt(s: &str) -> String {
    let mut cut: String = s.chars().take(40).collect();
    if cut.len() < s.len() {
        cut.push('…');
    }
    format!("{cut:?}")
}

#[cfg(test)]
mod tests {
    use super::{base64_len, is_base64};

    #[test]
    fn the_base64_alphabet_is_letters_digits_plus_and_slash_of_all_256_bytes() {
        for b in 0..=u8::MAX {
            let alphabet = b.is_ascii_alphanumeric() || b == b'+' || b == b'/';
            assert_eq!(is_base64(b), alphabet, "byte {b:#04x}");
        }
    }

    #[test]
    fn base64_length_counts_decoded_bytes_and_refuses_anything_else() {
        assert_eq!(base64_len("QUJD"), Some(3));
        assert_eq!(base64_len("QUI="), Some(2));
        assert_eq!(base64_len("QQ=="), Some(1));
        assert_eq!(base64_len(""), Some(0));
        assert_eq!(base64_len("QQ==="), None);
        assert_eq!(base64_len("[redacted 25600 bytes]"), None);
        let long = "A".repeat(200) + "é";
        assert_eq!(base64_len(&long), None);
    }
}
