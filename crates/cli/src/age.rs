//! `fslab age TARGET`: ages a file system with a seeded operation stream
//! or a recorded trace (the 1997 paper's aging, §3), printing each
//! simulated day's utilisation; on an FFS image its layout score (§3.3)
//! and free-space fragmentation, on an LFS image its cleaner's work and
//! write cost. Writes a results file at the end, and with `--plots` the
//! figures by day as SVG. The work is the lab's (`fslab_bench::aging`).
//!
//! `--placement 1997` replays the stream as the 1997 paper did (§3.2):
//! one directory per cylinder group, each file in its group's directory
//! (`fslab_bench::aging::run`). It needs an FFS image: a mounted
//! directory is refused, as nothing portable says which group of the file
//! system below a directory's inode is in, and so is an LFS image, which
//! has no groups (its log places blocks by the time they are written).
//! `--save-bitmaps` writes every cylinder group's free-fragment bitmap as
//! the unmounted image has it at the end.
//!
//! An image is mounted in this process on virtual time, moved to each
//! operation's simulated time, so syncs, deferred frees and the LFS
//! cleaner see the stream's idle gaps. A directory (any mounted file
//! system) is aged through ordinary file calls on the host's time.

use clap::Args;
use disk::{BlockDevice, FileDisk, VirtualClock};
use fslab::ffs::{DirPref, Ffs};
use fslab::lfs::Lfs;
use fslab::time::TimeSource;
use fslab::Layout;
use fslab_bench::aging::generate::{Generator, Params};
use fslab_bench::aging::plots;
use fslab_bench::aging::rebuild::{self, SavedMaps};
use fslab_bench::aging::report::{self, Described, Extra};
use fslab_bench::aging::run::{self, OpSource, Placement, RunOptions};
use fslab_bench::aging::score;
use fslab_bench::aging::trace::{self, TraceReader};
use fslab_bench::cpu::CpuModel;
use fslab_bench::progress::Progress;
use fslab_bench::system::{FfsParams, Integrity, LfsParams, Rotdelay};
use fslab_bench::target::dir::Dir;
use fslab_bench::target::library::{Library, MountEnv};
use fslab_bench::target::Target;
use fslab_cleaner::policy;
use std::cell::RefCell;
use std::io::{BufReader, BufWriter, IsTerminal, Write};
use std::path::PathBuf;
use std::sync::Arc;

/// Examples in `fslab age --help`.
pub const EXAMPLES: &str = "Examples:
  fslab age ffs.img --days 30 --write-factor 10   a month, writing 10x the file system
  fslab age ffs.img --seed 7 --record run.trace   the same seed, its stream recorded
  fslab age ffs2.img --trace run.trace            the recorded stream again
  fslab age lfs.img --days 30 --cleaner greedy    an LFS: the cleaner's work and write cost
  fslab age ffs.img --days 30 --plots plots/      the figures by day as SVG
  fslab age ffs.img --placement 1997              the paper's replay: one directory per cylinder group
  fslab age ffs.img --save-bitmaps free.bin       every group's free-fragment bitmap at the end
  fslab age /mnt/ext4 --days 30                   a mounted directory (no layout score)";

/// Arguments of `fslab age`.
#[derive(Args)]
pub struct AgeArgs {
    /// An unmounted FFS or LFS image (or block device), or a directory of
    /// any mounted file system.
    target: PathBuf,
    /// The stream's seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Simulated days (the 1997 paper's ten months: 300).
    #[arg(long, default_value_t = 300)]
    days: u64,
    /// Bytes written over the run, as a multiple of the file system's
    /// size (the paper's 48.6 GB on 502 MB: about 100).
    #[arg(long, default_value_t = 100)]
    write_factor: u64,
    /// The file-system size the stream is made for [default: the
    /// target's]: on a directory of a large file system, the size of the
    /// part to age.
    #[arg(long, value_parser = crate::size::parse_size)]
    fs_size: Option<u64>,
    /// Stop after this many operations.
    #[arg(long)]
    ops: Option<u64>,
    /// Replay this trace instead of generating a stream.
    #[arg(long, conflicts_with_all = ["seed", "days", "write_factor", "fs_size"])]
    trace: Option<PathBuf>,
    /// Record the stream as run (back-off unlinks included) to this trace.
    #[arg(long)]
    record: Option<PathBuf>,
    /// The results file (JSON, docs/FORMAT.md "Aging results").
    #[arg(long, default_value = "age-results.json")]
    results: PathBuf,
    /// FFS image: the metadata-integrity mode of the mount: sync, async or softdep.
    #[arg(long, default_value = "async")]
    integrity: String,
    /// FFS image: the journal's log device, if not at the path mkfs recorded.
    #[arg(long)]
    journal_device: Option<PathBuf>,
    /// LFS image: the cleaning policy (greedy, cost-benefit or hot-cold),
    /// or off [default: hot-cold].
    #[arg(long, value_name = "POLICY")]
    cleaner: Option<String>,
    /// Write the figures by day as SVG charts into this directory.
    #[arg(long, value_name = "DIR")]
    plots: Option<PathBuf>,
    /// Where files go: namespace (where the stream's paths put them) or
    /// 1997 (the paper's replay: one directory per cylinder group, each
    /// file in the directory of the group its identity maps to; FFS
    /// images only).
    #[arg(long, default_value = "namespace", value_name = "namespace|1997")]
    placement: String,
    /// FFS image: write every cylinder group's free-fragment bitmap at the
    /// end to this file (docs/FORMAT.md "Aging free-space bitmaps").
    #[arg(long, value_name = "FILE")]
    save_bitmaps: Option<PathBuf>,
}

