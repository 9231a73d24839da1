//! Power cuts while the cleaner runs (STYLE.md item 14; 1993 paper §3.5 and
//! §4.3). The rule under test: a segment `segclean` emptied is written again
//! only after a checkpoint, so the newest checkpoint and the log after it
//! never need a segment that was overwritten.
//!
//! The workload, on a [`CrashDisk`] over a small LFS whose segments are all
//! partly dead and only a few clean: a checkpoint; a cleaning pass (live
//! blocks moved by `markv`, segments declared empty by `segclean`); more
//! unsynced writes than the clean segments ahead of the log hold, then
//! fsyncs; the checkpoint that reclaims the emptied segments; writes until
//! the log has entered them, with fsyncs, syncs and more passes on the way;
//! a few unsynced writes. Every barrier (just before it, with what was
//! written since the previous one lost, and just after it), and a seeded
//! sample of the images a power cut after any write could leave (unflushed
//! writes dropped, reordered or torn), is mounted and checked:
//!
//! 1. mount succeeds;
//! 2. the root holds only names the workload made, and every file whose
//!    creation was acknowledged (a sync, or an fsync of it, returned before
//!    the cut) is there with its inode number;
//! 3. contents and size (docs/SEMANTICS.md, "Durability"): each file reads
//!    as the version its latest acknowledged sync or fsync made durable, or
//!    as a later one; since what was written but not synced "may or may not
//!    be" there, and a file's blocks reach the log independently, each
//!    block may be that of any such version (or a hole, where the version
//!    had none), and the size that of any. Every block says which file,
//!    version and block it is, so a block from anywhere else — a segment
//!    reused too early — is caught;
//! 4. `fslab-check` on the image after the recovery mount and a clean
//!    unmount finds nothing at all (roll-forward's live counts are exact).
//!
//! The workload runs twice: with moved data written at the users' log head,
//! and at the cold head (so roll-forward must merge two heads by serial
//! number; the second run fails by the hundreds if it follows one head).
//!
//! `FSLAB_CLEANER_CRASH_STATES` (default 600) bounds the sampled states
//! checked besides the barrier states; `FSLAB_CLEANER_CRASH_SEED` changes
//! the sample. Another test is the regression test of a mount bug the
//! first one found.

use disk::{BlockDevice, CrashChoice, CrashDisk, MemDisk};
use fslab::format::inode::kind;
use fslab::format::{Ino, ROOT_INO};
use fslab::lfs::clean::{parse_segment, SegmentState, SegmentTable};
use fslab::lfs::layout::WriteClock;
use fslab::lfs::{Lfs, MkfsOptions, MountOptions, UserSeparation};
use fslab::ufs::{Creds, FileSystem};
use fslab_cleaner::policy::Policy;
use fslab_cleaner::{policy, Cleaner};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use testkit::harness::env_or;

const DISK: u64 = 8 << 20;
const BLOCK: usize = 4096;
const SEGMENT: u32 = 256 << 10;
/// Blocks per file at first: past the direct blocks, so indirect blocks move too.
const FILE_BLOCKS: usize = 16;
const FILES: usize = 40;

fn mount_options() -> MountOptions {
    MountOptions { cache_bytes: 1 << 20, ..MountOptions::default() }
}

/// The setup's mount: a cache that writes in 1 MiB batches (a quarter of
/// it). The setup runs with no cleaner, so it can only write into clean
/// segments: its five rounds of overwrites end with 93 blocks free, the
/// rest of the space live or dead, so that the runs' writers soon need
/// the cleaner. (A sixth round no longer fits beside the share of the
/// reserve kept for operations that free space; with 1 MiB batches it
/// ended 15 blocks short of ENOSPC before that share existed.) In the
/// 256 KiB batches of [`mount_options`]' cache each touched file's
/// indirect and inode blocks and a summary are written four times as
/// often, and fewer overwrites meet in the cache.
fn setup_mount_options() -> MountOptions {
    MountOptions { cache_bytes: 4 << 20, ..MountOptions::default() }
}

