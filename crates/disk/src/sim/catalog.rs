//! The papers' disks: one parameter set per drive, each number with its
//! source.
//!
//! Sources (see `disk_models.md` in the project's research notes for the
//! full references):
//! * S93: Seltzer et al. 1993 (BSD-LFS), Table 5 and §5.
//! * S95: Seltzer et al. 1995 (logging vs clustering), Tables 1 and 5, §3–4.
//! * SS97: Smith & Seltzer 1997 (aging), Table 1 and §5.1.
//! * S00: Seltzer et al. 2000 (journaling vs soft updates), Table 3.
//! * R&W: Ruemmler & Wilkes' HP 97560 model, as published in the HECIOS
//!   simulator (`src/physical/hard_disk.h`).
//! * DiskSim: the validated DEC RZ26 and Seagate ST39102LW models in the
//!   DiskSim 2.01 distribution (`valid/dec_rz26.diskspecs`,
//!   `valid/cheetah9LP.model`, `valid/cheetah9LP.diskspecs`).
//!
//! "(estimate)" marks a number no source gives; each is chosen by a rule
//! stated beside it and fixed here, never tuned against an experiment.
//! Units: S93 states rates in millions of bytes per second (its 2.2 MB/s
//! disk bandwidth is 72 sectors × 512 B per 15 ms less skew, in 10^6 B/s);
//! S95's are in 2^20 bytes per second (its §4 arithmetic reads 1 MB at
//! 2.3 MB/s in 435 ms, which only 2^20 gives); SS97 and S00 give none used
//! here.

use super::geometry::Zone;
use super::model::{BufferModel, DiskModel, Overheads, SeekCurve, SeekModel};
use super::seek_tables;

const MS: u64 = 1_000_000;
const MIB: f64 = 1_048_576.0;

/// The Ruemmler–Wilkes HP 97560 seek curve (ms): `3.24 + 0.400·√d` up to
/// 383 cylinders, `8.00 + 0.008·d` beyond (R&W). Also the shape used, scaled
/// to the published average, for the drives whose curve no source gives.
const HP97560_CURVE: SeekCurve =
    SeekCurve::TwoPiece { boundary: 383.0, a: 3.24, b: 0.400, c: 8.00, e: 0.008 };

/// The catalogue by name, on the model itself: `model` holds the
/// vocabulary, this file the drives.
impl DiskModel {
    /// The parameter set called `name` (see [`DiskModel::names`]), or
    /// `None`. Names are matched ignoring ASCII case.
    pub fn by_name(name: &str) -> Option<DiskModel> {
        all().into_iter().find(|m| m.name.eq_ignore_ascii_case(name))
    }

    /// Every parameter set, in the order of the papers.
    pub fn all() -> Vec<DiskModel> {
        all()
    }

    /// The names [`DiskModel::by_name`] accepts.
    pub fn names() -> Vec<&'static str> {
        all().iter().map(|m| m.name).collect()
    }
}

/// Every parameter set, in the order of the papers.
pub fn all() -> Vec<DiskModel> {
    vec![hp97560(), dsp3105(), wren4(), m2694(), st32430n(), cheetah9lp()]
}

/// Bytes per second for a rate the paper gives in 2^20-byte megabytes.
fn mib_per_second(rate: f64) -> u64 {
    (rate * MIB).round() as u64
}

/// One zone covering every cylinder.
fn single_zone(cylinders: u32, sectors_per_track: u32, track_skew: u32, cylinder_skew: u32) -> Vec<Zone> {
    vec![Zone {
        first_cylinder: 0,
        last_cylinder: cylinders - 1,
        sectors_per_track,
        track_skew,
        cylinder_skew,
    }]
}

/// Zones of (nearly) equal cylinder counts over `cylinders` cylinders, one
/// per entry of `spt` with its skews; the first zones take the remainder.
fn equal_zones(cylinders: u32, spt: &[u32], track_skew: &[u32], cylinder_skew: &[u32]) -> Vec<Zone> {
    let n = spt.len() as u32;
    let mut first = 0;
    let mut zones = Vec::with_capacity(spt.len());
    for (i, ((&spt, &track_skew), &cylinder_skew)) in
        spt.iter().zip(track_skew).zip(cylinder_skew).enumerate()
    {
        let count = cylinders / n + u32::from((i as u32) < cylinders % n);
        zones.push(Zone {
            first_cylinder: first,
            last_cylinder: first + count - 1,
            sectors_per_track: spt,
            track_skew,
            cylinder_skew,
        });
        first += count;
    }
    zones
}

