//! Model tests over every layout (LFS, FFS-sync, FFS-async, FFS-softdep)
//! on a memory disk: random operation sequences with a cache small enough
//! that writes go to the disk mid-sequence, remounts among the ops, and
//! ENOSPC tests.
//! Each test body is written once (a `WithSubject`) and run on each layout
//! (`on_every_layout!`). `FSLAB_MODEL_SEEDS`, `FSLAB_MODEL_OPS` scale the
//! random runs; `FSLAB_MODEL_SEED` replays one seed. The default random
//! runs must reach a coverage floor: every operation kind succeeding and
//! the main refusals met (`MUST_SUCCEED`, `MUST_REFUSE`).

use std::collections::BTreeMap;

use fslab::format::ROOT_INO;
use fslab::ufs::{Access, AtimeOptions, Creds, DirhashOptions, ReadStart, SetAttr};
use fslab_cleaner::policy;
use testkit::harness::{env_or, first_difference, run, Outcomes, RunConfig, Subject};
use testkit::ops::{fill, Weights};
use testkit::subject::{FfsSubject, Layout, WithSubject};

/// Makes one test per layout of each function named, which takes a
/// [`Layout`]: `f::lfs`, `f::ffs_sync`, `f::ffs_async`, `f::ffs_softdep`,
/// `f::ffs_journal`.
macro_rules! on_every_layout {
    ($($name:ident),* $(,)?) => {
        $(
            mod $name {
                #[test]
                fn lfs() {
                    super::$name(testkit::subject::Layout::Lfs)
                }
                #[test]
                fn ffs_sync() {
                    super::$name(testkit::subject::Layout::FfsSync)
                }
                #[test]
                fn ffs_async() {
                    super::$name(testkit::subject::Layout::FfsAsync)
                }
                #[test]
                fn ffs_softdep() {
                    super::$name(testkit::subject::Layout::FfsSoftdep)
                }
                #[test]
                fn ffs_journal() {
                    super::$name(testkit::subject::Layout::FfsJournal)
                }
            }
        )*
    };
}

const DISK: u64 = 24 << 20;
const CACHE: u64 = 1 << 20;

/// One random run of `cfg` (a layout may run the same seed differently only
/// in what its own answers are).
/// Its outcomes are added to the third field's.
struct RandomRun<'a>(RunConfig, &'static str, &'a mut Outcomes);

impl WithSubject for RandomRun<'_> {
    fn run<T: Subject>(self, subject: T) {
        let (stats, outcomes) = run(subject, self.0);
        eprintln!("{} seed {:#x}: {stats:?}", self.1, self.0.seed);
        eprintln!("outcomes: {outcomes:#?}");
        for (what, n) in outcomes {
            *self.2.entry(what).or_insert(0) += n;
        }
        // The tree checks' answers from memory (`FileSystem::*_cached`),
        // counted as operations so that the coverage floor holds them.
        let cached = ["CachedGetattr", "CachedLookup", "CachedRead", "CachedReaddir", "CachedGetxattr"];
        for (what, n) in cached.into_iter().zip(stats.cached_answers) {
            *self.2.entry(format!("{what}: ok")).or_insert(0) += n;
        }
    }
}

/// Operations the default random runs must have seen succeed: a run that
/// never reaches one compares nothing about it, however long it is.
const MUST_SUCCEED: [&str; 30] = [
    "CachedGetattr",
    "CachedGetxattr",
    "CachedLookup",
    "CachedRead",
    "CachedReaddir",
    "Create",
    "Mkdir",
    "Symlink",
    "Readlink",
    "Write",
    "Read",
    "Truncate",
    "Fallocate",
    "Unlink",
    "Rmdir",
    "Rename",
    "Link",
    "Chmod",
    "Getattr",
    "Readdir",
    "Open",
    "Close",
    "ReadHandle",
    "WriteHandle",
    "Fsync",
    "Sync",
    "Remount",
    "SetXattr",
    "ListXattr",
    "RemoveXattr",
];

/// Error answers the default random runs must have reached, each from the
/// operation named: the paths by which the file system refuses.
const MUST_REFUSE: [&str; 14] = [
    "Create: EEXIST",
    "Create: ENOENT",
    "Create: ENOTDIR",
    "Create: ENAMETOOLONG",
    "Mkdir: EEXIST",
    "Rmdir: ENOTEMPTY",
    "Rmdir: ENOTDIR",
    "Unlink: EISDIR",
    "Rename: EINVAL",
    "Rename: ENOTEMPTY",
    "Rename: EISDIR",
    "Link: EPERM",
    "GetXattr: ENODATA",
    "SetXattr: E2BIG",
];

/// Fails unless `outcomes` reach the coverage floor: every operation of
/// [`MUST_SUCCEED`] succeeded and every refusal of [`MUST_REFUSE`] was met.
fn assert_coverage(outcomes: &Outcomes, what: &str) {
    let missing: Vec<String> = MUST_SUCCEED
        .iter()
        .map(|op| format!("{op}: ok"))
        .chain(MUST_REFUSE.iter().map(|s| s.to_string()))
        .filter(|k| outcomes.get(k).copied().unwrap_or(0) == 0)
        .collect();
    assert!(missing.is_empty(), "{what}: the random runs never reached {missing:?}; outcomes: {outcomes:#?}");
}

fn run_seeds(layout: Layout, default_seeds: u64, default_ops: u64, scale: u64) {
    let seeds = env_or("FSLAB_MODEL_SEEDS", default_seeds);
    let ops = env_or("FSLAB_MODEL_OPS", default_ops) as usize * scale as usize;
    let one = std::env::var("FSLAB_MODEL_SEED").ok().and_then(|s| s.parse::<u64>().ok());
    let list: Vec<u64> = match one {
        Some(seed) => vec![seed],
        None => (0..seeds).map(|i| 0x6c667300 + i).collect(),
    };
    let mut outcomes = Outcomes::new();
    for &seed in &list {
        let cfg = RunConfig {
            seed,
            ops,
            check_every: env_or("FSLAB_CHECK_EVERY", 100) as usize,
            weights: Weights::with_remount(),
        };
        layout.with_subject(DISK, CACHE, Some(policy::DEFAULT), RandomRun(cfg, "random ops", &mut outcomes));
    }
    // One replayed seed, or fewer ops than the default, may cover less.
    if one.is_none() && seeds >= default_seeds && ops >= default_ops as usize {
        assert_coverage(&outcomes, &format!("{layout:?}"));
    }
}

