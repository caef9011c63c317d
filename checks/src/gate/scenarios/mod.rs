//! The gate's scenarios, as input scripts for the turn machine: the lab's eight here, a real
//! stack's profile's in its folder ([`crate::dialect::GATES`]), written with the same `Script`.
//! Each one is what the real components would report, in virtual time; nothing here states an
//! outcome — the machine's outputs do.

use turnfence_model::turn::{Budget, ChildKind, Input, InputKind, Mode, Profile, TurnId};
use turnfence_model::Millis;

/// A named input script for one session.
#[derive(Clone, Debug)]
pub struct Scenario {
    pub name: &'static str,
    /// The turn the scenario is about (its log's header names it; a line about another turn
    /// names its own).
    pub turn: &'static str,
    pub inputs: Vec<Input>,
}

/// The lab gate's scenario names, in gate order.
pub const NAMES: [&str; 8] = [
    "baseline_stream",
    "cancel_tree",
    "voice_barge_in",
    "deadline_budget",
    "cancellable_tool",
    "noncancellable_tool",
    "reconnect_replay",
    "idempotent_stop",
];

/// The scenario of that name.
pub fn scenario(name: &str) -> Option<Scenario> {
    let build = match name {
        "baseline_stream" => baseline_stream,
        "cancel_tree" => cancel_tree,
        "voice_barge_in" => voice_barge_in,
        "deadline_budget" => deadline_budget,
        "cancellable_tool" => cancellable_tool,
        "noncancellable_tool" => noncancellable_tool,
        "reconnect_replay" => reconnect_replay,
        "idempotent_stop" => idempotent_stop,
        _ => {
            return crate::dialect::GATES
                .iter()
                .find_map(|g| (g.scenario)(name))
        }
    };
    Some(build())
}

/// The names of the gate's scenarios for a profile, in gate order: the lab's eight, or those of
/// the real stack's gate the registry lists for it (none where its rules are fuzzed, explored and
/// checked but have no gate of their own).
pub fn names(profile: Profile) -> &'static [&'static str] {
    if profile.is_lab() {
        return &NAMES;
    }
    crate::dialect::GATES
        .iter()
        .find(|g| g.profile == profile)
        .map_or(&[], |g| g.names)
}

/// The profile whose gate runs the scenario of that name.
pub fn profile_of(name: &str) -> Option<Profile> {
    Profile::ALL
        .iter()
        .copied()
        .find(|p| names(*p).contains(&name))
}

/// Every scenario of the lab gate, in gate order.
pub fn all() -> Vec<Scenario> {
    NAMES.iter().filter_map(|n| scenario(n)).collect()
}

/// Writes a script for one turn: each call adds one input at a time.
pub(crate) struct Script {
    turn: &'static str,
    pub(crate) inputs: Vec<Input>,
}

impl Script {
    pub(crate) fn new(turn: &'static str) -> Script {
        Script {
            turn,
            inputs: Vec::new(),
        }
    }

    pub(crate) fn at(&mut self, at: Millis, kind: InputKind) -> &mut Script {
        self.inputs.push(Input::new(at, kind));
        self
    }

    /// An input about the script's turn.
    pub(crate) fn on_turn(
        &mut self,
        at: Millis,
        kind: impl FnOnce(TurnId) -> InputKind,
    ) -> &mut Script {
        let turn = self.turn.into();
        self.at(at, kind(turn))
    }

    pub(crate) fn accept(
        &mut self,
        at: Millis,
        generation: u64,
        mode: Mode,
        deadline_ms: Option<u64>,
    ) -> &mut Script {
        self.on_turn(at, |turn| InputKind::Accept {
            turn,
            generation,
            mode,
            deadline_ms,
            budget: None,
            interruptible: true,
        })
    }

    pub(crate) fn spawn(&mut self, at: Millis, child: &str, kind: ChildKind) -> &mut Script {
        self.spawn_needing(at, child, kind, None)
    }

    pub(crate) fn spawn_needing(
        &mut self,
        at: Millis,
        child: &str,
        kind: ChildKind,
        need_ms: Option<u64>,
    ) -> &mut Script {
        self.on_turn(at, |turn| InputKind::Spawn {
            turn,
            child: child.into(),
            kind,
            need_ms,
            timeout_ms: None,
        })
    }

