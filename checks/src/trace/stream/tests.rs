//! The streaming loop's tests: a trace judged alike on one thread or two, in any batch, read
//! through any buffer; errors at their lines.

use std::io::{BufReader, Read};
use std::path::Path;

use turnfence_model::turn::TurnMachine;

use super::{Batching, Reading, BATCH};
use crate::dialect::reading;
use crate::gate::synthetic::SyntheticTrace;
use crate::trace::canonical::CanonicalReader;
use crate::trace::dialects::check_dialect_batched;
use crate::trace::{
    check_batched, Event, InputError, Keep, MakeEvents, ReadLines, Reader, Sessions, Verdict,
};

/// Batches that judge a trace's records on one thread, or all but the first on a second one,
/// a record at a time or a few, or as many as a few kilobytes of lines hold.
const BATCHES: [Batching; 5] = [
    Batching {
        lines: usize::MAX,
        bytes: usize::MAX,
    },
    Batching::DEFAULT,
    Batching {
        lines: usize::MAX,
        bytes: 2048,
    },
    Batching {
        lines: 3,
        bytes: usize::MAX,
    },
    Batching {
        lines: 1,
        bytes: usize::MAX,
    },
];

fn canonical(text: &str, batch: Batching) -> Result<Verdict, InputError> {
    let mut reader = CanonicalReader::<TurnMachine>::default();
    check_batched(
        text.as_bytes(),
        &mut reader,
        Keep::Effective,
        TurnMachine::default(),
        batch,
        None,
    )
}

/// [`canonical`], read through a buffer smaller than most lines: each line gathered across
/// refills.
fn gathered(text: &str) -> Result<Verdict, InputError> {
    let mut reader = CanonicalReader::<TurnMachine>::default();
    check_batched(
        BufReader::with_capacity(7, text.as_bytes()),
        &mut reader,
        Keep::Effective,
        TurnMachine::default(),
        Batching::DEFAULT,
        None,
    )
}

/// The synthetic trace's first `n` lines (more than four batches).
fn long(n: usize) -> Vec<String> {
    let lines: Vec<String> = SyntheticTrace::new(400).lines_as_strings();
    assert!(lines.len() >= n && n > 4 * BATCH, "{} lines", lines.len());
    lines[..n].to_vec()
}

#[test]
fn every_fixture_is_judged_alike_on_one_thread_or_two() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures");
    let mut judged = 0;
    for dir in ["accepted", "rejected"] {
        let mut files: Vec<_> = std::fs::read_dir(root.join(dir))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
            .collect();
        files.sort();
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap();
            let first = text.lines().next().unwrap_or_default();
            let Ok(read) = reading(first, &Default::default()) else {
                // Refused from its first line, before any is judged.
                continue;
            };
            let by =
                |batch| check_dialect_batched(text.as_bytes(), &read, Keep::Effective, batch, None);
            let one_thread = by(BATCHES[0]);
            for batch in BATCHES {
                assert_eq!(
                    by(batch),
                    one_thread,
                    "{} in batches of {batch:?}",
                    file.display()
                );
            }
            judged += 1;
        }
    }
    assert!(judged > 150, "{judged} fixtures");
}

#[test]
fn a_long_trace_is_judged_alike_in_any_batch() {
    let text = long(6 * BATCH).join("\n");
    let one_thread = canonical(&text, BATCHES[0]).unwrap();
    assert!(one_thread.conforms());
    assert_eq!(one_thread.lines, 6 * BATCH);
    for batch in BATCHES {
        assert_eq!(
            canonical(&text, batch).as_ref(),
            Ok(&one_thread),
            "batches of {batch:?}"
        );
    }
    assert_eq!(gathered(&text).as_ref(), Ok(&one_thread), "a small buffer");
    let last_unended = format!("{text}\n{}", long(6 * BATCH + 1)[6 * BATCH]);
    assert_eq!(gathered(&last_unended).map(|v| v.lines), Ok(6 * BATCH + 1));
}

/// A meta line past the first is refused where it is judged; a line that is no JSON, where it
/// is read.
const JUDGED_WRONG: &str = r#"{"meta":{}}"#;
const READ_WRONG: &str = "{";

/// The error a long trace gives, in every batch size, with `first` at one line and `second`
/// at a later one: it must be `first`'s, at its line.
fn the_first_error_wins(first: &str, second: &str) -> Vec<InputError> {
    let mut lines = long(5 * BATCH);
    let (at, later) = (2 * BATCH + 5, 3 * BATCH + 7);
    lines[at - 1] = first.into();
    lines[later - 1] = second.into();
    BATCHES
        .iter()
        .map(|&batch| {
            let e = canonical(&lines.join("\n"), batch).unwrap_err();
            assert_eq!(e.line, at, "batches of {batch:?}: {e:?}");
            e
        })
        .collect()
}

