//! Whether the papers' rotational delays are the best ones on the
//! simulated disks with the papers' machines, the premise the lab's FFS
//! systems rest on: the 1993 paper's FFS found 4 ms best on the HP 97560
//! under the HP 9000/380 (S93 §5.2.1), and the 1995 paper's clustered FFS
//! used a gap of 2 blocks after each 64 KB cluster on the DSP 3105 under
//! the SparcStation II (S95 §3.1: "approximately 75%" against 67%
//! without). Each sweep runs the 1993 bandwidth test (write + fsync, then
//! read after the caches are dropped) with the gap varied and everything
//! else as the lab's system has it. Where the premise does not hold, the
//! tests pin what does, and `docs/lab/analysis.md` ("Rotational delay")
//! gives the sweep and the reason.

use fslab::time::TimeSource;
use fslab_bench::cpu::{CpuModel, Machine, HP9000_380, SPARCSTATION_2};
use fslab_bench::device::{self, Medium};
use fslab_bench::system::{self, by_name, Kind, Rotdelay, System};
use fslab_bench::target::library::MountEnv;
use fslab_bench::target::Target;
use fslab_bench::workload::{bandwidth, Record};

#[derive(Default)]
struct Points(Vec<(String, f64, f64)>);

impl Record for Points {
    fn record(&mut self, phase: &str, x: f64, _metric: &str, value: f64) {
        self.0.push((phase.to_string(), x, value));
    }
}

/// Write and read MB/s of a `size`-byte file on `system` with its gap set
/// to `gap`, on drive `disk` under `machine`.
fn bandwidth(system: &str, gap: Rotdelay, disk: &str, machine: Machine, size: u64) -> (f64, f64) {
    let mut s: System = *by_name(system).expect("system");
    let Kind::Ffs(ref mut p) = s.kind else { panic!("{system} is no FFS") };
    p.rotdelay = gap;
    let dev = device::prepare(&Medium::sim(disk), Some(64 << 20), system).expect("device");
    let clock = dev.clock.clone().expect("a simulated disk has a clock");
    let env = MountEnv {
        clock: TimeSource::virtual_clock(clock.clone()),
        deterministic: true,
        cache_bytes: machine.cache_bytes(s.block_size()),
    };
    let backend = system::open_library(&s, dev.dev.clone(), None, dev.sim.clone(), env).expect("mount");
    let mut t = Target::on_virtual_time(backend, clock, CpuModel::of(machine));
    t.keep(Box::new(dev));
    let spec = bandwidth::Spec { sizes: vec![size], passes: 4, mb: 1e6 };
    let mut points = Points::default();
    bandwidth::run(&mut t, &spec, &mut points).expect("bandwidth test");
    let at = |phase: &str| points.0.iter().find(|p| p.0 == phase).map(|p| p.2).expect("a point");
    (at("write"), at("read"))
}

/// Prints the sweep and returns (gap, write, read) for each gap.
fn sweep(
    system: &str,
    gaps: &[Rotdelay],
    disk: &str,
    machine: Machine,
    size: u64,
) -> Vec<(Rotdelay, f64, f64)> {
    gaps.iter()
        .map(|&g| {
            let (w, r) = bandwidth(system, g, disk, machine, size);
            println!("{system} on {disk}, gap {g:?}: write {w:.3} MB/s, read {r:.3} MB/s");
            (g, w, r)
        })
        .collect()
}

/// The gap of the sweep's fastest writes, and of its fastest reads.
fn best(sweep: &[(Rotdelay, f64, f64)]) -> (Rotdelay, Rotdelay) {
    let by = |f: fn(&(Rotdelay, f64, f64)) -> f64| {
        sweep.iter().max_by(|a, b| f(a).total_cmp(&f(b))).map(|p| p.0).expect("a sweep")
    };
    (by(|p| p.1), by(|p| p.2))
}

#[test]
fn the_1993_ffs_writes_best_with_a_4_ms_rotational_delay_and_reads_best_with_none() {
    let gaps: Vec<Rotdelay> = [0, 2, 4, 6, 8].map(Rotdelay::Millis).to_vec();
    let sweep = sweep("ffs", &gaps, "hp97560", HP9000_380, 1 << 20);
    let (writes, reads) = best(&sweep);
    assert_eq!(writes, Rotdelay::Millis(4), "the paper's 4 ms is the best gap for writes: {sweep:?}");
    // Reads are the premise's exception here: the drive's read-ahead
    // streams a contiguous file while the host turns each request around,
    // so no gap reads fastest (docs/lab/analysis.md, "Rotational delay").
    assert_eq!(reads, Rotdelay::Millis(0), "{sweep:?}");
}

#[test]
fn the_1995_clustered_ffs_gains_by_a_2_block_gap_and_most_by_one_block() {
    let gaps: Vec<Rotdelay> = [0, 1, 2, 3, 4].map(Rotdelay::Blocks).to_vec();
    let sweep = sweep("ffs-m8r2", &gaps, "dsp3105", SPARCSTATION_2, 1 << 20);
    let write = |g: u32| sweep.iter().find(|p| p.0 == Rotdelay::Blocks(g)).map(|p| p.1).expect("swept");
    // S95 §3.1: about 75% of the disk with the gap against 67% without,
    // 1.12; accepted 1.08-1.16 as V8 accepts it at the device.
    let gain = write(2) / write(0);
    assert!((1.08..=1.16).contains(&gain), "2 blocks / none = {gain}: {sweep:?}");
    // The paper chose 2 blocks; on the simulated DSP 3105 and the
    // SparcStation II's model one block (3.1 ms) already covers the
    // drive's 1.9 ms write overhead and the host's turnaround, and writes
    // fastest (docs/lab/analysis.md, "Rotational delay").
    let (writes, reads) = best(&sweep);
    assert_eq!(writes, Rotdelay::Blocks(1), "{sweep:?}");
    assert!(write(2) >= 0.85 * write(1), "2 blocks fall far behind the best: {sweep:?}");
    assert_eq!(reads, Rotdelay::Blocks(0), "read-ahead streams a contiguous file: {sweep:?}");
}
