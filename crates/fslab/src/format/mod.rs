//! Pure vocabulary shared by every layer above `disk`: inode numbers, signed
//! logical block numbers, disk addresses, the little-endian codec with CRC32C,
//! and the on-disk inode and directory entry (`docs/FORMAT.md` gives every
//! byte). Nothing here does I/O.

pub mod blockno;
pub mod codec;
pub mod daddr;
pub mod dirent;
pub mod foreign;
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

/// A byte count for people: "64 MiB", "1.5 GiB", "4096 bytes". Here, below
/// every layer, so that the library's refusals and the command line's
/// reports name sizes alike.
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} bytes");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if value.fract() == 0.0 {
        format!("{value:.0} {}", UNITS[unit])
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::human_bytes;

    #[test]
    fn human_sizes() {
        assert_eq!(human_bytes(4096), "4 KiB");
        assert_eq!(human_bytes(64 << 20), "64 MiB");
        assert_eq!(human_bytes(1536 << 20), "1.5 GiB");
        assert_eq!(human_bytes(100), "100 bytes");
    }
}
