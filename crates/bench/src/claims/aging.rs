//! The checks of claim 12: the 1995 paper's aged FFS (Fig. 8) against
//! an empty one, in `s95-aged`.

use super::helpers::v;
use super::Check;
use crate::results::Results;

/// The aged-FFS experiment (claim 12).
const AGED: &str = "s95-aged";
/// Its configurations: three sizes, create and read.
const AGED_POINTS: usize = 6;

/// The aged-FFS experiment's ratios, aged over empty (1995 Fig. 8), as
/// (phase, size, ratio), for every create and read both systems measured.
fn of_empty(r: &Results) -> Vec<(String, f64, f64)> {
    let mut out = Vec::new();
    for phase in ["create", "read"] {
        for (x, aged) in r.series(AGED, "ffs-aged", phase, "MB/s") {
            if let Some(empty) = v(r, AGED, "ffs-m7r0", phase, "MB/s", x).filter(|e| *e > 0.0) {
                out.push((phase.to_string(), x, aged / empty));
            }
        }
    }
    out
}

/// Claim 12's checks: the aged FFS's throughput over the empty one's.
pub(super) const CHECKS: &[Check] = &[
    Check {
        text: "most configurations (size x phase) at 80-100% of the empty FS's throughput (to 101%: a \
               few tenths of a percent above is no loss)",
        experiment: AGED,
        needs: &["ffs-m7r0", "ffs-aged"],
        eval: |r| {
            let all = of_empty(r);
            let inside = all.iter().filter(|(_, _, x)| (0.80..=1.01).contains(x)).count();
            let share = inside as f64 / all.len() as f64;
            Some((share, all.len() == AGED_POINTS && 2 * inside > all.len()))
        },
        unit: "of the configurations",
        why_not: "",
    },
    Check {
        text: "64 KB shows the largest loss: its worse phase at or below every other size's worse phase",
        experiment: AGED,
        needs: &["ffs-m7r0", "ffs-aged"],
        eval: |r| {
            let all = of_empty(r);
            let worst = |size: f64| {
                all.iter().filter(|(_, x, _)| *x == size).map(|(_, _, v)| *v).min_by(f64::total_cmp)
            };
            let at_64k = worst(65536.0)?;
            let others = [worst(8192.0)?, worst(1048576.0)?];
            Some((at_64k, others.iter().all(|&o| at_64k <= o)))
        },
        unit: "x empty (64 KB, worse phase)",
        why_not: "",
    },
    Check {
        text: "1 MB files >= 85% of empty in both phases",
        experiment: AGED,
        needs: &["ffs-m7r0", "ffs-aged"],
        eval: |r| {
            let worst = of_empty(r)
                .into_iter()
                .filter(|(_, x, _)| *x == 1048576.0)
                .map(|(_, _, v)| v)
                .min_by(f64::total_cmp)?;
            Some((worst, worst >= 0.85))
        },
        unit: "x empty (worse phase)",
        why_not: "",
    },
];
