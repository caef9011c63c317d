//! `check` reads a trace once: the lines its findings' stories and fingerprints need are kept as
//! its one pass reads them, so an input readable once (a pipe) is reported as its file is, and
//! what is kept follows the open sessions, not the log.

use std::path::{Path, PathBuf};

use crate::cli::turnfence;

/// The repository's root, where the fixtures' relative paths start.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// `turnfence check ARGS` run in `dir`: its exit code and standard output.
fn check(dir: &Path, args: &[&str]) -> (Option<i32>, String) {
    let mut all = vec!["check"];
    all.extend(args);
    let out = turnfence(&all, dir);
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// An input that can be read once: a read after its end is an error (the check would report
/// the trace unreadable), as a pipe gives nothing a second time.
struct ReadOnce<'a> {
    bytes: &'a [u8],
    ended: bool,
}

impl std::io::Read for ReadOnce<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.ended {
            return Err(std::io::Error::other("read a second time"));
        }
        let n = buf.len().min(self.bytes.len());
        buf[..n].copy_from_slice(&self.bytes[..n]);
        self.bytes = &self.bytes[n..];
        self.ended = n == 0;
        Ok(n)
    }
}

/// A long log of `sessions` sessions, 40 open at a time, 12 of them a rejected fixture's (a late
/// delivery): longer than a batch, so it is judged on a second thread while it is read.
fn interleaved_with_findings(sessions: usize) -> String {
    use turnfence_checks::gate::synthetic::Interleaved;
    let rejected =
        crate::read(&root().join("fixtures/rejected/0005_no_late_delivery_delta_after_stop.jsonl"));
    let log = Interleaved::new(sessions, 40).with_odd("cancel_tree", &rejected, sessions / 12);
    let mut text = log.collect::<Vec<_>>().join("\n");
    text.push('\n');
    text
}

/// `check` reads a trace once: what its one pass keeps tells every finding's story and
/// fingerprint as all the trace's lines would, from an input that cannot be read again, and it
/// holds a few sessions' lines at a time, not the log.
#[test]
fn one_pass_keeps_the_lines_the_findings_need_and_not_the_log() {
    use std::collections::BTreeMap;
    use std::sync::Arc;
    use turnfence_checks::dialect::{self, Flags};
    use turnfence_checks::report::story::{story, MAX_STORY_LINES};
    use turnfence_checks::report::story_lines::{after, Kept, Wants};
    use turnfence_checks::report::words::{said, Said};

    let text = interleaved_with_findings(3000);
    let once = ReadOnce {
        bytes: text.as_bytes(),
        ended: false,
    };
    let kept = Arc::new(Kept::default());
    let input = std::io::BufReader::with_capacity(4096, once);
    let checked = dialect::check_input_keeping_lines(input, &Flags::default(), kept.clone());
    let reading = checked.reading.unwrap();
    let verdict = checked.verdict.expect("read once, to its end");
    assert_eq!(verdict.findings.len(), 12);
    let lines = kept.lines();
    let all: BTreeMap<usize, Said> = text
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, said(reading.dialect, None, l)))
        .collect();
    for f in &verdict.findings {
        assert_eq!(
            story(f, &lines, MAX_STORY_LINES),
            story(f, &all, MAX_STORY_LINES),
            "{f:?}"
        );
    }
    let wants = || Wants {
        stories: true,
        fingerprints: true,
        matcher: None,
    };
    let (mut kept_verdict, mut all_verdict) = (verdict.clone(), verdict);
    let from_kept = after("log", &lines, &mut kept_verdict, wants());
    let from_all = after("log", &all, &mut all_verdict, wants());
    assert_eq!(from_kept.stories, from_all.stories);
    let prints = |e: &[turnfence_checks::report::baseline::Entry]| {
        e.iter().map(|e| e.fingerprint.clone()).collect::<Vec<_>>()
    };
    assert_eq!(prints(&from_kept.entries), prints(&from_all.entries));
    // Sessions of a few dozen lines, 40 open at once: what they span and the batches in flight
    // held at most (some 8 000 lines), of a log of 90 000.
    assert!(
        kept.most() * 4 < all.len(),
        "held {} of {} lines",
        kept.most(),
        all.len()
    );
}

/// The same long log through a pipe (read once) and from a file: the same Markdown report, its
/// stories drawn, and the same baseline.
#[test]
fn a_piped_log_is_reported_and_fingerprinted_as_its_file() {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let dir = tempfile::tempdir().unwrap();
    let text = interleaved_with_findings(600);
    std::fs::write(dir.path().join("log.jsonl"), &text).unwrap();
    let piped = |args: &[&str]| {
        let mut child = Command::new(env!("CARGO_BIN_EXE_turnfence"))
            .args(args)
            .current_dir(dir.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let text = text.clone();
        let writer = std::thread::spawn(move || stdin.write_all(text.as_bytes()).unwrap());
        let out = child.wait_with_output().unwrap();
        writer.join().unwrap();
        String::from_utf8(out.stdout).unwrap()
    };
    let (_, from_file) = check(dir.path(), &["log.jsonl", "--format", "markdown"]);
    let from_pipe = piped(&["check", "-", "--format", "markdown"]);
    assert!(from_pipe.contains("```mermaid"), "{from_pipe}");
    assert_eq!(from_pipe.replace("`-`", "`log.jsonl`"), from_file);
    check(dir.path(), &["log.jsonl", "--write-baseline", "file.json"]);
    piped(&["check", "-", "--write-baseline", "pipe.json"]);
    let read = |name: &str| std::fs::read_to_string(dir.path().join(name)).unwrap();
    assert_eq!(
        read("pipe.json").replace("\"-\"", "\"log.jsonl\""),
        read("file.json")
    );
}
