//! The report: `report.md` beside `results.json`, with every claim's
//! verdict, every experiment's data, the paper's numbers beside the
//! measured ones, and the plots (`plots/NAME.svg` and `.png`). Where an
//! experiment ran with several seeds, every value is the median with its
//! range over the seeds, and every plot a median over a band.

use crate::claims::ranges::{self, Scale};
use crate::claims::{
    claim_verdict, compare, evaluate, Check, Claim, Outcome, RatioPlot, Verdict, CALIBRATED, CLAIMS,
    RATIO_PLOTS,
};
use crate::cpu::Charges;
use crate::experiment::{by_id, Experiment, PlotSpec, EXPERIMENTS};
use crate::plot::{self, Chart, Criterion, Paper, Series};
use crate::results::Results;
use crate::seeds::{seed_list, BySeed, Spread};
use std::fmt::Write as _;
use std::io;
use std::path::Path;

/// What writing a report produced.
#[derive(Debug, Default)]
pub struct Written {
    /// Plot files written (SVG and PNG).
    pub plots: Vec<String>,
    /// Why PNG files are missing, if they are.
    pub png_problem: Option<String>,
}

/// The chart of `spec` from `results`: over several seeds, each series
/// the median with the seeds' range as its band; with the paper's values
/// for its series (the experiment's [`crate::experiment::Published`] numbers of the plotted
/// metric) and the claims' ranges on it (`claims::ranges`).
pub fn chart(results: &Results, experiment: &str, spec: &PlotSpec) -> Chart {
    let by_seed = BySeed::new(results, experiment);
    let band = |x: f64, s: &Spread| by_seed.several().then_some((x, s.min, s.max));
    let systems = results.systems(experiment);
    let categories =
        (spec.x_label == "phase").then(|| spec.phases.iter().map(|p| p.to_string()).collect::<Vec<_>>());
    let mut series = Vec::new();
    // The (system, phase) of each series, to find the paper's values'
    // series by; a bar chart's series are systems, over every phase.
    let mut keys: Vec<(String, &str)> = Vec::new();
    for system in &systems {
        if categories.is_some() {
            let spreads: Vec<(f64, Spread)> = spec
                .phases
                .iter()
                .enumerate()
                .filter_map(|(i, phase)| {
                    by_seed.series(experiment, system, phase, spec.metric).first().map(|p| (i as f64, p.1))
                })
                .collect();
            if !spreads.is_empty() {
                let points = spreads.iter().map(|(x, s)| (*x, s.median)).collect();
                let band = spreads.iter().filter_map(|(x, s)| band(*x, s)).collect();
                series.push(Series { label: system.clone(), points, band });
                keys.push((system.clone(), ""));
            }
            continue;
        }
        for phase in spec.phases {
            let spreads: Vec<(f64, Spread)> = by_seed
                .series(experiment, system, phase, spec.metric)
                .into_iter()
                .map(|(x, s)| (x / spec.x_unit, s))
                .collect();
            if spreads.is_empty() {
                continue;
            }
            let points = spreads.iter().map(|(x, s)| (*x, s.median)).collect();
            let band = spreads.iter().filter_map(|(x, s)| band(*x, s)).collect();
            let label = if spec.phases.len() > 1 { format!("{system} {phase}") } else { system.clone() };
            series.push(Series { label, points, band });
            keys.push((system.clone(), phase));
        }
    }
    let published = by_id(experiment).map_or(&[][..], |e| e.published);
    let mut paper = Vec::new();
    for p in published.iter().filter(|p| p.metric == spec.metric && spec.phases.contains(&p.phase)) {
        let phase = if categories.is_some() { "" } else { p.phase };
        let Some(i) = keys.iter().position(|(s, ph)| s == p.system && *ph == phase) else {
            continue;
        };
        let x = if categories.is_some() {
            spec.phases.iter().position(|ph| *ph == p.phase).map(|k| k as f64)
        } else if p.x.is_infinite() {
            series[i].points.last().map(|q| q.0)
        } else {
            Some(p.x / spec.x_unit)
        };
        if let Some(x) = x {
            paper.push(Paper { series: i, x, y: p.value });
        }
    }
    let criteria = criteria(&by_seed, experiment, spec.name, spec.metric, spec.x_unit, &series);
    Chart {
        title: spec.title.into(),
        x_label: spec.x_label.into(),
        y_label: spec.y_label.into(),
        log_x: spec.log_x,
        categories,
        series,
        paper,
        criteria,
    }
}

