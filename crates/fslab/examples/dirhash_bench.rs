//! Dirhash through the library: the shape of Figures 2–6 of Dowse and
//! Malone 2002 (§3.2) and their MH-folder test (§4.1, §4.4).
//!
//! For each directory size n and dirhash on and off: create n files in one
//! directory, stat them (a lookup) in creation order, in random order, stat
//! n names that do not exist, then remove them in creation order; each
//! phase's cost per operation in microseconds, and the memory the hashes
//! held. Last, three floors under a random stat, which involve no name:
//! `getattr` of the files by inode number in random order, a read of
//! the directory block of each entry in random order, and (`chain`) the
//! entry's chunk and then its inode, each read waiting for the one before
//! as in a lookup; they show what the random memory accesses of a stat
//! cost at each size whatever the index. The MH-folder test creates 33,164
//! files with numeric names in shuffled order, renames them to 1…33164 in
//! numeric order (`folder -pack`) and removes the directory.
//!
//! ```text
//! cargo run --release -p fslab --example dirhash_bench -- \
//!     [--storage lfs|mem] [--sizes 1000,10000,100000] [--modes on,off]
//!     [--off-max N] [--maxmem BYTES] [--mh] [--repeat N] [--seed N]
//! ```
//!
//! `--storage lfs` (the default) is LFS on a memory disk with a 256 MiB
//! buffer cache; `mem` is `MemStorage`, whose blocks are a hash map.
//! Sizes above `--off-max` (default 100,000) are run with dirhash on only:
//! the linear scan would take hours. `--maxmem` sets `dirhash_maxmem`
//! (default 2 MiB, the paper's; a 1M-entry directory needs about 8 MiB).
//! Each figure is the fastest of `--repeat` runs (default 3; with dirhash
//! off, one run from 100,000 entries up): the machine's other work only
//! ever adds time. Directory blocks read per operation is
//! the same in every run, and shows the linear scan whatever the noise.

use disk::{BlockDevice, MemDisk};
use fslab::format::inode::kind;
use fslab::format::ROOT_INO;
use fslab::lfs::{Lfs, MkfsOptions, MountOptions};
use fslab::storage::{MemStorage, StorageManager};
use fslab::ufs::{Creds, DirEntry, DirhashOptions, FileSystem, RenameFlags};
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

const ME: Creds = Creds { uid: 0, gid: 0 };

struct Args {
    storage: String,
    sizes: Vec<usize>,
    modes: Vec<bool>,
    off_max: usize,
    max_memory: u64,
    mh: bool,
    seed: u64,
    repeat: usize,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        storage: "lfs".into(),
        sizes: vec![1000, 10_000, 100_000],
        modes: vec![true, false],
        off_max: 100_000,
        max_memory: DirhashOptions::default().max_memory,
        mh: false,
        seed: 1,
        repeat: 3,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = || it.next().ok_or(format!("{arg} needs a value"));
        match arg.as_str() {
            "--storage" => args.storage = value()?,
            "--sizes" => {
                args.sizes = value()?
                    .split(',')
                    .map(|s| s.parse().map_err(|_| format!("--sizes: '{s}' is not a number")))
                    .collect::<Result<_, _>>()?
            }
            "--modes" => {
                args.modes = value()?
                    .split(',')
                    .map(|m| match m {
                        "on" => Ok(true),
                        "off" => Ok(false),
                        _ => Err(format!("--modes: '{m}' is not on or off")),
                    })
                    .collect::<Result<_, _>>()?
            }
            "--off-max" => args.off_max = value()?.parse().map_err(|_| "--off-max needs a number")?,
            "--maxmem" => args.max_memory = value()?.parse().map_err(|_| "--maxmem needs a byte count")?,
            "--repeat" => {
                args.repeat =
                    value()?.parse().ok().filter(|&r| r > 0).ok_or("--repeat needs a positive number")?
            }
            "--seed" => args.seed = value()?.parse().map_err(|_| "--seed needs a number")?,
            "--mh" => args.mh = true,
            "-h" | "--help" => {
                return Err("usage: dirhash_bench [--storage lfs|mem] [--sizes N,N] [--modes on,off] \
                            [--off-max N] [--maxmem BYTES] [--mh] [--repeat N] [--seed N]"
                    .into())
            }
            other => return Err(format!("unknown argument '{other}'")),
        }
    }
    if !["lfs", "mem"].contains(&args.storage.as_str()) {
        return Err(format!("--storage: '{}' is not lfs or mem", args.storage));
    }
    Ok(args)
}

