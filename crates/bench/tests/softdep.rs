//! Soft updates in the lab: the systems that run them, the two experiments
//! that compare them (the MH folder, 2002 §4.1; the 2000 paper's
//! microbenchmarks), and soft updates' own behaviour on the lab's virtual
//! time — repeatable runs, syncs and deferred frees driven by the tick.

use fslab::ffs::Ffs;
use fslab::format::inode::kind;
use fslab::format::ROOT_INO;
use fslab::time::TimeSource;
use fslab::ufs::{Creds, FileSystem, RenameFlags};
use fslab_bench::cpu::{CpuModel, PENTIUM4_1600};
use fslab_bench::device::{self, Medium};
use fslab_bench::experiment::{by_id, factors, Experiment};
use fslab_bench::results::Results;
use fslab_bench::runner::{run, Settings};
use fslab_bench::system::{self, by_name, Integrity, Kind};
use fslab_bench::target::library::Layout;
use fslab_bench::target::library::MountEnv;
use fslab_bench::target::Target;
use fslab_bench::workload::{contents, write_new_file};

fn quick(ids: &[&str]) -> Results {
    let chosen: Vec<&'static Experiment> =
        ids.iter().map(|id| by_id(id).expect("a known experiment")).collect();
    let r = run(&chosen, &Settings { quick: true, ..Settings::default() });
    let failed: Vec<String> =
        r.skipped.iter().map(|s| format!("{} {}: {}", s.experiment, s.system, s.reason)).collect();
    assert!(failed.is_empty(), "{failed:?}");
    r
}

#[test]
fn the_soft_updates_systems_are_ffs_with_softdep_and_dirhash_switched() {
    let params = |name: &str| match by_name(name).map(|s| s.kind) {
        Some(Kind::Ffs(p)) => p,
        other => panic!("{name}: {other:?}"),
    };
    assert_eq!(params("ffs-softdep").integrity, Integrity::Softdep);
    assert!(params("ffs-softdep").dirhash && !params("ffs-softdep-linear").dirhash);
    let (sync, linear) = (params("ffs-m8r0"), params("ffs-linear"));
    assert_eq!((linear.dirhash, sync.dirhash), (false, true));
    assert_eq!(fslab_bench::system::FfsParams { dirhash: true, ..linear }, sync, "only dirhash differs");
    assert_eq!(
        fslab_bench::system::FfsParams { integrity: Integrity::Sync, ..params("ffs-softdep") },
        sync,
        "only the integrity mode differs"
    );
}

#[test]
fn the_mh_folder_runs_small_with_its_phases_and_factors() {
    let r = quick(&["dm02-mh-folder"]);
    let e = by_id("dm02-mh-folder").expect("experiment");
    let files = r.series(e.id, "ffs-m8r0", "create", "files/s");
    assert_eq!(files.len(), 1, "one point at the folder's size");
    let n = files[0].0;
    for system in e.systems {
        for phase in ["create", "pack", "remove"] {
            let rate = r.value(e.id, system, phase, "files/s", n).expect("a rate");
            let secs = r.value(e.id, system, phase, "s", n).expect("a time");
            assert!(rate > 0.0 && rate.is_finite(), "{system} {phase}: {rate}");
            assert!((rate * secs / n - 1.0).abs() < 1e-6, "{system} {phase}: files/s and s agree");
        }
    }
    for f in factors(e) {
        for phase in ["create", "pack", "remove"] {
            assert!(r.value(e.id, f.faster, phase, f.metric, n).is_some(), "{f:?} {phase}");
        }
    }
    // Without dirhash every create scans the directory, which the 2002
    // machine charges; with soft updates nothing else hides it.
    let dh = r.value(e.id, "ffs-softdep", "create", "x DH", n).expect("DH factor");
    assert!(dh > 1.2, "dirhash on create with soft updates: x{dh}");
    // Creates and removes of empty files wait for no write under soft
    // updates: more than ten times synchronous FFS's rate on any disk.
    for phase in ["create", "remove"] {
        let su = r.value(e.id, "ffs-softdep-linear", phase, "x SU", n).expect("SU factor");
        assert!(su > 10.0, "{phase}: x{su}");
    }
}

