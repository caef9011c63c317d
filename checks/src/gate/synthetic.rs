//! A synthetic trace of any length, produced lazily: the gate's eight scenarios (or one session
//! of any dialect's log) over and over, each copy its own session. For benchmarks and for the bounded-memory test: the
//! trace is never held whole, by the producer or by the checker.
//!
//! [`Interleaved`] is a log as a server with many calls writes one: many sessions open at once,
//! their lines interleaved, for the live monitor's benchmark.

use std::io::{self, BufRead, Read};

use turnfence_model::turn::TurnMachine;

use super::{run, NAMES};

/// A `BufRead` over `sessions` sessions of the gate's scenarios, in canonical form.
pub struct SyntheticTrace {
    /// Each template session: its lines cut where they carry the session's name, so that a copy
    /// is the pieces joined by its own name (made once, not searched for in every copy).
    templates: Vec<Vec<String>>,
    next: usize,
    sessions: usize,
    buf: Vec<u8>,
    pos: usize,
}

impl SyntheticTrace {
    pub fn new(sessions: usize) -> SyntheticTrace {
        let run = run(&NAMES, TurnMachine::new);
        let templates = run
            .scenarios
            .iter()
            .map(|s| (s.name, s.canonical_trace()))
            .collect();
        SyntheticTrace::of(templates, sessions)
    }

    /// `sessions` copies of the templates, in turn: each a session's name and its lines.
    fn of(templates: Vec<(&str, String)>, sessions: usize) -> SyntheticTrace {
        // The session name appears as `"session":"<name>"` in every line of a template.
        let templates = templates
            .into_iter()
            .map(|(name, lines)| {
                let key = format!("\"session\":\"{name}\"");
                lines.split(&key).map(str::to_owned).collect()
            })
            .collect();
        SyntheticTrace {
            templates,
            next: 0,
            sessions,
            buf: Vec::new(),
            pos: 0,
        }
    }

    /// Every line of the trace, for small traces in tests.
    pub fn lines_as_strings(mut self) -> Vec<String> {
        let mut text = String::new();
        let _ = self.read_to_string(&mut text);
        text.lines().map(str::to_owned).collect()
    }

    /// A log of any dialect: `sessions` copies of one session (`text`, whose every line names it
    /// `"session":"<name>"`), each copy its own session, `s<n>`.
    pub fn of_session(name: &str, text: &str, sessions: usize) -> SyntheticTrace {
        SyntheticTrace::of(vec![(name, text.to_owned())], sessions)
    }

    /// Events (lines) per round of the templates.
    pub fn lines_per_round(&self) -> usize {
        let lines = |piece: &String| piece.matches('\n').count();
        self.templates.iter().flatten().map(lines).sum()
    }

    /// The next session's lines: its template's pieces joined by its name, `s<n>`.
    fn refill(&mut self) {
        self.buf.clear();
        self.pos = 0;
        if self.next >= self.sessions {
            return;
        }
        let pieces = &self.templates[self.next % self.templates.len()];
        let session = format!("\"session\":\"s{}\"", self.next);
        for (i, piece) in pieces.iter().enumerate() {
            if i > 0 {
                self.buf.extend_from_slice(session.as_bytes());
            }
            self.buf.extend_from_slice(piece.as_bytes());
        }
        self.next += 1;
    }
}

/// A canonical log of `sessions` sessions of the gate's scenarios (each copy its own session,
/// `s<n>`), at most `open_max` open at a time, their lines interleaved: one line of each open
/// session in turn, round and round, a session ended giving its place to the next. Every
/// `every`-th session may be a copy of another session instead ([`Interleaved::with_odd`]: a
/// rejected fixture's, so that the log carries findings). The first line is a meta line naming the
/// canonical dialect. Lazy: it holds the open sessions' places, never the log.
pub struct Interleaved {
    /// Each template session's lines, each cut where it carries the session's name.
    templates: Vec<Vec<Vec<String>>>,
    /// The odd session's lines, cut the same way, and every how many sessions one is.
    odd: Option<(Vec<Vec<String>>, usize)>,
    sessions: usize,
    open_max: usize,
    started: usize,
    /// The open sessions: each one's number and the index of its next line.
    open: Vec<(usize, usize)>,
    /// The place in `open` of the session whose line is next.
    turn: usize,
    meta_given: bool,
}

/// The first line of an [`Interleaved`] log.
pub const CANONICAL_META: &str = r#"{"meta":{"dialect":"canonical"}}"#;

/// A session's lines, each cut where it names the session (`name`); meta lines left out.
fn cut_lines(name: &str, text: &str) -> Vec<Vec<String>> {
    let key = format!("\"session\":\"{name}\"");
    text.lines()
        .filter(|l| !l.starts_with("{\"meta\""))
        .map(|l| l.split(&key).map(str::to_owned).collect())
        .collect()
}

impl Interleaved {
    pub fn new(sessions: usize, open_max: usize) -> Interleaved {
        let run = run(&NAMES, TurnMachine::new);
        let templates = run
            .scenarios
            .iter()
            .map(|s| cut_lines(s.name, &s.canonical_trace()))
            .collect();
        Interleaved {
            templates,
            odd: None,
            sessions,
            open_max: open_max.max(1),
            started: 0,
            open: Vec::new(),
            turn: 0,
            meta_given: false,
        }
    }

    /// Every `every`-th session (the `every`-th, the `2 × every`-th, …) a copy of the session
    /// `name` of `text` (a log's lines, its meta line left out) in place of a scenario's.
    pub fn with_odd(mut self, name: &str, text: &str, every: usize) -> Interleaved {
        if every > 0 {
            self.odd = Some((cut_lines(name, text), every));
        }
        self
    }

    /// Session `n`'s lines.
    fn template(&self, n: usize) -> &[Vec<String>] {
        match &self.odd {
            Some((odd, every)) if n % every == every - 1 => odd,
            _ => &self.templates[n % self.templates.len()],
        }
    }

    /// How many sessions are copies of the odd one.
    pub fn odd_sessions(&self) -> usize {
        self.odd
            .as_ref()
            .map_or(0, |(_, every)| self.sessions / every)
    }

    /// How many lines the log has, its meta line among them.
    pub fn lines(&self) -> usize {
        1 + (0..self.sessions)
            .map(|n| self.template(n).len())
            .sum::<usize>()
    }
}

impl Iterator for Interleaved {
    type Item = String;

    fn next(&mut self) -> Option<String> {
        if !self.meta_given {
            self.meta_given = true;
            return Some(CANONICAL_META.to_owned());
        }
        while self.open.len() < self.open_max && self.started < self.sessions {
            self.open.push((self.started, 0));
            self.started += 1;
        }
        if self.open.is_empty() {
            return None;
        }
        let place = self.turn % self.open.len();
        let (n, at) = self.open[place];
        let template = self.template(n);
        let name = format!("\"session\":\"s{n}\"");
        let line = template[at].join(&name);
        let ended = at + 1 == template.len();
        self.turn = place + 1;
        if !ended {
            self.open[place].1 += 1;
        } else if self.started < self.sessions {
            self.open[place] = (self.started, 0);
            self.started += 1;
        } else {
            self.open.remove(place);
            self.turn = place;
        }
        Some(line)
    }
}

impl Read for SyntheticTrace {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let available = self.fill_buf()?;
        let n = available.len().min(out.len());
        out[..n].copy_from_slice(&available[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl BufRead for SyntheticTrace {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        if self.pos >= self.buf.len() {
            self.refill();
        }
        Ok(&self.buf[self.pos..])
    }

    fn consume(&mut self, n: usize) {
        self.pos += n;
    }
}
