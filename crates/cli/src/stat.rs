//! `fslab stat DIR`: the counters of a mounted file system of either
//! layout, read through its control socket. First what every layout has:
//! the layout (and FFS's integrity mode and cylinder groups), free space
//! and inodes, and the device work since mount. Then on LFS the cleaner's
//! report — segments cleaned, the bytes behind the write cost (1992 paper
//! §5.1: everything written to the log plus the cleaner's reads, over the
//! file data users wrote), since mount and over the last segments, the
//! utilization each recently cleaned segment had, and the thresholds. Last
//! the directory hashes (2002 paper §3), on either layout: their settings,
//! lookups answered by a hash and by a scan, builds, drops and the memory
//! they hold. Then the daemon's memory: its resident size and what each
//! structure that grows with the files seen holds. Last, the lock around
//! the file system: the share of the time it was held exclusively, the
//! calls that waited for it and how long, and its longest hold.

use crate::out::count;
use crate::size::human;
use clap::Args;
use fslab::ffs::{LeakReport, LeakScanState};
use fslab::lfs::clean::{CleanerCounters, RECENT_SEGMENTS};
use fslab_control::{DirhashReport, LayoutReport, LockReport, MemoryReport, MountReport, Report};
use std::fmt::Write as _;
use std::path::PathBuf;

/// Examples in `fslab stat --help`.
pub const EXAMPLES: &str = "Examples:
  fslab stat /mnt                                 the mount's counters
  fslab stat /mnt/some/file                       the same: any path inside the mount";

/// Arguments of `fslab stat`.
#[derive(Args)]
pub struct StatArgs {
    /// The directory an fslab file system (LFS or FFS) is mounted on, or any path inside it.
    dir: PathBuf,
}

/// Prints the report.
pub fn run(args: &StatArgs) -> Result<(), String> {
    let (mut client, root) = crate::clean::connect(&args.dir)?;
    let failed = |e: fslab::Error| format!("{}: {e}", args.dir.display());
    // A mount older than the mount request answers EOPNOTSUPP; it is an
    // LFS mount (no other layout served a socket then).
    let mount = match client.mount_report() {
        Ok(m) => Some(m),
        Err(e) if e.errno() == libc::EOPNOTSUPP => None,
        Err(e) => return Err(failed(e)),
    };
    let cleaner = match mount.as_ref().map(|m| &m.layout) {
        Some(LayoutReport::Ffs { .. }) => None,
        _ => Some(client.report().map_err(failed)?),
    };
    // A mount older than the dirhash request answers EOPNOTSUPP.
    let dirhash = match client.dirhash_report() {
        Ok(d) => Some(d),
        Err(e) if e.errno() == libc::EOPNOTSUPP => None,
        Err(e) => return Err(failed(e)),
    };
    out!("{}", render_mount(&root.display().to_string(), mount.as_ref()))?;
    if let Some(report) = &cleaner {
        out!("\n{}", render(report))?;
    }
    out!("{}", render_dirhash(dirhash.as_ref()))?;
    // A mount older than the memory request answers EOPNOTSUPP.
    let memory = match client.memory_report() {
        Ok(m) => Some(m),
        Err(e) if e.errno() == libc::EOPNOTSUPP => None,
        Err(e) => return Err(failed(e)),
    };
    out!("{}", render_memory(memory.as_ref()))?;
    // A mount older than the lock request answers EOPNOTSUPP.
    let lock = match client.lock_report() {
        Ok(l) => Some(l),
        Err(e) if e.errno() == libc::EOPNOTSUPP => None,
        Err(e) => return Err(failed(e)),
    };
    out!("{}", render_lock(lock.as_ref()))?;
    Ok(())
}

fn row(out: &mut String, label: &str, value: String) {
    let _ = writeln!(out, "{label:<26}{value}");
}

