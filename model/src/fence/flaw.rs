//! Planted flaws of the fence machine: every historical bug of SPEC §4 and one per invariant.
//! Names only: a machine breaks one only as `FenceMachine<Planted<Flaw>>` (`crate::plant`).

use super::invariants::Invariant;

flaws! {
    /// (1) One ack per token: a timed-out inspect's late `active` is read as the next end's answer.
    AckPerToken => AckIdentity,
    /// (2) No re-adoption: after a lost begin ack, every re-begin is refused `already active`.
    NoReadoption => ForeignBeginRefused,
    /// (3) A lost end ack leaves the token bound, and a refused inspect keeps it: later rounds use
    /// a token that owns no row.
    EndKeepsBinding => DeadTokenHarmless,
    /// (4) A read (inspect) is re-sent like a transition.
    ResendRead => ResendBounded,
    /// (5) Re-adoption keeps the dead attempt's token, so its late end releases the live fence.
    ReadoptKeepsToken => DeadTokenHarmless,
    /// (6) A foreign begin takes a live root over (dead-owner takeover).
    DeadOwnerTakeover => ForeignBeginRefused,
    /// (7) A same-token begin answers `active` on a sealed row.
    SameTokenAnswersActive => SealedNeverReadopted,
    /// (8) An end is sent without the generation and seals blindly.
    BlindSeal => CompareAndSeal,
    /// (9) `released` on a terminal end is taken as a seal.
    ReleasedIsSeal => OnlySealedIsSeal,
    /// (10) The request id is not validated: `../escape` reaches the mailbox.
    ReqNotValidated => IdsValidated,
    /// A direct turn goes through the event queue and the ack mailbox.
    DirectUsesTransport => DirectPathSilent,
    /// A request without an answer ends `refused` instead of `unknown`.
    GapAsRefusal => GapIsUnknown,
    /// A descendant is admitted under a fenced root.
    AdmitUnderFence => FencedRootAdmitsNothing,
    /// A restore ignores the fences: fenced descendants come back, a malformed snapshot restores.
    RestoreIgnoresFences => RestoreFailsClosed,
}
