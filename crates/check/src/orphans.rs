//! The orphan list, both layouts (`docs/FORMAT.md`, "Orphan list"): from
//! the head (LFS checkpoint, FFS superblock) through each inode's
//! `next_orphan`, every inode must be allocated, readable, without links,
//! and on the list once. A sound list's inodes are *pending reclaim* — the
//! next mount frees them — and not damage; a damaged list is damage, which
//! repair fixes by emptying the list once the inodes it named are freed as
//! any unreferenced inode is. On an image soft updates kept, a list that
//! stops early is only a leak: soft updates write the list lazily, in no
//! order, since the mount's walk frees only inodes whose count on the disk
//! is 0, which soft updates never leave on an inode a durable entry names.

use crate::tree::InodeInfo;
use crate::{Fix, Kind, Report, Severity};
use fslab::error::errno;
use fslab::format::Ino;
use std::collections::{HashMap, HashSet};

/// Walks the list from `head` over the inode phase's findings; returns the
/// inodes a sound list names (none if it is broken, which goes to
/// `report` as `broken`: damage, or a leak where soft updates kept the
/// image).
pub(crate) fn check_list(
    report: &mut Report,
    head: Ino,
    inodes: &HashMap<Ino, InodeInfo>,
    broken: Severity,
) -> HashSet<Ino> {
    let (chain, damage) = fslab::storage::orphans::walk(head, |ino| match inodes.get(&ino) {
        Some(info) if info.readable => Ok((info.nlink, info.next_orphan)),
        Some(_) => Err(errno(libc::EIO, "the inode is unreadable")),
        None => Err(errno(libc::ENOENT, "the inode is not allocated")),
    });
    match damage {
        None => chain.into_iter().collect(),
        Some(why) => {
            report.push(
                broken,
                Kind::OrphanList,
                None,
                format!("{why}; repair frees the unreferenced inodes and empties the list"),
                Some(Fix::ClearOrphanList),
            );
            HashSet::new()
        }
    }
}
