//! The turnfence verification suite: the release gate over the turn machine, the lab's event
//! vocabulary, conformance checking of traces, random runs and exhaustive exploration of any
//! machine, the recorder a Rust system writes its trace with, and (in `main.rs`) the
//! `turnfence` CLI.
//!
//! # From your own tests
//!
//! Everything the CLI does is a function here, so a `cargo test` of your own can call it.
//!
//! Check a trace — any reader of JSON Lines; the meta line names the dialect and machine:
//!
//! ```
//! let trace = r#"{"meta":{"complete":["terminal"]}}
//! {"at":0,"input":"accept","turn":"t1","generation":1,"mode":"text"}
//! {"at":5,"input":"delta","turn":"t1","generation":1,"seq":1,"text":"Hi"}
//! {"at":5,"output":"delivered","turn":"t1","generation":1,"seq":1}
//! {"at":9,"input":"stop","turn":"t1","request_id":"r1"}
//! {"at":9,"output":"stop_answered","turn":"t1","request_id":"r1","answer":"requested"}
//! {"at":9,"output":"terminal","turn":"t1","state":"cancelled"}
//! {"at":12,"output":"delivered","turn":"t1","generation":1,"seq":2}
//! "#;
//! let checked = turnfence_checks::dialect::check_input(trace.as_bytes(), &Default::default());
//! let verdict = checked.verdict.expect("a readable trace");
//! // A delivery after the stop: no_late_delivery, at line 8.
//! let late = verdict.findings.iter().find(|f| f.invariant == Some("no_late_delivery"));
//! assert_eq!(late.map(|f| f.line), Some(8));
//! ```
//!
//! Fuzz a machine — random cases from a seed; a broken invariant comes back shrunk:
//!
//! ```
//! use turnfence_checks::fuzz;
//! use turnfence_model::fence::FenceMachine;
//!
//! for i in 0..10 {
//!     let case = fuzz::run_case::<FenceMachine>(fuzz::case_seed(7, i), 100, None, &FenceMachine::new);
//!     assert!(case.is_ok(), "case {i} broke an invariant");
//! }
//! ```
//!
//! Explore a machine — every state within bounds, breadth-first:
//!
//! ```
//! use turnfence_checks::explore::{self, turn::TurnBounds};
//! use turnfence_model::turn::TurnMachine;
//!
//! let bounds = TurnBounds { turns: 1, children_per_turn: 1, deltas_per_turn: 1, deadline_ms: 100, client: false, profile: None, symmetry: false };
//! let explored = explore::exhaustive::<TurnMachine>(&TurnMachine::new, &bounds);
//! assert!(explored.counterexample.is_none() && !explored.truncated);
//! assert_eq!(explored.states, 423); // as pinned in snapshots/explore_counts_small.snap
//! ```
//!
//! A machine of your own is checked, fuzzed and explored the same way once it implements the
//! model's `Machine` and `Monitor` and this crate's `Conform`, `Fuzz` and `Explore`
//! (`checks/tests/it/third_machine.rs` in the repository is a counter written so).

pub mod adapter;
pub mod dialect;
pub mod explore;
pub mod fuzz;
pub mod gate;
pub mod live;
pub mod recorder;
pub mod report;
pub mod shared;
pub mod sync;
pub mod trace;

/// Whether this build of the CLI can plant a flaw (`turnfence fuzz/explore/replay --flaw`): only
/// with this crate's own `flaws` feature, which a person asks for (`--features flaws`) and no
/// dependency can turn on. The model's planted machines are types of their own, so a build
/// without it contains none of their code. The gate reports this value in its environment block.
pub const FLAWS_COMPILED: bool = cfg!(feature = "flaws");