    pub(crate) fn delta(
        &mut self,
        at: Millis,
        generation: u64,
        seq: u64,
        text: Option<&str>,
        frames: u32,
    ) -> &mut Script {
        self.on_turn(at, |turn| InputKind::Delta {
            turn,
            generation,
            seq,
            text: text.map(str::to_owned),
            frames,
        })
    }

    pub(crate) fn text(&mut self, at: Millis, seq: u64, text: &str) -> &mut Script {
        self.delta(at, 1, seq, Some(text), 0)
    }

    pub(crate) fn checkpoint(
        &mut self,
        at: Millis,
        child: &str,
        phase: &str,
        temporary_outputs: u32,
    ) -> &mut Script {
        self.on_turn(at, |turn| InputKind::Checkpoint {
            turn,
            child: child.into(),
            phase: phase.into(),
            temporary_outputs,
        })
    }

    pub(crate) fn stop(&mut self, at: Millis, request_id: &str) -> &mut Script {
        self.on_turn(at, |turn| InputKind::Stop {
            turn,
            request_id: request_id.into(),
        })
    }

    pub(crate) fn completed(&mut self, at: Millis, child: &str) -> &mut Script {
        self.on_turn(at, |turn| InputKind::ChildCompleted {
            turn,
            child: child.into(),
        })
    }

    pub(crate) fn model_done(&mut self, at: Millis) -> &mut Script {
        self.on_turn(at, |turn| InputKind::ModelDone { turn })
    }

    pub(crate) fn done(&mut self, name: &'static str) -> Scenario {
        Scenario {
            name,
            turn: self.turn,
            inputs: std::mem::take(&mut self.inputs),
        }
    }
}

fn tool(name: &str, cancellable: bool) -> ChildKind {
    ChildKind::Tool {
        name: name.into(),
        cancellable,
    }
}

/// Retrieval, then a streamed answer; the model stream retransmits one delta.
fn baseline_stream() -> Scenario {
    Script::new("turn-text-001")
        .accept(0, 1, Mode::Text, Some(500))
        .spawn(4, "retrieval", ChildKind::Retrieval)
        .completed(21, "retrieval")
        .spawn(23, "model-stream", ChildKind::Model)
        .text(61, 1, "Storage ")
        .text(82, 2, "is healthy")
        .text(83, 2, "is healthy")
        .model_done(104)
        .done("baseline_stream")
}

/// A stop while three children run; a late delta, a planner that tries one more tool.
fn cancel_tree() -> Scenario {
    Script::new("turn-text-002")
        .accept(0, 1, Mode::Text, Some(800))
        .spawn(2, "retrieval", ChildKind::Retrieval)
        .spawn(3, "model-stream", ChildKind::Model)
        .spawn(4, "tts-buffer", ChildKind::Tts)
        .delta(42, 1, 1, Some("Checking "), 3)
        .stop(75, "stop-001")
        .spawn(77, "late-tool", tool("status.lookup", true))
        .checkpoint(78, "retrieval", "before_merge", 0)
        .delta(79, 1, 2, Some("the disks"), 2)
        .checkpoint(80, "model-stream", "before_decode", 0)
        .done("cancel_tree")
}

/// The user speaks over generation 7; generation 8 answers. A client create while 7 still runs
/// is refused.
fn voice_barge_in() -> Scenario {
    let mut s = Script::new("turn-voice-001");
    s.accept(0, 7, Mode::Audio, None)
        .delta(18, 7, 1, None, 2)
        .at(20, InputKind::FRAME_PLAYED)
        .at(
            30,
            InputKind::Accept {
                turn: "turn-voice-001b".into(),
                generation: 8,
                mode: Mode::Audio,
                deadline_ms: None,
                budget: None,
                interruptible: true,
            },
        )
        .delta(44, 7, 2, None, 4)
        .at(46, InputKind::FRAME_PLAYED)
        .at(
            70,
            InputKind::SpeechStarted {
                confidence: 0.94,
                since: None,
            },
        )
        .delta(79, 7, 3, None, 1)
        .at(
            84,
            InputKind::Accept {
                turn: "turn-voice-002".into(),
                generation: 8,
                mode: Mode::Audio,
                deadline_ms: None,
                budget: None,
                interruptible: true,
            },
        );
    let mut next = Script::new("turn-voice-002");
    next.delta(116, 8, 1, None, 1)
        .model_done(120)
        .at(151, InputKind::FRAME_PLAYED);
    s.inputs.extend(next.inputs);
    s.done("voice_barge_in")
}

