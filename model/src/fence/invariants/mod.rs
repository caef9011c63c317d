//! The twelve fence invariants of SPEC §3.5, as a monitor over the fence machine's inputs and
//! outputs. Like the turn monitor, it never looks inside a machine: it keeps its own account of
//! the rows from the replies it sees. Each invariant is paired with a `sometimes`
//! ([`crate::Invariant::reached`]).
//!
//! The monitor is "memory + handlers": `memory` holds what it remembers of a run and the
//! [`crate::Monitor`] interface; `handlers` takes each input and output to the handler of its
//! subject — `transport` (events, transitions applied, acks), `rows` (its own account of the
//! rows, and a restore) and `worker_loop` (what each worker's loop knows and concludes).

use serde::{Deserialize, Serialize};

use super::types::*;
use crate::Monitor as _;

mod handlers;
mod memory;
mod rename;
mod rows;
mod transport;
mod worker_loop;

pub use memory::Monitor;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Invariant {
    SealedNeverReadopted,
    ForeignBeginRefused,
    DeadTokenHarmless,
    CompareAndSeal,
    AckIdentity,
    ResendBounded,
    GapIsUnknown,
    OnlySealedIsSeal,
    FencedRootAdmitsNothing,
    IdsValidated,
    DirectPathSilent,
    RestoreFailsClosed,
}

impl crate::Invariant for Invariant {
    const ALL: &'static [Invariant] = &[
        Invariant::SealedNeverReadopted,
        Invariant::ForeignBeginRefused,
        Invariant::DeadTokenHarmless,
        Invariant::CompareAndSeal,
        Invariant::AckIdentity,
        Invariant::ResendBounded,
        Invariant::GapIsUnknown,
        Invariant::OnlySealedIsSeal,
        Invariant::FencedRootAdmitsNothing,
        Invariant::IdsValidated,
        Invariant::DirectPathSilent,
        Invariant::RestoreFailsClosed,
    ];

    fn name(self) -> &'static str {
        match self {
            Invariant::SealedNeverReadopted => "sealed_never_readopted",
            Invariant::ForeignBeginRefused => "foreign_begin_refused",
            Invariant::DeadTokenHarmless => "dead_token_harmless",
            Invariant::CompareAndSeal => "compare_and_seal",
            Invariant::AckIdentity => "ack_identity",
            Invariant::ResendBounded => "resend_bounded",
            Invariant::GapIsUnknown => "gap_is_unknown",
            Invariant::OnlySealedIsSeal => "only_sealed_is_seal",
            Invariant::FencedRootAdmitsNothing => "fenced_root_admits_nothing",
            Invariant::IdsValidated => "ids_validated",
            Invariant::DirectPathSilent => "direct_path_silent",
            Invariant::RestoreFailsClosed => "restore_fails_closed",
        }
    }

    /// What a run must show for the invariant to have been put to the test.
    fn reached(self) -> &'static str {
        match self {
            Invariant::SealedNeverReadopted => "a begin met a sealed row",
            Invariant::ForeignBeginRefused => "a foreign begin was refused, or a begin re-adopted",
            Invariant::DeadTokenHarmless => "a dead token was answered row_absent",
            Invariant::CompareAndSeal => "an end released on a generation mismatch",
            Invariant::AckIdentity => "a waiter consumed an ack",
            Invariant::ResendBounded => "a transition was re-sent",
            Invariant::GapIsUnknown => "a request ended unknown",
            Invariant::OnlySealedIsSeal => "a worker came to hold its root sealed",
            Invariant::FencedRootAdmitsNothing => "an admission was blocked",
            Invariant::IdsValidated => "an event with bad ids was rejected",
            Invariant::DirectPathSilent => "a direct turn applied a transition",
            Invariant::RestoreFailsClosed => {
                "a restore cancelled a fenced descendant or failed closed"
            }
        }
    }
}

named! {
    /// No begin succeeds as active on a sealed row (with a new token, or the same one).
    sealed_never_readopted => SealedNeverReadopted;
    /// A row's owner task never changes, and only a foreign begin is refused as `active`.
    foreign_begin_refused => ForeignBeginRefused;
    /// After a rebind or a release, requests with the old token change nothing, and a worker's
    /// loop stops using a token it was told owns no row.
    dead_token_harmless => DeadTokenHarmless;
    /// A row seals only at the generation the worker sent (none only while no owner spoke).
    compare_and_seal => CompareAndSeal;
    /// Every reply a waiter acts on is the ack of its own (token, req).
    ack_identity => AckIdentity;
    /// A transition is sent at most twice, a read exactly once.
    resend_bounded => ResendBounded;
    /// A request without an answer ends `unknown`, never `ok` or `refused`.
    gap_is_unknown => GapIsUnknown;
    /// A worker holds its root sealed only after a `sealed` reply for its token.
    only_sealed_is_seal => OnlySealedIsSeal;
    /// No descendant is admitted while its root's row is active or sealed.
    fenced_root_admits_nothing => FencedRootAdmitsNothing;
    /// A malformed token or req never reaches a transition or the mailbox.
    ids_validated => IdsValidated;
    /// A direct turn produces no event and no ack.
    direct_path_silent => DirectPathSilent;
    /// After a restore no descendant of a fenced root is pending; a malformed snapshot restores
    /// nothing.
    restore_fails_closed => RestoreFailsClosed;
}
