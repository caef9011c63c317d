//! Rules of the dialect readers that no fixture's verdict pins on its own: what a real stack's
//! log reads as, stated as the rule it is. (Found by mutation testing: README "Mutation testing".)

use std::path::Path;

use turnfence_checks::trace::{self, Keep, Verdict};

/// A fixture's verdict, keeping its effective trace: what the checker judged, one line per step.
fn effective(fixture: &str) -> Verdict {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fixtures")
        .join(fixture);
    let text = crate::read(&path);
    let checked = trace::check_input_keeping(text.as_bytes(), &Default::default(), Keep::Effective);
    checked.verdict.unwrap_or_else(|e| panic!("{fixture}: {e}"))
}

/// A LiveKit reply's audio is out once, at its first `speaking`: the agent speaking again after
/// a false interruption resumed it (fixture 0092) is the same audio going on, not a new delta.
#[test]
fn a_livekit_reply_speaking_again_after_a_resume_delivers_nothing_new() {
    let v = effective("accepted/0092_livekit_log_false_interruption_resumed.jsonl");
    assert!(v.conforms());
    let deltas: Vec<&String> = v
        .effective
        .iter()
        .filter(|l| l.contains(r#""input":"delta""#))
        .collect();
    assert_eq!(deltas.len(), 1, "{:#?}", v.effective);
    assert!(deltas[0].contains(r#""at":500,"#), "{}", deltas[0]);
}
