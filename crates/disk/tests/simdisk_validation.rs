//! SimDisk against the papers: the validation checks V1–V12 and V14 of
//! `disk_models.md` (the project's research notes on the papers' disks).
//!
//! Each check drives a simulated disk with a device-level access pattern
//! (the file-system layouts of the papers become patterns of LBNs and
//! gaps), measures a figure on the virtual clock, and compares it with the
//! number the papers give or that follows from their parameters, within a
//! tolerance stated and justified beside it. Every check prints one line
//! (`cargo test --release -p disk --test simdisk_validation -- --nocapture`).
//!
//! V13 (replaying DiskSim's validation traces, `cheetah9LP.trace` and
//! `dec_rz26.trace`, and computing the Ruemmler-Wilkes demerit) is not
//! here. The traces belong to DiskSim's source distribution: this
//! repository carries no data made elsewhere, the build fetches nothing but
//! crates, and the traces' column format is not documented beside them, so
//! a replay would rest on a guess at what each column means. V1-V12 check
//! the same mechanisms (seek curve, rotation, transfer, read-ahead, lost
//! revolutions) against the papers' own figures instead.

use disk::sim::{DiskModel, Scheduler, Service, SimOptions, Stats};
use disk::{BlockDevice, SimDisk, VirtualClock};
use std::sync::Arc;

const KIB: u64 = 1024;

fn model(name: &str) -> DiskModel {
    DiskModel::by_name(name).expect("a catalogued model")
}

fn disk(model: DiskModel) -> SimDisk {
    SimDisk::new(model, Arc::new(VirtualClock::new())).expect("a valid model")
}

/// Prints one line of the validation table and checks `measured` against
/// `[low, high]`.
fn check(id: &str, model: &str, what: &str, expected: &str, measured: f64, low: f64, high: f64) {
    println!(
        "{id} {model}: {what}: expected {expected}, measured {measured:.4}, accepted [{low:.4}, {high:.4}]"
    );
    assert!(
        (low..=high).contains(&measured),
        "{id} {model}: {what}: measured {measured} outside [{low}, {high}] (expected {expected})"
    );
}

/// A small deterministic generator (SplitMix64) for the random patterns.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Reads `count` requests of `size` bytes, one after another as a process
/// doing synchronous reads would, leaving `gap` bytes between them.
/// Returns bytes per second of simulated time.
fn read_stream(d: &SimDisk, start: u64, size: u64, gap: u64, count: u64) -> f64 {
    let begin = d.clock().now();
    let mut buf = vec![0u8; size as usize];
    for i in 0..count {
        d.read_at(start + i * (size + gap), &mut buf).expect("read");
    }
    rate(count * size, d.clock().now() - begin)
}

/// How a stream of writes is issued.
#[derive(Clone, Copy, PartialEq)]
enum Writes {
    /// All posted at once (asynchronous writes), one flush at the end.
    Queued,
    /// Each followed by a flush (synchronous writes, as raw I/O).
    Synchronous,
}

/// Writes `count` requests of `size` bytes with `gap` bytes between them.
/// Returns bytes per second of simulated time.
fn write_stream(d: &SimDisk, start: u64, size: u64, gap: u64, count: u64, how: Writes) -> f64 {
    let begin = d.clock().now();
    let data = vec![0x5au8; size as usize];
    for i in 0..count {
        d.write_at(start + i * (size + gap), &data).expect("write");
        if how == Writes::Synchronous {
            d.flush().expect("flush");
        }
    }
    d.flush().expect("flush");
    rate(count * size, d.clock().now() - begin)
}

fn rate(bytes: u64, ns: u64) -> f64 {
    bytes as f64 * 1e9 / ns as f64
}

/// Random single 4 KB reads at uniformly random 4 KB-aligned LBNs.
fn random_reads(d: &SimDisk, count: u64, seed: u64) -> (Stats, u64) {
    let mut rng = Rng(seed);
    let blocks = d.size() / (4 * KIB);
    let mut buf = vec![0u8; 4 * KIB as usize];
    let begin = d.clock().now();
    for _ in 0..count {
        d.read_at(rng.below(blocks) * 4 * KIB, &mut buf).expect("read");
    }
    (d.stats(), d.clock().now() - begin)
}

