//! Tests of the namespace against `MemStorage`, grouped by behaviour:
//! names and errnos, rename, directories (readdir, index), dirhash, file contents,
//! extended attributes, pins.

mod dirhash;
mod dirs;
mod files;
mod hints;
mod names;
mod rename;
mod xattrs;

use super::{Creds, FileSystem};
use crate::format::inode::{kind, Inode};
use crate::format::{Ino, ROOT_INO};
use crate::storage::MemStorage;
use crate::Result;

const ROOT: Ino = ROOT_INO;
const ME: Creds = Creds { uid: 1000, gid: 100 };

fn fs() -> FileSystem<MemStorage> {
    FileSystem::new(MemStorage::new(4096))
}

fn fs_with_block(block_size: u32) -> FileSystem<MemStorage> {
    FileSystem::new(MemStorage::new(block_size))
}

fn errno<T: std::fmt::Debug>(r: Result<T>) -> i32 {
    match r {
        Ok(v) => panic!("expected an error, got {v:?}"),
        Err(e) => e.errno(),
    }
}

fn file(fs: &mut FileSystem<MemStorage>, parent: Ino, name: &str) -> Inode {
    fs.mknod(parent, name.as_bytes(), kind::REG | 0o644, 0, ME).expect("create file")
}

fn dir(fs: &mut FileSystem<MemStorage>, parent: Ino, name: &str) -> Inode {
    fs.mkdir(parent, name.as_bytes(), 0o755, ME).expect("mkdir")
}

/// Every name in `dir` except `.` and `..`, sorted, read through readdir.
fn names(fs: &mut FileSystem<MemStorage>, dir: Ino) -> Vec<String> {
    let mut out: Vec<String> = fs
        .readdir(dir, 0, usize::MAX)
        .expect("readdir")
        .into_iter()
        .map(|e| String::from_utf8_lossy(&e.name).into_owned())
        .filter(|n| n != "." && n != "..")
        .collect();
    out.sort();
    out
}

fn nlink(fs: &mut FileSystem<MemStorage>, ino: Ino) -> u32 {
    fs.getattr(ino).expect("getattr").attr.nlink
}

/// The table of inodes the kernel holds shrinks once the kernel forgets
/// them: a mount that once had 100,000 files looked up does not keep their
/// slots for its lifetime.
#[test]
fn the_pins_table_shrinks_when_the_kernel_forgets() {
    let mut fs = fs();
    let pinned = |fs: &FileSystem<MemStorage>| {
        let part = fs.memory().into_iter().find(|p| p.what.starts_with("inodes in use"));
        part.map(|p| (p.entries, p.bytes)).unwrap_or_default()
    };
    for ino in 100..100_100 {
        fs.pin(ino);
    }
    let (entries, full) = pinned(&fs);
    assert_eq!(entries, 100_000);
    assert!(full >= 100_000 * 17, "{full} bytes for 100,000 pins");
    for ino in 100..100_090 {
        fs.unpin(ino, 1).expect("unpin");
    }
    let (entries, left) = pinned(&fs);
    assert_eq!(entries, 10);
    assert!(left < full / 100, "{left} bytes left of {full} for 10 pins");
}
