//! The cleaner benchmark (run by `scripts/bench-cleaner`): the overwrite
//! workload of `fslab_cleaner::workload`, uniform and hot-and-cold, at
//! several utilizations, once per policy, each on a fresh image file. Prints
//! the write cost (`CleanerCounters::write_cost`), the log written for
//! users per byte of their file data (`user-log`: inodes, summaries and the
//! checkpoints' ifile blocks make it exceed 1) and the throughput of the
//! measured phase, which follows a
//! warm-up overwrite of the disk's size (or `--warmup` times it) so that
//! cleaning is near steady state. Under hot-and-cold access the cold data
//! is rewritten only every few disks' worth of writes, so the fill's
//! segments are still being cleaned after one disk; `--warmup 8` gives
//! steady-state figures.
//!
//! Usage: cleaner_bench [--dir DIR] [--disk-mib N] [--segment-kib N]
//!        [--file-blocks N] [--multiple X] [--warmup X] [--utils 0.5,0.7,..]
//!        [--policies a,b] [--access uniform,hot-cold] [--memory] [--seed N]
//!
//! `--seed` (default 42) seeds the warm-up's random choices; the measured
//! phase uses the next seed. Other seeds show how much a figure owes to
//! one sequence of choices.

use disk::{BlockDevice, FileDisk, MemDisk};
use fslab::lfs::{Lfs, MkfsOptions, MountOptions};
use fslab::ufs::FileSystem;
use fslab_cleaner::workload::{Access, Files, Spec};
use fslab_cleaner::{policy, Cleaner};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

struct Args {
    dir: PathBuf,
    disk_mib: u64,
    segment_kib: u32,
    file_blocks: u64,
    multiple: f64,
    warmup: f64,
    utils: Vec<f64>,
    policies: Vec<String>,
    access: Vec<String>,
    memory: bool,
    seed: u64,
}

fn parse() -> Result<Args, String> {
    let mut a = Args {
        dir: std::env::temp_dir(),
        disk_mib: 128,
        segment_kib: 512,
        file_blocks: 1,
        multiple: 4.0,
        warmup: 1.0,
        utils: vec![0.5, 0.7, 0.8, 0.9],
        policies: policy::NAMES.iter().map(|s| s.to_string()).collect(),
        access: vec!["uniform".into(), "hot-cold".into()],
        memory: false,
        seed: 42,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        let bad = |v: &str| format!("bad value {v:?} for {flag}");
        match flag.as_str() {
            "--dir" => a.dir = PathBuf::from(value()?),
            "--disk-mib" => a.disk_mib = value()?.parse().map_err(|_| bad("disk-mib"))?,
            "--segment-kib" => a.segment_kib = value()?.parse().map_err(|_| bad("segment-kib"))?,
            "--file-blocks" => a.file_blocks = value()?.parse().map_err(|_| bad("file-blocks"))?,
            "--multiple" => a.multiple = value()?.parse().map_err(|_| bad("multiple"))?,
            "--warmup" => a.warmup = value()?.parse().map_err(|_| bad("warmup"))?,
            "--utils" => {
                a.utils = value()?
                    .split(',')
                    .map(|s| s.parse::<f64>().map_err(|_| bad(s)))
                    .collect::<Result<_, _>>()?
            }
            "--policies" => a.policies = value()?.split(',').map(String::from).collect(),
            "--access" => a.access = value()?.split(',').map(String::from).collect(),
            "--memory" => a.memory = true,
            "--seed" => a.seed = value()?.parse().map_err(|_| bad("seed"))?,
            "--help" | "-h" => {
                println!(
                    "{}",
                    include_str!("cleaner_bench.rs")
                        .lines()
                        .take_while(|l| l.starts_with("//!"))
                        .collect::<Vec<_>>()
                        .join("\n")
                );
                std::process::exit(0);
            }
            other => return Err(format!("unknown option {other}")),
        }
    }
    if !(a.multiple.is_finite() && a.multiple > 0.0 && a.warmup.is_finite() && a.warmup >= 0.0) {
        return Err("--multiple must be above 0 and --warmup at least 0".into());
    }
    for p in &a.policies {
        if policy::by_name(p).is_none() {
            return Err(format!("unknown policy {p} (known: {})", policy::NAMES.join(", ")));
        }
    }
    Ok(a)
}

struct Row {
    write_cost: f64,
    /// Log written for users (data and metadata) per byte of their data.
    user_log: f64,
    mb_per_s: f64,
    cleaned: u64,
    mean_u: f64,
    enospc: u64,
}