/// Sequential media rate of a single-zone drive reading whole cylinders:
/// every track costs a revolution, plus the skew at each crossing.
fn skewed_media_rate(m: &DiskModel) -> f64 {
    let z = &m.zones[0];
    let (heads, spt) = (u64::from(m.heads), u64::from(z.sectors_per_track));
    let slots = heads * spt + (heads - 1) * u64::from(z.track_skew) + u64::from(z.cylinder_skew);
    rate(heads * spt * 512, slots * m.revolution_ns() / spt)
}

#[test]
fn v0_every_skew_covers_the_switch_it_hides() {
    // Not a check of the notes: a consistency check of every parameter set.
    // A skew shorter than the head switch (or one-cylinder seek) it follows
    // makes every sequential crossing wait a revolution; this is what
    // decided the HP 97560's cylinder skew (catalog.rs).
    for m in DiskModel::all() {
        let seek = m.seek.table_ns(m.cylinders());
        let rev = m.revolution_ns();
        for (i, z) in m.zones.iter().enumerate() {
            let slot_ns = |slots: u32| u64::from(slots) * rev / u64::from(z.sectors_per_track);
            let one_cylinder =
                (seek[1].saturating_add_signed(m.write_settle_ns.max(0))).max(m.head_switch_ns);
            assert!(slot_ns(z.track_skew) >= m.head_switch_ns, "{} zone {i}: track skew", m.name);
            assert!(slot_ns(z.cylinder_skew) >= one_cylinder, "{} zone {i}: cylinder skew", m.name);
        }
    }
}

#[test]
fn v1_hp97560_seek_curve() {
    let m = model("hp97560");
    // The notes computed 12.84 ms from the same formula; S93 says 13.0.
    // Tolerance 0.5%: the two computations differ only in rounding.
    check(
        "V1",
        "hp97560",
        "mean seek over random cylinder pairs (ms, curve)",
        "12.84",
        m.mean_seek_ms(),
        12.78,
        12.90,
    );
    let full = m.seek.table_ns(m.cylinders())[1961] as f64 / 1e6;
    check("V1", "hp97560", "full-stroke seek (ms)", "23.69 (8 + 0.008 x 1961)", full, 23.68, 23.70);

    // The same mean measured through the device: 20,000 random reads.
    // Tolerance 2%: the sampling error of the mean is about 0.3%.
    let d = disk(m.clone());
    let (s, _) = random_reads(&d, 20_000, 1);
    let mean = s.seek_ns as f64 / s.seeks as f64 / 1e6;
    check("V1", "hp97560", "mean seek measured by random reads (ms)", "12.84", mean, 12.58, 13.10);

    let d = disk(m);
    let mut buf = [0u8; 512];
    d.read_at(0, &mut buf).expect("read");
    let before = d.stats();
    d.read_at(d.size() - 512, &mut buf).expect("read");
    let s = d.stats().since(&before);
    assert_eq!((s.seeks, s.seek_cylinders), (1, 1961));
    assert_eq!(s.seek_ns, 23_688_000);
}

#[test]
fn v2_hp97560_sequential_media_rate() {
    // Bus unlimited, so the media decides. Expected: S93's 2.2 MB/s "disk
    // bandwidth", which is 72 sectors per revolution less the 8-sector
    // track skew (2.21 MB/s); whole cylinders also pay the cylinder skew:
    // 2.199 MB/s. Tolerance 2%: the first seek and rotation are amortised
    // over 5.5 MB.
    let mut m = model("hp97560");
    m.bus_bytes_per_second = None;
    let expected = skewed_media_rate(&m);
    let d = disk(m.clone());
    let measured = read_stream(&d, 0, 64 * KIB, 0, 86);
    // Against the paper's figure first: 2.2 MB/s, given to two digits,
    // so ±0.05 (2.15-2.25); then against what the model's own geometry
    // implies, which must hold more tightly.
    check("V2", "hp97560", "sequential read, no bus limit (MB/s)", "2.2 (S93)", measured / 1e6, 2.15, 2.25);
    check(
        "V2",
        "hp97560",
        "sequential read / the skewed media rate of the model's geometry",
        "1 (2.199 MB/s)",
        measured / expected,
        0.98,
        1.01,
    );

    // Within one track the raw rate shows: 72 × 512 B per 14.99 ms.
    let d = disk(m.clone());
    let mut track = vec![0u8; 72 * 512];
    d.read_at(0, &mut track).expect("read");
    let within = rate(72 * 512, d.stats().transfer_ns);
    check("V2", "hp97560", "media rate within a track (MB/s)", "2.46", within / 1e6, 2.455, 2.465);
}

