//! The Markdown report (`check --format markdown`), for a pull request comment: a table of the
//! traces, then each finding's story as a Mermaid sequence diagram in the stack's own words, the
//! deciding line highlighted. Deterministic, and never longer than a GitHub comment holds.

use std::collections::BTreeSet;

use super::baseline::{stale_line, Acknowledged, Entry};
use super::story::Story;
use super::text::not_judged_line;
use super::words::Party;
use crate::trace::{Finding, FindingKind, InputError, Verdict};

/// The most characters a GitHub comment holds.
pub const MAX_CHARS: usize = 65_536;

/// Room kept at the end for the note that says the report was cut.
const TAIL_CHARS: usize = 400;

/// The most findings a report draws the stories of (the others are counted).
pub const MAX_STORIES: usize = 100;

/// The most characters of a finding's sentence a diagram's note holds.
const NOTE_CHARS: usize = 300;

/// One trace as the report shows it.
pub struct Trace<'a> {
    pub path: &'a str,
    pub outcome: Outcome<'a>,
}

pub enum Outcome<'a> {
    /// `stories` holds the stories of the first findings, in order (the others are counted).
    Judged {
        verdict: &'a Verdict,
        stories: &'a [Story],
        acknowledged: &'a [Acknowledged],
    },
    Unreadable(&'a InputError),
}

/// The report of `traces`, with the baseline's entries that no longer occur.
pub fn render(traces: &[Trace], stale: &[&Entry]) -> String {
    let mut out = Cut::new();
    out.push("## turnfence check\n\n");
    table(&mut out, traces);
    for e in stale {
        out.push(&format!("> **Warning:** {}\n", md(&stale_line(e))));
    }
    if !stale.is_empty() {
        out.push("\n");
    }
    let mut lists = String::new();
    for t in traces {
        if let Outcome::Judged {
            verdict,
            acknowledged,
            ..
        } = t.outcome
        {
            for n in &verdict.not_judged {
                lists.push_str(&format!(
                    "- {}: {}\n",
                    code(t.path),
                    md(&not_judged_line(n))
                ));
            }
            for a in acknowledged {
                let f = &a.finding;
                lists.push_str(&format!(
                    "- {} line {}: baselined `{}` ({})\n",
                    code(t.path),
                    f.line,
                    f.name(),
                    md(&a.reason)
                ));
            }
        }
    }
    if !lists.is_empty() {
        out.push(&format!("{lists}\n"));
    }
    let mut number = 0;
    let mut undrawn = 0;
    for t in traces {
        let Outcome::Judged {
            verdict, stories, ..
        } = t.outcome
        else {
            continue;
        };
        for (i, f) in verdict.findings.iter().enumerate() {
            number += 1;
            let drawn = stories
                .get(i)
                .map(|s| section(number, t.path, f, s))
                .filter(|s| out.fits(s));
            match drawn {
                Some(s) => out.push(&s),
                None => undrawn += 1,
            }
        }
    }
    if undrawn > 0 || out.rows_left > 0 {
        out.tail(&format!(
            "_{undrawn} findings not drawn: a report draws at most {MAX_STORIES} and stays within \
             a GitHub comment ({MAX_CHARS} characters); `--format text` or `--format json` lists \
             every one._\n"
        ));
    }
    out.text
}

/// The report as it grows, cut before it would pass [`MAX_CHARS`].
struct Cut {
    text: String,
    chars: usize,
    /// Table rows left out.
    rows_left: usize,
}

impl Cut {
    fn new() -> Cut {
        Cut {
            text: String::new(),
            chars: 0,
            rows_left: 0,
        }
    }

    fn fits(&self, s: &str) -> bool {
        self.chars + s.chars().count() + TAIL_CHARS <= MAX_CHARS
    }

    fn push(&mut self, s: &str) {
        self.chars += s.chars().count();
        self.text.push_str(s);
    }

    fn tail(&mut self, s: &str) {
        self.push(s);
    }
}

/// The summary table: each trace's verdict, findings (by name), lines and sessions; an unreadable
/// trace's input error in place of its findings.
fn table(out: &mut Cut, traces: &[Trace]) {
    out.push(
        "| Trace | Verdict | Findings | Lines | Sessions |\n| --- | --- | --- | --- | --- |\n",
    );
    let (mut conform, mut violations, mut unreadable, mut baselined) = (0, 0, 0, 0);
    for t in traces {
        let row = match t.outcome {
            Outcome::Judged {
                verdict,
                acknowledged,
                ..
            } => {
                baselined += acknowledged.len();
                let status = if verdict.conforms() {
                    conform += 1;
                    "conforms"
                } else {
                    violations += 1;
                    "**violations**"
                };
                let mut findings = verdict.findings.len().to_string();
                let counts: Vec<String> = verdict
                    .counts()
                    .iter()
                    .map(|(name, n)| format!("`{name}` {n}"))
                    .collect();
                if !counts.is_empty() {
                    findings.push_str(&format!(": {}", counts.join(", ")));
                }
                if !acknowledged.is_empty() {
                    findings.push_str(&format!(" (+{} baselined)", acknowledged.len()));
                }
                format!(
                    "| {} | {status} | {findings} | {} | {} |\n",
                    code(t.path),
                    verdict.lines,
                    verdict.sessions
                )
            }
            Outcome::Unreadable(e) => {
                unreadable += 1;
                format!(
                    "| {} | **unreadable** | {} | – | – |\n",
                    code(t.path),
                    md(&e.to_string())
                )
            }
        };
        if out.rows_left == 0 && out.fits(&row) {
            out.push(&row);
        } else {
            out.rows_left += 1;
        }
    }
    if out.rows_left > 0 {
        out.push(&format!("| _{} more traces_ | | | | |\n", out.rows_left));
    }
    let baselined = match baselined {
        0 => String::new(),
        n => format!(", {n} findings baselined"),
    };
    out.push(&format!(
        "\n{} traces: {conform} conform, {violations} with violations, {unreadable} unreadable{baselined}.\n\n",
        traces.len()
    ));
}

