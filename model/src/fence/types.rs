//! The fence machine's alphabet (SPEC §3): inputs from workers, the supervisor loop and the
//! queue; outputs of the table, the transport and the worker's loop layer.

use serde::{Deserialize, Serialize};

pub use super::id::Id;
pub type Token = Id;
pub type Req = Id;
pub type RootId = Id;
pub type TaskId = Id;
pub type WorkerId = Id;

/// A map of the fence state and of its monitor's memory: a flat vector sorted by key (litemap),
/// for maps of a few entries cloned with every explored state — one allocation for all the
/// entries, where a B-tree allocates nodes of eleven slots. Iterated in key order, like a B-tree.
pub type Map<K, V> = litemap::LiteMap<K, V>;

/// A set kept as [`Map`] keeps its keys: a flat vector sorted by value, one allocation for all
/// of them. Iterated in order and serialized as a sequence, like a B-tree set.
#[derive(Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Set<T>(Map<T, ()>);

/// A clone in place keeps the set's buffer (`crate::clone_map_from`).
impl<T: Clone> Clone for Set<T> {
    fn clone(&self) -> Set<T> {
        Set(self.0.clone())
    }

    fn clone_from(&mut self, source: &Set<T>) {
        crate::clone_map_from(&mut self.0, &source.0);
    }
}

crate::hashed::copy_in_place_by_clone_from! {
    impl<T> for Set<T>;
}

impl<T> Default for Set<T> {
    fn default() -> Set<T> {
        Set(Map::new())
    }
}

impl<T: Ord> Set<T> {
    pub fn new() -> Set<T> {
        Set::default()
    }

    /// Adds `value`; whether it was new.
    pub fn insert(&mut self, value: T) -> bool {
        self.0.insert(value, ()).is_none()
    }

    /// Takes `value` out; whether it was there.
    pub fn remove<Q: Ord + ?Sized>(&mut self, value: &Q) -> bool
    where
        T: std::borrow::Borrow<Q>,
    {
        self.0.remove(value).is_some()
    }

    pub fn contains<Q: Ord + ?Sized>(&self, value: &Q) -> bool
    where
        T: std::borrow::Borrow<Q>,
    {
        self.0.contains_key(value)
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The values, in order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &T> + '_ {
        self.0.keys()
    }
}

impl<T: Ord> FromIterator<T> for Set<T> {
    fn from_iter<I: IntoIterator<Item = T>>(values: I) -> Set<T> {
        let mut set = Set::new();
        values.into_iter().for_each(|v| {
            set.insert(v);
        });
        set
    }
}

impl<T: Serialize + Ord> Serialize for Set<T> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter())
    }
}

/// The fence action a request asks for. Anything else is `invalid` (transition T0).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Action {
    Begin,
    Inspect,
    End,
    #[serde(other)]
    Invalid,
}

impl Action {
    /// The action's name in the canonical form.
    pub fn name(self) -> &'static str {
        match self {
            Action::Begin => "begin",
            Action::Inspect => "inspect",
            Action::End => "end",
            Action::Invalid => "invalid",
        }
    }

    /// A transition changes the row; a read does not. Transitions are re-sent once, reads never.
    pub fn is_transition(self) -> bool {
        matches!(self, Action::Begin | Action::End)
    }
}

/// The outcome an end asks to record.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum EndOutcome {
    Revision,
    Terminal,
    Degraded,
    AuthorStop,
}

/// A status a reply carries. "Released" means the row is absent; it is never stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Active,
    Sealed,
    Released,
    Error,
}

impl Status {
    /// The status's name in the canonical form.
    pub fn name(self) -> &'static str {
        match self {
            Status::Active => "active",
            Status::Sealed => "sealed",
            Status::Released => "released",
            Status::Error => "error",
        }
    }
}

/// How a worker reaches the supervisor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Path {
    /// In the supervisor's process: the transition is a call. No event, no ack, no wait.
    Direct,
    /// Through the event queue and the ack mailbox, with waits and one re-send.
    Pooled,
}

/// A transition's reply: exactly the fields the table names (SPEC §3.2).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Reply {
    pub ok: bool,
    pub status: Status,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<Token>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner_message_generation: Option<u64>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub row_absent: bool,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub generation_mismatch: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Reply {
    pub(crate) fn new(ok: bool, status: Status) -> Reply {
        Reply {
            ok,
            status,
            token: None,
            owner_message_generation: None,
            row_absent: false,
            generation_mismatch: false,
            error: None,
        }
    }
}

/// What the worker's loop makes of a request (SPEC §3.4).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Ok {
        status: Status,
    },
    Refused {
        status: Status,
    },
    /// No answer came: a gap, never a refusal or a verdict.
    Unknown,
}

impl std::fmt::Display for Verdict {
    /// `ok (active)`, `refused (error)`, `unknown`: the canonical names.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Verdict::Ok { status } => write!(f, "ok ({})", status.name()),
            Verdict::Refused { status } => write!(f, "refused ({})", status.name()),
            Verdict::Unknown => write!(f, "unknown"),
        }
    }
}

/// A row as a queue snapshot holds it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct SnapshotRow {
    pub root: RootId,
    pub status: Status,
}

/// The fence part of a queue snapshot: rows, or something that is not a list of rows.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum FenceSnapshot {
    Rows(Vec<SnapshotRow>),
    /// Not a list, or an entry that is not a row: nothing may be restored.
    Malformed(String),
}

