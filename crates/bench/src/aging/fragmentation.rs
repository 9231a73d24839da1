//! What aging does to the free space and to the cleaner, a simulated day
//! at a time: the figures the day lines and the results file carry
//! besides the layout score.
//!
//! * [`Fragmentation`] — an FFS's free space as runs of whole free blocks:
//!   the cluster summary summed over the groups, the share of free space
//!   that can still take a whole cluster, and the spread of each group's
//!   longest run (`integrity_and_aging.md` §3.4 item 6; the 1997 paper
//!   reports only the layout score, §3.3).
//! * [`GroupRuns`] — one group's figures, listed for the last day.
//! * [`CleanerDay`] — an LFS cleaner's work over one day and its write
//!   cost (the 1992 paper's §5.1 definition, as `fslab stat` reports it).
//!   No paper measured a cleaner under an aging workload.
//!
//! Each is what the results file holds, field for field (`docs/FORMAT.md`,
//! "Aging results"), so a file reads back into the same values.

use crate::target::FreeSpaceMap;
use fslab::ffs::GroupFreeSpace;
use fslab::lfs::clean::CleanerCounters;
use serde::{Deserialize, Serialize};

/// `x` to four decimal places, as every ratio in the results file.
pub fn four_places(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
}

/// The least, middle and greatest of the groups' longest free runs, in
/// blocks. The middle of an even count is the lower of the two middle
/// values, so that it is always some group's figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunSpread {
    /// The shortest of the groups' longest runs.
    pub min: u32,
    /// The median.
    pub median: u32,
    /// The longest run anywhere.
    pub max: u32,
}

impl RunSpread {
    /// The spread of `runs`, or `None` for no groups.
    pub fn of(runs: &[u32]) -> Option<RunSpread> {
        let mut sorted = runs.to_vec();
        sorted.sort_unstable();
        let (&min, &max) = (sorted.first()?, sorted.last()?);
        Some(RunSpread { min, median: sorted[(sorted.len() - 1) / 2], max })
    }
}

/// An FFS's free space at one moment, as runs of whole free blocks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fragmentation {
    /// The longest run the cluster summary tells apart (blocks).
    pub maxcontig: u32,
    /// Free fragments, whole free blocks' included.
    pub free_frags: u64,
    /// Free fragments in runs of maxcontig whole blocks or more.
    pub full_cluster_frags: u64,
    /// `full_cluster_frags` over `free_frags`, to four places; `None` with
    /// no free space. A writer of whole clusters finds this share of the
    /// free space usable as such.
    pub full_cluster_share: Option<f64>,
    /// The cluster summary summed over the groups: element `n - 1` counts
    /// maximal runs of exactly `n` free blocks, the last runs of maxcontig
    /// or more.
    pub cluster_sum: Vec<u64>,
    /// The spread of the groups' longest runs; `None` with no groups.
    pub longest_run: Option<RunSpread>,
}

impl Fragmentation {
    /// The figures of `map`.
    pub fn of(map: &FreeSpaceMap) -> Fragmentation {
        let fpb = u64::from(map.frags_per_block);
        let maxcontig = map.groups.iter().map(|g| g.cluster_sum.len()).max().unwrap_or(0);
        let mut cluster_sum = vec![0u64; maxcontig];
        for g in &map.groups {
            for (sum, &n) in cluster_sum.iter_mut().zip(&g.cluster_sum) {
                *sum += u64::from(n);
            }
        }
        let free_frags: u64 =
            map.groups.iter().map(|g| u64::from(g.free_blocks) * fpb + u64::from(g.free_frags)).sum();
        let full_cluster_frags: u64 =
            map.groups.iter().map(|g| u64::from(g.blocks_in_full_clusters) * fpb).sum();
        let runs: Vec<u32> = map.groups.iter().map(|g| g.longest_run).collect();
        Fragmentation {
            maxcontig: maxcontig as u32,
            free_frags,
            full_cluster_frags,
            full_cluster_share: (free_frags > 0)
                .then(|| four_places(full_cluster_frags as f64 / free_frags as f64)),
            cluster_sum,
            longest_run: RunSpread::of(&runs),
        }
    }
}

