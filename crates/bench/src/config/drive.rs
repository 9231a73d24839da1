//! `[disk]` and `[disk.log]`: the simulated drive's parameters a
//! sensitivity run may change, how each is checked, and how it changes a
//! [`DiskModel`].
//!
//! Skews follow the spindle and the recording density: each keeps the
//! time it covered on the catalogue's drive (the fewest sectors that cover
//! it, as a formatter chooses), so that a faster spindle is not also a
//! drive that misses a revolution at every track switch. Buffer sizes are
//! in sectors and stay as given.

use super::{ConfigError, Section};
use crate::results::Override;
use ::disk::DiskModel;
use serde_json::Value;

/// The keys of one drive, every one optional.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DriveTuning {
    /// Spindle speed, revolutions per minute.
    pub rpm: Option<u32>,
    /// Every seek time multiplied by this.
    pub seek_scale: Option<f64>,
    /// The seek curve scaled so that its mean over random pairs of
    /// cylinders is this many ms (how data sheets and papers state it).
    pub seek_mean_ms: Option<f64>,
    /// Time to switch heads on one cylinder, ms.
    pub head_switch_ms: Option<f64>,
    /// Every kind of controller overhead (read miss, read hit, write)
    /// multiplied by this.
    pub overhead_scale: Option<f64>,
    /// Host bus rate, bytes per second.
    pub bus_bytes_per_s: Option<u64>,
    /// Every zone's sectors per track multiplied by this (rounded): the
    /// media rate and the capacity follow.
    pub sectors_per_track_scale: Option<f64>,
    /// Track-buffer segments (0: no buffer).
    pub buffer_segments: Option<u32>,
    /// Sectors per segment.
    pub segment_sectors: Option<u32>,
    /// Read-ahead past a request, sectors (0: none).
    pub read_ahead_sectors: Option<u32>,
    /// Largest transfer one command may carry, bytes.
    pub max_transfer_bytes: Option<u64>,
}

/// `[disk]`, for every simulated drive of a run, and `[disk.log]`, for the
/// drive holding a journal (LFFS-wafs-2's), applied on top of `[disk]`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DiskTuning {
    /// `[disk]`.
    pub drive: DriveTuning,
    /// `[disk.log]`.
    pub log: DriveTuning,
}

/// No time a key sets may exceed a second: beyond that no drive of any
/// era, and virtual time sums of a long run near the clock's range.
const MAX_MS: f64 = 1000.0;
/// No scale may exceed this, for the same reason.
const MAX_SCALE: f64 = 100.0;

impl DiskTuning {
    /// Reads `[disk]` and the `[disk.log]` inside it.
    pub(super) fn read(mut section: Section<'_>) -> Result<DiskTuning, ConfigError> {
        let drive = DriveTuning::read(&mut section)?;
        let log = section.take::<toml::Table>("log")?;
        let file = section.file;
        section.finish("key")?;
        let log = match log {
            Some(table) => {
                let mut log = Section::new(file, "disk.log", table);
                let tuning = DriveTuning::read(&mut log)?;
                log.finish("key")?;
                tuning
            }
            None => DriveTuning::default(),
        };
        Ok(DiskTuning { drive, log })
    }

    /// The keys set, as `disk.rpm` and `disk.log.rpm`.
    pub fn keys(&self) -> Vec<String> {
        let mut keys: Vec<String> = self.drive.keys().iter().map(|k| format!("disk.{k}")).collect();
        keys.extend(self.log.keys().iter().map(|k| format!("disk.log.{k}")));
        keys
    }
}