/// A pending task as a queue snapshot holds it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct SnapshotTask {
    pub task: TaskId,
    pub root: RootId,
}

/// One thing that happens to the fence system, at virtual time `at`.
pub type Input = crate::Timed<InputKind>;

impl crate::TickKind for InputKind {
    const TICK: InputKind = InputKind::Tick;
}

impl InputKind {
    /// A worker's plain request: no expected generation, root or task.
    pub fn request(
        worker: WorkerId,
        action: Action,
        token: Option<Token>,
        req: Req,
        outcome: Option<EndOutcome>,
    ) -> InputKind {
        InputKind::Request {
            worker,
            action,
            token,
            req,
            outcome,
            expected_generation: None,
            root: None,
            task: None,
        }
    }
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// The kinds of fence input.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "input", rename_all = "snake_case", deny_unknown_fields)]
pub enum InputKind {
    /// A worker starts a task of a root, in the supervisor's process (`direct`) or in a pool.
    WorkerStart {
        worker: WorkerId,
        path: Path,
        task: TaskId,
        root: RootId,
    },
    /// A worker asks for a fence transition. Without `token`, the worker's loop picks it: its
    /// bound token (for a revision with none bound, its last seal's). `root` and `task` default to
    /// the worker's; an end carries the worker's known generation unless `expected_generation`
    /// says otherwise.
    Request {
        worker: WorkerId,
        action: Action,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        token: Option<Token>,
        req: Req,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        outcome: Option<EndOutcome>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        expected_generation: Option<u64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        root: Option<RootId>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        task: Option<TaskId>,
    },
    /// The supervisor loop takes the head event off its queue and handles it. With `lose_ack`,
    /// the transition is applied and its ack is then lost.
    SupervisorStep {
        #[serde(default, skip_serializing_if = "is_false")]
        lose_ack: bool,
    },
    /// The head event is lost before the supervisor sees it.
    DropEvent,
    /// Time passes: waits expire.
    Tick,
    /// The owner sends a message to a running root.
    OwnerMessage { root: RootId },
    /// A task finished.
    TaskDone { task: TaskId },
    /// A new task asks to be queued under a root.
    Enqueue { task: TaskId, root: RootId },
    /// The supervisor restarts from a queue snapshot.
    Restore {
        fences: FenceSnapshot,
        pending: Vec<SnapshotTask>,
    },
}

/// What the fence system does.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "output", rename_all = "snake_case", deny_unknown_fields)]
pub enum Output {
    /// A pooled worker put a fence event on the supervisor's queue (`attempt` 2 is the re-send).
    EventQueued {
        worker: WorkerId,
        token: Token,
        req: Req,
        action: Action,
        attempt: u8,
    },
    /// An event was lost before the supervisor saw it.
    EventDropped { token: Token, req: Req },
    /// The supervisor refused an event's ids: no transition, no ack.
    EventRejected { token: Token, req: Req },
    /// The table applied a worker's request, as it was asked.
    Applied {
        worker: WorkerId,
        token: Token,
        req: Req,
        action: Action,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        outcome: Option<EndOutcome>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        expected_generation: Option<u64>,
        reply: Reply,
    },
    /// The supervisor wrote the ack `<token>.<req>`.
    AckWritten {
        token: Token,
        req: Req,
        status: Status,
    },
    /// The ack of an applied transition was lost.
    AckLost { token: Token, req: Req },
    /// Old acks were removed from the mailbox (older than an hour, or beyond 256).
    AcksPruned { count: u32 },
    /// A waiting worker read (and removed) an ack.
    AckConsumed {
        worker: WorkerId,
        token: Token,
        req: Req,
    },
    /// A wait ran out and a transition is sent again, identical.
    Resent {
        worker: WorkerId,
        token: Token,
        req: Req,
    },
    /// What the worker's loop makes of its request.
    Verdict {
        worker: WorkerId,
        action: Action,
        token: Token,
        req: Req,
        verdict: Verdict,
    },
    /// The worker now holds its root sealed.
    SealBelieved {
        worker: WorkerId,
        root: RootId,
        token: Token,
    },
    /// An owner message was written to the root's mailbox; `generation` is the row's after it.
    OwnerMessageWritten {
        root: RootId,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        generation: Option<u64>,
    },
    /// An owner message was refused: the root's row is sealed.
    OwnerMessageRefused { root: RootId },
    /// `task_done` removed the row of the finished root.
    RowCleared { root: RootId },
    /// A task was queued.
    Admitted { task: TaskId, root: RootId },
    /// A task was not queued: its root's fence is active or sealed.
    AdmissionBlocked {
        task: TaskId,
        root: RootId,
        status: Status,
    },
    /// A restore finished: what was restored, what was cancelled, and whether it failed closed.
    Restored {
        restored: Vec<TaskId>,
        cancelled: Vec<TaskId>,
        #[serde(default, skip_serializing_if = "is_false")]
        fail_closed: bool,
    },
}

/// Puts `value` under `key` unless the map holds it there already: only a change borrows the
/// part mutably (which copies it if it is shared with another state, and forgets its hash).
pub(crate) fn insert_changed<K: Ord + Clone, V: PartialEq + Clone>(
    map: &mut crate::Hashed<Map<K, V>>,
    key: K,
    value: V,
) {
    if map.get(&key) != Some(&value) {
        map.insert(key, value);
    }
}
