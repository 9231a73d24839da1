//! The 1995 paper's aged-FFS experiment (§5, Fig. 8): an empty FFS given
//! an aged image's free-space map, and the experiment in its small
//! configuration, repeating exactly from its seed.

use disk::{BlockDevice, MemDisk, VirtualClock};
use fslab::ffs::Ffs;
use fslab::time::TimeSource;
use fslab_bench::aging::rebuild::{free_maps, impose};
use fslab_bench::cpu::CpuModel;
use fslab_bench::experiment::{by_id, OF_EMPTY};
use fslab_bench::runner::{run, Place, Settings};
use fslab_bench::system::{FfsParams, Integrity, Rotdelay};
use fslab_bench::target::library::{Library, MountEnv};
use fslab_bench::target::Target;
use fslab_bench::workload::contents;
use std::sync::Arc;

const PARAMS: FfsParams = FfsParams {
    block_size: 8192,
    fragment_size: 1024,
    maxcontig: 7,
    rotdelay: Rotdelay::Blocks(0),
    integrity: Integrity::Sync,
    dirhash: true,
    group_bytes: Some(4 << 20),
    realloc: false,
    dirpref: fslab::ffs::DirPref::Old,
};

/// A new FFS of `PARAMS` on a memory disk of `bytes`, mounted.
fn fresh(bytes: u64, params: FfsParams) -> (Arc<dyn BlockDevice>, Target) {
    let dev: Arc<dyn BlockDevice> = Arc::new(MemDisk::new(bytes));
    let clock = Arc::new(VirtualClock::new());
    let env = MountEnv {
        clock: TimeSource::virtual_clock(clock.clone()),
        deterministic: true,
        cache_bytes: 4 << 20,
    };
    let library = Library::<Ffs>::make(dev.clone(), None, None, params, env).expect("mkfs and mount");
    (dev, Target::on_virtual_time(Box::new(library), clock, CpuModel::off()))
}

fn mount(dev: &Arc<dyn BlockDevice>) -> Target {
    let clock = Arc::new(VirtualClock::new());
    let env = MountEnv {
        clock: TimeSource::virtual_clock(clock.clone()),
        deterministic: true,
        cache_bytes: 4 << 20,
    };
    let library = Library::<Ffs>::open(dev.clone(), None, PARAMS, env).expect("mount");
    Target::on_virtual_time(Box::new(library), clock, CpuModel::off())
}

/// Files of assorted sizes, every other one removed: free space in holes.
fn fragment(t: &mut Target) {
    let data = contents(200 << 10, 3);
    t.mkdir("d").expect("mkdir");
    for i in 0..120u64 {
        let size = 1000 + (i * 7919) % (200 << 10);
        let fd = t.create(&format!("d/f{i}")).expect("create");
        t.write(fd, 0, &data[..size as usize]).expect("write");
        t.close(fd).expect("close");
    }
    for i in (0..120u64).step_by(2) {
        t.unlink(&format!("d/f{i}")).expect("unlink");
    }
    t.sync().expect("sync");
}

/// An empty FFS given an aged image's map has free exactly what both had
/// free (§5.3: "could only utilize the same free blocks as the original"),
/// its counts follow (statfs), it mounts and takes new files in what is
/// left, and a map of another geometry is refused.
#[test]
fn an_empty_ffs_given_an_aged_map_has_free_only_what_both_had() {
    let bytes = 24 << 20;
    let (aged_dev, mut aged) = fresh(bytes, PARAMS);
    fragment(&mut aged);
    let aged_free = aged.usage().expect("statfs").free;
    aged.finish().expect("unmount");
    let maps = free_maps(aged_dev.as_ref()).expect("maps");
    assert!(maps.utilisation() > 0.05, "the aged image holds data: {}", maps.utilisation());

    let (dev, mut empty) = fresh(bytes, PARAMS);
    let empty_free = empty.usage().expect("statfs").free;
    empty.finish().expect("unmount");
    let before = free_maps(dev.as_ref()).expect("maps");
    impose(dev.as_ref(), &maps).expect("impose");
    let after = free_maps(dev.as_ref()).expect("maps");
    for (g, map) in after.groups.iter().enumerate() {
        for f in 0..map.len() {
            assert_eq!(
                map.get(f),
                maps.groups[g].get(f) && before.groups[g].get(f),
                "group {g} fragment {f}"
            );
        }
    }
    let mut t = mount(&dev);
    let free = t.usage().expect("statfs").free;
    assert!(free < empty_free, "rebuilt {free} against empty {empty_free}");
    assert!(
        free.abs_diff(aged_free) <= 64 << 10,
        "rebuilt {free} against aged {aged_free}: the same free space"
    );
    let data = contents(256 << 10, 9);
    t.mkdir("new").expect("mkdir");
    let fd = t.create("new/f").expect("create");
    t.write(fd, 0, &data).expect("write");
    t.close(fd).expect("close");
    t.drop_caches().expect("remount");
    let mut back = vec![0u8; data.len()];
    let fd = t.open("new/f").expect("open");
    t.read(fd, 0, &mut back).expect("read");
    t.close(fd).expect("close");
    assert!(back == data, "a file written on the rebuilt image reads back");
    t.finish().expect("unmount");

    let (other, mut t) = fresh(bytes, FfsParams { group_bytes: Some(8 << 20), ..PARAMS });
    t.finish().expect("unmount");
    assert!(impose(other.as_ref(), &maps).is_err(), "a map of another geometry is refused");
}

/// `s95-aged --quick` runs both systems at 8 KB, 64 KB and 1 MB, derives
/// aged over empty for each size and phase, and repeats exactly from the
/// same seed (the aging stream and the disk's phase both come from it);
/// another seed ages another image.
#[test]
fn the_aged_experiment_runs_quick_and_repeats_from_its_seed() {
    let e = vec![by_id("s95-aged").expect("the experiment")];
    let settings = |seed| Settings { seed, quick: true, place: Place::Paper, ..Settings::default() };
    let first = run(&e, &settings(1));
    assert!(first.skipped.is_empty(), "{:?}", first.skipped);
    for phase in ["create", "read"] {
        for size in [8192.0, 65536.0, 1048576.0] {
            for system in ["ffs-m7r0", "ffs-aged"] {
                let v = first.value("s95-aged", system, phase, "MB/s", size);
                assert!(v.is_some_and(|v| v > 0.0), "{system} {phase} {size}: {v:?}");
            }
            let ratio = first.value("s95-aged", "ffs-aged", phase, OF_EMPTY, size).expect("aged / empty");
            let by_hand = first.value("s95-aged", "ffs-aged", phase, "MB/s", size).expect("aged")
                / first.value("s95-aged", "ffs-m7r0", phase, "MB/s", size).expect("empty");
            assert_eq!(ratio, by_hand, "{phase} {size}");
        }
    }
    let used =
        first.value("s95-aged", "ffs-aged", "aged", "used %", 0.0).expect("the aged map's utilisation");
    assert!(used > 50.0, "aging filled the image: {used}%");
    let info = first.run("s95-aged").expect("run info");
    assert_eq!((info.disk.as_str(), info.clock.as_str()), ("m2694", "virtual"));

    let again = run(&e, &settings(1));
    assert_eq!(first.points, again.points, "the same seed gives the same points");
    let other = run(&e, &settings(2));
    let aged_points = |r: &fslab_bench::results::Results| {
        r.points.iter().filter(|p| p.system == "ffs-aged").cloned().collect::<Vec<_>>()
    };
    assert_ne!(aged_points(&first), aged_points(&other), "another seed ages another image");
}
