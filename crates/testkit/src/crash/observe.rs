//! What a mounted crash image shows: [`walk`] reads the tree from the root,
//! checking it is consistent as it goes (check 2 of the crate map), into an
//! [`Observed`] namespace with each file's contents ([`Seen`]).

use fslab::format::inode::kind;
use fslab::format::{Ino, ROOT_INO};
use fslab::storage::StorageManager;
use fslab::ufs::FileSystem;
use std::collections::{BTreeMap, BTreeSet};

/// One observed node: what the walk found at an inode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    /// Its type (`format::inode::kind`).
    pub kind: u32,
    /// Its link count.
    pub nlink: u32,
    /// Its size.
    pub size: u64,
    /// File contents or symlink target.
    pub data: Vec<u8>,
    /// Names found for it (directories: 1 plus subdirectories' `..` counted
    /// separately).
    pub names: u32,
    /// Subdirectories found in it.
    pub subdirs: u32,
}

/// The tree as mounted after a crash.
#[derive(Debug, Default)]
pub struct Observed {
    /// Path → (type, inode number).
    pub namespace: BTreeMap<String, (u32, Ino)>,
    /// What each inode found holds.
    pub inodes: BTreeMap<Ino, Seen>,
}

fn kind_name(k: u32) -> &'static str {
    match k {
        kind::REG => "file",
        kind::DIR => "dir",
        kind::LNK => "symlink",
        _ => "other",
    }
}

pub(super) fn namespace_text(ns: &BTreeMap<String, (u32, Ino)>) -> String {
    let items: Vec<String> = ns.iter().map(|(p, (k, ino))| format!("{p}={}#{ino}", kind_name(*k))).collect();
    format!("{{{}}}", items.join(" "))
}

/// Walks the tree from the root, checking structure (item 2 of the module
/// doc) as it goes.
/// Files past this size are read in pieces and not kept: a damaged image
/// may hold a sparse file of terabytes, which is a valid file, not one to
/// hold in memory.
const WHOLE_READ_LIMIT: u64 = 16 << 20;

/// A regular file's contents (empty past [`WHOLE_READ_LIMIT`]: then 65
/// pieces of 64 KiB spread over it are read, so every part must still be
/// readable) and the length reads found, for the caller to compare with
/// its size.
fn read_whole<S: StorageManager>(
    fs: &mut FileSystem<S>,
    ino: Ino,
    size: u64,
) -> fslab::Result<(Vec<u8>, u64)> {
    if size <= WHOLE_READ_LIMIT {
        let data = fs.read(ino, 0, size as usize + 1)?;
        let len = data.len() as u64;
        return Ok((data, len));
    }
    const PIECE: u64 = 64 << 10;
    for i in 0..=64 {
        fs.read(ino, (size - PIECE) / 64 * i, PIECE as usize)?;
    }
    let past = fs.read(ino, size, 1)?;
    Ok((Vec::new(), size + past.len() as u64))
}

pub fn walk<S: StorageManager>(fs: &mut FileSystem<S>) -> Result<Observed, String> {
    let mut seen = Observed::default();
    let root = fs.getattr(ROOT_INO).map_err(|e| format!("root inode unreadable: {e}"))?;
    if !root.attr.is_dir() {
        return Err(format!("root inode has mode {:o}", root.attr.mode));
    }
    seen.inodes.insert(
        ROOT_INO,
        Seen {
            kind: kind::DIR,
            nlink: root.attr.nlink,
            size: root.attr.size,
            data: vec![],
            names: 1,
            subdirs: 0,
        },
    );
    let mut dirs_seen = BTreeSet::from([ROOT_INO]);
    let mut stack = vec![(String::new(), ROOT_INO, ROOT_INO)];
    while let Some((path, dir, parent)) = stack.pop() {
        let mut offset = 0;
        let mut entries = Vec::new();
        loop {
            let page =
                fs.readdir(dir, offset, 16).map_err(|e| format!("readdir of /{path} (#{dir}): {e}"))?;
            let Some(last) = page.last() else { break };
            offset = last.next_offset;
            entries.extend(page);
            if entries.len() > 10_000 {
                return Err(format!("directory /{path} does not end"));
            }
        }
        let mut dots = (false, false);
        for entry in entries {
            let name = String::from_utf8_lossy(&entry.name).into_owned();
            if name == "." || name == ".." {
                let want = if name == "." { dir } else { parent };
                if entry.ino != want {
                    return Err(format!("/{path}: `{name}` names #{} instead of #{want}", entry.ino));
                }
                if name == "." {
                    dots.0 = true;
                } else {
                    dots.1 = true;
                }
                continue;
            }
            let child = if path.is_empty() { name.clone() } else { format!("{path}/{name}") };
            let inode = fs.getattr(entry.ino).map_err(|e| {
                format!(
                    "entry /{child} names inode #{} that cannot be read: {e} (entry without inode)",
                    entry.ino
                )
            })?;
            let k = inode.attr.mode & kind::MASK;
            if k != entry.kind {
                return Err(format!(
                    "entry /{child} says {} but inode #{} is a {}",
                    kind_name(entry.kind),
                    entry.ino,
                    kind_name(k)
                ));
            }
            if seen.namespace.insert(child.clone(), (k, entry.ino)).is_some() {
                return Err(format!("name /{child} listed twice"));
            }
            if let Some(s) = seen.inodes.get_mut(&dir) {
                s.subdirs += u32::from(k == kind::DIR);
            }
            if let Some(s) = seen.inodes.get_mut(&entry.ino) {
                if k == kind::DIR {
                    return Err(format!("directory #{} reached twice (second time as /{child})", entry.ino));
                }
                s.names += 1;
                continue;
            }
            let (data, read) = match k {
                kind::REG => read_whole(fs, entry.ino, inode.attr.size)
                    .map_err(|e| format!("read /{child} (#{}): {e}", entry.ino))?,
                kind::LNK => {
                    let target = fs.readlink(entry.ino).map_err(|e| format!("readlink /{child}: {e}"))?;
                    let len = target.len() as u64;
                    (target, len)
                }
                _ => (Vec::new(), 0),
            };
            if k == kind::REG && read != inode.attr.size {
                return Err(format!("/{child}: size {} but read returned {read} bytes", inode.attr.size));
            }
            seen.inodes.insert(
                entry.ino,
                Seen { kind: k, nlink: inode.attr.nlink, size: inode.attr.size, data, names: 1, subdirs: 0 },
            );
            if k == kind::DIR {
                if !dirs_seen.insert(entry.ino) {
                    return Err(format!("directory #{} reached twice", entry.ino));
                }
                stack.push((child, entry.ino, dir));
            }
        }
        if dots != (true, true) {
            return Err(format!("/{path} (#{dir}) lacks `.` or `..`"));
        }
    }
    for (ino, s) in &seen.inodes {
        let want = if s.kind == kind::DIR { 2 + s.subdirs } else { s.names };
        if s.nlink != want {
            return Err(format!(
                "inode #{ino} ({}) has link count {} but {want} links were found",
                kind_name(s.kind),
                s.nlink
            ));
        }
    }
    Ok(seen)
}
