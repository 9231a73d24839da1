//! FFS on-disk structures: the superblock (at byte 0, and a copy at the
//! front of every cylinder group) and the cylinder-group area (header,
//! inode bitmap, fragment bitmap, cluster summary, cluster bitmap). Each has
//! an encoder and a validating decoder; `docs/FORMAT.md` ("FFS") gives every
//! byte. Inodes are the shared 256-byte format (`format::inode`), each
//! checked by its own CRC; an inode block has no checksum of its own.
//!
//! Addresses in errors are fragment numbers (FFS disk addresses).

use super::bitmap::Bitmap;
use super::cg::{CylinderGroup, GroupCounts, MAX_FRAGS_PER_BLOCK};
use super::geometry::{Geometry, CG_HEADER_BYTES};
use super::Frag;
use crate::error::Error;
use crate::format::codec::{crc32c_skipping, Decoder, Encoder};
use crate::format::{Ino, TimeNs};
use crate::Result;

/// Magic at byte 0 of every FFS superblock copy (an LFS image has
/// `fslabLFS` there, so one read at offset 0 tells the layouts apart).
pub const SUPERBLOCK_MAGIC: &[u8; 8] = b"fslabFFS";
/// The FFS format version this code writes (at mkfs) and reads. Version 3
/// checksums indirect blocks per sector (`format::blockno`); versions 1
/// and 2 carry a trailer, and keep it: an image keeps the version it was
/// made with. Version 4 adds the journal's fields (superblock bytes
/// 168..216), zero on an image without a journal; version 5 a log on a
/// device of its own (journal kind 3, bytes 216..488); version 6 the
/// directory-placement policy (bytes 488..500).
pub const FORMAT_VERSION: u32 = 6;
/// The first version that records the directory-placement policy; an
/// older image places directories by the old policy ([`DirPref::Old`]).
pub const DIRPREF_VERSION: u32 = 6;
/// The expected average file size, in bytes, the new directory placement
/// plans for (FreeBSD's `AVFILESIZ`, `tunefs -f`).
pub const DEFAULT_AVGFILESIZE: u32 = 16384;
/// The expected number of files in a directory, which the new directory
/// placement plans for (FreeBSD's `AFPDIR`, `tunefs -s`).
pub const DEFAULT_AVGFPDIR: u32 = 64;
/// The first version whose indirect blocks are sectored.
pub const SECTORED_INDIRECT_VERSION: u32 = 3;
/// The oldest FFS format version this code reads: version 1 lacks only the
/// orphan list, whose fields (superblock byte 160, inode byte 152) are zero
/// there, so it reads as an empty list.
pub const OLDEST_READABLE_VERSION: u32 = 1;
/// Bytes of a superblock (it occupies the first block of its group).
pub const SUPERBLOCK_BYTES: usize = 4096;
/// Magic at byte 0 of every cylinder-group area ("FFCG" in a hex dump).
pub const CG_MAGIC: u32 = 0x4743_4646;
/// Superblock flag: unmounted cleanly; the totals and every group agree.
pub const SB_CLEAN: u32 = 0x1;
/// Superblock flag: the image is (or was, at a crash) mounted with soft
/// updates, which leave nothing on it after a crash but leaks: it may be
/// mounted again without fsck.
pub const SB_SOFTDEP: u32 = 0x2;
/// Superblock flag: the image is (or was, at a crash) mounted with its
/// journal: a crash left nothing on it that replaying the log does not
/// put right.
pub const SB_JOURNALED: u32 = 0x4;
/// Superblock flag: move a file's delayed blocks to a contiguous free run
/// as it is written (`realloc`, McKusick's `ffs_reallocblks`; Smith and
/// Seltzer 1997). A choice made at mkfs, as FreeBSD keeps its own choices
/// (`FS_DOSOFTDEP`, `FS_TRIM`) in `fs_flags`; a mount may override it.
/// Readers that do not know it ignore it and simply do not move blocks:
/// it changes where blocks go, never what the image means.
pub const SB_REALLOC: u32 = 0x8;