#[test]
fn v3_hp97560_bus_bound_reads_and_clustered_layouts() {
    // Raw sequential 64 KB reads on the 1.6 MB/s bus. Expected 1.6 MB/s
    // (S93 Fig. 12); accepted 5% under it, since each 41 ms transfer also
    // pays the 1 ms controller overhead, and never over it.
    let m = model("hp97560");
    let raw = read_stream(&disk(m.clone()), 0, 64 * KIB, 0, 64);
    check("V3", "hp97560", "raw sequential 64 KB reads (MB/s)", "1.6", raw / 1e6, 1.52, 1.60);
    // LFS lays a file out contiguously: the same pattern as raw.
    // EFS clusters 64 KB with FFS's rotational gap after each cluster (3
    // blocks of 4 KB, S93 Fig. 11). S93: both within 3% of raw; read-ahead
    // carries the drive across the gaps, the bus stays the bottleneck.
    let d = disk(m);
    let efs = read_stream(&d, 0, 64 * KIB, 12 * KIB, 64);
    check("V3", "hp97560", "EFS layout / raw, reads", ">= 0.97", efs / raw, 0.97, 1.0);
    let s = d.stats();
    assert_eq!(s.buffer_hits + s.streaming_hits, 63, "no read after the first waits for the media");
    // The lab's `raw` system reads at this device figure with no CPU
    // charged, and at it less the HP 9000/380's 5.5 ms copy per request
    // with it (claim 9's 1.38 MB/s raw baseline): the bench crate's test
    // `the_raw_system_reads_at_the_devices_rate_less_the_copies_and_nothing_else`.
}

#[test]
fn v4_hp97560_ffs_rotdelay_layout() {
    // FFS with 4 KB blocks and a 4 ms rot_delay places 1 block in 4
    // (S93 Fig. 11): 4 KB blocks 16 KB apart. S93: at most a quarter of the
    // 2.2 MB/s, 0.55 MB/s; measured on the real system about 0.5 MB/s
    // (0.5 of 1.6 in Fig. 9). Here no CPU cost is charged, so the device
    // pattern sits at the geometric bound: accepted 0.45–0.56 MB/s (down to
    // the measured 0.5 less 10%, up to the bound plus 2% for rounding).
    let m = model("hp97560");
    let reads = read_stream(&disk(m.clone()), 0, 4 * KIB, 12 * KIB, 400);
    check(
        "V4",
        "hp97560",
        "FFS rot_delay layout, 4 KB reads (MB/s)",
        "~0.5, <= 0.55",
        reads / 1e6,
        0.45,
        0.56,
    );
    let writes = write_stream(&disk(m), 0, 4 * KIB, 12 * KIB, 400, Writes::Queued);
    check(
        "V4",
        "hp97560",
        "FFS rot_delay layout, 4 KB writes (MB/s)",
        "~0.5, <= 0.55",
        writes / 1e6,
        0.45,
        0.56,
    );
}

