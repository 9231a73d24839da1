//! Tests of the report (`report.rs`): setup choices, the claims section,
//! ratio plots, published values and ranges on plots, pivoted points.

use super::*;
use crate::claims::setup::tests::creates_at_1k;

#[test]
fn points_no_plot_shows_are_pivoted_a_column_per_system() {
    // s95-aged plots MB/s and "x empty"; its utilisation is drawn by
    // no plot, so it goes to the pivoted table.
    let r = crate::claims::setup::tests::results(
        "s95-aged",
        &[
            ("ffs-aged", "aged", 0.0, "used %", 75.0),
            ("ffs-m7r0", "aged", 0.0, "used %", 1.5),
            ("ffs-aged", "fill", 10.0, "used %", 80.0),
        ],
    );
    let e = by_id("s95-aged").expect("s95-aged");
    let mut out = String::new();
    other_points(&mut out, &r, e);
    assert!(out.contains("used %:"), "{out}");
    assert!(out.contains("| phase | x | ffs-aged | ffs-m7r0 |"), "{out}");
    assert!(out.contains("| aged | - | 75.0 | 1.50 |"), "{out}");
    assert!(out.contains("| fill | 10.0 | 80.0 | - |"), "a system that did not measure a row: {out}");
    assert!(!out.contains("| system | phase | x | metric | value |"), "{out}");
}

#[test]
fn setup_choices_show_both_values_and_the_papers_sentence() {
    let claim = CLAIMS.iter().find(|c| c.number == 1).expect("claim 1");
    let mut out = String::new();
    setup_choices(&mut out, &creates_at_1k(), claim);
    let choice = &claim.setup[0];
    assert!(out.contains(&format!("\"{}\"", choice.quote)), "{out}");
    assert!(out.contains(choice.source) && out.contains(choice.alternative), "{out}");
    let row = out.lines().find(|l| l.starts_with("| LFS/FFS create ratio at 1 KB >= 8 |")).expect("its row");
    assert_eq!(
        row,
        "| LFS/FFS create ratio at 1 KB >= 8 | 13.00 x | **reproduced** | 7.00 x | **not reproduced** |"
    );
    let mut none = String::new();
    setup_choices(&mut none, &creates_at_1k(), CLAIMS.iter().find(|c| c.number == 5).expect("claim 5"));
    assert!(none.is_empty(), "a claim with no setup choices prints none: {none}");
}

#[test]
fn the_claims_section_prints_the_setup_choices_beside_the_scoreboard() {
    let mut out = String::new();
    claims_section(&mut out, &creates_at_1k(), true);
    let claim1 =
        out.split("### Claim 1").nth(1).and_then(|s| s.split("### Claim 2").next()).expect("claim 1");
    assert!(claim1.contains("| LFS/FFS create ratio at 1 KB >= 8 | s95-sequential | lfs, ffs-m8r0, ffs-m8r2 | 13.00 x | **reproduced** |"));
    assert!(claim1.contains("Setup choices"), "{claim1}");
    assert!(out.contains("| 1 | LFS creates"), "the scoreboard");
}

#[test]
fn claim_ones_ratio_plot_carries_the_ratio_the_papers_values_and_the_ranges() {
    let plot = RATIO_PLOTS.iter().find(|p| p.claim == 1).expect("claim 1's ratio plot");
    let c = ratio_chart(&creates_at_1k(), plot);
    assert_eq!(c.series.len(), 1);
    assert_eq!(c.series[0].points, vec![(1.0, 0.13 / 0.01)], "LFS over the faster FFS at 1 KB");
    assert!(c.paper.contains(&Paper { series: 0, x: 1.0, y: 10.0 }), "{:?}", c.paper);
    let at_1k = c.criteria.iter().find(|k| k.from == 1.0 && k.to == 1.0).expect("the 1 KB range");
    assert_eq!((at_1k.low, at_1k.high), (8.0, f64::INFINITY));
    let mut out = String::new();
    claims_section(&mut out, &creates_at_1k(), true);
    assert!(out.contains(&format!("![{}](plots/s95-create-ratio.png)", plot.title)), "{out}");
    assert!(!out.contains("s95-delete-ratio"), "no deletes measured, no plot: {out}");
}

#[test]
fn published_values_are_drawn_only_on_plots_that_have_them() {
    let r = crate::claims::setup::tests::results(
        "s95-sequential",
        &[
            ("lfs-8k", "create", 1048576.0, "MB/s", 1.5),
            ("lfs-8k", "create", 2097152.0, "MB/s", 1.6),
            ("lfs-8k", "overwrite", 2097152.0, "MB/s", 1.6),
        ],
    );
    let e = by_id("s95-sequential").expect("s95-sequential");
    let spec = |name: &str| *e.plots.iter().find(|p| p.name == name).expect("plot");
    let create = chart(&r, e.id, &spec("s95-create"));
    // 1995 §3.1's 67% of the disk, at the largest size measured.
    assert_eq!(create.paper, vec![Paper { series: 0, x: 2048.0, y: 0.67 * 2.5 }]);
    assert_eq!(create.criteria.len(), 2, "LFS's and FFS-m8r2's shares of the disk: {:?}", create.criteria);
    assert!(create.criteria.iter().all(|k| k.from == 1024.0 && k.to.is_infinite()));
    let overwrite = chart(&r, e.id, &spec("s95-overwrite"));
    assert!(overwrite.paper.is_empty() && overwrite.criteria.is_empty(), "{overwrite:?}");
}

#[test]
fn a_range_relative_to_a_measurement_scales_with_it() {
    let r = crate::claims::setup::tests::results(
        "s93-bandwidth",
        &[
            ("raw", "read", 65536.0, "MB/s", 1.0),
            ("raw", "read", 4194304.0, "MB/s", 1.4),
            ("lfs", "read", 4194304.0, "MB/s", 1.3),
        ],
    );
    let e = by_id("s93-bandwidth").expect("s93-bandwidth");
    let spec = e.plots.iter().find(|p| p.name == "s93-bandwidth-read").expect("plot");
    let c = chart(&r, e.id, spec);
    let k = c.criteria.first().expect("raw's range");
    assert!((k.low - 0.97 * 1.4).abs() < 1e-12 && (k.high - 1.03 * 1.4).abs() < 1e-12, "{k:?}");
    assert_eq!((k.from, k.to), (4096.0, 4096.0), "at the largest size");
}