/// The ranges `claims::ranges` gives for `plot`, in the plot's units: a
/// range at "the largest x" at the largest x drawn, a range relative to a
/// measurement scaled by its median over the seeds. A range whose
/// measurement is missing is left out.
fn criteria(
    by_seed: &BySeed,
    experiment: &str,
    plot: &str,
    metric: &str,
    x_unit: f64,
    series: &[Series],
) -> Vec<Criterion> {
    let largest = series.iter().flat_map(|s| s.points.iter().map(|p| p.0)).fold(f64::NEG_INFINITY, f64::max);
    let mut out = Vec::new();
    for r in ranges::on_plot(plot) {
        let scale = match r.scale {
            Scale::Absolute => Some(1.0),
            Scale::LargestOf(system, phase) => {
                by_seed.series(experiment, system, phase, metric).last().map(|p| p.1.median)
            }
            Scale::MeanOf(system, phase) => {
                let s = by_seed.series(experiment, system, phase, metric);
                (!s.is_empty()).then(|| s.iter().map(|p| p.1.median).sum::<f64>() / s.len() as f64)
            }
        };
        let Some(scale) = scale.filter(|s| s.is_finite()) else {
            continue;
        };
        let (from, to) = if r.from.is_infinite() {
            if !largest.is_finite() {
                continue;
            }
            (largest, largest)
        } else {
            (r.from / x_unit, if r.to.is_infinite() { r.to } else { r.to / x_unit })
        };
        out.push(Criterion {
            low: r.low * scale,
            high: r.high * scale,
            from,
            to,
            label: r.label.to_string(),
        });
    }
    out
}

/// The chart of a claim's ratio `plot`: each ratio at each size the
/// checks read, over several seeds the median with its range as a band;
/// the paper's ratios and the checks' ranges over and under it.
pub fn ratio_chart(results: &Results, plot: &RatioPlot) -> Chart {
    let by_seed = BySeed::new(results, plot.experiment);
    let mut series = Vec::new();
    for ratio in plot.ratios {
        let spreads: Vec<(f64, Spread)> = (ratio.sizes)(results)
            .into_iter()
            .filter_map(|x| Some((x / KB, by_seed.spread(|r| (ratio.at)(r, x))?)))
            .filter(|(_, s)| s.median.is_finite())
            .collect();
        if spreads.is_empty() {
            continue;
        }
        let points = spreads.iter().map(|(x, s)| (*x, s.median)).collect();
        let band = if by_seed.several() {
            spreads.iter().map(|(x, s)| (*x, s.min, s.max)).collect()
        } else {
            vec![]
        };
        series.push(Series { label: ratio.label.to_string(), points, band });
    }
    let paper = plot
        .paper
        .iter()
        .filter_map(|p| {
            let i = series.iter().position(|s| s.label == p.system)?;
            Some(Paper { series: i, x: p.x / KB, y: p.value })
        })
        .collect();
    let criteria = criteria(&by_seed, plot.experiment, plot.name, "", KB, &series);
    Chart {
        title: plot.title.into(),
        x_label: "File size (KB, log scale)".into(),
        y_label: plot.y_label.into(),
        log_x: true,
        categories: None,
        series,
        paper,
        criteria,
    }
}

/// The file sizes of the ratio plots are in KB.
const KB: f64 = 1024.0;

fn fmt_value(v: f64) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    let a = v.abs();
    if a >= 1000.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

