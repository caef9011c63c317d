//! Baselines: findings a project has acknowledged, so CI fails on new ones alone. Each entry
//! names its trace, its rule and a fingerprint that survives unrelated edits of the trace: a hash
//! of the rule, the session, and the stack's words of the line that decides the finding and of
//! the line its story starts at — never a line number, so lines added before it move nothing.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::story::first_line;
use super::words::Said;
use crate::trace::Finding;

/// The version of the baseline file this reads and writes.
pub const VERSION: u32 = 1;

/// The reason `--write-baseline` gives each entry, for a person to replace.
pub const PLACEHOLDER_REASON: &str = "acknowledged";

/// A baseline file: `{"version": 1, "findings": [entry, …]}`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Baseline {
    pub version: u32,
    pub findings: Vec<Entry>,
}

/// One acknowledged finding.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    /// The trace's path as `check` was given it, less a leading `./` ([`trace_name`]).
    pub trace: String,
    /// The finding's name: an invariant's, or a kind of non-conformance.
    pub rule: String,
    /// Its line when acknowledged: for the reader only, never matched.
    pub line: usize,
    /// [`fingerprint`]: what is matched, with the trace and rule.
    pub fingerprint: String,
    /// Why it is acknowledged.
    pub reason: String,
}

/// A finding the baseline acknowledges, with the reason it gives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Acknowledged {
    pub finding: Finding,
    pub reason: String,
}

/// The fingerprint of a finding of `rule` in `session`, decided at a line the stack said as
/// `deciding`, its story starting at a line said as `first`: 64-bit FNV-1a of the four, each
/// ended by a NUL, as 16 hex digits. FNV-1a is written here, not taken from a hasher crate, so
/// the value cannot change with a dependency's version.
pub fn fingerprint(rule: &str, session: &str, deciding: &str, first: &str) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for part in [rule, session, deciding, first] {
        for b in part.bytes().chain(std::iter::once(0)) {
            hash ^= u64::from(b);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    format!("{hash:016x}")
}

/// `f`'s fingerprint from the lines of its trace its pass kept (at least its first line and its
/// own); a line not kept is said as nothing.
pub fn fingerprint_of(f: &Finding, lines: &BTreeMap<usize, Said>) -> String {
    let words = |n: usize| lines.get(&n).map_or("", |s| s.words.as_str());
    fingerprint(f.name(), &f.session, words(f.line), words(first_line(f)))
}

/// A baseline file's text, read strictly: an error names the line and column (serde's), or the
/// entry.
pub fn parse(text: &str) -> Result<Baseline, String> {
    let baseline: Baseline = serde_json::from_str(text).map_err(|e| {
        let message = e.to_string();
        // serde says "… at line L column C"; said first, as an input error is.
        match message.rsplit_once(" at line ") {
            Some((what, at)) => format!("line {}: {what}", at.replacen(" column ", ", column ", 1)),
            None => message,
        }
    })?;
    if baseline.version != VERSION {
        return Err(format!(
            "version {} is not one this reads (it reads version {VERSION})",
            baseline.version
        ));
    }
    for (i, e) in baseline.findings.iter().enumerate() {
        let ok = e.fingerprint.len() == 16 && e.fingerprint.bytes().all(|b| b.is_ascii_hexdigit());
        if !ok {
            return Err(format!(
                "entry {} ({} {} line {}): fingerprint {:?} is not 16 hex digits",
                i + 1,
                e.trace,
                e.rule,
                e.line,
                e.fingerprint
            ));
        }
        if e.trace.is_empty() || e.rule.is_empty() {
            return Err(format!("entry {}: its trace and rule are named", i + 1));
        }
    }
    Ok(baseline)
}

/// A baseline's text: its entries sorted (by trace, line, rule, fingerprint), one field a line.
pub fn write(mut entries: Vec<Entry>) -> String {
    entries.sort();
    let baseline = Baseline {
        version: VERSION,
        findings: entries,
    };
    let mut text = serde_json::to_string_pretty(&baseline).unwrap_or_default();
    text.push('\n');
    text
}

/// The baseline as it is matched over one run: which entries have acknowledged a finding.
pub struct Matcher<'a> {
    baseline: &'a Baseline,
    used: Vec<bool>,
    /// The traces this run checked: an entry of another trace is neither used nor stale.
    checked: Vec<String>,
}

