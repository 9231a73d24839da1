//! The checks of claims 9 and 10, the 1993 paper's (Seltzer et al., "An
//! Implementation of a Log-Structured File System for UNIX"): the
//! bandwidth test of `s93-bandwidth` and the TPC-B of `s93-tpcb`.

use super::helpers::{last, loss, v, within, worst_within};
use super::Check;
use crate::results::Results;

/// The 1993 bandwidth test at its largest transfer size: `a`'s MB/s over
/// `b`'s in `phase`.
fn s93_largest_over(r: &Results, a: &str, b: &str, phase: &str) -> Option<f64> {
    let (x, va) = last(r, "s93-bandwidth", a, phase, "MB/s")?;
    Some(va / v(r, "s93-bandwidth", b, phase, "MB/s", x)?)
}

/// Table 7's TPS for each of the 1993 TPC-B's systems and phases.
pub(super) const S93_TPCB_PAPER: &[(&str, &str, f64)] = &[
    ("lfs", "no-cleaning", 19.3),
    ("efs", "no-cleaning", 16.8),
    ("ffs", "no-cleaning", 14.2),
    ("lfs", "cleaning", 11.6),
    ("lfs-256k", "cleaning", 12.4),
];

/// Why the 1993 read bandwidth passes raw (see `docs/lab/analysis.md`).
const S93_RAW_READ_WHY: &str = "The lab's raw device reads synchronously in 64 KB transfers, each copied after it \
     arrives, with no read-ahead: 1.38 MB/s at 4 MB, below the 1.6 MB/s bus. LFS and EFS read ahead, so their \
     transfers overlap the copies and pass raw. The paper's raw partition came within 3% of both; how it read \
     (transfer size, whether the driver overlapped) it does not say";

/// Why the 1993 TPC-B runs about twice the paper's rates, and its cleaned
/// LFS above FFS (see `docs/lab/analysis.md`).
const S93_TPCB_WHY: &str = "The lab charges the HP 9000/380's file-system CPU but none for the database: every \
     system runs 1.5-2.3 times Table 7's rate (LFS without the cleaner 23.9 ms a transaction, the paper's 51.8). The \
     cleaner costs 13.4 ms a transaction (one 1 MB segment per 100 transactions) where the paper's cost 34.4 ms (one \
     per 50), so cleaned LFS stays above FFS (26.8 against 24.6 TPS); with 27.9 ms more per transaction on every \
     system, which brings LFS without the cleaner to 19.3, it would still be (15.3 against 14.6)";

/// Claim 9's checks: sequential bandwidth against the raw disk.
pub(super) const BANDWIDTH_CHECKS: &[Check] = &[
    Check {
        text: "FFS write at the largest S in 0.45-0.6 MB/s",
        experiment: "s93-bandwidth",
        needs: &["ffs"],
        eval: |r| within(last(r, "s93-bandwidth", "ffs", "write", "MB/s")?.1, 0.45, 0.6),
        unit: "MB/s",
        why_not: "",
    },
    Check {
        text: "LFS read within 3% of raw at the largest S (0.97-1.03 x)",
        experiment: "s93-bandwidth",
        needs: &["lfs", "raw"],
        eval: |r| within(s93_largest_over(r, "lfs", "raw", "read")?, 0.97, 1.03),
        unit: "x raw",
        why_not: S93_RAW_READ_WHY,
    },
    Check {
        text: "EFS read within 3% of raw at the largest S (0.97-1.03 x)",
        experiment: "s93-bandwidth",
        needs: &["efs", "raw"],
        eval: |r| within(s93_largest_over(r, "efs", "raw", "read")?, 0.97, 1.03),
        unit: "x raw",
        why_not: S93_RAW_READ_WHY,
    },
    Check {
        text: "LFS write noticeably below both EFS and raw, by 10% or more, at every S (Fig. 9, §5.2.1: \
               \"noticeably worse than either\", its fsync after buffering about 800 KB)",
        experiment: "s93-bandwidth",
        needs: &["lfs", "efs", "raw"],
        eval: |r| {
            let ratios: Vec<f64> = r
                .series("s93-bandwidth", "lfs", "write", "MB/s")
                .into_iter()
                .filter_map(|(x, lfs)| {
                    let efs = v(r, "s93-bandwidth", "efs", "write", "MB/s", x)?;
                    let raw = v(r, "s93-bandwidth", "raw", "write", "MB/s", x)?;
                    Some(lfs / efs.min(raw))
                })
                .collect();
            let worst = ratios.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            (!ratios.is_empty()).then_some((worst, worst <= 0.9))
        },
        unit: "x the slower of EFS and raw (worst)",
        why_not: "LFS writes below both only at 64 and 256 KB, and by 3-7%; above raw from 1 MB up and \
                  above EFS too at 4 MB (1.36 MB/s against 1.29 and 1.10); above EFS at 4 and 16 KB, where \
                  an fsync costs LFS one write (data, inode and summary in one partial segment) and EFS two, \
                  a seek apart. At 4 MB LFS's 3,490 requests take 44 ms each, EFS's 3,304 take 49 ms and \
                  raw's 3,200 take 60 ms (each waits for its copy). The paper puts its LFS's deficit down to \
                  the fsync after about 800 KB buffered; the lab's LFS also writes at its threshold, and why \
                  its requests run faster than EFS's is not established",
    },
    Check {
        text: "EFS write >= raw at the largest S",
        experiment: "s93-bandwidth",
        needs: &["efs", "raw"],
        eval: |r| {
            let ratio = s93_largest_over(r, "efs", "raw", "write")?;
            Some((ratio, ratio >= 1.0))
        },
        unit: "x raw",
        why_not: "",
    },
];