impl DriveTuning {
    fn read(s: &mut Section<'_>) -> Result<DriveTuning, ConfigError> {
        let spindle = " rpm (a drive of 1990-2000 spun 3600-10000)";
        let tuning = DriveTuning {
            rpm: s.whole("rpm", 100, 100_000, spindle)?,
            seek_scale: s.number("seek_scale", 0.0, MAX_SCALE, "")?,
            seek_mean_ms: s.number("seek_mean_ms", 0.0, MAX_MS, " ms")?,
            head_switch_ms: s.number("head_switch_ms", 0.0, MAX_MS, " ms")?,
            overhead_scale: s.number("overhead_scale", 0.0, MAX_SCALE, "")?,
            bus_bytes_per_s: s.whole(
                "bus_bytes_per_s",
                100_000,
                1 << 40,
                " bytes a second (below 0.1 MB/s a long run's virtual time nears the clock's range)",
            )?,
            sectors_per_track_scale: s.number(
                "sectors_per_track_scale",
                0.1,
                10.0,
                " (a tenth keeps every catalogued zone above four sectors a track)",
            )?,
            buffer_segments: s.whole("buffer_segments", 0, 1024, " (0: no track buffer)")?,
            segment_sectors: s.whole(
                "segment_sectors",
                1,
                1 << 21,
                " sectors (for no buffer, set buffer_segments = 0)",
            )?,
            read_ahead_sectors: s.whole("read_ahead_sectors", 0, 1 << 21, " sectors")?,
            max_transfer_bytes: s.whole("max_transfer_bytes", 512, 1 << 30, " bytes")?,
        };
        if tuning.seek_scale.is_some() && tuning.seek_mean_ms.is_some() {
            return Err(s.error(
                "seek_mean_ms",
                "give seek_scale or seek_mean_ms, not both (each sets the whole seek curve)",
            ));
        }
        if tuning.max_transfer_bytes.is_some_and(|b| b % 512 != 0) {
            return Err(s.error("max_transfer_bytes", "must be a whole number of 512-byte sectors"));
        }
        Ok(tuning)
    }