const SB_CRC: usize = 12;
/// Where the journal's checkpoint (tail, tail sequence) lies in the
/// superblock: written by the journal itself, never from a logged image.
const SB_JOURNAL_TAIL: usize = 192;
const SB_JOURNAL_TAIL_SEQ: usize = 200;
/// Where a log device's identity and path lie in the superblock.
const SB_LOG_UUID: usize = 216;
const SB_LOG_PATH: usize = 232;
/// Where the directory-placement policy and its two parameters lie.
const SB_DIRPREF: usize = 488;
const SB_AVGFILESIZE: usize = 492;
const SB_AVGFPDIR: usize = 496;

/// Where an FFS keeps its journal, if it has one (2000 paper §5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum JournalKind {
    /// No journal: the image cannot be mounted with `integrity=journal`.
    #[default]
    None,
    /// A preallocated region inside the file system, in one group's data
    /// area (LFFS-file, §5.1), written in clusters.
    File,
    /// A region past the last cylinder group, outside the file system
    /// (LFFS-wafs on the same disk, §5.2), written a log block at a time.
    Wafs,
    /// A log on a device of its own (LFFS-wafs on a second disk, §5.2),
    /// written a log block at a time; the superblock names the device by
    /// path and identity ([`LogDeviceName`]).
    Device,
}

impl JournalKind {
    /// The name `fslab mkfs --journal` takes and `fslab dump` shows.
    pub fn name(self) -> &'static str {
        match self {
            JournalKind::None => "none",
            JournalKind::File => "file",
            JournalKind::Wafs => "wafs",
            JournalKind::Device => "device",
        }
    }

    fn code(self) -> u32 {
        match self {
            JournalKind::None => 0,
            JournalKind::File => 1,
            JournalKind::Wafs => 2,
            JournalKind::Device => 3,
        }
    }
}

/// Bytes the superblock keeps for a log device's path (NUL-padded).
pub const LOG_PATH_BYTES: usize = 256;

/// The log device as the superblock names it: the identity its header
/// carries (random at mkfs), and where it was when mkfs formatted it.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct LogDeviceName {
    /// The identity in the log device's header; a device whose header
    /// carries another is not this file system's log.
    pub uuid: [u8; 16],
    path: [u8; LOG_PATH_BYTES],
}

impl LogDeviceName {
    /// The name of the log device with `uuid` at `path`; fails if the path
    /// is empty or does not fit (with its terminating NUL).
    pub fn new(uuid: [u8; 16], path: &str) -> std::result::Result<LogDeviceName, String> {
        let bytes = path.as_bytes();
        if bytes.is_empty() || bytes.len() >= LOG_PATH_BYTES || bytes.contains(&0) {
            return Err(format!(
                "a log device's path must be 1 to {} bytes without NUL: {path:?}",
                LOG_PATH_BYTES - 1
            ));
        }
        let mut name = LogDeviceName { uuid, path: [0; LOG_PATH_BYTES] };
        name.path[..bytes.len()].copy_from_slice(bytes);
        Ok(name)
    }

    /// The path the log device had at mkfs.
    pub fn path(&self) -> String {
        let len = self.path.iter().position(|&b| b == 0).unwrap_or(LOG_PATH_BYTES);
        String::from_utf8_lossy(&self.path[..len]).into_owned()
    }

    /// The identity as text, 32 hex digits in 8-4-4-4-12 groups.
    pub fn uuid_text(&self) -> String {
        let hex: String = self.uuid.iter().map(|b| format!("{b:02x}")).collect();
        format!("{}-{}-{}-{}-{}", &hex[..8], &hex[8..12], &hex[12..16], &hex[16..20], &hex[20..])
    }
}

impl Default for LogDeviceName {
    fn default() -> Self {
        LogDeviceName { uuid: [0; 16], path: [0; LOG_PATH_BYTES] }
    }
}

impl std::fmt::Debug for LogDeviceName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogDeviceName").field("uuid", &self.uuid_text()).field("path", &self.path()).finish()
    }
}