#[test]
fn v5_v6_random_access() {
    // V5: DSP 3105 random 4 KB reads, cold buffer, first come first served.
    // S95 §4: 9.5 ms seek + 5.56 ms rotation + 1.56 ms transfer = 16.6 ms,
    // plus the controller overhead (1.49 ms here) = 18.1 ms. Here the
    // 4 KB also crosses the 2.3 MB/s bus behind the media (+0.2 ms).
    // Tolerance 5%: sampling error of 5,000 reads is under 1%; the rest is
    // the bus term the paper leaves out.
    let d = disk(model("dsp3105"));
    let (s, ns) = random_reads(&d, 5_000, 2);
    let per_read = ns as f64 / 5_000.0 / 1e6;
    check("V5", "dsp3105", "random 4 KB read (ms)", "16.6 + 1.49 overhead = 18.1", per_read, 17.2, 19.0);
    let seek = s.seek_ns as f64 / s.seeks as f64 / 1e6;
    check("V5", "dsp3105", "mean seek of random reads (ms)", "9.5", seek, 9.2, 9.8);

    // V6: I/O rate from seek + half a rotation alone (S95 Table 2: 67/s
    // and 39/s, i.e. 1/(9.5 + 5.56 ms) = 66.4 and 1/(17.5 + 8.33 ms) = 38.7).
    // Tolerance 3% of the derived rates: sampling error.
    for (name, expected, seed) in [("dsp3105", 66.4, 3), ("wren4", 38.7, 4)] {
        let d = disk(model(name));
        let (s, _) = random_reads(&d, 5_000, seed);
        let positioning = (s.seek_ns + s.head_switch_ns + s.rotational_latency_ns) as f64 / s.reads as f64;
        let io_rate = 1e9 / positioning;
        let paper = if name == "dsp3105" { "67/s" } else { "39/s" };
        check(
            "V6",
            name,
            "I/O rate from seek + rotation (1/s)",
            paper,
            io_rate,
            expected * 0.97,
            expected * 1.03,
        );
    }
}

#[test]
fn v7_v8_v9_dsp3105_lost_rotation_and_rotdelay() {
    let m = model("dsp3105");
    let raw_media = m.raw_media_rate(0);
    let rev = m.revolution_ns() as f64;

    // V7: back-to-back 64 KB writes to contiguous LBNs, write cache off.
    // Each loses a revolution: S95 §3.1 "approximately 67%" of the disk
    // bandwidth (the raw 57 × 512 B per revolution, 2.5 MB/s in S95's
    // units), 1.7 MB/s in §4. Tolerance ±7 points: the paper's percentages
    // are read off its Figure 3, and its accounting (one revolution lost
    // per 64 KB, two thirds of one with the gap of V8) leaves out the
    // 7-sector track skew at each of the 2.2 track crossings of a 64 KB
    // transfer, which costs 4–5 points here.
    let d = disk(m.clone());
    let contiguous = write_stream(&d, 0, 64 * KIB, 0, 32, Writes::Queued);
    check(
        "V7",
        "dsp3105",
        "back-to-back 64 KB writes / raw media rate",
        "0.67",
        contiguous / raw_media,
        0.60,
        0.74,
    );
    let s = d.stats();
    let lost =
        (s.rotational_latency_ns as f64 / s.writes as f64 + s.overhead_ns as f64 / s.writes as f64) / rev;
    check("V7", "dsp3105", "overhead + rotation per write (revolutions)", "~1", lost, 0.9, 1.05);

    // V8: a 2-block (16 KB) gap between the 64 KB clusters (FFS-m8r2)
    // leaves the head time to turn around: S95 §3.1 "approximately 75%".
    // Tolerance ±7 points, as V7. The gain over V7, which skew hardly
    // changes, is the paper's 75/67 = 1.12, accepted ±0.04.
    let gapped = write_stream(&disk(m.clone()), 0, 64 * KIB, 16 * KIB, 32, Writes::Queued);
    check(
        "V8",
        "dsp3105",
        "64 KB writes, 16 KB gaps / raw media rate",
        "0.75",
        gapped / raw_media,
        0.68,
        0.82,
    );
    check("V8", "dsp3105", "gapped / contiguous writes", "1.12 (75/67)", gapped / contiguous, 1.08, 1.16);

    // V9: the same pattern read: the track buffer's read-ahead hides the
    // turnaround, no rotation is lost, and large reads approach the 2.3 MB/s
    // bus (S95 §3.2). Expected: the slower of the bus and the skewed media
    // rate (2.34 MB/s); accepted 7% under it (per-command overhead), and at
    // least 1.25 × the writes.
    let d = disk(m.clone());
    let reads = read_stream(&d, 0, 64 * KIB, 0, 32);
    let bound = skewed_media_rate(&m).min(m.bus_bytes_per_second.map_or(f64::MAX, |b| b as f64));
    check(
        "V9",
        "dsp3105",
        "back-to-back 64 KB reads (MB/s, 10^6)",
        "~2.34 (bus 2.41)",
        reads / 1e6,
        bound / 1e6 * 0.93,
        bound / 1e6,
    );
    let s = d.stats();
    assert_eq!(s.streaming_hits + s.buffer_hits, 31, "every read after the first comes from read-ahead");
    assert!(reads > contiguous * 1.25);
}

