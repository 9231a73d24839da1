//! Translations at the kernel boundary: inode numbers, attributes, times and
//! file types. Pure functions; no file-system logic.

use fslab::format::inode::{kind, Inode};
use fslab::format::{Ino, TimeNs, ROOT_INO};
use fslab::{error::errno, Result};
use fuser::{FileAttr, FileType, INodeNo, TimeOrNow};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// FUSE's root inode number (fixed by the protocol).
const FUSE_ROOT: u64 = 1;

/// The fslab inode number for a kernel inode number.
///
/// FUSE calls the root 1, fslab calls it 2 (1 is the ifile): the two numbers
/// swap places and every other number passes through, so the map is its own
/// inverse and no two inodes ever share a kernel number.
pub fn from_fuse(ino: INodeNo) -> Ino {
    match ino.0 {
        FUSE_ROOT => ROOT_INO,
        n if n == ROOT_INO => FUSE_ROOT,
        n => n,
    }
}

/// The kernel inode number for an fslab inode number (see [`from_fuse`]).
pub fn to_fuse(ino: Ino) -> INodeNo {
    match ino {
        ROOT_INO => INodeNo(FUSE_ROOT),
        FUSE_ROOT => INodeNo(ROOT_INO),
        n => INodeNo(n),
    }
}

/// The FUSE file type for the type bits of a mode; EIO for bits that name
/// no type (a damaged inode must not reach the kernel as a regular file).
pub fn file_type(mode: u32) -> Result<FileType> {
    Ok(match mode & kind::MASK {
        kind::REG => FileType::RegularFile,
        kind::DIR => FileType::Directory,
        kind::LNK => FileType::Symlink,
        kind::CHR => FileType::CharDevice,
        kind::BLK => FileType::BlockDevice,
        kind::FIFO => FileType::NamedPipe,
        kind::SOCK => FileType::Socket,
        _ => return Err(errno(libc::EIO, "inode has an unknown file type")),
    })
}

/// A stored timestamp as the kernel's `SystemTime`.
pub fn system_time(ns: TimeNs) -> SystemTime {
    if ns >= 0 {
        UNIX_EPOCH + Duration::from_nanos(ns as u64)
    } else {
        UNIX_EPOCH - Duration::from_nanos(ns.unsigned_abs())
    }
}

/// A time the kernel sent, as fuser hands it over, as a stored timestamp
/// (saturating at the ends of the `i64` range, some 292 years either side
/// of 1970). The kernel's timespec before 1970 is whole seconds below zero
/// and nanoseconds above them (-1.5 s is `{-2, 500000000}`); fuser turns it
/// into the epoch minus 2 s minus 0.5 s, so those nanoseconds are added
/// back here, not taken away.
pub fn time_ns(time: SystemTime) -> TimeNs {
    match time.duration_since(UNIX_EPOCH) {
        Ok(after) => TimeNs::try_from(after.as_nanos()).unwrap_or(TimeNs::MAX),
        Err(before) => {
            let d = before.duration();
            let ns = -i128::from(d.as_secs()) * 1_000_000_000 + i128::from(d.subsec_nanos());
            TimeNs::try_from(ns).unwrap_or(TimeNs::MIN)
        }
    }
}

/// A `setattr` time: the current time or a given one.
pub fn time_set(time: TimeOrNow) -> fslab::ufs::TimeSet {
    match time {
        TimeOrNow::Now => fslab::ufs::TimeSet::Now,
        TimeOrNow::SpecificTime(t) => fslab::ufs::TimeSet::At(time_ns(t)),
    }
}

/// The attributes the kernel caches for `inode`; `block_size` is what
/// `stat` reports as `st_blksize`.
pub fn file_attr(inode: &Inode, block_size: u32) -> Result<FileAttr> {
    let a = &inode.attr;
    Ok(FileAttr {
        ino: to_fuse(inode.ino),
        size: a.size,
        blocks: inode.blocks,
        atime: system_time(a.atime),
        mtime: system_time(a.mtime),
        ctime: system_time(a.ctime),
        crtime: system_time(a.btime),
        kind: file_type(a.mode)?,
        perm: (a.mode & 0o7777) as u16,
        nlink: a.nlink,
        uid: a.uid,
        gid: a.gid,
        // The kernel's 32-bit device encoding, stored as `mknod` handed it over.
        rdev: a.rdev as u32,
        blksize: block_size,
        flags: a.flags,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_and_ifile_swap_and_the_rest_pass_through() {
        assert_eq!(from_fuse(INodeNo(1)), 2);
        assert_eq!(to_fuse(2), INodeNo(1));
        assert_eq!(from_fuse(INodeNo(2)), 1);
        assert_eq!(to_fuse(1), INodeNo(2));
        for n in [3u64, 4, 1000, u64::MAX] {
            assert_eq!(from_fuse(INodeNo(n)), n);
            assert_eq!(to_fuse(n), INodeNo(n));
        }
    }

    #[test]
    fn times_round_trip_on_both_sides_of_the_epoch() {
        for ns in [0i64, 1, 1_700_000_000_123_456_789] {
            assert_eq!(time_ns(system_time(ns)), ns);
        }
        for ns in [-1i64, -1_500_000_000, -86_400_000_000_001] {
            assert_eq!(system_time(ns), UNIX_EPOCH - Duration::from_nanos(ns.unsigned_abs()));
        }
    }

    /// What fuser makes of a kernel timespec `{secs, nsecs}` (its decoder
    /// takes the nanoseconds away below zero), read back as the time the
    /// kernel meant.
    #[test]
    fn times_before_1970_from_the_kernel_keep_their_nanoseconds() {
        let from_fuser = |secs: i64, nsecs: u32| {
            if secs >= 0 {
                UNIX_EPOCH + Duration::new(secs as u64, nsecs)
            } else {
                UNIX_EPOCH - Duration::new(secs.unsigned_abs(), nsecs)
            }
        };
        for (secs, nsecs) in [(-2i64, 500_000_000u32), (-1, 999_999_999), (-1, 0), (-86_401, 1), (5, 7)] {
            assert_eq!(
                time_ns(from_fuser(secs, nsecs)),
                secs * 1_000_000_000 + i64::from(nsecs),
                "{secs} s {nsecs} ns"
            );
        }
    }

    #[test]
    fn unknown_type_bits_are_an_io_error() {
        assert_eq!(file_type(kind::DIR | 0o755).ok(), Some(FileType::Directory));
        assert_eq!(file_type(0o755).err().map(|e| e.errno()), Some(libc::EIO));
    }
}