/// The journal as the superblock records it (FORMAT.md, "Journal").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct JournalInfo {
    /// Where the log lives; `None` for an image without one.
    pub kind: JournalKind,
    /// Bytes of one log write: 64 KiB for `file`, 4 KiB for `wafs`
    /// (2000 paper §8.1).
    pub unit: u32,
    /// First fragment of the log region.
    pub start: Frag,
    /// Bytes in the log region (a multiple of the log block, 4096).
    pub bytes: u64,
    /// The checkpoint: the log position (bytes since the log began, never
    /// wrapped) of the oldest transaction whose changes may not all be at
    /// home yet. Replay starts here.
    pub tail: u64,
    /// The sequence number of the transaction at `tail`.
    pub tail_seq: u64,
    /// Mounts that have written the image: each transaction carries the
    /// generation it was written in.
    pub generation: u64,
    /// For a [`JournalKind::Device`] log, the device; blank otherwise.
    pub device: LogDeviceName,
}

impl JournalInfo {
    /// Whether the image has a journal.
    pub fn present(&self) -> bool {
        self.kind != JournalKind::None
    }
}

/// Writes the journal's checkpoint into an encoded superblock and seals it
/// again: what the journal does to every copy of the primary superblock
/// it lets reach the disk, whatever image of it was logged.
pub fn patch_journal_checkpoint(bytes: &mut [u8], tail: u64, tail_seq: u64) {
    if bytes.len() < SUPERBLOCK_BYTES {
        return;
    }
    let mut e = Encoder::new(bytes);
    e.u64(SB_JOURNAL_TAIL, tail);
    e.u64(SB_JOURNAL_TAIL_SEQ, tail_seq);
    let crc = crc32c_skipping(&bytes[..SUPERBLOCK_BYTES], SB_CRC);
    Encoder::new(bytes).u32(SB_CRC, crc);
}
const CG_CRC: usize = 4;

/// What `rotdelay` is given in (1993 paper §5.2.1 speaks of milliseconds,
/// the 1995 paper §2 of blocks).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RotDelay {
    /// No gap: blocks of a file are laid out back to back.
    Off,
    /// A gap long enough for the disk to turn this many milliseconds, from
    /// the sectors per track and revolutions per second (4.4BSD's form).
    Millis(u32),
    /// A gap of this many whole blocks.
    Blocks(u32),
}

/// What `realloccg` asks for when a fragment must move (4.4BSD `fs_optim`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Optim {
    /// Take a whole block, so later growth extends in place.
    Time,
    /// Take exactly the fragments needed.
    Space,
}

/// Where a new directory's inode goes (2002 paper §2.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DirPref {
    /// 4.4BSD's `ffs_dirpref`: every directory to the group with the
    /// fewest directories among those with at least the average number of
    /// free inodes, spreading directories (and their files) over the disk.
    Old,
    /// Orlov's 2001 policy (FreeBSD 4.5 on): a directory under the root is
    /// spread as before; any other goes near its parent while the parent's
    /// group has room for it and its files.
    New,
}

impl DirPref {
    /// The name `fslab mkfs --dirpref` takes and `fslab dump` shows.
    pub fn name(self) -> &'static str {
        match self {
            DirPref::Old => "old",
            DirPref::New => "new",
        }
    }

    fn code(self) -> u32 {
        match self {
            DirPref::Old => 0,
            DirPref::New => 1,
        }
    }
}

/// Allocation parameters kept in the superblock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    /// Blocks a file may take from one group before moving on (`fs_maxbpg`).
    pub maxbpg: u32,
    /// Percent of the data kept back from users other than root (`fs_minfree`).
    pub minfree: u32,
    /// Time or space, switched by `realloccg` as fragmentation changes.
    pub optim: Optim,
    /// The gap after every `maxcontig` contiguous blocks.
    pub rotdelay: RotDelay,
    /// 512-byte sectors per track (`fs_nsect`), for a rotdelay in ms.
    pub sectors_per_track: u32,
    /// Revolutions per second (`fs_rps`), for a rotdelay in ms.
    pub revolutions_per_second: u32,
    /// How a new directory's group is chosen (format version 6; older
    /// images read as [`DirPref::Old`]).
    pub dirpref: DirPref,
    /// Expected bytes per file, for [`DirPref::New`] (`fs_avgfilesize`).
    pub avgfilesize: u32,
    /// Expected files per directory, for [`DirPref::New`] (`fs_avgfpdir`).
    pub avgfpdir: u32,
}

