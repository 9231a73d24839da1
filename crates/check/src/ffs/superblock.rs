//! Before the phases: the superblock. The primary (byte 0) is validated by
//! its decoder (magic, checksum, version, every field and the arithmetic
//! behind the derived ones) and must fit the device; each copy at the front
//! of groups 1 … ncg−1 must decode and describe the same file system (its
//! totals, flags, times and `optim` are mkfs's and may be older).
//!
//! A damaged primary is replaced by a copy, as fsck_ffs does with `-b`:
//! first where the damaged primary's own fields, read as if its checksum
//! were right, place group 1's copy; else by looking at every 4 KiB of the
//! first [`SCAN_LIMIT`] bytes for a copy that lies where its own geometry
//! puts one. The primary also says whether the file system was unmounted
//! cleanly; one that was not has stale groups and totals, which phase 5
//! rebuilds.

use super::{Checker, Opened};
use crate::{Fatal, Fix, Kind, Layout, Options, Progress, Report, Severity};
use disk::BlockDevice;
use fslab::ffs::geometry::Geometry;
use fslab::ffs::layout::{SB_CLEAN, SUPERBLOCK_BYTES};
use fslab::ffs::{Policy, Superblock};
use fslab::format::codec::crc32c_skipping;
use fslab::Error;

/// Where the superblock keeps its checksum (docs/FORMAT.md, "FFS superblock").
const SB_CRC_OFFSET: usize = 12;
/// Bytes searched for a copy when the primary's fields cannot place one.
/// Group 1's copy lies at the group size (32 MiB by default).
pub(crate) const SCAN_LIMIT: u64 = 1 << 30;
/// Bytes read at once while searching.
const SCAN_CHUNK: usize = 1 << 20;
/// Copies sit at the start of a group, a whole number of blocks of at
/// least 4 KiB.
const COPY_ALIGN: usize = 4096;
/// Damaged copies reported one by one before a total.
const MAX_LISTED_COPIES: usize = 10;

/// Whether `dev` holds, in some group, a copy of an FFS superblock that
/// lies where its own geometry puts one (for an image whose byte 0 names
/// no layout).
pub(crate) fn has_copy(dev: &dyn BlockDevice) -> bool {
    find_copy(dev, None).is_some()
}

/// The superblock in `bytes` as if its checksum were right, if that makes
/// it decode: a damaged primary's idea of the geometry, to look for a copy
/// with. Never trusted for anything else.
fn as_if_sealed(bytes: &[u8]) -> Option<Geometry> {
    let mut copy = bytes.get(..SUPERBLOCK_BYTES)?.to_vec();
    let crc = crc32c_skipping(&copy, SB_CRC_OFFSET);
    copy[SB_CRC_OFFSET..SB_CRC_OFFSET + 4].copy_from_slice(&crc.to_le_bytes());
    Superblock::decode(&copy, 0).ok().map(|sb| sb.geometry)
}

/// The copy in `bytes`, read from byte `offset` of `dev`, if it is valid,
/// lies at the front of one of its own groups other than 0, and its file
/// system fits the device. Returns it and its group.
fn placed_copy(dev: &dyn BlockDevice, bytes: &[u8], offset: u64) -> Option<(Superblock, u32)> {
    if !Superblock::has_magic(bytes) {
        return None;
    }
    let sb = Superblock::decode(bytes, 0).ok()?;
    let geo = sb.geometry;
    let group_bytes = geo.byte_offset(geo.fpg as u64);
    let g = offset / group_bytes;
    let fits = geo.byte_offset(geo.total_frags) <= dev.size();
    (offset.is_multiple_of(group_bytes) && g >= 1 && g < geo.ncg as u64 && fits).then_some((sb, g as u32))
}

/// A copy of the superblock: where `hint` places group copies, else the
/// first one found in the first [`SCAN_LIMIT`] bytes.
fn find_copy(dev: &dyn BlockDevice, hint: Option<Geometry>) -> Option<(Superblock, u32)> {
    if let Some(geo) = hint {
        for g in 1..geo.ncg {
            let at = geo.byte_offset(geo.group_base(g));
            let mut bytes = vec![0u8; SUPERBLOCK_BYTES];
            if at + SUPERBLOCK_BYTES as u64 > dev.size() || dev.read_at(at, &mut bytes).is_err() {
                break;
            }
            if let Some(found) = placed_copy(dev, &bytes, at) {
                return Some(found);
            }
        }
    }
    let end = dev.size().min(SCAN_LIMIT);
    let mut at = COPY_ALIGN as u64;
    while at + SUPERBLOCK_BYTES as u64 <= end {
        let len = (SCAN_CHUNK as u64).min(end - at) as usize;
        let mut buf = vec![0u8; len];
        if dev.read_at(at, &mut buf).is_ok() {
            for off in (0..len).step_by(COPY_ALIGN) {
                let Some(bytes) = buf.get(off..off + SUPERBLOCK_BYTES) else { break };
                if let Some(found) = placed_copy(dev, bytes, at + off as u64) {
                    return Some(found);
                }
            }
        }
        at += len as u64;
    }
    None
}