#[test]
fn a_folder_emptied_from_its_end_while_a_rename_into_its_tail_is_unshown_is_removed_whole() {
    // The paper-sized MH folder at seed 5: the pack renames a message into
    // a slot of the folder's last block freed by an earlier rename, and
    // the remove empties the directory from its end before either new
    // name was written. The unlink that emptied that block used to wait
    // for a new name it had itself removed, and failed with EIO.
    let e = by_id("dm02-mh-folder").expect("experiment");
    let settings =
        Settings { seed: 5, only_systems: Some(vec!["ffs-softdep".to_string()]), ..Settings::default() };
    let r = run(&[e], &settings);
    let failed: Vec<String> = r.skipped.iter().map(|s| format!("{}: {}", s.system, s.reason)).collect();
    assert!(failed.is_empty(), "{failed:?}");
    assert!(r.value(e.id, "ffs-softdep", "remove", "files/s", 33_164.0).is_some_and(|v| v > 0.0));
}

#[test]
fn the_2000_microbenchmarks_run_small_with_their_phases() {
    let r = quick(&["s00-micro"]);
    let e = by_id("s00-micro").expect("experiment");
    let spec = fslab_bench::workload::microbench::Spec::quick();
    for system in e.systems {
        for &size in &spec.sizes {
            let x = size as f64;
            for (phase, metric) in
                [("create", "MB/s"), ("create", "files/s"), ("read", "MB/s"), ("delete", "files/s")]
            {
                let v = r.value(e.id, system, phase, metric, x).unwrap_or(-1.0);
                assert!(v > 0.0 && v.is_finite(), "{system} {phase} {size}: {v} {metric}");
            }
        }
        let zero = r.value(e.id, system, "create-delete", "files/s", 0.0).unwrap_or(-1.0);
        assert!(zero > 0.0, "{system}: create-delete {zero}");
    }
    // Synchronous FFS waits for an inode and an entry write per create;
    // soft updates write them at the phase's closing sync, many a block.
    let at = |s: &str| r.value(e.id, s, "create", "files/s", 4096.0).unwrap_or(0.0);
    assert!(at("ffs-softdep") > 2.0 * at("ffs-m8r0"), "{} vs {}", at("ffs-softdep"), at("ffs-m8r0"));
}

#[test]
fn soft_updates_repeat_exactly_on_virtual_time() {
    let chosen = [by_id("s00-micro").expect("experiment")];
    let settings =
        Settings { quick: true, only_systems: Some(vec!["ffs-softdep".into()]), ..Settings::default() };
    let first = run(&chosen, &settings);
    assert!(first.skipped.is_empty(), "{:?}", first.skipped);
    assert!(!first.points.is_empty());
    assert_eq!(first.points, run(&chosen, &settings).points, "every time measured repeats exactly");
    assert_eq!(first.runs[0].clock, "virtual");
}

/// A soft-updates FFS on a simulated disk, on virtual time, as the runner
/// makes it (inline write-back, the mount's clock).
fn softdep_target() -> Target {
    let medium = Medium::sim("cheetah9lp");
    let dev = device::prepare(&medium, Some(256 << 20), "softdep").expect("device");
    let clock = dev.clock.clone().expect("a simulated disk has a clock");
    let env = MountEnv {
        clock: TimeSource::virtual_clock(clock.clone()),
        deterministic: true,
        cache_bytes: PENTIUM4_1600.cache_bytes(8192),
    };
    let s = by_name("ffs-softdep").expect("system");
    let backend = system::open_library(s, dev.dev.clone(), None, dev.sim.clone(), env).expect("mount");
    let mut t = Target::on_virtual_time(backend, clock, CpuModel::of(PENTIUM4_1600));
    t.keep(Box::new(dev));
    t
}