#[test]
fn v10_dsp3105_segment_read_and_write() {
    // S95 §4's cleaner arithmetic for a 1 MB segment: read 9.5 + 5.5 + 435
    // = 450 ms; write 9.5 + 5.5 + 588 = 603 ms (1 MB at 2.3 and 1.7 MB/s).
    // Here: 16 commands of 64 KB at 20 random segment-aligned places.
    // Tolerance 10%: the paper's rates are rounded and leave out the
    // per-command overhead (16 × 1.2–1.9 ms).
    let m = model("dsp3105");
    let segments = 20u64;
    let mut rng = Rng(5);
    let places: Vec<u64> = (0..segments).map(|_| rng.below(1000) * 1024 * KIB).collect();
    let d = disk(m.clone());
    let begin = d.clock().now();
    for &at in &places {
        read_stream(&d, at, 64 * KIB, 0, 16);
    }
    let read_ms = (d.clock().now() - begin) as f64 / segments as f64 / 1e6;
    check("V10", "dsp3105", "read a 1 MB segment (ms)", "450", read_ms, 405.0, 495.0);
    let d = disk(m);
    let begin = d.clock().now();
    for &at in &places {
        write_stream(&d, at, 64 * KIB, 0, 16, Writes::Queued);
    }
    let write_ms = (d.clock().now() - begin) as f64 / segments as f64 / 1e6;
    check("V10", "dsp3105", "write a 1 MB segment (ms)", "603", write_ms, 543.0, 663.0);
}

#[test]
fn v11_wren4_media_rate() {
    // S95 Table 2: 1.4 MB/s; the notes derive 45 × 512 B per 16.67 ms =
    // 1.38 MB/s. Within a track that is exact (tolerance 0.5%, rounding);
    // across tracks the estimated skews (3 and 14 sectors) cost about 8%.
    let mut m = model("wren4");
    m.bus_bytes_per_second = None;
    let d = disk(m.clone());
    let mut track = vec![0u8; 45 * 512];
    d.read_at(0, &mut track).expect("read");
    let within = rate(45 * 512, d.stats().transfer_ns);
    check("V11", "wren4", "media rate within a track (MB/s)", "1.38", within / 1e6, 1.375, 1.389);
    let sequential = read_stream(&disk(m.clone()), 0, 64 * KIB, 0, 64);
    let expected = skewed_media_rate(&m);
    check(
        "V11",
        "wren4",
        "sequential read, no bus limit (MB/s)",
        "1.38 less skew",
        sequential / 1e6,
        expected / 1e6 * 0.98,
        expected / 1e6 * 1.01,
    );
}

#[test]
fn v12_st32430n_gapped_layout_beats_raw_writes() {
    // SS97 §5.1: raw sequential writes (synchronous, 64 KB, the hardware
    // maximum) lose a rotation per transfer, so realloc's layout of 56 KB
    // clusters with small gaps writes *faster* than the raw disk. Expected:
    // raw loses about a revolution per write; both gapped layouts (1 and 2
    // blocks of 8 KB) beat raw. No tolerance: an ordering.
    let m = model("st32430n");
    let rev = m.revolution_ns() as f64;
    let d = disk(m.clone());
    let raw = write_stream(&d, 0, 64 * KIB, 0, 64, Writes::Synchronous);
    let s = d.stats();
    let lost = (s.rotational_latency_ns + s.overhead_ns) as f64 / s.writes as f64 / rev;
    check("V12", "st32430n", "raw 64 KB writes: overhead + rotation per write (rev)", "~1", lost, 0.85, 1.05);
    for gap_blocks in [1u64, 2] {
        let gapped =
            write_stream(&disk(m.clone()), 0, 56 * KIB, gap_blocks * 8 * KIB, 64, Writes::Synchronous);
        check(
            "V12",
            "st32430n",
            &format!("56 KB clusters, {gap_blocks}-block gaps / raw"),
            "> 1",
            gapped / raw,
            1.0001,
            10.0,
        );
    }
}

