//! `fslab age TARGET`: ages a file system with a seeded operation stream
//! or a recorded trace (the 1997 paper's aging, §3), printing each
//! simulated day's utilisation; on an FFS image its layout score (§3.3)
//! and free-space fragmentation, on an LFS image its cleaner's work and
//! write cost. Writes a results file at the end, and with `--plots` the
//! figures by day as SVG. The work is the lab's (`fslab_bench::aging`).
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
use fslab_bench::aging::report::{self, Described, Extra};
use fslab_bench::aging::run::{self, OpSource, RunOptions};
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

/// Runs the aging.
pub fn run(args: &AgeArgs) -> Result<(), String> {
    let name = args.target.display().to_string();
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
    let result = age(args, &name, &aged, &mut target, on_image.then_some(clock.as_ref()));
    let finished = target.finish().map_err(|e| format!("{name}: {e}"));
    result.and(finished)
}

fn age(
    args: &AgeArgs,
    name: &str,
    aged: &Aged,
    target: &mut Target,
    clock: Option<&VirtualClock>,
) -> Result<(), String> {
    let fs_bytes = match args.fs_size {
        Some(size) => size,
        None => target.usage().map_err(|e| format!("{name}: {e}"))?.total,
    };
    let mut generator;
    let mut reader;
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
            trace::write_header(&mut w, std::slice::from_ref(&described))
                .map_err(|e| format!("{}: {e}", path.display()))?;
            Some(w)
        }
        None => None,
    };
    outln!("{name}: {} of {}; {described}", aged.kind, crate::size::human(fs_bytes))?;
    if aged.extra != Extra::FreeSpace {
        outln!(
            "layout score and free-space fragmentation: not available (they are defined on FFS's placement \
             and read from an FFS image); utilisation, operations and bytes are"
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
    let summary = run::run(
        target,
        source,
        RunOptions {
            max_ops: args.ops,
            clock,
            record: record.as_mut().map(|w| w as &mut dyn Write),
            on_op: &mut |ops, day| {
                if ops % 1000 == 0 {
                    progress.borrow_mut().step(&format!("day {day}, {ops} operations"));
                }
            },
            on_day: &mut |day| {
                if printed.is_ok() {
                    printed = progress.borrow_mut().print(&report::day_line(day, aged.extra));
                }
            },
        },
    )
    .map_err(|e| format!("{name}: {e}"))?;
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
    if let Some(last) = summary.days.last().and_then(|d| d.score.as_ref()) {
        out!("layout at the end\n{}", score::render(last))?;
    }
    if let Some(groups) = &summary.final_groups {
        let runs: Vec<String> = groups.iter().map(|g| g.longest_run.to_string()).collect();
        outln!("longest free run by cylinder group at the end (blocks): {}", runs.join(" "))?;
    }
    if let Some(c) = &summary.cleaner {
        let cost = c.write_cost.map_or("-".to_string(), |w| format!("{w:.2}"));
        outln!(
            "cleaner over the run: {} segments cleaned, {} blocks moved, write cost {cost}",
            c.segments_cleaned,
            c.blocks_moved
        )?;
    }
    let described = Described { target: name, source: &described, cleaner_policy: aged.cleaner };
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
