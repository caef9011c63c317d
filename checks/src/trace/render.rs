//! The verdict as text for a person: capped, each finding with where and when, the counts last.

use super::Verdict;

/// How many findings the text report prints unless told otherwise: a few hundred lines at most,
/// however many there are (the JSON report keeps every one).
pub const MAX_TEXT_FINDINGS: usize = 200;

/// The verdict as text: one line per finding (at most `max_findings`, the rest counted), each
/// with its line, session and time, its name, ids and sentence; then the summary and the count
/// of each name.
pub fn render_text(v: &Verdict, max_findings: usize) -> String {
    let mut out = String::new();
    for f in v.findings.iter().take(max_findings) {
        let ids = if f.ids.is_empty() {
            String::new()
        } else {
            format!(" [{}]", f.ids.join(", "))
        };
        out.push_str(&format!(
            "line {} ({} at {} ms): {}{ids}: {}\n",
            f.line,
            f.session,
            f.at,
            f.name(),
            f.message
        ));
    }
    if v.findings.len() > max_findings {
        out.push_str(&format!(
            "… {} more findings not shown (--max-findings {max_findings}; --format json has every one)\n",
            v.findings.len() - max_findings
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
    out
}
