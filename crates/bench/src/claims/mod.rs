//! The twelve headline claims of the papers (the research notes'
//! `reproduction_targets.md`, Part 2), each with its pass criterion split
//! into checks that can be evaluated on a run's results.
//!
//! A check names the systems it needs. It is *not yet* when one of them
//! does not exist in fslab yet (FFS, soft updates…), has *no data* when
//! its experiment was not run, and is otherwise *reproduced* or *not
//! reproduced*, with the measured and expected values. An experiment run
//! with several seeds gives each check a verdict per seed: the check is
//! *reproduced* or *not reproduced* when every seed agrees, else
//! *unstable*. A claim is reproduced when all its checks are, not
//! reproduced when any evaluated check is not, and not yet when none could
//! be evaluated; an unstable check counts for neither side.
//!
//! This module holds the claims and the verdicts; each claim's checks are
//! kept beside the other checks of its paper: `s93` (claims 9 and 10),
//! `s95` (1-4), `ss97` (5), `dm02` (6 and 7), `s00` (8), `buildworld`
//! (11) and `aging` (12), with the readers they share in `helpers`. The
//! ranges the checks require of plotted quantities, for the plots to
//! shade, are in `ranges`; claims 1, 2 and 4's ratio plots in `s95`.

use crate::results::Results;
use crate::seeds::Spread;

mod aging;
mod buildworld;
pub(crate) mod check;
mod dm02;
mod helpers;
pub mod ranges;
mod s00;
mod s93;
mod s95;
pub(crate) mod setup;
mod ss97;

use helpers::{v, within};
use s00::SSH;

pub use check::{Check, Outcome, Verdict};
pub use s95::{sequential_lfs, Ratio, RatioPlot, RATIO_PLOTS};
pub use setup::{compare, Alternative, Compared, SetupChoice};

/// A headline claim.
#[derive(Debug, Clone, Copy)]
pub struct Claim {
    /// Its rank (1–12).
    pub number: u32,
    /// The claim.
    pub statement: &'static str,
    /// The papers' tables and figures behind it.
    pub source: &'static str,
    /// The pass criterion, as the research notes propose it.
    pub criterion: &'static str,
    /// Its checks (empty when nothing of it can run yet).
    pub checks: &'static [Check],
    /// Why it cannot be evaluated at all yet, if so.
    pub not_yet: Option<&'static str>,
    /// The setup choices its checks' verdicts depend on, each with the
    /// checks evaluated under the alternative (`setup`).
    pub setup: &'static [SetupChoice],
}

