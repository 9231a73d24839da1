//! What an aging run shows: a line per simulated day, and the results
//! file (JSON, `docs/FORMAT.md`, "Aging results").
//!
//! A day line has the same columns on every target, then those of what
//! the target has besides ([`Extra`]): an FFS's free-space fragmentation,
//! or an LFS cleaner's work.

use super::fragmentation::{four_places, CleanerDay, Fragmentation, GroupRuns};
use super::run::{DayReport, Summary};
use super::score::{bucket_label, LayoutScore, Tally, Variant, BUCKET_BOUNDS};
use serde_json::{json, Value};

/// The results file's `format` field.
pub const RESULTS_FORMAT: &str = "fslab-age-results";
/// Its version: 2 added `free_space`, `cleaner`, `cleaner_policy`,
/// `final_free_space_by_group` and `cleaner_total`; 3 added `placement`
/// and every day's `by_size`.
pub const RESULTS_VERSION: u32 = 3;
/// The oldest version [`parse_results`] reads: each version only added
/// fields, which read as absent from an older file.
pub const OLDEST_RESULTS_VERSION: u32 = 1;

/// The columns a day line has after the common ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Extra {
    /// A mounted directory: an FFS's columns, each `n/a`, as a directory
    /// cannot be measured for them but its report has the same shape as
    /// an image's.
    None,
    /// An FFS's free space: the share in runs of maxcontig blocks or more
    /// (`full%`) and the median group's longest free run in blocks
    /// (`run`).
    FreeSpace,
    /// An LFS cleaner's day: segments cleaned (`cleaned`), live blocks
    /// moved (`moved`) and the write cost (`wcost`).
    Cleaner,
}

fn value(t: Tally) -> Value {
    t.score().map_or(Value::Null, |s| json!((s * 10_000.0).round() / 10_000.0))
}

/// The header of the day lines.
pub fn day_header(extra: Extra) -> String {
    let common = format!(
        "{:>5} {:>8} {:>10} {:>6} {:>9} {:>13} {:>7} {:>7} {:>7}",
        "day", "ops", "MiB", "util", "data+tail", "data+tail+ind", "files", "skipped", "backoff"
    );
    match extra {
        Extra::None | Extra::FreeSpace => format!("{common} {:>6} {:>5}", "full%", "run"),
        Extra::Cleaner => format!("{common} {:>7} {:>8} {:>6}", "cleaned", "moved", "wcost"),
    }
}

/// One day's line: the scores read `n/a` where the target has none, a
/// figure `-` where it is undefined that day (no free space, no data
/// written).
pub fn day_line(d: &DayReport, extra: Extra) -> String {
    let common = common_columns(d);
    let undefined = || "-".to_string();
    match extra {
        Extra::None => format!("{common} {:>6} {:>5}", "n/a", "n/a"),
        Extra::FreeSpace => {
            let f = d.free_space.as_ref();
            let share =
                f.and_then(|f| f.full_cluster_share).map_or_else(undefined, |s| format!("{:.1}", s * 100.0));
            let run = f.and_then(|f| f.longest_run).map_or_else(undefined, |r| r.median.to_string());
            format!("{common} {share:>6} {run:>5}")
        }
        Extra::Cleaner => {
            let c = d.cleaner.as_ref();
            let count = |n: Option<u64>| n.map_or_else(undefined, |n| n.to_string());
            let cost = c.and_then(|c| c.write_cost).map_or_else(undefined, |w| format!("{w:.2}"));
            format!(
                "{common} {:>7} {:>8} {cost:>6}",
                count(c.map(|c| c.segments_cleaned)),
                count(c.map(|c| c.blocks_moved))
            )
        }
    }
}

fn common_columns(d: &DayReport) -> String {
    let fmt = |t: Option<Tally>| match t {
        None => "n/a".to_string(),
        Some(t) => t.score().map_or("-".to_string(), |s| format!("{s:.4}")),
    };
    let score = d.score.as_ref();
    format!(
        "{:>5} {:>8} {:>10.1} {:>5.1}% {:>9} {:>13} {:>7} {:>7} {:>7}",
        d.day,
        d.ops,
        d.bytes_written as f64 / (1 << 20) as f64,
        d.utilisation * 100.0,
        fmt(score.map(|s| s.primary())),
        fmt(score.map(|s| s.of(Variant { indirect: true, tail: true }))),
        d.live_files,
        d.skipped,
        d.backoff_unlinks
    )
}

/// The `data+tail` score of the files of one size bucket, as the results
/// file holds it (every day's `by_size`, and `final_by_size`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct BySize {
    /// The bucket's label, `<=16K` … `>16M` ([`bucket_label`]).
    pub bucket: String,
    /// The largest size in the bucket, bytes; `None` for the last.
    pub upper_bytes: Option<u64>,
    /// Files scored.
    pub files: u64,
    /// Blocks contiguous with the previous one.
    pub optimal: u64,
    /// Blocks counted.
    pub counted: u64,
    /// `optimal / counted` to four places; `None` with nothing counted.
    pub score: Option<f64>,
}

/// The by-size scores of `score`, one per bucket of [`BUCKET_BOUNDS`].
pub fn by_size(score: &LayoutScore) -> Vec<BySize> {
    score
        .buckets
        .iter()
        .enumerate()
        .map(|(i, t)| BySize {
            bucket: bucket_label(i),
            upper_bytes: (BUCKET_BOUNDS[i] != u64::MAX).then_some(BUCKET_BOUNDS[i]),
            files: t.files,
            optimal: t.optimal,
            counted: t.counted,
            score: t.score().map(|s| (s * 10_000.0).round() / 10_000.0),
        })
        .collect()
}

