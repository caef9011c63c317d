//! `check`'s loop over a trace's lines, on one thread or two.
//!
//! Lines are read, and parsed into records by the reader's first half ([`ReadLines`]), on the
//! caller's thread, a batch of lines at a time. A trace that ends within its first batch is
//! judged on that thread too. A longer one is judged — its records made into events by the
//! reader's second half ([`MakeEvents`]) and applied — on a thread of its own, the batches sent
//! to it through a bounded channel, so that reading and judging run at once and memory stays flat
//! (at most [`IN_FLIGHT`] batches wait).
//!
//! What either thread finds is what one thread would find: the records are judged in the order
//! they were read, each line's only after the line was read whole, so an error found judging is
//! at an earlier line than one found reading and is the one reported; a judging that stops on an
//! error stops the reading at its next batch.

use std::io::BufRead;
use std::panic;
use std::sync::mpsc::sync_channel;

use super::{
    limits, Checker, Conform, InputError, KeepLines, MakeEvents, ReadLines, Reader, Verdict,
};

/// Lines read before their records are judged: a trace that ends within its first batch is judged
/// on the reading thread.
pub(super) const BATCH: usize = 1024;
/// Bytes of lines read before their records are judged, at most (a batch ends at the line that
/// passes it): a batch of long lines — a log's audio deltas are several kilobytes each —
/// is judged while its text is still in the processor's cache. On one core, the corpus-shaped
/// audio-delta log of the `check_throughput` bench was checked at 1.09 GB/s in batches of 1 024
/// lines, 1.19 GB/s in batches capped at 256 KiB (best of five, twice).
pub(super) const BATCH_BYTES: usize = 256 << 10;

/// How much is read before it is judged: `lines` lines, or `bytes` bytes of them, whichever comes
/// first.
#[derive(Clone, Copy, Debug)]
pub struct Batching {
    pub lines: usize,
    pub bytes: usize,
}

impl Batching {
    /// What `check` reads at a time.
    pub const DEFAULT: Batching = Batching {
        lines: BATCH,
        bytes: BATCH_BYTES,
    };

    /// `lines` lines at a time, however long (in tests: one thread, or a line at a time).
    #[cfg(test)]
    pub fn lines(lines: usize) -> Batching {
        Batching {
            lines,
            bytes: usize::MAX,
        }
    }
}
/// Batches read ahead of the judging, at most.
const IN_FLIGHT: usize = 4;

/// Checks the trace `input` with `reader`, judging with `checker` the records of a `batch` at a
/// time ([`Batching::DEFAULT`] but in tests).
pub(super) fn check<S: Conform, R: Reader<S>>(
    input: impl BufRead,
    reader: &mut R,
    mut checker: Checker<S>,
    batch: Batching,
) -> Result<Verdict, InputError> {
    let (lines, events) = reader.halves();
    let kept = checker.lines.clone();
    let mut reading = Reading {
        input,
        lines,
        kept: kept.as_deref(),
        batch,
        bytes: Vec::new(),
        read: 0,
        line: 0,
        blank: None,
    };
    let (records, _, end) = reading.next();
    let Some(end) = end else {
        return on_two_threads(reading, records, checker, events);
    };
    checker.records(events, records, &mut Vec::new())?;
    end.map(|lines| checker.conclude(lines))
}