/// A 90 ms envelope split 25/55/10; a tool asks to start with too little time, then after the end.
fn deadline_budget() -> Scenario {
    Script::new("turn-text-003")
        .at(
            0,
            InputKind::Accept {
                turn: "turn-text-003".into(),
                generation: 1,
                mode: Mode::Text,
                deadline_ms: Some(90),
                budget: Some(Budget {
                    retrieval_ms: 25,
                    model_ms: 55,
                    reserve_ms: 10,
                }),
                interruptible: true,
            },
        )
        .spawn(1, "retrieval", ChildKind::Retrieval)
        .completed(24, "retrieval")
        .spawn(26, "model-stream", ChildKind::Model)
        .text(40, 1, "Partial ")
        .spawn_needing(
            86,
            "inventory-lookup",
            tool("inventory.lookup", true),
            Some(10),
        )
        .at(90, InputKind::Tick)
        .checkpoint(91, "model-stream", "before_decode", 0)
        .spawn(92, "late-report", tool("report.build", true))
        .done("deadline_budget")
}

/// A cancellable tool with a temporary output, stopped before it publishes.
fn cancellable_tool() -> Scenario {
    Script::new("turn-tool-001")
        .accept(0, 1, Mode::Text, Some(500))
        .spawn(14, "report-build", tool("report.build", true))
        .checkpoint(34, "report-build", "read_inputs", 0)
        .checkpoint(54, "report-build", "write_temporary", 1)
        .stop(65, "stop-002")
        .checkpoint(70, "report-build", "before_publish", 0)
        .done("cancellable_tool")
}

/// A stop while a non-cancellable commit is in flight; the commit then goes through.
fn noncancellable_tool() -> Scenario {
    let mut s = Script::new("turn-tool-002");
    s.accept(0, 1, Mode::Text, Some(500))
        .spawn(5, "model-stream", ChildKind::Model)
        .text(12, 1, "Issuing the refund")
        .spawn(22, "external-commit", tool("external.commit", false))
        .at(
            50,
            InputKind::CommitSent {
                turn: "turn-tool-002".into(),
                child: "external-commit".into(),
                idempotency_key: "idem-demo-001".into(),
            },
        )
        .stop(55, "stop-003")
        .text(60, 2, " now.")
        .checkpoint(62, "model-stream", "before_decode", 0)
        .at(
            105,
            InputKind::CommitAcked {
                turn: "turn-tool-002".into(),
                child: "external-commit".into(),
            },
        );
    s.done("noncancellable_tool")
}

/// The client drops after seq 3, the turn finishes meanwhile, the client resumes after 3 and the
/// transport hands it seq 5 twice.
fn reconnect_replay() -> Scenario {
    let mut s = Script::new("turn-text-004");
    s.accept(0, 1, Mode::Text, None)
        .spawn(5, "model-stream", ChildKind::Model);
    for (seq, at, text) in [(1, 20, "The "), (2, 35, "service "), (3, 50, "is ")] {
        s.text(at, seq, text)
            .at(at, InputKind::ClientReceive { seq })
            .at(at + 1, InputKind::ClientAck { seq });
    }
    s.at(55, InputKind::Disconnect)
        .text(70, 4, "healthy")
        .text(84, 5, ".")
        .model_done(92)
        .at(120, InputKind::Resume { after_seq: 3 });
    for (at, seq) in [(121, 4), (122, 5), (124, 5), (126, 6)] {
        s.at(at, InputKind::ClientReceive { seq });
    }
    s.done("reconnect_replay")
}

/// The same stop three times: once, retried while the turn drains, and again after it ended.
fn idempotent_stop() -> Scenario {
    Script::new("turn-text-005")
        .accept(0, 1, Mode::Text, None)
        .spawn(2, "model-stream", ChildKind::Model)
        .text(20, 1, "Working")
        .stop(40, "stop-repeat-001")
        .stop(42, "stop-repeat-001")
        .checkpoint(45, "model-stream", "before_decode", 0)
        .stop(70, "stop-repeat-002")
        .done("idempotent_stop")
}