/// A finding's section: a heading, where and when, its sentence and what it explains, then its
/// story's diagram.
fn section(number: usize, path: &str, f: &Finding, story: &Story) -> String {
    let mut s = format!(
        "### {number}. `{}` at line {} of {}\n\n",
        f.name(),
        f.line,
        code(path)
    );
    let since = f
        .since
        .map_or_else(String::new, |l| format!(", its story from line {l}"));
    let ids = if f.ids.is_empty() {
        String::new()
    } else {
        format!(
            " [{}]",
            f.ids.iter().map(|i| code(i)).collect::<Vec<_>>().join(", ")
        )
    };
    s.push_str(&format!(
        "Session {} at {} ms{since}{ids}: {}\n",
        code(&f.session),
        f.at,
        md(&f.message)
    ));
    for d in &f.derived {
        // As the text report says it: the same rule again is the same story, told again.
        let how = match d.kind {
            FindingKind::Invariant => "also",
            _ => "explains",
        };
        s.push_str(&format!("- {how} `{}`: {}\n", d.name(), md(&d.message)));
    }
    s.push('\n');
    s.push_str(&diagram(f, story));
    s.push('\n');
    s
}

/// The story as a Mermaid sequence diagram: the participants its lines name, a message a line
/// (`L58 response.done`), the deciding line in a red box with a note naming the rule.
pub fn diagram(f: &Finding, story: &Story) -> String {
    let mut parties: BTreeSet<Party> = BTreeSet::new();
    for (_, said) in &story.lines {
        parties.insert(said.from);
        parties.insert(said.to);
    }
    let (first, last) = match (parties.first(), parties.last()) {
        (Some(a), Some(b)) => (*a, *b),
        // Nothing could be read again: the diagram says so over the system under check.
        _ => {
            parties.insert(Party::App);
            (Party::App, Party::App)
        }
    };
    let over_all = if first == last {
        first.id().to_owned()
    } else {
        format!("{},{}", first.id(), last.id())
    };
    let mut s = String::from("```mermaid\nsequenceDiagram\n");
    for p in &parties {
        s.push_str(&format!("    participant {} as {}\n", p.id(), p.label()));
    }
    let mut decided = false;
    for (i, (n, said)) in story.lines.iter().enumerate() {
        if i == 1 {
            if let Some((a, b)) = story.elided {
                s.push_str(&format!(
                    "    Note over {over_all}: lines {a} to {b} elided ({} lines)\n",
                    b - a + 1
                ));
            }
        }
        let message = format!(
            "{}->>{}: L{n} {}",
            said.from.id(),
            said.to.id(),
            mermaid(&said.words)
        );
        if *n == f.line {
            decided = true;
            let over = if said.from == said.to {
                said.from.id().to_owned()
            } else {
                format!("{},{}", said.from.id(), said.to.id())
            };
            s.push_str("    rect rgb(255, 220, 220)\n");
            s.push_str(&format!("    {message}\n"));
            s.push_str(&format!(
                "    Note over {over}: {}: {}\n",
                f.name(),
                mermaid(&clip(&f.message, NOTE_CHARS))
            ));
            s.push_str("    end\n");
        } else {
            s.push_str(&format!("    {message}\n"));
        }
    }
    let mut left_out = Vec::new();
    if story.other_sessions > 0 {
        left_out.push(format!(
            "{} lines of other sessions left out",
            story.other_sessions
        ));
    }
    if story.missing > 0 {
        left_out.push(format!("{} lines could not be read again", story.missing));
    }
    if !decided {
        left_out.push(format!(
            "line {} ({}) could not be read again",
            f.line,
            f.name()
        ));
    }
    if !left_out.is_empty() {
        s.push_str(&format!(
            "    Note over {over_all}: {}\n",
            mermaid(&left_out.join(", "))
        ));
    }
    s.push_str("```\n");
    s
}

/// Text a Mermaid message or note holds: a newline as a space, and what Mermaid would read as
/// syntax (`;` ends a statement, `#` starts an entity, `<` `>` are markup) as its entity code.
pub fn mermaid(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            ';' => out.push_str("#59;"),
            '#' => out.push_str("#35;"),
            '<' => out.push_str("#lt;"),
            '>' => out.push_str("#gt;"),
            '\n' | '\r' | '\t' => out.push(' '),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

/// Text as Markdown shows it literally, on one line.
fn md(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' | '`' | '*' | '_' | '[' | ']' | '|' | '#' => {
                out.push('\\');
                out.push(c);
            }
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\n' | '\r' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// A path or id as inline code in a table cell (a backtick made a quote, a bar escaped).
fn code(text: &str) -> String {
    format!(
        "`{}`",
        text.replace('`', "'")
            .replace('|', "\\|")
            .replace(['\n', '\r'], " ")
    )
}

/// At most `max` characters of `text`, an ellipsis ending what was cut.
fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_owned()
    } else {
        let mut s: String = text.chars().take(max.saturating_sub(1)).collect();
        s.push('…');
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mermaid_text_holds_no_syntax() {
        assert_eq!(mermaid("a;b#c<d>\ne"), "a#59;b#35;c#lt;d#gt; e");
        assert_eq!(clip("abcdef", 4), "abc…");
        assert_eq!(clip("abc", 4), "abc");
        assert_eq!(code("a|b`c"), "`a\\|b'c`");
    }
}
