//! A growing file read as `tail -F` reads it (`check --follow`): its complete lines as they are
//! written, a line caught mid-write held until its end comes, through rotation (the path names a
//! new file: the old one read to its end first) and truncation (the file is shorter than what was
//! read: read again from its start).
//!
//! Nothing here waits: [`Follow::poll`] reads what is there and returns; the caller decides how
//! long to wait before the next poll. Tests drive it by writing a chunk, then polling.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use crate::trace::limits::MAX_LINE_BYTES;

/// Bytes read from the file at most per poll.
const READ: usize = 1 << 20;

/// What happened to the file since the last poll, beside the lines it gave.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    None,
    /// The path names another file now: it is read from its start.
    Rotated,
    /// The file became shorter than what was read: it is read again from its start.
    Truncated,
}

/// A file followed.
pub struct Follow {
    path: PathBuf,
    file: File,
    /// Bytes of the current file read.
    read: u64,
    /// The start of a line whose end is not written yet.
    partial: Vec<u8>,
    /// A line longer than a line may be is being passed over to its end (its start was given as
    /// a line of its own, for the monitor to refuse).
    passing: bool,
    buf: Vec<u8>,
}

impl Follow {
    /// Follows the file at `path` from its start.
    pub fn open(path: &Path) -> io::Result<Follow> {
        Ok(Follow {
            path: path.to_owned(),
            file: File::open(path)?,
            read: 0,
            partial: Vec::new(),
            passing: false,
            buf: vec![0; READ],
        })
    }

