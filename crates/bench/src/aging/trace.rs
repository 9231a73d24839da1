//! The aging trace: an operation stream as text, one operation a line
//! (`docs/FORMAT.md`, "Aging trace"). The first line that is neither
//! blank nor a comment is the version line, `fslab-age-trace 1`; then
//! `TIME OP ARGS…`, times in simulated seconds, never decreasing. Lines
//! starting with `#` are comments (the recorder writes the generator's
//! parameters there).

use super::ops::{bad_path, Op, TimedOp};
use std::fmt;
use std::io::{self, BufRead, Write};

/// The first word of the version line.
pub const MAGIC: &str = "fslab-age-trace";
/// The version this code writes and reads.
pub const VERSION: u32 = 1;

/// A line of a trace that could not be read, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceError {
    /// 1-based line number (0: reading failed before any line).
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

impl std::error::Error for TraceError {}

/// Writes the version line and `comments` (each as a `#` line).
pub fn write_header(w: &mut dyn Write, comments: &[String]) -> io::Result<()> {
    writeln!(w, "{MAGIC} {VERSION}")?;
    for c in comments {
        for line in c.lines() {
            writeln!(w, "# {line}")?;
        }
    }
    Ok(())
}

/// Writes one operation's line.
pub fn write_op(w: &mut dyn Write, op: &TimedOp) -> io::Result<()> {
    writeln!(w, "{op}")
}

