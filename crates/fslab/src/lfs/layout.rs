//! LFS on-disk structures: superblock with checkpoint, segment summary with
//! FINFO records, and the ifile's three tables (cleaner info, segment usage,
//! inode map). Each has an encoder and a validating decoder; `docs/FORMAT.md`
//! gives every byte.

use crate::error::{Error, Location};
use crate::format::codec::{crc32c_skipping, Decoder, Encoder};
use crate::format::{Daddr, Ino, Lbn, TimeNs, IFILE_INO};
use crate::Result;

/// Magic at byte 0 of every superblock copy.
pub const SUPERBLOCK_MAGIC: &[u8; 8] = b"fslabLFS";
/// The format version this code writes and reads.
pub const FORMAT_VERSION: u32 = 5;
/// The oldest format version this code reads: version 3 lacks only the
/// orphan list, whose fields (checkpoint byte 224, inode byte 152) are zero
/// there, so it reads as an empty list.
pub const OLDEST_READABLE_VERSION: u32 = 3;

/// A reading of the write clock: the bytes users had caused to be written
/// to the log over the file system's life. The cleaner measures the age of
/// data in it (how much has been written since), so that ages do not depend
/// on how fast or how often the disk was busy.
pub type WriteClock = i64;
/// Bytes of a superblock copy (it occupies one whole block).
pub const SUPERBLOCK_BYTES: usize = 4096;
/// Superblock copies kept (fewer on very small images).
pub const MAX_SUPERBLOCKS: usize = 4;
/// Magic at byte 0 of every segment summary.
pub const SUMMARY_MAGIC: u32 = 0x5353_4653; // "SFSS"
/// Magic in the trailer of every ifile block.
pub const IFILE_MAGIC: u32 = 0x4649_4649; // "IFIF"
/// Bytes at the end of each ifile block: CRC32C, magic.
pub const IFILE_TRAILER: usize = 8;

/// Summary flag: the partial segment holds (part of) a directory operation.
pub const SS_DIROP: u16 = 0x1;
/// Summary flag: the directory operation continues in the next partial segment.
pub const SS_CONT: u16 = 0x2;
/// Summary flag: this partial segment ends with the ifile and its inode.
pub const SS_IFILE: u16 = 0x4;

/// Segment usage flag: currently being written.
pub const SEGUSE_ACTIVE: u32 = 0x1;
/// Segment usage flag: written since it was last clean.
pub const SEGUSE_DIRTY: u32 = 0x2;
/// Segment usage flag: holds a superblock copy in its first block.
pub const SEGUSE_SUPERBLOCK: u32 = 0x4;
/// Segment usage flag: holds nothing and may be written.
pub const SEGUSE_CLEAN: u32 = 0x8;

/// Superblock flag: the file system was unmounted cleanly after this checkpoint.
pub const SB_CLEAN: u32 = 0x1;

/// Superblock flag: the last fsck left damage it could not repair. Every
/// later checkpoint keeps it, and a mount refuses to write to the image,
/// until an fsck finds it clean; a writer would otherwise reuse space a
/// damaged file may still hold.
pub const SB_DAMAGED: u32 = 0x4;

/// Superblock flag: the checkpoint records a cold log head.
pub const SB_COLD_HEAD: u32 = 0x2;

/// Where one head of the log stands: at a checkpoint, the cold head's
/// position (the head the cleaner writes moved data to when a policy keeps
/// it apart from users' writes); in memory, either head's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HeadPosition {
    /// The segment the head continues in.
    pub segment: u64,
    /// The block within `segment` where its next partial segment starts.
    pub offset: u64,
    /// The segment the head moves to after `segment`.
    pub next_segment: u64,
}