fn fmt_x(x: f64, spec: Option<&PlotSpec>) -> String {
    match spec {
        Some(s) if s.x_unit == 1024.0 => {
            let kb = x / 1024.0;
            if kb >= 1024.0 {
                format!("{} MB", kb / 1024.0)
            } else {
                format!("{kb} KB")
            }
        }
        _ => fmt_value(x),
    }
}

/// A value in a table: over several seeds the median and the range.
fn fmt_spread(spread: Option<Spread>) -> String {
    spread.map_or("-".into(), |s| s.show(fmt_value))
}

/// The table of one plot's data: a row per x, a column per series.
fn plot_table(out: &mut String, results: &Results, e: &Experiment, spec: &PlotSpec) {
    let by_seed = BySeed::new(results, e.id);
    let systems = results.systems(e.id);
    let mut columns: Vec<(String, String)> = Vec::new();
    for s in &systems {
        for p in spec.phases {
            if !results.series(e.id, s, p, spec.metric).is_empty() {
                columns.push((s.clone(), p.to_string()));
            }
        }
    }
    if columns.is_empty() {
        return;
    }
    let mut xs: Vec<f64> =
        columns.iter().flat_map(|(s, p)| results.series(e.id, s, p, spec.metric)).map(|(x, _)| x).collect();
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    let by_phase = spec.x_label == "phase";
    let _ = writeln!(out, "\n{} ({}):\n", spec.title, spec.metric);
    if by_phase {
        let _ = write!(out, "| system |");
        for p in spec.phases {
            let _ = write!(out, " {p} |");
        }
        let _ = write!(out, "\n|---|");
        for _ in spec.phases {
            let _ = write!(out, "---:|");
        }
        out.push('\n');
        // Only the rows with this metric: an experiment's derived rows (a
        // linear model's terms) have none of its systems' metrics.
        for s in systems.iter().filter(|s| columns.iter().any(|(c, _)| c == *s)) {
            let _ = write!(out, "| {s} |");
            for p in spec.phases {
                let v = by_seed.series(e.id, s, p, spec.metric).first().map(|p| p.1);
                let _ = write!(out, " {} |", fmt_spread(v));
            }
            out.push('\n');
        }
        return;
    }
    let _ = write!(out, "| {} |", spec.x_label.split(" (").next().unwrap_or("x"));
    for (s, p) in &columns {
        if spec.phases.len() > 1 {
            let _ = write!(out, " {s} {p} |");
        } else {
            let _ = write!(out, " {s} |");
        }
    }
    let _ = write!(out, "\n|---:|");
    for _ in &columns {
        let _ = write!(out, "---:|");
    }
    out.push('\n');
    for x in xs {
        let _ = write!(out, "| {} |", fmt_x(x, Some(spec)));
        for (s, p) in &columns {
            let v = by_seed.spread(|r| r.value(e.id, s, p, spec.metric, x));
            let _ = write!(out, " {} |", fmt_spread(v));
        }
        out.push('\n');
    }
}

