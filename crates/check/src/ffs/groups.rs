//! Phase 5, cylinder groups (1993 paper Table 2: update the bit maps):
//! each group as the inodes say it must be — an inode in use exactly where
//! phase 1 kept one, a fragment in use exactly where a pointer that stays
//! claims it, the directories counted — with the free counts, the free-run
//! counts (`frsum`), the cluster summary and the cluster bitmap following
//! from those bitmaps (`Model::rebuilt_group`), compared with the group on
//! disk; then the superblock's totals with the sum of the groups.
//!
//! A group that decodes has already passed its own checks (counts and
//! summaries agree with its bitmaps), so what can still be wrong is a
//! bitmap or the directory count; a group that does not decode is rebuilt.
//! A fragment in use but marked free is the dangerous direction (it would
//! be handed out again); one marked in use but free only wastes space until
//! fsck (fsck_ffs's "BLK(S) MISSING IN BIT MAPS"). The second is a leak,
//! and so are stale totals and directory counts; the first is damage where
//! the file system is marked clean (see `compare_group`).

use super::Checker;
use crate::{Fix, Kind, Severity};
use fslab::ffs::bitmap::Bitmap;
use fslab::ffs::cg::CylinderGroup;
use fslab::ffs::Totals;

/// Bits that differ between two bitmaps: (set in `want` only, set in
/// `have` only, the first set in `want` only).
fn differences(want: &Bitmap, have: &Bitmap) -> (u32, u32, Option<u32>) {
    let (mut missing, mut extra, mut first) = (0, 0, None);
    for i in 0..want.len().min(have.len()) {
        match (want.get(i), have.get(i)) {
            (true, false) => {
                missing += 1;
                first.get_or_insert(i);
            }
            (false, true) => extra += 1,
            _ => {}
        }
    }
    (missing, extra, first)
}

impl Checker<'_> {
    /// Phase 5 (see the module comment).
    pub(crate) fn check_groups(&mut self) {
        let ncg = self.geo.ncg;
        let mut totals = Totals::default();
        let mut complete = true;
        for g in 0..ncg {
            self.progress.tick("phase 5 (cylinder groups)", g as u64, ncg as u64);
            let rebuilt = match self.model.rebuilt_group(g) {
                Ok(cg) => cg,
                Err(why) => {
                    complete = false;
                    self.damage(
                        Kind::CylinderGroup,
                        None,
                        format!("cylinder group {g} cannot be rebuilt: {why}"),
                        None,
                    );
                    continue;
                }
            };
            totals.add(&rebuilt.counts(), 1);
            match self.model.groups[g as usize].on_disk.clone() {
                // A group is rebuilt from the inodes whatever it held, and a
                // mount refuses an image not unmounted cleanly until it is:
                // there, an area a crash tore (one checksum covers it) loses
                // nothing. On a clean image it is damage.
                Err(why) if !self.report.clean_unmount => self.leak(
                    Kind::CylinderGroup,
                    None,
                    format!("cylinder group {g}: {why} (a write cut short); repair rebuilds it"),
                    Some(Fix::RebuildGroups),
                ),
                Err(why) => self.damage(
                    Kind::CylinderGroup,
                    None,
                    format!("cylinder group {g}: {why}; repair rebuilds it"),
                    Some(Fix::RebuildGroups),
                ),
                Ok(on_disk) => self.compare_group(g, &on_disk, &rebuilt),
            }
        }
        self.model.totals = totals;
        let sb = &self.model.sb;
        if complete && self.report.clean_unmount && sb.totals != totals {
            let t = sb.totals;
            // The groups decide what is allocated; the totals only
            // summarise them.
            self.leak(
                Kind::Superblock,
                None,
                format!(
                    "the superblock counts {} free blocks, {} free fragments, {} free inodes and {} directories, \
                     the groups {}, {}, {} and {}; repair rewrites the totals",
                    t.free_blocks,
                    t.free_frags,
                    t.free_inodes,
                    t.directories,
                    totals.free_blocks,
                    totals.free_frags,
                    totals.free_inodes,
                    totals.directories
                ),
                Some(Fix::RebuildGroups),
            );
        }
    }

    /// Reports how group `g` on disk differs from the group as rebuilt:
    /// what is marked in use but free, and a wrong count of directories,
    /// are leaks; what is in use but marked free is damage on a file
    /// system marked clean (a mount would hand it out again), and a leak
    /// on one that was not unmounted cleanly, whose groups a mount refuses
    /// to allocate from until fsck rebuilds them — fslab's FFS writes its
    /// groups at sync, so a crash leaves exactly this.
    fn compare_group(&mut self, g: u32, on_disk: &CylinderGroup, rebuilt: &CylinderGroup) {
        let in_use_marked_free = if self.report.clean_unmount { Severity::Damage } else { Severity::Leak };
        let mut found: Vec<(Severity, String)> = Vec::new();
        let (used_free, free_used, first) = differences(rebuilt.inode_map(), on_disk.inode_map());
        if used_free > 0 {
            found.push((
                in_use_marked_free,
                format!(
                    "{} in use {} marked free (the first is slot {})",
                    crate::count(used_free as u64, "inode", "inodes"),
                    if used_free == 1 { "is" } else { "are" },
                    first.unwrap_or(0)
                ),
            ));
        }
        if free_used > 0 {
            let what = crate::count(free_used as u64, "free inode", "free inodes");
            found.push((
                Severity::Leak,
                format!("{what} {} marked in use", if free_used == 1 { "is" } else { "are" }),
            ));
        }
        // The fragment bitmap's bits are set where a fragment is free.
        let (free_used, used_free, _) = differences(rebuilt.frag_map(), on_disk.frag_map());
        if used_free > 0 {
            let (_, _, first) = differences(on_disk.frag_map(), rebuilt.frag_map());
            let at = self.geo.group_base(g) + first.unwrap_or(0) as u64;
            let what = crate::count(used_free as u64, "fragment", "fragments");
            let verb = if used_free == 1 { "is" } else { "are" };
            found.push((in_use_marked_free, format!("{what} in use {verb} marked free (the first at {at})")));
        }
        if free_used > 0 {
            let what = crate::count(free_used as u64, "free fragment", "free fragments");
            found.push((
                Severity::Leak,
                format!("{what} {} marked in use", if free_used == 1 { "is" } else { "are" }),
            ));
        }
        let (dirs, want) = (on_disk.counts().directories, rebuilt.counts().directories);
        if dirs != want {
            let counted = crate::count(u64::from(dirs), "directory", "directories");
            found.push((Severity::Leak, format!("it counts {counted}, the inodes {want}")));
        }
        for (severity, what) in found {
            let message = format!("cylinder group {g}: {what}; repair rebuilds it");
            match severity {
                Severity::Leak => self.leak(Kind::CylinderGroup, None, message, Some(Fix::RebuildGroups)),
                Severity::Damage => self.damage(Kind::CylinderGroup, None, message, Some(Fix::RebuildGroups)),
            }
        }
    }
}
