//! Cleaning policies: which segments to clean first, and in what order to
//! rewrite their live blocks. Each is a small type behind [`Policy`]; a new
//! one needs only a type and a line in [`by_name`].

use fslab::lfs::clean::{MarkBlock, SegmentState, SegmentTable};

/// A cleaning policy.
pub trait Policy: Send {
    /// The name `--policy` and the mount option use.
    fn name(&self) -> &'static str;

    /// How much cleaning `seg` is worth now; segments are cleaned highest
    /// first. Only segments a cleaner may clean are asked.
    fn score(&self, seg: &SegmentState, table: &SegmentTable) -> f64;

    /// Puts the live blocks of one pass in the order they are rewritten
    /// (`table` as the pass found it). The default keeps them as found:
    /// segment by segment, in log order.
    fn order(&self, _blocks: &mut [MarkBlock], _table: &SegmentTable) {}
}

/// Every policy's name, for help texts and errors.
pub const NAMES: &[&str] = &["greedy", "cost-benefit", "hot-cold"];

/// The policy a mount's cleaner and `fslab clean` use unless told otherwise.
pub const DEFAULT: &str = "hot-cold";

/// The policy called `name`.
pub fn by_name(name: &str) -> Option<Box<dyn Policy>> {
    match name {
        "greedy" => Some(Box::new(Greedy)),
        "cost-benefit" => Some(Box::new(CostBenefit)),
        "hot-cold" => Some(Box::new(HotCold)),
        _ => None,
    }
}

/// Seconds from `lastmod` to the table's time, at least a microsecond so
/// that a segment written just now still ranks by utilization.
fn age_seconds(seg: &SegmentState, table: &SegmentTable) -> f64 {
    ((table.now - seg.lastmod) as f64 / 1e9).max(1e-6)
}

/// The 1993 paper's benefit-to-cost ratio (§3.5): reading the segment
/// costs 1, writing its live data back costs `u`, and the space freed,
/// `1 − u`, is worth more the longer it is likely to stay free, which the
/// age of the youngest data in the segment predicts.
fn benefit_to_cost(seg: &SegmentState, table: &SegmentTable) -> f64 {
    let u = seg.utilization(table.block_size);
    (1.0 - u) * age_seconds(seg, table) / (1.0 + u)
}

/// Greedy: the segment with the fewest live bytes first (Rosenblum and
/// Ousterhout 1992 §5.3).
#[derive(Debug, Clone, Copy, Default)]
pub struct Greedy;

impl Policy for Greedy {
    fn name(&self) -> &'static str {
        "greedy"
    }
    fn score(&self, seg: &SegmentState, table: &SegmentTable) -> f64 {
        -seg.utilization(table.block_size)
    }
}

/// Cost-benefit, exactly as the 1993 paper §3.5 defines it:
/// benefit / cost = (1 − u) × age / (1 + u). Live blocks are rewritten as
/// found.
#[derive(Debug, Clone, Copy, Default)]
pub struct CostBenefit;

impl Policy for CostBenefit {
    fn name(&self) -> &'static str {
        "cost-benefit"
    }
    fn score(&self, seg: &SegmentState, table: &SegmentTable) -> f64 {
        benefit_to_cost(seg, table)
    }
}

/// Hot-cold: separates cold data from hot when it rewrites live blocks.
/// A pass's live blocks are rewritten sorted by age, so that cold data
/// leaves together in segments of its own instead of sharing them with data
/// about to die (Rosenblum and Ousterhout 1992 §5.4: age-sorting is what
/// makes the segment distribution bimodal). The youngest blocks go first,
/// into what is left of the segment users are writing (hot data beside hot
/// data); the rest follow oldest first, from a segment boundary. Segments
/// are chosen by benefit to cost with the age term damped to its square
/// root, `(1 − u) × √age / (1 + u)`: with the full age the cleaner took
/// cold segments while they were still mostly live (on the 90/10 workload
/// at 80% the damped form cleaned segments at lower utilization and wrote
/// less; `scripts/bench-cleaner` measures it).
#[derive(Debug, Clone, Copy, Default)]
pub struct HotCold;

impl Policy for HotCold {
    fn name(&self) -> &'static str {
        "hot-cold"
    }
    fn score(&self, seg: &SegmentState, table: &SegmentTable) -> f64 {
        let u = seg.utilization(table.block_size);
        (1.0 - u) * age_seconds(seg, table).sqrt() / (1.0 + u)
    }
    fn order(&self, blocks: &mut [MarkBlock], table: &SegmentTable) {
        blocks.sort_by_key(|b| b.block.age);
        // The first blocks written go beside what users wrote last, which is
        // mostly hot: give that room to the youngest blocks, so that the
        // cold ones start a segment of their own (two blocks are left for
        // the summary and an inode block).
        let room = (table.log_room_blocks.saturating_sub(2) as usize).min(blocks.len());
        blocks.rotate_right(room);
        blocks[..room].reverse();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(live_blocks: u64, age_s: i64) -> SegmentState {
        SegmentState {
            live_bytes: live_blocks * 4096,
            lastmod: 1_000_000_000_000 - age_s * 1_000_000_000,
            usable_blocks: 100,
            first_log_block: 0,
            clean: false,
            cleanable: true,
        }
    }

    fn table() -> SegmentTable {
        SegmentTable {
            block_size: 4096,
            blocks_per_segment: 100,
            fs_id: 1,
            segments: Vec::new(),
            clean_segments: 0,
            reserve_segments: 2,
            low_water: 4,
            high_water: 6,
            budget_blocks: 0,
            log_room_blocks: 0,
            now: 1_000_000_000_000,
        }
    }

    #[test]
    fn greedy_prefers_the_emptier_segment_whatever_its_age() {
        let t = table();
        assert!(Greedy.score(&seg(20, 1), &t) > Greedy.score(&seg(30, 1000), &t));
    }

    #[test]
    fn cost_benefit_is_the_papers_formula() {
        let t = table();
        // u = 0.25, age = 100 s: (0.75 × 100) / 1.25 = 60.
        let s = CostBenefit.score(&seg(25, 100), &t);
        assert!((s - 60.0).abs() < 1e-9, "{s}");
        // An old, fuller segment beats a young, emptier one.
        assert!(CostBenefit.score(&seg(75, 10_000), &t) > CostBenefit.score(&seg(20, 10), &t));
    }

    #[test]
    fn hot_cold_puts_the_youngest_beside_users_data_and_the_oldest_next() {
        use fslab::lfs::clean::{BlockKind, BlockRef};
        let block = |age: i64| MarkBlock {
            block: BlockRef { ino: age as u64 + 2, version: 0, kind: BlockKind::Block(0), daddr: 1, age },
            data: None,
        };
        let mut blocks: Vec<MarkBlock> = [5, 1, 9, 3, 7, 2].into_iter().map(block).collect();
        let mut t = table();
        t.log_room_blocks = 4; // room for two blocks after the summary's share
        HotCold.order(&mut blocks, &t);
        let ages: Vec<i64> = blocks.iter().map(|b| b.block.age).collect();
        assert_eq!(ages, vec![9, 7, 1, 2, 3, 5]);
    }

    #[test]
    fn every_name_builds_its_policy() {
        for name in NAMES {
            let policy = by_name(name).expect("known name");
            assert_eq!(policy.name(), *name);
        }
        assert!(by_name("fifo").is_none());
    }
}
