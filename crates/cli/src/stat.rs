//! `fslab stat DIR`: the cleaner's report of a mounted file system, read
//! through its control socket — segments cleaned, the bytes behind the
//! write cost (1992 paper §5.1: everything written to the log plus the
//! cleaner's reads, over the file data users wrote), since mount and over
//! the last segments, the utilization each recently cleaned segment had,
//! and the thresholds; then the directory hashes (2002 paper §3): their
//! settings, lookups answered by a hash and by a scan, builds, drops and
//! the memory they hold.

use crate::size::human;
use clap::Args;
use fslab::lfs::clean::{CleanerCounters, RECENT_SEGMENTS};
use fslab_cleaner::control::{DirhashReport, Report};
use std::fmt::Write as _;
use std::path::PathBuf;

/// Arguments of `fslab stat`.
#[derive(Args)]
pub struct StatArgs {
    /// The directory an fslab file system is mounted on.
    dir: PathBuf,
}

/// Prints the report.
pub fn run(args: &StatArgs) -> Result<(), String> {
    let mut client = crate::clean::connect(&args.dir)?;
    let report = client.report().map_err(|e| format!("{}: {e}", args.dir.display()))?;
    // A mount older than the dirhash request answers EOPNOTSUPP.
    let dirhash = match client.dirhash_report() {
        Ok(d) => Some(d),
        Err(e) if e.errno() == libc::EOPNOTSUPP => None,
        Err(e) => return Err(format!("{}: {e}", args.dir.display())),
    };
    print!("{}", render(&args.dir.display().to_string(), &report));
    print!("{}", render_dirhash(dirhash.as_ref()));
    Ok(())
}

/// The dirhash section, or a line saying the mount does not report it.
fn render_dirhash(d: Option<&DirhashReport>) -> String {
    let mut out = String::from("\n");
    let Some(d) = d else {
        out.push_str("dirhash: not reported by this mount (an older fslab)\n");
        return out;
    };
    let row = |out: &mut String, label: &str, value: String| {
        let _ = writeln!(out, "{label:<26}{value}");
    };
    let (o, s) = (&d.options, &d.stats);
    let state = if o.enabled { "on" } else { "off" };
    let checking = if o.check { ", checking every answer" } else { "" };
    row(
        &mut out,
        "dirhash",
        format!(
            "{state}: {} budget, directories of {} or more{checking}",
            human(o.max_memory),
            human(o.min_dir_size)
        ),
    );
    row(
        &mut out,
        "dirhash memory",
        format!("{} in {} hashes (at most {} at once)", human(s.memory), s.hashes, human(s.peak_memory)),
    );
    row(&mut out, "lookups", format!("{} answered by a hash, {} by a scan", s.hits, s.misses));
    row(&mut out, "directory blocks read", s.blocks_read.to_string());
    row(
        &mut out,
        "hashes built",
        format!(
            "{} ({} resized, {} dropped for memory, {} refused for lack of it)",
            s.builds, s.rebuilds, s.drops, s.refused
        ),
    );
    row(&mut out, "directory blocks freed", s.truncated_blocks.to_string());
    out
}

