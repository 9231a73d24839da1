//! `--cpu-model paper` through a target: the checksums LFS and FFS compute
//! are charged as 4.4BSD's LFS and FFS computed theirs (a word a block; none),
//! so a paper target is charged less than an `on` one by about the
//! whole-block charge of every block the layout wrote.

use fslab::time::TimeSource;
use fslab_bench::cpu::{CpuModel, SPARCSTATION_2};
use fslab_bench::device::{self, Medium};
use fslab_bench::system::{self, by_name};
use fslab_bench::target::library::MountEnv;
use fslab_bench::target::Target;
use std::time::Duration;

/// `name` on a simulated DSP 3105 with the SparcStation II's cache, made as
/// the runner makes it, charging `cpu`.
fn target(name: &str, cpu: CpuModel) -> Target {
    let medium = Medium::sim("dsp3105");
    let s = by_name(name).expect("system");
    let dev = device::prepare(&medium, Some(128 << 20), name).expect("device");
    let clock = dev.clock.clone().expect("a simulated disk has a clock");
    let env = MountEnv {
        clock: TimeSource::virtual_clock(clock.clone()),
        deterministic: true,
        cache_bytes: SPARCSTATION_2.cache_bytes(s.block_size()),
    };
    let backend = system::open_library(s, dev.dev.clone(), None, dev.sim.clone(), env).expect("mount");
    let mut t = Target::on_virtual_time(backend, clock, cpu);
    t.keep(Box::new(dev));
    t
}

/// What the calls of [`charged`] cost, checksums apart: creat, pwrite,
/// fsync and close, one path component, an inode made, 64 KB copied in.
fn calls(cpu: CpuModel) -> Duration {
    Duration::from_nanos(
        4 * cpu.syscall_ns() + cpu.lookup_ns(1) + cpu.inode_change_ns() + cpu.copy_ns(64 << 10),
    )
}

/// The CPU charged for creating a 64 KB file and fsyncing it.
fn charged(name: &str, cpu: CpuModel) -> Duration {
    let mut t = target(name, cpu);
    let before = t.counters();
    let fd = t.create("f").expect("create");
    t.write(fd, 0, &[7u8; 64 << 10]).expect("write");
    t.fsync(fd).expect("fsync");
    t.close(fd).expect("close");
    let after = t.counters();
    t.finish().expect("unmount");
    after.cpu - before.cpu
}

#[test]
fn paper_takes_off_the_crc_of_every_block_lfs_wrote() {
    let on = charged("lfs", CpuModel::of(SPARCSTATION_2));
    let paper = charged("lfs", CpuModel::paper(SPARCSTATION_2));
    let block = Duration::from_nanos(CpuModel::of(SPARCSTATION_2).copy_ns(4096));
    // The file's 16 blocks, its inode block and the summary at least, each
    // 0.9 ms less its word (0.9 us); a partial segment or two, not more.
    let saved = on - paper;
    assert!(saved >= 18 * (block - Duration::from_micros(1)), "saved {saved:?} of {on:?}");
    assert!(saved < 40 * block, "saved {saved:?} of {on:?}");
    // What is left is the calls and 4.4BSD's sums: a word a block, and
    // each summary's 508 bytes (112 us).
    let sums = paper - calls(CpuModel::paper(SPARCSTATION_2));
    let summary = Duration::from_nanos(CpuModel::of(SPARCSTATION_2).copy_ns(508));
    assert!(sums >= summary && sums < 4 * summary, "{sums:?}");
}

#[test]
fn paper_charges_ffs_no_checksum() {
    let on = charged("ffs-m8r2", CpuModel::of(SPARCSTATION_2));
    let paper = charged("ffs-m8r2", CpuModel::paper(SPARCSTATION_2));
    let block = Duration::from_nanos(CpuModel::of(SPARCSTATION_2).copy_ns(8192));
    // At least the inode block's CRC, and only metadata's: FFS checksums no data.
    let saved = on - paper;
    assert!(saved >= block && saved < 8 * block, "saved {saved:?} of {on:?}");
    assert_eq!(paper, calls(CpuModel::paper(SPARCSTATION_2)), "the calls alone");
    assert_eq!(charged("ffs-m8r2", CpuModel::off()), Duration::ZERO);
}
