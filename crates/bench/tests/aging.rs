//! Aging on fslab: the layout score read from a real FFS image, with
//! placements made on purpose (one file alone; two files written a block
//! at a time in turn); the free-space figures after frees made on
//! purpose; idle gaps; and an LFS aged until its cleaner works.

use disk::{BlockDevice, MemDisk};
use fslab::ffs::{Ffs, FilePlacement, MkfsOptions, MountOptions};
use fslab::format::inode::kind;
use fslab::format::{Ino, ROOT_INO};
use fslab::time::TimeSource;
use fslab::ufs::{Creds, FileSystem};
use fslab_bench::aging::fragmentation::Fragmentation;
use fslab_bench::aging::score::{score, Tally, Variant};
use fslab_bench::target::FreeSpaceMap;
use std::sync::Arc;

const CREDS: Creds = Creds { uid: 0, gid: 0 };
const BLOCK: usize = 8192;

/// An FFS with asynchronous metadata, 8 KB blocks, 1 KB fragments and
/// clusters of 8, in groups of `group_bytes` (mkfs's default if `None`).
fn async_ffs(group_bytes: Option<u64>) -> fslab_bench::system::FfsParams {
    use fslab_bench::system::{FfsParams, Integrity, Rotdelay};
    FfsParams {
        block_size: 8192,
        fragment_size: 1024,
        maxcontig: 8,
        rotdelay: Rotdelay::Blocks(0),
        integrity: Integrity::Async,
        dirhash: true,
        group_bytes,
        realloc: false,
        dirpref: fslab::ffs::DirPref::Old,
    }
}

/// A mount on `clock`'s virtual time, repeatable, with `cache_bytes` of
/// buffer cache.
fn virtual_env(clock: &Arc<disk::VirtualClock>, cache_bytes: u64) -> fslab_bench::target::library::MountEnv {
    fslab_bench::target::library::MountEnv {
        clock: TimeSource::virtual_clock(clock.clone()),
        deterministic: true,
        cache_bytes,
    }
}

fn new_ffs() -> FileSystem<Ffs> {
    let dev: Arc<dyn BlockDevice> = Arc::new(MemDisk::new(64 << 20));
    // Without realloc, which would move the files written in turn to runs
    // of their own: the placements below are FFS's first choices.
    let options = MkfsOptions {
        block_size: BLOCK as u32,
        fragment_size: 1024,
        realloc: false,
        ..MkfsOptions::default()
    };
    fslab::ffs::mkfs(dev.clone(), &options).expect("mkfs");
    let ffs = Ffs::mount(dev, MountOptions::deterministic(TimeSource::wall())).expect("mount");
    let mut fs = FileSystem::new(ffs);
    fs.create_root(0o755, CREDS).expect("root");
    fs
}

fn create(fs: &mut FileSystem<Ffs>, name: &str) -> Ino {
    fs.mknod(ROOT_INO, name.as_bytes(), kind::REG | 0o644, 0, CREDS).expect("create").ino
}

fn placement(all: &[FilePlacement], ino: Ino) -> &FilePlacement {
    all.iter().find(|f| f.ino == ino).expect("the file's placement")
}

/// The tally worked out by hand from the addresses: a data block (or the
/// tail) is optimal when it starts where the data block before it ends.
fn by_hand(file: &FilePlacement) -> Tally {
    let data: Vec<_> = file.blocks.iter().filter(|b| b.lbn >= 0).collect();
    let mut t = Tally { files: u64::from(data.len() >= 2), ..Tally::default() };
    for pair in data.windows(2) {
        t.counted += 1;
        if pair[1].addr == pair[0].addr + u64::from(pair[0].frags) {
            t.optimal += 1;
        }
    }
    t
}