impl<'a> Matcher<'a> {
    pub fn new(baseline: &'a Baseline) -> Matcher<'a> {
        Matcher {
            baseline,
            used: vec![false; baseline.findings.len()],
            checked: Vec::new(),
        }
    }

    /// The findings of `trace` (each with its fingerprint, in order) the baseline does not
    /// acknowledge, and those it does; an entry acknowledges one finding.
    pub fn split(
        &mut self,
        trace: &str,
        findings: Vec<(Finding, String)>,
    ) -> (Vec<Finding>, Vec<Acknowledged>) {
        let trace = trace_name(trace);
        self.checked.push(trace.to_owned());
        let (mut new, mut acknowledged) = (Vec::new(), Vec::new());
        for (f, fp) in findings {
            let entry = self.baseline.findings.iter().enumerate().find(|(i, e)| {
                !self.used[*i]
                    && trace_name(&e.trace) == trace
                    && e.rule == f.name()
                    && e.fingerprint == fp
            });
            match entry {
                Some((i, e)) => {
                    self.used[i] = true;
                    acknowledged.push(Acknowledged {
                        finding: f,
                        reason: e.reason.clone(),
                    });
                }
                None => new.push(f),
            }
        }
        (new, acknowledged)
    }

    /// The entries of the traces checked that acknowledged nothing: they no longer occur.
    pub fn stale(&self) -> Vec<&'a Entry> {
        self.baseline
            .findings
            .iter()
            .zip(&self.used)
            .filter(|(e, used)| !**used && self.checked.iter().any(|c| c == trace_name(&e.trace)))
            .map(|(e, _)| e)
            .collect()
    }
}

/// A trace's path as a baseline names it: as given, less any leading `./` (a directory `.` and
/// its file named alone are the same trace).
pub fn trace_name(path: &str) -> &str {
    let mut name = path;
    while let Some(rest) = name.strip_prefix("./") {
        name = rest;
    }
    name
}

/// A stale entry as one line.
pub fn stale_line(e: &Entry) -> String {
    format!(
        "stale baseline entry: {} {} (line {} when acknowledged, fingerprint {}) no longer occurs",
        e.trace, e.rule, e.line, e.fingerprint
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fingerprint_is_fnv1a_of_its_parts_and_each_part_counts() {
        // FNV-1a 64 of the empty input is its offset basis; of four NULs, this.
        let four_nuls = {
            let mut h: u64 = 0xcbf2_9ce4_8422_2325;
            for _ in 0..4 {
                h = h.wrapping_mul(0x0000_0100_0000_01b3);
            }
            format!("{h:016x}")
        };
        assert_eq!(fingerprint("", "", "", ""), four_nuls);
        let base = fingerprint("no_late_delivery", "main", "delivered", "stop");
        assert_eq!(base.len(), 16);
        assert_ne!(
            base,
            fingerprint("no_late_delivery", "main", "played", "stop")
        );
        assert_ne!(
            base,
            fingerprint("no_late_delivery", "other", "delivered", "stop")
        );
        // The separator keeps a part's end from passing into the next one's.
        assert_ne!(
            fingerprint("ab", "c", "", ""),
            fingerprint("a", "bc", "", "")
        );
    }

    #[test]
    fn a_malformed_baseline_names_its_line_or_entry() {
        let e = parse("{\"version\": 1,\n \"findings\": [{\"trace\": 3}]}").unwrap_err();
        assert!(e.starts_with("line 2, column "), "{e}");
        let e = parse(r#"{"version": 2, "findings": []}"#).unwrap_err();
        assert!(e.contains("version 2"), "{e}");
        let entry = r#"{"trace":"a.jsonl","rule":"r","line":3,"fingerprint":"xyz","reason":"k"}"#;
        let e = parse(&format!(r#"{{"version":1,"findings":[{entry}]}}"#)).unwrap_err();
        assert!(e.starts_with("entry 1 (a.jsonl r line 3)"), "{e}");
        let text = write(vec![]);
        assert_eq!(
            parse(&text),
            Ok(Baseline {
                version: 1,
                findings: vec![]
            })
        );
    }
}
