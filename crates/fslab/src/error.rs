//! The one error type of the library. The errno is chosen where the error
//! arises; the FUSE adapter only passes it on.

use std::fmt;
use std::io;

/// Every failure of a file-system operation.
#[derive(Debug)]
pub enum Error {
    /// A POSIX error the caller should see as this errno (ENOENT, ENOSPC, ...).
    Errno(i32, &'static str),
    /// An on-disk structure failed validation: what it is, where it lives
    /// and what is wrong with it.
    Corrupt { what: &'static str, at: Location, why: String },
    /// The device failed.
    Io(io::Error),
    /// The image is not an fslab image at all, or of an unsupported version.
    Foreign(String),
}

/// The result type of the library.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// The errno a system call should return for this error.
    pub fn errno(&self) -> i32 {
        match self {
            Error::Errno(e, _) => *e,
            Error::Corrupt { .. } => libc::EIO,
            Error::Io(e) => e.raw_os_error().unwrap_or(libc::EIO),
            Error::Foreign(_) => libc::EINVAL,
        }
    }

    /// A corrupt-structure error for a structure read from disk address
    /// `daddr` (a [`Daddr`](crate::format::Daddr), or its count of units).
    pub fn corrupt(what: &'static str, daddr: impl Into<u64>, why: impl Into<String>) -> Error {
        Error::Corrupt { what, at: Location::Block(daddr.into()), why: why.into() }
    }

    /// A corrupt-structure error for a structure found somewhere other than
    /// at a known disk address (through an inode, in a segment, ...).
    pub fn corrupt_at(what: &'static str, at: Location, why: impl Into<String>) -> Error {
        Error::Corrupt { what, at, why: why.into() }
    }
}

/// Where a damaged structure lives, as precisely as the code that found
/// it knows: what a report of the damage names, so that someone can look
/// at the place (`fslab dump`, `fsck`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Location {
    /// A disk address, in the layout's address units (blocks in LFS,
    /// fragments in FFS).
    Block(u64),
    /// A byte offset on the device (superblock copies).
    Byte(u64),
    /// Inode `ino`'s own structure (a directory, a symbolic link, its
    /// extended attributes), wherever on disk it lives.
    Inode(u64),
    /// Logical block `lbn` of inode `ino` (the ifile's blocks).
    FileBlock {
        /// The inode.
        ino: u64,
        /// The logical block within it.
        lbn: u64,
    },
    /// A segment, by number.
    Segment(u64),
    /// Not known more precisely than the structure's name says.
    Unknown,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Block(daddr) => write!(f, " at block {daddr}"),
            Location::Byte(offset) => write!(f, " at byte {offset}"),
            Location::Inode(ino) => write!(f, " of inode {ino}"),
            Location::FileBlock { ino, lbn } => write!(f, " in block {lbn} of inode {ino}"),
            Location::Segment(seg) => write!(f, " in segment {seg}"),
            Location::Unknown => Ok(()),
        }
    }
}

/// Shorthand for an errno error: `errno(libc::ENOENT, "no such entry")`.
pub fn errno(code: i32, why: &'static str) -> Error {
    Error::Errno(code, why)
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Errno(code, why) => {
                write!(f, "{why} ({})", io::Error::from_raw_os_error(*code))
            }
            Error::Corrupt { what, at, why } => write!(f, "corrupt {what}{at}: {why}"),
            Error::Io(e) => write!(f, "device error: {e}"),
            Error::Foreign(why) => write!(f, "{why}"),
        }
    }
}

impl std::error::Error for Error {}

/// A layout bounds its devices so that every address fits a block pointer;
/// one that does not comes from a damaged structure.
impl From<crate::format::PointerOverflow> for Error {
    fn from(e: crate::format::PointerOverflow) -> Error {
        Error::corrupt("block pointer", e.0, e.to_string())
    }
}

impl From<io::Error> for Error {
    fn from(e: io::Error) -> Error {
        Error::Io(e)
    }
}