/// File-system-wide counts (4.4BSD `fs_cstotal`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Totals {
    /// Whole free blocks.
    pub free_blocks: u64,
    /// Free fragments in blocks that are not wholly free.
    pub free_frags: u64,
    /// Free inodes.
    pub free_inodes: u64,
    /// Directories.
    pub directories: u64,
}

impl Totals {
    /// Adds (or, with `sign` −1, removes) one group's counts.
    pub fn add(&mut self, c: &GroupCounts, sign: i64) {
        self.free_blocks = self.free_blocks.wrapping_add_signed(sign * c.free_blocks as i64);
        self.free_frags = self.free_frags.wrapping_add_signed(sign * c.free_frags as i64);
        self.free_inodes = self.free_inodes.wrapping_add_signed(sign * c.free_inodes as i64);
        self.directories = self.directories.wrapping_add_signed(sign * c.directories as i64);
    }
}

/// The FFS superblock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Superblock {
    /// Sizes and group layout.
    pub geometry: Geometry,
    /// Allocation parameters.
    pub policy: Policy,
    /// Random identity chosen at mkfs; every cylinder group carries it.
    pub fs_id: u64,
    /// When mkfs ran (ns since the epoch).
    pub created: TimeNs,
    /// When this copy was written.
    pub time: TimeNs,
    /// `SB_CLEAN`, `SB_SOFTDEP`, `SB_JOURNALED` (the state a mount left)
    /// and `SB_REALLOC` (a choice made at mkfs).
    pub flags: u32,
    /// Counts as of when this copy was written (the groups are the truth).
    pub totals: Totals,
    /// The first inode of the orphan list (0: empty): inodes with no name
    /// that are still open, chained by their `next_orphan`.
    pub orphan_head: Ino,
    /// The format version the image was made with (what it is written
    /// back with).
    pub version: u32,
    /// The journal, if the image has one (format version 4).
    pub journal: JournalInfo,
}

impl Superblock {
    /// How this image's indirect blocks are laid out: sectored from
    /// format version 3, with a trailer before.
    pub fn indirect_geometry(&self) -> crate::format::blockno::Geometry {
        if self.version >= SECTORED_INDIRECT_VERSION {
            crate::format::blockno::Geometry::sectored(self.geometry.block_size)
        } else {
            crate::format::blockno::Geometry::new(self.geometry.block_size)
        }
    }

    /// Whether blocks are moved to contiguous runs as files are written,
    /// unless a mount says otherwise ([`SB_REALLOC`]).
    pub fn realloc(&self) -> bool {
        self.flags & SB_REALLOC != 0
    }

