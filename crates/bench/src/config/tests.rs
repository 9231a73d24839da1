use super::*;
use crate::cpu::{CpuModel, HP9000_380, SPARCSTATION_2};
use crate::device::{self, Medium};
use disk::BlockDevice;

fn parse(text: &str) -> Result<Config, ConfigError> {
    Config::parse(text, Path::new("sens.toml"))
}

fn hp97560() -> DiskModel {
    DiskModel::by_name("hp97560").expect("a catalogued drive")
}

#[test]
fn every_key_is_read_with_its_section() {
    let config = parse(
        r#"
        [disk]
        rpm = 7200
        seek_scale = 0.5
        head_switch_ms = 0.8
        overhead_scale = 2
        bus_bytes_per_s = 10_000_000
        sectors_per_track_scale = 1.5
        buffer_segments = 0
        segment_sectors = 128
        read_ahead_sectors = 0
        max_transfer_bytes = 131072

        [disk.log]
        seek_mean_ms = 6.5

        [machine]
        mips = 22
        copy_bytes_per_s = 24e6
        buffers = 1600
        charges_directory_scans = true
        "#,
    )
    .expect("a valid file");
    let d = &config.disk.drive;
    assert_eq!(d.rpm, Some(7200));
    assert_eq!(d.seek_scale, Some(0.5));
    assert_eq!(d.overhead_scale, Some(2.0), "an integer where a number is wanted");
    assert_eq!(d.bus_bytes_per_s, Some(10_000_000));
    assert_eq!(d.buffer_segments, Some(0));
    assert_eq!(d.max_transfer_bytes, Some(131072));
    assert_eq!(config.disk.log.seek_mean_ms, Some(6.5));
    assert_eq!(config.disk.log.rpm, None, "[disk.log] holds only its own keys");
    assert_eq!(config.machine.mips, Some(22.0));
    assert_eq!(config.machine.copy_bytes_per_s, Some(24e6));
    assert_eq!(config.machine.buffers, Some(1600));
    assert_eq!(config.machine.charges_directory_scans, Some(true));
    assert_eq!(config.keys().len(), 15);
    assert!(config.keys().contains(&"disk.log.seek_mean_ms".to_string()));
}

#[test]
fn the_documented_example_is_valid_and_halves_the_seeks() {
    let text = include_str!("../../../../docs/lab/examples/sensitivity.toml");
    let config = parse(text).expect("the example parses");
    assert_eq!(config.keys(), ["disk.seek_scale"]);
    let mut drive = hp97560();
    config.disk.drive.apply(&mut drive);
    assert!((drive.mean_seek_ms() / hp97560().mean_seek_ms() - 0.5).abs() < 1e-6);
}

/// Each bad file, the key its error must name, and words of the reason.
const BAD: &[(&str, Option<&str>, &str)] = &[
    ("[disk]\nrpmm = 5400", Some("disk.rpmm"), "unknown key (known: rpm, seek_scale"),
    ("[disks]\nrpm = 5400", Some("disks"), "unknown section (known: disk, machine)"),
    ("rpm = 5400", Some("rpm"), "unknown section"),
    ("[disk.log]\nspeed = 1", Some("disk.log.speed"), "unknown key"),
    ("[disk.log.log]\nrpm = 1", Some("disk.log.log"), "unknown key"),
    ("[machine]\ncache_bytes = 1", Some("machine.cache_bytes"), "unknown key (known: mips,"),
    ("[disk]\nrpm = \"fast\"", Some("disk.rpm"), "invalid type: string \"fast\""),
    ("[disk]\nrpm = 5400.5", Some("disk.rpm"), "invalid type: floating point"),
    ("[disk]\nrpm = 0", Some("disk.rpm"), "0 is out of range: it must be from 100 to 100000 rpm"),
    ("[disk]\nrpm = -7200", Some("disk.rpm"), "invalid value: integer `-7200`"),
    ("[disk]\nseek_scale = -0.5", Some("disk.seek_scale"), "-0.5 is out of range"),
    ("[disk]\nseek_scale = nan", Some("disk.seek_scale"), "NaN is out of range"),
    ("[disk]\nseek_scale = inf", Some("disk.seek_scale"), "inf is out of range"),
    ("[disk]\nseek_scale = 0.5\nseek_mean_ms = 6", Some("disk.seek_mean_ms"), "not both"),
    ("[disk]\nhead_switch_ms = 5000", Some("disk.head_switch_ms"), "out of range"),
    ("[disk]\nbus_bytes_per_s = 0", Some("disk.bus_bytes_per_s"), "out of range"),
    ("[disk]\nsectors_per_track_scale = 0", Some("disk.sectors_per_track_scale"), "out of range"),
    ("[disk]\nsegment_sectors = 0", Some("disk.segment_sectors"), "buffer_segments = 0"),
    ("[disk]\nmax_transfer_bytes = 1000", Some("disk.max_transfer_bytes"), "512-byte sectors"),
    ("[disk]\nmax_transfer_bytes = 0", Some("disk.max_transfer_bytes"), "out of range"),
    ("[disk.log]\nrpm = [1, 2]", Some("disk.log.rpm"), "invalid type"),
    ("[machine]\nmips = 0", Some("machine.mips"), "out of range"),
    ("[machine]\ncopy_bytes_per_s = -1e6", Some("machine.copy_bytes_per_s"), "out of range"),
    ("[machine]\nbuffers = 1", Some("machine.buffers"), "less than the 64 KB"),
    ("[machine]\ncharges_directory_scans = 1", Some("machine.charges_directory_scans"), "invalid type"),
    ("disk = 5", Some("disk"), "invalid type"),
    ("[disk\nrpm = 5400", None, "not valid TOML"),
    ("[disk]\nrpm = 5400\nrpm = 7200", None, "not valid TOML"),
    ("", None, "sets no parameter"),
    ("[disk]\n[machine]", None, "sets no parameter"),
];

