//! A disk's parameters: what [`SimDisk`](super::SimDisk) needs to know to
//! time a request. The parameter sets of the papers' disks are in
//! [`catalog`](super::catalog); this file holds the vocabulary.
//!
//! Every time is in nanoseconds, every size in 512-byte sectors unless a
//! name says bytes. Rates in the papers' "MB/s" are converted to bytes per
//! second where each set is defined, saying which megabyte the paper meant.

use super::geometry::Zone;

/// A disk's parameters. Plain data: an experiment takes a set from
/// [`DiskModel::by_name`] and uses it as it is; a validation test may make a
/// variant (say, with no bus limit) to isolate one mechanism.
#[derive(Clone, Debug, PartialEq)]
pub struct DiskModel {
    /// Short name for `--disk NAME` style lookups, e.g. `"hp97560"`.
    pub name: &'static str,
    /// One line: the drive and the paper it stands in for.
    pub summary: &'static str,
    /// Spindle speed in revolutions per minute.
    pub rpm: u32,
    /// Recording surfaces, i.e. tracks per cylinder.
    pub heads: u32,
    /// Zones from the outermost cylinder in; a single zone for drives with
    /// no published zone table. Cylinders between zones (spares) hold no
    /// data but still count in seek distances.
    pub zones: Vec<Zone>,
    /// The seek curve.
    pub seek: SeekModel,
    /// Time to switch to another head on the same cylinder.
    pub head_switch_ns: u64,
    /// Added to every seek that ends in a write (may be negative; a seek
    /// never becomes shorter than zero).
    pub write_settle_ns: i64,
    /// Controller (command-processing) time per request.
    pub overhead: Overheads,
    /// Host bus rate in bytes per second; `None` when the bus is never the
    /// bottleneck (the media rate decides).
    pub bus_bytes_per_second: Option<u64>,
    /// The track buffer and its read-ahead.
    pub buffer: BufferModel,
    /// Largest transfer one command may carry; a larger read or write is
    /// split into several commands, each paying the controller overhead.
    pub max_transfer_bytes: Option<u64>,
}

/// Controller overhead: time from the disk receiving a command to starting
/// on it (seeking, or moving data on the bus for a buffer hit).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Overheads {
    /// A read whose data must come from the media.
    pub read_miss_ns: u64,
    /// A read served from the track buffer (wholly, or by read-ahead that is
    /// still streaming into it).
    pub read_hit_ns: u64,
    /// A write.
    pub write_ns: u64,
}

impl Overheads {
    /// The same overhead for every kind of request.
    pub const fn uniform(ns: u64) -> Overheads {
        Overheads { read_miss_ns: ns, read_hit_ns: ns, write_ns: ns }
    }
}

/// The track buffer: segments of the drive's RAM that hold sectors read from
/// the media, and how far the drive reads ahead of what was asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BufferModel {
    /// Independent segments, each holding one contiguous run of sectors
    /// (least recently used is replaced).
    pub segments: u32,
    /// Sectors per segment.
    pub segment_sectors: u32,
    /// After a read, the drive keeps reading up to this many sectors past
    /// the end of the latest request in that segment while it is otherwise
    /// idle; 0 turns read-ahead off.
    pub read_ahead_sectors: u32,
}

/// How long a seek of `d` cylinders takes.
#[derive(Clone, Debug, PartialEq)]
pub struct SeekModel {
    /// The shape of the curve, in milliseconds, over the distances it was
    /// measured on.
    pub curve: SeekCurve,
    /// Full stroke of the drive the curve was measured on, in cylinders.
    /// When it differs from this drive's cylinder count, distances are
    /// stretched: a seek across a fraction of this drive takes what a seek
    /// across the same fraction took on that one.
    pub measured_cylinders: u32,
    /// When set, every seek time is scaled by one factor so that the mean
    /// over uniformly random pairs of distinct cylinders equals this (the
    /// "average seek" of a data sheet or paper).
    pub mean_ms: Option<f64>,
}

/// The shape of a seek curve, times in milliseconds.
#[derive(Clone, Debug, PartialEq)]
pub enum SeekCurve {
    /// The Ruemmler–Wilkes form: `a + b·√d` for `d ≤ boundary`, else
    /// `c + e·d`.
    TwoPiece {
        /// Last distance of the square-root piece.
        boundary: f64,
        /// Constant of the square-root piece.
        a: f64,
        /// Coefficient of `√d`.
        b: f64,
        /// Constant of the linear piece.
        c: f64,
        /// Coefficient of `d`.
        e: f64,
    },
    /// Measured `(distance, ms)` points in increasing distance, linearly
    /// interpolated (below the first point: its time; past the last: its
    /// time).
    Table(&'static [(u32, f64)]),
}

impl SeekCurve {
    /// The curve's time in ms at a (possibly fractional, stretched) distance.
    pub fn at(&self, d: f64) -> f64 {
        match self {
            SeekCurve::TwoPiece { boundary, a, b, c, e } => {
                if d <= *boundary {
                    a + b * d.sqrt()
                } else {
                    c + e * d
                }
            }
            SeekCurve::Table(points) => interpolate(points, d),
        }
    }
}

fn interpolate(points: &[(u32, f64)], d: f64) -> f64 {
    let Some(&(first_d, first_t)) = points.first() else { return 0.0 };
    if d <= f64::from(first_d) {
        return first_t;
    }
    for pair in points.windows(2) {
        let ((d0, t0), (d1, t1)) = (pair[0], pair[1]);
        if d <= f64::from(d1) {
            let span = f64::from(d1 - d0).max(1.0);
            return t0 + (t1 - t0) * (d - f64::from(d0)) / span;
        }
    }
    points.last().map_or(0.0, |&(_, t)| t)
}

impl SeekModel {
    /// Seek time in nanoseconds for every distance `0..cylinders` (index 0,
    /// no seek, is 0). Computed once per disk so a seek is a table lookup.
    pub fn table_ns(&self, cylinders: u32) -> Vec<u64> {
        let raw = self.raw_ms(cylinders);
        let scale = match self.mean_ms {
            Some(target) => {
                let mean = mean_over_random_pairs(&raw);
                if mean > 0.0 {
                    target / mean
                } else {
                    1.0
                }
            }
            None => 1.0,
        };
        raw.iter().map(|ms| (ms * scale * 1e6).round() as u64).collect()
    }