#[test]
fn every_model_meets_its_published_average_seek() {
    // V1 for every drive: the random-pair mean of the seek curve as the
    // disk uses it, against the average seek its paper publishes (the
    // Cheetah's against the 5.47 ms the notes derive from DiskSim's table,
    // S00 giving none). Tolerance 1.5%: the HP 97560's R&W curve gives
    // 12.84 ms against S93's 13.0 and is kept as measured; the others are
    // scaled to their figure exactly.
    for (name, published) in [
        ("hp97560", 13.0),
        ("dsp3105", 9.5),
        ("wren4", 17.5),
        ("m2694", 9.5),
        ("st32430n", 11.0),
        ("cheetah9lp", 5.47),
    ] {
        let mean = model(name).mean_seek_ms();
        check(
            "V1",
            name,
            "mean seek (ms)",
            &format!("{published}"),
            mean,
            published * 0.985,
            published * 1.015,
        );
    }
}

#[test]
fn every_model_streams_reads_and_loses_a_revolution_between_writes() {
    // V2, V7 and V9 for every drive, in its outermost zone:
    // * sequential reads with no bus limit run at the skewed media rate
    //   (tolerance 2%, the first seek and rotation amortised);
    // * back-to-back 64 KB reads after the first are all served by
    //   read-ahead (no lost revolution);
    // * back-to-back 64 KB writes each lose about a revolution (overhead
    //   plus rotational latency per write: 0.85–1.05 revolutions) on the
    //   drives whose bus keeps up with the media (at least 90% of the raw
    //   rate), as on the papers' systems where this was observed (S95 §3.1,
    //   SS97 §5.1). Where the bus is much slower (HP 97560, M2694EXA) the
    //   drive first waits for most of the data to arrive, and the wait for
    //   the sector is partly hidden behind that transfer.
    for m in DiskModel::all() {
        let mut unlimited = m.clone();
        unlimited.bus_bytes_per_second = None;
        let z = m.zones[0];
        let single = DiskModel { zones: vec![z], ..unlimited.clone() };
        let expected = skewed_media_rate(&single);
        let measured = read_stream(&disk(unlimited), 0, 64 * KIB, 0, 64);
        check(
            "V2",
            m.name,
            "sequential read, no bus limit (MB/s)",
            &format!("{:.3}", expected / 1e6),
            measured / 1e6,
            expected / 1e6 * 0.98,
            expected / 1e6 * 1.01,
        );

        let d = disk(m.clone());
        read_stream(&d, 0, 64 * KIB, 0, 32);
        let s = d.stats();
        assert_eq!(
            s.buffer_hits + s.streaming_hits,
            31,
            "{}: reads after the first come from read-ahead",
            m.name
        );

        let bus = m.bus_bytes_per_second.map_or(f64::MAX, |b| b as f64);
        if bus < 0.9 * m.raw_media_rate(0) {
            continue;
        }
        let d = disk(m.clone());
        write_stream(&d, 0, 64 * KIB, 0, 32, Writes::Queued);
        let s = d.stats();
        let waited = s.rotational_latency_ns + s.overhead_ns + s.bus_wait_ns;
        let lost = waited as f64 / s.writes as f64 / m.revolution_ns() as f64;
        check("V7", m.name, "overhead + rotation per 64 KB write (rev)", "~1", lost, 0.85, 1.05);
    }
}