/// Block `block` of version `tag` of file `file`: a header naming all three,
/// then bytes derived from them, so a block read back says where it came
/// from, and a torn or misplaced block does not pass for another.
fn contents(file: usize, tag: u32, block: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(BLOCK);
    out.extend_from_slice(b"CRSH");
    out.extend_from_slice(&(file as u32).to_le_bytes());
    out.extend_from_slice(&tag.to_le_bytes());
    out.extend_from_slice(&(block as u32).to_le_bytes());
    let mut x =
        ((file as u64) << 40 | u64::from(tag) << 20 | block as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    while out.len() < BLOCK {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out.extend_from_slice(&x.to_le_bytes());
    }
    out.truncate(BLOCK);
    out
}

/// What a block read back is: a hole, a block [`contents`] made (file,
/// tag, block), or something else.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Seen {
    Hole,
    Block(usize, u32, usize),
    Garbage,
}

fn identify(data: &[u8]) -> Seen {
    if data.iter().all(|&b| b == 0) {
        return Seen::Hole;
    }
    let word = |i: usize| u32::from_le_bytes([data[i], data[i + 1], data[i + 2], data[i + 3]]);
    if data.len() != BLOCK || &data[..4] != b"CRSH" {
        return Seen::Garbage;
    }
    let (file, tag, block) = (word(4) as usize, word(8), word(12) as usize);
    if contents(file, tag, block) == data {
        Seen::Block(file, tag, block)
    } else {
        Seen::Garbage
    }
}

/// One state of a file: the tag of each block (`None`: a hole) and its size.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Version {
    /// The model step that made it.
    step: usize,
    blocks: Vec<Option<u32>>,
    size: u64,
}

/// A file of the model: its name, inode and every version it had.
#[derive(Debug, Clone)]
struct FileModel {
    name: String,
    ino: Ino,
    /// Versions in step order; the first is the file as created (or as the
    /// setup left it).
    versions: Vec<Version>,
}

impl FileModel {
    /// The version current at `step`, if the file existed then.
    fn at(&self, step: usize) -> Option<&Version> {
        self.versions.iter().rev().find(|v| v.step <= step)
    }
}

/// What a persistence point covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cover {
    /// sync: everything.
    All,
    /// fsync of this file (index into the model).
    File(usize),
}

/// A persistence point: when it returned (device events) and the model
/// step it made durable.
#[derive(Debug, Clone, Copy)]
struct Point {
    events: usize,
    step: usize,
    cover: Cover,
}

/// The workload's run, recorded: the files with their versions, the
/// persistence points, and the device.
struct Run {
    files: Vec<FileModel>,
    points: Vec<Point>,
    crash: CrashDisk,
    /// Partial segments written at the log's cold head.
    cold_partial_segments: u64,
}

/// Drives the file system and the model together.
struct Driver {
    fs: FileSystem<Lfs>,
    files: Vec<FileModel>,
    points: Vec<Point>,
    step: usize,
    crash: Option<CrashDisk>,
}

impl Driver {
    fn events(&self) -> usize {
        self.crash.as_ref().map_or(0, CrashDisk::events)
    }

    fn create(&mut self, name: &str) -> usize {
        let ino = self
            .fs
            .mknod(ROOT_INO, name.as_bytes(), kind::REG | 0o644, 0, Creds::default())
            .unwrap_or_else(|e| panic!("create {name}: {e}"))
            .ino;
        self.step += 1;
        let version = Version { step: self.step, blocks: Vec::new(), size: 0 };
        self.files.push(FileModel { name: name.to_string(), ino, versions: vec![version] });
        self.files.len() - 1
    }

    /// Writes blocks `blocks` of file `f` with version `tag`.
    fn write(&mut self, f: usize, tag: u32, blocks: impl IntoIterator<Item = usize>) {
        let ino = self.files[f].ino;
        let mut version = self.files[f].versions.last().cloned().expect("a file has a version");
        for block in blocks {
            let n = self
                .fs
                .write(ino, (block * BLOCK) as u64, &contents(f, tag, block))
                .unwrap_or_else(|e| panic!("write {} block {block}: {e}", self.files[f].name));
            assert_eq!(n, BLOCK, "a whole block written");
            if version.blocks.len() <= block {
                version.blocks.resize(block + 1, None);
            }
            version.blocks[block] = Some(tag);
            version.size = version.size.max(((block + 1) * BLOCK) as u64);
        }
        self.step += 1;
        version.step = self.step;
        self.files[f].versions.push(version);
    }