    /// The curve's times in ms for every distance `0..cylinders`,
    /// stretched but not yet scaled to `mean_ms`.
    fn raw_ms(&self, cylinders: u32) -> Vec<f64> {
        let stretch = f64::from(self.measured_cylinders) / f64::from(cylinders.max(1));
        (0..cylinders).map(|d| if d == 0 { 0.0 } else { self.curve.at(f64::from(d) * stretch) }).collect()
    }

    /// This model with every seek time on a drive of `cylinders` multiplied
    /// by `factor` (a sensitivity run's "half the seek time"). It is
    /// expressed as a mean so that the shape of the curve is kept and a
    /// factor of 1 gives back the same table to the nanosecond.
    pub fn scaled(&self, factor: f64, cylinders: u32) -> SeekModel {
        let mean = match self.mean_ms {
            Some(mean) => mean,
            None => mean_over_random_pairs(&self.raw_ms(cylinders)),
        };
        SeekModel { mean_ms: Some(mean * factor), ..self.clone() }
    }
}

/// The mean of `seek[d]` over uniformly random ordered pairs of distinct
/// cylinders on a drive of `seek.len()` cylinders: distance `d` occurs for
/// `2·(N − d)` of the pairs.
fn mean_over_random_pairs(seek: &[f64]) -> f64 {
    let n = seek.len() as f64;
    let (mut sum, mut weight) = (0.0, 0.0);
    for (d, t) in seek.iter().enumerate().skip(1) {
        let w = 2.0 * (n - d as f64);
        sum += t * w;
        weight += w;
    }
    if weight > 0.0 {
        sum / weight
    } else {
        0.0
    }
}

impl DiskModel {
    /// Number of cylinders (one past the last cylinder of the last zone).
    pub fn cylinders(&self) -> u32 {
        self.zones.last().map_or(0, |z| z.last_cylinder + 1)
    }

    /// Data sectors on the drive.
    pub fn sectors(&self) -> u64 {
        self.zones.iter().map(|z| z.sectors(self.heads)).sum()
    }

    /// One revolution in nanoseconds (rounded to the nearest).
    pub fn revolution_ns(&self) -> u64 {
        (60_000_000_000 + u64::from(self.rpm) / 2) / u64::from(self.rpm.max(1))
    }

    /// The random-pair mean of this drive's seek curve, in ms, as the disk
    /// uses it (after stretching and scaling).
    pub fn mean_seek_ms(&self) -> f64 {
        let table = self.seek.table_ns(self.cylinders());
        let ms: Vec<f64> = table.iter().map(|&ns| ns as f64 / 1e6).collect();
        mean_over_random_pairs(&ms)
    }

    /// Bytes per second the media delivers within one track of zone `zone`
    /// (0 = outermost), ignoring skew: sectors per track × 512 per revolution.
    pub fn raw_media_rate(&self, zone: usize) -> f64 {
        let spt = self.zones.get(zone).map_or(0, |z| z.sectors_per_track);
        f64::from(spt) * 512.0 * 1e9 / self.revolution_ns() as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_interpolates_and_clamps() {
        let curve = SeekCurve::Table(&[(1, 1.0), (11, 2.0)]);
        assert_eq!(curve.at(0.5), 1.0);
        assert!((curve.at(6.0) - 1.5).abs() < 1e-12);
        assert_eq!(curve.at(50.0), 2.0);
    }

    #[test]
    fn scaling_hits_the_requested_mean() {
        let seek = SeekModel {
            curve: SeekCurve::TwoPiece { boundary: 383.0, a: 3.24, b: 0.4, c: 8.0, e: 0.008 },
            measured_cylinders: 1962,
            mean_ms: Some(10.0),
        };
        let ns = seek.table_ns(1000);
        let ms: Vec<f64> = ns.iter().map(|&t| t as f64 / 1e6).collect();
        assert!((mean_over_random_pairs(&ms) - 10.0).abs() < 1e-3);
        assert_eq!(ns[0], 0);
        assert!(ns.windows(2).skip(1).all(|w| w[0] <= w[1]), "this curve is monotonic");
    }

    #[test]
    fn scaling_multiplies_every_seek_and_one_changes_nothing() {
        for model in DiskModel::all() {
            let cylinders = model.cylinders();
            let table = model.seek.table_ns(cylinders);
            assert_eq!(model.seek.scaled(1.0, cylinders).table_ns(cylinders), table, "{}", model.name);
            let half = model.seek.scaled(0.5, cylinders).table_ns(cylinders);
            for (d, (&full, &halved)) in table.iter().zip(&half).enumerate() {
                assert!(halved.abs_diff(full / 2) <= 1, "{} at {d}: {full} -> {halved}", model.name);
            }
        }
    }
}
