//! Planted flaws of the fence machine: every historical bug of SPEC §4 and one per invariant.
//! Names only: a machine breaks one only as `FenceMachine<Planted<Flaw>>` (`crate::plant`).

use serde::{Deserialize, Serialize};

use super::invariants::Invariant;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Flaw {
    /// (1) One ack per token: a timed-out inspect's late `active` is read as the next end's answer.
    AckPerToken,
    /// (2) No re-adoption: after a lost begin ack, every re-begin is refused `already active`.
    NoReadoption,
    /// (3) A lost end ack leaves the token bound, and a refused inspect keeps it: later rounds use
    /// a token that owns no row.
    EndKeepsBinding,
    /// (4) A read (inspect) is re-sent like a transition.
    ResendRead,
    /// (5) Re-adoption keeps the dead attempt's token, so its late end releases the live fence.
    ReadoptKeepsToken,
    /// (6) A foreign begin takes a live root over (dead-owner takeover).
    DeadOwnerTakeover,
    /// (7) A same-token begin answers `active` on a sealed row.
    SameTokenAnswersActive,
    /// (8) An end is sent without the generation and seals blindly.
    BlindSeal,
    /// (9) `released` on a terminal end is taken as a seal.
    ReleasedIsSeal,
    /// (10) The request id is not validated: `../escape` reaches the mailbox.
    ReqNotValidated,
    /// A direct turn goes through the event queue and the ack mailbox.
    DirectUsesTransport,
    /// A request without an answer ends `refused` instead of `unknown`.
    GapAsRefusal,
    /// A descendant is admitted under a fenced root.
    AdmitUnderFence,
    /// A restore ignores the fences: fenced descendants come back, a malformed snapshot restores.
    RestoreIgnoresFences,
}

impl crate::Flaw for Flaw {
    type Invariant = Invariant;

    const ALL: &'static [Flaw] = &[
        Flaw::AckPerToken,
        Flaw::NoReadoption,
        Flaw::EndKeepsBinding,
        Flaw::ResendRead,
        Flaw::ReadoptKeepsToken,
        Flaw::DeadOwnerTakeover,
        Flaw::SameTokenAnswersActive,
        Flaw::BlindSeal,
        Flaw::ReleasedIsSeal,
        Flaw::ReqNotValidated,
        Flaw::DirectUsesTransport,
        Flaw::GapAsRefusal,
        Flaw::AdmitUnderFence,
        Flaw::RestoreIgnoresFences,
    ];

    /// The invariant the flaw breaks.
    fn breaks(self) -> Invariant {
        use Invariant as I;
        match self {
            Flaw::AckPerToken => I::AckIdentity,
            Flaw::NoReadoption | Flaw::DeadOwnerTakeover => I::ForeignBeginRefused,
            Flaw::EndKeepsBinding | Flaw::ReadoptKeepsToken => I::DeadTokenHarmless,
            Flaw::ResendRead => I::ResendBounded,
            Flaw::SameTokenAnswersActive => I::SealedNeverReadopted,
            Flaw::BlindSeal => I::CompareAndSeal,
            Flaw::ReleasedIsSeal => I::OnlySealedIsSeal,
            Flaw::ReqNotValidated => I::IdsValidated,
            Flaw::DirectUsesTransport => I::DirectPathSilent,
            Flaw::GapAsRefusal => I::GapIsUnknown,
            Flaw::AdmitUnderFence => I::FencedRootAdmitsNothing,
            Flaw::RestoreIgnoresFences => I::RestoreFailsClosed,
        }
    }
}
