//! A journal's log on a device of its own (LFFS-wafs with its log on a
//! second disk, 2000 paper §5.2 and §7.1's "wafs-2"): the header that
//! names the device, its formatting at mkfs, and the pairing of it with
//! the file system's device at mount (`docs/FORMAT.md`, "Log device").
//!
//! The pair is one address space ([`disk::DevicePair`]): the log device
//! begins at [`log_device_base`], after the file system, so the journal
//! addresses its region as it addresses a `wafs` region at the end of the
//! same device, and every write still goes through the one write queue.

use super::geometry::Geometry;
use super::layout::{JournalKind, LogDeviceName, Superblock, LOG_BLOCK, SUPERBLOCK_BYTES};
use crate::error::{errno, Error};
use crate::format::codec::{crc32c_skipping, Decoder, Encoder};
use crate::Result;
use disk::{BlockDevice, DevicePair};
use std::sync::Arc;

/// Magic at byte 0 of a log device.
pub const LOG_DEVICE_MAGIC: &[u8; 8] = b"fslabLOG";
/// The log device header's format version.
pub const LOG_DEVICE_VERSION: u32 = 1;
/// Bytes of the header (the device's first log block).
pub const LOG_HEADER_BYTES: u64 = LOG_BLOCK as u64;
const HEADER_CRC: usize = 12;

/// A log device's header, as mkfs writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogDeviceHeader {
    /// The device's identity, which the file system's superblock records.
    pub uuid: [u8; 16],
    /// The file system whose log this is (its superblock's id).
    pub fs_id: u64,
    /// Where on the device the log region begins.
    pub region_offset: u64,
    /// Bytes of the log region.
    pub region_bytes: u64,
}

impl LogDeviceHeader {
    /// Encodes into a [`LOG_HEADER_BYTES`] buffer.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = vec![0u8; LOG_HEADER_BYTES as usize];
        let mut e = Encoder::new(&mut out);
        e.bytes(0, LOG_DEVICE_MAGIC);
        e.u32(8, LOG_DEVICE_VERSION);
        e.bytes(16, &self.uuid);
        e.u64(32, self.fs_id);
        e.u64(40, self.region_offset);
        e.u64(48, self.region_bytes);
        let crc = crc32c_skipping(&out, HEADER_CRC);
        Encoder::new(&mut out).u32(HEADER_CRC, crc);
        out
    }

    /// Decodes and validates a header read from a device's byte 0.
    pub fn decode(bytes: &[u8]) -> Result<LogDeviceHeader> {
        let bad = |why: String| Error::corrupt("log device header", 0u64, why);
        let bytes = bytes.get(..LOG_HEADER_BYTES as usize).ok_or_else(|| bad("short read".into()))?;
        if &bytes[..8] != LOG_DEVICE_MAGIC {
            return Err(Error::Foreign("not an fslab log device: no fslabLOG magic at byte 0".into()));
        }
        let d = Decoder::new(bytes);
        let oob = |_| bad("field out of bounds".into());
        if d.u32(HEADER_CRC).map_err(oob)? != crc32c_skipping(bytes, HEADER_CRC) {
            return Err(bad("checksum mismatch".into()));
        }
        let version = d.u32(8).map_err(oob)?;
        if version != LOG_DEVICE_VERSION {
            return Err(Error::Foreign(format!(
                "fslab log device version {version} is not supported (this build reads {LOG_DEVICE_VERSION})"
            )));
        }
        let mut uuid = [0u8; 16];
        uuid.copy_from_slice(d.bytes(16, 16).map_err(oob)?);
        Ok(LogDeviceHeader {
            uuid,
            fs_id: d.u64(32).map_err(oob)?,
            region_offset: d.u64(40).map_err(oob)?,
            region_bytes: d.u64(48).map_err(oob)?,
        })
    }
}

/// Where the log region begins on a log device: after the header, at a
/// whole fragment (the journal addresses its region in fragments).
pub fn region_offset(geo: &Geometry) -> u64 {
    region_offset_for(geo.frag_size)
}

/// [`region_offset`] for fragments of `frag_size` bytes.
pub fn region_offset_for(frag_size: u32) -> u64 {
    LOG_HEADER_BYTES.max(u64::from(frag_size))
}

