//! A finding's story: the lines from the one it starts at (its `since`) to the one that decides
//! it, each as the stack said it, capped so a long one stays readable (the first line and the
//! last ones, the lines between counted as elided).

use std::collections::{BTreeMap, BTreeSet};
use std::io::BufRead;

use super::words::{said, Said};
use crate::trace::{Dialect, Finding};

/// The most lines a story shows: its first and the last ones before and at the deciding line.
pub const MAX_STORY_LINES: usize = 40;

/// A finding's first line: the one its story starts at, or its own line.
pub fn first_line(f: &Finding) -> usize {
    f.since.unwrap_or(f.line).min(f.line)
}

/// The lines of `f`'s story a report shows, at most `cap` (at least two): its first, and the last
/// ones up to its own line.
pub fn wanted(f: &Finding, cap: usize) -> impl Iterator<Item = usize> {
    let first = first_line(f);
    let tail_start = f
        .line
        .saturating_sub(cap.max(2) - 2)
        .max(first.saturating_add(1));
    std::iter::once(first).chain(tail_start..=f.line)
}

/// The lines `wanted` names of a trace, each as the stack said it; reading stops after the last
/// one, and only those lines are kept.
pub fn read_lines(
    mut input: impl BufRead,
    wanted: &BTreeSet<usize>,
    dialect: Dialect,
    session_key: Option<&str>,
) -> std::io::Result<BTreeMap<usize, Said>> {
    let mut out = BTreeMap::new();
    let Some(&last) = wanted.last() else {
        return Ok(out);
    };
    let mut buf = Vec::new();
    for line in 1..=last {
        buf.clear();
        if input.read_until(b'\n', &mut buf)? == 0 {
            break;
        }
        if wanted.contains(&line) {
            let text = String::from_utf8_lossy(&buf);
            out.insert(line, said(dialect, session_key, &text));
        }
    }
    Ok(out)
}

/// A finding's story as a report draws it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Story {
    /// The lines shown, in order, each with its number.
    pub lines: Vec<(usize, Said)>,
    /// The lines left out between the first and the last ones shown (from, to).
    pub elided: Option<(usize, usize)>,
    /// Lines among those shown that belong to another session, left out.
    pub other_sessions: usize,
    /// Lines that could not be read again (the trace changed since it was checked).
    pub missing: usize,
}

/// `f`'s story from the lines read (`lines`, at least those [`wanted`] names), at most `cap`.
pub fn story(f: &Finding, lines: &BTreeMap<usize, Said>, cap: usize) -> Story {
    let shown: Vec<usize> = wanted(f, cap).collect();
    let elided = match shown.as_slice() {
        [first, second, ..] if second - first > 1 => Some((first + 1, second - 1)),
        _ => None,
    };
    let (mut out, mut other_sessions, mut missing) = (Vec::new(), 0, 0);
    for n in shown {
        match lines.get(&n) {
            None => missing += 1,
            Some(s) if n != f.line && s.session.as_ref().is_some_and(|s| *s != f.session) => {
                other_sessions += 1;
            }
            Some(s) => out.push((n, s.clone())),
        }
    }
    Story {
        lines: out,
        elided,
        other_sessions,
        missing,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::FindingKind;

    fn finding(since: Option<usize>, line: usize) -> Finding {
        Finding {
            line,
            session: "main".into(),
            at: 0,
            kind: FindingKind::Invariant,
            invariant: Some("no_late_delivery"),
            ids: Vec::new(),
            message: String::new(),
            said: Default::default(),
            since,
            derived: Vec::new(),
        }
    }

    #[test]
    fn a_story_shows_its_first_line_and_the_last_ones_within_the_cap() {
        let w = |since, line, cap| wanted(&finding(since, line), cap).collect::<Vec<_>>();
        assert_eq!(w(None, 7, 40), [7]);
        assert_eq!(w(Some(3), 6, 40), [3, 4, 5, 6]);
        // 100 lines from 10 to 109: the first, then the last 3 (lines 107 to 109).
        assert_eq!(w(Some(10), 109, 4), [10, 107, 108, 109]);
        assert_eq!(w(Some(10), 109, 40).len(), 40);
        // A `since` after the line (never given) is a one-line story.
        assert_eq!(w(Some(9), 5, 40), [5]);
    }

    #[test]
    fn a_story_counts_what_it_leaves_out() {
        let text = "{\"meta\":{}}\n{\"at\":0,\"input\":\"stop\",\"turn\":\"t\"}\n\
            {\"at\":1,\"session\":\"b\",\"input\":\"tick\"}\n{\"at\":2,\"input\":\"tick\"}\n\
            {\"at\":3,\"output\":\"delivered\"}\n";
        let f = finding(Some(2), 5);
        let wanted: BTreeSet<usize> = wanted(&f, 3).collect();
        assert_eq!(wanted, BTreeSet::from([2, 4, 5]));
        let lines = read_lines(text.as_bytes(), &wanted, crate::dialect::CANONICAL, None).unwrap();
        let s = story(&f, &lines, 3);
        assert_eq!(s.elided, Some((3, 3)));
        let shown: Vec<(usize, &str)> = s
            .lines
            .iter()
            .map(|(n, s)| (*n, s.words.as_str()))
            .collect();
        assert_eq!(shown, [(2, "stop"), (4, "tick"), (5, "delivered")]);
        // Line 3, of session b, would be left out were it shown; nothing is missing.
        let s = story(
            &f,
            &read_lines(
                text.as_bytes(),
                &(2..=5).collect(),
                crate::dialect::CANONICAL,
                None,
            )
            .unwrap(),
            40,
        );
        assert_eq!((s.other_sessions, s.missing, s.lines.len()), (1, 0, 3));
        // Lines 8 and 9 are past the trace's end: missing, not made up.
        let s = story(&finding(Some(2), 9), &lines, 3);
        assert_eq!((s.missing, s.lines.len()), (2, 1));
    }

    /// Past the line the judging settled at, a keeper holds the lines a found finding's story
    /// names, and its whole span where the reader may move the story's start.
    #[test]
    fn a_settled_keeper_holds_what_its_findings_name_and_their_spans() {
        use crate::trace::KeepLines;
        let held = |span: Option<(usize, usize)>| {
            let kept = super::super::story_lines::Kept::default();
            for n in 1..=300 {
                kept.line(n, r#"{"at":0,"input":"tick"}"#);
            }
            kept.found(&finding(Some(100), 200), span);
            kept.settled(301);
            kept.lines().into_keys().collect::<Vec<_>>()
        };
        // The story's first line, its last 39 up to its own, and the 39 before the settled line.
        let story: Vec<usize> = [100]
            .into_iter()
            .chain(162..=200)
            .chain(262..=300)
            .collect();
        assert_eq!(held(None), story);
        // Its session from line 50 on (less a story's length) kept whole, up to its own line.
        let span: Vec<usize> = (11..=200).chain(262..=300).collect();
        assert_eq!(held(Some((50, 200))), span);
    }
}
