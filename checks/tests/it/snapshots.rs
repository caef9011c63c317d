//! Reviewed snapshots of the gate's evidence: each scenario's log and output sequence, and the
//! acceptance summary.

use turnfence_checks::gate;
use turnfence_model::turn::TurnMachine;

#[test]
fn gate_evidence_snapshots() {
    let run = gate::run(&gate::NAMES, TurnMachine::new);
    crate::snapshot_settings().bind(|| {
        for s in &run.scenarios {
            insta::assert_snapshot!(format!("log_{}", s.name), s.log());
            insta::assert_snapshot!(format!("outputs_{}", s.name), s.output_sequence());
        }
        insta::assert_snapshot!("acceptance", run.acceptance());
    });
}