/// Four seeds from `first` (`FSLAB_MODEL_SEEDS`) of 800 ops each
/// (`FSLAB_MODEL_OPS`) drawn by `weights`, checked every 50
/// (`FSLAB_CHECK_EVERY`).
fn run_weighted(layout: Layout, weights: Weights, first: u64, what: &'static str) {
    let seeds = env_or("FSLAB_MODEL_SEEDS", 4);
    let ops = env_or("FSLAB_MODEL_OPS", 800) as usize;
    for seed in (0..seeds).map(|i| first + i) {
        let cfg = RunConfig { seed, ops, check_every: env_or("FSLAB_CHECK_EVERY", 50) as usize, weights };
        layout.with_subject(DISK, CACHE, Some(policy::DEFAULT), RandomRun(cfg, what, &mut Outcomes::new()));
    }
}

fn random_namespace_operations_match_the_model(layout: Layout) {
    run_seeds(layout, 6, 1500, 1);
}

#[test]
#[ignore = "long: 10x the default ops per seed, on each layout"]
fn random_namespace_operations_match_the_model_long() {
    for layout in testkit::subject::LAYOUTS {
        run_seeds(layout, 6, 1500, 10);
    }
}

/// On a disk a few writes fill, with the cleaner `fslab mount` runs: every
/// answer matches the model, and ENOSPC (or a short write) comes only when
/// the model's contents take about all the blocks statfs reports
/// (`testkit::space`). Writes outnumber deletes, so the disk fills and
/// stays nearly full.
fn random_operations_on_a_disk_that_fills_up_get_enospc_only_when_it_is_full(layout: Layout) {
    struct FullDiskRun(RunConfig, std::rc::Rc<std::cell::Cell<usize>>);
    impl WithSubject for FullDiskRun {
        fn run<T: Subject>(self, subject: T) {
            let (stats, _) = run(subject, self.0);
            eprintln!("full-disk seed {:#x}: {stats:?}", self.0.seed);
            self.1.set(self.1.get() + stats.enospc);
        }
    }
    let seeds = env_or("FSLAB_MODEL_SEEDS", 4);
    let ops = env_or("FSLAB_MODEL_OPS", 1500) as usize;
    let weights = Weights {
        write: 60,
        fallocate: 12,
        shift: 0,
        truncate: 1,
        unlink: 2,
        rmdir: 1,
        ..Weights::with_remount()
    };
    let refused = std::rc::Rc::new(std::cell::Cell::new(0));
    const FIRST: u64 = 0x66756c00;
    let mut chosen: Vec<u64> = (0..seeds).map(|i| FIRST + i).collect();
    // Seed 9 runs whatever the count: on the journal, realloc's moves in
    // one write each left their old places to be freed at the commit, and
    // the write ran short with 44 blocks to spare.
    if seeds <= 9 {
        chosen.push(FIRST + 9);
    }
    for seed in chosen {
        let cfg = RunConfig { seed, ops, check_every: env_or("FSLAB_CHECK_EVERY", 100) as usize, weights };
        layout.with_subject(4 << 20, CACHE, Some(policy::DEFAULT), FullDiskRun(cfg, refused.clone()));
    }
    assert!(refused.get() > 0, "the disk never filled up: the test no longer tests ENOSPC");
}

/// Fills `fs` with files of 64 KiB writes until ENOSPC; returns what each
/// file must hold (every accepted byte, short counts included).
fn fill_until_enospc<T: Subject>(subject: &mut T, prefix: &str, seed: u64) -> BTreeMap<String, Vec<u8>> {
    let mut files = BTreeMap::new();
    let chunk = 64 << 10;
    'files: for i in 0..10_000u64 {
        let name = format!("{prefix}{i}");
        let ino =
            match subject.fs().mknod(ROOT_INO, name.as_bytes(), libc::S_IFREG | 0o644, 0, Creds::default()) {
                Ok(inode) => inode.ino,
                Err(e) if e.errno() == libc::ENOSPC => break,
                Err(e) => panic!("create {name}: {e}"),
            };
        let mut content = Vec::new();
        for j in 0..8u64 {
            let data = fill(seed ^ (i << 8) ^ j, chunk);
            match subject.fs().write(ino, content.len() as u64, &data) {
                Ok(n) => {
                    content.extend_from_slice(&data[..n]);
                    if n < data.len() {
                        files.insert(name, content);
                        break 'files;
                    }
                }
                Err(e) if e.errno() == libc::ENOSPC => {
                    files.insert(name, content);
                    break 'files;
                }
                Err(e) => panic!("write {name} at {}: {e}", content.len()),
            }
        }
        files.insert(name, content);
    }
    files
}

fn check_files<T: Subject>(subject: &mut T, files: &BTreeMap<String, Vec<u8>>, when: &str) {
    for (name, want) in files {
        let ino = subject
            .fs()
            .lookup(ROOT_INO, name.as_bytes())
            .unwrap_or_else(|e| panic!("{when}: {name}: {e}"))
            .ino;
        let got = subject
            .fs()
            .read(ino, 0, want.len() + 4096)
            .unwrap_or_else(|e| panic!("{when}: read {name}: {e}"));
        assert!(got == *want, "{when}: {name}: {}", first_difference(want, &got));
    }
}

/// Removes `name`: truncates it to zero and syncs first, which works on a
/// full disk where a plain unlink does not (see
/// `unlink_on_a_full_disk_succeeds_so_space_can_be_freed`).
fn remove<T: Subject>(subject: &mut T, name: &str) {
    let ino =
        subject.fs().lookup(ROOT_INO, name.as_bytes()).unwrap_or_else(|e| panic!("lookup {name}: {e}")).ino;
    let zero = SetAttr { size: Some(0), ..SetAttr::default() };
    subject.fs().setattr(ino, &zero).unwrap_or_else(|e| panic!("truncate {name}: {e}"));
    subject.fs().sync().unwrap_or_else(|e| panic!("sync after truncating {name}: {e}"));
    subject.fs().unlink(ROOT_INO, name.as_bytes()).unwrap_or_else(|e| panic!("unlink {name}: {e}"));
}

fn total(files: &BTreeMap<String, Vec<u8>>) -> usize {
    files.values().map(Vec::len).sum()
}

