//! The lab's journal on a second disk (LFFS-wafs-2, 2000 §5.2): the log's
//! writes reach the second simulated drive, on the same virtual clock, and
//! the data drive sees only the file system's own.

use fslab::time::TimeSource;
use fslab_bench::cpu::{CpuModel, PENTIUM3_500};
use fslab_bench::device::{self, Medium};
use fslab_bench::system::{self, by_name};
use fslab_bench::target::library::MountEnv;
use fslab_bench::target::Target;

/// `name` on a simulated Cheetah, made as the runner makes it.
fn target(name: &str) -> Target {
    let medium = Medium::sim("cheetah9lp");
    let s = by_name(name).expect("system");
    let dev = device::prepare(&medium, Some(256 << 20), name).expect("device");
    let clock = dev.clock.clone().expect("a simulated disk has a clock");
    let log = s.log_device_bytes().map(|bytes| device::prepare_log(&medium, &dev, bytes, name).expect("log"));
    let env = MountEnv {
        clock: TimeSource::virtual_clock(clock.clone()),
        deterministic: true,
        cache_bytes: 32 << 20,
    };
    let backend = system::open_library(s, dev.dev.clone(), log, dev.sim.clone(), env).expect("mount");
    let mut t = Target::on_virtual_time(backend, clock, CpuModel::of(PENTIUM3_500));
    t.keep(Box::new(dev));
    t
}

/// Data-drive writes and virtual time of 200 synchronous creates.
fn creates(name: &str) -> (u64, std::time::Duration) {
    let mut t = target(name);
    t.mkdir("d").expect("mkdir");
    let before = t.counters();
    for i in 0..200 {
        let fd = t.create(&format!("d/f{i}")).expect("create");
        t.close(fd).expect("close");
    }
    let after = t.counters();
    t.finish().expect("unmount");
    let writes = |c: &fslab_bench::target::Counters| c.disk.as_ref().map_or(0, |d| d.writes);
    (writes(&after) - writes(&before), after.time - before.time)
}

#[test]
fn a_journal_on_a_second_disk_writes_its_log_there_on_the_same_clock() {
    assert_eq!(by_name("wafs-2sync").and_then(|s| s.log_device_bytes()), Some(128 << 20));
    assert_eq!(by_name("wafs-1sync").and_then(|s| s.log_device_bytes()), None);
    let (one_disk, one_time) = creates("wafs-1sync");
    let (two_disks, two_time) = creates("wafs-2sync");
    // Each synchronous create is one log write: on the data drive with
    // wafs-1, on the second with wafs-2.
    assert!(one_disk >= 200, "wafs-1sync's log writes reach the data drive: {one_disk}");
    assert!(two_disks < 20, "wafs-2sync's log writes went elsewhere: {two_disks} on the data drive");
    // The second drive's writes take time on the same clock: a rotation
    // or so each, as on the first.
    assert!(two_time.as_millis() >= 200, "200 synchronous log writes took {two_time:?}");
    assert!(two_time * 2 > one_time && two_time < one_time * 2, "{two_time:?} against {one_time:?}");
}