    /// Encodes into a [`SUPERBLOCK_BYTES`] buffer.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = vec![0u8; SUPERBLOCK_BYTES];
        let g = &self.geometry;
        let p = &self.policy;
        let mut e = Encoder::new(&mut out);
        e.bytes(0, SUPERBLOCK_MAGIC);
        e.u32(8, self.version);
        e.u32(16, g.block_size);
        e.u32(20, g.frag_size);
        e.u32(24, g.frags_per_block);
        e.u32(28, g.ncg);
        e.u64(32, g.total_frags);
        e.u32(40, g.fpg);
        e.u32(44, g.ipg);
        e.u32(48, g.cg_offset());
        e.u32(52, g.inode_table_offset());
        e.u32(56, g.data_offset());
        e.u32(60, g.cg_sections().end as u32);
        e.u64(64, self.fs_id);
        e.i64(72, self.created);
        e.i64(80, self.time);
        e.u32(88, self.flags);
        e.u32(92, p.minfree);
        e.u32(96, g.maxcontig);
        e.u32(100, p.maxbpg);
        let (ms, blocks) = match p.rotdelay {
            RotDelay::Off => (0, 0),
            RotDelay::Millis(ms) => (ms, 0),
            RotDelay::Blocks(b) => (0, b),
        };
        e.u32(104, ms);
        e.u32(108, blocks);
        e.u32(112, p.sectors_per_track);
        e.u32(116, p.revolutions_per_second);
        e.u32(120, if p.optim == Optim::Space { 1 } else { 0 });
        let t = &self.totals;
        e.u64(128, t.free_blocks);
        e.u64(136, t.free_frags);
        e.u64(144, t.free_inodes);
        e.u64(152, t.directories);
        e.u64(160, self.orphan_head);
        // An older image keeps its version and so these bytes' zeros: it
        // reads back as what it is, an image placed by the old policy.
        if self.version >= DIRPREF_VERSION {
            e.u32(SB_DIRPREF, p.dirpref.code());
            e.u32(SB_AVGFILESIZE, p.avgfilesize);
            e.u32(SB_AVGFPDIR, p.avgfpdir);
        }
        let j = &self.journal;
        if j.present() {
            e.u32(168, j.kind.code());
            e.u32(172, j.unit);
            e.u64(176, j.start);
            e.u64(184, j.bytes);
            e.u64(SB_JOURNAL_TAIL, j.tail);
            e.u64(SB_JOURNAL_TAIL_SEQ, j.tail_seq);
            e.u64(208, j.generation);
            if j.kind == JournalKind::Device {
                e.bytes(SB_LOG_UUID, &j.device.uuid);
                e.bytes(SB_LOG_PATH, &j.device.path);
            }
        }
        let crc = crc32c_skipping(&out, SB_CRC);
        Encoder::new(&mut out).u32(SB_CRC, crc);
        out
    }

    /// Whether `bytes` begin with the FFS superblock magic (valid or not).
    pub fn has_magic(bytes: &[u8]) -> bool {
        bytes.get(..8) == Some(&SUPERBLOCK_MAGIC[..])
    }

    /// Decodes and validates a superblock copy read from fragment `addr`.
    pub fn decode(bytes: &[u8], addr: Frag) -> Result<Superblock> {
        let bad = |why: String| Error::corrupt("FFS superblock", addr, why);
        let bytes = bytes.get(..SUPERBLOCK_BYTES).ok_or_else(|| bad("short read".into()))?;
        if !Self::has_magic(bytes) {
            return Err(bad("no FFS magic".into()));
        }
        let d = Decoder::new(bytes);
        let oob = |_| bad("field out of bounds".into());
        // The checksum before the version: a damaged copy must read as
        // damaged, so a reader tries another copy.
        if d.u32(SB_CRC).map_err(oob)? != crc32c_skipping(bytes, SB_CRC) {
            return Err(bad("checksum mismatch".into()));
        }
        let version = d.u32(8).map_err(oob)?;
        if !(OLDEST_READABLE_VERSION..=FORMAT_VERSION).contains(&version) {
            return Err(Error::Foreign(format!(
                "fslab FFS format version {version} is not supported (this build reads versions \
                 {OLDEST_READABLE_VERSION} to {FORMAT_VERSION})"
            )));
        }
        let u32_at = |o| d.u32(o).map_err(oob);
        let geometry = Geometry::new(
            u32_at(16)?,
            u32_at(20)?,
            u32_at(28)?,
            u32_at(40)?,
            u32_at(44)?,
            d.u64(32).map_err(oob)?,
            u32_at(96)?,
        )
        .map_err(bad)?;
        // Derived fields are stored for readers of a hex dump; they must
        // agree with the arithmetic, or this is not the layout we think.
        let derived = [
            (24, geometry.frags_per_block, "fragments per block"),
            (48, geometry.cg_offset(), "cylinder-group area offset"),
            (52, geometry.inode_table_offset(), "inode table offset"),
            (56, geometry.data_offset(), "data offset"),
            (60, geometry.cg_sections().end as u32, "cylinder-group area size"),
        ];
        for (at, want, what) in derived {
            let got = u32_at(at)?;
            if got != want {
                return Err(bad(format!("{what} is {got}, the geometry gives {want}")));
            }
        }
        let rotdelay = match (u32_at(104)?, u32_at(108)?) {
            (0, 0) => RotDelay::Off,
            (ms, 0) => RotDelay::Millis(ms),
            (0, b) => RotDelay::Blocks(b),
            _ => return Err(bad("rotdelay given both in milliseconds and in blocks".into())),
        };
        let optim = match u32_at(120)? {
            0 => Optim::Time,
            1 => Optim::Space,
            o => return Err(bad(format!("optimization {o} is neither time (0) nor space (1)"))),
        };
        let (dirpref, avgfilesize, avgfpdir) = if version >= DIRPREF_VERSION {
            let dirpref = match u32_at(SB_DIRPREF)? {
                0 => DirPref::Old,
                1 => DirPref::New,
                k => return Err(bad(format!("directory placement {k} is neither old (0) nor new (1)"))),
            };
            (dirpref, u32_at(SB_AVGFILESIZE)?, u32_at(SB_AVGFPDIR)?)
        } else {
            (DirPref::Old, DEFAULT_AVGFILESIZE, DEFAULT_AVGFPDIR)
        };
        let policy = Policy {
            maxbpg: u32_at(100)?,
            minfree: u32_at(92)?,
            optim,
            rotdelay,
            sectors_per_track: u32_at(112)?,
            revolutions_per_second: u32_at(116)?,
            dirpref,
            avgfilesize,
            avgfpdir,
        };
        check_policy(&policy).map_err(bad)?;
        let journal = decode_journal(&d).map_err(bad)?;
        Ok(Superblock {
            geometry,
            policy,
            fs_id: d.u64(64).map_err(oob)?,
            created: d.i64(72).map_err(oob)?,
            time: d.i64(80).map_err(oob)?,
            flags: u32_at(88)?,
            totals: Totals {
                free_blocks: d.u64(128).map_err(oob)?,
                free_frags: d.u64(136).map_err(oob)?,
                free_inodes: d.u64(144).map_err(oob)?,
                directories: d.u64(152).map_err(oob)?,
            },
            orphan_head: d.u64(160).map_err(oob)?,
            version,
            journal,
        })
    }
}