/// One file written alone on an empty FFS lies in one run: six blocks and
/// a tail, 6 of 6 optimal. Two files written a block at a time in turn
/// interleave: neither has one block after the previous, so their blocks
/// score 0 of 2 × 5; the aggregate is blocks over blocks, 6 of 16.
#[test]
fn the_layout_score_of_placements_made_on_purpose() {
    let mut fs = new_ffs();
    let alone = create(&mut fs, "alone");
    fs.write(alone, 0, &vec![1u8; 6 * BLOCK + 3000]).expect("write");
    let (a, b) = (create(&mut fs, "a"), create(&mut fs, "b"));
    for i in 0..6u64 {
        for ino in [a, b] {
            fs.write(ino, i * BLOCK as u64, &vec![2u8; BLOCK]).expect("write");
        }
    }
    fs.sync().expect("sync");
    let all = fs.storage().file_placements().expect("placements");
    let fpb = 8;

    let one = placement(&all, alone);
    assert_eq!(one.blocks.len(), 7, "six blocks and a tail: {:?}", one.blocks);
    assert_eq!(one.blocks[6].frags, 3, "a 3000-byte tail holds three 1 KiB fragments");
    assert_eq!(by_hand(one), Tally { files: 1, optimal: 6, counted: 6 }, "{:?}", one.blocks);
    for ino in [a, b] {
        let f = placement(&all, ino);
        assert_eq!(by_hand(f), Tally { files: 1, optimal: 0, counted: 5 }, "{:?}", f.blocks);
    }

    let s = score(&all, fpb);
    assert_eq!(s.regular_files, 3);
    assert_eq!(s.primary(), Tally { files: 3, optimal: 6, counted: 16 });
    assert_eq!(s.of(Variant { indirect: false, tail: false }), Tally { files: 3, optimal: 5, counted: 15 });
    assert_eq!(s.primary().score(), Some(6.0 / 16.0));
}

/// Past twelve blocks a file has an indirect block; the variant that
/// counts it meets two more blocks (the seek to it and back) than data
/// blocks alone, whatever the allocator chose.
#[test]
fn an_indirect_block_is_placed_and_counted_only_in_its_variant() {
    let mut fs = new_ffs();
    let big = create(&mut fs, "big");
    fs.write(big, 0, &vec![3u8; 20 * BLOCK]).expect("write");
    fs.sync().expect("sync");
    let all = fs.storage().file_placements().expect("placements");
    let f = placement(&all, big);
    assert_eq!(f.blocks.iter().filter(|b| b.lbn < 0).count(), 1, "one indirect block: {:?}", f.blocks);
    assert_eq!(f.blocks.iter().position(|b| b.lbn < 0), Some(12), "met after the twelve direct blocks");
    let s = score(&all, 8);
    let (data, with_ind) = (s.primary(), s.of(Variant { indirect: true, tail: true }));
    assert_eq!((data.counted, with_ind.counted), (19, 20));
    assert_eq!(data, by_hand(f));
    let ind = f.blocks[12].addr;
    let contiguous_around = u64::from(ind == f.blocks[11].addr + 8) + u64::from(f.blocks[13].addr == ind + 8);
    let thirteenth = u64::from(f.blocks[13].addr == f.blocks[11].addr + 8);
    assert_eq!(with_ind.optimal, data.optimal - thirteenth + contiguous_around);
}

/// Device writes an async FFS makes while `trace` runs on it (virtual
/// time, no explicit sync), the mount's own left out.
fn writes_during(trace: &str) -> usize {
    use disk::{CountingDisk, VirtualClock};
    use fslab_bench::aging::run::{run, RunOptions};
    use fslab_bench::aging::trace::TraceReader;
    use fslab_bench::cpu::CpuModel;
    use fslab_bench::target::library::Library;
    use fslab_bench::target::Target;

    let counting = Arc::new(CountingDisk::new(MemDisk::new(32 << 20)));
    let dev: Arc<dyn BlockDevice> = counting.clone();
    fslab::mkfs_ffs(dev.clone(), &MkfsOptions::default(), CREDS).expect("mkfs");
    let clock = Arc::new(VirtualClock::new());
    let params = async_ffs(None);
    let env = virtual_env(&clock, 64 << 20);
    let library = Library::<Ffs>::open(dev, None, params, env).expect("mount");
    let mut target = Target::on_virtual_time(Box::new(library), clock.clone(), CpuModel::off());
    counting.clear_writes();
    let mut source = TraceReader::new(trace.as_bytes());
    let options = RunOptions {
        max_ops: None,
        clock: Some(clock.as_ref()),
        record: None,
        on_op: &mut |_, _| {},
        on_day: &mut |_| {},
        placement: fslab_bench::aging::run::Placement::Namespace,
        stop: None,
    };
    run(&mut target, &mut source, options).expect("run");
    assert!(clock.now() >= 1_000_000_000 * 2, "the clock follows the operations' times");
    let writes = counting.writes().len();
    target.finish().expect("unmount");
    writes
}