    /// The complete lines written since the last poll (line endings cut), pushed onto `lines`,
    /// and what happened to the file. At the end of the file, whether the path still names it and
    /// whether it shrank is looked at: a rotated file's last line, even unended, is a line (its
    /// writer moved on).
    pub fn poll(&mut self, lines: &mut Vec<Vec<u8>>) -> io::Result<Change> {
        let n = loop {
            match self.file.read(&mut self.buf) {
                Ok(n) => break n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        };
        if n > 0 {
            self.read += n as u64;
            let buf = std::mem::take(&mut self.buf);
            self.split(&buf[..n], lines);
            self.buf = buf;
            return Ok(Change::None);
        }
        // At the end: has the path moved on to another file, or has this one shrunk?
        let Ok(now) = std::fs::metadata(&self.path) else {
            // Between a rotation's rename and the new file's creation: poll again later.
            return Ok(Change::None);
        };
        if !same_file(&self.file.metadata()?, &now) {
            let Ok(file) = File::open(&self.path) else {
                return Ok(Change::None);
            };
            self.end_line(lines);
            self.file = file;
            self.read = 0;
            return Ok(Change::Rotated);
        }
        if now.len() < self.read {
            self.file.seek(SeekFrom::Start(0))?;
            self.read = 0;
            self.partial.clear();
            self.passing = false;
            return Ok(Change::Truncated);
        }
        Ok(Change::None)
    }

    /// The end of what will be written (the follower stops): a last line without its ending is
    /// a line.
    pub fn end_line(&mut self, lines: &mut Vec<Vec<u8>>) {
        if !self.partial.is_empty() && !self.passing {
            lines.push(std::mem::take(&mut self.partial));
        }
        self.partial.clear();
        self.passing = false;
    }

    /// Bytes the file holds beyond what was read: how far behind its writer the reading is.
    pub fn unread(&self) -> u64 {
        self.file
            .metadata()
            .map_or(0, |m| m.len().saturating_sub(self.read))
    }

    /// `bytes` cut into lines: complete ones pushed, the rest kept. A line longer than a line may
    /// be is given as its first [`MAX_LINE_BYTES`] + 1 bytes (refused as too long where it is
    /// judged), and its rest passed over.
    fn split(&mut self, mut bytes: &[u8], lines: &mut Vec<Vec<u8>>) {
        while let Some(at) = memchr::memchr(b'\n', bytes) {
            if !std::mem::take(&mut self.passing) {
                self.partial.extend_from_slice(&bytes[..at]);
                self.partial.truncate(MAX_LINE_BYTES + 1);
                lines.push(std::mem::take(&mut self.partial));
            }
            bytes = &bytes[at + 1..];
        }
        if self.passing {
            return;
        }
        self.partial.extend_from_slice(bytes);
        if self.partial.len() > MAX_LINE_BYTES {
            self.partial.truncate(MAX_LINE_BYTES + 1);
            lines.push(std::mem::take(&mut self.partial));
            self.passing = true;
        }
    }
}

/// Whether two files' metadata are of the same file (device and inode; elsewhere than Unix, the
/// path is taken to name the same file throughout).
fn same_file(a: &std::fs::Metadata, b: &std::fs::Metadata) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        a.dev() == b.dev() && a.ino() == b.ino()
    }
    #[cfg(not(unix))]
    {
        let _ = (a, b);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn dir() -> PathBuf {
        let d = std::env::temp_dir().join(format!("turnfence-follow-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn polled(f: &mut Follow) -> (Vec<String>, Change) {
        let mut lines = Vec::new();
        let mut change = Change::None;
        loop {
            let before = lines.len();
            let c = f.poll(&mut lines).unwrap();
            if c != Change::None {
                change = c;
            } else if lines.len() == before && f.unread() == 0 {
                break;
            }
        }
        let lines = lines
            .into_iter()
            .map(|l| String::from_utf8(l).unwrap())
            .collect();
        (lines, change)
    }

    #[test]
    fn a_line_caught_mid_write_is_read_when_its_end_comes() {
        let path = dir().join("partial.jsonl");
        let mut w = File::create(&path).unwrap();
        let mut f = Follow::open(&path).unwrap();
        w.write_all(b"{\"a\":1}\n{\"b\"").unwrap();
        assert_eq!(polled(&mut f).0, ["{\"a\":1}"]);
        assert!(polled(&mut f).0.is_empty());
        w.write_all(b":2}\n").unwrap();
        assert_eq!(polled(&mut f).0, ["{\"b\":2}"]);
        w.write_all(b"{\"c\":3}").unwrap();
        assert!(polled(&mut f).0.is_empty());
        let mut last = Vec::new();
        f.end_line(&mut last);
        assert_eq!(last, [b"{\"c\":3}".to_vec()]);
    }

    #[test]
    fn a_rotated_file_is_read_to_its_end_then_the_new_one_from_its_start() {
        let d = dir();
        let path = d.join("rotated.jsonl");
        let mut w = File::create(&path).unwrap();
        let mut f = Follow::open(&path).unwrap();
        w.write_all(b"one\ntwo").unwrap();
        assert_eq!(polled(&mut f).0, ["one"]);
        std::fs::rename(&path, d.join("rotated.jsonl.1")).unwrap();
        let mut w2 = File::create(&path).unwrap();
        w2.write_all(b"three\n").unwrap();
        assert_eq!(
            polled(&mut f),
            (vec!["two".into(), "three".into()], Change::Rotated)
        );
        drop(w);
    }

    #[test]
    fn a_truncated_file_is_read_again_from_its_start() {
        let path = dir().join("truncated.jsonl");
        let mut w = File::create(&path).unwrap();
        let mut f = Follow::open(&path).unwrap();
        w.write_all(b"one\ntwo\n").unwrap();
        assert_eq!(polled(&mut f).0, ["one", "two"]);
        w.set_len(0).unwrap();
        w.seek(SeekFrom::Start(0)).unwrap();
        w.write_all(b"x\n").unwrap();
        assert_eq!(polled(&mut f), (vec!["x".into()], Change::Truncated));
    }

    #[test]
    fn a_line_too_long_is_given_cut_and_its_rest_passed_over() {
        let path = dir().join("long.jsonl");
        let mut w = File::create(&path).unwrap();
        let mut f = Follow::open(&path).unwrap();
        w.write_all(&vec![b'x'; MAX_LINE_BYTES + 10]).unwrap();
        w.write_all(b"\nnext\n").unwrap();
        let (lines, _) = polled(&mut f);
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0].len(), MAX_LINE_BYTES + 1);
        assert_eq!(lines[1], "next");
    }
}