/// The journal's fields (zero before version 4), checked for what the
/// superblock alone can say; where the region lies against the groups is
/// checked at mount and by fsck.
fn decode_journal(d: &Decoder) -> std::result::Result<JournalInfo, String> {
    let oob = |_| "journal field out of bounds".to_string();
    let kind = match d.u32(168).map_err(oob)? {
        0 => return Ok(JournalInfo::default()),
        1 => JournalKind::File,
        2 => JournalKind::Wafs,
        3 => JournalKind::Device,
        k => return Err(format!("journal kind {k} is none of none (0), file (1), wafs (2), device (3)")),
    };
    let mut device = LogDeviceName::default();
    if kind == JournalKind::Device {
        device.uuid.copy_from_slice(d.bytes(SB_LOG_UUID, 16).map_err(oob)?);
        device.path.copy_from_slice(d.bytes(SB_LOG_PATH, LOG_PATH_BYTES).map_err(oob)?);
        if device.uuid == [0; 16] || device.path[0] == 0 || device.path[LOG_PATH_BYTES - 1] != 0 {
            return Err("the journal's log device has no identity, or no path, or one not ended".into());
        }
    }
    let j = JournalInfo {
        kind,
        unit: d.u32(172).map_err(oob)?,
        start: d.u64(176).map_err(oob)?,
        bytes: d.u64(184).map_err(oob)?,
        tail: d.u64(SB_JOURNAL_TAIL).map_err(oob)?,
        tail_seq: d.u64(SB_JOURNAL_TAIL_SEQ).map_err(oob)?,
        generation: d.u64(208).map_err(oob)?,
        device,
    };
    if !j.unit.is_power_of_two() || !(LOG_BLOCK..=MAX_LOG_UNIT).contains(&j.unit) {
        return Err(format!(
            "journal write unit {} is not a power of two from {LOG_BLOCK} to {MAX_LOG_UNIT}",
            j.unit
        ));
    }
    if j.bytes > MAX_LOG_BYTES {
        return Err(format!("journal of {} bytes is larger than the most, {MAX_LOG_BYTES}", j.bytes));
    }
    if j.bytes < MIN_LOG_BYTES || !j.bytes.is_multiple_of(u64::from(j.unit)) {
        return Err(format!(
            "journal of {} bytes is not a multiple of its write unit {} of at least {MIN_LOG_BYTES}",
            j.bytes, j.unit
        ));
    }
    // Positions only grow, by a transaction's bytes at a time, and the
    // generation by one a mount: values near the top are no count a log
    // reached, and would wrap on the next commit.
    if j.start > MAX_LOG_POSITION || j.tail > MAX_LOG_POSITION || j.tail_seq > MAX_LOG_POSITION {
        return Err("journal start, tail or sequence number is out of range".into());
    }
    if j.generation > MAX_LOG_POSITION {
        return Err("journal generation is out of range".into());
    }
    Ok(j)
}