/// A fresh file system on the chosen storage, sized for `files` files.
fn fresh(storage: &str, files: usize) -> Result<Bench, String> {
    let e = |e: fslab::Error| e.to_string();
    match storage {
        "mem" => Ok(Bench::Mem(Box::new(FileSystem::new(MemStorage::new(4096))))),
        _ => {
            // Inodes (256 bytes each), directory blocks and room for the log to move.
            let bytes = ((files as u64 * 1024).max(64 << 20) + (64 << 20)).next_multiple_of(1 << 20);
            let disk: Arc<dyn BlockDevice> = Arc::new(MemDisk::new(bytes));
            fslab::mkfs_lfs(disk.clone(), &MkfsOptions::default(), ME).map_err(e)?;
            let options = MountOptions { cache_bytes: 256 << 20, ..MountOptions::default() };
            Ok(Bench::Lfs(Box::new(FileSystem::new(Lfs::mount(disk, options).map_err(e)?))))
        }
    }
}

enum Bench {
    Mem(Box<FileSystem<MemStorage>>),
    Lfs(Box<FileSystem<Lfs>>),
}

/// One phase: microseconds and directory blocks read per operation.
#[derive(Clone, Copy)]
struct Cost {
    micros: f64,
    blocks: f64,
}

/// The cost per operation of `op` over `items`.
fn per_op<S: StorageManager, T>(
    fs: &mut FileSystem<S>,
    items: &[T],
    mut op: impl FnMut(&mut FileSystem<S>, &T) -> fslab::Result<()>,
) -> Result<Cost, String> {
    let blocks = fs.dirhash_stats().blocks_read;
    let start = Instant::now();
    for item in items {
        op(fs, item).map_err(|e| e.to_string())?;
    }
    let ops = items.len().max(1) as f64;
    Ok(Cost {
        micros: start.elapsed().as_secs_f64() * 1e6 / ops,
        blocks: (fs.dirhash_stats().blocks_read - blocks) as f64 / ops,
    })
}

/// The phases, in order: create, stat in order, stat at random, stat of
/// absent names, remove; and three floors under a random stat at each size,
/// which involve no name: `getattr` of the same files by inode number,
/// reading the directory block each entry lives in, in the same random
/// order (what confirming a candidate costs in memory traffic), and
/// [`storage_chain`].
struct Row {
    phases: [Cost; 8],
    peak_memory: u64,
    builds: u64,
    dir_bytes: u64,
}

fn name(i: usize) -> Vec<u8> {
    format!("f{i:07}").into_bytes()
}

fn sizes_run<S: StorageManager>(fs: &mut FileSystem<S>, n: usize, rng: &mut SmallRng) -> Result<Row, String> {
    let d = fs.mkdir(ROOT_INO, b"d", 0o755, ME).map_err(|e| e.to_string())?.ino;
    let names: Vec<Vec<u8>> = (0..n).map(name).collect();
    let absent: Vec<Vec<u8>> = (0..n).map(|i| format!("g{i:07}").into_bytes()).collect();
    let mut shuffled = names.clone();
    shuffled.shuffle(rng);
    let create = per_op(fs, &names, |fs, n| fs.mknod(d, n, kind::REG | 0o644, 0, ME).map(|_| ()))?;
    let dir_bytes = fs.getattr(d).map_err(|e| e.to_string())?.attr.size;
    let stat_seq = per_op(fs, &names, |fs, n| fs.lookup(d, n).map(|_| ()))?;
    let stat_random = per_op(fs, &shuffled, |fs, n| fs.lookup(d, n).map(|_| ()))?;
    let stat_absent = per_op(fs, &absent, |fs, n| match fs.lookup(d, n) {
        Err(e) if e.errno() == libc::ENOENT => Ok(()),
        Err(e) => Err(e),
        Ok(_) => Err(fslab::error::errno(libc::EEXIST, "a name that should not exist does")),
    })?;
    let listed = fs.readdir(d, 0, usize::MAX).map_err(|e| e.to_string())?;
    let mut entries: Vec<(u64, i64)> = listed
        .iter()
        .skip(2)
        .map(|e| (e.ino, ((e.next_offset - 1) / u64::from(fs.block_size())) as i64))
        .collect();
    entries.shuffle(rng);
    let getattr = per_op(fs, &entries, |fs, &(ino, _)| fs.getattr(ino).map(|_| ()))?;
    let mut block = vec![0u8; fs.block_size() as usize];
    let block_read = per_op(fs, &entries, |fs, &(_, lbn)| fs.storage().read_block(d, lbn, &mut block))?;
    let mut in_random_order = listed[2..].to_vec();
    in_random_order.shuffle(rng);
    let storage_chain = storage_chain(fs, d, &in_random_order)?;
    let remove = per_op(fs, &names, |fs, n| fs.unlink(d, n))?;
    fs.rmdir(ROOT_INO, b"d").map_err(|e| e.to_string())?;
    let stats = fs.dirhash_stats();
    Ok(Row {
        phases: [create, stat_seq, stat_random, stat_absent, remove, getattr, block_read, storage_chain],
        peak_memory: stats.peak_memory,
        builds: stats.builds,
        dir_bytes,
    })
}

