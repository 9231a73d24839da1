//! Pure vocabulary shared by every layer above `disk`: inode numbers, signed
//! logical block numbers, disk addresses, the little-endian codec with CRC32C,
//! and the on-disk inode and directory entry (`docs/FORMAT.md` gives every
//! byte). Nothing here does I/O.

pub mod blockno;
pub mod codec;
pub mod daddr;
pub mod dirent;
pub mod inode;

pub use codec::crc32c;
pub use daddr::{Daddr, PointerOverflow};

/// An inode number. 0 is never an inode; 1 is the ifile (LFS); 2 is the root.
pub type Ino = u64;

/// A logical block number within a file. Zero and positive numbers name data
/// blocks; negative numbers name indirect blocks (1993 paper, Fig. 6) and, at
/// -1, the extended-attribute block.
pub type Lbn = i64;

/// The ifile's inode number (LFS).
pub const IFILE_INO: Ino = 1;

/// The root directory's inode number.
pub const ROOT_INO: Ino = 2;

/// The longest name a directory entry holds.
pub const NAME_MAX: usize = 255;

/// Nanoseconds since the Unix epoch: how every timestamp is stored.
pub type TimeNs = i64;

/// The current time as [`TimeNs`].
pub fn now_ns() -> TimeNs {
    crate::time::host_calendar_ns()
}