/// Fills a 4 MiB disk to ENOSPC three times (deleting half, then all, in
/// between), checking every accepted byte before and after remounts.
struct EnospcRoundTrip;

impl WithSubject for EnospcRoundTrip {
    fn run<T: Subject>(self, mut subject: T) {
        enospc_round_trip(&mut subject)
    }
}

fn enospc_round_trip<T: Subject>(subject: &mut T) {
    let subject = &mut *subject;
    let first = fill_until_enospc(subject, "f", 1);
    let first_bytes = total(&first);
    assert!(first_bytes > 1 << 20, "a 4 MiB disk took only {first_bytes} bytes before ENOSPC");
    check_files(subject, &first, "before remount");
    subject.remount().expect("remount after ENOSPC");
    check_files(subject, &first, "after remount");

    // Delete every other file; the space comes back at checkpoints.
    let mut kept = BTreeMap::new();
    for (i, (name, content)) in first.into_iter().enumerate() {
        if i % 2 == 0 {
            remove(subject, &name);
        } else {
            kept.insert(name, content);
        }
    }
    subject.fs().sync().expect("sync after deleting");
    subject.fs().sync().expect("second sync after deleting");
    let second = fill_until_enospc(subject, "g", 2);
    let second_bytes = total(&second);
    assert!(
        second_bytes >= first_bytes / 4,
        "after deleting half of {first_bytes} bytes only {second_bytes} could be written again"
    );
    check_files(subject, &kept, "kept files, before remount");
    check_files(subject, &second, "second fill, before remount");
    subject.remount().expect("remount after the second ENOSPC");
    check_files(subject, &kept, "kept files, after remount");
    check_files(subject, &second, "second fill, after remount");

    // Delete everything: nearly the whole first fill fits again.
    for name in kept.keys().chain(second.keys()) {
        remove(subject, name);
    }
    subject.fs().sync().expect("sync after deleting everything");
    subject.fs().sync().expect("second sync after deleting everything");
    let third = fill_until_enospc(subject, "h", 3);
    let third_bytes = total(&third);
    assert!(
        third_bytes >= first_bytes * 3 / 4,
        "an emptied file system took {third_bytes} bytes, a fresh one {first_bytes}"
    );
    subject.remount().expect("remount after the third ENOSPC");
    check_files(subject, &third, "third fill, after remount");
}

fn every_write_accepted_before_enospc_survives_a_remount_and_deleting_frees_space(layout: Layout) {
    // A cache larger than the disk: nothing is ever evicted (see the next test).
    layout.with_subject(4 << 20, 8 << 20, None, EnospcRoundTrip);
}

fn every_write_accepted_before_enospc_reads_back_with_a_small_cache(layout: Layout) {
    // Bug: when every other buffer is dirty and the cache is over its limit,
    // `BufferCache::insert` → `evict` removes the clean indirect block that
    // `Lfs::ensure_cached` has just inserted, and `Lfs::pointer` then fails
    // with EIO "indirect block evicted".
    layout.with_subject(4 << 20, CACHE, None, EnospcRoundTrip);
}

fn unlink_on_a_full_disk_succeeds_so_space_can_be_freed(layout: Layout) {
    // Bug: removing a name dirties the directory block and two inodes, and
    // `check_space` refuses them when the log is full; nothing reserves room
    // for operations that free space.
    struct Body;
    impl WithSubject for Body {
        fn run<T: Subject>(self, subject: T) {
            unlink_on_a_full_disk(subject)
        }
    }
    layout.with_subject(4 << 20, CACHE, None, Body);
}

fn unlink_on_a_full_disk<T: Subject>(mut subject: T) {
    let ino =
        subject.fs().mknod(ROOT_INO, b"big", libc::S_IFREG | 0o644, 0, Creds::default()).expect("create").ino;
    let mut at = 0u64;
    loop {
        match subject.fs().write(ino, at, &fill(at, 64 << 10)) {
            Ok(n) if n == 64 << 10 => at += n as u64,
            Ok(_) => break,
            Err(e) if e.errno() == libc::ENOSPC => break,
            Err(e) => panic!("write at {at}: {e}"),
        }
    }
    subject.fs().unlink(ROOT_INO, b"big").expect("unlink on a full disk");
    subject.fs().sync().expect("sync");
    let again =
        subject.fs().mknod(ROOT_INO, b"again", libc::S_IFREG | 0o644, 0, Creds::default()).expect("create");
    assert_eq!(subject.fs().write(again.ino, 0, &fill(1, 1 << 20)).expect("write after freeing"), 1 << 20);
}

/// One step of [`renames_of_names_not_yet_durable_sync_and_fsck_clean`]:
/// on names `n` of one directory, `Create(n)`, `Rename(from, to)`,
/// `Unlink(n)`, or `Sync`.
#[derive(Clone, Copy)]
enum NameOp {
    Create(u32),
    Rename(u32, u32),
    Unlink(u32),
    Sync,
}