/// The claims.
pub const CLAIMS: &[Claim] = &[
    Claim {
        number: 1,
        statement: "LFS creates small files ~10x faster than synchronous FFS (10x at 1 KB, 4x at 2 KB, 2x at 32 KB, \
                    parity at 1/2 MB)",
        source: "1995 Fig. 3, Fig. 1",
        criterion: "LFS/FFS create-throughput ratio >= 8 at 1 KB, 3-5 at 2 KB, ~2 at 32 KB, 0.8-1.25 at >= 512 KB",
        checks: s95::CREATE_CHECKS,
        not_yet: None,
        setup: setup::CREATES,
    },
    Claim {
        number: 2,
        statement: "LFS deletes files <= 64 KB ~10x faster than FFS, and large files still 3-4x",
        source: "1995 Fig. 6",
        criterion: "Ratio >= 8 for <= 64 KB; 2.5-4.5 for >= 1 MB; a drop at the first-indirect-block size",
        checks: s95::DELETE_CHECKS,
        not_yet: None,
        setup: setup::DELETES,
    },
    Claim {
        number: 3,
        statement: "TPC-B: without the cleaner LFS ~ +50% over FFS (41-44 vs 28.6 TPS); the cleaner costs 34% at 48% \
                    utilization, ~41% near 80%, leaving LFS ~ FFS",
        source: "1995 Fig. 7; 1993 Table 7",
        criterion: "No-cleaner LFS/FFS 1.4-1.6; cleaner loss 30-38% at 48% and 37-45% at 80%; FFS flat (+-3%); TPS \
                    near the analytic 28.6 / 44 / 30.0",
        checks: s95::TPCB_CHECKS,
        not_yet: None,
        setup: setup::TPCB_95,
    },
    Claim {
        number: 4,
        statement: "Large-file sequential I/O is comparable: LFS and FFS-m8r0 write at ~67% of the disk, FFS-m8r2 at \
                    ~75%; FFS tuned for writes is ~15% better on large writes and worse on reads",
        source: "1995 abstract, Fig. 3-5",
        criterion: "Large-file overwrite FFS-m8r2 / LFS 1.10-1.20; reads LFS >= FFS-m8r2 from 64 KB to 2 MB; both \
                    approach the 2.3 MB/s bus at large sizes",
        checks: s95::LARGE_FILE_CHECKS,
        not_yet: None,
        setup: setup::LARGE_FILES,
    },
    Claim {
        number: 5,
        statement: "Realloc halves fragmentation under aging (layout 0.766 -> 0.899); hot files read +32%, write +20%",
        source: "1997 Fig. 2, Table 2, Fig. 4",
        criterion: "Final layout score: realloc >= 0.88, original <= 0.80, gap >= 0.10; hot-file read gain \
                    20-40%, write gain 10-30%",
        checks: ss97::REALLOC_CHECKS,
        not_yet: None,
        setup: &[],
    },
    Claim {
        number: 6,
        statement: "Soft updates on the MH folder: x29 create, x13 pack, x77 remove; dirhash adds x12, x38, x3",
        source: "2002 §4.4, Table 3",
        criterion: "Soft-updates speedups within 2x of the paper's; the dirhash gain appears only with soft updates on",
        checks: dm02::MH_CHECKS,
        not_yet: None,
        setup: &[],
    },
    Claim {
        number: 7,
        statement: "Dirhash keeps per-operation cost constant: create ~50 us flat to 10k+ entries while a linear scan \
                    grows",
        source: "2002 Fig. 2-6",
        criterion: "Dirhash slope ~0 (<= 10% growth from 1k to 10k entries); linear cost at 10k >= 4x its cost at 1k",
        checks: dm02::DIROPS_CHECKS,
        not_yet: None,
        setup: &[],
    },
    Claim {
        number: 8,
        statement: "Synchronous journaling ~ FFS; asynchronous journaling and soft updates ~ FFS-async",
        source: "2000 Table 4, 5, Fig. 3, 4, 5",
        criterion: "FFS ~ sync journaling << async journaling ~ SU <= FFS-async on metadata-heavy tests; Netnews: \
                    async journaling > SU > sync-1disk > FFS; the macrobenchmarks' published ratios to FFS-async \
                    within the ranges each check states",
        checks: s00::CHECKS,
        not_yet: None,
        setup: &[],
    },
    Claim {
        number: 9,
        statement: "FFS rot_delay caps sequential bandwidth at about 1/4 (0.5 of 1.6 MB/s); EFS and LFS reads within \
                    3% of raw; EFS writes >= raw",
        source: "1993 Fig. 9, 11, 12",
        criterion: "FFS 0.45-0.6 MB/s; LFS/EFS read within 3% of raw at large S (§5.2.1's \"very small (3%) \
                    differences\"; the research notes proposed >= 0.95 x); LFS write noticeably below EFS and raw; EFS \
                    write >= raw at large S",
        checks: s93::BANDWIDTH_CHECKS,
        not_yet: None,
        setup: &[],
    },
    Claim {
        number: 10,
        statement: "1993 TPC-B ordering: LFS without cleaner 19.3 > EFS 16.8 > FFS 14.2 TPS; with the cleaner LFS \
                    falls to 11.6 (1 MB segments) or 12.4 (256 KB)",
        source: "1993 Table 7",
        criterion: "Same ordering; cleaner loss 30-45%; 256 KB >= 1 MB by a few %; with the cleaner LFS below FFS \
                    and EFS; every TPS within 25% of Table 7's (the HP 9000/380 and HP 97560 are modelled)",
        checks: s93::TPCB_CHECKS,
        not_yet: None,
        setup: setup::TPCB_93,
    },
    Claim {
        number: 11,
        statement: "Buildworld: soft updates -42.7%, dirpref -14.3%, vmiodir -1.9%; all on = 46.8% of baseline; \
                    dirpref 10-20% on tree-traversal workloads",
        source: "2002 Table 1, 2, §4.4, Fig. 10",
        criterion: "SU is the largest coefficient, dirpref second, vmiodir small; DP:SU positive (the savings \
                    overlap); dirpref's gain on the traversal phases 10-20%. vmiodir has no meaning in fslab, whose \
                    one buffer cache keeps directory blocks like any other: its term is not fitted",
        checks: buildworld::CHECKS,
        not_yet: None,
        setup: &[],
    },
    Claim {
        number: 12,
        statement: "Aged real FFS keeps 85-95% of empty-FS throughput, worst ~71% (64 KB files)",
        source: "1995 Fig. 8",
        criterion: "Most configurations 80-100% of empty; 64 KB shows the largest loss; 1 MB >= 85%",
        checks: aging::CHECKS,
        not_yet: None,
        setup: &[],
    },
];

