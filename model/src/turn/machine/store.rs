//! The stream store and the client: every delivered delta and every terminal state persisted with
//! its session-wide seq, the client's connection, a resume from its cursor, and what it renders.

use super::{TurnMachine, MAX_STORED_EVENTS, RESUME_TTL_MS};
use crate::turn::misuse::Misuse;
use crate::turn::output::*;
use crate::turn::state::Stored;
use crate::turn::types::*;
use crate::turn::Flaw;
use crate::Plant;

impl<P: Plant<Flaw>> TurnMachine<P> {
    /// Checks an input about the client against the state: its connection, and a seq the store
    /// has.
    pub(super) fn validate_client_input(&self, kind: &InputKind) -> Result<(), Misuse> {
        let s = &self.session;
        match kind {
            InputKind::ClientAck { seq } => known_seq(*seq, s.last_persisted()),
            InputKind::Disconnect if !s.client.connected => Err(Misuse::Connection {
                expected: "connected",
            }),
            InputKind::Resume { .. } if s.client.connected => Err(Misuse::Connection {
                expected: "disconnected",
            }),
            InputKind::ClientReceive { seq } => {
                if !s.client.connected {
                    return Err(Misuse::Connection {
                        expected: "connected",
                    });
                }
                known_seq(*seq, s.last_persisted())?;
                let next = s.client.received.saturating_add(1);
                if *seq > next {
                    return Err(Misuse::ReceiveGap {
                        expected_at_most: next,
                        got: *seq,
                    });
                }
                Ok(())
            }
            // The other inputs are not about the client: `validate` checks them.
            _ => Ok(()),
        }
    }

    pub(super) fn persist(&mut self, turn: TurnId, text: Option<String>, terminal: bool) {
        if self.session.store.len() >= MAX_STORED_EVENTS {
            // Validation keeps deltas under the bound; a terminal past it is still reported.
            return;
        }
        self.session.store.push(Stored {
            turn: turn.clone(),
            text: text.clone(),
            terminal,
        });
        let seq = self.session.last_persisted();
        self.emit(Output::Persisted {
            turn,
            seq,
            text,
            terminal,
        });
    }

    pub(super) fn resume(&mut self, after_seq: Seq) {
        // A disconnected client has its disconnect time, so an expired cursor is never served.
        debug_assert!(
            self.disconnect_time_known(),
            "a disconnected client has its disconnect time"
        );
        let s = &mut self.session;
        let last = s.last_persisted();
        let expired = s
            .client
            .disconnected_at
            .is_some_and(|d| s.now.saturating_sub(d) > RESUME_TTL_MS);
        let refusal = if after_seq > last {
            Some(ResumeRefusal::UnknownCursor)
        } else if expired {
            Some(ResumeRefusal::Expired)
        } else {
            None
        };
        if let Some(reason) = refusal {
            self.emit(Output::ResumeRefused { after_seq, reason });
            return;
        }
        s.client.connected = true;
        s.client.disconnected_at = None;
        debug_assert!(
            self.disconnect_time_known(),
            "a disconnected client has its disconnect time"
        );
        let from = if flawed!(self, ReplayFromCursor) && after_seq > 0 {
            after_seq
        } else {
            after_seq + 1
        };
        self.emit(Output::Replayed { from, to: last });
    }

    /// The client has a disconnect time exactly while it is disconnected. Checked by debug
    /// assertions only.
    pub(super) fn disconnect_time_known(&self) -> bool {
        let c = &self.session.client;
        c.connected == c.disconnected_at.is_none()
    }

    /// The client takes in an event: the next one is rendered, one it already has is dropped.
    pub(super) fn client_receive(&mut self, seq: Seq) {
        let s = &mut self.session;
        if seq <= s.client.received {
            self.emit(Output::DuplicateIgnored { seq });
            return;
        }
        s.client.received = seq;
        let Some(event) = s.store.get((seq - 1) as usize) else {
            return;
        };
        let (turn, terminal) = (event.turn.clone(), event.terminal);
        let piece = event.text.clone();
        let text = s.client.text_of(&turn);
        if let Some(piece) = piece {
            text.push_str(&piece);
        }
        if terminal {
            let text = text.clone();
            self.emit(Output::Rendered { turn, text });
        }
    }
}

fn known_seq(seq: Seq, last_persisted: Seq) -> Result<(), Misuse> {
    if seq > last_persisted {
        Err(Misuse::UnknownSeq {
            seq,
            last_persisted,
        })
    } else {
        Ok(())
    }
}
