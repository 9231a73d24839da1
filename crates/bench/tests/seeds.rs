//! Verdicts over several seeds: a check holds only where every seed
//! agrees, the report shows each value's spread, and the plots a band.

use fslab_bench::claims::{claim_verdict, evaluate, Check, Verdict, CLAIMS};
use fslab_bench::report;
use fslab_bench::results::{Point, Results, RunInfo};

fn point(seed: u64, phase: &str, x: f64, value: f64) -> Point {
    Point {
        experiment: "s95-tpcb".into(),
        seed,
        system: "lfs".into(),
        phase: phase.into(),
        x,
        metric: "TPS".into(),
        value,
    }
}

fn run_info(seed: u64) -> RunInfo {
    RunInfo {
        cpu_model: "sparcstation2".into(),
        cpu_charges: fslab_bench::cpu::Charges::On,
        host_seconds: 1.0,
        ..RunInfo::uncharged("s95-tpcb", "dsp3105", seed)
    }
}

/// TPC-B on one seed per loss at 48% utilization (in percent): LFS at 50
/// TPS without the cleaner, and at 50 × (1 − loss) with it.
fn tpcb(losses: &[f64]) -> Results {
    let mut r = Results::default();
    for (i, loss) in losses.iter().enumerate() {
        let seed = i as u64 + 1;
        r.runs.push(run_info(seed));
        r.points.push(point(seed, "no-cleaning", 48.0, 50.0));
        r.points.push(point(seed, "cleaning", 48.0, 50.0 * (1.0 - loss / 100.0)));
    }
    r
}

/// Claim 3's check of the cleaner's loss at 48%, which must lie in 30-38%.
fn loss_at_48() -> &'static Check {
    CLAIMS
        .iter()
        .flat_map(|c| c.checks)
        .find(|k| k.text.starts_with("cleaner loss at 48%"))
        .expect("claim 3's check")
}

#[test]
fn a_check_that_crosses_its_threshold_on_one_seed_of_three_is_unstable() {
    let o = evaluate(loss_at_48(), &tpcb(&[34.0, 36.0, 40.0]));
    assert_eq!(o.verdict, Verdict::Unstable, "{o:?}");
    assert_eq!(o.measured, "36.00 (34.00–40.00) %; not reproduced on seed 3");
    let claim = claim_verdict(&CLAIMS[2], &tpcb(&[34.0, 36.0, 40.0]));
    assert!(claim.summary.contains("1 unstable"), "counted apart: {claim:?}");
    assert!(claim.verdict == Verdict::Reproduced && claim.partial, "reproduced in part: {claim:?}");
}

#[test]
fn a_check_on_which_every_seed_agrees_keeps_that_verdict() {
    let inside = evaluate(loss_at_48(), &tpcb(&[31.0, 37.0, 34.0]));
    assert_eq!(inside.verdict, Verdict::Reproduced, "{inside:?}");
    assert_eq!(inside.measured, "34.00 (31.00–37.00) %", "median and range, in any seed order");
    let outside = evaluate(loss_at_48(), &tpcb(&[40.0, 28.0, 45.0, 39.0]));
    assert_eq!(outside.verdict, Verdict::NotReproduced, "{outside:?}");
    assert_eq!(outside.measured, "39.50 (28.00–45.00) %", "the median of four is the mean of the middle two");
    let one = evaluate(loss_at_48(), &tpcb(&[34.0]));
    assert_eq!((one.verdict, one.measured.as_str()), (Verdict::Reproduced, "34.00 %"), "one seed as before");
}

#[test]
fn a_seed_without_a_point_leaves_the_check_not_run_and_says_which() {
    let mut r = tpcb(&[34.0, 35.0, 36.0]);
    r.points.retain(|p| !(p.seed == 2 && p.phase == "cleaning"));
    let o = evaluate(loss_at_48(), &r);
    assert_eq!(o.verdict, Verdict::NoData, "{o:?}");
    assert!(o.measured.starts_with("seed 2: "), "{}", o.measured);
}

#[test]
fn the_report_shows_spreads_and_says_what_unstable_means_only_with_several_seeds() {
    let md = report::markdown(&tpcb(&[34.0, 36.0, 40.0]), false);
    assert!(
        md.contains("| 36.00 (34.00–40.00) %; not reproduced on seed 3 | **unstable** |"),
        "{}",
        md.lines().find(|l| l.contains("cleaner loss at 48%")).unwrap_or_default()
    );
    assert!(md.contains("it is **unstable**"), "the header says what unstable means");
    assert!(md.contains("seeds 1–3; 3 s of host time"), "every run's host time");
    assert!(md.contains("| lfs | cleaning | TPS | 30.0 | 32.0 (30.0–33.0) |"), "published beside the spread");
    let single = report::markdown(&tpcb(&[34.0]), false);
    assert!(!single.contains("nstable") && single.contains("seed 1; 1 s"), "one seed reads as before");
}

#[test]
fn plots_of_several_seeds_draw_the_median_over_a_band() {
    let dir = tempfile::tempdir().expect("tempdir");
    report::write(&tpcb(&[34.0, 36.0, 40.0]), dir.path()).expect("write");
    let svg = std::fs::read_to_string(dir.path().join("plots/s95-tpcb.svg")).expect("svg");
    // Seed bands are the polygons at a band's opacity: markers and the
    // claims' ranges are polygons too.
    let bands = |svg: &str| svg.matches("fill-opacity=\"0.18\"").count();
    assert_eq!(bands(&svg), 0, "one x per series: no band to draw yet");
    let mut wide = tpcb(&[34.0, 36.0, 40.0]);
    for seed in 1..=3 {
        wide.points.push(point(seed, "no-cleaning", 80.0, 40.0 + seed as f64));
    }
    report::write(&wide, dir.path()).expect("write");
    let svg = std::fs::read_to_string(dir.path().join("plots/s95-tpcb.svg")).expect("svg");
    assert_eq!(bands(&svg), 1, "a band for the series measured at two x");
    let chart =
        report::chart(&wide, "s95-tpcb", &fslab_bench::experiment::by_id("s95-tpcb").expect("tpcb").plots[0]);
    let no_cleaning = chart.series.iter().find(|s| s.label.contains("no-cleaning")).expect("series");
    assert_eq!(no_cleaning.points, vec![(48.0, 50.0), (80.0, 42.0)], "the medians");
    assert_eq!(no_cleaning.band, vec![(48.0, 50.0, 50.0), (80.0, 41.0, 43.0)], "least and greatest");
    let single = report::chart(
        &tpcb(&[34.0]),
        "s95-tpcb",
        &fslab_bench::experiment::by_id("s95-tpcb").expect("tpcb").plots[0],
    );
    assert!(single.series.iter().all(|s| s.band.is_empty()), "one seed: no band");
}