/// The rest of a trace longer than a batch, `first` read: judged on a thread of its own while the
/// reading goes on.
fn on_two_threads<S: Conform, Record: Send>(
    mut reading: Reading<impl BufRead, impl ReadLines<Record>>,
    first: Vec<(usize, Record)>,
    mut checker: Checker<S>,
    events: &mut (impl MakeEvents<S, Record> + Send),
) -> Result<Verdict, InputError> {
    std::thread::scope(|scope| {
        let (to, from) = sync_channel::<(Vec<(usize, Record)>, usize)>(IN_FLIGHT);
        let judging = scope.spawn(move || {
            let mut buf = Vec::new();
            for (records, read_low) in from {
                // On an error the channel closes: the reading stops at its next batch.
                checker.records(&mut *events, records, &mut buf)?;
                checker.settle(read_low);
            }
            Ok(checker)
        });
        let mut batch = (first, reading.low::<Record>(), None);
        let end = loop {
            let (records, read_low, end) = batch;
            if to.send((records, read_low)).is_err() {
                break Err(InputError::at(
                    reading.line,
                    "not read on: the judging stopped on an earlier line",
                ));
            }
            if let Some(end) = end {
                break end;
            }
            batch = reading.next();
        };
        drop(to);
        let judged = judging.join().unwrap_or_else(|p| panic::resume_unwind(p));
        // An error judging is at an earlier line than one reading: it comes first.
        let checker = judged?;
        end.map(|lines| checker.conclude(lines))
    })
}

/// Records with their lines, the first line the reading may still make records of, and, after
/// the last batch, how the reading ended.
type Batch<Record> = (
    Vec<(usize, Record)>,
    usize,
    Option<Result<usize, InputError>>,
);

/// A trace's lines, read into records.
struct Reading<'a, I, L> {
    input: I,
    lines: &'a mut L,
    /// What keeps each line as it is read, if anything does.
    kept: Option<&'a dyn KeepLines>,
    /// What a batch holds.
    batch: Batching,
    /// A line split across the input's refills, gathered.
    bytes: Vec<u8>,
    /// Bytes read so far, line endings included.
    read: usize,
    /// Lines read so far.
    line: usize,
    /// The first of a run of blank lines, not yet followed by a line.
    blank: Option<usize>,
}

