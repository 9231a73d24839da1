//! The adapter's answers as the kernel's structures: what each kind of
//! reply carries, written with [`crate::kernel::reply`]'s writers.

use crate::kernel::open_flag;
use crate::kernel::reply::{self as wire, Attr, Entry, Out, Overflow};
use fslab::storage::StatFs;
use std::time::Duration;

/// How long the kernel may cache attributes and names without asking again.
/// Safe to be long because every change passes through this mount, and the
/// kernel drops what each change touches (a directory's attributes after an
/// entry changes, a file's after a write). With one second, deleting 10,000
/// files just created sent a LOOKUP before every UNLINK to revalidate the
/// name, a third of the requests.
pub const TTL: Duration = Duration::from_secs(3600);

/// A name the kernel may cache for [`TTL`]: the attributes of the inode it
/// names and the inode's generation (which tells a reused inode number
/// from the old one).
pub fn entry(attr: Attr, generation: u64) -> Entry {
    Entry { attr, generation, entry_valid: TTL, attr_valid: TTL }
}

/// An entry for node 0, which the kernel keeps as a negative entry for
/// [`TTL`] (a plain ENOENT is forgotten at once). Programs look for the
/// same missing names again and again — a search path, `.git` files,
/// headers — and each look would be a round trip; a later create, rename
/// or link of the name passes through the kernel, which replaces the
/// negative entry.
pub fn absent_entry() -> Entry {
    entry(Attr::default(), 0)
}

/// One directory entry ready for the kernel.
pub struct DirItem {
    /// Its kernel node id.
    pub ino: u64,
    /// The offset that continues the listing after it.
    pub next_offset: u64,
    /// Its type (`DT_*`).
    pub kind: u32,
    /// Its name.
    pub name: Vec<u8>,
}

/// One directory entry with the attributes of what it names, for
/// READDIRPLUS: the kernel caches both as if it had looked the name up,
/// and counts that lookup for every entry but `.` and `..`.
pub struct DirItemPlus {
    /// The entry.
    pub item: DirItem,
    /// What it names: its attributes, or, where they could not be read
    /// (damage), the node's number and type alone with no time to live, so
    /// that the kernel asks again and meets the error then.
    pub entry: Entry,
    /// Whether the kernel counts a lookup of it (all but `.` and `..`).
    pub counted: bool,
}

/// Writes `items` until `limit` bytes of reply are full; the kernel asks
/// again from the last entry's offset for the ones that did not fit.
pub fn put_dir(out: &mut Out, limit: usize, items: &[DirItem]) -> Result<(), Overflow> {
    for item in items {
        if !wire::put_dirent(out, limit, item.ino, item.next_offset, item.kind, &item.name)? {
            break;
        }
    }
    Ok(())
}

/// Writes `items` until `limit` bytes of reply are full; returns the
/// counted entries that did not fit, whose lookups the kernel never saw.
pub fn put_dir_plus(out: &mut Out, limit: usize, items: &[DirItemPlus]) -> Result<Vec<u64>, Overflow> {
    let mut unsent = Vec::new();
    let mut full = false;
    for p in items {
        if !full {
            full =
                !wire::put_direntplus(out, limit, &p.entry, p.item.next_offset, p.item.kind, &p.item.name)?;
        }
        if full && p.counted {
            unsent.push(p.item.ino);
        }
    }
    Ok(unsent)
}

/// The answer to `getxattr` / `listxattr`: the size the caller must allow,
/// or the bytes themselves.
pub enum XattrAnswer {
    /// The caller asked for the size only.
    Size(u32),
    /// The value (or the list of names).
    Data(Vec<u8>),
}

/// Writes an xattr answer.
pub fn put_xattr(out: &mut Out, answer: &XattrAnswer) -> Result<(), Overflow> {
    match answer {
        XattrAnswer::Size(size) => wire::put_xattr_size(out, *size),
        XattrAnswer::Data(data) => out.bytes(data),
    }
}

/// The handle of a file created with direct I/O (every other handle is 0):
/// its writes are the ones the kernel follows with no fsync of its own.
pub const DIRECT_HANDLE: u64 = 1;

/// A file just created and opened: its entry and how the kernel is to do
/// the handle's reads and writes.
pub struct Created {
    /// The new file's entry.
    pub entry: Entry,
    /// Whether the handle bypasses the kernel's page cache.
    pub direct_io: bool,
}

/// CREATE's reply: the entry, then the opened handle.
pub fn put_created(out: &mut Out, created: &Created) -> Result<(), Overflow> {
    wire::put_entry(out, &created.entry)?;
    if created.direct_io {
        wire::put_open(out, DIRECT_HANDLE, open_flag::DIRECT_IO)
    } else {
        wire::put_open(out, 0, open_flag::KEEP_CACHE)
    }
}

/// STATFS's reply: every block count in file-system blocks, and the
/// fragment size equal to the block size.
pub fn put_statfs(out: &mut Out, s: &StatFs) -> Result<(), Overflow> {
    wire::put_statfs(
        out,
        &wire::Statfs {
            blocks: s.total_blocks,
            bfree: s.free_blocks,
            bavail: s.free_blocks,
            files: s.total_inodes,
            ffree: s.free_inodes,
            bsize: s.block_size,
            namelen: s.name_max,
            frsize: s.block_size,
        },
    )
}
