//! The background leak scan's state between slices, and what it reports
//! (`fslab stat`). The scan itself is `leaks`'s; its state is apart from it
//! so that the file system's state can name it without naming the code
//! that works on it.

use super::bitmap::Bitmap;
use crate::format::Ino;
use std::collections::{HashMap, HashSet};

/// Where the scan stands.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum LeakScanState {
    /// No scan on this mount: the image was unmounted cleanly (or soft
    /// updates did not keep it, and fsck saw it first).
    #[default]
    NotNeeded,
    /// Inodes below `next` of `of` are read.
    Running {
        /// The next inode number to read.
        next: Ino,
        /// Inode numbers in the file system.
        of: Ino,
    },
    /// Everything read and what was leaked freed.
    Done,
    /// Stopped before it freed anything, for this reason (fsck can finish
    /// the job).
    Stopped(String),
}

/// What the background scan found and freed on this mount (`fslab stat`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LeakReport {
    /// Where the scan stands.
    pub state: LeakScanState,
    /// Fragments in use that nothing pointed at, returned to their groups.
    pub frags_freed: u64,
    /// Inodes in use that no entry named, freed with their blocks.
    pub inodes_freed: u64,
    /// Link counts higher than the names, lowered.
    pub links_lowered: u64,
    /// Counts of blocks held (`st_blocks`) higher or lower than the
    /// blocks the inode points at, set right.
    pub block_counts_set: u64,
    /// Directories left for fsck: nothing names them but they hold
    /// entries (fsck reconnects them to `/lost+found`), or a rename the
    /// crash cut off left them two names, or a name their `..` does not
    /// agree with (soft updates may: 2000 paper §6; fsck keeps the name
    /// `..` agrees with, or sets `..`). The link counts of their parents
    /// are left as they are, for fsck to judge. Until fsck has run,
    /// unmount leaves the image marked as not clean.
    pub left_for_fsck: u64,
}

impl LeakReport {
    /// Whether the image still holds leaks after this mount: the scan did
    /// not end, or left something for fsck.
    pub fn leaks_remain(&self) -> bool {
        matches!(self.state, LeakScanState::Running { .. } | LeakScanState::Stopped(_))
            || self.left_for_fsck > 0
    }
}

/// What the scan learned of one inode in use.
#[derive(Debug, Clone, Copy)]
pub(super) struct Seen {
    pub(super) nlink: u32,
    /// The count of blocks held as the inode recorded it, and as its
    /// pointers give it (512-byte units).
    pub(super) blocks: u64,
    pub(super) holds: u64,
    /// For a directory: its `..`, and whether it holds more than `.` and
    /// `..`.
    pub(super) dir: Option<(Ino, bool)>,
}

/// The scan's memory between slices (module comment).
#[derive(Debug)]
pub(super) struct LeakScan {
    /// Per group, the unclaimed fragments.
    pub(super) unclaimed: Vec<Bitmap>,
    /// The next inode number to read.
    pub(super) next: Ino,
    pub(super) seen: HashMap<Ino, Seen>,
    /// The directories whose entries (other than `.` and `..`) name each
    /// inode, once per entry.
    pub(super) names: HashMap<Ino, Vec<Ino>>,
    /// Inodes in use whose slots hold no inode (`Ffs::slot_is_blank`).
    pub(super) blank: Vec<Ino>,
    pub(super) touched: HashSet<Ino>,
}

impl LeakScan {
    pub(super) fn claim(&mut self, geo: &super::geometry::Geometry, start: u64, count: u64) {
        for f in start..start.saturating_add(count) {
            if let Some(map) = self.unclaimed.get_mut(geo.group_of(f) as usize) {
                let within = geo.within_group(f);
                if within < map.len() {
                    map.clear(within);
                }
            }
        }
    }
}