/// The report as aligned text.
fn render(dir: &str, r: &Report) -> String {
    let mut out = String::new();
    let row = |out: &mut String, label: &str, value: String| {
        let _ = writeln!(out, "{label:<26}{value}");
    };
    row(&mut out, "mount", dir.to_string());
    row(&mut out, "cleaner policy", r.policy.clone());
    row(&mut out, "segments", format!("{} of {}", r.segments, human(r.segment_bytes)));
    row(&mut out, "clean segments", r.clean_segments.to_string());
    row(
        &mut out,
        "thresholds",
        format!("low-water {}, high-water {}, reserve {}", r.low_water, r.high_water, r.reserve_segments),
    );
    row(&mut out, "segments cleaned", r.cleaner.total.segments_cleaned.to_string());
    let heads = if r.cold_head { "users' head and a cold head" } else { "users' head only" };
    row(
        &mut out,
        "log heads",
        format!("{heads}; {} partial segments at the cold head", r.cold_partial_segments),
    );
    row(&mut out, "age predicts survival", if r.ages_predict_survival { "yes" } else { "no" }.to_string());
    out.push('\n');
    let (total, recent) = (&r.cleaner.total, &r.cleaner.recent);
    let _ =
        writeln!(out, "{:<26}{:>16}  {:>16}", "", "since mount", format!("last {RECENT_SEGMENTS} segments"));
    let pair = |out: &mut String, label: &str, f: &dyn Fn(&CleanerCounters) -> String| {
        let _ = writeln!(out, "{label:<26}{:>16}  {:>16}", f(total), f(recent));
    };
    pair(&mut out, "file data from users", &|c| human(c.user_data_bytes_written));
    pair(&mut out, "written for users", &|c| human(c.user_bytes_written));
    pair(&mut out, "written by the cleaner", &|c| human(c.cleaner_bytes_written));
    pair(&mut out, "read by the cleaner", &|c| human(c.cleaner_bytes_read));
    pair(&mut out, "segments cleaned", &|c| c.segments_cleaned.to_string());
    pair(&mut out, "write cost", &|c| c.write_cost().map_or("-".to_string(), |w| format!("{w:.2}")));
    let cleaned = &r.cleaner.cleaned_utilization;
    out.push('\n');
    if cleaned.is_empty() {
        let _ = writeln!(out, "no segment cleaned yet");
        return out;
    }
    let _ = writeln!(
        out,
        "utilization of the last {} segments cleaned, when read (oldest first):",
        cleaned.len()
    );
    let width = r.segments.saturating_sub(1).to_string().len();
    for line in cleaned.chunks(6) {
        let cells: Vec<String> =
            line.iter().map(|&(seg, u)| format!("{seg:>width$}: {:>5.1}%", u * 100.0)).collect();
        let _ = writeln!(out, "  {}", cells.join("   "));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use fslab::lfs::clean::CleanerReport;

    #[test]
    fn the_report_is_aligned_and_names_every_figure() {
        let counters = CleanerCounters {
            segments_cleaned: 12,
            user_bytes_written: 300 << 20,
            user_data_bytes_written: 250 << 20,
            cleaner_bytes_written: 60 << 20,
            cleaner_bytes_read: 90 << 20,
        };
        let report = Report {
            policy: "hot-cold".to_string(),
            cleaner: CleanerReport {
                total: counters,
                recent: CleanerCounters::default(),
                cleaned_utilization: vec![(3, 0.25), (95, 0.5)],
            },
            segments: 96,
            segment_bytes: 512 << 10,
            clean_segments: 20,
            reserve_segments: 2,
            low_water: 5,
            high_water: 8,
            cold_head: true,
            cold_partial_segments: 7,
            ages_predict_survival: false,
        };
        let text = render("/mnt", &report);
        assert!(text.contains("segments                  96 of 512 KiB"), "{text}");
        assert!(text.contains("low-water 5, high-water 8, reserve 2"), "{text}");
        assert!(
            text.contains("log heads                 users' head and a cold head; 7 partial segments"),
            "{text}"
        );
        assert!(text.contains("age predicts survival     no"), "{text}");
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines.contains(&"file data from users               250 MiB           0 bytes"), "{text}");
        assert!(lines.contains(&"written for users                  300 MiB           0 bytes"), "{text}");
        // (300 + 60 + 90) / 250; no data written recently, so no cost.
        assert!(lines.contains(&"write cost                            1.80                 -"), "{text}");
        // The two columns end where their headings end.
        let heading = lines.iter().find(|l| l.contains("since mount")).expect("heading");
        assert!(lines
            .iter()
            .filter(|l| ["file data", "written", "read by", "write cost"].iter().any(|p| l.starts_with(p)))
            .all(|l| l.len() == heading.len()));
        assert!(text.contains(" 3:  25.0%   95:  50.0%"), "{text}");
    }

    #[test]
    fn the_dirhash_section_names_every_counter_or_says_it_is_missing() {
        use fslab::ufs::{DirhashOptions, DirhashStats};
        let stats = DirhashStats {
            hits: 1000,
            misses: 20,
            builds: 7,
            drops: 2,
            rebuilds: 3,
            refused: 1,
            truncated_blocks: 40,
            blocks_read: 5000,
            hashes: 2,
            memory: 3 << 19,
            peak_memory: 2 << 20,
        };
        let report = DirhashReport { options: DirhashOptions::default(), stats };
        let text = render_dirhash(Some(&report));
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines.contains(&"dirhash                   on: 2 MiB budget, directories of 2.5 KiB or more"),
            "{text}"
        );
        assert!(
            lines.contains(&"dirhash memory            1.5 MiB in 2 hashes (at most 2 MiB at once)"),
            "{text}"
        );
        assert!(lines.contains(&"lookups                   1000 answered by a hash, 20 by a scan"), "{text}");
        assert!(
            lines.contains(
                &"hashes built              7 (3 resized, 2 dropped for memory, 1 refused for lack of it)"
            ),
            "{text}"
        );
        assert!(lines.contains(&"directory blocks freed    40"), "{text}");
        assert!(lines.contains(&"directory blocks read     5000"), "{text}");
        assert!(render_dirhash(None).contains("not reported by this mount"));
    }
}
