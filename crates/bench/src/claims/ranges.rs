//! The ranges claims' checks require of a plotted quantity, for the plots
//! to shade: each names the plot it belongs on and the check it comes
//! from, whose text states the same range (a test holds every entry to an
//! existing check). Only checks whose range is on a quantity some plot
//! draws are here; a check on a quantity no plot shows (a cleaner's loss,
//! a lattice's coefficient) has nothing to shade.

use super::s95::DSP3105_MBS;

/// What a range's bounds are multiples of.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scale {
    /// The bounds are values on the plot's axis.
    Absolute,
    /// Multiples of a (system, phase)'s value at its largest x: a check
    /// against another system's measurement ("within 3% of raw").
    LargestOf(&'static str, &'static str),
    /// Multiples of the mean of a (system, phase)'s values ("within 3% of
    /// the mean").
    MeanOf(&'static str, &'static str),
}

/// A range a check requires, on one plot.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Range {
    /// The plot's file name (a `PlotSpec`'s or a `RatioPlot`'s).
    pub plot: &'static str,
    /// The text of the check it comes from.
    pub check: &'static str,
    /// The least value that passes (`f64::NEG_INFINITY`: no floor).
    pub low: f64,
    /// The greatest (`f64::INFINITY`: no ceiling).
    pub high: f64,
    /// The least x (results' units, bytes for file sizes) it applies at;
    /// `f64::INFINITY` for the largest measured.
    pub from: f64,
    /// The greatest x; equal to `from` for a check at one x.
    pub to: f64,
    /// What `low` and `high` are multiples of.
    pub scale: Scale,
    /// Written on the plot.
    pub label: &'static str,
}

const MB: f64 = 1048576.0;
const KB: f64 = 1024.0;
const INF: f64 = f64::INFINITY;

/// A range of absolute values.
const fn absolute(
    plot: &'static str,
    check: &'static str,
    (low, high): (f64, f64),
    (from, to): (f64, f64),
    label: &'static str,
) -> Range {
    Range { plot, check, low, high, from, to, scale: Scale::Absolute, label }
}

