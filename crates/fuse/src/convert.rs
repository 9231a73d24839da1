//! Translations at the kernel boundary: inode numbers, attributes, times and
//! file types. Pure functions; no file-system logic.

use crate::kernel::reply::{Attr, Time};
use crate::kernel::request::SetTime;
use fslab::format::inode::{kind, Inode};
use fslab::format::{Ino, TimeNs, ROOT_INO};
use fslab::{error::errno, Result};

/// FUSE's root node id (fixed by the protocol).
const FUSE_ROOT: u64 = 1;

const NS_PER_SEC: i64 = 1_000_000_000;

/// The fslab inode number for a kernel node id.
///
/// FUSE calls the root 1, fslab calls it 2 (1 is the ifile): the two numbers
/// swap places and every other number passes through, so the map is its own
/// inverse and no two inodes ever share a kernel number.
pub fn from_fuse(node: u64) -> Ino {
    match node {
        FUSE_ROOT => ROOT_INO,
        n if n == ROOT_INO => FUSE_ROOT,
        n => n,
    }
}

/// The kernel node id for an fslab inode number (see [`from_fuse`]).
pub fn to_fuse(ino: Ino) -> u64 {
    from_fuse(ino)
}

/// The type bits of a mode (`kind::*`, as `S_IFMT` has them); EIO for
/// bits that name no type (a damaged inode must not reach the kernel as
/// a regular file).
pub fn file_type(mode: u32) -> Result<u32> {
    match mode & kind::MASK {
        t @ (kind::REG | kind::DIR | kind::LNK | kind::CHR | kind::BLK | kind::FIFO | kind::SOCK) => Ok(t),
        _ => Err(errno(libc::EIO, "inode has an unknown file type")),
    }
}

/// A directory entry's type as `struct fuse_dirent` carries it (`DT_*`):
/// the type bits shifted down, as `IFTODT` does.
pub fn dirent_type(type_bits: u32) -> u32 {
    type_bits >> 12
}

/// A stored timestamp as the kernel's timespec: whole seconds (below zero
/// before 1970, as a two's-complement `u64`) and nanoseconds above them,
/// so -1.5 s is `{-2, 500000000}`.
pub fn kernel_time(ns: TimeNs) -> Time {
    (ns.div_euclid(NS_PER_SEC) as u64, ns.rem_euclid(NS_PER_SEC) as u32)
}

/// A kernel timespec as a stored timestamp, saturating at the ends of the
/// `i64` range (some 292 years either side of 1970).
pub fn time_ns((secs, nsecs): Time) -> TimeNs {
    let ns = i128::from(secs as i64) * i128::from(NS_PER_SEC) + i128::from(nsecs);
    TimeNs::try_from(ns).unwrap_or(if ns < 0 { TimeNs::MIN } else { TimeNs::MAX })
}

/// A `setattr` time: the current time or a given one.
pub fn time_set(time: SetTime) -> fslab::ufs::TimeSet {
    match time {
        SetTime::Now => fslab::ufs::TimeSet::Now,
        SetTime::At(secs, nsecs) => fslab::ufs::TimeSet::At(time_ns((secs, nsecs))),
    }
}

/// The attributes the kernel caches for `inode`; `block_size` is what
/// `stat` reports as `st_blksize`.
pub fn file_attr(inode: &Inode, block_size: u32) -> Result<Attr> {
    let a = &inode.attr;
    Ok(Attr {
        ino: to_fuse(inode.ino),
        size: a.size,
        blocks: inode.blocks,
        atime: kernel_time(a.atime),
        mtime: kernel_time(a.mtime),
        ctime: kernel_time(a.ctime),
        mode: file_type(a.mode)? | (a.mode & 0o7777),
        nlink: a.nlink,
        uid: a.uid,
        gid: a.gid,
        // The kernel's 32-bit device encoding, stored as `mknod` handed it over.
        rdev: a.rdev as u32,
        blksize: block_size,
        // `fuse_attr.flags` are the kernel's (FUSE_ATTR_SUBMOUNT, ...),
        // not the inode's BSD flags, which Linux has no call to read.
        flags: 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_and_ifile_swap_and_the_rest_pass_through() {
        assert_eq!(from_fuse(1), 2);
        assert_eq!(to_fuse(2), 1);
        assert_eq!(from_fuse(2), 1);
        assert_eq!(to_fuse(1), 2);
        for n in [3u64, 4, 1000, u64::MAX] {
            assert_eq!(from_fuse(n), n);
            assert_eq!(to_fuse(n), n);
        }
    }

    /// The kernel's timespec before 1970 is whole seconds below zero and
    /// nanoseconds above them: -1.5 s is `{-2, 500000000}`.
    #[test]
    fn times_round_trip_on_both_sides_of_the_epoch() {
        for (ns, secs, nsecs) in [
            (0i64, 0i64, 0u32),
            (1, 0, 1),
            (1_700_000_000_123_456_789, 1_700_000_000, 123_456_789),
            (-1, -1, 999_999_999),
            (-1_500_000_000, -2, 500_000_000),
            (-86_400_000_000_001, -86_401, 999_999_999),
        ] {
            assert_eq!(kernel_time(ns), (secs as u64, nsecs), "{ns} ns");
            assert_eq!(time_ns((secs as u64, nsecs)), ns, "{secs} s {nsecs} ns");
        }
        assert_eq!(time_ns((i64::MAX as u64, 0)), TimeNs::MAX);
        assert_eq!(time_ns((i64::MIN as u64, 0)), TimeNs::MIN);
    }

    #[test]
    fn unknown_type_bits_are_an_io_error() {
        assert_eq!(file_type(kind::DIR | 0o755).ok(), Some(kind::DIR));
        assert_eq!(dirent_type(kind::DIR), u32::from(libc::DT_DIR));
        assert_eq!(dirent_type(kind::LNK), u32::from(libc::DT_LNK));
        assert_eq!(file_type(0o755).err().map(|e| e.errno()), Some(libc::EIO));
    }
}
