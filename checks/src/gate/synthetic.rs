//! A synthetic canonical trace of any length, produced lazily: the gate's eight scenarios over
//! and over, each copy its own session. For benchmarks and for the bounded-memory test: the
//! trace is never held whole, by the producer or by the checker.

use std::io::{self, BufRead, Read};

use turnfence_model::turn::TurnMachine;

use super::{run, NAMES};

/// A `BufRead` over `sessions` sessions of the gate's scenarios, in canonical form.
pub struct SyntheticTrace {
    templates: Vec<String>,
    next: usize,
    sessions: usize,
    buf: Vec<u8>,
    pos: usize,
}

impl SyntheticTrace {
    pub fn new(sessions: usize) -> SyntheticTrace {
        let run = run(&NAMES, TurnMachine::new);
        let templates = run.scenarios.iter().map(|s| s.canonical_trace()).collect();
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

    /// Events (lines) per round of the eight scenarios.
    pub fn lines_per_round(&self) -> usize {
        self.templates.iter().map(|t| t.lines().count()).sum()
    }

    fn refill(&mut self) {
        self.buf.clear();
        self.pos = 0;
        if self.next >= self.sessions {
            return;
        }
        let template = &self.templates[self.next % self.templates.len()];
        let name = NAMES[self.next % NAMES.len()];
        let session = format!("s{}", self.next);
        // The session name appears as `"session":"<scenario>"` in every line of the template.
        let from = format!("\"session\":\"{name}\"");
        let to = format!("\"session\":\"{session}\"");
        self.buf
            .extend_from_slice(template.replace(&from, &to).as_bytes());
        self.next += 1;
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