/// Where the log stood at a checkpoint, and how to find the ifile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Checkpoint {
    /// Increases by one with every checkpoint.
    pub serial: u64,
    /// When it was written.
    pub time: TimeNs,
    /// The block holding the ifile's inode.
    pub ifile_daddr: Daddr,
    /// The segment the log continues in.
    pub log_segment: u64,
    /// The block within `log_segment` where the next partial segment starts.
    pub log_offset: u64,
    /// The segment the log moves to after `log_segment`.
    pub next_segment: u64,
    /// The serial number the next partial segment summary will carry.
    pub next_summary_serial: u64,
    /// `SB_CLEAN` and `SB_DAMAGED` (`SB_COLD_HEAD` is derived from `cold`).
    pub flags: u32,
    /// The cold head, if the log has one.
    pub cold: Option<HeadPosition>,
    /// The write clock at this checkpoint.
    pub write_clock: WriteClock,
    /// The first inode of the orphan list (0: empty): inodes with no name
    /// that were open at this checkpoint, chained by their `next_orphan`.
    pub orphan_head: Ino,
}

/// The superblock: parameters fixed at mkfs, plus the latest checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Superblock {
    /// Bytes per block.
    pub block_size: u32,
    /// Bytes per segment.
    pub segment_size: u32,
    /// Segments on the device.
    pub nsegments: u64,
    /// Random identity chosen at mkfs; summaries carry it.
    pub fs_id: u64,
    /// When mkfs ran.
    pub created: TimeNs,
    /// Segments whose first block holds a superblock copy.
    pub sb_segments: [u64; MAX_SUPERBLOCKS],
    /// How many entries of `sb_segments` are used.
    pub ncopies: u32,
    /// Blocks of the ifile holding the segment usage table.
    pub segtab_blocks: u32,
    /// The checkpoint.
    pub checkpoint: Checkpoint,
}

const SB_CRC: usize = 12;

impl Superblock {
    /// Blocks per segment.
    pub fn blocks_per_segment(&self) -> u64 {
        (self.segment_size / self.block_size) as u64
    }

    /// The device byte offset of superblock copy `i`.
    pub fn copy_offset(&self, i: usize) -> u64 {
        self.sb_segments[i] * self.segment_size as u64
    }