/// One run of the V14 stream: a seeded mix of reads, posted writes, CPU
/// time and flushes. Returns a digest of every command's timestamps, the
/// final time, and the number of commands.
fn random_run(name: &str, seed: u64, requests: u64, scheduler: Scheduler) -> (u64, u64, u64) {
    let options = SimOptions { scheduler, seed, trace: true, ..SimOptions::default() };
    let d = SimDisk::with_options(model(name), Arc::new(VirtualClock::new()), options).expect("disk");
    let mut rng = Rng(seed);
    let sectors = d.size() / 512;
    let write_area = 64 * KIB * KIB / 512; // writes stay in the first 64 MB, to bound memory
    let mut data = vec![0u8; 8 * KIB as usize];
    let mut digest = 0xcbf2_9ce4_8422_2325u64;
    let fold = |records: Vec<disk::sim::TraceRecord>, digest: &mut u64| {
        for r in records {
            for v in [r.id, r.lbn, r.sectors, r.submit, r.start, r.finish, r.service as u64] {
                *digest = (*digest ^ v).wrapping_mul(0x0100_0000_01b3);
            }
        }
    };
    let mut commands = 0;
    for i in 0..requests {
        let len = (1 + rng.below(16)) * 512;
        match rng.below(100) {
            0..=59 => {
                let lbn = rng.below(sectors - 16);
                d.read_at(lbn * 512, &mut data[..len as usize]).expect("read");
            }
            60..=97 => {
                let lbn = rng.below(write_area);
                data[0] = i as u8;
                d.write_at(lbn * 512, &data[..len as usize]).expect("write");
            }
            _ => d.flush().expect("flush"),
        }
        d.clock().advance(rng.below(2_000_000));
        if i % 10_000 == 9_999 {
            let records = d.take_trace();
            commands += records.len() as u64;
            fold(records, &mut digest);
        }
    }
    d.flush().expect("flush");
    let records = d.take_trace();
    commands += records.len() as u64;
    fold(records, &mut digest);
    (digest, d.clock().now(), commands)
}

#[test]
fn v14_same_seed_same_nanoseconds() {
    // 10^6 requests per run: 60% reads, 38% posted writes (1–16 sectors,
    // one command each), 2% flushes, 0–2 ms of CPU time between them. Two
    // runs with one seed must agree to the nanosecond on every command's
    // submit, start and finish; another seed must differ.
    const REQUESTS: u64 = 1_000_000;
    let a = random_run("dsp3105", 7, REQUESTS, Scheduler::Fcfs);
    let b = random_run("dsp3105", 7, REQUESTS, Scheduler::Fcfs);
    let c = random_run("dsp3105", 8, REQUESTS, Scheduler::Fcfs);
    println!("V14 dsp3105: {REQUESTS} requests, {} commands, end {} ns; seed 8 end {} ns", a.2, a.1, c.1);
    assert_eq!(a, b, "same seed, same stream: identical timestamps");
    assert_ne!(a.0, c.0, "another seed gives other timestamps");
    assert!(a.2 > REQUESTS * 9 / 10);
    // C-LOOK, and every other drive, with fewer requests each.
    let x = random_run("dsp3105", 9, REQUESTS / 10, Scheduler::CLook);
    assert_eq!(x, random_run("dsp3105", 9, REQUESTS / 10, Scheduler::CLook));
    for name in DiskModel::names() {
        let one = random_run(name, 10, 20_000, Scheduler::Fcfs);
        assert_eq!(one, random_run(name, 10, 20_000, Scheduler::Fcfs), "{name}");
        assert_ne!(one.0, random_run(name, 11, 20_000, Scheduler::Fcfs).0, "{name}");
    }
}

#[test]
fn buffer_hits_are_reported_as_such() {
    // A guard on the trace vocabulary the other checks rely on.
    let d = SimDisk::with_options(
        model("hp97560"),
        Arc::new(VirtualClock::new()),
        SimOptions { trace: true, ..SimOptions::default() },
    )
    .expect("disk");
    let mut buf = vec![0u8; 4096];
    d.read_at(0, &mut buf).expect("read");
    d.clock().advance(20_000_000);
    d.read_at(4096, &mut buf).expect("read");
    let trace = d.take_trace();
    assert_eq!(trace[0].service, Service::Media);
    assert_eq!(trace[1].service, Service::BufferHit);
}