#[test]
fn the_targets_tick_syncs_soft_updates() {
    let mut t = softdep_target();
    t.mkdir("d").expect("mkdir");
    let data = contents(64 << 10, 1);
    for i in 0..100 {
        write_new_file(&mut t, &format!("d/f{i}"), 64 << 10, &data).expect("write");
    }
    t.sync().expect("sync");
    for i in 0..100 {
        t.unlink(&format!("d/f{i}")).expect("unlink");
    }
    // Thirty seconds on, the next call's tick syncs without being asked.
    let writes = |t: &mut Target| t.counters().disk.map_or(0, |d| d.writes);
    let before = writes(&mut t);
    t.compute(31_000_000_000);
    t.stat("d/f0").expect("stat");
    assert!(writes(&mut t) > before, "the tick synced");
    t.finish().expect("unmount");
}

#[test]
fn soft_updates_frees_wait_for_durable_inodes_and_the_tick_releases_them() {
    let medium = Medium::sim("cheetah9lp");
    let dev = device::prepare(&medium, Some(256 << 20), "softdep-frees").expect("device");
    let clock = dev.clock.clone().expect("a simulated disk has a clock");
    let env = MountEnv {
        clock: TimeSource::virtual_clock(clock.clone()),
        deterministic: true,
        cache_bytes: 16 << 20,
    };
    let Some(Kind::Ffs(params)) = by_name("ffs-softdep").map(|s| s.kind) else { panic!("an FFS") };
    <Ffs as Layout>::mkfs(dev.dev.clone(), None, &params, &env).expect("mkfs");
    let mut fs = FileSystem::new(<Ffs as Layout>::mount(dev.dev.clone(), &params, &env).expect("mount"));
    let creds = Creds { uid: 0, gid: 0 };
    fs.create_root(0o755, creds).expect("root");
    let data = contents(64 << 10, 2);
    let mut names = Vec::new();
    for i in 0..50 {
        let name = format!("f{i}");
        let inode = fs.mknod(ROOT_INO, name.as_bytes(), kind::REG | 0o644, 0, creds).expect("create");
        fs.write(inode.ino, 0, &data).expect("write");
        names.push(name);
    }
    fs.sync().expect("sync");
    for name in &names {
        fs.unlink(ROOT_INO, name.as_bytes()).expect("unlink");
    }
    let (frags, inodes) = fs.storage().pending_frees();
    assert!(frags >= 50 * 64 && inodes == 50, "deferred: {frags} fragments, {inodes} inodes");
    // The tick syncs once the interval has passed, and the frees whose
    // cleared pointers are durable go at the tick after.
    for _ in 0..3 {
        clock.advance(31_000_000_000);
        fs.tick().expect("tick");
    }
    assert_eq!(fs.storage().pending_frees(), (0, 0), "the tick released them");
    fs.unmount().expect("unmount");
}

/// An FFS with soft updates on a simulated disk, with a cache of
/// `cache_bytes`, its root made.
fn softdep_fs(cache_bytes: u64, name: &str) -> (FileSystem<Ffs>, device::Device) {
    let medium = Medium::sim("cheetah9lp");
    let dev = device::prepare(&medium, Some(256 << 20), name).expect("device");
    let clock = dev.clock.clone().expect("a simulated disk has a clock");
    let env = MountEnv { clock: TimeSource::virtual_clock(clock), deterministic: true, cache_bytes };
    let Some(Kind::Ffs(params)) = by_name("ffs-softdep").map(|s| s.kind) else { panic!("an FFS") };
    <Ffs as Layout>::mkfs(dev.dev.clone(), None, &params, &env).expect("mkfs");
    let mut fs = FileSystem::new(<Ffs as Layout>::mount(dev.dev.clone(), &params, &env).expect("mount"));
    fs.create_root(0o755, Creds { uid: 0, gid: 0 }).expect("root");
    (fs, dev)
}

