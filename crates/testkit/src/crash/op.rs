//! One primitive call of a crash workload ([`Op`]): what the oracle's tree
//! applies and the workloads are made of, apart from both so that neither
//! names the other.

use std::fmt;

/// One primitive call on the namespace. Paths are relative to the root,
/// components joined by `/` (`"A/foo"`); `""` is the root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// `mknod(parent, name, S_IFREG | 0644)`.
    Create(String),
    /// `write(path, offset, pattern(tag, offset, len))`.
    Write {
        /// The file.
        path: String,
        /// Where.
        offset: u64,
        /// How many bytes.
        len: usize,
        /// Which pattern ([`pattern`]).
        tag: u8,
    },
    /// `setattr(path, size)`: truncate down or extend with a hole.
    Truncate(String, u64),
    /// `link(from, to)`.
    Link(String, String),
    /// `unlink(path)`.
    Unlink(String),
    /// `open(path)`, then `unlink(path)`, and no close: the file lives on
    /// with no name (an orphan) to the end of the run.
    UnlinkOpen(String),
    /// `rename(from, to)`, no flags.
    Rename(String, String),
    /// `mkdir(path, 0755)`.
    Mkdir(String),
    /// `rmdir(path)`.
    Rmdir(String),
    /// `symlink(path → target)`.
    Symlink(String, String),
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Op::Create(p) => write!(f, "create({p})"),
            Op::Write { path, offset, len, tag } => write!(f, "write({path}, {offset}+{len}, tag {tag})"),
            Op::Truncate(p, size) => write!(f, "truncate({p}, {size})"),
            Op::Link(a, b) => write!(f, "link({a} -> {b})"),
            Op::Unlink(p) => write!(f, "unlink({p})"),
            Op::UnlinkOpen(p) => write!(f, "unlink-open({p})"),
            Op::Rename(a, b) => write!(f, "rename({a} -> {b})"),
            Op::Mkdir(p) => write!(f, "mkdir({p})"),
            Op::Rmdir(p) => write!(f, "rmdir({p})"),
            Op::Symlink(p, t) => write!(f, "symlink({p} -> {t:?})"),
        }
    }
}