/// HP 97560, the S93 test disk (HP 9000/380, 4.4BSD-Alpha).
///
/// * 4002 RPM (R&W; S93 Table 5: "single rotation 15.0 ms").
/// * 1962 cylinders × 19 heads × 72 sectors (S93 Table 5; R&W).
/// * Track skew 8 sectors (S93 Table 5; R&W).
/// * Cylinder skew **18** sectors (R&W). S93 Table 5 says 10. Chosen: 18,
///   because the seek curve is R&W's, whose one-cylinder seek (3.64 ms) is
///   longer than 10 sectors (2.08 ms): with 10, every cylinder crossing of a
///   sequential transfer would miss its sector and wait a revolution, and
///   the sequential media rate would be 2.11 MB/s instead of S93's own
///   2.2 MB/s. With 18 (3.75 ms) it is 2.20 MB/s.
/// * Seek: R&W's two-piece curve, unscaled; its random-pair mean is
///   12.84 ms against S93's 13.0 ms (1.2% apart, kept as measured).
/// * Head switch 1.6 ms (R&W).
/// * Controller overhead **1.0 ms** (S93 Table 5). R&W's model uses 2.2 ms;
///   S93's is the figure of the machine the experiments ran on.
/// * Bus 1.6 MB/s (S93 Table 5: asynchronous SCSI), 10^6 B/s.
/// * Track buffer 128 KB (S93 Table 5), one segment, reading ahead up to
///   the whole buffer (R&W-class aggressive read-ahead; the policy itself is
///   an estimate).
/// * Maximum transfer 64 KB: S93 §3.1 sizes its staging buffers to "the
///   minimum of the maximum transfer sizes for currently supported disks",
///   64 KB, and EFS writes in 64 KB units.
pub fn hp97560() -> DiskModel {
    DiskModel {
        name: "hp97560",
        summary: "HP 97560, 1.37 GB, 4002 RPM (Seltzer 1993, HP 9000/380)",
        rpm: 4002,
        heads: 19,
        zones: single_zone(1962, 72, 8, 18),
        seek: SeekModel { curve: HP97560_CURVE, measured_cylinders: 1962, mean_ms: None },
        head_switch_ns: 1_600_000,
        write_settle_ns: 0,
        overhead: Overheads::uniform(MS),
        bus_bytes_per_second: Some(1_600_000),
        buffer: BufferModel { segments: 1, segment_sectors: 256, read_ahead_sectors: 256 },
        max_transfer_bytes: Some(64 * 1024),
    }
}

/// DSP 3105, the S95 §2–4 test disk (SparcStation II, 4.4BSD-Lite).
///
/// S95 gives the geometry, speed, buffer, average seek and bus; the rest is
/// taken from DiskSim's validated DEC RZ26, a drive with the same geometry
/// (57 × 14 × ~2570) and speed class. That the two are one mechanism is an
/// inference from the geometry, not a stated fact.
/// * 5400 RPM (S95 Table 1; the RZ26 measured 5360).
/// * 2568 cylinders × 14 heads × 57 sectors (S95 Table 1).
/// * Track skew 7, cylinder skew 25 sectors (RZ26).
/// * Seek: the RZ26's measured table (mean 10.44 ms over 2568 cylinders)
///   scaled to S95's 9.5 ms average (S95 Table 1, used in its §4
///   arithmetic).
/// * Head switch 0.865 ms; write settle −0.483 ms (RZ26).
/// * Controller overhead: read miss 1.489 ms, read hit 1.229 ms (after a
///   read), write 1.942 ms (after a write) (RZ26; each the case of a
///   sequential stream).
/// * Bus 2.3 MB/s (S95 Table 1, §3.2), 2^20-byte megabytes.
/// * Track buffer 256 KB (S95 Table 1), organised as the RZ26's 57-sector
///   segments: 9 of them (256.5 KB); read-ahead up to 57 sectors (RZ26).
/// * Maximum transfer 64 KB (S95 §3.3: "the maximum I/O size supported by
///   the controller, typically 64 KB"; maxcontig is set to it).
pub fn dsp3105() -> DiskModel {
    DiskModel {
        name: "dsp3105",
        summary: "DSP 3105, 1.05 GB, 5400 RPM (Seltzer 1995 §2-4, SparcStation II)",
        rpm: 5400,
        heads: 14,
        zones: single_zone(2568, 57, 7, 25),
        seek: SeekModel {
            curve: SeekCurve::Table(seek_tables::DEC_RZ26),
            measured_cylinders: 2568,
            mean_ms: Some(9.5),
        },
        head_switch_ns: 865_000,
        write_settle_ns: -483_000,
        overhead: Overheads { read_miss_ns: 1_489_000, read_hit_ns: 1_229_000, write_ns: 1_942_000 },
        bus_bytes_per_second: Some(mib_per_second(2.3)),
        buffer: BufferModel { segments: 9, segment_sectors: 57, read_ahead_sectors: 57 },
        max_transfer_bytes: Some(64 * 1024),
    }
}