/// What was aged, as the report names it.
struct Aged {
    kind: &'static str,
    extra: Extra,
    /// The LFS cleaner's policy, if one runs.
    cleaner: Option<&'static str>,
}

/// The cleaner `--cleaner` asks for: a policy's name, or `None` for off.
fn cleaner_policy(args: &AgeArgs) -> Result<Option<&'static str>, String> {
    match args.cleaner.as_deref() {
        None => Ok(Some(policy::DEFAULT)),
        Some("off") => Ok(None),
        Some(name) => policy::NAMES
            .iter()
            .copied()
            .find(|&n| n == name)
            .map(Some)
            .ok_or_else(|| format!("--cleaner {name}: one of {}, or off", policy::NAMES.join(", "))),
    }
}

/// Why `aged` has no layout score and no cylinder groups, as the report
/// says it after `n/a`.
fn not_measured(aged: &Aged) -> &'static str {
    match aged.extra {
        Extra::Cleaner => "an LFS image: no block placement to score, no cylinder groups",
        _ => "not an fslab image",
    }
}

/// Set by SIGINT, SIGTERM or SIGHUP: the run stops before its next
/// operation and the image is unmounted as after a finished run, never
/// left as a killed mount leaves it.
static STOP: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Blocks the shutdown signals (before any thread that would take them
/// starts) and sets [`STOP`] when one comes; a second one ends the process
/// at once, as the signal would have.
fn stop_on_signals() {
    let signals = crate::mount::block_signals();
    let _ = std::thread::Builder::new().name("fslab-age-signals".to_string()).spawn(move || {
        if signals.wait().is_err() {
            return;
        }
        STOP.store(true, std::sync::atomic::Ordering::Relaxed);
        say!("fslab: age: stopping after this operation, then unmounting cleanly (again to stop at once)");
        if signals.wait().is_ok() {
            std::process::exit(130);
        }
    });
}

/// Runs the aging.
pub fn run(args: &AgeArgs) -> Result<(), String> {
    stop_on_signals();
    let name = args.target.display().to_string();
    let placement = Placement::parse(&args.placement)
        .ok_or_else(|| format!("--placement {}: one of namespace, 1997", args.placement))?;
    let integrity = match args.integrity.as_str() {
        "sync" => Integrity::Sync,
        "async" => Integrity::Async,
        "softdep" => Integrity::Softdep,
        other => return Err(format!("--integrity {other}: one of sync, async, softdep")),
    };
    let cleaner = cleaner_policy(args)?;
    let mut _lock = None;
    let mut _log_lock = None;
    let clock = Arc::new(VirtualClock::new());
    let env = MountEnv {
        clock: TimeSource::virtual_clock(clock.clone()),
        deterministic: true,
        cache_bytes: 64 << 20,
    };
    let (mut target, aged) = if args.target.is_dir() {
        if args.cleaner.is_some() {
            return Err(format!(
                "{name}: --cleaner is for an LFS image; a mounted directory cleans as mounted"
            ));
        }
        if placement == Placement::CylinderGroups {
            return Err(format!(
                "{name}: --placement 1997 needs an FFS image; a mounted directory's cylinder groups \
                 cannot be told from it"
            ));
        }
        if args.save_bitmaps.is_some() {
            return Err(format!("{name}: --save-bitmaps needs an FFS image; a mounted directory has none"));
        }
        let dir = Dir::existing(&args.target).map_err(|e| format!("{name}: {e}"))?;
        (Target::on_wall_time(Box::new(dir)), Aged { kind: "directory", extra: Extra::None, cleaner: None })
    } else {
        _lock = Some(crate::image_lock::lock(&args.target).map_err(|e| format!("{name}: {e}"))?);
        let disk: Arc<dyn BlockDevice> =
            Arc::new(FileDisk::open(&args.target).map_err(|e| format!("{name}: {e}"))?);
        let (backend, aged): (Box<dyn fslab_bench::target::Backend>, Aged) =
            match Layout::probe(disk.as_ref()) {
                Some(Layout::Ffs) => {
                    if args.cleaner.is_some() {
                        return Err(format!("{name}: an FFS image: --cleaner is for an LFS image"));
                    }
                    let (dev, log_lock) = crate::log_device::attach(
                        &args.target,
                        disk,
                        args.journal_device.as_deref(),
                        crate::log_device::Access::Write,
                    )?;
                    _log_lock = Some(log_lock);
                    // Only the mount's choices are read from these: the image's
                    // own geometry is its superblock's.
                    let params = FfsParams {
                        block_size: 0,
                        fragment_size: 0,
                        maxcontig: 0,
                        rotdelay: Rotdelay::Blocks(0),
                        integrity,
                        dirhash: true,
                        group_bytes: None,
                        realloc: false,
                        dirpref: DirPref::Old,
                    };
                    let library =
                        Library::<Ffs>::open(dev, None, params, env).map_err(|e| format!("{name}: {e}"))?;
                    (Box::new(library), Aged { kind: "FFS image", extra: Extra::FreeSpace, cleaner: None })
                }
                Some(Layout::Lfs) => {
                    if placement == Placement::CylinderGroups {
                        return Err(format!(
                            "{name}: --placement 1997 needs an FFS image; an LFS image has no cylinder groups"
                        ));
                    }
                    if args.save_bitmaps.is_some() {
                        return Err(format!(
                            "{name}: --save-bitmaps needs an FFS image; an LFS image has no cylinder groups"
                        ));
                    }
                    // As for FFS, the geometry is the superblock's; the
                    // cleaner runs in-line, by writers short of clean
                    // segments and in the stream's idle gaps.
                    let params = LfsParams { block_size: 0, segment_size: 0, cleaner, dirhash: true };
                    let library =
                        Library::<Lfs>::open(disk, None, params, env).map_err(|e| format!("{name}: {e}"))?;
                    (Box::new(library), Aged { kind: "LFS image", extra: Extra::Cleaner, cleaner })
                }
                None => return Err(format!("{name}: neither an fslab image nor a directory")),
            };
        (Target::on_virtual_time(backend, clock.clone(), CpuModel::off()), aged)
    };
    let on_image = target.is_virtual();
    let result = age(args, &name, &aged, placement, &mut target, on_image.then_some(clock.as_ref()));
    let finished = target.finish().map_err(|e| format!("{name}: {e}"));
    result.and(finished)?;
    match &args.save_bitmaps {
        Some(path) => save_bitmaps(&args.target, path),
        None => Ok(()),
    }
}

/// Writes the free-fragment bitmaps of the unmounted FFS image at `image`
/// to `path`: read after the unmount, so that frees soft updates or the
/// journal deferred have reached the groups.
fn save_bitmaps(image: &std::path::Path, path: &std::path::Path) -> Result<(), String> {
    let name = image.display();
    let disk = FileDisk::open(image).map_err(|e| format!("{name}: {e}"))?;
    let maps = rebuild::free_maps(&disk).map_err(|e| format!("{name}: {e}"))?;
    let saved = SavedMaps::of(&maps);
    std::fs::write(path, saved.encode()).map_err(|e| format!("{}: {e}", path.display()))?;
    outln!("free-space bitmaps: {} ({} cylinder groups)", path.display(), saved.groups.len())
}

fn age(
    args: &AgeArgs,
    name: &str,
    aged: &Aged,
    placement: Placement,
    target: &mut Target,
    clock: Option<&VirtualClock>,
) -> Result<(), String> {
    let fs_bytes = match args.fs_size {
        Some(size) => size,
        None => target.usage().map_err(|e| format!("{name}: {e}"))?.total,
    };
    let mut generator;
    let mut reader;
    // A trace's length is not known until it ends, so its progress shows
    // the day alone; a generated stream shows how far through its days.
    let days_ahead = args.trace.is_none().then_some(args.days.max(1));
    let (source, described): (&mut dyn OpSource, String) = match &args.trace {
        Some(path) => {
            let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
            reader = TraceReader::new(BufReader::new(file));
            (&mut reader, format!("trace {}", path.display()))
        }
        None => {
            let params =
                Params { seed: args.seed, fs_bytes, days: args.days.max(1), write_factor: args.write_factor };
            generator = Generator::new(params);
            (&mut generator, params.describe())
        }
    };
    let mut record = match &args.record {
        Some(path) => {
            let file = std::fs::File::create(path).map_err(|e| format!("{}: {e}", path.display()))?;
            let mut w = BufWriter::new(file);
            // The placement is a comment: the trace is the stream, which
            // replays under either.
            let comments = [described.clone(), format!("placement {}", placement.name())];
            trace::write_header(&mut w, &comments).map_err(|e| format!("{}: {e}", path.display()))?;
            Some(w)
        }
        None => None,
    };
    outln!(
        "{name}: {} of {}; {described}; placement {}",
        aged.kind,
        crate::size::human(fs_bytes),
        placement.name()
    )?;
    if aged.extra != Extra::FreeSpace {
        outln!(
            "layout score, by-size scores and free-space fragmentation: n/a ({}; they are defined on \
             FFS's placement and read from an FFS image); utilisation, operations, bytes and files are \
             measured",
            not_measured(aged)
        )?;
    }
    if aged.extra == Extra::Cleaner {
        let policy = aged.cleaner.unwrap_or("off");
        outln!("cleaner: {policy}; each day its segments cleaned, live blocks moved and write cost")?;
    }
    outln!("{}", report::day_header(aged.extra))?;
    let started = std::time::Instant::now();
    let progress = RefCell::new(Progress::new(std::io::stderr().is_terminal()));
    progress.borrow_mut().start(&format!("age {name}"));
    let mut printed = Ok(());
    let progress_ops = std::cell::Cell::new(0u64);
    let summary = run::run(
        target,
        source,
        RunOptions {
            max_ops: args.ops,
            clock,
            record: record.as_mut().map(|w| w as &mut dyn Write),
            on_op: &mut |ops, day| {
                progress_ops.set(ops);
                if ops % 1000 == 0 {
                    let through = match days_ahead {
                        Some(days) => format!("day {day} of {days} ({}%)", 100 * day / days),
                        None => format!("day {day}"),
                    };
                    progress.borrow_mut().step(&format!("{through}, {ops} operations"));
                }
            },
            on_day: &mut |day| {
                if printed.is_ok() {
                    printed = progress.borrow_mut().print(&report::day_line(day, aged.extra));
                }
            },
            placement,
            stop: Some(&STOP),
        },
    )
    .map_err(|e| match e.kind() {
        std::io::ErrorKind::Interrupted => {
            format!(
                "{name}: interrupted after {} operations; the image is unmounted cleanly",
                progress_ops.get()
            )
        }
        _ => format!("{name}: {e}"),
    })?;
    printed.map_err(|e| format!("cannot write to standard output: {e}"))?;
    if let Some(mut w) = record {
        w.flush().map_err(|e| format!("recording: {e}"))?;
    }
    progress.borrow_mut().done(started.elapsed());
    outln!(
        "{} operations, {} written over {} days",
        summary.ops,
        crate::size::human(summary.bytes_written),
        summary.days.len()
    )?;
    if let Some((made, groups)) = summary.group_dirs {
        outln!("placement 1997: {made} of {groups} cylinder groups have a directory")?;
    }
    match summary.days.last().and_then(|d| d.score.as_ref()) {
        Some(last) => out!("layout at the end\n{}", score::render(last))?,
        None => outln!("layout at the end (and by size): n/a ({})", not_measured(aged))?,
    }
    match &summary.final_groups {
        Some(groups) => {
            let runs: Vec<String> = groups.iter().map(|g| g.longest_run.to_string()).collect();
            outln!("longest free run by cylinder group at the end (blocks): {}", runs.join(" "))?
        }
        None if aged.extra != Extra::Cleaner => {
            outln!("longest free run by cylinder group at the end: n/a ({})", not_measured(aged))?
        }
        None => {}
    }
    if let Some(c) = &summary.cleaner {
        let cost = c.write_cost.map_or("-".to_string(), |w| format!("{w:.2}"));
        outln!(
            "cleaner over the run: {} segments cleaned, {} blocks moved, write cost {cost}",
            c.segments_cleaned,
            c.blocks_moved
        )?;
    }
    let described = Described {
        target: name,
        source: &described,
        cleaner_policy: aged.cleaner,
        placement: placement.name(),
    };
    let json = report::results_json(&summary, &described);
    std::fs::write(&args.results, report::results_text(&json))
        .map_err(|e| format!("{}: {e}", args.results.display()))?;
    outln!("results: {}", args.results.display())?;
    if let Some(dir) = &args.plots {
        let figures = report::figures(&json)?;
        let written =
            plots::write_svgs(&figures, name, dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let names: Vec<String> = written.iter().map(|p| p.display().to_string()).collect();
        outln!(
            "plots: {}",
            if names.is_empty() { "none (nothing to draw)".to_string() } else { names.join(" ") }
        )?;
    }
    Ok(())
}
