//! The setup choices a check's verdict depends on: where a paper leaves
//! the lab to choose (a block size, a partition's layout, what a cache
//! holds), the report evaluates each such check under the alternative as
//! well and prints both beside the paper's sentence that decided the
//! choice, so that a verdict cannot rest on a choice nobody sees. The
//! scoreboard counts the chosen setup only.
//!
//! The alternatives' points are measured by the same experiments, under
//! phase names of their own (`workload::tpcb::PARTITION_SIZED`,
//! `workload::sequential::INODES_LOADED`), or, for the block size, read
//! from the other LFS the experiment already runs.

use super::helpers::{v, within, worst_within};
use super::s95::{
    all_sizes_as, indirect_drop, large_creates, largest_read, lfs_over_ffs_as, other_lfs, overwrite_ratio,
    reads_ratio, sequential_lfs,
};
use super::{evaluate, Check, Outcome};
use crate::results::Results;
use crate::workload::sequential::INODES_LOADED;
use crate::workload::tpcb::PARTITION_SIZED;

/// A setup choice a claim's checks depend on.
#[derive(Debug, Clone, Copy)]
pub struct SetupChoice {
    /// What is chosen (a few words).
    pub name: &'static str,
    /// The setup the lab runs, which the scoreboard counts.
    pub chosen: &'static str,
    /// The setup it could have run instead.
    pub alternative: &'static str,
    /// Where the paper says what decided it.
    pub source: &'static str,
    /// The paper's words, quoted.
    pub quote: &'static str,
    /// The checks whose value the choice moves, each under the
    /// alternative.
    pub checks: &'static [Alternative],
}

/// One check evaluated under the alternative setup.
#[derive(Debug, Clone, Copy)]
pub struct Alternative {
    /// The check's text: one of the claim's checks.
    pub check: &'static str,
    /// The systems it needs under the alternative.
    pub needs: &'static [&'static str],
    /// Its value under the alternative, and whether that passes.
    pub eval: fn(&Results) -> Option<(f64, bool)>,
}

/// A check's outcomes under the chosen setup and the alternative.
#[derive(Debug, Clone, PartialEq)]
pub struct Compared {
    /// The check's text.
    pub check: &'static str,
    /// Under the chosen setup (what the scoreboard counts).
    pub chosen: Outcome,
    /// Under the alternative.
    pub alternative: Outcome,
}

/// Evaluates each of `choice`'s checks, found among `checks`, under the
/// chosen setup and the alternative, each over every seed as the
/// scoreboard's checks are. A check text that names none of `checks` is
/// skipped (the claims' tests make sure none does).
pub fn compare(choice: &SetupChoice, checks: &[Check], results: &Results) -> Vec<Compared> {
    choice
        .checks
        .iter()
        .filter_map(|alt| {
            let check = checks.iter().find(|c| c.text == alt.check)?;
            let other = Check { needs: alt.needs, eval: alt.eval, ..*check };
            Some(Compared {
                check: check.text,
                chosen: evaluate(check, results),
                alternative: evaluate(&other, results),
            })
        })
        .collect()
}

/// The 1995 sequential benchmark's LFS block size (claims 1, 2 and 4).
const BLOCK_SIZE: SetupChoice = SetupChoice {
    name: "LFS block size per file size",
    chosen: "lfs (4 KB blocks) for files below 8 KB, lfs-8k (8 KB blocks) from 8 KB up: fslab's LFS has no \
             fragments, and a 4 KB block is nearer the paper's 1-4 KB fragment",
    alternative: "the other way round: lfs-8k below 8 KB, lfs from 8 KB up",
    source: "1995 §4; §2",
    quote: "The benchmark configuration is identical to that described in Section 3, except that the file \
            systems are configured with a four-kilobyte block size to match the block size of the database \
            indexing structures. [§2:] Fragments have been added to LFS.",
    checks: &[],
};

/// Claim 1's setup choices.
pub(super) const CREATES: &[SetupChoice] = &[SetupChoice {
    checks: &[
        Alternative {
            check: "LFS/FFS create ratio at 1 KB >= 8",
            needs: &["lfs-8k", "ffs-m8r0", "ffs-m8r2"],
            eval: |r| lfs_over_ffs_as(r, other_lfs, "create", "MB/s", 1024.0).map(|x| (x, x >= 8.0)),
        },
        Alternative {
            check: "LFS/FFS create ratio at 2 KB in 3-5",
            needs: &["lfs-8k", "ffs-m8r0", "ffs-m8r2"],
            eval: |r| within(lfs_over_ffs_as(r, other_lfs, "create", "MB/s", 2048.0)?, 3.0, 5.0),
        },
        Alternative {
            check: "LFS/FFS create ratio at 32 KB in 1.5-2.5",
            needs: &["lfs", "ffs-m8r0", "ffs-m8r2"],
            eval: |r| within(lfs_over_ffs_as(r, other_lfs, "create", "MB/s", 32768.0)?, 1.5, 2.5),
        },
        Alternative {
            check: "LFS/FFS create ratio in 0.8-1.25 at every size >= 512 KB",
            needs: &["lfs", "ffs-m8r0", "ffs-m8r2"],
            eval: |r| all_sizes_as(r, other_lfs, "create", "MB/s", (524288.0, f64::INFINITY), (0.8, 1.25)),
        },
    ],
    ..BLOCK_SIZE
}];

