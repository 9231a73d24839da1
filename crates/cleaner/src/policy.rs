//! Cleaning policies: which segments to clean first, and in what order to
//! rewrite their live blocks. Each is a small type behind [`Policy`]; a new
//! one needs only a type and a line in [`by_name`].

use fslab::lfs::clean::{MarkBlock, SegmentState, SegmentTable};
use fslab::lfs::layout::WriteClock;
use fslab::lfs::UserSeparation;

/// A cleaning policy.
pub trait Policy: Send + Sync {
    /// The name `--policy` and the mount option use.
    fn name(&self) -> &'static str;

    /// How much cleaning `seg` is worth now; segments are cleaned highest
    /// first. Only segments a cleaner may clean are asked.
    fn score(&self, seg: &SegmentState, table: &SegmentTable) -> f64;

    /// Puts the live blocks of one pass in the order they are rewritten
    /// (`table` as the pass found it). The default keeps them as found:
    /// segment by segment, in log order.
    fn order(&self, _blocks: &mut [MarkBlock], _table: &SegmentTable) {}

    /// Data written before the time returned is cold: a pass rewrites
    /// those blocks at the log's cold head, apart from users' new writes,
    /// and the younger ones at the users' head. `None` (the default):
    /// everything goes to the users' head, as in BSD-LFS.
    fn cold_before(&self, _table: &SegmentTable) -> Option<WriteClock> {
        None
    }

    /// For a mount's own cleaner: which users' writes go to the cold head
    /// (`Lfs::set_separation`). The default: none, every write goes to
    /// the users' head.
    fn user_separation(&self) -> UserSeparation {
        UserSeparation::Off
    }
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

/// The age of the segment's newest data on the write clock (bytes users
/// wrote since), at least one so that a segment written just now still
/// ranks by utilization.
fn age(seg: &SegmentState, table: &SegmentTable) -> f64 {
    (table.now.saturating_sub(seg.lastmod) as f64).max(1.0)
}

/// The 1993 paper's benefit-to-cost ratio (§3.5): reading the segment
/// costs 1, writing its live data back costs `u`, and the space freed,
/// `1 − u`, is worth more the longer it is likely to stay free, which the
/// age of the youngest data in the segment predicts.
fn benefit_to_cost(seg: &SegmentState, table: &SegmentTable) -> f64 {
    let u = seg.utilization(table.block_size);
    (1.0 - u) * age(seg, table) / (1.0 + u)
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

/// Hot-cold: keeps cold data apart from hot, F2FS-style, with the log's
/// second head (Rosenblum and Ousterhout 1992 §5.4: cold data should not
/// share segments with data about to die).
///
/// * Moved data not rewritten while users wrote [`MOVED_COLD_AFTER`] times
///   the live bytes goes to the cold head, sorted oldest first; younger
///   moved data goes back beside users' writes.
/// * On a mount, users' writes to files not written while users wrote
///   [`USER_COLD_AFTER`] times the live bytes go to the cold head too.
/// * Segments are ranked by how little waiting would lower the cost of
///   cleaning them. With only live blocks read, reclaiming a segment at
///   utilization `u` costs `2u / (1 − u)` per byte freed; if its data dies
///   at rate `λ`, waiting lowers that at `2λu / (1 − u)²`. The segment
///   whose cost falls slowest goes first: score `(1 − u)² / (λ u)`, with
///   `λ = ln(1/u) / age` (the segment was full when written; age on the
///   write clock).
///
/// All of this pays only when age predicts survival
/// ([`SegmentTable::ages_predict_survival`]). When it does not (uniform
/// overwrites: what dies is as old as what lives), the policy is greedy: it ranks
/// by utilization, rewrites live blocks as found and separates nothing,
/// since splitting data that dies at one rate gains nothing and ranking by
/// age loses (`scripts/bench-cleaner`).
#[derive(Debug, Clone, Copy, Default)]
pub struct HotCold;

impl Policy for HotCold {
    fn name(&self) -> &'static str {
        "hot-cold"
    }
    fn score(&self, seg: &SegmentState, table: &SegmentTable) -> f64 {
        let u = seg.utilization(table.block_size);
        if !table.ages_predict_survival {
            return -u;
        }
        let u = u.clamp(1e-6, 1.0 - 1e-6);
        (1.0 - u).powi(2) * age(seg, table) / (u * (1.0 / u).ln())
    }
    fn order(&self, blocks: &mut [MarkBlock], table: &SegmentTable) {
        if !table.ages_predict_survival {
            return;
        }
        blocks.sort_by_key(|b| b.block.age);
    }
    fn cold_before(&self, table: &SegmentTable) -> Option<WriteClock> {
        if !table.ages_predict_survival {
            return None;
        }
        let live: u64 = table.segments.iter().map(|s| s.live_bytes).sum();
        Some(table.now.saturating_sub((live as f64 * MOVED_COLD_AFTER) as i64))
    }
    fn user_separation(&self) -> UserSeparation {
        UserSeparation::WhereAgePredicts(USER_COLD_AFTER)
    }
}

/// Moved data not rewritten while users wrote this many times the live
/// bytes goes to the cold head.
pub const MOVED_COLD_AFTER: f64 = 0.8;

/// Users' writes to files not written while users wrote this many times
/// the live bytes go to the cold head.
pub const USER_COLD_AFTER: f64 = 0.8;

#[cfg(test)]
mod tests {
    use super::*;