    fn fsync(&mut self, f: usize) {
        let ino = self.files[f].ino;
        self.fs.fsync(ino, false).unwrap_or_else(|e| panic!("fsync {}: {e}", self.files[f].name));
        self.points.push(Point { events: self.events(), step: self.step, cover: Cover::File(f) });
    }

    fn sync(&mut self) {
        self.fs.sync().expect("sync");
        self.points.push(Point { events: self.events(), step: self.step, cover: Cover::All });
    }
}

/// A tiny deterministic generator for the workload's choices: Marsaglia's
/// xorshift64 (13, 7, 17). Kept rather than replaced by `rand`: its exact
/// sequence decides which files and blocks the explored workloads touch,
/// and so the crash points the explorer reaches and what the tests below
/// expect of them.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

/// Segments cleaned by `pass`es that the log has written again since
/// `since`: a segment whose summaries carry data younger than that.
fn rewritten_since(lfs: &mut Lfs, segments: &BTreeSet<u64>, since: WriteClock) -> Vec<u64> {
    let table = lfs.segment_table();
    segments
        .iter()
        .copied()
        .filter(|&seg| {
            let bytes = lfs.read_segment(seg).expect("read_segment");
            parse_segment(&table, seg, &bytes).iter().any(|r| r.age >= since)
        })
        .collect()
}

/// The setup, acknowledged by the unmount that ends it: [`FILES`] files
/// written, then half the blocks of about half the files overwritten in
/// each of six rounds, so every segment the fill wrote is partly dead and
/// only a few are clean. Returns the image and the model.
fn setup() -> (Vec<u8>, Vec<FileModel>, usize) {
    let disk = Arc::new(MemDisk::new(DISK));
    let mkfs = MkfsOptions { block_size: BLOCK as u32, segment_size: SEGMENT };
    fslab::mkfs_lfs(disk.clone(), &mkfs, Creds::default()).expect("mkfs");
    let fs = FileSystem::new(Lfs::mount(disk.clone(), setup_mount_options()).expect("mount"));
    let mut d = Driver { fs, files: Vec::new(), points: Vec::new(), step: 0, crash: None };
    let mut rng = Rng(0x5eed_c1ea);
    for f in 0..FILES {
        let f = d.create(&format!("f{f:02}"));
        d.write(f, 0, 0..FILE_BLOCKS);
    }
    for round in 1..=5u32 {
        for f in 0..FILES {
            if rng.below(2) == 0 {
                let blocks: Vec<usize> = (0..FILE_BLOCKS).filter(|_| rng.below(2) == 0).collect();
                d.write(f, round, blocks);
            }
        }
    }
    d.fs.unmount().expect("unmount after setup");
    (disk.snapshot(), d.files, d.step)
}

/// A driver over a [`CrashDisk`] recording from the setup image, with a
/// cleaner installed for writers that run short of space, and the setup
/// as its first acknowledged point.
fn start(image: Vec<u8>, files: Vec<FileModel>, step: usize, policy: &str) -> (Driver, CrashDisk) {
    let crash = CrashDisk::over(MemDisk::from_bytes(image));
    let dev: Arc<dyn BlockDevice> = Arc::new(crash.clone());
    let mut lfs = Lfs::mount(dev, mount_options()).expect("mount over the crash disk");
    Cleaner::new(policy_named(policy)).install(&mut lfs);
    let points = vec![Point { events: 0, step, cover: Cover::All }];
    let d = Driver { fs: FileSystem::new(lfs), files, points, step, crash: Some(crash.clone()) };
    (d, crash)
}

/// Ends a run with a power cut: the file system is dropped, not unmounted.
fn finish(d: Driver, crash: CrashDisk) -> Run {
    let Driver { mut fs, files, points, .. } = d;
    let cold_partial_segments = fs.storage().stats().cold_partial_segments;
    drop(fs);
    Run { files, points, crash, cold_partial_segments }
}

/// Greedy, with every moved block written at the cold head, and users'
/// writes to files written before too (where the clean space allows): on a
/// disk this small `hot-cold` finds that age predicts nothing and keeps one
/// head, and this test is about the second.
struct AllCold;

