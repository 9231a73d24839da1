//! An aging run's figures by day as charts (`fslab age --plots DIR`),
//! drawn by the lab's plot module ([`crate::plot`]) as SVG:
//!
//! * `layout-score.svg` — the `data+tail` layout score and the
//!   utilisation (the 1997 paper's Fig. 1 and 2), where there is a score;
//! * `free-space.svg` — the share of free space in runs of maxcontig
//!   blocks or more, with the utilisation, on an FFS;
//! * `longest-run.svg` — the least, median and greatest of the groups'
//!   longest free runs, in blocks, on an FFS;
//! * `write-cost.svg` — the cleaner's write cost each day, on an LFS.
//!
//! A chart with nothing to draw is not written.

use super::report::ResultsFigures;
use crate::plot::{svg, Chart, Series};
use std::io;
use std::path::{Path, PathBuf};

fn series(label: &str, points: impl Iterator<Item = (u64, Option<f64>)>) -> Series {
    Series {
        label: label.to_string(),
        points: points.filter_map(|(day, y)| Some((day as f64, y?))).collect(),
        band: vec![],
    }
}

fn chart(title: String, y_label: &str, series: Vec<Series>) -> Chart {
    Chart::new(title, "simulated day".to_string(), y_label.to_string(), false, series)
}

/// The charts of `figures` by file name, titled after `name` (the aged
/// image or directory); only those with something to draw.
pub fn charts(figures: &ResultsFigures, name: &str) -> Vec<(&'static str, Chart)> {
    let days = &figures.days;
    let utilisation = || series("utilisation", days.iter().map(|d| (d.day, Some(d.utilisation))));
    let fragmentation = |pick: fn(&super::fragmentation::RunSpread) -> u32| {
        days.iter()
            .map(move |d| (d.day, d.free_space.as_ref().and_then(|f| f.longest_run).map(|r| pick(&r) as f64)))
    };
    let mut charts = Vec::new();
    let score = series("data+tail", days.iter().map(|d| (d.day, d.score)));
    if !score.points.is_empty() {
        charts.push((
            "layout-score.svg",
            chart(format!("Layout score by day: {name}"), "score", vec![score, utilisation()]),
        ));
    }
    let share = series(
        "free space in full clusters",
        days.iter().map(|d| (d.day, d.free_space.as_ref().and_then(|f| f.full_cluster_share))),
    );
    if !share.points.is_empty() {
        charts.push((
            "free-space.svg",
            chart(
                format!("Free space in runs of maxcontig blocks: {name}"),
                "share",
                vec![share, utilisation()],
            ),
        ));
        charts.push((
            "longest-run.svg",
            chart(
                format!("Longest free run per cylinder group: {name}"),
                "blocks",
                vec![
                    series("max", fragmentation(|r| r.max)),
                    series("median", fragmentation(|r| r.median)),
                    series("min", fragmentation(|r| r.min)),
                ],
            ),
        ));
    }
    let cost = series("write cost", days.iter().map(|d| (d.day, d.cleaner.and_then(|c| c.write_cost))));
    if !cost.points.is_empty() {
        let policy = figures.cleaner_policy.as_deref().unwrap_or("no cleaner");
        charts.push((
            "write-cost.svg",
            chart(format!("LFS write cost by day ({policy}): {name}"), "write cost", vec![cost]),
        ));
    }
    charts
}

/// Writes [`charts`] into `dir` (made if missing); returns the files
/// written.
pub fn write_svgs(figures: &ResultsFigures, name: &str, dir: &Path) -> io::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let mut written = Vec::new();
    for (file, c) in charts(figures, name) {
        let path = dir.join(file);
        std::fs::write(&path, svg::render(&c))?;
        written.push(path);
    }
    Ok(written)
}