/// The clock moves to each operation's simulated time, so an idle hour
/// between two operations lets the periodic sync (every 30 s of the
/// mount's clock) write what the first left in the cache; a second's gap
/// does not.
#[test]
fn an_idle_gap_in_the_stream_is_idle_time_for_the_mount() {
    let quiet = writes_during("fslab-age-trace 1\n0 create f 100000\n2 mkdir d\n");
    let idle = writes_during("fslab-age-trace 1\n0 create f 100000\n3600 mkdir d\n");
    assert!(idle > quiet, "writes with an idle hour {idle}, without {quiet}");
}

/// The fragmentation figures of the file system as it is now.
fn fragmentation(fs: &mut FileSystem<Ffs>) -> (Fragmentation, Vec<fslab::ffs::GroupFreeSpace>) {
    let groups = fs.storage().free_space_by_group();
    let map = FreeSpaceMap { groups: groups.clone(), frags_per_block: (BLOCK / 1024) as u32 };
    (Fragmentation::of(&map), groups)
}

/// Three files of whole blocks written one after the other lie end to
/// end (checked from their placements). Removing the middle one leaves a
/// hole of exactly its two blocks: one more run of 2 in the summary, 16
/// more free fragments, nothing else changed. Removing the last one joins
/// the hole, its three blocks and the free run after it: the run of 2 is
/// gone and the group's longest run is five blocks longer.
#[test]
fn free_space_figures_follow_frees_made_on_purpose() {
    let mut fs = new_ffs();
    let mut inos = Vec::new();
    for (name, blocks) in [("a", 3), ("b", 2), ("c", 3)] {
        let ino = create(&mut fs, name);
        fs.write(ino, 0, &vec![1u8; blocks * BLOCK]).expect("write");
        inos.push(ino);
    }
    let all = fs.storage().file_placements().expect("placements");
    let data = |ino| -> Vec<u64> {
        placement(&all, ino).blocks.iter().filter(|b| b.lbn >= 0).map(|b| b.addr).collect()
    };
    let (a, b, c) = (data(inos[0]), data(inos[1]), data(inos[2]));
    let frag = 8;
    let mut all_blocks = [a.clone(), b.clone(), c.clone()].concat();
    all_blocks.dedup();
    assert!(all_blocks.windows(2).all(|w| w[1] == w[0] + frag), "end to end: {a:?} {b:?} {c:?}");
    let geo = fs.storage().superblock().geometry;
    let group = geo.group_of(b[0]) as usize;

    let (before, groups_before) = fragmentation(&mut fs);
    fs.unlink(ROOT_INO, b"b").expect("unlink b");
    let (hole, groups_hole) = fragmentation(&mut fs);
    let mut expected = before.cluster_sum.clone();
    expected[1] += 1;
    assert_eq!(hole.cluster_sum, expected);
    assert_eq!(hole.free_frags, before.free_frags + 2 * frag);
    assert_eq!(hole.full_cluster_frags, before.full_cluster_frags);
    assert_eq!(hole.longest_run, before.longest_run);
    assert_eq!(groups_hole[group].cluster_sum[1], groups_before[group].cluster_sum[1] + 1);

    fs.unlink(ROOT_INO, b"c").expect("unlink c");
    let (joined, groups_joined) = fragmentation(&mut fs);
    assert_eq!(joined.cluster_sum[1], before.cluster_sum[1], "the hole joined the run after it");
    assert_eq!(joined.free_frags, before.free_frags + 5 * frag);
    let (g0, g1) = (&groups_before[group], &groups_joined[group]);
    assert_eq!(g1.longest_run, g0.longest_run + 5, "{g0:?} then {g1:?}");
    assert_eq!(g1.blocks_in_full_clusters, g0.blocks_in_full_clusters + 5);
    assert_eq!(joined.full_cluster_frags, before.full_cluster_frags + 5 * frag);
}