    /// Encodes into a [`SUPERBLOCK_BYTES`] buffer.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = vec![0u8; SUPERBLOCK_BYTES];
        let mut e = Encoder::new(&mut out);
        e.bytes(0, SUPERBLOCK_MAGIC);
        e.u32(8, FORMAT_VERSION);
        e.u32(16, self.block_size);
        e.u32(20, self.segment_size);
        e.u64(24, self.nsegments);
        e.u64(32, self.fs_id);
        e.i64(40, self.created);
        e.u32(48, self.ncopies);
        e.u32(52, self.segtab_blocks);
        for (i, s) in self.sb_segments.iter().enumerate() {
            e.u64(56 + 8 * i, *s);
        }
        let c = &self.checkpoint;
        e.u64(128, c.serial);
        e.i64(136, c.time);
        e.u64(144, c.ifile_daddr.get());
        e.u64(152, c.log_segment);
        e.u64(160, c.log_offset);
        e.u64(168, c.next_segment);
        e.u64(176, c.next_summary_serial);
        e.u32(184, (c.flags & !SB_COLD_HEAD) | if c.cold.is_some() { SB_COLD_HEAD } else { 0 });
        e.i64(216, c.write_clock);
        e.u64(224, c.orphan_head);
        if let Some(cold) = c.cold {
            e.u64(192, cold.segment);
            e.u64(200, cold.offset);
            e.u64(208, cold.next_segment);
        }
        let crc = crc32c_skipping(&out, SB_CRC);
        Encoder::new(&mut out).u32(SB_CRC, crc);
        out
    }

    /// Whether `bytes` begin with the superblock magic (valid or not).
    pub fn has_magic(bytes: &[u8]) -> bool {
        bytes.get(..8) == Some(&SUPERBLOCK_MAGIC[..])
    }

    /// Decodes and validates a superblock copy read from byte `offset`.
    pub fn decode(bytes: &[u8], offset: u64) -> Result<Superblock> {
        let bad = |why: String| Error::corrupt_at("superblock", Location::Byte(offset), why);
        if bytes.len() < SUPERBLOCK_BYTES {
            return Err(bad("short read".into()));
        }
        let bytes = &bytes[..SUPERBLOCK_BYTES];
        if !Self::has_magic(bytes) {
            return Err(bad("no fslab magic".into()));
        }
        let d = Decoder::new(bytes);
        let field = |r: std::result::Result<u64, _>| r.map_err(|_| bad("field out of bounds".into()));
        // The checksum first: a damaged copy must read as damaged (so mount
        // tries the other copies), not as a file system of another version.
        if field(d.u32(SB_CRC).map(u64::from))? as u32 != crc32c_skipping(bytes, SB_CRC) {
            return Err(bad("checksum mismatch".into()));
        }
        let version = field(d.u32(8).map(u64::from))? as u32;
        if !(OLDEST_READABLE_VERSION..=FORMAT_VERSION).contains(&version) {
            return Err(Error::Foreign(format!(
                "fslab format version {version} is not supported (this build reads versions \
                 {OLDEST_READABLE_VERSION} to {FORMAT_VERSION})"
            )));
        }
        let mut sb = Superblock {
            block_size: field(d.u32(16).map(u64::from))? as u32,
            segment_size: field(d.u32(20).map(u64::from))? as u32,
            nsegments: field(d.u64(24))?,
            fs_id: field(d.u64(32))?,
            created: field(d.i64(40).map(|v| v as u64))? as i64,
            ncopies: field(d.u32(48).map(u64::from))? as u32,
            segtab_blocks: field(d.u32(52).map(u64::from))? as u32,
            sb_segments: [0; MAX_SUPERBLOCKS],
            checkpoint: Checkpoint {
                serial: field(d.u64(128))?,
                time: field(d.i64(136).map(|v| v as u64))? as i64,
                ifile_daddr: Daddr::new(field(d.u64(144))?),
                log_segment: field(d.u64(152))?,
                log_offset: field(d.u64(160))?,
                next_segment: field(d.u64(168))?,
                next_summary_serial: field(d.u64(176))?,
                flags: field(d.u32(184).map(u64::from))? as u32,
                cold: None,
                write_clock: field(d.i64(216).map(|v| v as u64))? as i64,
                orphan_head: field(d.u64(224))?,
            },
        };
        if sb.checkpoint.flags & SB_COLD_HEAD != 0 {
            sb.checkpoint.cold = Some(HeadPosition {
                segment: field(d.u64(192))?,
                offset: field(d.u64(200))?,
                next_segment: field(d.u64(208))?,
            });
            sb.checkpoint.flags &= !SB_COLD_HEAD;
        }
        for i in 0..MAX_SUPERBLOCKS {
            sb.sb_segments[i] = field(d.u64(56 + 8 * i))?;
        }
        sb.validate().map_err(bad)?;
        Ok(sb)
    }

    /// Checks that the parameters describe a file system this code can run.
    fn validate(&self) -> std::result::Result<(), String> {
        let bs = self.block_size;
        if !bs.is_power_of_two() || !(4096..=65536).contains(&bs) {
            return Err(format!("block size {bs} is not a power of two from 4096 to 65536"));
        }
        let ss = self.segment_size;
        if !ss.is_power_of_two() || ss < 16 * bs {
            return Err(format!("segment size {ss} is not a power of two of at least 16 blocks"));
        }
        if self.nsegments < 4 || self.nsegments > (u32::MAX as u64) / self.blocks_per_segment() {
            return Err(format!("{} segments is out of range", self.nsegments));
        }
        if self.ncopies == 0 || self.ncopies as usize > MAX_SUPERBLOCKS {
            return Err(format!("{} superblock copies is out of range", self.ncopies));
        }
        if self.sb_segments[..self.ncopies as usize].iter().any(|&s| s >= self.nsegments) {
            return Err("a superblock copy lies past the last segment".into());
        }
        let entries = segtab_entries_per_block(bs) as u64;
        if self.segtab_blocks as u64 != self.nsegments.div_ceil(entries) {
            return Err("segment usage table size does not match the segment count".into());
        }
        let c = &self.checkpoint;
        let bps = self.blocks_per_segment();
        if c.log_segment >= self.nsegments || c.next_segment >= self.nsegments || c.log_offset > bps {
            return Err("checkpoint log position is out of range".into());
        }
        if let Some(cold) = c.cold {
            if cold.segment >= self.nsegments
                || cold.next_segment >= self.nsegments
                || cold.offset > bps
                || cold.segment == c.log_segment
            {
                return Err("checkpoint cold log position is out of range".into());
            }
        }
        if c.ifile_daddr.is_none() || c.ifile_daddr.get() >= self.nsegments * bps {
            return Err("checkpoint ifile address is out of range".into());
        }
        // Each mount adds under 2^33 to the summary serial and 1 to the
        // checkpoint's; a value near the top is no count a disk reached,
        // and would wrap (an older copy then seen as the newest).
        if c.serial > MAX_SERIAL || c.next_summary_serial > MAX_SERIAL {
            return Err("checkpoint serial number is out of range".into());
        }
        Ok(())
    }
}