impl Policy for AllCold {
    fn name(&self) -> &'static str {
        "all-cold"
    }
    fn score(&self, seg: &SegmentState, table: &SegmentTable) -> f64 {
        -seg.utilization(table.block_size)
    }
    fn cold_before(&self, _table: &SegmentTable) -> Option<WriteClock> {
        Some(WriteClock::MAX)
    }
    fn user_separation(&self) -> UserSeparation {
        UserSeparation::Always(0.0)
    }
}

/// The policy `name` names, or [`AllCold`].
fn policy_named(name: &str) -> Box<dyn Policy> {
    if name == "all-cold" {
        Box::new(AllCold)
    } else {
        policy::by_name(name).expect("policy")
    }
}

/// Runs the workload of the module doc on a [`CrashDisk`] over the setup,
/// cleaning with `policy`.
fn record(policy: &str) -> Run {
    let (image, files, step) = setup();
    let (mut d, crash) = start(image, files, step, policy);
    let mut rng = Rng(0xc1ea_0001);

    // The first write of a mount is a checkpoint (a new epoch of serial
    // numbers); take it now, so that what the pass below moves is written
    // after the newest checkpoint and is only in the log until the next.
    d.sync();

    // 1. Clean: live blocks move, segments are declared empty.
    let mut cleaner = Cleaner::new(policy_named(policy));
    let pass = cleaner.pass(d.fs.storage()).expect("pass");
    let mut cleaned: BTreeSet<u64> = pass.cleaned.iter().copied().collect();
    assert!(!cleaned.is_empty(), "the cleaner cleaned something: {pass:?}");

    // 2. Writes before the checkpoint that reclaims them: more than the
    // clean segments ahead of the log hold, none synced, so a segment
    // reused before a checkpoint would be overwritten while the newest
    // checkpoint still points into it; then fsyncs.
    // An fsync right after the pass: with the moved data at the cold head,
    // roll-forward finds it only by following both heads.
    let mut tag = 100;
    d.write(3, tag, 0..4);
    tag += 1;
    d.fsync(3);
    for _ in 0..50 {
        let f = rng.below(FILES);
        d.write(f, tag, (0..FILE_BLOCKS).filter(|b| b % 2 == tag as usize % 2));
        tag += 1;
    }
    d.fsync(7);
    let new = d.create("new0");
    d.write(new, tag, 0..10);
    tag += 1;
    d.fsync(new);

    // 3. The checkpoint that makes the cleaned segments writable.
    let reclaimed_at = d.fs.storage().segment_table().now;
    d.sync();

    // 4. Writes until the log has entered a reclaimed segment (and a while
    // after); fsyncs, syncs and more cleaning on the way.
    let mut reused = Vec::new();
    for round in 0..40 {
        for _ in 0..4 {
            let f = rng.below(d.files.len());
            let blocks: Vec<usize> = (0..FILE_BLOCKS).filter(|_| rng.below(3) == 0).collect();
            d.write(f, tag, blocks);
            tag += 1;
            if rng.below(3) == 0 {
                d.fsync(f);
            }
        }
        if round == 3 {
            let f = d.create("new1");
            d.write(f, tag, 0..20);
            tag += 1;
            d.fsync(f);
        }
        if round % 6 == 5 {
            let pass = cleaner.pass(d.fs.storage()).expect("pass");
            cleaned.extend(pass.cleaned);
        }
        if round % 8 == 7 {
            d.sync();
        }
        reused = rewritten_since(d.fs.storage(), &cleaned, reclaimed_at);
        if !reused.is_empty() && round >= 12 {
            break;
        }
    }
    assert!(!reused.is_empty(), "the log entered a segment the cleaner emptied");

    // 5. Unsynced writes, lost or not at the end.
    for f in [0, 1, 2] {
        d.write(f, tag, [1, 2]);
        tag += 1;
    }
    finish(d, crash)
}