/// A whole trace of `ops` as text.
pub fn to_text(ops: &[TimedOp], comments: &[String]) -> String {
    let mut out = Vec::new();
    // Writing to a Vec cannot fail.
    let _ = write_header(&mut out, comments);
    for op in ops {
        let _ = write_op(&mut out, op);
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn number(word: Option<&str>, what: &str) -> Result<u64, String> {
    let word = word.ok_or_else(|| format!("missing {what}"))?;
    word.parse::<u64>().map_err(|_| format!("{what} {word:?} is not a non-negative integer"))
}

fn path(word: Option<&str>, what: &str) -> Result<String, String> {
    let word = word.ok_or_else(|| format!("missing {what}"))?;
    match bad_path(word) {
        Some(why) => Err(format!("{what} {word:?} is {why}")),
        None => Ok(word.to_string()),
    }
}

/// Parses one operation line (not the version line, not a comment).
pub fn parse_op(line: &str) -> Result<TimedOp, String> {
    let mut words = line.split_whitespace();
    let time = number(words.next(), "time")?;
    let name = words.next().ok_or("missing operation")?;
    let op = match name {
        "mkdir" => Op::Mkdir { path: path(words.next(), "path")? },
        "unlink" => Op::Unlink { path: path(words.next(), "path")? },
        "create" => Op::Create { path: path(words.next(), "path")?, size: number(words.next(), "size")? },
        "overwrite" => {
            Op::Overwrite { path: path(words.next(), "path")?, size: number(words.next(), "size")? }
        }
        "truncate" => Op::Truncate { path: path(words.next(), "path")?, size: number(words.next(), "size")? },
        "append" => {
            Op::Append { path: path(words.next(), "path")?, bytes: number(words.next(), "byte count")? }
        }
        "rename" => Op::Rename { from: path(words.next(), "source")?, to: path(words.next(), "target")? },
        other => {
            return Err(format!(
                "unknown operation {other:?} (mkdir, create, append, overwrite, truncate, unlink, rename)"
            ))
        }
    };
    if let Some(extra) = words.next() {
        return Err(format!("unexpected {extra:?} after the {name} operation"));
    }
    Ok(TimedOp { time, op })
}

/// Reads a trace an operation at a time, checking the version line and
/// that time never goes back.
pub struct TraceReader<R: BufRead> {
    input: R,
    line: usize,
    seen_version: bool,
    last_time: u64,
}

impl<R: BufRead> TraceReader<R> {
    /// A reader of `input`.
    pub fn new(input: R) -> TraceReader<R> {
        TraceReader { input, line: 0, seen_version: false, last_time: 0 }
    }

    fn error(&self, message: impl Into<String>) -> TraceError {
        TraceError { line: self.line, message: message.into() }
    }

    /// The next operation, `Ok(None)` at the end.
    pub fn next_op(&mut self) -> Result<Option<TimedOp>, TraceError> {
        let mut text = String::new();
        loop {
            text.clear();
            self.line += 1;
            match self.input.read_line(&mut text) {
                Ok(0) if !self.seen_version => {
                    return Err(self.error(format!("empty trace: no `{MAGIC} {VERSION}` line")))
                }
                Ok(0) => return Ok(None),
                Ok(_) => {}
                Err(e) => return Err(self.error(format!("cannot read: {e}"))),
            }
            let line = text.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            if !self.seen_version {
                let mut words = line.split_whitespace();
                if words.next() != Some(MAGIC) {
                    return Err(
                        self.error(format!("not an aging trace: the first line is not `{MAGIC} {VERSION}`"))
                    );
                }
                match words.next().map(str::parse::<u32>) {
                    Some(Ok(VERSION)) if words.next().is_none() => {}
                    Some(Ok(v)) => {
                        return Err(
                            self.error(format!("trace version {v}; this fslab reads version {VERSION}"))
                        )
                    }
                    _ => return Err(self.error(format!("bad version line; expected `{MAGIC} {VERSION}`"))),
                }
                self.seen_version = true;
                continue;
            }
            let op = parse_op(line).map_err(|m| self.error(m))?;
            if op.time < self.last_time {
                return Err(
                    self.error(format!("time {} is before the previous line's {}", op.time, self.last_time))
                );
            }
            self.last_time = op.time;
            return Ok(Some(op));
        }
    }
}

/// Parses a whole trace.
pub fn parse(text: &str) -> Result<Vec<TimedOp>, TraceError> {
    let mut reader = TraceReader::new(text.as_bytes());
    let mut ops = Vec::new();
    while let Some(op) = reader.next_op()? {
        ops.push(op);
    }
    Ok(ops)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error_of(text: &str) -> TraceError {
        parse(text).expect_err("a malformed trace")
    }

    #[test]
    fn every_operation_round_trips() {
        let ops = vec![
            TimedOp { time: 0, op: Op::Mkdir { path: "d0".into() } },
            TimedOp { time: 5, op: Op::Create { path: "d0/f1".into(), size: 12345 } },
            TimedOp { time: 5, op: Op::Append { path: "d0/f1".into(), bytes: 7 } },
            TimedOp { time: 9, op: Op::Overwrite { path: "d0/f1".into(), size: 0 } },
            TimedOp { time: 10, op: Op::Truncate { path: "d0/f1".into(), size: 3 } },
            TimedOp { time: 11, op: Op::Rename { from: "d0/f1".into(), to: "d0/f2".into() } },
            TimedOp { time: 86_400, op: Op::Unlink { path: "d0/f2".into() } },
        ];
        let text = to_text(&ops, &["seed 1".to_string()]);
        assert!(
            text.starts_with("fslab-age-trace 1\n# seed 1\n0 mkdir d0\n5 create d0/f1 12345\n"),
            "{text}"
        );
        assert_eq!(parse(&text), Ok(ops));
    }

    #[test]
    fn malformed_lines_name_their_line_number() {
        let head = "fslab-age-trace 1\n# c\n0 mkdir d\n";
        let cases = [
            (format!("{head}1 frobnicate d/x\n"), 4, "unknown operation"),
            (format!("{head}\n1 create d/x\n"), 5, "missing size"),
            (format!("{head}1 create d/x -4\n"), 4, "not a non-negative integer"),
            (format!("{head}1 create d/../x 4\n"), 4, "'..'"),
            (format!("{head}1 unlink d/x extra\n"), 4, "unexpected"),
            (format!("{head}x unlink d/x\n"), 4, "time"),
            (format!("{head}0 unlink d/x\n5 mkdir e\n4 mkdir f\n"), 6, "before the previous"),
            ("fslab-age-trace 2\n".to_string(), 1, "version 2"),
            ("hello\n".to_string(), 1, "not an aging trace"),
            (String::new(), 1, "empty trace"),
        ];
        for (text, line, needle) in cases {
            let e = error_of(&text);
            assert_eq!(e.line, line, "{text:?}: {e}");
            assert!(e.to_string().contains(needle), "{text:?}: {e}");
            assert!(e.to_string().starts_with(&format!("line {line}: ")), "{e}");
        }
    }
}