/// What a random stat asks of the storage, without dirhash: for each entry
/// of `dir` (`listed`, in random order), its 512-byte chunk copied out of the buffer
/// cache, then its inode. Each read waits for the one before it, as in a
/// lookup (the inode number comes from the chunk, the next name after the
/// last answer): the `getattr` and `blk-read` floors let the processor
/// overlap one operation's cache misses with the next one's, which a
/// lookup's longer work does not. A random stat minus this is dirhash's
/// own cost: hashing, the table's slot, and confirming the name.
fn storage_chain<S: StorageManager>(
    fs: &mut FileSystem<S>,
    dir: u64,
    listed: &[DirEntry],
) -> Result<Cost, String> {
    let bs = u64::from(fs.block_size());
    let mut chunk = [0u8; 512];
    let mut carry = 0usize;
    let start = Instant::now();
    for k in 0..listed.len() {
        let e = &listed[(k + carry) % listed.len()];
        let offset = e.next_offset - 1;
        let (lbn, within) = ((offset / bs) as i64, (offset % bs / 512 * 512) as usize);
        fs.storage().read_block_part(dir, lbn, within, &mut chunk).map_err(|e| e.to_string())?;
        // The chunk's last byte is its magic's (0x44): zero here, but only
        // once the chunk has been read.
        let ino = e.ino + u64::from(chunk[511] ^ 0x44);
        let inode = fs.getattr(ino).map_err(|e| e.to_string())?;
        carry = (inode.attr.size & 1) as usize;
    }
    Ok(Cost { micros: start.elapsed().as_secs_f64() * 1e6 / listed.len().max(1) as f64, blocks: 0.0 })
}

/// The MH-folder test (§4.1): seconds for create, pack and remove.
fn mh_run<S: StorageManager>(fs: &mut FileSystem<S>, rng: &mut SmallRng) -> Result<[f64; 3], String> {
    const MESSAGES: usize = 33_164;
    let e = |e: fslab::Error| e.to_string();
    let d = fs.mkdir(ROOT_INO, b"inbox", 0o755, ME).map_err(e)?.ino;
    // A mailbox in use for years: message numbers with gaps, found in no
    // particular order.
    let mut numbers: Vec<usize> = Vec::with_capacity(MESSAGES);
    let mut next = 0;
    for _ in 0..MESSAGES {
        next += rng.gen_range(1..=3);
        numbers.push(next);
    }
    let mut found = numbers.clone();
    found.shuffle(rng);
    let start = Instant::now();
    for &m in &found {
        fs.mknod(d, m.to_string().as_bytes(), kind::REG | 0o644, 0, ME).map_err(e)?;
    }
    let create = start.elapsed().as_secs_f64();
    // folder -pack: renumber 1… in numeric order (never onto a name still in use).
    let start = Instant::now();
    for (k, &m) in numbers.iter().enumerate() {
        let new = (k + 1).to_string();
        if new != m.to_string() {
            fs.rename(d, m.to_string().as_bytes(), d, new.as_bytes(), RenameFlags::default()).map_err(e)?;
        }
    }
    let pack = start.elapsed().as_secs_f64();
    let start = Instant::now();
    for k in 1..=MESSAGES {
        fs.unlink(d, k.to_string().as_bytes()).map_err(e)?;
    }
    fs.rmdir(ROOT_INO, b"inbox").map_err(e)?;
    let remove = start.elapsed().as_secs_f64();
    Ok([create, pack, remove])
}