/// Where the log device begins in the pair's address space: the first
/// whole log block, and whole fragment, at or after the file system's end.
pub fn log_device_base(geo: &Geometry) -> u64 {
    geo.byte_offset(geo.total_frags).next_multiple_of(region_offset(geo))
}

/// A new identity for a log device (random, as the file system's id).
pub fn new_uuid() -> [u8; 16] {
    use std::hash::{BuildHasher, Hasher};
    let mut uuid = [0u8; 16];
    for half in uuid.chunks_mut(8) {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_i64(crate::format::now_ns());
        half.copy_from_slice(&h.finish().to_le_bytes());
    }
    uuid
}

/// Writes the header of `sb`'s log device to `log` (mkfs empties the log
/// itself, as it does a region on the file system's device).
pub(super) fn format(log: &dyn BlockDevice, sb: &Superblock) -> Result<()> {
    let j = &sb.journal;
    let offset = region_offset(&sb.geometry);
    let header = LogDeviceHeader {
        uuid: j.device.uuid,
        fs_id: sb.fs_id,
        region_offset: offset,
        region_bytes: j.bytes,
    };
    log.write_at(0, &header.encode())?;
    log.flush()?;
    Ok(())
}

/// The superblock at byte 0 of `dev`, read without checking where its
/// journal lies (the log device is not attached yet).
fn bare_superblock(dev: &dyn BlockDevice) -> Result<Superblock> {
    if dev.size() < SUPERBLOCK_BYTES as u64 {
        return Err(Error::Foreign(format!("device of {} bytes is too small for an FFS", dev.size())));
    }
    let mut bytes = vec![0u8; SUPERBLOCK_BYTES];
    dev.read_at(0, &mut bytes)?;
    if !Superblock::has_magic(&bytes) {
        return Err(Error::Foreign("not an fslab FFS image: no fslabFFS magic at byte 0".into()));
    }
    Superblock::decode(&bytes, 0)
}

/// Where an image's log device is, if its journal has one: the path the
/// superblock records, and the device's identity. `None` for any other
/// image (or one whose superblock cannot be read: mount says why).
pub fn log_device_of(dev: &dyn BlockDevice) -> Option<LogDeviceName> {
    let sb = bare_superblock(dev).ok()?;
    (sb.journal.kind == JournalKind::Device).then_some(sb.journal.device)
}

/// The device a journaled FFS mounts on: `data` alone, or — when its
/// journal is on a log device — `data` paired with `log`, once the log's
/// header shows it is this file system's log (the identity the superblock
/// records, the same file system, the region the superblock says).
/// Fails with a message that names the device the image wants when `log`
/// is another's, and when a log is given to an image without one (mount
/// names it when it is missing).
pub fn attach(data: Arc<dyn BlockDevice>, log: Option<Arc<dyn BlockDevice>>) -> Result<Arc<dyn BlockDevice>> {
    // Without a log device, the image goes as it is: a mount of an image
    // whose journal is on one says which device it lacks.
    let Some(log) = log else { return Ok(data) };
    let sb = bare_superblock(data.as_ref())?;
    let j = &sb.journal;
    if j.kind != JournalKind::Device {
        return Err(errno(
            libc::EINVAL,
            "this file system has no journal on a log device; leave journal_device out",
        ));
    }
    let mut bytes = vec![0u8; LOG_HEADER_BYTES as usize];
    if log.size() < LOG_HEADER_BYTES {
        return Err(Error::Foreign(format!("the log device of {} bytes holds no header", log.size())));
    }
    log.read_at(0, &mut bytes)?;
    let header = LogDeviceHeader::decode(&bytes)?;
    let geo = &sb.geometry;
    let mismatch = |what: &str| {
        Err(Error::Foreign(format!(
            "this is not the file system's log device ({what}): it wants the one with identity {}, made at {}",
            j.device.uuid_text(),
            j.device.path()
        )))
    };
    if header.uuid != j.device.uuid {
        return mismatch("another identity");
    }
    if header.fs_id != sb.fs_id {
        return mismatch("the log of another file system");
    }
    let offset = region_offset(geo);
    let base = log_device_base(geo);
    if header.region_offset != offset
        || header.region_bytes != j.bytes
        || j.start.checked_mul(u64::from(geo.frag_size)) != Some(base + offset)
        || log.size() < offset + j.bytes
    {
        return mismatch("its region is not the one the superblock records");
    }
    Ok(Arc::new(DevicePair::new(data, log, base)))
}