#[test]
fn every_bad_file_is_refused_naming_the_file_the_key_and_why() {
    for (text, key, why) in BAD {
        let err = parse(text).expect_err(text);
        assert_eq!(err.key.as_deref(), *key, "{text:?}: {err}");
        let message = err.to_string();
        let named = match key {
            Some(key) => format!("sens.toml: {key}: "),
            None => "sens.toml: ".to_string(),
        };
        assert!(message.starts_with(&named), "{text:?}: {message}");
        assert!(message.contains(why), "{text:?}: {message}");
    }
}

#[test]
fn a_file_that_cannot_be_read_is_named() {
    let err = Config::load(Path::new("/nonexistent/sens.toml")).expect_err("no such file");
    assert!(err.to_string().starts_with("/nonexistent/sens.toml: cannot be read"), "{err}");
}

#[test]
fn no_key_and_keys_at_the_catalogue_values_leave_every_drive_as_it_is() {
    for model in DiskModel::all() {
        let mut untouched = model.clone();
        DriveTuning::default().apply(&mut untouched);
        assert_eq!(untouched, model, "{}", model.name);
        let same = DriveTuning {
            rpm: Some(model.rpm),
            seek_scale: Some(1.0),
            overhead_scale: Some(1.0),
            sectors_per_track_scale: Some(1.0),
            head_switch_ms: Some(model.head_switch_ns as f64 / 1e6),
            buffer_segments: Some(model.buffer.segments),
            ..DriveTuning::default()
        };
        let mut tuned = model.clone();
        same.apply(&mut tuned);
        assert_eq!(tuned.seek.table_ns(tuned.cylinders()), model.seek.table_ns(model.cylinders()));
        assert_eq!(tuned.zones, model.zones, "{}", model.name);
        assert_eq!(
            (tuned.rpm, tuned.head_switch_ns, tuned.overhead),
            (model.rpm, model.head_switch_ns, model.overhead)
        );
    }
}

#[test]
fn each_key_changes_the_drive_as_it_says() {
    let base = hp97560();
    let tuning = DriveTuning {
        rpm: Some(8004),
        seek_scale: Some(0.5),
        head_switch_ms: Some(0.5),
        overhead_scale: Some(2.0),
        bus_bytes_per_s: Some(3_200_000),
        sectors_per_track_scale: Some(2.0),
        buffer_segments: Some(4),
        segment_sectors: Some(64),
        read_ahead_sectors: Some(0),
        max_transfer_bytes: Some(128 << 10),
        ..DriveTuning::default()
    };
    let mut m = base.clone();
    tuning.apply(&mut m);
    assert!((m.revolution_ns() * 2).abs_diff(base.revolution_ns()) <= 1, "twice the speed");
    assert!((m.mean_seek_ms() / base.mean_seek_ms() - 0.5).abs() < 1e-6);
    assert_eq!(m.zones[0].sectors_per_track, 144);
    // Four times the sectors a revolution (twice the speed, twice the
    // density): each skew covers the same time in four times the sectors.
    assert_eq!((m.zones[0].track_skew, m.zones[0].cylinder_skew), (32, 72));
    assert_eq!(m.sectors(), base.sectors() * 2);
    assert!((m.raw_media_rate(0) / base.raw_media_rate(0) - 4.0).abs() < 1e-3);
    assert_eq!(m.head_switch_ns, 500_000);
    assert_eq!(m.overhead.write_ns, 2 * base.overhead.write_ns);
    assert_eq!(m.bus_bytes_per_second, Some(3_200_000));
    assert_eq!((m.buffer.segments, m.buffer.segment_sectors, m.buffer.read_ahead_sectors), (4, 64, 0));
    assert_eq!(m.max_transfer_bytes, Some(128 << 10));
    let mut mean = base.clone();
    DriveTuning { seek_mean_ms: Some(6.0), ..DriveTuning::default() }.apply(&mut mean);
    assert!((mean.mean_seek_ms() - 6.0).abs() < 1e-3);
}