/// Results the lab calibrates to the paper, each a check of its own that
/// no claim counts: where the CPU charged is set from the paper's own
/// times, agreeing with the paper shows that the calibration holds, not
/// that fslab behaves as the papers' systems did. The report shows them
/// apart from the claims, labelled as calibrated.
pub const CALIBRATED: &[Check] = &[
    Check {
        text: "Andrew (1993 Table 6): LFS's total time / FFS's in 0.85-0.95 (paper 63.8 / 70.1 = 0.91); each phase \
               is charged the CPU the paper's LFS spent in it",
        experiment: "s93-andrew",
        needs: &["lfs-nocleaner", "ffs"],
        eval: |r| {
            let lfs = v(r, "s93-andrew", "lfs-nocleaner", "total", "s", 0.0)?;
            within(lfs / v(r, "s93-andrew", "ffs", "total", "s", 0.0)?, 0.85, 0.95)
        },
        unit: "x",
        why_not: "",
    },
    Check {
        text: "ssh build on FFS at 85-95% CPU (2000 §7.3.1: 90%); the tools' CPU charge is set so that it is",
        experiment: SSH,
        needs: &["ffs-m8r0"],
        eval: |r| within(v(r, SSH, "ffs-m8r0", "build", "cpu%", 0.0)?, 85.0, 95.0),
        unit: "%",
        why_not: "",
    },
];

/// Evaluates `check` on `results`: on each seed its experiment ran with,
/// the verdicts combined by [`crate::seeds::combine`].
pub fn evaluate(check: &Check, results: &Results) -> Outcome {
    match results.seeds(check.experiment).as_slice() {
        [] => evaluate_at_seed(check, results),
        [seed] => evaluate_at_seed(check, &results.at_seed(*seed)),
        seeds => {
            let each: Vec<(u64, Outcome)> =
                seeds.iter().map(|&seed| (seed, evaluate_at_seed(check, &results.at_seed(seed)))).collect();
            crate::seeds::combine(check, &each)
        }
    }
}