/// The section every layout has: the mount, its layout, space and device
/// work; only the mount's name for a mount that does not report the rest.
fn render_mount(dir: &str, m: Option<&MountReport>) -> String {
    let mut out = String::new();
    row(&mut out, "mount", dir.to_string());
    let Some(m) = m else { return out };
    let s = &m.space;
    let block = u64::from(s.block_size);
    let layout = match &m.layout {
        LayoutReport::Lfs(_) => "LFS".to_string(),
        LayoutReport::Ffs { integrity, cylinder_groups, .. } => {
            let integrity = integrity.name();
            format!("FFS, integrity={integrity}, {cylinder_groups} cylinder groups")
        }
    };
    row(&mut out, "layout", layout);
    row(
        &mut out,
        "space",
        format!(
            "{} free of {} ({} of {} blocks of {})",
            human(s.free_blocks.saturating_mul(block)),
            human(s.total_blocks.saturating_mul(block)),
            s.free_blocks,
            s.total_blocks,
            human(block)
        ),
    );
    row(&mut out, "inodes", format!("{} free of {}", s.free_inodes, s.total_inodes));
    match &m.layout {
        LayoutReport::Lfs(c) => {
            row(
                &mut out,
                "device writes",
                format!(
                    "{} ({} in {} blocks, {} partial segments)",
                    c.writes,
                    human(c.blocks_written.saturating_mul(block)),
                    c.blocks_written,
                    c.partial_segments
                ),
            );
            row(&mut out, "checkpoints", c.checkpoints.to_string());
            row(&mut out, "segments found empty", c.segments_reclaimed.to_string());
        }
        LayoutReport::Ffs { stats: c, leaks, journal, .. } => {
            if let Some(scan) = leak_scan(leaks) {
                row(&mut out, "leak scan", scan);
            }
            if let Some(j) = journal {
                row(
                    &mut out,
                    "journal",
                    format!(
                        "{} ({} logged, {} of it small files' data, in {} log writes, the largest {}), \
                         {} flushes, {} checkpoints to make room",
                        count(j.transactions, "transaction", "transactions"),
                        human(j.bytes_logged),
                        human(j.data_logged),
                        j.log_writes,
                        human(j.largest_transaction),
                        j.forces,
                        j.checkpoints
                    ),
                );
            }
            row(&mut out, "device reads", c.reads.to_string());
            row(
                &mut out,
                "device writes",
                format!(
                    "{} ({} in {} blocks, {} synchronous, {} clusters as they filled)",
                    c.writes,
                    human(c.bytes_written),
                    c.blocks_written,
                    c.sync_writes,
                    c.cluster_pushes
                ),
            );
            row(&mut out, "syncs", c.syncs.to_string());
            if c.reallocations > 0 {
                row(
                    &mut out,
                    "realloc",
                    format!("{} moved to contiguous space", count(c.reallocations, "run", "runs")),
                );
            }
        }
    }
    out
}

/// The background leak scan of a crash-left soft-updates image, in a
/// line; `None` when the mount needed none.
fn leak_scan(l: &LeakReport) -> Option<String> {
    let found = || {
        let mut parts = vec![
            format!(
                "freed {} and {}",
                count(l.frags_freed, "fragment", "fragments"),
                count(l.inodes_freed, "inode", "inodes")
            ),
            format!("lowered {}", count(l.links_lowered, "link count", "link counts")),
            format!("set {}", count(l.block_counts_set, "block count", "block counts")),
        ];
        if l.left_for_fsck > 0 {
            parts.push(format!(
                "left {} for `fslab fsck -p` once unmounted",
                count(l.left_for_fsck, "directory", "directories")
            ));
        }
        parts.join(", ")
    };
    Some(match &l.state {
        LeakScanState::NotNeeded => return None,
        LeakScanState::Running { next, of } => {
            let percent = next.saturating_mul(100) / (*of).max(1);
            format!("running: inode {next} of {of} ({percent}%); frees at the end")
        }
        LeakScanState::Done => format!("done: {}", found()),
        LeakScanState::Stopped(why) => {
            format!("stopped ({why}): nothing freed; run `fslab fsck -p` once unmounted")
        }
    })
}