/// Wren IV, the Sprite-LFS disk that S95 §2 scales its comparison by
/// (Sun 4/260).
///
/// * 3600 RPM; 1546 cylinders × 9 heads × 45 sectors; 32 KB track buffer;
///   17.5 ms average seek; 1.3 MB/s bus (S95 Table 1; bus in 2^20-byte
///   megabytes like the rest of S95).
/// * Seek (estimate): the HP 97560 curve stretched to 1546 cylinders and
///   scaled to the 17.5 ms average (one-cylinder seek 5.0 ms).
/// * Head switch 1.0 ms and controller overhead 1.0 ms (estimates: the
///   order of the HP 97560's, a drive of the same generation).
/// * Skews (estimate): the fewest sectors that cover the head switch (3)
///   and the one-cylinder seek (14), as a formatter would choose.
/// * Buffer: one 32 KB segment reading ahead to its size (estimate).
/// * Maximum transfer 64 KB (estimate, as the other SCSI drives here).
pub fn wren4() -> DiskModel {
    DiskModel {
        name: "wren4",
        summary: "Wren IV, 321 MB, 3600 RPM (Sprite-LFS platform, Seltzer 1995 §2)",
        rpm: 3600,
        heads: 9,
        zones: single_zone(1546, 45, 3, 14),
        seek: SeekModel { curve: HP97560_CURVE, measured_cylinders: 1962, mean_ms: Some(17.5) },
        head_switch_ns: MS,
        write_settle_ns: 0,
        overhead: Overheads::uniform(MS),
        bus_bytes_per_second: Some(mib_per_second(1.3)),
        buffer: BufferModel { segments: 1, segment_sectors: 64, read_ahead_sectors: 64 },
        max_transfer_bytes: Some(64 * 1024),
    }
}

