//! Readers of a run's results and pass tests shared by the claims of
//! several papers.

use crate::results::Results;

pub(super) fn v(r: &Results, e: &str, s: &str, phase: &str, metric: &str, x: f64) -> Option<f64> {
    r.value(e, s, phase, metric, x)
}

/// The last point of a series (the largest x).
pub(super) fn last(r: &Results, e: &str, s: &str, phase: &str, metric: &str) -> Option<(f64, f64)> {
    r.series(e, s, phase, metric).last().copied()
}

pub(super) fn within(value: f64, low: f64, high: f64) -> Option<(f64, bool)> {
    Some((value, (low..=high).contains(&value)))
}

pub(super) fn near(value: f64, target: f64, tolerance: f64) -> Option<(f64, bool)> {
    Some((value, (value - target).abs() <= tolerance * target))
}

/// 1 − with/without: the share of throughput the cleaner costs.
pub(super) fn loss(r: &Results, e: &str, s: &str, with_x: f64, without_x: f64) -> Option<f64> {
    let without = v(r, e, s, "no-cleaning", "TPS", without_x)?;
    let with = v(r, e, s, "cleaning", "TPS", with_x)?;
    Some(100.0 * (1.0 - with / without))
}

/// Of values that must each lie in `[low, high]`: the worst (the farthest
/// outside, or the nearest an edge when all are inside) and whether all
/// are inside; `None` for no values. What a check made at every size
/// reports, where a mean would hide the size that misses.
pub(super) fn worst_within(values: &[f64], low: f64, high: f64) -> Option<(f64, bool)> {
    let outside = |x: f64| (low - x).max(x - high);
    let worst = values.iter().copied().max_by(|a, b| outside(*a).total_cmp(&outside(*b)))?;
    Some((worst, values.iter().all(|&x| (low..=high).contains(&x))))
}