/// Runs `source` on a new LFS of `mib` MiB (4 KiB blocks, 128 KiB
/// segments, the greedy cleaner in-line) on virtual time.
fn age_lfs(mib: u64, source: &mut dyn fslab_bench::aging::run::OpSource) -> fslab_bench::aging::run::Summary {
    use disk::VirtualClock;
    use fslab::lfs::Lfs;
    use fslab_bench::aging::run::{run, RunOptions};
    use fslab_bench::cpu::CpuModel;
    use fslab_bench::system::LfsParams;
    use fslab_bench::target::library::Library;
    use fslab_bench::target::Target;

    let dev: Arc<dyn BlockDevice> = Arc::new(MemDisk::new(mib << 20));
    let clock = Arc::new(VirtualClock::new());
    let params =
        LfsParams { block_size: 4096, segment_size: 128 << 10, cleaner: Some("greedy"), dirhash: true };
    let env = virtual_env(&clock, 4 << 20);
    let library = Library::<Lfs>::make(dev, None, None, params, env).expect("mkfs and mount");
    let mut target = Target::on_virtual_time(Box::new(library), clock.clone(), CpuModel::off());
    let options = RunOptions {
        max_ops: None,
        clock: Some(clock.as_ref()),
        record: None,
        on_op: &mut |_, _| {},
        on_day: &mut |_| {},
        placement: fslab_bench::aging::run::Placement::Namespace,
        stop: None,
    };
    let summary = run(&mut target, source, options).expect("run");
    target.finish().expect("unmount");
    summary
}

/// A stream writing six times a small LFS over three days makes its
/// cleaner work: segments cleaned and blocks moved each day they are
/// needed, a write cost above 1 on those days, and the days adding up to
/// the run's total. The results file holds every figure and reads back
/// into the same values.
#[test]
fn an_aged_lfs_reports_its_cleaners_work_and_the_results_read_back() {
    use fslab_bench::aging::generate::{Generator, Params};
    use fslab_bench::aging::report::{parse_results, results_json, results_text, Described};

    let params = Params { seed: 3, fs_bytes: 14 << 20, days: 3, write_factor: 6 };
    let summary = age_lfs(16, &mut Generator::new(params));
    let total = summary.cleaner.expect("an LFS has a cleaner");
    assert!(total.segments_cleaned > 0 && total.blocks_moved > 0, "{total:?}");
    let days: Vec<_> = summary.days.iter().map(|d| d.cleaner.expect("each day's work")).collect();
    assert_eq!(days.iter().map(|d| d.segments_cleaned).sum::<u64>(), total.segments_cleaned);
    assert_eq!(days.iter().map(|d| d.blocks_moved).sum::<u64>(), total.blocks_moved);
    for d in days.iter().filter(|d| d.segments_cleaned > 0) {
        let cost = d.write_cost.expect("data written on a day with cleaning");
        assert!(cost > 1.0, "cleaning costs reads and writes: {d:?}");
    }
    assert!(summary.days.iter().all(|d| d.free_space.is_none() && d.score.is_none()));

    let described = Described {
        target: "lfs",
        source: &params.describe(),
        cleaner_policy: Some("greedy"),
        placement: "namespace",
    };
    let back = parse_results(&results_text(&results_json(&summary, &described))).expect("reads back");
    assert_eq!(back.cleaner_policy.as_deref(), Some("greedy"));
    assert_eq!(back.cleaner_total, summary.cleaner);
    assert_eq!(back.final_groups, None);
    assert_eq!(back.days.len(), summary.days.len());
    for (read, day) in back.days.iter().zip(&summary.days) {
        assert_eq!((read.day, read.cleaner, &read.free_space), (day.day, day.cleaner, &day.free_space));
    }
}