/// Fujitsu M2694EXA, the S95 §5 fragmentation-test disk (SparcStation I).
///
/// * 5400 RPM; 1818 cylinders × 15 heads; 68–111 sectors per track, zoned;
///   512 KB track buffer; 9.5 ms average seek (S95 Table 5; the vendor
///   sheet for the sibling M2694ESA agrees on speed, heads and buffer).
/// * Zones (estimate): no zone table is published. Eight zones of equal
///   cylinder count with 111, 100, 90, 82, 76, 72, 70 and 68 sectors per
///   track (the research notes' estimate). Capacity 1.17 GB, against the
///   vendor's 1084 MB for the M2694ESA: a linear 111→68 zoning would
///   overshoot further (1.25 GB), so the vendor figure likely counts
///   spares out.
/// * Seek (estimate): the HP 97560 curve stretched to 1818 cylinders and
///   scaled to the 9.5 ms average; its one-cylinder seek, 2.7 ms, is near
///   the vendor's 2.5 ms track-to-track.
/// * Head switch 1.0 ms, controller overhead 1.0 ms (estimates, as the
///   Wren IV); skews per zone cover them (estimate, formatter's rule).
/// * Bus 2.0 MB/s (estimate: no source gives the SparcStation I's SCSI
///   rate; SS97 §5.1 says only that it had much less I/O bandwidth than
///   PCI; 2.0 is the middle of the 1.5–2.5 MB/s range the notes consider).
/// * Buffer: one 512 KB segment ("512 KB FIFO buffer", vendor), reading
///   ahead to its size (estimate).
/// * Maximum transfer 64 KB (estimate; the traced file systems cluster
///   7 × 8 KB = 56 KB, S95 Table 4, so it never binds).
pub fn m2694() -> DiskModel {
    const SPT: [u32; 8] = [111, 100, 90, 82, 76, 72, 70, 68];
    const TRACK_SKEW: [u32; 8] = [10, 10, 9, 8, 7, 7, 7, 7];
    const CYLINDER_SKEW: [u32; 8] = [28, 25, 22, 20, 19, 18, 18, 17];
    let zones = equal_zones(1818, &SPT, &TRACK_SKEW, &CYLINDER_SKEW);
    DiskModel {
        name: "m2694",
        summary: "Fujitsu M2694EXA, ~1.1 GB zoned, 5400 RPM (Seltzer 1995 §5, SparcStation I)",
        rpm: 5400,
        heads: 15,
        zones,
        seek: SeekModel { curve: HP97560_CURVE, measured_cylinders: 1962, mean_ms: Some(9.5) },
        head_switch_ns: MS,
        write_settle_ns: 0,
        overhead: Overheads::uniform(MS),
        bus_bytes_per_second: Some(mib_per_second(2.0)),
        buffer: BufferModel { segments: 1, segment_sectors: 1024, read_ahead_sectors: 1024 },
        max_transfer_bytes: Some(64 * 1024),
    }
}

/// Seagate ST32430N (Hawk 2LP), the SS97 aging-study disk (Pentium 120,
/// BusLogic 946C PCI SCSI, BSD/OS 2.0.1).
///
/// * 5411 RPM; 3992 cylinders × 9 heads; 116 sectors per track on average;
///   512 KB track buffer; 11 ms average seek (SS97 Table 1).
/// * Zones (estimate): no zone table is published. Eight zones of 499
///   cylinders with 140, 134, 127, 120, 113, 107, 100 and 93 sectors per
///   track: linear from outside in, mean 116.75, giving 4,194,594 sectors
///   against the 4,197,405 a Linux boot log reports for this drive.
/// * Seek (estimate): the HP 97560 curve stretched to 3992 cylinders and
///   scaled to the 11 ms average (one-cylinder seek 3.0 ms).
/// * Head switch 1.0 ms, controller overhead 1.0 ms (estimates); skews per
///   zone cover them (estimate, formatter's rule).
/// * Bus 10 MB/s, 10^6 B/s (estimate: the BusLogic 946C is a Fast SCSI-2
///   adapter; unverified).
/// * Buffer: 512 KB (SS97 Table 1) in four 128 KB segments, each reading
///   ahead to its size (estimate: the drive's manual describes a
///   multi-segmented cache with prefetch without the figures).
/// * Maximum transfer 64 KB (SS97 §5.1: "the maximum disk transfer size
///   imposed by the hardware").
pub fn st32430n() -> DiskModel {
    const SPT: [u32; 8] = [140, 134, 127, 120, 113, 107, 100, 93];
    const TRACK_SKEW: [u32; 8] = [13, 13, 12, 11, 11, 10, 10, 9];
    const CYLINDER_SKEW: [u32; 8] = [39, 37, 35, 33, 31, 30, 28, 26];
    let zones = equal_zones(3992, &SPT, &TRACK_SKEW, &CYLINDER_SKEW);
    DiskModel {
        name: "st32430n",
        summary: "Seagate ST32430N Hawk 2LP, 2.1 GB zoned, 5411 RPM (Smith & Seltzer 1997)",
        rpm: 5411,
        heads: 9,
        zones,
        seek: SeekModel { curve: HP97560_CURVE, measured_cylinders: 1962, mean_ms: Some(11.0) },
        head_switch_ns: MS,
        write_settle_ns: 0,
        overhead: Overheads::uniform(MS),
        bus_bytes_per_second: Some(10_000_000),
        buffer: BufferModel { segments: 4, segment_sectors: 256, read_ahead_sectors: 256 },
        max_transfer_bytes: Some(64 * 1024),
    }
}