/// The greatest checkpoint or summary serial number a superblock may hold
/// (2^62): room for 2^29 mounts' jumps before either could wrap.
pub const MAX_SERIAL: u64 = 1 << 62;

/// One FINFO record: the blocks of one file in a partial segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finfo {
    /// The file.
    pub ino: Ino,
    /// The file's version (inode map) when the blocks were written.
    pub version: u32,
    /// Bytes used in the file's last block (BSD's `fi_lastlength`).
    pub last_length: u32,
    /// Logical block numbers, in the order the blocks follow the summary.
    pub lbns: Vec<Lbn>,
}

/// Bytes of a summary before the first FINFO.
pub const SUMMARY_HEADER: usize = 64;
/// Bytes of a FINFO record before its block numbers.
pub const FINFO_HEADER: usize = 16;

/// A segment summary: the first block of every partial segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    /// Copied from the superblock: rejects log left by an earlier mkfs.
    pub fs_id: u64,
    /// Increases by one with every partial segment.
    pub serial: u64,
    /// The write clock when the youngest data in it was written: when the
    /// partial segment was written, except for data the cleaner moved,
    /// which keeps its age.
    pub clock: WriteClock,
    /// The segment the log continues in after this one.
    pub next_segment: u64,
    /// `SS_*` flags.
    pub flags: u16,
    /// Blocks after the summary (FINFO blocks, then inode blocks).
    pub nblocks: u32,
    /// Inode blocks, the last `ninoblocks` of the partial segment.
    pub ninoblocks: u32,
    /// CRC32C over every byte of every block after the summary.
    pub data_crc: u32,
    /// The files whose blocks come first.
    pub finfos: Vec<Finfo>,
}

const SUM_CRC: usize = 4;

impl Summary {
    /// Bytes this summary occupies when encoded.
    pub fn encoded_len(&self) -> usize {
        SUMMARY_HEADER + self.finfos.iter().map(|f| FINFO_HEADER + 8 * f.lbns.len()).sum::<usize>()
    }

    /// Encodes into one block of `block_size` bytes.
    pub fn encode(&self, block_size: usize) -> Vec<u8> {
        let mut out = vec![0u8; block_size];
        let mut e = Encoder::new(&mut out);
        e.u32(0, SUMMARY_MAGIC);
        e.u32(8, self.data_crc);
        e.u16(12, self.flags);
        e.u32(16, self.nblocks);
        e.u32(20, self.ninoblocks);
        e.u32(24, self.finfos.len() as u32);
        e.u64(32, self.fs_id);
        e.u64(40, self.serial);
        e.i64(48, self.clock);
        e.u64(56, self.next_segment);
        let mut at = SUMMARY_HEADER;
        for f in &self.finfos {
            e.u32(at, f.ino as u32);
            e.u32(at + 4, f.version);
            e.u32(at + 8, f.lbns.len() as u32);
            e.u32(at + 12, f.last_length);
            at += FINFO_HEADER;
            for &lbn in &f.lbns {
                e.i64(at, lbn);
                at += 8;
            }
        }
        let crc = crc32c_skipping(&out, SUM_CRC);
        Encoder::new(&mut out).u32(SUM_CRC, crc);
        out
    }

