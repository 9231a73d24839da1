//! The aging operation stream: what one step of aging does, and when.
//!
//! Times are simulated seconds since the start of aging; day `d` is
//! `[d × 86400, (d + 1) × 86400)`. Paths are relative to the aged
//! directory, `/`-separated, with no empty, `.` or `..` component and no
//! whitespace (so that the trace format needs no quoting).

use std::fmt;

/// Seconds in a simulated day.
pub const DAY: u64 = 86_400;

/// One aging operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// Makes a directory.
    Mkdir { path: String },
    /// Creates a file and writes `size` bytes into it from the start.
    Create { path: String, size: u64 },
    /// Writes `bytes` more at the end of a file.
    Append { path: String, bytes: u64 },
    /// Rewrites a file whole: truncates it to nothing, then writes `size`
    /// bytes (the 1997 paper models a modified file as deleted and
    /// written again, §3.1).
    Overwrite { path: String, size: u64 },
    /// Cuts a file down (or extends it with a hole) to `size` bytes.
    Truncate { path: String, size: u64 },
    /// Removes a file.
    Unlink { path: String },
    /// Renames a file, replacing `to` if it exists.
    Rename { from: String, to: String },
}

/// An operation and its simulated time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimedOp {
    /// Simulated seconds since aging began.
    pub time: u64,
    /// What to do.
    pub op: Op,
}

impl TimedOp {
    /// The simulated day it falls in.
    pub fn day(&self) -> u64 {
        self.time / DAY
    }
}

impl Op {
    /// Bytes the operation writes.
    pub fn bytes_written(&self) -> u64 {
        match self {
            Op::Create { size, .. } | Op::Overwrite { size, .. } => *size,
            Op::Append { bytes, .. } => *bytes,
            _ => 0,
        }
    }

    /// The operation's name in a trace.
    pub fn name(&self) -> &'static str {
        match self {
            Op::Mkdir { .. } => "mkdir",
            Op::Create { .. } => "create",
            Op::Append { .. } => "append",
            Op::Overwrite { .. } => "overwrite",
            Op::Truncate { .. } => "truncate",
            Op::Unlink { .. } => "unlink",
            Op::Rename { .. } => "rename",
        }
    }
}

impl fmt::Display for TimedOp {
    /// The trace line (`docs/FORMAT.md`, "Aging trace"), without its
    /// newline.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (t, name) = (self.time, self.op.name());
        match &self.op {
            Op::Mkdir { path } | Op::Unlink { path } => write!(f, "{t} {name} {path}"),
            Op::Create { path, size } | Op::Overwrite { path, size } | Op::Truncate { path, size } => {
                write!(f, "{t} {name} {path} {size}")
            }
            Op::Append { path, bytes } => write!(f, "{t} {name} {path} {bytes}"),
            Op::Rename { from, to } => write!(f, "{t} {name} {from} {to}"),
        }
    }
}

/// Why `path` cannot name a file in a stream, or `None` if it can.
pub fn bad_path(path: &str) -> Option<&'static str> {
    if path.is_empty() {
        return Some("an empty path");
    }
    if path.chars().any(char::is_whitespace) {
        return Some("a path with whitespace");
    }
    if path.split('/').any(|c| c.is_empty() || c == "." || c == "..") {
        return Some("a path with an empty, '.' or '..' component (or a leading or trailing '/')");
    }
    None
}