/// Seagate Cheetah 9LP (ST39102LW), standing in for S00's "9 GB 10,000 RPM
/// Seagate Cheetahs" on an Adaptec AHA-2940UW (S00 Table 3); every
/// mechanical number is DiskSim's validated model of this drive.
///
/// * 10045 RPM (DiskSim, measured; S00 says 10,000).
/// * 6962 cylinders × 12 heads in 11 zones of 254 down to 167 sectors per
///   track, with DiskSim's zone bounds (the cylinders between zones are
///   spares) and per-zone skews (DiskSim). DiskSim's slipped and spare
///   sectors are not modelled: 17,930,568 data sectors here against
///   DiskSim's 17,783,240 blocks.
/// * Seek: DiskSim's 106-point measured table, unscaled (mean 5.47 ms).
/// * Head switch 0.030 ms; write settle +0.461 ms (DiskSim).
/// * Controller overhead: read miss 0.284 ms and read hit 0.066 ms (after
///   a read), write 0.896 ms (after a write) (DiskSim).
/// * Bus 40 MB/s, 10^6 B/s (estimate: Ultra-Wide SCSI's nominal rate;
///   unverified).
/// * Buffer: 3 segments of 561 sectors, reading ahead up to 561 (DiskSim).
///   DiskSim enables write-behind for this drive; here the write cache is
///   off unless asked for, like every model.
/// * Maximum transfer 128 KB (estimate: FreeBSD's MAXPHYS of the time).
pub fn cheetah9lp() -> DiskModel {
    // (first cylinder, last cylinder, sectors per track, track skew, cylinder skew), DiskSim.
    const ZONES: [(u32, u32, u32, u32, u32); 11] = [
        (0, 846, 254, 97, 133),
        (848, 1643, 245, 97, 133),
        (1645, 2392, 238, 97, 117),
        (2394, 3096, 227, 97, 116),
        (3098, 3757, 217, 97, 108),
        (3759, 4379, 209, 97, 108),
        (4381, 4964, 201, 97, 108),
        (4966, 5515, 189, 88, 94),
        (5516, 6031, 181, 88, 93),
        (6032, 6517, 174, 88, 93),
        (6518, 6961, 167, 88, 80),
    ];
    let zones = ZONES
        .iter()
        .map(|&(first, last, spt, track_skew, cylinder_skew)| Zone {
            first_cylinder: first,
            last_cylinder: last,
            sectors_per_track: spt,
            track_skew,
            cylinder_skew,
        })
        .collect();
    DiskModel {
        name: "cheetah9lp",
        summary: "Seagate Cheetah 9LP ST39102LW, 9.1 GB zoned, 10045 RPM (Seltzer 2000)",
        rpm: 10045,
        heads: 12,
        zones,
        seek: SeekModel {
            curve: SeekCurve::Table(seek_tables::CHEETAH_9LP),
            measured_cylinders: 6962,
            mean_ms: None,
        },
        head_switch_ns: 30_000,
        write_settle_ns: 461_000,
        overhead: Overheads { read_miss_ns: 283_620, read_hit_ns: 66_000, write_ns: 896_400 },
        bus_bytes_per_second: Some(40_000_000),
        buffer: BufferModel { segments: 3, segment_sectors: 561, read_ahead_sectors: 561 },
        max_transfer_bytes: Some(128 * 1024),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capacities_are_those_the_documentation_states() {
        let sectors: Vec<(&str, u64, u32)> =
            all().iter().map(|m| (m.name, m.sectors(), m.cylinders())).collect();
        assert_eq!(
            sectors,
            [
                ("hp97560", 1962 * 19 * 72, 1962),
                ("dsp3105", 2568 * 14 * 57, 2568),
                ("wren4", 1546 * 9 * 45, 1546),
                ("m2694", 2_281_110, 1818),
                ("st32430n", 4_194_594, 3992),
                ("cheetah9lp", 17_930_568, 6962),
            ]
        );
    }
}