/// The dirhash section, or a line saying the mount does not report it.
fn render_dirhash(d: Option<&DirhashReport>) -> String {
    let mut out = String::from("\n");
    let Some(d) = d else {
        out.push_str("dirhash: not reported by this mount (an older fslab)\n");
        return out;
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

/// The daemon's memory: resident, then each structure, largest first,
/// and what the structures leave unexplained (the program, thread stacks,
/// the allocator's free pages).
fn render_memory(m: Option<&MemoryReport>) -> String {
    let mut out = String::from("\n");
    let Some(m) = m else {
        out.push_str("memory: not reported by this mount (an older fslab)\n");
        return out;
    };
    let counted: u64 = m.parts.iter().map(|p| p.bytes).sum();
    let resident = match m.resident {
        Some(r) => format!("{} resident, {} of it in the structures below", human(r), human(counted)),
        None => format!("{} in the structures below", human(counted)),
    };
    row(&mut out, "memory", resident);
    let mut parts: Vec<_> = m.parts.iter().filter(|p| p.bytes > 0 || p.entries > 0).collect();
    parts.sort_by_key(|p| std::cmp::Reverse(p.bytes));
    for p in parts {
        let _ =
            writeln!(out, "  {:<40}{:>12}  {}", p.what, human(p.bytes), count(p.entries, "entry", "entries"));
    }
    out
}

/// `ns` nanoseconds in the unit that shows them best.
fn span(ns: u64) -> String {
    let ns = ns as f64;
    match ns {
        n if n >= 1e9 => format!("{:.1} s", n / 1e9),
        n if n >= 1e6 => format!("{:.1} ms", n / 1e6),
        n if n >= 1e3 => format!("{:.1} µs", n / 1e3),
        n => format!("{n:.0} ns"),
    }
}

/// The lock around the file system: how much of the time since mount it
/// was held exclusively (one call at a time), and how often and how long
/// calls waited for it — what finer locks could win back at most.
fn render_lock(l: Option<&LockReport>) -> String {
    let mut out = String::from("\n");
    let Some(l) = l else {
        out.push_str("lock: not reported by this mount (an older fslab)\n");
        return out;
    };
    let share = |part: u64, whole: u64| if whole == 0 { 0.0 } else { 100.0 * part as f64 / whole as f64 };
    let each =
        |total: u64, n: u64| total.checked_div(n).map(|t| format!(", {} each", span(t))).unwrap_or_default();
    row(
        &mut out,
        "lock: held exclusively",
        format!(
            "{:.1}% of the {} since mount",
            share(l.exclusive_held_ns, l.since_mount_ns),
            span(l.since_mount_ns)
        ),
    );
    row(
        &mut out,
        "lock: exclusive calls",
        format!(
            "{} ({} waited, {:.1}%: {} in all{})",
            l.exclusive,
            l.exclusive_waited,
            share(l.exclusive_waited, l.exclusive),
            span(l.exclusive_wait_ns),
            each(l.exclusive_wait_ns, l.exclusive_waited)
        ),
    );
    row(
        &mut out,
        "lock: shared calls",
        format!(
            "{} ({} declined to an exclusive call; {} waited: {} in all{})",
            l.shared,
            l.shared_declined,
            l.shared_waited,
            span(l.shared_wait_ns),
            each(l.shared_wait_ns, l.shared_waited)
        ),
    );
    if l.exclusive > 0 {
        row(&mut out, "lock: longest hold", format!("{}, by {}", span(l.longest_hold_ns), l.longest_hold_by));
    }
    out
}

/// The cleaner's report (LFS) as aligned text.
fn render(r: &Report) -> String {
    let mut out = String::new();
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
            blocks_moved: 5000,
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
        let text = render(&report);
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
    fn the_mount_section_names_each_layouts_counters() {
        use fslab::storage::StatFs;
        let space = StatFs {
            block_size: 8192,
            total_blocks: 1000,
            free_blocks: 250,
            total_inodes: 2048,
            free_inodes: 2000,
            name_max: 255,
        };
        let stats = fslab::ffs::Stats {
            writes: 40,
            blocks_written: 50,
            bytes_written: 400 << 10,
            sync_writes: 12,
            reads: 7,
            syncs: 3,
            checksummed_blocks: 9,
            cluster_pushes: 5,
            reallocations: 0,
        };
        let ffs = MountReport {
            space,
            layout: LayoutReport::Ffs {
                integrity: fslab::ffs::Integrity::Sync,
                cylinder_groups: 4,
                stats,
                leaks: LeakReport::default(),
                journal: None,
            },
        };
        let text = render_mount("/mnt", Some(&ffs));
        let want = "\
mount                     /mnt
layout                    FFS, integrity=sync, 4 cylinder groups
space                     2.0 MiB free of 7.8 MiB (250 of 1000 blocks of 8 KiB)
inodes                    2000 free of 2048
device reads              7
device writes             40 (400 KiB in 50 blocks, 12 synchronous, 5 clusters as they filled)
syncs                     3
";
        assert_eq!(text, want);
        let moved = MountReport {
            layout: match ffs.layout {
                LayoutReport::Ffs { integrity, cylinder_groups, stats, leaks, journal } => {
                    LayoutReport::Ffs {
                        integrity,
                        cylinder_groups,
                        stats: fslab::ffs::Stats { reallocations: 3, ..stats },
                        leaks,
                        journal,
                    }
                }
                other => other,
            },
            ..ffs
        };
        let text = render_mount("/mnt", Some(&moved));
        assert!(text.ends_with("realloc                   3 runs moved to contiguous space\n"), "{text}");

        let mut leaks = LeakReport {
            state: LeakScanState::Done,
            frags_freed: 12,
            inodes_freed: 1,
            links_lowered: 2,
            block_counts_set: 0,
            left_for_fsck: 1,
        };
        assert_eq!(
            leak_scan(&leaks).as_deref(),
            Some(
                "done: freed 12 fragments and 1 inode, lowered 2 link counts, set 0 block counts, left 1 directory \
                 for `fslab fsck -p` once unmounted"
            )
        );
        leaks.state = LeakScanState::Running { next: 250, of: 1000 };
        assert_eq!(leak_scan(&leaks).as_deref(), Some("running: inode 250 of 1000 (25%); frees at the end"));
        leaks.state = LeakScanState::NotNeeded;
        assert_eq!(leak_scan(&leaks), None);

        let journal = fslab::ffs::JournalStats {
            transactions: 1000,
            bytes_logged: 300 << 10,
            log_writes: 12,
            forces: 3,
            checkpoints: 0,
            largest_transaction: 12 << 10,
            data_logged: 20 << 10,
        };
        let journaled = MountReport {
            space,
            layout: LayoutReport::Ffs {
                integrity: fslab::ffs::Integrity::Journal,
                cylinder_groups: 4,
                stats,
                leaks: LeakReport::default(),
                journal: Some(journal),
            },
        };
        let text = render_mount("/mnt", Some(&journaled));
        assert!(
            text.contains(
                "journal                   1000 transactions (300 KiB logged, 20 KiB of it small files' data, \
                 in 12 log writes, the largest 12 KiB), 3 flushes, 0 checkpoints to make room"
            ),
            "{text}"
        );

        let stats = fslab::lfs::Stats {
            partial_segments: 5,
            cold_partial_segments: 1,
            blocks_written: 64,
            writes: 6,
            checkpoints: 2,
            segments_reclaimed: 1,
        };
        let lfs =
            MountReport { space: StatFs { block_size: 4096, ..space }, layout: LayoutReport::Lfs(stats) };
        let text = render_mount("/mnt", Some(&lfs));
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines.contains(&"layout                    LFS"), "{text}");
        assert!(
            lines.contains(&"device writes             6 (256 KiB in 64 blocks, 5 partial segments)"),
            "{text}"
        );
        assert!(lines.contains(&"checkpoints               2"), "{text}");
        assert_eq!(render_mount("/mnt", None), "mount                     /mnt\n");
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

    #[test]
    fn the_lock_section_gives_the_share_held_and_the_waits() {
        let report = LockReport {
            since_mount_ns: 10_000_000_000,
            exclusive: 400,
            exclusive_waited: 100,
            exclusive_wait_ns: 5_000_000,
            exclusive_held_ns: 2_500_000_000,
            longest_hold_ns: 162_000_000,
            longest_hold_by: "fallocate".into(),
            shared: 50,
            shared_declined: 5,
            shared_waited: 0,
            shared_wait_ns: 0,
        };
        let text = render_lock(Some(&report));
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines.contains(&"lock: held exclusively    25.0% of the 10.0 s since mount"), "{text}");
        assert!(
            lines.contains(&"lock: exclusive calls     400 (100 waited, 25.0%: 5.0 ms in all, 50.0 µs each)"),
            "{text}"
        );
        assert!(
            lines.contains(
                &"lock: shared calls        50 (5 declined to an exclusive call; 0 waited: 0 ns in all)"
            ),
            "{text}"
        );
        assert!(lines.contains(&"lock: longest hold        162.0 ms, by fallocate"), "{text}");
        assert!(render_lock(None).contains("not reported by this mount"));
    }
}