    /// The write clock when [`table`] is taken.
    const NOW: WriteClock = 1_000_000_000;

    /// A segment of 100 blocks with `live_blocks` live, last written
    /// `age` bytes of users' writes ago.
    fn seg(live_blocks: u64, age: i64) -> SegmentState {
        SegmentState {
            live_bytes: live_blocks * 4096,
            lastmod: NOW - age,
            usable_blocks: 100,
            first_log_block: 0,
            clean: false,
            cleanable: true,
        }
    }

    fn table(segments: Vec<SegmentState>, ages_predict_survival: bool) -> SegmentTable {
        SegmentTable {
            block_size: 4096,
            blocks_per_segment: 100,
            fs_id: 1,
            segments,
            clean_segments: 0,
            reserve_segments: 2,
            low_water: 4,
            high_water: 6,
            budget_blocks: 0,
            cold_budget_blocks: 0,
            now: NOW,
            ages_predict_survival,
        }
    }

    #[test]
    fn greedy_prefers_the_emptier_segment_whatever_its_age() {
        let t = table(Vec::new(), true);
        assert!(Greedy.score(&seg(20, 1), &t) > Greedy.score(&seg(30, 1000), &t));
    }

    #[test]
    fn cost_benefit_is_the_papers_formula() {
        let t = table(Vec::new(), true);
        // u = 0.25, age = 100: (0.75 × 100) / 1.25 = 60.
        let s = CostBenefit.score(&seg(25, 100), &t);
        assert!((s - 60.0).abs() < 1e-9, "{s}");
        // An old, fuller segment beats a young, emptier one.
        assert!(CostBenefit.score(&seg(75, 10_000), &t) > CostBenefit.score(&seg(20, 10), &t));
    }

    #[test]
    fn hot_cold_ranks_by_declining_cost_when_age_predicts_survival() {
        let t = table(Vec::new(), true);
        // u = 0.5, age = 1000: (0.5² × 1000) / (0.5 × ln 2).
        let s = HotCold.score(&seg(50, 1000), &t);
        assert!((s - 0.25 * 1000.0 / (0.5 * 2f64.ln())).abs() < 1e-6, "{s}");
        // A cold segment (old, 80% live) goes before a hot one that is
        // still dying fast (young, 40% live).
        assert!(HotCold.score(&seg(80, 100_000), &t) > HotCold.score(&seg(40, 100), &t));
    }

    fn aged_block(age: i64) -> MarkBlock {
        use fslab::lfs::clean::{BlockKind, BlockRef};
        MarkBlock {
            block: BlockRef {
                ino: age as u64 + 2,
                version: 0,
                kind: BlockKind::Block(0),
                daddr: fslab::format::Daddr::new(1),
                age,
            },
            data: None,
        }
    }

    #[test]
    fn hot_cold_is_greedy_and_separates_nothing_when_age_says_nothing() {
        let t = table(vec![seg(50, 10)], false);
        assert!(HotCold.score(&seg(20, 1), &t) > HotCold.score(&seg(30, 100_000), &t));
        assert_eq!(HotCold.cold_before(&t), None);
        let mut blocks: Vec<MarkBlock> = [5, 1, 9].into_iter().map(aged_block).collect();
        HotCold.order(&mut blocks, &t);
        let ages: Vec<i64> = blocks.iter().map(|b| b.block.age).collect();
        assert_eq!(ages, vec![5, 1, 9], "rewritten as found");
    }

    #[test]
    fn hot_cold_sends_data_older_than_its_line_to_the_cold_head() {
        let mut blocks: Vec<MarkBlock> = [5, 1, 9, 3, 7, 2].into_iter().map(aged_block).collect();
        let t = table(vec![seg(50, 10), seg(50, 20)], true);
        HotCold.order(&mut blocks, &t);
        let ages: Vec<i64> = blocks.iter().map(|b| b.block.age).collect();
        assert_eq!(ages, vec![1, 2, 3, 5, 7, 9], "oldest first");
        // 100 live blocks: the line is 0.8 × 409,600 bytes of writes ago.
        let line = HotCold.cold_before(&t).expect("a line");
        assert_eq!(line, NOW - (100.0 * 4096.0 * MOVED_COLD_AFTER) as i64);
        assert_eq!(HotCold.user_separation(), UserSeparation::WhereAgePredicts(USER_COLD_AFTER));
        assert_eq!(CostBenefit.cold_before(&t), None, "cost-benefit keeps one head");
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