/// Renames of names no write has made durable yet, in the patterns that
/// wedged soft updates: every sync after them failed with EIO, since a
/// new name waited for a rename's image of its chunk to go while that
/// rename waited in turn for the new name. Each ends with a sync, which
/// must succeed, and a clean fsck; the names must be those of the ops.
fn renames_of_names_not_yet_durable_sync_and_fsck_clean(layout: Layout) {
    use NameOp::{Create as C, Rename as R, Sync as S, Unlink as U};
    let sequences: [(&str, &[NameOp]); 5] = [
        // Two files swap names through a temporary one.
        ("a swap", &[C(1), C(2), S, R(1, 3), R(2, 1), R(3, 2)]),
        // A file takes the name another file's rename has just left.
        ("a name taken", &[C(2), C(6), S, R(6, 13), R(2, 14), R(13, 2)]),
        // The same, through a removed file's name.
        ("a removed name taken", &[C(7), C(10), C(13), S, R(10, 11), R(7, 10), U(13), R(11, 8), R(8, 13)]),
        // A file renamed over another, moved on, its name taken.
        ("a replaced name taken", &[C(3), C(0), C(1), S, R(0, 1), R(3, 4), R(1, 5), R(4, 1)]),
        // A chain of renames whose names reuse one entry's space.
        (
            "a reused entry",
            &[C(18), S, R(18, 0), C(26), U(0), C(17), S, R(17, 30), R(30, 8), R(8, 21), R(21, 10), R(26, 17)],
        ),
    ];
    struct Body<'a>(&'a [(&'a str, &'a [NameOp])]);
    impl WithSubject for Body<'_> {
        fn run<T: Subject>(self, mut subject: T) {
            // Long names, as in the run that found it: which chunk and
            // offset each entry takes decides which renames wait for which.
            let name = |n: u32| format!("coming-and-going-{n:03}").into_bytes();
            let me = Creds::default();
            let mut expected = Vec::new();
            for (i, &(what, ops)) in self.0.iter().enumerate() {
                let dir =
                    subject.fs().mkdir(ROOT_INO, format!("d{i}").as_bytes(), 0o755, me).expect("mkdir").ino;
                let mut names: BTreeMap<Vec<u8>, u64> = BTreeMap::new();
                for &op in ops {
                    let fs = subject.fs();
                    match op {
                        NameOp::Create(n) => {
                            let ino =
                                fs.mknod(dir, &name(n), libc::S_IFREG | 0o644, 0, me).expect("create").ino;
                            names.insert(name(n), ino);
                        }
                        NameOp::Rename(from, to) => {
                            fs.rename(dir, &name(from), dir, &name(to), Default::default())
                                .unwrap_or_else(|e| panic!("{what}: rename: {e}"));
                            let ino = names.remove(&name(from)).expect("renamed name");
                            names.insert(name(to), ino);
                        }
                        NameOp::Unlink(n) => {
                            fs.unlink(dir, &name(n)).unwrap_or_else(|e| panic!("{what}: unlink: {e}"));
                            names.remove(&name(n));
                        }
                        NameOp::Sync => fs.sync().unwrap_or_else(|e| panic!("{what}: sync: {e}")),
                    }
                }
                subject.fs().sync().unwrap_or_else(|e| panic!("{what}: the sync after the renames: {e}"));
                expected.push((what, dir, names));
            }
            subject.fsck().unwrap_or_else(|e| panic!("{e}"));
            for (what, dir, names) in expected {
                let found: BTreeMap<Vec<u8>, u64> = subject
                    .fs()
                    .readdir(dir, 0, 1000)
                    .expect("readdir")
                    .into_iter()
                    .filter(|e| e.name != b"." && e.name != b"..")
                    .map(|e| (e.name, e.ino))
                    .collect();
                assert_eq!(found, names, "{what}: the names after a remount");
            }
        }
    }
    layout.with_subject(8 << 20, CACHE, None, Body(&sequences));
}

fn statfs_counts_a_new_inode_as_used_before_it_is_written(layout: Layout) {
    // Bug: `Tables::inodes_in_use` counts inode-map entries with a disk
    // address, and a new inode has none until the segment writer stores it.
    struct Body;
    impl WithSubject for Body {
        fn run<T: Subject>(self, mut subject: T) {
            let mut used = || {
                let st = subject.fs().statfs().expect("statfs");
                st.total_inodes - st.free_inodes
            };
            let before = used();
            subject.fs().mknod(ROOT_INO, b"f", libc::S_IFREG | 0o644, 0, Creds::default()).expect("create");
            let st = subject.fs().statfs().expect("statfs");
            assert_eq!(
                st.total_inodes - st.free_inodes,
                before + 1,
                "inodes in use after one create, before any sync"
            );
        }
    }
    layout.with_subject(8 << 20, CACHE, None, Body);
}

/// A read whose device transfers run after the lock is let go
/// (`FileSystem::read_begin`) returns what the file held when it began,
/// or says it may not have; what it caches is what the file holds now.
/// Each block is overwritten, and written back, between the plan and the
/// transfer: FFS writes it where the plan read it, which must be caught;
/// LFS writes it elsewhere, and the old bytes must not be cached.
fn reads_fetched_outside_the_lock_see_the_file_as_it_was_or_read_again(layout: Layout) {
    struct Body(Layout);
    impl WithSubject for Body {
        fn run<T: Subject>(self, mut subject: T) {
            let bs = subject.limits().block_size;
            let stamp = |lbn: usize, version: u8| -> Vec<u8> {
                (0..bs)
                    .map(|i| (i as u8).wrapping_mul(31) ^ (lbn as u8) ^ version.wrapping_mul(101))
                    .collect()
            };
            let fs = subject.fs();
            let f = fs.mknod(ROOT_INO, b"f", libc::S_IFREG | 0o644, 0, Creds::default()).expect("create f");
            let blocks = 24;
            for lbn in 0..blocks {
                fs.write(f.ino, (lbn * bs) as u64, &stamp(lbn, 1)).expect("write f");
            }
            // A file twice the cache pushes f's blocks out of it.
            let g = fs.mknod(ROOT_INO, b"g", libc::S_IFREG | 0o644, 0, Creds::default()).expect("create g");
            fs.write(g.ino, 0, &fill(7, 2 * CACHE as usize)).expect("write g");
            fs.sync().expect("sync");
            fs.read(g.ino, 0, 2 * CACHE as usize).expect("read g");
            let (mut fetched, mut stale) = (0, 0);
            for lbn in 0..blocks {
                let at = (lbn * bs) as u64;
                let start = subject.fs().read_begin(f.ino, at, bs).expect("read begins");
                let ReadStart::Pending(mut pending) = start else { continue };
                fetched += 1;
                if lbn % 2 == 0 {
                    subject.fs().write(f.ino, at, &stamp(lbn, 2)).expect("overwrite");
                    subject.fs().sync().expect("sync");
                    // And out of the cache, so that only the checks keep
                    // the old bytes from being cached in its place: g read
                    // a block at a time is cached (a long run is not).
                    for at in (0..2 * CACHE).step_by(bs) {
                        subject.fs().read(g.ino, at, bs).expect("read g");
                    }
                }
                if pending.fetch().expect("fetch") {
                    subject.fs().adopt_read(&pending);
                    assert!(
                        pending.into_data() == stamp(lbn, 1),
                        "block {lbn}: fetched bytes are not the file's"
                    );
                } else {
                    stale += 1;
                }
                let now = if lbn % 2 == 0 { 2 } else { 1 };
                let read = subject.fs().read(f.ino, at, bs).expect("read");
                assert!(read == stamp(lbn, now), "block {lbn}: a read after the fetch is not version {now}");
                if lbn % 2 == 1 {
                    // Nothing changed it: adopted, it is now a cache hit.
                    let again = subject.fs().read_begin(f.ino, at, bs).expect("read begins");
                    assert!(
                        matches!(again, ReadStart::Done(_)),
                        "block {lbn}: a block fetched alone was not cached"
                    );
                }
            }
            assert!(fetched >= blocks / 2, "only {fetched} of {blocks} reads left their transfers undone");
            if self.0 != Layout::Lfs {
                // Rewritten in place: every overwritten block's fetch saw the write.
                assert_eq!(stale, blocks / 2, "stale fetches caught on a layout that writes in place");
            }
            // A small file's last block, on FFS a tail of fragments: its
            // transfer is left undone too, overwritten before it runs it is
            // caught, and left alone it is cached.
            let tail_len = 1000;
            let s = subject
                .fs()
                .mknod(ROOT_INO, b"s", libc::S_IFREG | 0o644, 0, Creds::default())
                .expect("create s");
            let mut contents: Vec<u8> = (0..3).flat_map(|lbn| stamp(lbn, 1)).collect();
            contents.extend_from_slice(&stamp(3, 1)[..tail_len]);
            subject.fs().write(s.ino, 0, &contents).expect("write s");
            let at = 3 * bs as u64;
            for overwrite in [false, true] {
                subject.fs().sync().expect("sync");
                for at in (0..2 * CACHE).step_by(bs) {
                    subject.fs().read(g.ino, at, bs).expect("read g");
                }
                let start = subject.fs().read_begin(s.ino, at, bs).expect("read begins");
                let ReadStart::Pending(mut pending) = start else {
                    panic!("the last block of a small file, not cached, was read under the lock")
                };
                if overwrite {
                    subject.fs().write(s.ino, at, &stamp(3, 2)[..tail_len]).expect("overwrite");
                    subject.fs().sync().expect("sync");
                    for at in (0..2 * CACHE).step_by(bs) {
                        subject.fs().read(g.ino, at, bs).expect("read g");
                    }
                }
                if pending.fetch().expect("fetch") {
                    assert!(
                        !overwrite || self.0 == Layout::Lfs,
                        "a tail rewritten in place before its transfer was not caught"
                    );
                    subject.fs().adopt_read(&pending);
                    assert!(
                        pending.into_data() == stamp(3, 1)[..tail_len],
                        "the tail's fetched bytes are not the file's"
                    );
                } else {
                    assert!(overwrite, "a tail nothing wrote to went stale");
                }
                let version = if overwrite { 2 } else { 1 };
                let read = subject.fs().read(s.ino, at, bs).expect("read");
                assert!(
                    read == stamp(3, version)[..tail_len],
                    "the tail read after is not version {version}"
                );
                if !overwrite {
                    let again = subject.fs().read_begin(s.ino, at, bs).expect("read begins");
                    assert!(matches!(again, ReadStart::Done(_)), "a tail fetched alone was not cached");
                }
            }
            subject.fsck().expect("fsck clean");
        }
    }
    layout.with_subject(24 << 20, CACHE, None, Body(layout));
}