/// MH's folder in small, in a cache of 64 blocks: its 2,000 inodes span
/// 63 inode-table blocks, and an unlink or a rename that stored its inode
/// dirtied one of them a file, passing the write-back threshold every few
/// dozen files. Packing (each file renamed to its rank, often the old name
/// of a file moved before it) must write nothing; removing must sync
/// nothing; and both leave an image whose groups check and whose names
/// are the ones expected.
#[test]
fn a_pack_and_a_remove_under_soft_updates_dirty_no_inode_block() {
    let (mut fs, _dev) = softdep_fs(512 << 10, "softdep-pack");
    let creds = Creds { uid: 0, gid: 0 };
    let dir = fs.mkdir(ROOT_INO, b"inbox", 0o755, creds).expect("mkdir").ino;
    let numbers: Vec<u64> = (0..2000u64).map(|i| 3 * i + 1 + i % 2).collect();
    for &n in numbers.iter().rev() {
        fs.mknod(dir, n.to_string().as_bytes(), kind::REG | 0o644, 0, creds).expect("create");
    }
    fs.sync().expect("sync");
    let before = fs.storage().stats();
    for (k, &n) in numbers.iter().enumerate() {
        let k = k as u64 + 1;
        fs.rename(dir, n.to_string().as_bytes(), dir, k.to_string().as_bytes(), RenameFlags::default())
            .expect("rename");
    }
    let packed = fs.storage().stats();
    assert_eq!(packed.writes, before.writes, "a pack that stores no inode writes nothing");
    for k in 1..=numbers.len() as u64 {
        assert!(fs.lookup(dir, k.to_string().as_bytes()).is_ok(), "{k} after the pack");
    }
    for k in 1..=numbers.len() as u64 {
        fs.unlink(dir, k.to_string().as_bytes()).expect("unlink");
    }
    let removed = fs.storage().stats();
    assert_eq!(removed.syncs, packed.syncs, "the remove waited for no sync");
    assert!(
        removed.writes - packed.writes < numbers.len() as u64 / 10,
        "the remove wrote {} times for {} files",
        removed.writes - packed.writes,
        numbers.len()
    );
    assert_eq!(
        fs.storage().pending_frees().1,
        numbers.len() as u64,
        "each inode waits for its name's removal"
    );
    fs.rmdir(ROOT_INO, b"inbox").expect("rmdir");
    fs.sync().expect("sync");
    assert_eq!(fs.storage().pending_frees(), (0, 0), "the sync freed them");
    fs.storage().check_groups().expect("groups");
    fs.unmount().expect("unmount");
}

/// The 2000 paper's delete microbenchmark (§8.1, Fig. 2): past 96 KB a
/// delete must read the file's first indirect block to free what it
/// points at, except under soft updates, which free a removed file in the
/// background once its name's removal is durable. Here, on a cold cache,
/// soft updates' unlinks read nothing; the sync that follows reads the
/// indirect blocks and frees everything. FFS-async, the same files, reads
/// one per unlink (so the count can tell).
#[test]
fn soft_updates_free_a_removed_file_in_the_background_and_async_in_the_unlink() {
    for (system, background) in [("ffs-softdep", true), ("ffs-async", false)] {
        let medium = Medium::sim("cheetah9lp");
        let dev = device::prepare(&medium, Some(256 << 20), &format!("{system}-background")).expect("device");
        let clock = dev.clock.clone().expect("a simulated disk has a clock");
        let env =
            MountEnv { clock: TimeSource::virtual_clock(clock), deterministic: true, cache_bytes: 16 << 20 };
        let Some(Kind::Ffs(params)) = by_name(system).map(|s| s.kind) else { panic!("an FFS") };
        <Ffs as Layout>::mkfs(dev.dev.clone(), None, &params, &env).expect("mkfs");
        let mount =
            || FileSystem::new(<Ffs as Layout>::mount(dev.dev.clone(), &params, &env).expect("mount"));
        let mut fs = mount();
        let creds = Creds { uid: 0, gid: 0 };
        fs.create_root(0o755, creds).expect("root");
        let files = 20;
        let data = contents(200 << 10, 3);
        for i in 0..files {
            let name = format!("f{i}");
            let inode = fs.mknod(ROOT_INO, name.as_bytes(), kind::REG | 0o644, 0, creds).expect("create");
            fs.write(inode.ino, 0, &data).expect("write");
        }
        fs.unmount().expect("unmount");
        let mut fs = mount();
        let free_before = fs.statfs().expect("statfs").free_blocks;
        for i in 0..files {
            fs.lookup(ROOT_INO, format!("f{i}").as_bytes()).expect("lookup");
        }
        let before = fs.storage().stats();
        for i in 0..files {
            fs.unlink(ROOT_INO, format!("f{i}").as_bytes()).expect("unlink");
        }
        let unlinked = fs.storage().stats();
        let held = 200 / 8 + 1;
        let freed = fs.statfs().expect("statfs").free_blocks - free_before;
        assert!(
            freed >= files * held,
            "{system}: statfs counts a removed file's blocks free at once ({freed})"
        );
        if background {
            assert_eq!(unlinked.reads, before.reads, "{system}: the unlinks read nothing");
            assert_eq!(fs.storage().pending_frees().1, files, "{system}: every file waits");
        } else {
            assert!(unlinked.reads >= before.reads + files, "{system}: each unlink read its indirect block");
        }
        fs.sync().expect("sync");
        assert_eq!(fs.storage().pending_frees(), (0, 0), "{system}: the sync freed everything");
        if background {
            assert!(
                fs.storage().stats().reads >= unlinked.reads + files,
                "{system}: the sync read the indirect blocks"
            );
        }
        assert!(
            fs.statfs().expect("statfs").free_blocks - free_before >= files * held,
            "{system}: freed for good"
        );
        fs.storage().check_groups().expect("groups");
        fs.unmount().expect("unmount");
    }
}