/// Claim 10's checks: the 1993 TPC-B's ordering and cleaner cost.
pub(super) const TPCB_CHECKS: &[Check] = &[
    Check {
        text: "ordering: LFS (no cleaning) > EFS > FFS, each by 2% or more (paper: 15%, 18%)",
        experiment: "s93-tpcb",
        needs: &["lfs", "efs", "ffs"],
        eval: |r| {
            let lfs = v(r, "s93-tpcb", "lfs", "no-cleaning", "TPS", 80.0)?;
            let efs = v(r, "s93-tpcb", "efs", "no-cleaning", "TPS", 80.0)?;
            let ffs = v(r, "s93-tpcb", "ffs", "no-cleaning", "TPS", 80.0)?;
            // A deterministic run has no noise, but a lead of a
            // fraction of a percent is a tie, not an ordering.
            Some((efs / ffs, lfs >= 1.02 * efs && efs >= 1.02 * ffs))
        },
        unit: "x (EFS/FFS)",
        why_not: "EFS and FFS tie: each transaction is one random 4 KB read and one random 4 KB write on \
                  both, which clustering cannot combine, and 4.4BSD's FFS read ahead only on sequential \
                  access. The paper does not say what gave its EFS the lead.",
    },
    Check {
        text: "cleaner loss with 1 MB segments in 30-45%",
        experiment: "s93-tpcb",
        needs: &["lfs"],
        eval: |r| within(loss(r, "s93-tpcb", "lfs", 80.0, 80.0)?, 30.0, 45.0),
        unit: "%",
        why_not: "",
    },
    Check {
        text:
            "with the cleaner, LFS (1 MB and 256 KB segments) below both FFS and EFS, by 2% or more (paper \
               11.6 and 12.4 against 14.2 and 16.8: \"the cleaner decreased performance by 40%\")",
        experiment: "s93-tpcb",
        needs: &["lfs", "lfs-256k", "ffs", "efs"],
        eval: |r| {
            let at = |s: &str, phase: &str| v(r, "s93-tpcb", s, phase, "TPS", 80.0);
            let cleaned = at("lfs", "cleaning")?.max(at("lfs-256k", "cleaning")?);
            let update_in_place = at("ffs", "no-cleaning")?.min(at("efs", "no-cleaning")?);
            let ratio = cleaned / update_in_place;
            Some((ratio, 1.02 * ratio <= 1.0))
        },
        unit: "x (faster cleaned LFS / slower of FFS and EFS)",
        why_not: S93_TPCB_WHY,
    },
    Check {
        text: "every system's TPS within 25% of Table 7's (LFS 19.3, EFS 16.8, FFS 14.2; with the cleaner \
               11.6 and 12.4)",
        experiment: "s93-tpcb",
        needs: &["lfs", "lfs-256k", "ffs", "efs"],
        eval: |r| {
            let ratios = S93_TPCB_PAPER
                .iter()
                .map(|&(s, phase, paper)| Some(v(r, "s93-tpcb", s, phase, "TPS", 80.0)? / paper))
                .collect::<Option<Vec<f64>>>()?;
            worst_within(&ratios, 0.75, 1.25)
        },
        unit: "x the paper (farthest)",
        why_not: S93_TPCB_WHY,
    },
    Check {
        text: "with the cleaner, 256 KB segments / 1 MB segments in 1.00-1.15",
        experiment: "s93-tpcb",
        needs: &["lfs", "lfs-256k"],
        eval: |r| {
            let small = v(r, "s93-tpcb", "lfs-256k", "cleaning", "TPS", 80.0)?;
            within(small / v(r, "s93-tpcb", "lfs", "cleaning", "TPS", 80.0)?, 1.0, 1.15)
        },
        unit: "x",
        why_not: "",
    },
];