/// Points of `e` that no plot shows, pivoted: a table per metric, a row
/// per phase and x, a column per system (in the order they were measured),
/// so that the systems of one row read side by side. Over several seeds, a
/// cell is the point's median with its spread. Every point is also in
/// `results.csv`.
fn other_points(out: &mut String, results: &Results, e: &Experiment) {
    let by_seed = BySeed::new(results, e.id);
    let first_seed = results.seeds(e.id).first().copied();
    let shown =
        |phase: &str, metric: &str| e.plots.iter().any(|p| p.metric == metric && p.phases.contains(&phase));
    let rest: Vec<_> = results
        .points
        .iter()
        .filter(|p| p.experiment == e.id && !shown(&p.phase, &p.metric))
        .filter(|p| !by_seed.several() || Some(p.seed) == first_seed)
        .collect();
    let mut metrics: Vec<&str> = Vec::new();
    for p in &rest {
        if !metrics.contains(&p.metric.as_str()) {
            metrics.push(&p.metric);
        }
    }
    for metric in metrics {
        let of_metric: Vec<_> = rest.iter().filter(|p| p.metric == metric).collect();
        let mut systems: Vec<&str> = Vec::new();
        let mut rows: Vec<(&str, f64)> = Vec::new();
        for p in &of_metric {
            if !systems.contains(&p.system.as_str()) {
                systems.push(&p.system);
            }
            if !rows.contains(&(p.phase.as_str(), p.x)) {
                rows.push((&p.phase, p.x));
            }
        }
        let _ = write!(out, "\n{metric}:\n\n| phase | x |");
        for system in &systems {
            let _ = write!(out, " {system} |");
        }
        let _ = write!(out, "\n|---|---:|");
        for _ in &systems {
            out.push_str("---:|");
        }
        out.push('\n');
        for (phase, x) in rows {
            let shown_x = if x == 0.0 { "-".to_string() } else { fmt_value(x) };
            let _ = write!(out, "| {phase} | {shown_x} |");
            for system in &systems {
                let measured = of_metric.iter().any(|p| p.system == *system && p.phase == phase && p.x == x);
                let cell = if !measured {
                    "-".to_string()
                } else if by_seed.several() {
                    fmt_spread(by_seed.spread(|r| r.value(e.id, system, phase, metric, x)))
                } else {
                    of_metric
                        .iter()
                        .find(|p| p.system == *system && p.phase == phase && p.x == x)
                        .map_or_else(|| "-".to_string(), |p| fmt_value(p.value))
                };
                let _ = write!(out, " {cell} |");
            }
            out.push('\n');
        }
    }
}

fn published_table(out: &mut String, results: &Results, e: &Experiment) {
    if e.published.is_empty() {
        return;
    }
    let _ = writeln!(out, "\nThe paper's numbers beside the measured ones:\n");
    let _ = writeln!(
        out,
        "| system | phase | metric | published | measured | source |\n|---|---|---|---:|---:|---|"
    );
    let by_seed = BySeed::new(results, e.id);
    for p in e.published {
        let measured = by_seed.spread(|r| {
            if p.x.is_infinite() {
                r.series(e.id, p.system, p.phase, p.metric).last().map(|v| v.1)
            } else {
                r.value(e.id, p.system, p.phase, p.metric, p.x)
            }
        });
        let measured = match (measured, results.skipped(e.id, p.system)) {
            (Some(v), _) => v.show(fmt_value),
            (None, Some(s)) if s.not_yet => "not yet".into(),
            (None, Some(_)) => "failed".into(),
            (None, None) => "-".into(),
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} |",
            p.system,
            p.phase,
            p.metric,
            fmt_value(p.value),
            measured,
            p.source
        );
    }
}

/// The calibrated results, each on its own line under the scoreboard: in
/// range or not, but never a claim's verdict.
fn calibrated_section(out: &mut String, results: &Results) {
    let _ = writeln!(
        out,
        "\nCalibrated, counted in no claim: the CPU charged here is set from the paper's own times, so a \
         result in range shows that the calibration holds, not a reproduction.\n"
    );
    let _ = writeln!(out, "| calibrated | experiment | needs | measured | range |\n|---|---|---|---|---|");
    for check in CALIBRATED {
        let o = evaluate(check, results);
        let range = match o.verdict {
            Verdict::Reproduced => "in range (calibrated)",
            Verdict::NotReproduced => "out of range (calibrated)",
            other => other.words(),
        };
        check_row(out, results, check, &o, range);
    }
}

/// Whether `experiment` ran with a configuration file's overrides.
fn overridden(results: &Results, experiment: &str) -> bool {
    results.run(experiment).is_some_and(|r| r.config.is_some())
}

/// The experiments that ran with a configuration file's overrides, each
/// with what it changed, as a list; nothing when none did.
fn overrides_banner(out: &mut String, results: &Results) {
    if !results.has_overrides() {
        return;
    }
    let _ = writeln!(
        out,
        "**Sensitivity runs.** These experiments ran with parameters from a configuration file \
         (`fslab bench run --config`) in place of their own, so their results, and the verdicts of the \
         checks that read them (marked *overridden*), are not those of the papers' setup:\n"
    );
    for e in EXPERIMENTS {
        if let Some(config) = results.run(e.id).and_then(|r| r.config.as_ref()) {
            let _ = writeln!(out, "* `{}`: {} (`{}`)", e.id, config.describe(), config.path);
        }
    }
    out.push('\n');
}