/// Evaluates `check` on one seed's results.
fn evaluate_at_seed(check: &Check, results: &Results) -> Outcome {
    for system in check.needs {
        let later = crate::system::by_name(system)
            .and_then(|s| s.not_yet())
            .or_else(|| crate::experiment::missing_feature(system));
        if let Some(why) = later {
            return Outcome {
                verdict: Verdict::NotYet,
                measured: format!("{system}: not yet: {why}"),
                value: None,
            };
        }
    }
    for system in check.needs {
        if let Some(skipped) = results.skipped(check.experiment, system) {
            if skipped.not_yet {
                return Outcome {
                    verdict: Verdict::NotYet,
                    measured: format!("{system}: {}", skipped.reason),
                    value: None,
                };
            }
        }
    }
    if results.run(check.experiment).is_none() {
        return Outcome {
            verdict: Verdict::NoData,
            measured: format!("run `fslab bench run {}`", check.experiment),
            value: None,
        };
    }
    for system in check.needs {
        if let Some(skipped) = results.skipped(check.experiment, system) {
            return Outcome {
                verdict: Verdict::NoData,
                measured: format!("{system}: {}", skipped.reason),
                value: None,
            };
        }
    }
    match (check.eval)(results) {
        Some((value, passes)) => Outcome {
            verdict: if passes { Verdict::Reproduced } else { Verdict::NotReproduced },
            measured: crate::seeds::show_check_value(check, &Spread::one(value)),
            value: Some(value),
        },
        None => Outcome {
            verdict: Verdict::NoData,
            measured: "a point it needs was not measured".into(),
            value: None,
        },
    }
}

/// A claim's evaluation.
#[derive(Debug, Clone, PartialEq)]
pub struct ClaimOutcome {
    /// Reproduced, not reproduced, not yet, or not run.
    pub verdict: Verdict,
    /// Reproduced as far as it can be evaluated, with checks not yet.
    pub partial: bool,
    /// "checks: 3 reproduced, 4 not yet", or why none can run.
    pub summary: String,
}

impl ClaimOutcome {
    /// The words the report uses for the claim.
    pub fn words(&self) -> String {
        if self.partial {
            "reproduced in part".into()
        } else {
            self.verdict.words().into()
        }
    }
}

/// A claim's verdict from its checks': not reproduced if any check is
/// not; reproduced if every check is, or every check that can run and
/// holds on every seed is (`partial`); unstable if its only evaluated
/// checks are; not yet if none can run.
pub fn claim_verdict(claim: &Claim, results: &Results) -> ClaimOutcome {
    if let Some(why) = claim.not_yet {
        return ClaimOutcome { verdict: Verdict::NotYet, partial: false, summary: why.to_string() };
    }
    let outcomes: Vec<Outcome> = claim.checks.iter().map(|c| evaluate(c, results)).collect();
    let count = |v: Verdict| outcomes.iter().filter(|o| o.verdict == v).count();
    let (ok, bad, unstable, later, none) = (
        count(Verdict::Reproduced),
        count(Verdict::NotReproduced),
        count(Verdict::Unstable),
        count(Verdict::NotYet),
        count(Verdict::NoData),
    );
    let mut parts = Vec::new();
    for (n, words) in [
        (ok, "reproduced"),
        (bad, "not reproduced"),
        (unstable, "unstable"),
        (later, "not yet"),
        (none, "not run"),
    ] {
        if n > 0 {
            parts.push(format!("{n} {words}"));
        }
    }
    let summary = format!("checks: {}", parts.join(", "));
    let (verdict, partial) = if bad > 0 {
        (Verdict::NotReproduced, false)
    } else if ok > 0 {
        (Verdict::Reproduced, unstable + later + none > 0)
    } else if unstable > 0 {
        (Verdict::Unstable, false)
    } else if later > 0 {
        (Verdict::NotYet, false)
    } else {
        (Verdict::NoData, false)
    };
    ClaimOutcome { verdict, partial, summary }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claims_are_numbered_one_to_twelve() {
        let numbers: Vec<u32> = CLAIMS.iter().map(|c| c.number).collect();
        assert_eq!(numbers, (1..=12).collect::<Vec<u32>>());
        for c in CLAIMS {
            assert!(c.not_yet.is_some() == c.checks.is_empty(), "claim {}", c.number);
        }
    }
}
