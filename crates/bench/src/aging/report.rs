//! What an aging run shows: a line per simulated day, and the results
//! file (JSON, `docs/FORMAT.md`, "Aging results").

use super::run::{DayReport, Summary};
use super::score::{bucket_label, Tally, Variant, BUCKET_BOUNDS};
use serde_json::{json, Value};

/// The results file's `format` field.
pub const RESULTS_FORMAT: &str = "fslab-age-results";
/// Its version.
pub const RESULTS_VERSION: u32 = 1;

fn value(t: Tally) -> Value {
    t.score().map_or(Value::Null, |s| json!((s * 10_000.0).round() / 10_000.0))
}

/// The header of the day lines.
pub fn day_header() -> String {
    format!(
        "{:>5} {:>8} {:>10} {:>6} {:>9} {:>13} {:>7} {:>7} {:>7}",
        "day", "ops", "MiB", "util", "data+tail", "data+tail+ind", "files", "skipped", "backoff"
    )
}

/// One day's line: the scores read `n/a` where the target has none.
pub fn day_line(d: &DayReport) -> String {
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

/// The results file of a run on `target` from `source` (both described
/// in words).
pub fn results_json(summary: &Summary, target: &str, source: &str) -> Value {
    let days: Vec<Value> = summary
        .days
        .iter()
        .map(|d| {
            json!({
                "day": d.day,
                "ops": d.ops,
                "bytes_written": d.bytes_written,
                "utilisation": (d.utilisation * 10_000.0).round() / 10_000.0,
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
            })
        })
        .collect();
    let by_size = summary.days.last().and_then(|d| d.score.as_ref()).map(|s| {
        s.buckets
            .iter()
            .enumerate()
            .map(|(i, t)| {
                json!({
                    "bucket": bucket_label(i),
                    "upper_bytes": (BUCKET_BOUNDS[i] != u64::MAX).then_some(BUCKET_BOUNDS[i]),
                    "files": t.files,
                    "optimal": t.optimal,
                    "counted": t.counted,
                    "score": value(*t),
                })
            })
            .collect::<Vec<Value>>()
    });
    json!({
        "format": RESULTS_FORMAT,
        "version": RESULTS_VERSION,
        "target": target,
        "source": source,
        "ops": summary.ops,
        "bytes_written": summary.bytes_written,
        "days": days,
        "final_by_size": by_size,
    })
}

/// [`results_json`] as the file's text (pretty JSON, a newline at the end).
pub fn results_text(summary: &Summary, target: &str, source: &str) -> String {
    let json = results_json(summary, target, source);
    serde_json::to_string_pretty(&json).map_or_else(|e| format!("{{\"error\": \"{e}\"}}\n"), |t| t + "\n")
}