    /// Decodes and validates a summary block read from block `addr`.
    pub fn decode(bytes: &[u8], addr: Daddr) -> Result<Summary> {
        let bad = |why: &str| Error::corrupt("segment summary", addr, why.to_string());
        let d = Decoder::new(bytes);
        let oob = |_| bad("field out of bounds");
        if d.u32(0).map_err(oob)? != SUMMARY_MAGIC {
            return Err(bad("no summary magic"));
        }
        if d.u32(SUM_CRC).map_err(oob)? != crc32c_skipping(bytes, SUM_CRC) {
            return Err(bad("checksum mismatch"));
        }
        let nfinfo = d.u32(24).map_err(oob)? as usize;
        let mut s = Summary {
            data_crc: d.u32(8).map_err(oob)?,
            flags: d.u16(12).map_err(oob)?,
            nblocks: d.u32(16).map_err(oob)?,
            ninoblocks: d.u32(20).map_err(oob)?,
            fs_id: d.u64(32).map_err(oob)?,
            serial: d.u64(40).map_err(oob)?,
            clock: d.i64(48).map_err(oob)?,
            next_segment: d.u64(56).map_err(oob)?,
            finfos: Vec::new(),
        };
        let mut at = SUMMARY_HEADER;
        let mut counted = 0usize;
        for _ in 0..nfinfo {
            let n = d.u32(at + 8).map_err(oob)? as usize;
            if n > bytes.len() / 8 {
                return Err(bad("FINFO block count larger than the summary"));
            }
            let mut f = Finfo {
                ino: d.u32(at).map_err(oob)? as Ino,
                version: d.u32(at + 4).map_err(oob)?,
                last_length: d.u32(at + 12).map_err(oob)?,
                lbns: Vec::with_capacity(n),
            };
            at += FINFO_HEADER;
            for _ in 0..n {
                f.lbns.push(d.i64(at).map_err(oob)?);
                at += 8;
            }
            counted += n;
            s.finfos.push(f);
        }
        if counted + s.ninoblocks as usize != s.nblocks as usize {
            return Err(bad("block counts disagree"));
        }
        Ok(s)
    }
}

/// The ifile's first block: totals the cleaner reads, and the free-inode list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CleanerInfo {
    /// Segments that are clean.
    pub clean_segments: u64,
    /// Segments that are dirty.
    pub dirty_segments: u64,
    /// First inode on the free list (0: empty).
    pub free_head: Ino,
    /// Inode numbers covered by the inode map.
    pub ninodes: u64,
}

/// One segment usage table entry (24 bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SegUse {
    /// Bytes of live blocks and inodes in the segment.
    pub live_bytes: u32,
    /// `SEGUSE_*` flags.
    pub flags: u32,
    /// The write clock when the segment was last written.
    pub lastmod: WriteClock,
    /// Partial segment summaries written into it.
    pub nsums: u32,
    /// Inode blocks written into it.
    pub ninos: u32,
}

/// Bytes of a segment usage entry.
pub const SEGUSE_BYTES: usize = 24;

/// One inode map entry (16 bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ImapEntry {
    /// Bumped whenever the inode number is freed: blocks of older versions are dead.
    pub version: u32,
    /// Next free inode when this one is free (0 ends the list).
    pub next_free: u32,
    /// Block holding the inode; 0 when the inode is free.
    pub daddr: Daddr,
}

/// Bytes of an inode map entry.
pub const IMAP_BYTES: usize = 16;

/// Segment usage entries in one ifile block.
pub fn segtab_entries_per_block(block_size: u32) -> usize {
    (block_size as usize - IFILE_TRAILER) / SEGUSE_BYTES
}