/// One check's row of a claims table: what it checks, where (marked when
/// that experiment's parameters were overridden), on what, the value
/// measured and `verdict`.
fn check_row(out: &mut String, results: &Results, check: &Check, o: &Outcome, verdict: &str) {
    let marked;
    let experiment = if overridden(results, check.experiment) {
        marked = format!("{} (*overridden*)", check.experiment);
        &marked
    } else {
        check.experiment
    };
    let _ = writeln!(
        out,
        "| {} | {} | {} | {} | {} |",
        check.text,
        experiment,
        check.needs.join(", "),
        o.measured,
        verdict
    );
}

fn claims_section(out: &mut String, results: &Results, png: bool) {
    let _ = writeln!(out, "## The headline claims\n");
    let _ = writeln!(out, "| # | claim | source | verdict | checks |\n|---:|---|---|---|---|");
    for c in CLAIMS {
        let o = claim_verdict(c, results);
        let mut read: Vec<&str> =
            c.checks.iter().map(|k| k.experiment).filter(|e| overridden(results, e)).collect();
        read.dedup();
        let marked =
            if read.is_empty() { String::new() } else { format!("; reads overridden {}", read.join(", ")) };
        let _ = writeln!(
            out,
            "| {} | {} | {} | **{}** | {}{marked} |",
            c.number,
            c.statement,
            c.source,
            o.words(),
            o.summary
        );
    }
    calibrated_section(out, results);
    for c in CLAIMS.iter().filter(|c| !c.checks.is_empty()) {
        let _ = writeln!(
            out,
            "\n### Claim {}\n\n{}\n\nPass criterion: {}.\n",
            c.number, c.statement, c.criterion
        );
        for plot in RATIO_PLOTS.iter().filter(|p| p.claim == c.number) {
            if !ratio_chart(results, plot).series.is_empty() {
                let file = if png { format!("{}.png", plot.name) } else { format!("{}.svg", plot.name) };
                let _ = writeln!(out, "![{}](plots/{file})\n", plot.title);
            }
        }
        let _ = writeln!(out, "| check | experiment | needs | measured | verdict |\n|---|---|---|---|---|");
        let mut why_not = Vec::new();
        for check in c.checks {
            let o = evaluate(check, results);
            let fails = matches!(o.verdict, Verdict::NotReproduced | Verdict::Unstable);
            if fails && !check.why_not.is_empty() {
                why_not.push(format!("* *{}*: {}", check.text, check.why_not));
            }
            check_row(out, results, check, &o, &verdict_cell(&o));
        }
        if !why_not.is_empty() {
            let _ = writeln!(out, "\nWhy not (measured in `docs/lab/analysis.md` of the source tree):\n");
            for line in why_not {
                let _ = writeln!(out, "{line}");
            }
        }
        setup_choices(out, results, c);
    }
}

/// A verdict as a table cell: bold where the check was evaluated.
fn verdict_cell(o: &Outcome) -> String {
    match o.verdict {
        Verdict::Reproduced | Verdict::NotReproduced | Verdict::Unstable => {
            format!("**{}**", o.verdict.words())
        }
        _ => o.verdict.words().to_string(),
    }
}