#[test]
fn an_error_judging_comes_before_a_later_one_reading() {
    for e in the_first_error_wins(JUDGED_WRONG, READ_WRONG) {
        assert!(e.message.contains("meta line"), "{e:?}");
    }
}

#[test]
fn an_error_reading_comes_before_a_later_one_judging() {
    for e in the_first_error_wins(READ_WRONG, JUDGED_WRONG) {
        assert!(!e.message.contains("meta line"), "{e:?}");
    }
}

/// A line's limit: one of exactly the limit is read (here a blank one, refused only as a blank
/// line between lines), a longer one is refused having read no more than the limit and a
/// line ending; blank lines at the end are not counted; a failing read is an error at the
/// line it could not read.
#[test]
fn a_line_is_read_to_its_limit_and_no_further() {
    use crate::trace::limits::MAX_LINE_BYTES;
    let first = &long(6 * BATCH)[0];
    let blank = " ".repeat(MAX_LINE_BYTES);
    let e = canonical(&format!("{first}\n{blank}\n{first}"), Batching::DEFAULT).unwrap_err();
    assert_eq!((e.line, &*e.message), (2, "empty line"));
    let long_line = "x".repeat(MAX_LINE_BYTES + 10);
    let e = canonical(&format!("{first}\n{long_line}"), Batching::DEFAULT).unwrap_err();
    assert_eq!(e.line, 2);
    let read = MAX_LINE_BYTES + 2;
    assert!(
        e.message
            .starts_with(&format!("the line has {read} bytes or more")),
        "{e:?}"
    );
    // The same, the lines read across the refills of a small buffer.
    let e = gathered(&format!("{first}\n{long_line}")).unwrap_err();
    assert_eq!(e.line, 2);
    assert!(
        e.message
            .starts_with(&format!("the line has {read} bytes or more")),
        "{e:?}"
    );
    let e = gathered(&format!("{first}\n{blank}\n{first}")).unwrap_err();
    assert_eq!((e.line, &*e.message), (2, "empty line"));
    let v = canonical(&format!("{first}\n{first}\n\n \n"), Batching::DEFAULT).unwrap();
    assert_eq!(v.lines, 2);

    /// A first line, then a read that fails.
    struct Failing(Option<Vec<u8>>);
    impl Read for Failing {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let Some(line) = self.0.take() else {
                return Err(std::io::Error::other("the disk is gone"));
            };
            buf[..line.len()].copy_from_slice(&line);
            Ok(line.len())
        }
    }
    let mut reader = CanonicalReader::<TurnMachine>::default();
    let input = BufReader::new(Failing(Some(format!("{first}\n").into_bytes())));
    let e = check_batched(
        input,
        &mut reader,
        Keep::Findings,
        TurnMachine::default(),
        Batching::DEFAULT,
        None,
    )
    .unwrap_err();
    assert_eq!(e.line, 2, "{e:?}");
    assert!(
        e.message.starts_with("cannot read: the disk is gone"),
        "{e:?}"
    );
}

/// Counts the bytes read through it.
struct Counted<R> {
    inner: R,
    read: std::rc::Rc<std::cell::Cell<usize>>,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read.set(self.read.get() + n);
        Ok(n)
    }
}

#[test]
fn an_error_judging_stops_the_reading() {
    // A trace of some 200 000 lines, refused where it is judged at line 1500.
    let mut head = long(6 * BATCH);
    head.truncate(1499);
    head.push(JUDGED_WRONG.into());
    let head = head.join("\n") + "\n";
    let total = head.len() + SyntheticTrace::new(8_000).bytes().count();
    let read = std::rc::Rc::new(std::cell::Cell::new(0));
    let input = Counted {
        inner: head.as_bytes().chain(SyntheticTrace::new(8_000)),
        read: read.clone(),
    };
    let mut reader = CanonicalReader::<TurnMachine>::default();
    let e = check_batched(
        BufReader::new(input),
        &mut reader,
        Keep::Findings,
        TurnMachine::default(),
        Batching::DEFAULT,
        None,
    )
    .unwrap_err();
    assert_eq!(e.line, 1500, "{e:?}");
    // The batches in flight and the one being read, at most, read past it.
    assert!(
        read.get() * 20 < total,
        "{} of {total} bytes read",
        read.get()
    );
}

