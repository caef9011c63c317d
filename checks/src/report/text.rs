//! The verdict as text for a person: capped, each finding with where and when, the counts last.

use crate::trace::{Finding, FindingKind, NotJudged, Verdict};

/// How many findings the text report prints unless told otherwise: a few hundred lines at most,
/// however many there are (the JSON report keeps every one).
pub const MAX_TEXT_FINDINGS: usize = 200;

/// The verdict as text: one line per finding (at most `max_findings` lines, the rest counted), each
/// leading with its name, then where and when (and since which earlier line), its ids and its
/// sentence; under it, indented, what it explains; then the summary and the count of each name.
pub fn render_text(v: &Verdict, max_findings: usize) -> String {
    let mut out = String::new();
    // The cap counts lines, a finding's explained findings with it.
    let (mut printed, mut shown) = (0, 0);
    for f in &v.findings {
        if printed >= max_findings {
            break;
        }
        printed += 1 + f.derived.len();
        shown += 1;
        out.push_str(&finding_text(f));
    }
    if v.findings.len() > shown {
        out.push_str(&format!(
            "… {} more findings not shown (--max-findings {max_findings}; --format json has every one)\n",
            v.findings.len() - shown
        ));
    }
    let status = if v.conforms() {
        "CONFORMS"
    } else {
        "VIOLATIONS"
    };
    out.push_str(&format!(
        "{status}: {} findings in {} lines ({} events, {} sessions)\n",
        v.findings.len(),
        v.lines,
        v.events,
        v.sessions
    ));
    for (name, count) in v.counts() {
        out.push_str(&format!("  {count:>7}  {name}\n"));
    }
    for n in &v.not_judged {
        out.push_str(&format!("{}\n", not_judged_line(n)));
    }
    out
}

/// A finding as text: a line leading with its name, then where and when (and since which earlier
/// line), its ids and its sentence; under it, indented, what it explains.
pub fn finding_text(f: &Finding) -> String {
    let ids = if f.ids.is_empty() {
        String::new()
    } else {
        format!(" [{}]", f.ids.join(", "))
    };
    let since = f
        .since
        .map_or_else(String::new, |s| format!("; since line {s}"));
    let mut out = format!(
        "{} at line {} ({}, {} ms{since}){ids}: {}\n",
        f.name(),
        f.line,
        f.session,
        f.at,
        f.message
    );
    for d in &f.derived {
        // A stated fact breaking the same rule at the same line is the same story, told again.
        let how = match d.kind {
            FindingKind::Invariant => "also",
            _ => "explains",
        };
        out.push_str(&format!("    {how} {}: {}\n", d.name(), d.message));
    }
    out
}

/// A rule left unjudged, as one line: the rule, where, for what, and what the log would need.
pub fn not_judged_line(n: &NotJudged) -> String {
    let ids = if n.ids.is_empty() {
        String::new()
    } else {
        format!(" [{}]", n.ids.join(", "))
    };
    format!(
        "not judged: {} from line {} ({}){ids}: needs {}",
        n.rule, n.line, n.session, n.needs
    )
}
