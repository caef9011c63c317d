//! Unit tests of the trace's report types.

use super::{Finding, FindingKind, NotJudged};

/// A kind's name is its JSON form, so a rule left unjudged that names a kind names it as the
/// JSON report does.
#[test]
fn a_finding_kinds_name_is_its_json_form() {
    for kind in [
        FindingKind::Invariant,
        FindingKind::UnexpectedOutput,
        FindingKind::ContradictedOutput,
        FindingKind::ContradictedFact,
        FindingKind::RefusedInput,
        FindingKind::MissingOutput,
        FindingKind::LeftOpen,
    ] {
        assert_eq!(serde_json::to_value(kind).unwrap(), kind.name());
    }
}

fn finding(kind: FindingKind, invariant: Option<&'static str>, id: &str) -> Finding {
    Finding {
        line: 3,
        session: "s".into(),
        at: 0,
        kind,
        invariant,
        ids: vec![id.into()],
        message: String::new(),
        said: Default::default(),
        since: None,
        derived: Vec::new(),
    }
}

fn not_judged(rule: &'static str) -> NotJudged {
    NotJudged {
        line: 2,
        session: "s".into(),
        rule,
        ids: vec!["t1".into()],
        needs: String::new(),
    }
}

/// An invariant left unjudged for a reply drops the invariant's finding about it and the
/// model's disagreements with the log about it (what the model would have done rests on
/// the fact the log lacks); not another invariant's, nor another reply's.
#[test]
fn an_invariant_unjudged_covers_its_own_findings_and_the_models_disagreements() {
    let open = not_judged("interruption_decided_once");
    let own = finding(
        FindingKind::Invariant,
        Some("interruption_decided_once"),
        "t1",
    );
    assert!(open.covers(&own));
    for kind in [
        FindingKind::UnexpectedOutput,
        FindingKind::ContradictedOutput,
        FindingKind::MissingOutput,
    ] {
        assert!(open.covers(&finding(kind, None, "t1")), "{kind:?}");
    }
    let other = finding(FindingKind::Invariant, Some("single_terminal"), "t1");
    assert!(!open.covers(&other));
    assert!(!open.covers(&finding(FindingKind::UnexpectedOutput, None, "t2")));
    let elsewhere = Finding {
        session: "s2".into(),
        ..own
    };
    assert!(!open.covers(&elsewhere));
}

/// A `left_open` left unjudged (where the log stops) is that finding alone.
#[test]
fn a_left_open_unjudged_covers_that_finding_alone() {
    let open = not_judged(FindingKind::LeftOpen.name());
    assert!(open.covers(&finding(FindingKind::LeftOpen, None, "t1")));
    assert!(!open.covers(&finding(FindingKind::UnexpectedOutput, None, "t1")));
}