/// The deletes' phase with the inodes loaded again after the drop.
fn loaded() -> String {
    format!("delete{INODES_LOADED}")
}

/// Claim 2's setup choices.
pub(super) const DELETES: &[SetupChoice] = &[
    SetupChoice {
        checks: &[
            Alternative {
                check: "LFS/FFS delete ratio >= 8 at every size <= 64 KB",
                needs: &["lfs", "lfs-8k", "ffs-m8r0", "ffs-m8r2"],
                eval: |r| all_sizes_as(r, other_lfs, "delete", "files/s", (0.0, 65536.0), (8.0, f64::INFINITY)),
            },
            Alternative {
                check: "LFS/FFS delete ratio in 2.5-4.5 at every size >= 1 MB",
                needs: &["lfs", "ffs-m8r0", "ffs-m8r2"],
                eval: |r| all_sizes_as(r, other_lfs, "delete", "files/s", (1048576.0, f64::INFINITY), (2.5, 4.5)),
            },
            Alternative {
                check: "LFS's delete rate drops more from 64 to 128 KB (first indirect block at 12 x 8 KB) than \
                        from 32 to 64 KB",
                needs: &["lfs"],
                eval: |r| indirect_drop(r, "lfs", "delete"),
            },
        ],
        ..BLOCK_SIZE
    },
    SetupChoice {
        name: "Caches before the deletes",
        chosen: "dropped (a remount), which empties the buffer cache and the inodes with it",
        alternative: "dropped, then every file opened and closed (untimed): the inodes a 4.4BSD vnode cache \
                      kept, whose size the paper does not give",
        source: "1995 §3.4",
        quote: "When a file exceeds its direct blocks, the indirect block must be retrieved from disk in order to \
                free blocks (in FFS) or mark them dead (in LFS).",
        checks: &[
            Alternative {
                check: "LFS/FFS delete ratio >= 8 at every size <= 64 KB",
                needs: &["lfs", "lfs-8k", "ffs-m8r0", "ffs-m8r2"],
                eval: |r| all_sizes_as(r, sequential_lfs, &loaded(), "files/s", (0.0, 65536.0), (8.0, f64::INFINITY)),
            },
            Alternative {
                check: "LFS/FFS delete ratio in 2.5-4.5 at every size >= 1 MB",
                needs: &["lfs-8k", "ffs-m8r0", "ffs-m8r2"],
                eval: |r| {
                    all_sizes_as(r, sequential_lfs, &loaded(), "files/s", (1048576.0, f64::INFINITY), (2.5, 4.5))
                },
            },
            Alternative {
                check: "LFS's delete rate drops more from 64 to 128 KB (first indirect block at 12 x 8 KB) than \
                        from 32 to 64 KB",
                needs: &["lfs-8k"],
                eval: |r| indirect_drop(r, "lfs-8k", &loaded()),
            },
        ],
    },
];

/// Claim 4's setup choices.
pub(super) const LARGE_FILES: &[SetupChoice] = &[SetupChoice {
    checks: &[
        Alternative {
            check: "overwrite FFS-m8r2 / LFS in 1.10-1.20 at every size >= 1 MB",
            needs: &["lfs", "ffs-m8r2"],
            eval: |r| overwrite_ratio(r, "lfs"),
        },
        Alternative {
            check: "reads: LFS >= FFS-m8r2 at every size from 64 KB to 2 MB",
            needs: &["lfs", "ffs-m8r2"],
            eval: |r| reads_ratio(r, "lfs"),
        },
        Alternative {
            check: "LFS reads of the largest files >= 85% of the 2.3 MB/s bus",
            needs: &["lfs"],
            eval: |r| largest_read(r, "lfs"),
        },
        Alternative {
            check: "LFS creates of files >= 1 MB at 60-75% of the 2.5 MB/s disk (~67%) at every size",
            needs: &["lfs"],
            eval: |r| large_creates(r, "lfs", 60.0, 75.0),
        },
    ],
    ..BLOCK_SIZE
}];