/// The same on an FFS: each day's free-space figures and the groups at
/// the end are in the results file and read back unchanged.
#[test]
fn an_aged_ffs_reports_its_free_space_and_the_results_read_back() {
    use disk::VirtualClock;
    use fslab_bench::aging::generate::{Generator, Params};
    use fslab_bench::aging::report::{parse_results, results_json, results_text, Described};
    use fslab_bench::aging::run::{run, RunOptions};
    use fslab_bench::cpu::CpuModel;
    use fslab_bench::target::library::Library;
    use fslab_bench::target::Target;

    let dev: Arc<dyn BlockDevice> = Arc::new(MemDisk::new(32 << 20));
    let clock = Arc::new(VirtualClock::new());
    let params = async_ffs(Some(8 << 20));
    let env = virtual_env(&clock, 8 << 20);
    let library = Library::<Ffs>::make(dev, None, None, params, env).expect("mkfs and mount");
    let mut target = Target::on_virtual_time(Box::new(library), clock.clone(), CpuModel::off());
    let stream = Params { seed: 2, fs_bytes: 28 << 20, days: 2, write_factor: 2 };
    let options = RunOptions {
        max_ops: None,
        clock: Some(clock.as_ref()),
        record: None,
        on_op: &mut |_, _| {},
        on_day: &mut |_| {},
        placement: fslab_bench::aging::run::Placement::Namespace,
        stop: None,
    };
    let summary = run(&mut target, &mut Generator::new(stream), options).expect("run");
    target.finish().expect("unmount");
    let groups = summary.final_groups.clone().expect("the groups at the end");
    assert_eq!(groups.len(), 4, "32 MiB in 8 MiB groups");
    for d in &summary.days {
        let f = d.free_space.as_ref().expect("each day's free space");
        assert_eq!((f.maxcontig, f.cluster_sum.len()), (8, 8));
        assert!(f.full_cluster_frags <= f.free_frags, "{f:?}");
        assert!(d.cleaner.is_none(), "FFS has no cleaner");
    }
    let last = summary.days.last().and_then(|d| d.free_space.as_ref()).expect("a last day");
    let longest = groups.iter().map(|g| g.longest_run).max();
    assert_eq!(last.longest_run.map(|r| r.max), longest);

    let described =
        Described { target: "ffs", source: &stream.describe(), cleaner_policy: None, placement: "namespace" };
    let back = parse_results(&results_text(&results_json(&summary, &described))).expect("reads back");
    assert_eq!(back.final_groups, Some(groups));
    assert_eq!((back.cleaner_policy, back.cleaner_total), (None, None));
    for (read, day) in back.days.iter().zip(&summary.days) {
        assert_eq!((read.day, &read.free_space, read.cleaner), (day.day, &day.free_space, day.cleaner));
    }
}

/// An idle hour before the stream's last operation is when the cleaner
/// runs its background round, as a mount's cleaning thread would: 20 MiB
/// of files that stay written in turn with 5 MiB that are then
/// overwritten leave a 32 MiB LFS (256 segments) below its high-water
/// mark but above the low-water mark at which writers clean. Without the
/// pause nothing is cleaned; with it, a round is.
#[test]
fn an_idle_gap_in_the_stream_is_when_the_lfs_cleaner_runs() {
    use fslab_bench::aging::trace::TraceReader;

    let trace = |last: u64| {
        let mut text = String::from("fslab-age-trace 1\n0 mkdir d\n");
        for i in 0..80 {
            text.push_str(&format!("0 create d/k{i} {}\n", 256 << 10));
            if i < 20 {
                text.push_str(&format!("0 create d/f{i} {}\n", 256 << 10));
            }
        }
        for i in 0..20 {
            text.push_str(&format!("0 overwrite d/f{i} {}\n", 256 << 10));
        }
        text.push_str(&format!("{last} mkdir e\n"));
        text
    };
    let cleaned = |text: String| {
        let summary = age_lfs(32, &mut TraceReader::new(text.as_bytes()));
        summary.cleaner.expect("an LFS has a cleaner").segments_cleaned
    };
    let (busy, idle) = (cleaned(trace(0)), cleaned(trace(3600)));
    assert_eq!(busy, 0, "the writers had no need to clean");
    assert!(idle > 0, "no segment cleaned in an idle hour");
}

/// A 64 MiB FFS in 4 MiB groups (sixteen), mounted on virtual time.
fn sixteen_group_ffs() -> (fslab_bench::target::Target, Arc<disk::VirtualClock>) {
    use fslab_bench::cpu::CpuModel;
    use fslab_bench::target::library::Library;
    use fslab_bench::target::Target;

    let dev: Arc<dyn BlockDevice> = Arc::new(MemDisk::new(64 << 20));
    let clock = Arc::new(disk::VirtualClock::new());
    let env = virtual_env(&clock, 8 << 20);
    let library =
        Library::<Ffs>::make(dev, None, None, async_ffs(Some(4 << 20)), env).expect("mkfs and mount");
    (Target::on_virtual_time(Box::new(library), clock.clone(), CpuModel::off()), clock)
}

