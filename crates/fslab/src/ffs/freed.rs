//! What a free gives back and when it may take effect: the vocabulary the
//! integrity modes answer in ([`FreeWhen`]) and the file system's list of
//! frees waiting (`PendingFree`). The waiting and releasing are
//! `frees`'s; these types are apart from it so that the file system's
//! state can name them without naming the code that works on it.

use super::Frag;
use crate::cache::BlockKey;
use crate::format::Ino;

/// What a free gives back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Freed {
    /// `count` fragments from `start`.
    Frags { start: Frag, count: u32 },
    /// Inode `ino`, a directory or not.
    Inode { ino: Ino, is_dir: bool },
    /// File `ino` (not a directory) whose last name is gone, with all it
    /// holds: its blocks (`frags` fragments of them), its extended
    /// attributes and the inode, freed together once that name's removal
    /// is durable (`FreeWhen::NamesGone`).
    File { ino: Ino, frags: u64 },
}

/// When a free may take effect, as the integrity mode says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum FreeWhen {
    /// At once.
    Now,
    /// Once the current contents of these blocks — the blocks that held
    /// the last pointer, without it now — are durable. (The modes that
    /// answer this are soft updates; `sync` and `async` free at once.)
    Durable(Vec<BlockKey>),
    /// A file (`Freed::File`) whose last name's removal waits to be
    /// durable (soft updates: FreeBSD's dirrem, whose work frees the file
    /// once the directory block is on disk — the 2000 paper's "background
    /// deletes", §4). Nothing of it changes until then: its slot cleared
    /// would dirty its inode block at every unlink, for a write that could
    /// only go rolled back, and walking its indirect blocks would put
    /// their reads in the unlink (§8.1: "Soft Updates removes this read
    /// from the measurement path"). Once the mode says `names_gone` its
    /// blocks and inode are freed, each free waiting as `Durable` does.
    NamesGone,
    /// Once the journal's transaction with this sequence number is
    /// durable in the log. What the disk's groups hold shows the free at
    /// once — the transaction logs the bitmaps with it — and only the
    /// allocator waits (jbd2's rule: nothing freed in a transaction is
    /// reused before it commits).
    Committed(u64),
}

/// A free waiting for its blocks to be durable.
#[derive(Debug, Clone)]
pub(super) struct PendingFree {
    pub(super) what: Freed,
    pub(super) when: FreeWhen,
}