/// What a results file says of the run besides its days: where it ran,
/// from what stream, with which cleaner.
#[derive(Debug, Clone, Copy)]
pub struct Described<'a> {
    /// The aged image or directory.
    pub target: &'a str,
    /// The stream, in words (`Params::describe`, or `trace FILE`).
    pub source: &'a str,
    /// The cleaning policy of an LFS image, `None` elsewhere (or with the
    /// cleaner off).
    pub cleaner_policy: Option<&'a str>,
    /// Where the files were placed (`run::Placement::name`).
    pub placement: &'a str,
}

/// The results file of a run.
pub fn results_json(summary: &Summary, described: &Described<'_>) -> Value {
    let days: Vec<Value> = summary
        .days
        .iter()
        .map(|d| {
            json!({
                "day": d.day,
                "ops": d.ops,
                "bytes_written": d.bytes_written,
                "utilisation": four_places(d.utilisation),
                "live_files": d.live_files,
                "skipped": d.skipped,
                "backoff_unlinks": d.backoff_unlinks,
                "score": d.score.as_ref().map(|s| {
                    let mut m = serde_json::Map::new();
                    for v in Variant::ALL {
                        m.insert(v.name().to_string(), value(s.of(v)));
                    }
                    Value::Object(m)
                }),
                "by_size": to_value(&d.score.as_ref().map(by_size)),
                "free_space": to_value(&d.free_space),
                "cleaner": to_value(&d.cleaner),
            })
        })
        .collect();
    let by_size = summary.days.last().and_then(|d| d.score.as_ref()).map(by_size);
    json!({
        "format": RESULTS_FORMAT,
        "version": RESULTS_VERSION,
        "target": described.target,
        "source": described.source,
        "cleaner_policy": described.cleaner_policy,
        "placement": described.placement,
        "ops": summary.ops,
        "bytes_written": summary.bytes_written,
        "days": days,
        "final_by_size": to_value(&by_size),
        "final_free_space_by_group": to_value(&summary.final_groups),
        "cleaner_total": to_value(&summary.cleaner),
    })
}

/// A figure as JSON; these are plain numbers and lists, which always
/// convert (`null` otherwise, as for a figure the target lacks).
fn to_value<T: serde::Serialize>(figure: &T) -> Value {
    serde_json::to_value(figure).unwrap_or(Value::Null)
}

/// [`results_json`]'s value as the file's text (pretty JSON, a newline at
/// the end).
pub fn results_text(json: &Value) -> String {
    serde_json::to_string_pretty(json).map_or_else(|e| format!("{{\"error\": \"{e}\"}}\n"), |t| t + "\n")
}

/// One day's figures besides the layout score, as a results file holds
/// them.
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
pub struct DayFigures {
    /// The day.
    pub day: u64,
    /// Share of the file system in use at the end of the day.
    pub utilisation: f64,
    /// The `data+tail` layout score, where there is one.
    pub score: Option<f64>,
    /// The free space's fragmentation (FFS).
    pub free_space: Option<Fragmentation>,
    /// The cleaner's day (LFS).
    pub cleaner: Option<CleanerDay>,
    /// The `data+tail` score by file size (FFS; absent before version 3).
    #[serde(default)]
    pub by_size: Option<Vec<BySize>>,
}

/// A results file read back: what [`crate::aging::plots`] draws, and
/// what a reader of an earlier run compares with.
#[derive(Debug, Clone, PartialEq)]
pub struct ResultsFigures {
    /// The cleaning policy of an LFS run.
    pub cleaner_policy: Option<String>,
    /// Where the files were placed (`namespace` before version 3).
    pub placement: String,
    /// Every day's figures.
    pub days: Vec<DayFigures>,
    /// Each group's free space at the end (FFS).
    pub final_groups: Option<Vec<GroupRuns>>,
    /// The cleaner's work over the run (LFS).
    pub cleaner_total: Option<CleanerDay>,
}

/// Reads the figures of a results file of this version or an older one;
/// says what is wrong with one that is not.
pub fn parse_results(text: &str) -> Result<ResultsFigures, String> {
    let v: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    figures(&v)
}

/// The figures of a results file's JSON ([`results_json`]'s value, or a
/// file's, read).
pub fn figures(v: &Value) -> Result<ResultsFigures, String> {
    if v["format"] != RESULTS_FORMAT {
        return Err(format!("not an aging results file (format {})", v["format"]));
    }
    match v["version"].as_u64() {
        Some(n) if (u64::from(OLDEST_RESULTS_VERSION)..=u64::from(RESULTS_VERSION)).contains(&n) => {}
        _ => {
            return Err(format!(
                "results version {}, this fslab reads {OLDEST_RESULTS_VERSION} to {RESULTS_VERSION}",
                v["version"]
            ))
        }
    }
    let days = v["days"]
        .as_array()
        .ok_or("no list of days")?
        .iter()
        .map(|d| {
            let mut d = d.clone();
            // The primary variant is the one a reader plots.
            d["score"] = d["score"]["data+tail"].clone();
            serde_json::from_value::<DayFigures>(d).map_err(|e| format!("a day: {e}"))
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(ResultsFigures {
        cleaner_policy: field(v, "cleaner_policy")?,
        placement: field::<Option<String>>(v, "placement")?.unwrap_or_else(|| "namespace".to_string()),
        days,
        final_groups: field(v, "final_free_space_by_group")?,
        cleaner_total: field(v, "cleaner_total")?,
    })
}

/// The field `name` of `v` (`null` if missing), decoded.
fn field<T: serde::de::DeserializeOwned>(v: &Value, name: &str) -> Result<T, String> {
    serde_json::from_value(v.get(name).cloned().unwrap_or(Value::Null)).map_err(|e| format!("{name}: {e}"))
}