/// Lines kept as they are, a line "refused" pushed and then refused; the lines made into
/// events seen.
#[derive(Default)]
struct Refusing {
    lines: RefusingLines,
    seen: Seen,
}

#[derive(Default)]
struct RefusingLines;

#[derive(Default)]
struct Seen(Vec<String>);

impl Reader<TurnMachine> for Refusing {
    type Record = String;
    type Lines = RefusingLines;
    type Events = Seen;

    fn halves(&mut self) -> (&mut RefusingLines, &mut Seen) {
        (&mut self.lines, &mut self.seen)
    }
}

impl ReadLines<String> for RefusingLines {
    fn read(
        &mut self,
        text: &str,
        line: usize,
        out: &mut Vec<(usize, String)>,
    ) -> Result<(), InputError> {
        out.push((line, text.to_owned()));
        if text == "refused" {
            return Err(InputError::at(line, "refused"));
        }
        Ok(())
    }
}

impl MakeEvents<TurnMachine, String> for Seen {
    fn events(
        &mut self,
        record: String,
        _: usize,
        _: &Sessions<TurnMachine>,
        _: &mut Vec<Event<TurnMachine>>,
    ) -> Result<(), InputError> {
        self.0.push(record);
        Ok(())
    }
}

#[test]
fn a_refused_line_makes_no_records_and_the_lines_before_it_are_judged() {
    for (n, batch) in [(3, usize::MAX), (3, 1), (2 * BATCH, BATCH)] {
        let batch = Batching::lines(batch);
        let mut lines: Vec<String> = (1..n).map(|i| format!("line {i}")).collect();
        lines.push("refused".into());
        let mut reader = Refusing::default();
        let text = lines.join("\n");
        let e = check_batched(
            text.as_bytes(),
            &mut reader,
            Keep::Findings,
            TurnMachine::default(),
            batch,
            None,
        );
        assert_eq!(e.unwrap_err().line, n);
        assert_eq!(
            reader.seen.0,
            lines[..n - 1],
            "{n} lines in batches of {batch:?}"
        );
    }
}

/// A batch ends at the line that reaches its bytes (line endings counted), or at its lines,
/// whichever comes first; the last holds the rest, with the number of lines read.
#[test]
fn a_batch_holds_its_lines_or_its_bytes_whichever_comes_first() {
    // Ten lines of nine bytes and a line ending each; the last two split across refills.
    let text = "line 0001\n".repeat(10);
    let sizes = |batch: Batching, capacity: usize| {
        let mut lines = RefusingLines;
        let mut reading = Reading {
            input: BufReader::with_capacity(capacity, text.as_bytes()),
            lines: &mut lines,
            kept: None,
            batch,
            bytes: Vec::new(),
            read: 0,
            line: 0,
            blank: None,
        };
        let mut sizes = Vec::new();
        loop {
            let (records, _, end) = reading.next::<String>();
            sizes.push(records.len());
            if let Some(end) = end {
                return (sizes, end.unwrap());
            }
        }
    };
    let by_bytes = Batching {
        lines: usize::MAX,
        bytes: 25,
    };
    assert_eq!(sizes(by_bytes, 1 << 10), (vec![3, 3, 3, 1], 10));
    assert_eq!(sizes(by_bytes, 7), (vec![3, 3, 3, 1], 10));
    let by_lines = Batching {
        lines: 4,
        bytes: 25,
    };
    assert_eq!(sizes(by_lines, 1 << 10), (vec![3, 3, 3, 1], 10));
    let by_lines = Batching {
        lines: 2,
        bytes: 25,
    };
    assert_eq!(sizes(by_lines, 7), (vec![2, 2, 2, 2, 2, 0], 10));
    // Line endings count: two lines reach 20 bytes exactly, read where they lie or gathered.
    let exact = Batching {
        lines: usize::MAX,
        bytes: 20,
    };
    assert_eq!(sizes(exact, 1 << 10), (vec![2, 2, 2, 2, 2, 0], 10));
    assert_eq!(sizes(exact, 7), (vec![2, 2, 2, 2, 2, 0], 10));
    // The last line, without its line ending, gathered at the end of the input: every byte read.
    let unended = text.trim_end();
    let mut lines = RefusingLines;
    let mut reading = Reading {
        input: BufReader::with_capacity(7, unended.as_bytes()),
        lines: &mut lines,
        kept: None,
        batch: exact,
        bytes: Vec::new(),
        read: 0,
        line: 0,
        blank: None,
    };
    while reading.next::<String>().2.is_none() {}
    assert_eq!(reading.read, unended.len());
}