/// A directory's rename under soft updates is ordered like a file's, by
/// rollbacks at write time: moving a directory (its `..` and two parents'
/// counts with it) and renaming one in place waits for no write and no
/// sync, and the image after a sync has the directories where they went.
#[test]
fn a_directory_renamed_or_moved_under_soft_updates_waits_for_no_write() {
    let (mut fs, _dev) = softdep_fs(16 << 20, "softdep-dir-rename");
    let creds = Creds { uid: 0, gid: 0 };
    let a = fs.mkdir(ROOT_INO, b"a", 0o755, creds).expect("mkdir").ino;
    let b = fs.mkdir(ROOT_INO, b"b", 0o755, creds).expect("mkdir").ino;
    let mut moved = Vec::new();
    for i in 0..20 {
        let d = fs.mkdir(a, format!("d{i}").as_bytes(), 0o755, creds).expect("mkdir").ino;
        fs.mknod(d, b"file", kind::REG | 0o644, 0, creds).expect("create");
        moved.push(d);
    }
    fs.sync().expect("sync");
    let before = fs.storage().stats();
    for i in 0..20 {
        let (to, name) = if i % 2 == 0 { (b, format!("m{i}")) } else { (a, format!("r{i}")) };
        fs.rename(a, format!("d{i}").as_bytes(), to, name.as_bytes(), RenameFlags::default())
            .expect("rename");
    }
    let renamed = fs.storage().stats();
    assert_eq!(renamed.syncs, before.syncs, "no rename synced");
    assert_eq!(renamed.writes, before.writes, "no rename wrote");
    fs.sync().expect("sync");
    for (i, &d) in moved.iter().enumerate() {
        let (to, name) = if i % 2 == 0 { (b, format!("m{i}")) } else { (a, format!("r{i}")) };
        assert_eq!(fs.lookup(to, name.as_bytes()).expect("new name").ino, d);
        assert_eq!(fs.lookup(d, b"..").expect("..").ino, to, "d{i}'s .. names its new parent");
    }
    assert_eq!(fs.getattr(a).expect("a").attr.nlink, 2 + 10, "a keeps the ten renamed in place");
    assert_eq!(fs.getattr(b).expect("b").attr.nlink, 2 + 10, "b gained the ten moved");
    fs.storage().check_groups().expect("groups");
    fs.unmount().expect("unmount");
}
