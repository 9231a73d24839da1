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