/// TPC-B's value of `system` in `phase` (under the alternative: its sized
/// partition's, except at 48%, where the two setups are one).
fn sized(r: &Results, e: &str, system: &str, phase: &str, x: f64) -> Option<f64> {
    if x == 48.0 {
        return v(r, e, system, phase, "TPS", x);
    }
    v(r, e, system, &format!("{phase}{PARTITION_SIZED}"), "TPS", x)
}

/// The cleaner's loss on the sized partitions (see `helpers::loss`).
fn sized_loss(r: &Results, e: &str, system: &str, with_x: f64, without_x: f64) -> Option<f64> {
    let without = sized(r, e, system, "no-cleaning", without_x)?;
    Some(100.0 * (1.0 - sized(r, e, system, "cleaning", with_x)? / without))
}

/// Claim 3's setup choices.
pub(super) const TPCB_95: &[SetupChoice] = &[SetupChoice {
    name: "TPC-B's partition",
    chosen: "one partition the database alone fills to 48%, other data written after it bringing it to each \
             higher utilization (the checks at 48% read the same setup under both)",
    alternative: "a partition sized for each utilization, the database alone filling it",
    source: "1995 §4; Table 3",
    quote: "The performance was measured on the lowest utilization (48%) and projected across all utilizations \
            since LFS will quickly run out of disk space if no cleaner is running. [...] With the exception of \
            the history file, every disk write in the benchmark merely overwrites an existing disk block, so \
            there is no allocation and the fullness of the disk is irrelevant. [Table 3:] we scaled the \
            benchmark database to allow experimentation with disk utilization.",
    checks: &[
        Alternative {
            check: "cleaner loss at 80% (against no-cleaning at 48%) in 37-45%",
            needs: &["lfs"],
            eval: |r| within(sized_loss(r, "s95-tpcb", "lfs", 80.0, 48.0)?, 37.0, 45.0),
        },
        Alternative {
            check: "FFS flat: every utilization within 3% of the mean",
            needs: &["ffs-4k"],
            eval: |r| {
                let xs: Vec<f64> = r.series("s95-tpcb", "ffs-4k", "no-cleaning", "TPS").iter().map(|p| p.0).collect();
                let s = xs.iter().map(|&x| sized(r, "s95-tpcb", "ffs-4k", "no-cleaning", x)).collect::<Option<Vec<f64>>>()?;
                if s.is_empty() {
                    return None;
                }
                let mean = s.iter().sum::<f64>() / s.len() as f64;
                let worst = s.iter().map(|t| (t / mean - 1.0).abs() * 100.0).fold(0.0, f64::max);
                Some((worst, worst <= 3.0))
            },
        },
    ],
}];

const S93: &str = "s93-tpcb";

/// The 1993 TPC-B's TPS at 80% on the sized partition.
fn at80(r: &Results, system: &str, phase: &str) -> Option<f64> {
    sized(r, S93, system, phase, 80.0)
}

