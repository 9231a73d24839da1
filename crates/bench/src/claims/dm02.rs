//! The checks of claims 6 and 7, the 2002 paper's (Dowse and Malone,
//! "Recent Filesystem Optimisations on FreeBSD"): the MH folder's soft
//! updates and dirhash, and dirhash's per-operation cost. Claim 11, the
//! same paper's buildworld, is in `buildworld`.

use super::helpers::{last, within};
use super::Check;
use crate::results::Results;

/// The MH folder's experiment (claim 6).
const MH: &str = "dm02-mh-folder";

/// Median of a series' values with x in `[low, high]`: wall-time costs
/// per group of operations carry the odd group that paid for a segment
/// write, which a median leaves out.
fn median_between(
    r: &Results,
    e: &str,
    s: &str,
    phase: &str,
    metric: &str,
    low: f64,
    high: f64,
) -> Option<f64> {
    let mut values: Vec<f64> = r
        .series(e, s, phase, metric)
        .into_iter()
        .filter(|(x, _)| (low..=high).contains(x))
        .map(|(_, v)| v)
        .collect();
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    Some(values[values.len() / 2])
}

/// A factor of the MH folder (`crate::experiment::MH_FACTORS`), at the
/// folder's size.
fn mh(r: &Results, system: &str, phase: &str, factor: &str) -> Option<f64> {
    last(r, MH, system, phase, factor).map(|(_, x)| x)
}

/// The least of a system's factors over the MH folder's three phases.
fn mh_least(r: &Results, system: &str, factor: &str) -> Option<f64> {
    let all = ["create", "pack", "remove"]
        .iter()
        .map(|p| mh(r, system, p, factor))
        .collect::<Option<Vec<f64>>>()?;
    Some(all.into_iter().fold(f64::INFINITY, f64::min))
}

/// Within a factor of two of the paper's `factor`.
fn within_2x(value: f64, factor: f64) -> Option<(f64, bool)> {
    within(value, factor / 2.0, factor * 2.0)
}

/// Claim 6's checks: soft updates and dirhash on the MH folder.
pub(super) const MH_CHECKS: &[Check] = &[
    Check {
        text: "soft updates speed create up x14.5-x58 (paper x29; dirhash off)",
        experiment: MH,
        needs: &["ffs-linear", "ffs-softdep-linear"],
        eval: |r| within_2x(mh(r, "ffs-softdep-linear", "create", "x SU")?, 29.0),
        unit: "x",
        why_not: "",
    },
    Check {
        text: "soft updates speed pack up x6.5-x26 (paper x13; dirhash off)",
        experiment: MH,
        needs: &["ffs-linear", "ffs-softdep-linear"],
        eval: |r| within_2x(mh(r, "ffs-softdep-linear", "pack", "x SU")?, 13.0),
        unit: "x",
        why_not: "",
    },
    Check {
        text: "soft updates speed remove up x38.5-x154 (paper x77; dirhash off)",
        experiment: MH,
        needs: &["ffs-linear", "ffs-softdep-linear"],
        eval: |r| within_2x(mh(r, "ffs-softdep-linear", "remove", "x SU")?, 77.0),
        unit: "x",
        why_not: "",
    },
    Check {
        text:
            "with soft updates, dirhash speeds create, pack and remove up >= x1.5 each (paper x12, x38, x3)",
        experiment: MH,
        needs: &["ffs-softdep", "ffs-softdep-linear"],
        eval: |r| {
            let least = mh_least(r, "ffs-softdep", "x DH")?;
            Some((least, least >= 1.5))
        },
        unit: "x (least)",
        why_not: "",
    },
    Check {
        text: "without soft updates, dirhash changes no phase by more than x1.25 (Table 3: no dirhash term \
               without SU)",
        experiment: MH,
        needs: &["ffs-m8r0", "ffs-linear"],
        eval: |r| {
            let most = ["create", "pack", "remove"]
                .iter()
                .map(|p| mh(r, "ffs-m8r0", p, "x DH"))
                .collect::<Option<Vec<f64>>>()?
                .into_iter()
                .fold(0.0, f64::max);
            Some((most, most <= 1.25))
        },
        unit: "x (most)",
        why_not: "",
    },
];

/// Claim 7's checks: dirhash's flat cost per operation.
pub(super) const DIROPS_CHECKS: &[Check] = &[
    Check {
        text: "with a name index (lfs): median create cost at ~10k entries within 10% of ~1k (each against \
               the 1,000-entry reference timed beside it)",
        experiment: "dm02-dirops",
        needs: &["lfs"],
        eval: |r| {
            let low = median_between(r, "dm02-dirops", "lfs", "create-relative", "x", 750.0, 1250.0)?;
            let high = median_between(r, "dm02-dirops", "lfs", "create-relative", "x", 9000.0, 10000.0)?;
            let growth = 100.0 * (high / low - 1.0);
            Some((growth, growth.abs() <= 10.0))
        },
        unit: "% growth",
        why_not: "",
    },
    Check {
        text: "linear scan (dirhash off): median create cost at 10k >= 4x at 1k (each against the reference)",
        experiment: "dm02-dirops",
        needs: &["lfs-linear"],
        eval: |r| {
            let low = median_between(r, "dm02-dirops", "lfs-linear", "create-relative", "x", 750.0, 1250.0)?;
            let high =
                median_between(r, "dm02-dirops", "lfs-linear", "create-relative", "x", 9000.0, 10000.0)?;
            Some((high / low, high / low >= 4.0))
        },
        unit: "x",
        why_not: "",
    },
];

#[cfg(test)]
mod tests {
    use super::DIROPS_CHECKS;
    use crate::claims::setup::tests::results;

    /// "Within 10%" is two-sided: a create cost that falls by more than a
    /// tenth is no flat cost either.
    #[test]
    fn dirhash_flat_cost_is_within_ten_percent_either_way() {
        let check = &DIROPS_CHECKS[0];
        let at = |high: f64| {
            let r = results(
                "dm02-dirops",
                &[
                    ("lfs", "create-relative", 1000.0, "x", 1.0),
                    ("lfs", "create-relative", 9500.0, "x", high),
                ],
            );
            (check.eval)(&r).map(|(_, pass)| pass)
        };
        assert_eq!(at(1.05), Some(true));
        assert_eq!(at(0.95), Some(true));
        assert_eq!(at(1.15), Some(false));
        assert_eq!(at(0.85), Some(false), "a fall of 15% is not flat");
    }
}
