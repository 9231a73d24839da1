//! Phases 5 and 6: the segment usage table against the live data counted in
//! phase 3 (block size per live block, 256 bytes per live inode and for the
//! ifile's inode), its flags, the cleaner info totals; then the free-inode
//! list (every free inode on it once, no cycle, nothing allocated on it).
//!
//! A count too high only wastes space until the cleaner looks; a count too
//! low is dangerous (a segment that looks empty is reclaimed and its live
//! blocks overwritten), so both are errors.

use crate::image::Checker;
use crate::{Fix, Kind};
use fslab::format::IFILE_INO;
use fslab::lfs::layout::{SEGUSE_ACTIVE, SEGUSE_CLEAN, SEGUSE_DIRTY, SEGUSE_SUPERBLOCK};

/// Free inodes missing from the list reported one by one before a total.
const MAX_LISTED: u64 = 10;

impl Checker<'_> {
    /// Phase 5 (see the module comment).
    pub(crate) fn check_usage(&mut self) {
        let c = self.sb.checkpoint;
        let (mut clean, mut dirty) = (0u64, 0u64);
        let capacity = self.sb.segment_size as u64;
        // An inode or indirect block that cannot be read may hold blocks
        // the count above did not see: no count is lowered then (a segment
        // made to look empty would be reused, and that file's blocks
        // overwritten).
        let blind = self.unread_trees || self.inodes.values().any(|i| !i.readable);
        let lost = std::mem::take(&mut self.lost_ifile);
        if !lost.is_empty() {
            self.rebuild_usage_blocks(&lost, blind);
        }
        for seg in 0..self.sb.nsegments {
            let Some(u) = self.seguse.get(seg as usize).copied().flatten() else { continue };
            let live = self.live.get(seg as usize).copied().unwrap_or(0);
            let is_clean = u.flags & SEGUSE_CLEAN != 0;
            let is_dirty = u.flags & SEGUSE_DIRTY != 0;
            clean += u64::from(is_clean);
            dirty += u64::from(is_dirty);
            if u.live_bytes as u64 != live {
                let lowers = (u.live_bytes as u64) > live;
                let fix = (live <= capacity && !is_clean && !(blind && lowers))
                    .then_some(Fix::SetLiveBytes { segment: seg, bytes: live as u32 });
                let message = |how: &str| {
                    format!(
                        "segment {seg}: the table says {} live bytes, the checkpoint holds {live} ({how})",
                        u.live_bytes
                    )
                };
                if (u.live_bytes as u64) < live {
                    // A segment counted empty is reused without cleaning.
                    self.damage(Kind::SegmentUsage, None, message("too low: live blocks at risk"), fix);
                } else {
                    // Too high only delays cleaning the segment.
                    let how =
                        if blind { "too high, or held by an inode that cannot be read" } else { "too high" };
                    self.leak(Kind::SegmentUsage, None, message(how), fix);
                }
            }
            let mut flag_problems: Vec<String> = Vec::new();
            if is_clean && live > 0 {
                flag_problems.push(format!("marked clean but holds {live} live bytes"));
            }
            if is_clean == is_dirty {
                flag_problems
                    .push(format!("flags {:#x}: exactly one of clean and dirty must be set", u.flags));
            }
            if (u.flags & SEGUSE_SUPERBLOCK != 0) != self.superblock_segment(seg) {
                flag_problems.push("superblock flag disagrees with the superblock's list of copies".into());
            }
            let cold = c.cold.map(|h| h.segment);
            let is_head = seg == c.log_segment || Some(seg) == cold;
            if (u.flags & SEGUSE_ACTIVE != 0) != is_head {
                flag_problems
                    .push("active flag set on a segment other than a log head (or missing there)".into());
            }
            if is_head && is_clean {
                flag_problems.push("a log head's segment is marked clean".into());
            }
            let is_next = (seg == c.next_segment && seg != c.log_segment)
                || c.cold.is_some_and(|h| seg == h.next_segment && seg != h.segment);
            if is_next && !is_clean {
                flag_problems.push("a segment a log head moves to next is not clean".into());
            }
            if let Some(found) = self.seg_counts.get(&seg).copied() {
                if !is_clean && (found.nsums != u.nsums || found.ninos != u.ninos) {
                    let fix = Fix::SetSummaryCounts { segment: seg, nsums: found.nsums, ninos: found.ninos };
                    self.damage(
                        Kind::SegmentUsage,
                        None,
                        format!(
                            "segment {seg}: table counts {} summaries and {} inode blocks, the log holds {} and {}",
                            u.nsums, u.ninos, found.nsums, found.ninos
                        ),
                        Some(fix),
                    );
                }
            }
            for why in flag_problems {
                self.damage(Kind::SegmentUsage, None, format!("segment {seg}: {why}"), None);
            }
        }
        if let Some(info) = self.cleaner {
            if self.seguse.iter().all(Option::is_some)
                && (info.clean_segments != clean || info.dirty_segments != dirty)
            {
                self.damage(
                    Kind::SegmentUsage,
                    None,
                    format!(
                        "cleaner info counts {} clean and {} dirty segments, the table {clean} and {dirty}",
                        info.clean_segments, info.dirty_segments
                    ),
                    None,
                );
            }
        }
    }

    /// Phase 6 (see the module comment).
    pub(crate) fn check_free_list(&mut self) {
        let Some(info) = self.cleaner else { return };
        let n = self.imap.len() as u64;
        let mut on_list = vec![false; n as usize];
        let mut at = info.free_head;
        let mut whole = true;
        while at != 0 {
            if at <= IFILE_INO || at >= n {
                self.damage(
                    Kind::FreeList,
                    None,
                    format!("free-inode list names impossible inode {at}"),
                    Some(Fix::RebuildFreeList),
                );
                whole = false;
                break;
            }
            if on_list[at as usize] {
                self.damage(
                    Kind::FreeList,
                    None,
                    format!("free-inode list has a cycle at inode {at}"),
                    Some(Fix::RebuildFreeList),
                );
                whole = false;
                break;
            }
            let Some(entry) = self.imap[at as usize] else {
                whole = false;
                break;
            };
            if entry.daddr.is_some() {
                self.damage(
                    Kind::FreeList,
                    Some(at),
                    format!("allocated inode {at} is on the free-inode list"),
                    Some(Fix::RebuildFreeList),
                );
                whole = false;
                break;
            }
            on_list[at as usize] = true;
            at = entry.next_free as u64;
        }
        if !whole {
            return;
        }
        let mut missing = 0u64;
        for ino in IFILE_INO + 1..n {
            if self.imap[ino as usize].is_some_and(|e| e.daddr.is_none()) && !on_list[ino as usize] {
                missing += 1;
                if missing <= MAX_LISTED {
                    self.damage(
                        Kind::FreeList,
                        Some(ino),
                        format!("free inode {ino} is not on the free-inode list"),
                        Some(Fix::RebuildFreeList),
                    );
                }
            }
        }
        if missing > MAX_LISTED {
            let more = missing - MAX_LISTED;
            self.damage(
                Kind::FreeList,
                None,
                format!("{more} more free inodes are not on the free-inode list"),
                Some(Fix::RebuildFreeList),
            );
        }
    }
}