/// Claim 10's setup choices.
pub(super) const TPCB_93: &[SetupChoice] = &[SetupChoice {
    name: "TPC-B's partition",
    chosen: "the 1995 runs' partition (the database alone 48%), other data bringing it to 80%",
    alternative: "a partition the database alone fills to 80%",
    source: "1993 §5.2.1; 1995 §4",
    quote: "For BSD-LFS, that means the cleaner is running and the disk partitions are 80% utilized, so that the \
            cleaner is forced to reclaim space. [1995 §4:] The disk was 80% full in the benchmark configuration. \
            In this section, we examine the performance of the same benchmark across a range of file system \
            utilizations",
    checks: &[
        Alternative {
            check: "ordering: LFS (no cleaning) > EFS > FFS, each by 2% or more (paper: 15%, 18%)",
            needs: &["lfs", "efs", "ffs"],
            eval: |r| {
                let (lfs, efs, ffs) =
                    (at80(r, "lfs", "no-cleaning")?, at80(r, "efs", "no-cleaning")?, at80(r, "ffs", "no-cleaning")?);
                Some((efs / ffs, lfs >= 1.02 * efs && efs >= 1.02 * ffs))
            },
        },
        Alternative {
            check: "cleaner loss with 1 MB segments in 30-45%",
            needs: &["lfs"],
            eval: |r| within(sized_loss(r, S93, "lfs", 80.0, 80.0)?, 30.0, 45.0),
        },
        Alternative {
            check: "with the cleaner, LFS (1 MB and 256 KB segments) below both FFS and EFS, by 2% or more \
                    (paper 11.6 and 12.4 against 14.2 and 16.8: \"the cleaner decreased performance by 40%\")",
            needs: &["lfs", "lfs-256k", "ffs", "efs"],
            eval: |r| {
                let cleaned = at80(r, "lfs", "cleaning")?.max(at80(r, "lfs-256k", "cleaning")?);
                let ratio = cleaned / at80(r, "ffs", "no-cleaning")?.min(at80(r, "efs", "no-cleaning")?);
                Some((ratio, 1.02 * ratio <= 1.0))
            },
        },
        Alternative {
            check: "every system's TPS within 25% of Table 7's (LFS 19.3, EFS 16.8, FFS 14.2; with the cleaner \
                    11.6 and 12.4)",
            needs: &["lfs", "lfs-256k", "ffs", "efs"],
            eval: |r| {
                let ratios = super::s93::S93_TPCB_PAPER
                    .iter()
                    .map(|&(s, phase, paper)| Some(at80(r, s, phase)? / paper))
                    .collect::<Option<Vec<f64>>>()?;
                worst_within(&ratios, 0.75, 1.25)
            },
        },
        Alternative {
            check: "with the cleaner, 256 KB segments / 1 MB segments in 1.00-1.15",
            needs: &["lfs", "lfs-256k"],
            eval: |r| within(at80(r, "lfs-256k", "cleaning")? / at80(r, "lfs", "cleaning")?, 1.0, 1.15),
        },
    ],
}];

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::claims::{Verdict, CLAIMS};
    use crate::results::{Point, RunInfo};

    /// Results of `experiment` (seed 1) holding `points`: (system, phase,
    /// x, metric, value).
    pub(crate) fn results(experiment: &str, points: &[(&str, &str, f64, &str, f64)]) -> Results {
        let mut r = Results::default();
        r.runs.push(RunInfo::uncharged(experiment, "dsp3105", 1));
        for &(system, phase, x, metric, value) in points {
            r.points.push(Point {
                experiment: experiment.into(),
                seed: 1,
                system: system.into(),
                phase: phase.into(),
                x,
                metric: metric.into(),
                value,
            });
        }
        r
    }

    /// Creates at 1 KB where `lfs` is 13x the faster FFS and `lfs-8k` 7x.
    pub(crate) fn creates_at_1k() -> Results {
        results(
            "s95-sequential",
            &[
                ("ffs-m8r0", "create", 1024.0, "MB/s", 0.01),
                ("ffs-m8r2", "create", 1024.0, "MB/s", 0.009),
                ("lfs", "create", 1024.0, "MB/s", 0.13),
                ("lfs-8k", "create", 1024.0, "MB/s", 0.07),
            ],
        )
    }

    #[test]
    fn every_alternative_is_one_of_its_claims_checks() {
        for claim in CLAIMS {
            for choice in claim.setup {
                assert!(!choice.checks.is_empty() && !choice.quote.is_empty(), "claim {}", claim.number);
                for alt in choice.checks {
                    let check = claim.checks.iter().find(|c| c.text == alt.check);
                    assert!(check.is_some(), "claim {}: no check {:?}", claim.number, alt.check);
                }
                let rows = compare(choice, claim.checks, &Results::default());
                assert_eq!(rows.len(), choice.checks.len(), "claim {}", claim.number);
            }
        }
    }

    #[test]
    fn the_alternative_gets_a_verdict_of_its_own() {
        let rows = compare(&CREATES[0], super::super::s95::CREATE_CHECKS, &creates_at_1k());
        let row =
            rows.iter().find(|r| r.check == "LFS/FFS create ratio at 1 KB >= 8").expect("the 1 KB check");
        assert_eq!(row.chosen.verdict, Verdict::Reproduced);
        assert_eq!(row.chosen.value.map(|v| (v * 100.0).round()), Some(1300.0));
        assert_eq!(row.alternative.verdict, Verdict::NotReproduced);
        assert_eq!(row.alternative.value.map(|v| (v * 100.0).round()), Some(700.0));
        let two_k = rows.iter().find(|r| r.check.contains("at 2 KB")).expect("the 2 KB check");
        assert_eq!((two_k.chosen.verdict, two_k.alternative.verdict), (Verdict::NoData, Verdict::NoData));
    }

    #[test]
    fn the_sized_partition_is_read_from_its_own_phases_and_48_percent_is_shared() {
        let r = results(
            "s95-tpcb",
            &[
                ("lfs", "no-cleaning", 48.0, "TPS", 50.0),
                ("lfs", "cleaning", 80.0, "TPS", 30.0),
                ("lfs", "cleaning (partition sized)", 80.0, "TPS", 20.0),
            ],
        );
        let rows = compare(&TPCB_95[0], super::super::s95::TPCB_CHECKS, &r);
        let loss = rows.iter().find(|r| r.check.starts_with("cleaner loss at 80%")).expect("the 80% check");
        assert_eq!((loss.chosen.value, loss.chosen.verdict), (Some(40.0), Verdict::Reproduced));
        assert_eq!((loss.alternative.value, loss.alternative.verdict), (Some(60.0), Verdict::NotReproduced));
    }
}