/// Bytes of a log block: the journal's smallest write (2000 paper §8.1,
/// LFFS-wafs).
pub const LOG_BLOCK: u32 = 4096;
/// The largest log write unit a superblock may name.
pub const MAX_LOG_UNIT: u32 = 1 << 20;
/// The greatest journal start, tail position, sequence number or
/// generation a superblock may hold (2^62).
pub const MAX_LOG_POSITION: u64 = 1 << 62;
/// The smallest journal: room for the largest transaction twice over.
pub const MIN_LOG_BYTES: u64 = 1 << 20;
/// The largest journal (replay reads it whole into memory).
pub const MAX_LOG_BYTES: u64 = 1 << 30;

/// Checks allocation parameters; says what is wrong.
pub fn check_policy(p: &Policy) -> std::result::Result<(), String> {
    if p.maxbpg == 0 {
        return Err("maxbpg must be at least 1".into());
    }
    if p.minfree > 99 {
        return Err(format!("minfree {}% is more than 99%", p.minfree));
    }
    if p.avgfilesize == 0 || p.avgfpdir == 0 {
        return Err(format!(
            "the average file size ({}) and files per directory ({}) must be at least 1",
            p.avgfilesize, p.avgfpdir
        ));
    }
    if let RotDelay::Millis(ms) = p.rotdelay {
        if ms > 1000 {
            return Err(format!("rotdelay {ms} ms is more than a second"));
        }
        if p.sectors_per_track == 0 || p.revolutions_per_second == 0 {
            return Err(
                "a rotdelay in milliseconds needs sectors per track and revolutions per second".into()
            );
        }
        // Far above any drive's, and small enough that the gap's product
        // (ms × revolutions × sectors) cannot wrap.
        if p.sectors_per_track > 1 << 20 || p.revolutions_per_second > 1 << 16 {
            return Err(format!(
                "{} sectors per track at {} revolutions per second is beyond any disk",
                p.sectors_per_track, p.revolutions_per_second
            ));
        }
    }
    Ok(())
}

impl CylinderGroup {
    /// Encodes into the group's whole area (`geo.cg_blocks()` blocks).
    pub fn encode(&self, geo: &Geometry, fs_id: u64) -> Vec<u8> {
        let s = geo.cg_sections();
        let mut out = vec![0u8; geo.cg_blocks() as usize * geo.block_size as usize];
        let mut e = Encoder::new(&mut out);
        e.u32(0, CG_MAGIC);
        e.u64(8, fs_id);
        e.u32(16, self.index);
        e.u32(20, self.frags);
        e.i64(24, self.time);
        let c = &self.counts;
        e.u32(32, c.directories);
        e.u32(36, c.free_blocks);
        e.u32(40, c.free_inodes);
        e.u32(44, c.free_frags);
        e.u32(48, self.rotor);
        e.u32(52, self.frotor);
        e.u32(56, self.irotor);
        e.u32(60, self.initialised_inodes);
        for (i, n) in self.frsum.iter().enumerate() {
            e.u32(64 + 4 * i, *n);
        }
        e.bytes(s.inode_map, self.inodes_used.as_bytes());
        e.bytes(s.frag_map, self.frags_free.as_bytes());
        for (i, n) in self.cluster_sum.iter().enumerate().skip(1) {
            e.u32(s.cluster_sum + 4 * (i - 1), *n);
        }
        e.bytes(s.cluster_map, self.clusters_free.as_bytes());
        let crc = crc32c_skipping(&out[..s.end], CG_CRC);
        Encoder::new(&mut out).u32(CG_CRC, crc);
        out
    }