/// Inode map entries in one ifile block.
pub fn imap_entries_per_block(block_size: u32) -> usize {
    (block_size as usize - IFILE_TRAILER) / IMAP_BYTES
}

/// Seals an ifile block: writes its trailer (CRC32C of the rest, magic).
pub fn seal_ifile_block(block: &mut [u8]) {
    let n = block.len();
    let crc = crate::format::crc32c(&block[..n - IFILE_TRAILER]);
    let mut e = Encoder::new(block);
    e.u32(n - 8, crc);
    e.u32(n - 4, IFILE_MAGIC);
}

/// Checks an ifile block's trailer.
pub fn check_ifile_block(block: &[u8], lbn: u64) -> Result<()> {
    let n = block.len();
    let d = Decoder::new(block);
    let bad = |why: &str| {
        Error::corrupt_at("ifile block", Location::FileBlock { ino: IFILE_INO, lbn }, why.to_string())
    };
    if n < IFILE_TRAILER || d.u32(n - 4).map_err(|_| bad("short"))? != IFILE_MAGIC {
        return Err(bad("no ifile magic"));
    }
    if d.u32(n - 8).map_err(|_| bad("short"))? != crate::format::crc32c(&block[..n - IFILE_TRAILER]) {
        return Err(bad("checksum mismatch"));
    }
    Ok(())
}

impl CleanerInfo {
    /// Encodes into an ifile block (sealed).
    pub fn encode(&self, block: &mut [u8]) {
        block.fill(0);
        let mut e = Encoder::new(block);
        e.u64(0, self.clean_segments);
        e.u64(8, self.dirty_segments);
        e.u64(16, self.free_head);
        e.u64(24, self.ninodes);
        seal_ifile_block(block);
    }

    /// Decodes a checked ifile block.
    pub fn decode(block: &[u8]) -> Result<CleanerInfo> {
        check_ifile_block(block, 0)?;
        let d = Decoder::new(block);
        let oob = |_| Error::corrupt_at("cleaner info", Location::Unknown, "short block");
        Ok(CleanerInfo {
            clean_segments: d.u64(0).map_err(oob)?,
            dirty_segments: d.u64(8).map_err(oob)?,
            free_head: d.u64(16).map_err(oob)?,
            ninodes: d.u64(24).map_err(oob)?,
        })
    }
}

impl SegUse {
    /// Encodes at byte `at` of an ifile block.
    pub fn encode(&self, block: &mut [u8], at: usize) {
        let mut e = Encoder::new(block);
        e.u32(at, self.live_bytes);
        e.u32(at + 4, self.flags);
        e.i64(at + 8, self.lastmod);
        e.u32(at + 16, self.nsums);
        e.u32(at + 20, self.ninos);
    }

    /// Decodes at byte `at` of a checked ifile block.
    pub fn decode(block: &[u8], at: usize) -> Option<SegUse> {
        let d = Decoder::new(block);
        Some(SegUse {
            live_bytes: d.u32(at).ok()?,
            flags: d.u32(at + 4).ok()?,
            lastmod: d.i64(at + 8).ok()?,
            nsums: d.u32(at + 16).ok()?,
            ninos: d.u32(at + 20).ok()?,
        })
    }
}

impl ImapEntry {
    /// Encodes at byte `at` of an ifile block.
    pub fn encode(&self, block: &mut [u8], at: usize) {
        let mut e = Encoder::new(block);
        e.u32(at, self.version);
        e.u32(at + 4, self.next_free);
        e.u64(at + 8, self.daddr.get());
    }