fn run_one(a: &Args, access: Access, util: f64, policy_name: &str) -> Result<Row, String> {
    let bytes = a.disk_mib << 20;
    let image = a.dir.join(format!("fslab-cleaner-bench-{}.img", std::process::id()));
    let dev: Arc<dyn BlockDevice> = if a.memory {
        Arc::new(MemDisk::new(bytes))
    } else {
        let f = std::fs::File::create(&image).map_err(|e| format!("{}: {e}", image.display()))?;
        f.set_len(bytes).map_err(|e| e.to_string())?;
        drop(f);
        Arc::new(FileDisk::open(&image).map_err(|e| format!("{}: {e}", image.display()))?)
    };
    let mkfs = MkfsOptions { block_size: 4096, segment_size: a.segment_kib << 10 };
    fslab::mkfs_lfs(dev.clone(), &mkfs, Default::default()).map_err(|e| e.to_string())?;
    let options = MountOptions { cache_bytes: 4 << 20, ..MountOptions::default() };
    let mut lfs = Lfs::mount(dev.clone(), options).map_err(|e| e.to_string())?;
    let policy = policy::by_name(policy_name).ok_or("policy")?;
    Cleaner::new(policy).install(&mut lfs);
    let mut fs = FileSystem::new(lfs);
    let mut spec = Spec {
        utilization: util,
        file_blocks: a.file_blocks,
        write_multiple: a.warmup,
        access,
        seed: a.seed,
    };
    let mut files = Files::fill(&mut fs, &spec).map_err(|e| format!("fill: {e}"))?;
    files.overwrite(&mut fs, &spec).map_err(|e| format!("warm-up: {e}"))?;
    fs.sync().map_err(|e| e.to_string())?;
    let before = fs.storage().cleaner_report().total;
    spec.write_multiple = a.multiple;
    spec.seed = a.seed.wrapping_add(1);
    let start = Instant::now();
    let outcome = files.overwrite(&mut fs, &spec).map_err(|e| format!("overwrite: {e}"))?;
    fs.sync().map_err(|e| e.to_string())?;
    let elapsed = start.elapsed().as_secs_f64();
    let report = fs.storage().cleaner_report();
    let after = report.total;
    let us = &report.cleaned_utilization;
    let mean_u = us.iter().map(|(_, u)| u).sum::<f64>() / us.len().max(1) as f64;
    files.verify(&mut fs)?;
    if std::env::var_os("BENCH_DEBUG").is_some() {
        eprintln!("{policy_name}: {:?} {:?}", after.since(&before), fs.storage().stats());
    }
    fs.unmount().map_err(|e| e.to_string())?;
    drop(fs);
    let _ = std::fs::remove_file(&image);
    let measured = after.since(&before);
    Ok(Row {
        write_cost: measured.write_cost().unwrap_or(f64::NAN),
        user_log: measured.user_bytes_written as f64 / measured.user_data_bytes_written.max(1) as f64,
        mb_per_s: outcome.bytes_overwritten as f64 / elapsed / 1e6,
        cleaned: after.segments_cleaned - before.segments_cleaned,
        mean_u,
        enospc: outcome.enospc,
    })
}

fn main() {
    let a = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("cleaner_bench: {e}");
            std::process::exit(2);
        }
    };
    println!(
        "# fslab cleaner benchmark: {} MiB {}, {} KiB segments, {}-block files, {}x the disk overwritten after a {}x warm-up",
        a.disk_mib,
        if a.memory { "memory disk" } else { "image file" },
        a.segment_kib,
        a.file_blocks,
        a.multiple,
        a.warmup
    );
    println!(
        "{:<10} {:>5} {:<13} {:>10} {:>8} {:>9} {:>9} {:>8} {:>7}",
        "access", "util", "policy", "write-cost", "user-log", "MB/s", "cleaned", "clean-u", "ENOSPC"
    );
    for access_name in &a.access {
        let access = match access_name.as_str() {
            "uniform" => Access::Uniform,
            "hot-cold" => Access::HOT_COLD,
            other => {
                eprintln!("cleaner_bench: unknown access {other} (uniform, hot-cold)");
                std::process::exit(2);
            }
        };
        for &util in &a.utils {
            for p in &a.policies {
                match run_one(&a, access, util, p) {
                    Ok(r) => println!(
                        "{:<10} {:>5.2} {:<13} {:>10.2} {:>8.2} {:>9.1} {:>9} {:>8.2} {:>7}",
                        access_name,
                        util,
                        p,
                        r.write_cost,
                        r.user_log,
                        r.mb_per_s,
                        r.cleaned,
                        r.mean_u,
                        r.enospc
                    ),
                    Err(e) => println!("{access_name:<10} {util:>5.2} {p:<13} failed: {e}"),
                }
            }
        }
    }
}
