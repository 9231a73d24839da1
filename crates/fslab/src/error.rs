//! The one error type of the library. The errno is chosen where the error
//! arises; the FUSE adapter only passes it on.

use std::fmt;
use std::io;

/// Every failure of a file-system operation.
#[derive(Debug)]
pub enum Error {
    /// A POSIX error the caller should see as this errno (ENOENT, ENOSPC, ...).
    Errno(i32, &'static str),
    /// An on-disk structure failed validation: what it is and where it lives.
    Corrupt { what: &'static str, addr: u64, why: String },
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

    /// A corrupt-structure error.
    /// `addr` is where the structure lives (a disk address, or another
    /// number that locates it, such as an inode number).
    pub fn corrupt(what: &'static str, addr: impl Into<u64>, why: impl Into<String>) -> Error {
        Error::Corrupt { what, addr: addr.into(), why: why.into() }
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
            Error::Corrupt { what, addr, why } => write!(f, "corrupt {what} at block {addr}: {why}"),
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