/// Runs `$body` with `$fs` bound to the fresh file system, whatever its storage.
macro_rules! on_fresh {
    ($storage:expr, $files:expr, $options:expr, |$fs:ident| $body:expr) => {
        match fresh($storage, $files)? {
            Bench::Mem(mut $fs) => {
                $fs.set_dirhash_options($options);
                $body
            }
            Bench::Lfs(mut $fs) => {
                $fs.set_dirhash_options($options);
                let result = $body;
                $fs.unmount().map_err(|e| e.to_string())?;
                result
            }
        }
    };
}

fn mode(on: bool) -> &'static str {
    if on {
        "on"
    } else {
        "off"
    }
}

fn run() -> Result<(), String> {
    let args = parse_args()?;
    let storage = match args.storage.as_str() {
        "mem" => "MemStorage",
        _ => "LFS on a memory disk, 256 MiB cache",
    };
    println!(
        "dirhash_bench: {storage}; 4 KiB blocks; names f0000000 (16-byte entries); dirhash_maxmem {} bytes",
        args.max_memory
    );
    println!(
        "per operation: microseconds (fastest of {} runs) and directory blocks read; \
         memory: the hashes' peak in KiB",
        args.repeat
    );
    let phase = |name: &str| format!("{name:>9} {:>6}", "blk");
    let phases: Vec<String> =
        ["create", "stat-seq", "stat-rand", "stat-none", "remove", "getattr", "blk-read", "chain"]
            .map(phase)
            .to_vec();
    println!(
        "{:>9} {:>4} {} {:>8} {:>8} {:>6}",
        "n",
        "hash",
        phases.join(" "),
        "memory",
        "dir KiB",
        "builds"
    );
    for &n in &args.sizes {
        for &on in &args.modes {
            if !on && n > args.off_max {
                println!("{n:>9} {:>4} (not run: over --off-max {})", mode(on), args.off_max);
                continue;
            }
            let options =
                DirhashOptions { enabled: on, max_memory: args.max_memory, ..DirhashOptions::default() };
            let mut best: Option<Row> = None;
            // The linear scan of a large directory takes minutes a run, and
            // its cost stands far above the machine's noise: once is enough.
            let rounds = if on || n < 100_000 { args.repeat } else { 1 };
            for round in 0..rounds {
                let mut rng = SmallRng::seed_from_u64(args.seed + round as u64);
                let row = on_fresh!(&args.storage, n, options, |fs| sizes_run(&mut fs, n, &mut rng)?);
                best = Some(match best {
                    None => row,
                    Some(mut b) => {
                        for (kept, new) in b.phases.iter_mut().zip(row.phases) {
                            kept.micros = kept.micros.min(new.micros);
                        }
                        b
                    }
                });
            }
            let Some(row) = best else { continue };
            let cells: Vec<String> =
                row.phases.iter().map(|c| format!("{:>9.2} {:>6.1}", c.micros, c.blocks)).collect();
            println!(
                "{n:>9} {:>4} {} {:>8.1} {:>8} {:>6}",
                mode(on),
                cells.join(" "),
                row.peak_memory as f64 / 1024.0,
                row.dir_bytes / 1024,
                row.builds
            );
        }
    }
    if args.mh {
        println!();
        println!("MH folder (33,164 messages), seconds");
        println!("{:>4} {:>9} {:>9} {:>9}", "hash", "create", "pack", "remove");
        for &on in &args.modes {
            let options =
                DirhashOptions { enabled: on, max_memory: args.max_memory, ..DirhashOptions::default() };
            let mut rng = SmallRng::seed_from_u64(args.seed);
            let [create, pack, remove] =
                on_fresh!(&args.storage, 33_164, options, |fs| mh_run(&mut fs, &mut rng)?);
            println!("{:>4} {create:>9.3} {pack:>9.3} {remove:>9.3}", mode(on));
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("dirhash_bench: {e}");
            ExitCode::FAILURE
        }
    }
}