/// The setup choices `claim`'s verdicts depend on: for each, the choice,
/// the alternative and the paper's sentence that decided it, and every
/// check it moves with its value and verdict under both. Only the chosen
/// setup's verdicts count; the alternative is there so that none rests on
/// a choice the reader cannot see.
fn setup_choices(out: &mut String, results: &Results, claim: &Claim) {
    if claim.setup.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "\nSetup choices (the paper leaves these to the lab; the scoreboard counts the chosen setup):"
    );
    for choice in claim.setup {
        let _ = writeln!(
            out,
            "\n**{}.** Chosen: {}. Alternative: {}. The paper ({}): \"{}\"\n",
            choice.name, choice.chosen, choice.alternative, choice.source, choice.quote
        );
        let _ = writeln!(
            out,
            "| check | chosen: measured | verdict | alternative: measured | verdict |\n|---|---|---|---|---|"
        );
        for row in compare(choice, claim.checks, results) {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} |",
                row.check,
                row.chosen.measured,
                verdict_cell(&row.chosen),
                row.alternative.measured,
                verdict_cell(&row.alternative)
            );
        }
    }
}

/// The report as markdown (plots referenced from `plots/`).
pub fn markdown(results: &Results, png: bool) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# fslab lab report\n");
    let _ = writeln!(
        out,
        "Generated by `fslab bench` from `results.json` in this directory. Each result is set beside the \
         published number and the claim's pass criterion (the research notes' reproduction targets). \
         *Not yet* marks what needs a system fslab does not have yet; *not run* an experiment this run \
         left out. Throughputs in MB/s use the paper's megabyte: 10^6 bytes for the 1993 paper, 2^20 for \
         the 1995 paper. In the plots a cross marks a value the paper published, grey shading the range a \
         claim's check requires, and a dashed line a series that coincides with another, which its legend \
         names.\n"
    );
    if let Some(mixed) = results.mixed_cpu_charges() {
        let groups: Vec<String> = mixed
            .iter()
            .map(|(c, experiments)| format!("`{}` ({})", c.name(), experiments.join(", ")))
            .collect();
        let _ = writeln!(
            out,
            "**These results mix CPU models** (`--cpu-model`): {}. A claim whose checks read experiments of \
             different models compares unlike CPU charges.\n",
            groups.join("; ")
        );
    }
    if results.several_seeds() {
        let _ = writeln!(
            out,
            "Experiments run with several seeds (the disks' rotational phase and the workloads' random \
             choices) show each value as the median and, in brackets, the least and the greatest over \
             the seeds; each plot draws the median over a band from the least to the greatest. A check \
             is *reproduced* or *not reproduced* only when every seed agrees; when the seeds differ it is \
             **unstable**, names the seeds where it is not reproduced, and counts for no claim: a claim \
             reproduced apart from unstable checks is reproduced in part.\n"
        );
    }
    overrides_banner(&mut out, results);
    claims_section(&mut out, results, png);
    crate::setup::section(&mut out);
    let _ = writeln!(out, "\n## Experiments");
    for e in EXPERIMENTS {
        let _ = writeln!(out, "\n### {} — {} ({})\n\n{}\n", e.id, e.title, e.source, e.about);
        let runs = results.runs_of(e.id);
        let Some(run) = runs.first() else {
            let _ = writeln!(out, "Not run.");
            continue;
        };
        let seeds = results.seeds(e.id);
        let model = match run.cpu_charges {
            Charges::Paper => format!("`{}` with the papers' checksums (`--cpu-model paper`)", run.cpu_model),
            Charges::On | Charges::Off => format!("`{}`", run.cpu_model),
        };
        let _ = writeln!(
            out,
            "Run on `{}`, {} time, CPU model {model}, {} {}{}; {:.0} s of host time.",
            run.disk,
            run.clock,
            if seeds.len() > 1 { "seeds" } else { "seed" },
            seed_list(&seeds),
            if run.quick { ", small configuration (--quick)" } else { "" },
            runs.iter().map(|r| r.host_seconds).sum::<f64>()
        );
        if let Some(config) = &run.config {
            let _ = writeln!(
                out,
                "\n**Sensitivity run**: parameters from `{}` (`--config`) in place of the experiment's own: {}. \
                 The setup tables above show the experiment's own.",
                config.path,
                config.describe()
            );
        }
        run_notes(&mut out, results, e, &seeds);
        for spec in e.plots {
            let c = chart(results, e.id, spec);
            if c.series.is_empty() {
                continue;
            }
            let file = if png { format!("{}.png", spec.name) } else { format!("{}.svg", spec.name) };
            let _ = writeln!(out, "\n![{}](plots/{file})", spec.title);
            plot_table(&mut out, results, e, spec);
        }
        other_points(&mut out, results, e);
        published_table(&mut out, results, e);
    }
    out
}