/// A write reads first the blocks it changes in part; with those blocks
/// out of the cache, `write_edges_to_fetch` plans exactly those reads (not
/// whole blocks, holes or blocks past the end, nor, where FFS takes a block
/// in part unread, whole fragments of a block inside the file), and a
/// write after their transfers and `adopt_read` stores what a plain write
/// would.
fn writes_fetch_exactly_the_blocks_they_change_in_part(layout: Layout) {
    struct Body(bool);
    impl WithSubject for Body {
        fn run<T: Subject>(self, mut subject: T) {
            let parts_unread = self.0;
            let bs = subject.limits().block_size;
            let b = bs as u64;
            let fs = subject.fs();
            let f = fs.mknod(ROOT_INO, b"f", libc::S_IFREG | 0o644, 0, Creds::default()).expect("create f");
            let mut model = fill(1, 8 * bs);
            fs.write(f.ino, 0, &model).expect("write f");
            let g = fs.mknod(ROOT_INO, b"g", libc::S_IFREG | 0o644, 0, Creds::default()).expect("create g");
            fs.write(g.ino, 0, &fill(7, 2 * CACHE as usize)).expect("write g");
            fs.sync().expect("sync");
            // (offset, length, blocks read first)
            let cases: [(u64, usize, usize); 8] = [
                (0, bs, 0),
                (1, 10, 1),
                (b - 1, 2, 2),
                (b, 2 * bs, 0),
                // Half a block at each end: whole fragments of FFS's 8 KiB
                // blocks, of LFS's 4 KiB blocks none.
                (b / 2, 2 * bs, if parts_unread { 0 } else { 2 }),
                (b / 2 + 1, 2 * bs, 2),
                (7 * b + 5, 10, 1),
                (8 * b + 3, 5, 0),
            ];
            for (i, &(offset, len, reads)) in cases.iter().enumerate() {
                // Written back, then pushed out of the cache by g, read a
                // block at a time.
                subject.fs().sync().expect("sync");
                for at in (0..2 * CACHE).step_by(bs) {
                    subject.fs().read(g.ino, at, bs).expect("read g");
                }
                let mut edges = subject.fs().write_edges_to_fetch(f.ino, offset, len).expect("plan");
                assert_eq!(edges.len(), reads, "case {i}: a write of {len} bytes at {offset}");
                for edge in &mut edges {
                    assert!(edge.fetch().expect("fetch"), "case {i}: nothing wrote meanwhile");
                    subject.fs().adopt_read(edge);
                }
                assert!(
                    subject.fs().write_edges_to_fetch(f.ino, offset, len).expect("plan again").is_empty(),
                    "case {i}: the blocks fetched were cached"
                );
                let data = fill(10 + i as u64, len);
                subject.fs().write(f.ino, offset, &data).expect("write");
                let end = offset as usize + len;
                if model.len() < end {
                    model.resize(end, 0);
                }
                model[offset as usize..end].copy_from_slice(&data);
                let read = subject.fs().read(f.ino, 0, model.len()).expect("read f");
                assert!(read == model, "case {i}: f differs from the model");
            }
            subject.fsck().expect("fsck clean");
        }
    }
    // The journal diffs whole blocks: it reads every block it changes.
    let parts_unread = matches!(layout, Layout::FfsSync | Layout::FfsAsync | Layout::FfsSoftdep);
    layout.with_subject(24 << 20, CACHE, None, Body(parts_unread));
}