/// Every shaded range.
pub const RANGES: &[Range] = &[
    // Claim 9, 1993 Fig. 9 and 12.
    absolute(
        "s93-bandwidth-write",
        "FFS write at the largest S in 0.45-0.6 MB/s",
        (0.45, 0.6),
        (INF, INF),
        "FFS 0.45-0.6",
    ),
    Range {
        plot: "s93-bandwidth-read",
        check: "LFS read within 3% of raw at the largest S (0.97-1.03 x)",
        low: 0.97,
        high: 1.03,
        from: INF,
        to: INF,
        scale: Scale::LargestOf("raw", "read"),
        label: "LFS, EFS: raw ±3%",
    },
    // Claim 4, 1995 Fig. 3 and 4.
    absolute(
        "s95-create",
        "LFS creates of files >= 1 MB at 60-75% of the 2.5 MB/s disk (~67%) at every size",
        (0.60 * DSP3105_MBS, 0.75 * DSP3105_MBS),
        (MB, INF),
        "LFS, FFS-m8r0: 60-75% of the disk",
    ),
    absolute(
        "s95-create",
        "FFS-m8r2 creates of files >= 1 MB at 68-82% of the disk (~75%, two thirds of a rotation lost \
               per 64 KB) at every size",
        (0.68 * DSP3105_MBS, 0.82 * DSP3105_MBS),
        (MB, INF),
        "FFS-m8r2: 68-82%",
    ),
    absolute(
        "s95-read",
        "LFS reads of the largest files >= 85% of the 2.3 MB/s bus",
        (0.85 * 2.3, INF),
        (INF, INF),
        "LFS ≥ 85% of bus",
    ),
    // Claim 3, 1995 Fig. 7 and §4's models.
    absolute(
        "s95-tpcb",
        "no-cleaning LFS at 48% within 15% of the model's 44 TPS",
        (0.85 * 44.0, 1.15 * 44.0),
        (48.0, 48.0),
        "LFS 44 ±15%",
    ),
    absolute(
        "s95-tpcb",
        "cleaning LFS at 48% within 15% of the model's 30.0 TPS",
        (0.85 * 30.0, 1.15 * 30.0),
        (48.0, 48.0),
        "LFS cleaning 30 ±15%",
    ),
    absolute(
        "s95-tpcb",
        "FFS within 15% of the model's 28.6 TPS",
        (0.85 * 28.6, 1.15 * 28.6),
        (48.0, 48.0),
        "FFS 28.6 ±15%",
    ),
    Range {
        plot: "s95-tpcb",
        check: "FFS flat: every utilization within 3% of the mean",
        low: 0.97,
        high: 1.03,
        from: 0.0,
        to: INF,
        scale: Scale::MeanOf("ffs-4k", "no-cleaning"),
        label: "FFS mean ±3%",
    },
    // Claim 5, 1997 Fig. 2: the scores at the end of aging.
    absolute(
        "ss97-aging",
        "layout score at the end of aging, realloc: >= 0.88 (paper 0.899, Fig. 2)",
        (0.88, INF),
        (INF, INF),
        "realloc ≥ 0.88",
    ),
    absolute(
        "ss97-aging",
        "layout score at the end of aging, original allocator: <= 0.80 (paper 0.766)",
        (f64::NEG_INFINITY, 0.80),
        (INF, INF),
        "original ≤ 0.80",
    ),
    // Claim 12, 1995 Fig. 8.
    absolute(
        "s95-aged",
        "most configurations (size x phase) at 80-100% of the empty FS's throughput (to 101%: a \
               few tenths of a percent above is no loss)",
        (0.80, 1.01),
        (0.0, INF),
        "most at 80-100% of empty",
    ),
    absolute("s95-aged", "1 MB files >= 85% of empty in both phases", (0.85, INF), (MB, MB), "1 MB ≥ 85%"),
    // Claim 1's ratios.
    absolute("s95-create-ratio", "LFS/FFS create ratio at 1 KB >= 8", (8.0, INF), (KB, KB), "≥ 8"),
    absolute(
        "s95-create-ratio",
        "LFS/FFS create ratio at 2 KB in 3-5",
        (3.0, 5.0),
        (2.0 * KB, 2.0 * KB),
        "3-5",
    ),
    absolute(
        "s95-create-ratio",
        "LFS/FFS create ratio at 32 KB in 1.5-2.5",
        (1.5, 2.5),
        (32.0 * KB, 32.0 * KB),
        "1.5-2.5",
    ),
    absolute(
        "s95-create-ratio",
        "LFS/FFS create ratio in 0.8-1.25 at every size >= 512 KB",
        (0.8, 1.25),
        (512.0 * KB, INF),
        "0.8-1.25",
    ),
    // Claim 2's.
    absolute(
        "s95-delete-ratio",
        "LFS/FFS delete ratio >= 8 at every size <= 64 KB",
        (8.0, INF),
        (0.0, 64.0 * KB),
        "≥ 8 up to 64 KB",
    ),
    absolute(
        "s95-delete-ratio",
        "LFS/FFS delete ratio in 2.5-4.5 at every size >= 1 MB",
        (2.5, 4.5),
        (MB, INF),
        "2.5-4.5 from 1 MB",
    ),
    // Claim 4's.
    absolute(
        "s95-large-ratio",
        "overwrite FFS-m8r2 / LFS in 1.10-1.20 at every size >= 1 MB",
        (1.10, 1.20),
        (MB, INF),
        "overwrite 1.10-1.20",
    ),
    absolute(
        "s95-large-ratio",
        "reads: LFS >= FFS-m8r2 at every size from 64 KB to 2 MB",
        (1.0, INF),
        (64.0 * KB, 2.0 * MB),
        "read ≥ 1",
    ),
];

/// The ranges shaded on `plot`.
pub fn on_plot(plot: &str) -> impl Iterator<Item = &'static Range> + '_ {
    RANGES.iter().filter(move |r| r.plot == plot)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claims::{CALIBRATED, CLAIMS};
    use crate::experiment::EXPERIMENTS;

    #[test]
    fn every_range_is_a_checks_on_a_plot_that_exists() {
        for r in RANGES {
            let check = CLAIMS.iter().flat_map(|c| c.checks).chain(CALIBRATED).find(|c| c.text == r.check);
            assert!(check.is_some(), "no check reads: {}", r.check);
            let plot = EXPERIMENTS.iter().flat_map(|e| e.plots).any(|p| p.name == r.plot)
                || crate::claims::RATIO_PLOTS.iter().any(|p| p.name == r.plot);
            assert!(plot, "no plot {}", r.plot);
            assert!(r.low < r.high && r.from <= r.to, "{r:?}");
        }
    }
}