#[test]
fn machine_keys_change_the_charges_and_the_cache() {
    let config = parse("[machine]\nmips = 22\ncopy_bytes_per_s = 24e6\nbuffers = 1600").expect("valid");
    let m = config.machine(HP9000_380);
    assert_eq!(m.name, HP9000_380.name, "the machine keeps its name; the run records the change");
    let (fast, slow) = (CpuModel::of(m), CpuModel::of(HP9000_380));
    assert_eq!(fast.syscall_ns() * 2, slow.syscall_ns(), "twice the MIPS, half the call");
    assert!((fast.copy_ns(1 << 20) * 2).abs_diff(slow.copy_ns(1 << 20)) <= 1);
    assert_eq!(m.cache_bytes(4096), 2 * HP9000_380.cache_bytes(4096));
    assert_eq!(config.machine(SPARCSTATION_2).buffers, 1600);
}

#[test]
fn a_run_records_only_what_it_uses() {
    let config = parse(
        "[disk]\nrpm = 8004\nseek_scale = 0.5\n[disk.log]\nrpm = 10000\n[machine]\nmips = 22\nbuffers = 1600",
    )
    .expect("valid");
    let scope = Scope {
        drive: Some(hp97560()),
        log_drive: false,
        machine: HP9000_380,
        cpu_charged: true,
        cache_used: true,
    };
    let record = config.record(&scope);
    assert_eq!(record.path, "sens.toml");
    let keys: Vec<&str> = record.overrides.iter().map(|o| o.key.as_str()).collect();
    assert_eq!(keys, ["disk.rpm", "disk.seek_scale", "machine.mips", "machine.buffers"]);
    assert_eq!(
        record.describe(),
        "disk.rpm = 8004 (was 4002), disk.seek_scale = 0.5, machine.mips = 22.0 (was 11.0), machine.buffers = 1600 (was 800)"
    );
    let log = config.record(&Scope { log_drive: true, ..scope.clone() });
    let rpm = log.overrides.iter().find(|o| o.key == "disk.log.rpm").expect("the log drive's rpm");
    assert_eq!(rpm.baseline, Some(serde_json::Value::from(8004)), "the log drive's own is [disk]'s");
    let memory = config.record(&Scope { drive: None, cpu_charged: false, ..scope });
    let keys: Vec<&str> = memory.overrides.iter().map(|o| o.key.as_str()).collect();
    assert_eq!(keys, ["machine.buffers"], "a memory disk on wall time uses the cache alone");
}

/// Virtual time to read `count` blocks at random places of the drive, one
/// at a time, on `medium`. The places are a generator's (an evenly spaced
/// sequence would land every read at the same angle, so that a shorter
/// seek only waited longer for its sector).
fn scattered_reads_ns(medium: &Medium, count: u64) -> u64 {
    let dev = device::prepare(medium, None, "t").expect("a simulated drive");
    let clock = dev.clock.clone().expect("its clock");
    let blocks = dev.dev.size() / 4096;
    let mut buf = [0u8; 4096];
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..count {
        state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        dev.dev.read_at((state >> 33) % blocks * 4096, &mut buf).expect("read");
    }
    clock.now()
}

#[test]
fn a_faster_spindle_and_shorter_seeks_make_the_same_reads_take_less_virtual_time() {
    let tuned = |text: &str| {
        let config = parse(text).expect("valid");
        Medium::Sim { model: "hp97560".into(), seed: 1, tuning: Box::new(config.disk) }
    };
    let base = scattered_reads_ns(&Medium::sim("hp97560"), 200);
    let same = scattered_reads_ns(&tuned("[disk]\nrpm = 4002\nseek_scale = 1"), 200);
    assert_eq!(same, base, "the catalogue's own values change nothing");
    let spindle = scattered_reads_ns(&tuned("[disk]\nrpm = 8004"), 200);
    let seeks = scattered_reads_ns(&tuned("[disk]\nseek_scale = 0.5"), 200);
    let slower = scattered_reads_ns(&tuned("[disk]\nrpm = 2001"), 200);
    // About 24 ms a read: 7.5 ms waiting for the sector (half a
    // revolution), 13 ms seeking, 2.5 ms on the bus, 1 ms of overhead.
    // Twice the speed saves about 4 ms a read, half the seeks about 6.
    assert!(spindle < base - 200 * 3_000_000, "rpm x2: {spindle} against {base}");
    assert!(seeks < base - 200 * 5_000_000, "seeks x0.5: {seeks} against {base}");
    assert!(slower > base + 200 * 5_000_000, "rpm x0.5: {slower} against {base}");
}