impl<I: BufRead, L> Reading<'_, I, L> {
    /// The next batch's records: a full batch's, or the last's, with how the reading ended — the
    /// number of lines, the blank lines at the end left out, or an input error (the batch then
    /// holds what the lines before the error made).
    fn next<Record>(&mut self) -> Batch<Record>
    where
        L: ReadLines<Record>,
    {
        let mut records = Vec::new();
        let read = self.read;
        for _ in 0..self.batch.lines {
            if self.read - read >= self.batch.bytes {
                break;
            }
            let end = match self.line(&mut records) {
                Ok(true) => continue,
                Ok(false) => self.end(&mut records),
                Err(e) => Err(e),
            };
            return (records, self.low(), Some(end));
        }
        (records, self.low(), None)
    }

    /// The first line the reading may still make records of: the first the reader holds back,
    /// else the next to be read.
    fn low<Record>(&self) -> usize
    where
        L: ReadLines<Record>,
    {
        let next = self.line + 1;
        self.lines.held_from().map_or(next, |held| held.min(next))
    }

    /// Reads one line into `records`: `false` at the end of the input. On an error, `records`
    /// holds only what the lines before made.
    ///
    /// A line the input's buffer holds whole is read where it lies; one split across refills is
    /// gathered in `bytes` first. Line ends are found by the `memchr` crate's vectorized search:
    /// in a log of audio deltas most of a line is one base64 string, and a byte-at-a-time search was a
    /// tenth of the checking.
    fn line<Record>(&mut self, records: &mut Vec<(usize, Record)>) -> Result<bool, InputError>
    where
        L: ReadLines<Record>,
    {
        self.bytes.clear();
        loop {
            let buf = match self.input.fill_buf() {
                Ok(buf) => buf,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(InputError::at(self.line + 1, format!("cannot read: {e}"))),
            };
            if buf.is_empty() {
                if self.bytes.is_empty() {
                    return Ok(false);
                }
                // The last line, without a line ending.
                self.read += self.bytes.len();
                let bytes = std::mem::take(&mut self.bytes);
                let read = self.gathered(&bytes, records);
                self.bytes = bytes;
                return read.map(|()| true);
            }
            match memchr::memchr(b'\n', buf) {
                Some(at) if self.bytes.is_empty() => {
                    let read = Self::read_line(
                        &buf[..at],
                        self.kept,
                        &mut self.line,
                        &mut self.blank,
                        self.lines,
                        records,
                    );
                    self.input.consume(at + 1);
                    self.read += at + 1;
                    return read.map(|()| true);
                }
                Some(at) => {
                    self.bytes.extend_from_slice(&buf[..at]);
                    self.input.consume(at + 1);
                    self.read += self.bytes.len() + 1;
                    let bytes = std::mem::take(&mut self.bytes);
                    let read = self.gathered(&bytes, records);
                    self.bytes = bytes;
                    return read.map(|()| true);
                }
                None => {
                    let n = buf.len();
                    // Never more than a line's limit (and its line ending) held in memory.
                    if self.bytes.len() + n > limits::MAX_LINE_BYTES + 1 {
                        let read = limits::MAX_LINE_BYTES + 2;
                        return Err(limits::line_too_long(self.line + 1, read));
                    }
                    self.bytes.extend_from_slice(buf);
                    self.input.consume(n);
                }
            }
        }
    }

    /// [`Self::read_line`] of a line gathered apart from the input's buffer.
    fn gathered<Record>(
        &mut self,
        bytes: &[u8],
        records: &mut Vec<(usize, Record)>,
    ) -> Result<(), InputError>
    where
        L: ReadLines<Record>,
    {
        Self::read_line(
            bytes,
            self.kept,
            &mut self.line,
            &mut self.blank,
            self.lines,
            records,
        )
    }

    /// The line after `line`, its line ending cut: counted, and read into `records` by `lines`.
    fn read_line<Record>(
        bytes: &[u8],
        kept: Option<&dyn KeepLines>,
        line: &mut usize,
        blank: &mut Option<usize>,
        lines: &mut L,
        records: &mut Vec<(usize, Record)>,
    ) -> Result<(), InputError>
    where
        L: ReadLines<Record>,
    {
        *line += 1;
        let line = *line;
        let body = bytes.strip_suffix(b"\r").unwrap_or(bytes);
        if body.len() > limits::MAX_LINE_BYTES {
            // As many bytes as a line gathered across refills is read to before it is refused.
            let read = body.len().min(limits::MAX_LINE_BYTES + 2);
            return Err(limits::line_too_long(line, read));
        }
        let mut text = std::str::from_utf8(body)
            .map_err(|e| InputError::at(line, format!("not UTF-8 text: {e}")))?;
        if line == 1 {
            // A byte-order mark some editors write: not part of the first line's JSON.
            text = text.strip_prefix('\u{feff}').unwrap_or(text);
        }
        if let Some(kept) = kept {
            kept.line(line, text);
        }
        if text.trim().is_empty() {
            // Blank lines at the very end are tolerated; one between lines is an input error.
            blank.get_or_insert(line);
            return Ok(());
        }
        if let Some(at) = *blank {
            return Err(InputError::at(at, "empty line"));
        }
        kept_on_success(records, |records| lines.read(text, line, records))
    }

    /// The end of the input: the number of lines, the records the reader held back pushed onto
    /// `records`.
    fn end<Record>(&mut self, records: &mut Vec<(usize, Record)>) -> Result<usize, InputError>
    where
        L: ReadLines<Record>,
    {
        let line = self.line - self.blank.map_or(0, |at| self.line + 1 - at);
        if line == 0 {
            return Err(InputError::at(0, "the trace is empty"));
        }
        kept_on_success(records, |records| self.lines.flush(records))?;
        Ok(line)
    }
}

/// `f` run on `records`: what it pushed is kept only if it succeeds (a line the reader refuses
/// makes no records).
fn kept_on_success<Record>(
    records: &mut Vec<(usize, Record)>,
    f: impl FnOnce(&mut Vec<(usize, Record)>) -> Result<(), InputError>,
) -> Result<(), InputError> {
    let before = records.len();
    let result = f(records);
    if result.is_err() {
        records.truncate(before);
    }
    result
}

#[cfg(test)]
mod tests;
