//! Planted flaws of the fence machine: every historical bug of SPEC §4 and one per invariant.
//! Compiled only with the `flaws` feature.

use serde::{Deserialize, Serialize};

use super::invariants::FenceInvariant;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FenceFlaw {
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

impl FenceFlaw {
    pub const ALL: [FenceFlaw; 14] = [
        FenceFlaw::AckPerToken,
        FenceFlaw::NoReadoption,
        FenceFlaw::EndKeepsBinding,
        FenceFlaw::ResendRead,
        FenceFlaw::ReadoptKeepsToken,
        FenceFlaw::DeadOwnerTakeover,
        FenceFlaw::SameTokenAnswersActive,
        FenceFlaw::BlindSeal,
        FenceFlaw::ReleasedIsSeal,
        FenceFlaw::ReqNotValidated,
        FenceFlaw::DirectUsesTransport,
        FenceFlaw::GapAsRefusal,
        FenceFlaw::AdmitUnderFence,
        FenceFlaw::RestoreIgnoresFences,
    ];

    /// The invariant the flaw breaks.
    pub fn breaks(self) -> FenceInvariant {
        use FenceInvariant as I;
        match self {
            FenceFlaw::AckPerToken => I::AckIdentity,
            FenceFlaw::NoReadoption | FenceFlaw::DeadOwnerTakeover => I::ForeignBeginRefused,
            FenceFlaw::EndKeepsBinding | FenceFlaw::ReadoptKeepsToken => I::DeadTokenHarmless,
            FenceFlaw::ResendRead => I::ResendBounded,
            FenceFlaw::SameTokenAnswersActive => I::SealedNeverReadopted,
            FenceFlaw::BlindSeal => I::CompareAndSeal,
            FenceFlaw::ReleasedIsSeal => I::OnlySealedIsSeal,
            FenceFlaw::ReqNotValidated => I::IdsValidated,
            FenceFlaw::DirectUsesTransport => I::DirectPathSilent,
            FenceFlaw::GapAsRefusal => I::GapIsUnknown,
            FenceFlaw::AdmitUnderFence => I::FencedRootAdmitsNothing,
            FenceFlaw::RestoreIgnoresFences => I::RestoreFailsClosed,
        }
    }
}