/// Fills `subject` (a fresh 4 MiB disk, LFS without a cleaner) with
/// three-block files until not one more block fits; returns what each file
/// holds.
fn full_of_small_files<T: Subject>(subject: &mut T) -> BTreeMap<String, Vec<u8>> {
    let mut files = BTreeMap::new();
    for i in 0..10_000u64 {
        let name = format!("s{i}");
        let Ok(inode) =
            subject.fs().mknod(ROOT_INO, name.as_bytes(), libc::S_IFREG | 0o644, 0, Creds::default())
        else {
            break;
        };
        let data = fill(i, 3 * 4096);
        let n = subject.fs().write(inode.ino, 0, &data).unwrap_or(0);
        files.insert(name, data[..n].to_vec());
        if n < data.len() {
            break;
        }
    }
    files
}

/// Regression (found by the full-disk model test above): on a full disk,
/// a truncate to the middle of a block freed the blocks past the new end,
/// then failed with ENOSPC zeroing the rest of the new last block (a new
/// block, in a log): the file kept its old size and read zeros where its
/// data had been. A truncate must work on a full disk (it frees space),
/// and what a later extension shows past the old end must be zeros.
fn truncating_to_the_middle_of_a_block_works_on_a_full_disk(layout: Layout) {
    struct Body;
    impl WithSubject for Body {
        fn run<T: Subject>(self, mut subject: T) {
            truncate_on_a_full_disk(&mut subject)
        }
    }
    layout.with_subject(4 << 20, CACHE, None, Body);
}

fn truncate_on_a_full_disk<T: Subject>(subject: &mut T) {
    let mut files = full_of_small_files(subject);
    let subject = &mut *subject;
    let victims: Vec<String> =
        files.iter().filter(|(_, d)| d.len() == 3 * 4096).map(|(n, _)| n.clone()).collect();
    assert!(victims.len() > 20, "only {} files", victims.len());
    for name in victims.iter().step_by(victims.len() / 8) {
        let ino = subject.fs().lookup(ROOT_INO, name.as_bytes()).expect("lookup").ino;
        let half = SetAttr { size: Some(6144), ..SetAttr::default() };
        subject.fs().setattr(ino, &half).unwrap_or_else(|e| panic!("truncate {name} on a full disk: {e}"));
        files.get_mut(name).expect("file").truncate(6144);
        check_files(subject, &files, &format!("after truncating {name}"));
        // Longer again: what lay past the end reads as zeros, or the call
        // is refused and changes nothing.
        let back = SetAttr { size: Some(3 * 4096), ..SetAttr::default() };
        match subject.fs().setattr(ino, &back) {
            Ok(_) => files.get_mut(name).expect("file").resize(3 * 4096, 0),
            Err(e) if e.errno() == libc::ENOSPC => {}
            Err(e) => panic!("truncate {name} up: {e}"),
        }
        check_files(subject, &files, &format!("after making {name} longer"));
    }
    subject.remount().expect("remount");
    check_files(subject, &files, "after remount");
}

/// Regression (found by the full-disk model test above): on a full disk a
/// ZERO_RANGE punched its range, then failed with ENOSPC storing its zero
/// blocks, and a PUNCH_HOLE freed its whole blocks, then failed zeroing a
/// partial one: ENOSPC, with the data gone. A call refused with ENOSPC
/// must change nothing. Each range holds whole blocks and a partial one
/// on either block size; on FFS, which rewrites in place, a punch needs
/// no space and succeeds, and only the zero ranges (made first) are
/// refused.
fn fallocate_refused_on_a_full_disk_changes_nothing(layout: Layout) {
    struct Body;
    impl WithSubject for Body {
        fn run<T: Subject>(self, mut subject: T) {
            fallocate_on_a_full_disk(&mut subject)
        }
    }
    layout.with_subject(4 << 20, CACHE, None, Body);
}

fn fallocate_on_a_full_disk<T: Subject>(subject: &mut T) {
    let mut files = full_of_small_files(subject);
    let subject = &mut *subject;
    let names: Vec<String> =
        files.iter().filter(|(_, d)| d.len() == 3 * 4096).map(|(n, _)| n.clone()).collect();
    let mut refused = 0;
    // Every zero range first: on FFS each punch frees a block at once.
    let modes = [libc::FALLOC_FL_ZERO_RANGE, libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE];
    for mode in modes {
        for name in names.iter().step_by(names.len() / 10) {
            let ino = subject.fs().lookup(ROOT_INO, name.as_bytes()).expect("lookup").ino;
            let (offset, len) = (0, 2 * 4096 + 100);
            match subject.fs().fallocate(ino, offset, len, mode) {
                Ok(()) => {
                    files.get_mut(name).expect("file")[offset as usize..(offset + len) as usize].fill(0)
                }
                Err(e) if e.errno() == libc::ENOSPC => refused += 1,
                Err(e) => panic!("fallocate {name}: {e}"),
            }
            check_files(subject, &files, &format!("after fallocate mode {mode:#x} on {name}"));
        }
    }
    assert!(refused >= 4, "only {refused} calls were refused: the disk was not full");
    subject.remount().expect("remount");
    check_files(subject, &files, "after remount");
}

/// Collapse and insert among writes, truncates, punches and remounts, on
/// a few files: after every step each file's bytes and attributes match
/// the byte model, across remounts. Shifts cross the first indirect and
/// the double-indirect blocks, and FFS's fragment tails move with them.
fn random_collapse_insert_write_truncate_match_a_byte_model(layout: Layout) {
    let weights = Weights {
        create: 4,
        mkdir: 1,
        symlink: 0,
        readlink: 0,
        write: 16,
        read: 6,
        truncate: 4,
        fallocate: 3,
        shift: 16,
        chmod: 0,
        getattr: 2,
        readdir: 0,
        unlink: 1,
        rmdir: 0,
        rename: 1,
        link: 0,
        xattr: 0,
        handle: 2,
        sync: 2,
        drop_indexes: 0,
        remount: 1,
        near_tails: 0,
    };
    run_weighted(layout, weights, 0x73686600, "collapse and insert");
}