/// Mounts one crash image and checks items 1-4 of the module doc.
fn check_image(run: &Run, cut: usize, image: MemDisk) -> Result<(), String> {
    let dev: Arc<dyn BlockDevice> = Arc::new(image);
    let mut fs =
        FileSystem::new(Lfs::mount(dev.clone(), mount_options()).map_err(|e| format!("mount: {e}"))?);

    let mut names = BTreeMap::new();
    let mut offset = 0;
    loop {
        let entries = fs.readdir(ROOT_INO, offset, 64).map_err(|e| format!("readdir: {e}"))?;
        let Some(last) = entries.last() else { break };
        offset = last.next_offset;
        for e in entries {
            if e.name != b"." && e.name != b".." {
                names.insert(String::from_utf8_lossy(&e.name).into_owned(), e.ino);
            }
        }
    }
    for name in names.keys() {
        if !run.files.iter().any(|f| &f.name == name) {
            return Err(format!("a name the workload never made: {name}"));
        }
    }

    for (i, file) in run.files.iter().enumerate() {
        let acked = run
            .points
            .iter()
            .filter(|p| p.events <= cut && (p.cover == Cover::All || p.cover == Cover::File(i)))
            .map(|p| p.step)
            .max()
            .unwrap_or(0);
        let durable = file.at(acked);
        let Some(&ino) = names.get(&file.name) else {
            if durable.is_some() {
                return Err(format!("{} was acknowledged (step {acked}) but is gone", file.name));
            }
            continue;
        };
        if ino != file.ino {
            return Err(format!("{} names inode {ino}, made as {}", file.name, file.ino));
        }
        // The durable version and every later one.
        let allowed: Vec<&Version> = file
            .versions
            .iter()
            .filter(|v| v.step > acked || durable.is_some_and(|d| d.step == v.step))
            .collect();
        let size = fs.getattr(ino).map_err(|e| format!("getattr {}: {e}", file.name))?.attr.size;
        if !allowed.iter().any(|v| v.size == size) {
            let sizes: Vec<u64> = allowed.iter().map(|v| v.size).collect();
            return Err(format!(
                "{} has size {size}, allowed {sizes:?} (acknowledged step {acked})",
                file.name
            ));
        }
        let data = fs.read(ino, 0, size as usize).map_err(|e| format!("read {}: {e}", file.name))?;
        for (block, bytes) in data.chunks(BLOCK).enumerate() {
            let seen = identify(bytes);
            let ok = allowed.iter().any(|v| match (v.blocks.get(block).copied().flatten(), seen) {
                (None, Seen::Hole) => true,
                (Some(tag), Seen::Block(f, t, b)) => f == i && t == tag && b == block,
                _ => false,
            });
            if !ok {
                let want: Vec<Option<u32>> =
                    allowed.iter().map(|v| v.blocks.get(block).copied().flatten()).collect();
                return Err(format!(
                    "{} block {block} is {seen:?}; allowed tags {want:?} (acknowledged step {acked})",
                    file.name
                ));
            }
        }
    }
    fs.unmount().map_err(|e| format!("unmount after recovery: {e}"))?;
    drop(fs);

    let report = fslab_check::check(dev.as_ref(), &fslab_check::Options::default(), &mut |_| {})
        .map_err(|e| format!("fsck could not run: {e}"))?;
    let bad: Vec<String> = report.problems.iter().map(|p| format!("{:?}: {p}", p.kind)).collect();
    if !bad.is_empty() || report.omitted > 0 {
        return Err(format!("fsck after recovery and a clean unmount: {}", bad.join("; ")));
    }
    Ok(())
}

/// A crash image to check, and how to name it in a failure.
struct Job {
    description: String,
    cut: usize,
    image: MemDisk,
}

/// Checks every image `jobs` hands over, on a few threads, and panics
/// naming the failures (the first few in full) if any promise was broken.
fn check_all(run: &Run, jobs: impl FnOnce(&mut dyn FnMut(Job))) {
    let started = std::time::Instant::now();
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get()).min(8);
    let failures: Mutex<Vec<(usize, String)>> = Mutex::new(Vec::new());
    let checked = AtomicUsize::new(0);
    // A bounded queue: each image is a copy of the device.
    let (send, receive) = mpsc::sync_channel::<Job>(threads);
    let receive = Mutex::new(receive);
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| loop {
                let next = receive.lock().unwrap_or_else(|e| e.into_inner()).recv();
                let Ok(job) = next else { return };
                checked.fetch_add(1, Ordering::Relaxed);
                if let Err(why) = check_image(run, job.cut, job.image) {
                    let failure = (job.cut, format!("{}: {why}", job.description));
                    failures.lock().unwrap_or_else(|e| e.into_inner()).push(failure);
                }
            });
        }
        jobs(&mut |job| send.send(job).expect("the checking threads outlive the sender"));
        drop(send);
    });
    let mut failures = failures.into_inner().unwrap_or_else(|e| e.into_inner());
    eprintln!(
        "{} crash images checked ({} device events, {} barriers) in {:.1?}; {} broke a promise",
        checked.into_inner(),
        run.crash.events(),
        run.crash.barrier_positions().len(),
        started.elapsed(),
        failures.len()
    );
    if !failures.is_empty() {
        failures.sort();
        let shown: Vec<&str> = failures.iter().take(12).map(|(_, f)| f.as_str()).collect();
        panic!(
            "{} crash images broke a promise; the first {}:\n{}",
            failures.len(),
            shown.len(),
            shown.join("\n")
        );
    }
}