/// Whether two superblocks describe the same file system (what mkfs fixed;
/// `optim` is switched by the allocator and written to the primary only).
fn same_file_system(a: &Superblock, b: &Superblock) -> bool {
    a.geometry == b.geometry
        && a.fs_id == b.fs_id
        && a.created == b.created
        && a.policy == Policy { optim: a.policy.optim, ..b.policy }
}

impl<'a> Checker<'a> {
    /// The superblock phase (see the module comment), then a checker of
    /// the file system it describes.
    pub fn open(
        dev: &'a dyn BlockDevice,
        options: &Options,
        sink: &'a mut dyn FnMut(&str),
    ) -> Result<Opened<'a>, Fatal> {
        let progress = Progress::new(sink, options.progress_every);
        let mut report = Report { layout: Layout::Ffs, ..Report::default() };
        if dev.size() < SUPERBLOCK_BYTES as u64 {
            return Err(Fatal::Foreign(format!("a device of {} bytes holds no fslab image", dev.size())));
        }
        let mut primary = vec![0u8; SUPERBLOCK_BYTES];
        dev.read_at(0, &mut primary).map_err(Fatal::Io)?;
        let why = match Superblock::decode(&primary, 0) {
            Ok(sb) if sb.geometry.byte_offset(sb.geometry.total_frags) <= dev.size() => {
                report.clean_unmount = sb.flags & SB_CLEAN != 0;
                if !report.clean_unmount {
                    // Only a warning that counts may be stale: whatever is
                    // really wrong is found, and classified, on its own.
                    report.push(
                        Severity::Leak,
                        Kind::Superblock,
                        None,
                        "the file system was not unmounted cleanly: its cylinder groups and totals \
                         may be stale; repair rebuilds them from the inodes and marks it clean"
                            .into(),
                        Some(Fix::RebuildGroups),
                    );
                }
                let mut checker = Box::new(Checker::new(dev, sb, None, report, progress));
                checker.compare_copies();
                return Ok(Opened::Ready(checker));
            }
            Ok(sb) => format!(
                "the file system of {} bytes exceeds the device of {}",
                sb.geometry.byte_offset(sb.geometry.total_frags),
                dev.size()
            ),
            Err(Error::Foreign(why)) => return Err(Fatal::Foreign(why)),
            Err(e) => e.to_string(),
        };
        let Some((sb, g)) = find_copy(dev, as_if_sealed(&primary)) else {
            if !Superblock::has_magic(&primary) {
                return Err(Fatal::Foreign("not an fslab image (no superblock found)".into()));
            }
            report.push(
                Severity::Damage,
                Kind::Superblock,
                None,
                format!("primary superblock: {why}; no copy of it was found: nothing to check"),
                None,
            );
            return Ok(Opened::Unusable(report));
        };
        report.push(
            Severity::Damage,
            Kind::Superblock,
            None,
            format!("primary superblock: {why}; repair restores it from the copy in group {g}"),
            Some(Fix::RestoreSuperblock),
        );
        let mut checker = Box::new(Checker::new(dev, sb, Some(g), report, progress));
        checker.compare_copies();
        Ok(Opened::Ready(checker))
    }

    /// Compares every other group's copy with the superblock checked.
    fn compare_copies(&mut self) {
        let sb = self.model.sb;
        for g in 1..self.geo.ncg {
            if self.model.from_copy == Some(g) {
                continue;
            }
            let at = self.geo.group_base(g);
            let why = match self.read_at(at, SUPERBLOCK_BYTES) {
                Err(e) => format!("cannot be read: {e}"),
                Ok(bytes) => match Superblock::decode(&bytes, at) {
                    Err(e) => e.to_string(),
                    Ok(copy) if !same_file_system(&copy, &sb) => {
                        "describes another file system than the superblock checked".into()
                    }
                    Ok(_) => continue,
                },
            };
            self.model.bad_copies.push(g);
            if self.model.bad_copies.len() <= MAX_LISTED_COPIES {
                self.damage(
                    Kind::Superblock,
                    None,
                    format!("superblock copy in group {g}: {why}; repair rewrites it"),
                    Some(Fix::RewriteSuperblocks),
                );
            }
        }
        let more = self.model.bad_copies.len().saturating_sub(MAX_LISTED_COPIES);
        if more > 0 {
            self.damage(
                Kind::Superblock,
                None,
                format!("{more} more superblock copies are damaged; repair rewrites them"),
                Some(Fix::RewriteSuperblocks),
            );
        }
    }
}