/// One group's free space, as the results file lists it for the last day.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupRuns {
    /// The group.
    pub group: u32,
    /// Whole free blocks.
    pub free_blocks: u32,
    /// Free fragments in blocks that are not wholly free.
    pub free_frags: u32,
    /// The longest run of free blocks.
    pub longest_run: u32,
    /// Free blocks in runs of maxcontig or more.
    pub blocks_in_full_clusters: u32,
    /// The group's cluster summary (element `n - 1`: runs of `n` blocks).
    pub cluster_sum: Vec<u32>,
}

impl From<&GroupFreeSpace> for GroupRuns {
    fn from(g: &GroupFreeSpace) -> GroupRuns {
        GroupRuns {
            group: g.group,
            free_blocks: g.free_blocks,
            free_frags: g.free_frags,
            longest_run: g.longest_run,
            blocks_in_full_clusters: g.blocks_in_full_clusters,
            cluster_sum: g.cluster_sum.clone(),
        }
    }
}

/// An LFS cleaner's work over one simulated day.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CleanerDay {
    /// Segments cleaned.
    pub segments_cleaned: u64,
    /// Live blocks and inodes copied to the head of the log.
    pub blocks_moved: u64,
    /// Bytes of log written for users (data and metadata).
    pub user_bytes_written: u64,
    /// Of those, files' contents: the new data.
    pub user_data_bytes_written: u64,
    /// Bytes the cleaner read.
    pub cleaner_bytes_read: u64,
    /// Bytes of log the cleaner wrote.
    pub cleaner_bytes_written: u64,
    /// (user bytes written + cleaner reads + cleaner writes) over the new
    /// data, to four places ([`CleanerCounters::write_cost`]); `None` on a
    /// day that wrote no file data.
    pub write_cost: Option<f64>,
}

impl From<CleanerCounters> for CleanerDay {
    fn from(c: CleanerCounters) -> CleanerDay {
        CleanerDay {
            segments_cleaned: c.segments_cleaned,
            blocks_moved: c.blocks_moved,
            user_bytes_written: c.user_bytes_written,
            user_data_bytes_written: c.user_data_bytes_written,
            cleaner_bytes_read: c.cleaner_bytes_read,
            cleaner_bytes_written: c.cleaner_bytes_written,
            write_cost: c.write_cost().map(four_places),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(
        group: u32,
        free_blocks: u32,
        free_frags: u32,
        sum: &[u32],
        longest: u32,
        full: u32,
    ) -> GroupFreeSpace {
        GroupFreeSpace {
            group,
            free_blocks,
            free_frags,
            cluster_sum: sum.to_vec(),
            longest_run: longest,
            blocks_in_full_clusters: full,
        }
    }

    /// Two groups of maxcontig 4 and 8 fragments a block, their runs made
    /// up: the sums, the share and the spread are exact.
    #[test]
    fn the_figures_of_groups_made_up_by_hand() {
        let map = FreeSpaceMap {
            groups: vec![
                // Runs 1, 2, 2 and 9: 14 blocks, 9 in a full cluster.
                group(0, 14, 3, &[1, 2, 0, 1], 9, 9),
                // Runs 3 and 4: 7 blocks, 4 in a full cluster.
                group(1, 7, 0, &[0, 0, 1, 1], 4, 4),
                // Nothing free.
                group(2, 0, 5, &[0, 0, 0, 0], 0, 0),
            ],
            frags_per_block: 8,
        };
        let f = Fragmentation::of(&map);
        assert_eq!(f.maxcontig, 4);
        assert_eq!(f.cluster_sum, vec![1, 2, 1, 2]);
        assert_eq!(f.free_frags, (14 + 7) * 8 + 3 + 5);
        assert_eq!(f.full_cluster_frags, (9 + 4) * 8);
        assert_eq!(f.full_cluster_share, Some(four_places(104.0 / 176.0)));
        assert_eq!(f.longest_run, Some(RunSpread { min: 0, median: 4, max: 9 }));
        let empty = Fragmentation::of(&FreeSpaceMap { groups: vec![], frags_per_block: 8 });
        assert_eq!((empty.full_cluster_share, empty.longest_run), (None, None));
    }

    #[test]
    fn the_median_of_an_even_count_is_the_lower_middle() {
        assert_eq!(RunSpread::of(&[7, 1, 5, 3]), Some(RunSpread { min: 1, median: 3, max: 7 }));
        assert_eq!(RunSpread::of(&[2]), Some(RunSpread { min: 2, median: 2, max: 2 }));
    }
}