#[test]
fn power_cuts_during_cleaning_and_segment_reuse_lose_nothing_acknowledged() {
    check_power_cuts(&record("cost-benefit"));
}

/// The same with the moved data written at the log's cold head: roll-forward
/// must merge the two heads in serial order.
#[test]
fn power_cuts_while_the_cleaner_writes_at_the_cold_head_lose_nothing_acknowledged() {
    let run = record("all-cold");
    assert!(run.cold_partial_segments > 0, "the cleaner wrote at the cold head");
    check_power_cuts(&run);
}

/// Checks every barrier state of `run` and a seeded sample of the others.
fn check_power_cuts(run: &Run) {
    let max = env_or("FSLAB_CLEANER_CRASH_STATES", 600) as usize;
    let seed = env_or("FSLAB_CLEANER_CRASH_SEED", 0xc1ea);
    check_all(run, |send| {
        // Every barrier: just before it, with everything written since the
        // one before lost, and just after it.
        for p in run.crash.barrier_positions() {
            for (cut, choice) in [(p, CrashChoice::NonePersisted), (p + 1, CrashChoice::AllPersisted)] {
                let image = run.crash.crash_image(cut, &choice).expect("crash image");
                send(Job { description: format!("cut {cut} at barrier {p}, {choice:?}"), cut, image });
            }
        }
        for state in run.crash.crash_states(max, seed) {
            send(Job { description: state.description, cut: state.cut, image: state.disk });
        }
    });
}

/// Regression: a checkpoint makes the segments the cleaner emptied clean
/// only in memory, after its superblock is durable; the log may then enter
/// them. After a power cut, mount started from that checkpoint's table, in
/// which they were still dirty, so roll-forward added the summaries it
/// found there to the counts of the data they once held (fsck: "table
/// counts N summaries, the log holds M"), and a
/// mount that found no segment flagged clean to continue in failed with
/// ENOSPC.
#[test]
fn a_crash_after_the_log_reentered_reclaimed_segments_mounts_and_checks_clean() {
    let (image, files, step) = setup();
    let (mut d, crash) = start(image, files, step, "greedy");
    d.sync();
    let mut cleaner = Cleaner::new(policy::by_name("greedy").expect("policy"));
    let cleaned: BTreeSet<u64> = cleaner.pass(d.fs.storage()).expect("pass").cleaned.into_iter().collect();
    assert!(!cleaned.is_empty(), "the cleaner cleaned something");
    let reclaimed_at = d.fs.storage().segment_table().now;
    d.sync();
    let checkpoints = d.fs.storage().stats().checkpoints;
    // Only fsyncs from here: what reaches the reclaimed segments is known
    // to roll-forward alone. Until the log has used up the segments that
    // checkpoint's own table called clean and entered three reclaimed ones.
    let mut tag = 1000;
    while tag < 1020 || rewritten_since(d.fs.storage(), &cleaned, reclaimed_at).len() < 3 {
        let f = (tag as usize * 7) % FILES;
        d.write(f, tag, 0..FILE_BLOCKS);
        d.fsync(f);
        tag += 1;
        assert!(tag < 1300, "the log reaches three reclaimed segments");
    }
    assert_eq!(d.fs.storage().stats().checkpoints, checkpoints, "no checkpoint since the one that reclaimed");
    let run = finish(d, crash);
    // A power cut just after each fsync returned.
    check_all(&run, |send| {
        for p in run.points.iter().skip(3) {
            let image = run.crash.crash_image(p.events, &CrashChoice::AllPersisted).expect("crash image");
            send(Job {
                description: format!("power cut after an fsync (cut {})", p.events),
                cut: p.events,
                image,
            });
        }
    });
}