    /// Decodes at byte `at` of a checked ifile block.
    pub fn decode(block: &[u8], at: usize) -> Option<ImapEntry> {
        let d = Decoder::new(block);
        Some(ImapEntry {
            version: d.u32(at).ok()?,
            next_free: d.u32(at + 4).ok()?,
            daddr: Daddr::new(d.u64(at + 8).ok()?),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample_superblock() -> Superblock {
        Superblock {
            block_size: 4096,
            segment_size: 1 << 20,
            nsegments: 64,
            fs_id: 42,
            created: 7,
            sb_segments: [0, 21, 42, 63],
            ncopies: 4,
            segtab_blocks: 1,
            checkpoint: Checkpoint {
                serial: 3,
                ifile_daddr: Daddr::new(9),
                log_segment: 0,
                log_offset: 12,
                next_segment: 1,
                ..Checkpoint::default()
            },
        }
    }

    #[test]
    fn superblock_round_trips_and_rejects_damage() {
        let sb = sample_superblock();
        let mut bytes = sb.encode();
        assert_eq!(Superblock::decode(&bytes, 0).expect("valid"), sb);
        bytes[150] ^= 1;
        assert!(Superblock::decode(&bytes, 0).is_err());
        assert!(Superblock::decode(&[0u8; 100], 0).is_err());
    }

    /// Re-encodes `bytes` as format version `version` with a valid CRC.
    fn as_version(mut bytes: Vec<u8>, version: u32) -> Vec<u8> {
        Encoder::new(&mut bytes).u32(8, version);
        let crc = crc32c_skipping(&bytes, SB_CRC);
        Encoder::new(&mut bytes).u32(SB_CRC, crc);
        bytes
    }

    #[test]
    fn orphan_head_round_trips_and_a_version_3_image_reads_as_an_empty_list() {
        let mut sb = sample_superblock();
        sb.checkpoint.orphan_head = 77;
        assert_eq!(Superblock::decode(&sb.encode(), 0).expect("valid").checkpoint.orphan_head, 77);
        let old = as_version(sample_superblock().encode(), 3);
        assert_eq!(Superblock::decode(&old, 0).expect("version 3 is read").checkpoint.orphan_head, 0);
        let too_old = as_version(sample_superblock().encode(), 2);
        let err = Superblock::decode(&too_old, 0).expect_err("version 2 is refused").to_string();
        assert!(err.contains("version 2"), "{err}");
    }

    /// Serial numbers near the top would wrap at the next checkpoint, and
    /// an older copy would then look the newest.
    #[test]
    fn a_superblock_whose_serials_would_wrap_is_refused() {
        for checkpoint in [
            Checkpoint { serial: u64::MAX, ..sample_superblock().checkpoint },
            Checkpoint { next_summary_serial: u64::MAX - (1 << 32), ..sample_superblock().checkpoint },
        ] {
            let sb = Superblock { checkpoint, ..sample_superblock() };
            let err = Superblock::decode(&sb.encode(), 0).expect_err("refused").to_string();
            assert!(err.contains("serial"), "{err}");
        }
    }

    #[test]
    fn superblock_with_impossible_geometry_is_rejected_even_with_a_good_checksum() {
        let mut sb = sample_superblock();
        sb.block_size = 3000;
        assert!(Superblock::decode(&sb.encode(), 0).is_err());
    }

    #[test]
    fn summary_round_trips_and_rejects_damage() {
        let s = Summary {
            fs_id: 1,
            serial: 99,
            clock: 5,
            next_segment: 4,
            flags: SS_DIROP | SS_CONT,
            nblocks: 4,
            ninoblocks: 1,
            data_crc: 0xdead,
            finfos: vec![Finfo { ino: 5, version: 2, last_length: 100, lbns: vec![0, 1, -12] }],
        };
        let mut bytes = s.encode(4096);
        assert_eq!(Summary::decode(&bytes, Daddr::new(10)).expect("valid"), s);
        bytes[70] ^= 4;
        assert!(Summary::decode(&bytes, Daddr::new(10)).is_err());
    }

    #[test]
    fn ifile_block_trailer_detects_a_flipped_bit() {
        let mut block = vec![0u8; 4096];
        CleanerInfo { clean_segments: 5, dirty_segments: 2, free_head: 3, ninodes: 100 }.encode(&mut block);
        assert_eq!(CleanerInfo::decode(&block).expect("valid").ninodes, 100);
        block[9] ^= 1;
        assert!(CleanerInfo::decode(&block).is_err());
    }
}
