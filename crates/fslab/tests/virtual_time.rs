//! A mount on a simulated disk keeps time by the disk's virtual clock and
//! writes its partial segments inline, so a run repeats to the nanosecond.

use disk::{BlockDevice, DiskModel, SimDisk, SimOptions, VirtualClock};
use fslab::format::inode::kind;
use fslab::format::ROOT_INO;
use fslab::lfs::{Lfs, MkfsOptions, MountOptions, SegmentWrites};
use fslab::time::TimeSource;
use fslab::ufs::{Creds, FileSystem};
use std::sync::Arc;
use std::time::Duration;

const CREDS: Creds = Creds { uid: 0, gid: 0 };

fn simulated(seed: u64) -> (Arc<VirtualClock>, Arc<SimDisk>) {
    let clock = Arc::new(VirtualClock::new());
    let model = DiskModel::by_name("dsp3105").expect("a catalogued drive");
    let disk = SimDisk::with_options(model, clock.clone(), SimOptions { seed, ..SimOptions::default() })
        .expect("disk");
    (clock, Arc::new(disk))
}

fn mount(dev: Arc<SimDisk>, clock: &Arc<VirtualClock>) -> FileSystem<Lfs> {
    let options = MountOptions {
        cache_bytes: 4 << 20,
        ..MountOptions::deterministic(TimeSource::virtual_clock(clock.clone()))
    };
    FileSystem::new(Lfs::mount(dev, options).expect("mount"))
}

/// mkfs, a root directory, then 200 small files with a sync: the virtual
/// time at every step.
fn small_file_run(seed: u64) -> Vec<u64> {
    let (clock, disk) = simulated(seed);
    let dev: Arc<dyn BlockDevice> = disk.clone();
    fslab::lfs::mkfs(dev, &MkfsOptions::default()).expect("mkfs");
    let mut fs = mount(disk.clone(), &clock);
    fs.create_root(0o755, CREDS).expect("root");
    let mut times = vec![clock.now()];
    for n in 0..200 {
        let ino =
            fs.mknod(ROOT_INO, format!("f{n}").as_bytes(), kind::REG | 0o644, 0, CREDS).expect("create").ino;
        fs.write(ino, 0, &[n as u8; 1024]).expect("write");
        clock.advance(100_000);
        times.push(clock.now());
    }
    fs.sync().expect("sync");
    times.push(clock.now());
    fs.unmount().expect("unmount");
    times.push(clock.now());
    times
}

#[test]
fn the_same_seed_gives_the_same_virtual_times() {
    let first = small_file_run(7);
    assert!(*first.last().expect("times") > 0, "the disk's work moved the clock");
    assert_eq!(first, small_file_run(7));
    assert_ne!(first, small_file_run(8), "another rotational phase changes the times");
}

#[test]
fn periodic_checkpoints_follow_the_virtual_clock() {
    let (clock, disk) = simulated(1);
    let dev: Arc<dyn BlockDevice> = disk.clone();
    fslab::lfs::mkfs(dev, &MkfsOptions::default()).expect("mkfs");
    let mut fs = mount(disk, &clock);
    fs.create_root(0o755, CREDS).expect("root");
    let before = fs.storage().stats().checkpoints;
    std::thread::sleep(Duration::from_millis(20));
    fs.tick().expect("tick");
    assert_eq!(fs.storage().stats().checkpoints, before, "host time alone writes no checkpoint");
    clock.advance(31_000_000_000);
    fs.tick().expect("tick");
    assert_eq!(fs.storage().stats().checkpoints, before + 1, "30 virtual seconds make one due");
}

#[test]
fn inline_segment_writes_are_on_the_device_when_the_writer_returns() {
    let (clock, disk) = simulated(3);
    let dev: Arc<dyn BlockDevice> = disk.clone();
    fslab::lfs::mkfs(dev, &MkfsOptions::default()).expect("mkfs");
    let mut fs = mount(disk.clone(), &clock);
    fs.create_root(0o755, CREDS).expect("root");
    let writes_before = disk.stats().writes;
    let ino = fs.mknod(ROOT_INO, b"big", kind::REG | 0o644, 0, CREDS).expect("create").ino;
    let data = vec![5u8; 1 << 20];
    for i in 0..8u64 {
        fs.write(ino, i << 20, &data).expect("write");
    }
    fs.fsync(ino, false).expect("fsync");
    assert!(disk.stats().writes > writes_before, "segments reached the disk");
    assert!(matches!(MountOptions::deterministic(TimeSource::wall()).segment_writes, SegmentWrites::Inline));
}