    /// The keys set, without their section.
    pub fn keys(&self) -> Vec<&'static str> {
        let set = [
            ("rpm", self.rpm.is_some()),
            ("seek_scale", self.seek_scale.is_some()),
            ("seek_mean_ms", self.seek_mean_ms.is_some()),
            ("head_switch_ms", self.head_switch_ms.is_some()),
            ("overhead_scale", self.overhead_scale.is_some()),
            ("bus_bytes_per_s", self.bus_bytes_per_s.is_some()),
            ("sectors_per_track_scale", self.sectors_per_track_scale.is_some()),
            ("buffer_segments", self.buffer_segments.is_some()),
            ("segment_sectors", self.segment_sectors.is_some()),
            ("read_ahead_sectors", self.read_ahead_sectors.is_some()),
            ("max_transfer_bytes", self.max_transfer_bytes.is_some()),
        ];
        set.iter().filter(|(_, given)| *given).map(|(key, _)| *key).collect()
    }

    /// Changes `model` as the keys say.
    pub fn apply(&self, model: &mut DiskModel) {
        let cylinders = model.cylinders();
        if let Some(factor) = self.seek_scale {
            model.seek = model.seek.scaled(factor, cylinders);
        }
        if let Some(mean) = self.seek_mean_ms {
            model.seek.mean_ms = Some(mean);
        }
        let old_rpm = model.rpm;
        if let Some(rpm) = self.rpm {
            model.rpm = rpm;
        }
        let density = self.sectors_per_track_scale.unwrap_or(1.0);
        for zone in &mut model.zones {
            let old_spt = zone.sectors_per_track;
            let spt = ((f64::from(old_spt) * density).round() as u32).max(1);
            zone.sectors_per_track = spt;
            let same_time = |skew: u32| same_time_skew(skew, old_spt, old_rpm, spt, model.rpm);
            zone.track_skew = same_time(zone.track_skew);
            zone.cylinder_skew = same_time(zone.cylinder_skew);
        }
        if let Some(ms) = self.head_switch_ms {
            model.head_switch_ns = ms_to_ns(ms);
        }
        if let Some(factor) = self.overhead_scale {
            let scale = |ns: u64| (ns as f64 * factor).round() as u64;
            model.overhead.read_miss_ns = scale(model.overhead.read_miss_ns);
            model.overhead.read_hit_ns = scale(model.overhead.read_hit_ns);
            model.overhead.write_ns = scale(model.overhead.write_ns);
        }
        if let Some(rate) = self.bus_bytes_per_s {
            model.bus_bytes_per_second = Some(rate);
        }
        if let Some(segments) = self.buffer_segments {
            model.buffer.segments = segments;
        }
        if let Some(sectors) = self.segment_sectors {
            model.buffer.segment_sectors = sectors;
        }
        if let Some(sectors) = self.read_ahead_sectors {
            model.buffer.read_ahead_sectors = sectors;
        }
        if let Some(bytes) = self.max_transfer_bytes {
            model.max_transfer_bytes = Some(bytes);
        }
    }

    /// Each key set, with `base`'s own value where the key names one
    /// (a scale has none), as `section.key`.
    pub(super) fn overrides(&self, section: &str, base: &DiskModel) -> Vec<Override> {
        let ms = |ns: u64| Value::from(ns as f64 / 1e6);
        let rounded = |v: f64| Value::from((v * 1000.0).round() / 1000.0);
        let mut out = Vec::new();
        let mut add = |key: &str, value: Option<Value>, baseline: Option<Value>| {
            if let Some(value) = value {
                out.push(Override { key: format!("{section}.{key}"), value, baseline });
            }
        };
        add("rpm", self.rpm.map(Value::from), Some(Value::from(base.rpm)));
        add("seek_scale", self.seek_scale.map(Value::from), None);
        add("seek_mean_ms", self.seek_mean_ms.map(Value::from), Some(rounded(base.mean_seek_ms())));
        add("head_switch_ms", self.head_switch_ms.map(Value::from), Some(ms(base.head_switch_ns)));
        add("overhead_scale", self.overhead_scale.map(Value::from), None);
        add(
            "bus_bytes_per_s",
            self.bus_bytes_per_s.map(Value::from),
            Some(Value::from(base.bus_bytes_per_second)),
        );
        add("sectors_per_track_scale", self.sectors_per_track_scale.map(Value::from), None);
        add(
            "buffer_segments",
            self.buffer_segments.map(Value::from),
            Some(Value::from(base.buffer.segments)),
        );
        add(
            "segment_sectors",
            self.segment_sectors.map(Value::from),
            Some(Value::from(base.buffer.segment_sectors)),
        );
        add(
            "read_ahead_sectors",
            self.read_ahead_sectors.map(Value::from),
            Some(Value::from(base.buffer.read_ahead_sectors)),
        );
        add(
            "max_transfer_bytes",
            self.max_transfer_bytes.map(Value::from),
            Some(Value::from(base.max_transfer_bytes)),
        );
        out
    }
}

/// The skew, in sectors of a track of `spt` at `rpm`, that covers at
/// least the time `skew` sectors covered on a track of `old_spt` at
/// `old_rpm`; past a revolution only its angle matters. Integer
/// arithmetic, so that unchanged figures give the same skew.
fn same_time_skew(skew: u32, old_spt: u32, old_rpm: u32, spt: u32, rpm: u32) -> u32 {
    let numerator = u128::from(skew) * u128::from(spt) * u128::from(rpm);
    let denominator = (u128::from(old_spt) * u128::from(old_rpm)).max(1);
    (numerator.div_ceil(denominator) % u128::from(spt.max(1))) as u32
}

fn ms_to_ns(ms: f64) -> u64 {
    (ms * 1e6).round() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_skew_keeps_its_time() {
        assert_eq!(same_time_skew(18, 72, 4002, 72, 4002), 18, "nothing changed");
        assert_eq!(same_time_skew(18, 72, 4002, 72, 8004), 36, "twice the speed, twice the sectors");
        assert_eq!(same_time_skew(7, 57, 5400, 114, 5400), 14, "twice the density");
        assert_eq!(same_time_skew(8, 72, 4002, 72, 5000), 10, "rounded up: 9.995 sectors");
        assert_eq!(same_time_skew(40, 72, 4002, 72, 8004), 8, "80 sectors is a revolution and 8");
    }
}