/// The 1997 placement on a hand-built stream: one directory per group,
/// each in its group; every live file in the directory of the group its
/// creation path maps to, its inode in that group (from its number); a
/// renamed file where it was created; the stream's own directories not
/// made; sizes as the stream left them.
#[test]
fn the_1997_placement_puts_every_file_in_the_directory_of_its_group() {
    use fslab_bench::aging::run::{group_dir, group_of_identity, run, Placement, RunOptions};
    use fslab_bench::aging::trace::TraceReader;
    use std::collections::{HashMap, HashSet};

    let mut text = String::from("fslab-age-trace 1\n0 mkdir d\n0 mkdir d/e\n");
    for i in 0..48u64 {
        text.push_str(&format!("{i} create d/e/f{i} {}\n", 1000 + i * 3000));
    }
    text.push_str("100 rename d/e/f3 d/g3\n101 unlink d/e/f4\n102 append d/e/f5 5000\n");
    text.push_str("103 rename d/e/f6 d/e/f7\n104 truncate d/e/f8 10\n");
    let (mut target, clock) = sixteen_group_ffs();
    let options = RunOptions {
        max_ops: None,
        clock: Some(clock.as_ref()),
        record: None,
        on_op: &mut |_, _| {},
        on_day: &mut |_| {},
        placement: Placement::CylinderGroups,
        stop: None,
    };
    let summary = run(&mut target, &mut TraceReader::new(text.as_bytes()), options).expect("run");
    let groups = target.cylinder_groups().expect("an FFS has groups");
    assert_eq!(groups.count, 16);
    assert_eq!(summary.group_dirs, Some((16, 16)), "a directory in every group");
    for g in 0..16 {
        let ino = target.inode(&group_dir(g)).expect("fslab").expect("the group's directory");
        assert_eq!(groups.group_of(ino), Some(g), "cg{g} is inode {ino}");
    }
    assert_eq!(target.stat("d").expect("stat"), None, "the stream's directories are not made");

    let created: HashMap<&str, &str> = [("d/g3", "d/e/f3"), ("d/e/f7", "d/e/f6")].into_iter().collect();
    let placed = summary.placed.clone().expect("the 1997 placement says where files went");
    assert_eq!(placed.len(), 46, "48 made, one unlinked, one replaced by a rename: {placed:?}");
    let mut used = HashSet::new();
    for (path, on) in &placed {
        let identity = created.get(path.as_str()).copied().unwrap_or(path);
        let g = group_of_identity(identity, 16);
        assert!(on.starts_with(&format!("{}/", group_dir(g))), "{path} (made as {identity}) is at {on}");
        let ino = target.inode(on).expect("fslab").expect("the placed file");
        assert_eq!(groups.group_of(ino), Some(g), "{path}: inode {ino}");
        used.insert(g);
        let size = summary.live.iter().find(|f| &f.path == path).expect("a live file").size;
        assert_eq!(target.stat(on).expect("stat"), Some(size), "{path}");
    }
    assert!(used.len() >= 12, "the identities spread over the groups: {used:?}");
    let size_of = |p: &str| summary.live.iter().find(|f| f.path == p).map(|f| f.size);
    assert_eq!((size_of("d/e/f5"), size_of("d/e/f8")), (Some(1000 + 5 * 3000 + 5000), Some(10)));
    target.finish().expect("unmount");
}