/// Writes, truncates and every fallocate mode (allocate, KEEP_SIZE, zero
/// range, punch hole) at byte offsets inside small files, among
/// remounts: on FFS each moves the file's end across its tail of
/// fragments, into blocks preallocated past the end and out again. Every
/// answer matches the model, and fsck at the end of each run (as of every
/// model run) finds the space each file holds and the free maps exact —
/// which once caught a preallocated block turned tail keeping all its
/// fragments.
fn fallocate_writes_and_truncates_around_file_tails_match_the_model(layout: Layout) {
    let weights = Weights {
        create: 6,
        mkdir: 1,
        symlink: 0,
        readlink: 0,
        write: 20,
        read: 4,
        truncate: 8,
        fallocate: 24,
        shift: 0,
        chmod: 0,
        getattr: 2,
        readdir: 0,
        unlink: 4,
        rmdir: 0,
        rename: 1,
        link: 0,
        xattr: 0,
        handle: 2,
        sync: 2,
        drop_indexes: 0,
        remount: 1,
        near_tails: 70,
    };
    run_weighted(layout, weights, 0x7461696c, "around tails");
}

/// An FFS subject that counts the runs `realloc` moved, over remounts.
struct CountingMoves {
    inner: FfsSubject,
    moved: std::rc::Rc<std::cell::Cell<u64>>,
}

impl CountingMoves {
    fn count(&mut self) {
        self.moved.set(self.moved.get() + self.inner.fs().storage().reallocations());
    }
}

impl Drop for CountingMoves {
    fn drop(&mut self) {
        self.count();
    }
}

impl Subject for CountingMoves {
    type S = fslab::ffs::Ffs;
    fn fs(&mut self) -> &mut fslab::ufs::FileSystem<fslab::ffs::Ffs> {
        self.inner.fs()
    }
    fn remount(&mut self) -> fslab::Result<bool> {
        self.count();
        self.inner.remount()
    }
    fn limits(&self) -> testkit::model::Limits {
        self.inner.limits()
    }
    fn capacity(&mut self) -> Option<testkit::space::Capacity> {
        self.inner.capacity()
    }
    fn fsck(&mut self) -> Result<(), String> {
        self.count();
        self.inner.fsck()
    }
}

/// Random operations (with remounts, fsck at each check) on FFS in
/// `integrity` mode with `realloc` moving a file's run at every block
/// where a move is allowed (`MountOptions::realloc_always`): every byte
/// read back matches the model, and runs did move.
fn random_operations_with_realloc_at_every_block_match_the_model(integrity: fslab::ffs::Integrity) {
    let seeds = env_or("FSLAB_MODEL_SEEDS", 4);
    let ops = env_or("FSLAB_MODEL_OPS", 1500) as usize;
    let moved = std::rc::Rc::new(std::cell::Cell::new(0));
    for seed in (0..seeds).map(|i| 0x7265616c + i) {
        let cfg = RunConfig {
            seed,
            ops,
            check_every: env_or("FSLAB_CHECK_EVERY", 100) as usize,
            weights: Weights::with_remount(),
        };
        let inner = FfsSubject::small_realloc_always(DISK, CACHE, integrity).expect("mkfs and mount");
        let (stats, _) = run(CountingMoves { inner, moved: moved.clone() }, cfg);
        eprintln!("realloc everywhere, {integrity:?}, seed {seed:#x}: {stats:?}");
    }
    assert!(moved.get() > 0, "{integrity:?}: no run moved: the test no longer tests realloc");
    eprintln!("{integrity:?}: {} runs moved", moved.get());
}

mod random_operations_with_realloc_at_every_block_match_the_model {
    use fslab::ffs::Integrity;
    #[test]
    fn ffs_sync() {
        super::random_operations_with_realloc_at_every_block_match_the_model(Integrity::Sync)
    }
    #[test]
    fn ffs_async() {
        super::random_operations_with_realloc_at_every_block_match_the_model(Integrity::Async)
    }
    #[test]
    fn ffs_softdep() {
        super::random_operations_with_realloc_at_every_block_match_the_model(Integrity::Softdep)
    }
    #[test]
    fn ffs_journal() {
        super::random_operations_with_realloc_at_every_block_match_the_model(Integrity::Journal)
    }
    #[test]
    fn ffs_journal_sync() {
        super::random_operations_with_realloc_at_every_block_match_the_model(Integrity::JournalSync)
    }
}

/// The calls that hold the file system shared (`FileSystem::*_cached`)
/// answer from memory what the exclusive calls answer, and leave to those
/// what only they can do. In a directory large enough for a hash: every
/// name and an absent one, and its listing, whole and a page; each file's
/// attributes and contents, once an exclusive read has cached them, and an
/// extended attribute absent and set; a read that would update the access
/// time is declined until the exclusive read has updated it; a name
/// removed and its inode freed are no longer found.
fn answers_from_memory_are_the_exclusive_answers_or_none(layout: Layout) {
    struct Body;
    impl WithSubject for Body {
        fn run<T: Subject>(self, mut subject: T) {
            const FILES: usize = 100;
            let fs = subject.fs();
            // Checking mode, which the model's subjects run in, makes every
            // lookup scan: only the exclusive call can.
            fs.set_dirhash_options(DirhashOptions { check: false, ..fs.dirhash_options() });
            let d = fs.mkdir(ROOT_INO, b"d", 0o755, Creds::default()).expect("mkdir");
            let mut files = Vec::new();
            for i in 0..FILES {
                let name = format!("a-file-with-a-longer-name-{i:04}");
                let f = fs
                    .mknod(d.ino, name.as_bytes(), libc::S_IFREG | 0o644, 0, Creds::default())
                    .expect("create");
                let data = fill(i as u64, 100 + i * 30);
                fs.write(f.ino, 0, &data).expect("write");
                files.push((name, f.ino, data));
            }
            let (mut looked_up, mut stated, mut read) = (0, 0, 0);
            for (name, ino, data) in &files {
                let exclusive = fs.lookup(d.ino, name.as_bytes()).expect("lookup");
                assert_eq!(fs.read(*ino, 0, 1 << 16).expect("read"), *data, "{name}: exclusive read");
                if let Some(found) = fs.lookup_cached(d.ino, name.as_bytes()) {
                    looked_up += 1;
                    assert_eq!(found.expect("found from memory"), exclusive, "{name}: lookup");
                }
                if let Some(inode) = fs.getattr_cached(*ino) {
                    stated += 1;
                    assert_eq!(inode, fs.getattr(*ino).expect("getattr"), "{name}: attributes");
                }
                if let Some(got) = fs.read_cached(*ino, 0, 1 << 16, Access::NoAtime) {
                    read += 1;
                    assert!(got == *data, "{name}: {}", first_difference(data, &got));
                }
            }
            assert_eq!(
                (looked_up, stated, read),
                (FILES, FILES, FILES),
                "answers from memory (lookup, stat, read)"
            );
            let listed = fs.readdir_cached(d.ino, 0, usize::MAX).expect("the listing from memory");
            assert_eq!(listed, fs.readdir(d.ino, 0, usize::MAX).expect("readdir"), "listing");
            let page = fs.readdir_cached(d.ino, listed[40].next_offset, 7).expect("a page from memory");
            assert_eq!(page, listed[41..48], "a page of the listing");
            let absent = fs.lookup_cached(d.ino, b"absent").expect("the hash answers for an absent name");
            assert_eq!(absent.err().map(|e| e.errno()), Some(libc::ENOENT));

            let (_, ino, _) = &files[2];
            // The subjects keep few clean inodes: an exclusive call brings
            // this one back into memory, as a kernel's lookup would first.
            fs.getattr(*ino).expect("getattr");
            let none = fs.getxattr_cached(*ino, b"user.a").expect("no attributes, from memory");
            assert_eq!(none.err().map(|e| e.errno()), Some(libc::ENODATA));
            fs.setxattr(*ino, b"user.a", b"value", 0).expect("setxattr");
            let found = fs.getxattr_cached(*ino, b"user.a").expect("an attribute from memory");
            assert_eq!(found.expect("the attribute"), b"value");

            fs.set_atime_options(AtimeOptions::RELATIME);
            let (_, ino, _) = &files[0];
            fs.write(*ino, 0, b"changed").expect("write");
            assert!(
                fs.read_cached(*ino, 0, 7, Access::Touch).is_none(),
                "a read that updates the access time"
            );
            assert_eq!(fs.read_cached(*ino, 0, 7, Access::NoAtime).as_deref(), Some(&b"changed"[..]));
            fs.read(*ino, 0, 7).expect("read updating the access time");
            assert_eq!(fs.read_cached(*ino, 0, 7, Access::Touch).as_deref(), Some(&b"changed"[..]));

            let (name, ino, _) = &files[1];
            fs.unlink(d.ino, name.as_bytes()).expect("unlink");
            let gone = fs.lookup_cached(d.ino, name.as_bytes());
            assert!(gone.as_ref().is_none_or(|r| r.is_err()), "a removed name from memory: {gone:?}");
            assert_eq!(fs.getattr_cached(*ino), None, "a freed inode from memory");
        }
    }
    layout.with_subject(DISK, CACHE, None, Body);
}