/// What an experiment's runs could not measure, and the notes they made;
/// over several seeds each said once, with the seeds it holds for when
/// not all.
fn run_notes(out: &mut String, results: &Results, e: &Experiment, seeds: &[u64]) {
    let on_seeds = |found: Vec<u64>| {
        if seeds.len() > 1 && found.len() < seeds.len() {
            format!(" ({} {})", if found.len() == 1 { "seed" } else { "seeds" }, seed_list(&found))
        } else {
            String::new()
        }
    };
    let mut skipped: Vec<(String, Vec<u64>)> = Vec::new();
    for s in results.skipped.iter().filter(|s| s.experiment == e.id) {
        let text = format!("`{}` {}", s.system, s.reason);
        match skipped.iter_mut().find(|(t, _)| *t == text) {
            Some((_, found)) => found.push(s.seed),
            None => skipped.push((text, vec![s.seed])),
        }
    }
    if !skipped.is_empty() {
        let list: Vec<String> = skipped.into_iter().map(|(text, found)| text + &on_seeds(found)).collect();
        let _ = writeln!(out, "\nNot measured: {}.", list.join("; "));
    }
    let mut notes: Vec<(&str, Vec<u64>)> = Vec::new();
    for run in results.runs_of(e.id) {
        for note in &run.notes {
            match notes.iter_mut().find(|(n, _)| n == note) {
                Some((_, found)) => found.push(run.seed),
                None => notes.push((note, vec![run.seed])),
            }
        }
    }
    for (note, found) in notes {
        let _ = writeln!(out, "\nNote{}: {note}.", on_seeds(found));
    }
}

/// Writes `report.md` and the plots into `dir`.
pub fn write(results: &Results, dir: &Path) -> io::Result<Written> {
    let plots = dir.join("plots");
    std::fs::create_dir_all(&plots)?;
    let mut written = Written::default();
    let font = match plot::png::load_font() {
        Ok(f) => Some(f),
        Err(e) => {
            written.png_problem = Some(e.to_string());
            None
        }
    };
    for e in EXPERIMENTS.iter().filter(|e| results.run(e.id).is_some()) {
        for spec in e.plots {
            let c = chart(results, e.id, spec);
            if c.series.is_empty() {
                continue;
            }
            let svg = plots.join(format!("{}.svg", spec.name));
            std::fs::write(&svg, plot::svg::render(&c))?;
            written.plots.push(svg.display().to_string());
            if let Some(font) = &font {
                let png = plots.join(format!("{}.png", spec.name));
                std::fs::write(&png, plot::png::render(&c, font)?)?;
                written.plots.push(png.display().to_string());
            }
        }
    }
    let ratios = RATIO_PLOTS.iter().map(|p| (p.name, ratio_chart(results, p)));
    for (name, c) in ratios.filter(|(_, c)| !c.series.is_empty()) {
        let svg = plots.join(format!("{name}.svg"));
        std::fs::write(&svg, plot::svg::render(&c))?;
        written.plots.push(svg.display().to_string());
        if let Some(font) = &font {
            let png = plots.join(format!("{name}.png"));
            std::fs::write(&png, plot::png::render(&c, font)?)?;
            written.plots.push(png.display().to_string());
        }
    }
    std::fs::write(dir.join("report.md"), markdown(results, font.is_some()))?;
    Ok(written)
}

/// The experiments named in `results`, for messages.
pub fn experiments_in(results: &Results) -> Vec<&'static str> {
    let mut ids: Vec<&'static str> = Vec::new();
    for id in results.runs.iter().filter_map(|r| by_id(&r.experiment).map(|e| e.id)) {
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    ids
}

#[cfg(test)]
#[path = "report_tests.rs"]
mod tests;
