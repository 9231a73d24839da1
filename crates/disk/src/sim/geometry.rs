//! Where a sector is: logical block numbers (LBNs) to cylinder, head and
//! angular slot, through zones and skew.
//!
//! LBNs run along a track, then to the next head of the same cylinder, then
//! to the next cylinder, zone after zone from the outside in. Each track's
//! first sector is rotated by the skew (track skew per head switch,
//! cylinder skew per cylinder crossing) so that a sequential transfer
//! arriving at the next track finds its first sector just coming under the
//! head instead of just gone (the layout of DiskSim's `dm_layout_g1`).

use std::io;

/// A band of cylinders with the same number of sectors per track.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Zone {
    /// First cylinder of the zone.
    pub first_cylinder: u32,
    /// Last cylinder of the zone (inclusive).
    pub last_cylinder: u32,
    /// Sectors on each track of the zone.
    pub sectors_per_track: u32,
    /// Sectors by which a track's first sector trails the previous track's
    /// on a head switch.
    pub track_skew: u32,
    /// Sectors by which a cylinder's first track trails the previous
    /// cylinder's last track.
    pub cylinder_skew: u32,
}

impl Zone {
    /// Cylinders in the zone.
    pub fn cylinders(&self) -> u32 {
        self.last_cylinder.saturating_sub(self.first_cylinder) + 1
    }

    /// Data sectors in the zone on a drive with `heads` surfaces.
    pub fn sectors(&self, heads: u32) -> u64 {
        u64::from(self.cylinders()) * u64::from(heads) * u64::from(self.sectors_per_track)
    }
}

/// The physical place of one sector.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Location {
    /// Index of the zone (0 = outermost).
    pub zone: usize,
    /// Cylinder.
    pub cylinder: u32,
    /// Head (surface).
    pub head: u32,
    /// Position of the sector along its track in LBN order (0 = first).
    pub sector: u32,
    /// Angular slot the sector occupies, after skew: slot `s` passes under
    /// the head during `[s, s+1)` × (revolution / sectors per track) after
    /// the index mark.
    pub slot: u32,
    /// Sectors per track here.
    pub sectors_per_track: u32,
}

/// The LBN map of a drive: its zones with their first LBNs.
#[derive(Clone, Debug)]
pub struct Geometry {
    heads: u32,
    zones: Vec<Zone>,
    /// `first_lbn[i]` is the first LBN of zone `i`; one more entry holds the
    /// total.
    first_lbn: Vec<u64>,
}

impl Geometry {
    /// The map of `zones` on a drive with `heads` surfaces. Fails with
    /// `InvalidInput` when the zones are empty, overlap, run backwards, or
    /// have a skew as large as a track.
    pub fn new(heads: u32, zones: &[Zone]) -> io::Result<Geometry> {
        let invalid = |message: String| Err(io::Error::new(io::ErrorKind::InvalidInput, message));
        if heads == 0 || zones.is_empty() {
            return invalid("a disk needs at least one head and one zone".into());
        }
        let mut first_lbn = Vec::with_capacity(zones.len() + 1);
        let mut lbn = 0u64;
        let mut next_cylinder = 0u32;
        for (i, z) in zones.iter().enumerate() {
            if z.first_cylinder < next_cylinder || z.last_cylinder < z.first_cylinder {
                return invalid(format!("zone {i} overlaps the one before it or runs backwards"));
            }
            if z.sectors_per_track == 0
                || z.track_skew >= z.sectors_per_track
                || z.cylinder_skew >= z.sectors_per_track
            {
                return invalid(format!(
                    "zone {i}: sectors per track must be positive and larger than the skews"
                ));
            }
            first_lbn.push(lbn);
            lbn += z.sectors(heads);
            next_cylinder = z.last_cylinder + 1;
        }
        first_lbn.push(lbn);
        Ok(Geometry { heads, zones: zones.to_vec(), first_lbn })
    }

    /// Data sectors on the drive.
    pub fn sectors(&self) -> u64 {
        self.first_lbn.last().copied().unwrap_or(0)
    }

    /// Cylinders on the drive.
    pub fn cylinders(&self) -> u32 {
        self.zones.last().map_or(0, |z| z.last_cylinder + 1)
    }

    /// Surfaces (tracks per cylinder).
    pub fn heads(&self) -> u32 {
        self.heads
    }

    /// The zones, outermost first.
    pub fn zones(&self) -> &[Zone] {
        &self.zones
    }

    /// Where sector `lbn` lies. `lbn` must be below [`Geometry::sectors`];
    /// larger values are clamped to the last sector.
    pub fn locate(&self, lbn: u64) -> Location {
        let lbn = lbn.min(self.sectors().saturating_sub(1));
        // first_lbn is sorted; the zone is the last one starting at or before lbn.
        let zone = self.first_lbn[..self.zones.len()].partition_point(|&f| f <= lbn).saturating_sub(1);
        let z = &self.zones[zone];
        let spt = u64::from(z.sectors_per_track);
        let within = lbn - self.first_lbn[zone];
        let track = within / spt;
        let sector = (within % spt) as u32;
        let heads = u64::from(self.heads);
        let cylinder_in_zone = track / heads;
        let head = (track % heads) as u32;
        let skew = cylinder_in_zone * u64::from(z.cylinder_skew)
            + (cylinder_in_zone * (heads - 1) + u64::from(head)) * u64::from(z.track_skew);
        let slot = ((u64::from(sector) + skew) % spt) as u32;
        Location {
            zone,
            cylinder: z.first_cylinder + cylinder_in_zone as u32,
            head,
            sector,
            slot,
            sectors_per_track: z.sectors_per_track,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two_zones() -> Geometry {
        let zones = [
            Zone {
                first_cylinder: 0,
                last_cylinder: 1,
                sectors_per_track: 10,
                track_skew: 2,
                cylinder_skew: 3,
            },
            Zone {
                first_cylinder: 3,
                last_cylinder: 4,
                sectors_per_track: 8,
                track_skew: 1,
                cylinder_skew: 2,
            },
        ];
        Geometry::new(2, &zones).expect("valid geometry")
    }

    #[test]
    fn lbns_run_along_tracks_then_heads_then_cylinders() {
        let g = two_zones();
        assert_eq!(g.sectors(), 2 * 2 * 10 + 2 * 2 * 8);
        assert_eq!(g.cylinders(), 5);
        let l = g.locate(0);
        assert_eq!((l.zone, l.cylinder, l.head, l.sector, l.slot), (0, 0, 0, 0, 0));
        let l = g.locate(10);
        assert_eq!(
            (l.cylinder, l.head, l.sector, l.slot),
            (0, 1, 0, 2),
            "a head switch skews by the track skew"
        );
        let l = g.locate(20);
        assert_eq!((l.cylinder, l.head, l.slot), (1, 0, 5), "a cylinder crossing skews by the cylinder skew");
        let l = g.locate(40);
        assert_eq!((l.zone, l.cylinder, l.head, l.slot), (1, 3, 0, 0), "the spare cylinder 2 holds no data");
        let l = g.locate(40 + 8 + 7);
        assert_eq!((l.cylinder, l.head, l.sector, l.slot), (3, 1, 7, 0));
    }

    #[test]
    fn refuses_skew_as_large_as_a_track() {
        let zone = Zone {
            first_cylinder: 0,
            last_cylinder: 0,
            sectors_per_track: 4,
            track_skew: 4,
            cylinder_skew: 0,
        };
        assert!(Geometry::new(1, &[zone]).is_err());
    }
}