/// Every change of a file's contents or owner drops its capabilities
/// (`security.capability`), as Linux's `file_remove_privs` and
/// `chown_common` do, and keeps its other attributes; a change of its mode
/// alone keeps them.
fn a_change_of_contents_or_owner_drops_the_files_capabilities(layout: Layout) {
    struct Body;
    impl WithSubject for Body {
        fn run<T: Subject>(self, mut subject: T) {
            let fs = subject.fs();
            let creds = Creds::default();
            let f = fs.mknod(ROOT_INO, b"f", libc::S_IFREG | 0o755, 0, creds).expect("create").ino;
            let src = fs.mknod(ROOT_INO, b"src", libc::S_IFREG | 0o644, 0, creds).expect("create").ino;
            fs.write(src, 0, &[5; 8192]).expect("write src");
            // (the file system, the file, a file to copy from)
            type Change<S> = fn(&mut fslab::ufs::FileSystem<S>, u64, u64) -> fslab::Result<()>;
            fn changes<S: fslab::storage::StorageManager>() -> Vec<(&'static str, Change<S>, bool)> {
                vec![
                    ("write", |fs, f, _| fs.write(f, 0, b"x").map(|_| ()), true),
                    (
                        "truncate",
                        |fs, f, _| {
                            fs.setattr(f, &SetAttr { size: Some(3), ..SetAttr::default() }).map(|_| ())
                        },
                        true,
                    ),
                    (
                        "chown",
                        |fs, f, _| fs.setattr(f, &SetAttr { uid: Some(7), ..SetAttr::default() }).map(|_| ()),
                        true,
                    ),
                    ("fallocate", |fs, f, _| fs.fallocate(f, 0, 65536, 0), true),
                    ("copy into", |fs, f, src| fs.copy_file_range(src, 0, f, 0, 4096).map(|_| ()), true),
                    (
                        "chmod",
                        |fs, f, _| {
                            fs.setattr(f, &SetAttr { mode: Some(0o700), ..SetAttr::default() }).map(|_| ())
                        },
                        false,
                    ),
                ]
            }
            for (what, change, drops) in changes::<T::S>() {
                fs.setxattr(f, b"security.capability", b"caps", 0).expect("set the capability");
                fs.setxattr(f, b"user.kept", b"yes", 0).expect("set user.kept");
                change(fs, f, src).unwrap_or_else(|e| panic!("{what}: {e}"));
                let capability = fs.getxattr(f, b"security.capability");
                if drops {
                    assert_eq!(capability.err().map(|e| e.errno()), Some(libc::ENODATA), "after the {what}");
                } else {
                    assert_eq!(capability.expect("kept"), b"caps", "after the {what}");
                }
                assert_eq!(fs.getxattr(f, b"user.kept").expect("user.kept"), b"yes", "after the {what}");
            }
        }
    }
    layout.with_subject(DISK, CACHE, None, Body);
}

on_every_layout!(
    a_change_of_contents_or_owner_drops_the_files_capabilities,
    answers_from_memory_are_the_exclusive_answers_or_none,
    fallocate_writes_and_truncates_around_file_tails_match_the_model,
    random_collapse_insert_write_truncate_match_a_byte_model,
    random_namespace_operations_match_the_model,
    random_operations_on_a_disk_that_fills_up_get_enospc_only_when_it_is_full,
    every_write_accepted_before_enospc_survives_a_remount_and_deleting_frees_space,
    every_write_accepted_before_enospc_reads_back_with_a_small_cache,
    unlink_on_a_full_disk_succeeds_so_space_can_be_freed,
    statfs_counts_a_new_inode_as_used_before_it_is_written,
    renames_of_names_not_yet_durable_sync_and_fsck_clean,
    truncating_to_the_middle_of_a_block_works_on_a_full_disk,
    fallocate_refused_on_a_full_disk_changes_nothing,
    reads_fetched_outside_the_lock_see_the_file_as_it_was_or_read_again,
    writes_fetch_exactly_the_blocks_they_change_in_part,
);
