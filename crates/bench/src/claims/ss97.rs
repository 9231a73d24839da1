//! The checks of claim 5, the 1997 paper's (Smith and Seltzer, "File
//! System Aging"): the layout scores and hot files of `ss97-realloc`.

use super::helpers::{last, v, within};
use super::Check;

/// Claim 5's checks: realloc's layout under aging, and hot files.
pub(super) const REALLOC_CHECKS: &[Check] = &[
    Check {
        text: "layout score at the end of aging, realloc: >= 0.88 (paper 0.899, Fig. 2)",
        experiment: "ss97-realloc",
        needs: &["ffs97-realloc"],
        eval: |r| {
            let (_, end) = last(r, "ss97-realloc", "ffs97-realloc", "aging", "score")?;
            Some((end, end >= 0.88))
        },
        unit: "",
        why_not: "",
    },
    Check {
        text: "layout score at the end of aging, original allocator: <= 0.80 (paper 0.766)",
        experiment: "ss97-realloc",
        needs: &["ffs97"],
        eval: |r| {
            let (_, end) = last(r, "ss97-realloc", "ffs97", "aging", "score")?;
            Some((end, end <= 0.80))
        },
        unit: "",
        why_not: "",
    },
    Check {
        text: "realloc's lead in layout score at the end: >= 0.10 (paper 0.133)",
        experiment: "ss97-realloc",
        needs: &["ffs97", "ffs97-realloc"],
        eval: |r| {
            let (_, with) = last(r, "ss97-realloc", "ffs97-realloc", "aging", "score")?;
            let (_, without) = last(r, "ss97-realloc", "ffs97", "aging", "score")?;
            Some((with - without, with - without >= 0.10))
        },
        unit: "",
        why_not: "",
    },
    Check {
        text: "hot files read (Table 2): realloc's throughput over the original's, +20% to +40% (paper \
               +32%)",
        experiment: "ss97-realloc",
        needs: &["ffs97", "ffs97-realloc"],
        eval: |r| {
            let with = v(r, "ss97-realloc", "ffs97-realloc", "hot-read", "MB/s", 0.0)?;
            let without = v(r, "ss97-realloc", "ffs97", "hot-read", "MB/s", 0.0)?;
            within(100.0 * (with / without - 1.0), 20.0, 40.0)
        },
        unit: "%",
        why_not: "",
    },
    Check {
        text: "hot files rewritten in place (Table 2): realloc's throughput over the original's, +10% to \
               +30% (paper +20%)",
        experiment: "ss97-realloc",
        needs: &["ffs97", "ffs97-realloc"],
        eval: |r| {
            let with = v(r, "ss97-realloc", "ffs97-realloc", "hot-write", "MB/s", 0.0)?;
            let without = v(r, "ss97-realloc", "ffs97", "hot-write", "MB/s", 0.0)?;
            within(100.0 * (with / without - 1.0), 10.0, 30.0)
        },
        unit: "%",
        why_not: "",
    },
];