    /// Decodes and validates group `index`'s area read from its address:
    /// magic, checksum, file-system id and index first, then every
    /// invariant of [`CylinderGroup`] (counts recounted from the bitmaps,
    /// metadata never free), so a decoded group can be allocated from
    /// without further checks.
    pub fn decode(bytes: &[u8], geo: &Geometry, index: u32, fs_id: u64) -> Result<CylinderGroup> {
        let addr = geo.cg_addr(index);
        let bad = |why: String| Error::corrupt("cylinder group", addr, format!("group {index}: {why}"));
        let s = geo.cg_sections();
        let bytes = bytes.get(..s.end).ok_or_else(|| bad("short read".into()))?;
        let d = Decoder::new(bytes);
        let oob = |_| bad("field out of bounds".into());
        if d.u32(0).map_err(oob)? != CG_MAGIC {
            return Err(bad("no cylinder-group magic".into()));
        }
        if d.u32(CG_CRC).map_err(oob)? != crc32c_skipping(bytes, CG_CRC) {
            return Err(bad("checksum mismatch".into()));
        }
        if d.u64(8).map_err(oob)? != fs_id {
            return Err(bad("belongs to another file system (file-system id differs)".into()));
        }
        let stored_index = d.u32(16).map_err(oob)?;
        if stored_index != index {
            return Err(bad(format!("records itself as group {stored_index}")));
        }
        let frags = d.u32(20).map_err(oob)?;
        if frags != geo.group_frags(index) {
            return Err(bad(format!(
                "holds {frags} fragments, the geometry gives {}",
                geo.group_frags(index)
            )));
        }
        let map = |at: usize, end: usize, len: u32, what: &str| {
            Bitmap::from_bytes(&bytes[at..end], len)
                .ok_or_else(|| bad(format!("{what} marks bits past its end")))
        };
        let mut frsum = [0u32; MAX_FRAGS_PER_BLOCK];
        for (i, slot) in frsum.iter_mut().enumerate() {
            *slot = d.u32(64 + 4 * i).map_err(oob)?;
        }
        if frsum[0] != 0 || frsum[geo.frags_per_block as usize..].iter().any(|&n| n != 0) {
            return Err(bad("free-run counts outside 1 .. fragments per block".into()));
        }
        let mut cluster_sum = vec![0u32; geo.maxcontig as usize + 1];
        for (i, slot) in cluster_sum.iter_mut().enumerate().skip(1) {
            *slot = d.u32(s.cluster_sum + 4 * (i - 1)).map_err(oob)?;
        }
        let cg = CylinderGroup {
            index,
            time: d.i64(24).map_err(oob)?,
            frags,
            frags_per_block: geo.frags_per_block,
            data_offset: geo.data_offset(),
            maxcontig: geo.maxcontig,
            inodes_per_block: geo.inodes_per_block(),
            counts: GroupCounts {
                directories: d.u32(32).map_err(oob)?,
                free_blocks: d.u32(36).map_err(oob)?,
                free_inodes: d.u32(40).map_err(oob)?,
                free_frags: d.u32(44).map_err(oob)?,
            },
            rotor: d.u32(48).map_err(oob)?,
            frotor: d.u32(52).map_err(oob)?,
            irotor: d.u32(56).map_err(oob)?,
            initialised_inodes: d.u32(60).map_err(oob)?,
            frsum,
            inodes_used: map(s.inode_map, s.frag_map, geo.ipg, "inode bitmap")?,
            frags_free: map(s.frag_map, s.cluster_sum, geo.fpg, "fragment bitmap")?,
            cluster_sum,
            clusters_free: map(s.cluster_map, s.end, geo.blocks_per_group(), "cluster bitmap")?,
        };
        cg.check().map_err(bad)?;
        Ok(cg)
    }
}

impl CylinderGroup {
    /// The initialised-inode mark of a group area that fails validation,
    /// when its magic is intact and the mark is one the geometry allows: the
    /// bound fsck keeps on which inode slots to read from a damaged group
    /// (its bitmaps are rebuilt anyway). `None` when nothing can be salvaged.
    pub fn salvage_initialised_inodes(bytes: &[u8], geo: &Geometry) -> Option<u32> {
        let d = Decoder::new(bytes);
        if d.u32(0).ok()? != CG_MAGIC {
            return None;
        }
        let mark = d.u32(60).ok()?;
        (mark <= geo.ipg && mark.is_multiple_of(geo.inodes_per_block())).then_some(mark)
    }
}

// The header must leave room for frsum at 64..96.
const _: () = assert!(64 + 4 * MAX_FRAGS_PER_BLOCK <= CG_HEADER_BYTES);

#[cfg(test)]
#[path = "layout_tests.rs"]
mod tests;