/// Every day of an aged FFS carries its by-size scores, which sum to the
/// day's primary score; the last day's are the final ones; the results
/// file keeps them, and a version 2 file (no `placement`, no per-day
/// `by_size`) still reads.
#[test]
fn every_day_has_its_by_size_scores_and_old_results_still_read() {
    use fslab_bench::aging::generate::{Generator, Params};
    use fslab_bench::aging::report::{parse_results, results_json, results_text, Described};
    use fslab_bench::aging::run::{run, Placement, RunOptions};

    let (mut target, clock) = sixteen_group_ffs();
    let stream = Params { seed: 4, fs_bytes: 56 << 20, days: 3, write_factor: 2 };
    let options = RunOptions {
        max_ops: None,
        clock: Some(clock.as_ref()),
        record: None,
        on_op: &mut |_, _| {},
        on_day: &mut |_| {},
        placement: Placement::CylinderGroups,
        stop: None,
    };
    let summary = run(&mut target, &mut Generator::new(stream), options).expect("run");
    target.finish().expect("unmount");
    let described =
        Described { target: "ffs", source: &stream.describe(), cleaner_policy: None, placement: "1997" };
    let json = results_json(&summary, &described);
    assert_eq!((json["version"].as_u64(), json["placement"].as_str()), (Some(3), Some("1997")));
    let days = json["days"].as_array().expect("days");
    assert_eq!(days.len(), 3);
    for (d, day) in days.iter().zip(&summary.days) {
        let buckets = d["by_size"].as_array().expect("each day's by-size scores");
        assert_eq!(buckets.len(), 11, "{d}");
        let sum = |field: &str| buckets.iter().map(|b| b[field].as_u64().expect("a count")).sum::<u64>();
        let primary = day.score.as_ref().expect("a score").primary();
        assert_eq!(
            (sum("optimal"), sum("counted"), sum("files")),
            (primary.optimal, primary.counted, primary.files)
        );
    }
    assert_eq!(days[2]["by_size"], json["final_by_size"]);
    assert_ne!(days[0]["by_size"], days[2]["by_size"], "the days differ");
    let back = parse_results(&results_text(&json)).expect("reads back");
    assert_eq!(back.placement, "1997");
    assert_eq!(back.days[1].by_size.as_ref().map(Vec::len), Some(11));

    let mut old = json.clone();
    old["version"] = 2.into();
    old.as_object_mut().expect("an object").remove("placement");
    for d in old["days"].as_array_mut().expect("days") {
        d.as_object_mut().expect("a day").remove("by_size");
    }
    let back = parse_results(&results_text(&old)).expect("a version 2 file reads");
    assert_eq!(
        (back.placement.as_str(), back.days.len(), back.days[0].by_size.clone()),
        ("namespace", 3, None)
    );
    old["version"] = 4.into();
    assert!(parse_results(&results_text(&old)).is_err_and(|e| e.contains("version 4")));
}

/// The free-space bitmaps of an aged image, written and read back, are
/// every group's fragment map as the unmounted image has it; a damaged or
/// cut file is refused.
#[test]
fn the_saved_bitmaps_round_trip_to_the_image_s_groups() {
    use fslab::ffs::mkfs::{read_group, read_superblock};
    use fslab_bench::aging::generate::Params;
    use fslab_bench::aging::rebuild::{age_image, free_maps, SavedMaps};

    let stream = Params { seed: 6, fs_bytes: 0, days: 2, write_factor: 2 };
    let aged = age_image(&async_ffs(Some(8 << 20)), 30 << 20, stream).expect("aged");
    let dev = aged.dev.as_ref();
    let saved = SavedMaps::of(&free_maps(dev).expect("maps"));
    let bytes = saved.encode();
    let back = SavedMaps::decode(&bytes).expect("reads back");
    assert_eq!(back, saved);
    let sb = read_superblock(dev).expect("superblock");
    let geo = sb.geometry;
    assert_eq!((back.groups.len() as u32, back.block_size, back.frag_size), (geo.ncg, 8192, 1024));
    assert_eq!(back.groups.len(), 4, "30 MiB in 8 MiB groups, the last short");
    let (mut free, mut used) = (0u64, 0u64);
    for g in &back.groups {
        let cg = read_group(dev, &sb, g.group).expect("group");
        assert_eq!(g.free.len(), geo.group_frags(g.group));
        assert_eq!(g.first_frag, geo.group_base(g.group));
        for f in 0..g.free.len() {
            assert_eq!(g.free.get(f), cg.is_frag_free(f), "group {} fragment {f}", g.group);
            if g.free.get(f) {
                free += 1;
            } else {
                used += 1;
            }
        }
    }
    assert!(free > 0 && used > 0, "an aged image has both: {free} free, {used} used");
    let mut damaged = bytes.clone();
    damaged[60] ^= 1;
    assert!(SavedMaps::decode(&damaged).is_err_and(|e| e.contains("checksum")));
    assert!(SavedMaps::decode(&bytes[..bytes.len() - 9]).is_err());
    assert!(SavedMaps::decode(b"not a bitmaps file").is_err_and(|e| e.contains("magic")));
}
