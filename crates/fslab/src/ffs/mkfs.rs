//! Making an FFS image (`newfs`), reading its superblock and groups back,
//! and describing it (`dumpfs`).
//!
//! [`plan`] turns a device size and [`MkfsOptions`] into a superblock, with
//! every bad combination refused by name; [`mkfs`] writes it: each group's
//! superblock copy and cylinder-group area, a barrier, then the primary
//! superblock at byte 0 and a barrier. Inode tables are not written (they
//! are initialised lazily, `docs/design/ffs.md`); the root directory is the
//! namespace's to create.

use super::cg::CylinderGroup;
use super::geometry::{Geometry, MAX_MAXCONTIG, MIN_GROUP_DATA_BLOCKS};
use super::layout::{
    check_policy, DirPref, JournalInfo, JournalKind, Optim, Policy, RotDelay, Superblock, Totals,
    DEFAULT_AVGFILESIZE, DEFAULT_AVGFPDIR, LOG_BLOCK, MAX_LOG_BYTES, MIN_LOG_BYTES, SB_CLEAN, SB_REALLOC,
    SUPERBLOCK_BYTES,
};
use super::Frag;
use crate::error::Error;
use crate::format::inode::INODE_SIZE;
use crate::format::now_ns;
use crate::Result;
use disk::BlockDevice;
use std::fmt::Write as _;
use std::sync::Arc;

/// The longest cluster by default: 1 MiB, a segment's worth, so that FFS
/// and LFS make device writes of the same size on a disk of today (with the
/// papers' 64 KiB, a 1 GiB write through FUSE cost FFS sixteen device writes
/// for each of LFS's; docs/design/ffs.md, "Defaults (mkfs)").
pub const DEFAULT_CLUSTER_BYTES: u32 = 1 << 20;

/// Choices fixed when an FFS is made. The defaults are the papers' FFS —
/// 8 KiB blocks of 1 KiB fragments (1995 paper §2), no rotdelay (as the file systems of the 1995 paper §5 and the SCSI
/// disks with track buffers of §3.2), `minfree` 10% and time optimisation
/// (4.4BSD `newfs`) — except `maxcontig`: 1 MiB of blocks (`DEFAULT_CLUSTER_BYTES`),
/// where the papers' was 64 KiB, the largest transfer of their controllers,
/// and directory placement: the 2001 policy, FreeBSD's default since 4.5
/// (2002 paper §2.2), where the older papers' FFS had the old one.
/// The lab's FFS systems give theirs explicitly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MkfsOptions {
    /// Bytes per block: a power of two from 4 KiB to 64 KiB.
    pub block_size: u32,
    /// Bytes per fragment: the block size divided by 1, 2, 4 or 8.
    pub fragment_size: u32,
    /// Bytes per cylinder group (rounded down to whole blocks; a device
    /// smaller than this gets one group of its size).
    pub group_size: u64,
    /// Bytes of group per inode: each group gets its size divided by this,
    /// rounded up to a whole inode-table block.
    pub bytes_per_inode: u32,
    /// Blocks laid out contiguously before a rotdelay gap, and the longest
    /// cluster the summary counts; `None`: 64 KiB worth, at least 1.
    pub maxcontig: Option<u32>,
    /// The gap left after `maxcontig` contiguous blocks.
    pub rotdelay: RotDelay,
    /// 512-byte sectors per track, for a rotdelay in milliseconds.
    pub sectors_per_track: u32,
    /// Revolutions per second, for a rotdelay in milliseconds.
    pub revolutions_per_second: u32,
    /// Blocks a file takes from one group before moving on; `None`: the
    /// pointers in one indirect block (as 4.4BSD's `MAXBLKPG`).
    pub maxbpg: Option<u32>,
    /// Percent of the data area only root may fill.
    pub minfree: u32,
    /// `None`: time when `minfree` ≥ 10%, else space (as `newfs`).
    pub optim: Option<Optim>,
    /// A journal, for `integrity=journal` (2000 paper §5): where its log
    /// lives; `JournalKind::None` for none.
    pub journal: JournalKind,
    /// Bytes of the log; `None`: 1% of the device (LFFS-file's size,
    /// §5.1), from 1 MiB to 64 MiB (WAPBL's bounds).
    pub journal_bytes: Option<u64>,
    /// How new directories are placed.
    pub dirpref: DirPref,
    /// Expected bytes per file, for the new directory placement (FreeBSD
    /// `newfs -g`, `tunefs -f`).
    pub avgfilesize: u32,
    /// Expected files per directory, for the new directory placement
    /// (FreeBSD `newfs -h`, `tunefs -s`).
    pub avgfpdir: u32,
    /// Whether a file's delayed blocks are moved to a contiguous free run
    /// as it is written (`realloc`, Smith and Seltzer 1997; recorded as
    /// the superblock's `SB_REALLOC`; a mount may override it).
    pub realloc: bool,
    /// The file system's identity; `None`: a random one. It also seeds
    /// the random group where the new directory placement starts its
    /// search for a directory under the root (FreeBSD draws it from
    /// `random()`), so a fixed one makes those placements repeat: runs
    /// on virtual time that must repeat to the nanosecond give one.
    pub id: Option<u64>,
}

/// Bytes of one log write for a journal of `kind` (2000 paper §8.1:
/// LFFS-file clusters eight 8 KiB blocks, LFFS-wafs writes 4 KB).
pub fn journal_unit(kind: JournalKind) -> u32 {
    match kind {
        JournalKind::File => 64 << 10,
        JournalKind::None | JournalKind::Wafs | JournalKind::Device => LOG_BLOCK,
    }
}

/// Bytes of zeros mkfs writes to the log at a time.
const LOG_ZEROING_BYTES: u64 = 1 << 20;

/// The largest default journal (WAPBL's bound, 64 MiB).
const MAX_DEFAULT_LOG_BYTES: u64 = 64 << 20;

impl Default for MkfsOptions {
    fn default() -> Self {
        MkfsOptions {
            block_size: 8192,
            fragment_size: 1024,
            group_size: 32 << 20,
            // One inode per 8 KiB: with 256-byte inodes, the 3% of the disk
            // that 4.4BSD's 128-byte inodes took at one per 4 KiB.
            bytes_per_inode: 8192,
            maxcontig: None,
            rotdelay: RotDelay::Off,
            // The 1993 paper's HP 97560 (Table 5): 36 KiB tracks, 15 ms a
            // revolution — what makes "rot_delay 4 ms" mean what it meant.
            sectors_per_track: 72,
            revolutions_per_second: 66,
            maxbpg: None,
            minfree: 10,
            optim: None,
            journal: JournalKind::None,
            journal_bytes: None,
            dirpref: DirPref::New,
            avgfilesize: DEFAULT_AVGFILESIZE,
            avgfpdir: DEFAULT_AVGFPDIR,
            realloc: DEFAULT_REALLOC,
            id: None,
        }
    }
}

impl MkfsOptions {
    /// The defaults with blocks of `block_size` bytes, and fragments of the
    /// default size or, for blocks larger than 8 KiB, of an eighth of a
    /// block: the smallest a block divides into.
    pub fn with_block_size(block_size: u32) -> MkfsOptions {
        let defaults = MkfsOptions::default();
        MkfsOptions { block_size, fragment_size: (block_size / 8).max(defaults.fragment_size), ..defaults }
    }

    /// Bytes of a log device mkfs creates for these options: the journal
    /// asked for (the largest default if none) after the device's header.
    pub fn log_device_bytes(&self) -> u64 {
        self.journal_bytes.unwrap_or(MAX_DEFAULT_LOG_BYTES)
            + super::log_device::region_offset_for(self.fragment_size)
    }
}

/// Whether mkfs turns `realloc` on unless told otherwise: on, as FreeBSD's
/// `vfs.ffs.doreallocblks` is — it changes only where blocks go, it never
/// costs a write, and it passes every mode's crash checks.
pub const DEFAULT_REALLOC: bool = true;

fn refuse(why: String) -> Error {
    Error::Foreign(why)
}

/// The superblock `mkfs` would write to a device of `device_bytes` bytes
/// (file-system id 0 and times 0; [`mkfs`] fills them in), or why the
/// options cannot make a file system there.
pub fn plan(device_bytes: u64, options: &MkfsOptions) -> Result<Superblock> {
    plan_with_log(device_bytes, None, options)
}

/// As [`plan`], for a journal on a log device of `log_device_bytes` (a
/// [`JournalKind::Device`] journal needs one; no other kind takes one).
/// The log fills the device after its header, up to the largest log,
/// unless `journal_bytes` asks for less.
pub fn plan_with_log(
    device_bytes: u64,
    log_device_bytes: Option<u64>,
    options: &MkfsOptions,
) -> Result<Superblock> {
    if (options.journal == JournalKind::Device) != log_device_bytes.is_some() {
        return Err(refuse(
            "a journal on a log device needs the device (--journal-device), and only it".into(),
        ));
    }
    if options.journal != JournalKind::None && options.fragment_size > super::layout::LOG_BLOCK {
        return Err(refuse(format!(
            "a journal needs fragments of at most {} bytes, the log's block (the log is placed and written \
             in fragments); these are {}: choose a smaller --frag-size",
            super::layout::LOG_BLOCK,
            options.fragment_size
        )));
    }
    if let Some(log_device_bytes) = log_device_bytes {
        let mut sb = plan_groups(device_bytes, options)?;
        let geo = sb.geometry;
        let offset = super::log_device::region_offset(&geo);
        let room = log_device_bytes.saturating_sub(offset).min(MAX_LOG_BYTES);
        let unit = journal_unit(JournalKind::Device);
        let wanted = options.journal_bytes.unwrap_or(room);
        let bytes = wanted / u64::from(unit) * u64::from(unit);
        if bytes < MIN_LOG_BYTES || bytes > room {
            return Err(refuse(format!(
                "a journal of {wanted} bytes does not fit the log device: it has room for {room} bytes \
                 after its header, and a journal takes at least {MIN_LOG_BYTES}"
            )));
        }
        let start = (super::log_device::log_device_base(&geo) + offset) / u64::from(geo.frag_size);
        sb.journal = JournalInfo { kind: JournalKind::Device, unit, start, bytes, ..JournalInfo::default() };
        return Ok(sb);
    }
    let log_bytes = journal_bytes(device_bytes, options)?;
    // A `wafs` log takes the end of the device; the file system the rest.
    let fs_bytes = match options.journal {
        JournalKind::Wafs => device_bytes.checked_sub(log_bytes).filter(|&b| b > 0).ok_or_else(|| {
            refuse(format!("a journal of {log_bytes} bytes does not fit a device of {device_bytes} bytes"))
        })?,
        _ => device_bytes,
    };
    let mut sb = plan_groups(fs_bytes, options)?;
    let geo = sb.geometry;
    let unit = journal_unit(options.journal);
    sb.journal = match options.journal {
        JournalKind::None => JournalInfo::default(),
        JournalKind::Wafs => {
            let start = (device_bytes - log_bytes) / geo.frag_size as u64;
            JournalInfo { kind: JournalKind::Wafs, unit, start, bytes: log_bytes, ..JournalInfo::default() }
        }
        JournalKind::File => {
            let (start, bytes) = file_log_place(&geo, log_bytes, options.journal_bytes.is_none())?;
            JournalInfo { kind: JournalKind::File, unit, start, bytes, ..JournalInfo::default() }
        }
        JournalKind::Device => return Err(refuse("a journal on a log device needs the device".into())),
    };
    Ok(sb)
}

/// The log's size: as asked, or 1% of the device within the default
/// bounds, a whole number of write units and at least `MIN_LOG_BYTES`.
fn journal_bytes(device_bytes: u64, options: &MkfsOptions) -> Result<u64> {
    if options.journal == JournalKind::None {
        if options.journal_bytes.is_some() {
            return Err(refuse("a journal size needs a journal (--journal file or wafs)".into()));
        }
        return Ok(0);
    }
    let unit = journal_unit(options.journal) as u64;
    let wanted =
        options.journal_bytes.unwrap_or((device_bytes / 100).clamp(MIN_LOG_BYTES, MAX_DEFAULT_LOG_BYTES));
    let bytes = wanted / unit * unit;
    if bytes > MAX_LOG_BYTES {
        return Err(refuse(format!("a journal of {wanted} bytes is larger than the most, {MAX_LOG_BYTES}")));
    }
    if bytes < MIN_LOG_BYTES {
        return Err(refuse(format!(
            "a journal of {wanted} bytes is smaller than the least, {MIN_LOG_BYTES}"
        )));
    }
    Ok(bytes)
}

/// Where a `file` log goes: the front of the data area of the middle group
/// (half the file system's seeks away from any block, at most), leaving
/// that group its minimum of data blocks. A default size larger than that
/// room shrinks to it (a 4 GiB image's 1% does not fit a 32 MiB group); a
/// size asked for is refused. Returns (first fragment, bytes).
fn file_log_place(geo: &Geometry, bytes: u64, default_size: bool) -> Result<(Frag, u64)> {
    let cg = geo.ncg / 2;
    let frag = geo.frag_size as u64;
    let room = ((geo.group_frags(cg) - geo.data_offset()) as u64)
        .saturating_sub(MIN_GROUP_DATA_BLOCKS as u64 * geo.frags_per_block as u64);
    let unit = u64::from(journal_unit(JournalKind::File));
    let fits = room * frag / unit * unit;
    let bytes = if default_size && bytes > fits && fits >= MIN_LOG_BYTES { fits } else { bytes };
    if bytes.div_ceil(frag) > room {
        return Err(refuse(format!(
            "a journal of {bytes} bytes does not fit in a cylinder group ({} bytes of data room): \
             make it smaller (--journal-size) or the groups larger (--cg-size)",
            room * frag
        )));
    }
    Ok((geo.group_data_start(cg), bytes))
}

/// The groups and superblock for `device_bytes` (without a journal).
fn plan_groups(device_bytes: u64, options: &MkfsOptions) -> Result<Superblock> {
    let bs = options.block_size;
    if !bs.is_power_of_two() || !(4096..=65536).contains(&bs) {
        return Err(refuse(format!("block size {bs} must be a power of two from 4096 to 65536")));
    }
    let fs = options.fragment_size;
    if fs == 0 || !bs.is_multiple_of(fs) || ![1, 2, 4, 8].contains(&(bs / fs)) {
        return Err(refuse(format!(
            "fragment size {fs} must be the block size {bs} divided by 1, 2, 4 or 8 ({}, {}, {} or {})",
            bs,
            bs / 2,
            bs / 4,
            bs / 8
        )));
    }
    let frag = bs / fs;
    let maxcontig = options.maxcontig.unwrap_or((DEFAULT_CLUSTER_BYTES / bs).clamp(1, MAX_MAXCONTIG));
    if !(1..=MAX_MAXCONTIG).contains(&maxcontig) {
        return Err(refuse(format!("maxcontig {maxcontig} must be from 1 to {MAX_MAXCONTIG} blocks")));
    }
    if options.bytes_per_inode < INODE_SIZE as u32 {
        return Err(refuse(format!(
            "bytes per inode {} must be at least {INODE_SIZE}",
            options.bytes_per_inode
        )));
    }
    let device_blocks = device_bytes / bs as u64;
    let group_blocks = (options.group_size / bs as u64).min(device_blocks);
    if options.group_size / (bs as u64) == 0 {
        return Err(refuse(format!("cylinder-group size {} is less than a block", options.group_size)));
    }
    if group_blocks > (u32::MAX / frag) as u64 {
        return Err(refuse(format!("cylinder-group size {} is too large", options.group_size)));
    }
    let fpg = group_blocks as u32 * frag;
    let inopb = bs / INODE_SIZE as u32;
    let ipg =
        (group_blocks * bs as u64).div_ceil(options.bytes_per_inode as u64).div_ceil(inopb as u64).max(1)
            * inopb as u64;
    let ipg = u32::try_from(ipg).map_err(|_| refuse("too many inodes per group".into()))?;
    // One full group, to learn how much of a group the metadata takes.
    let trial = Geometry {
        block_size: bs,
        frag_size: fs,
        frags_per_block: frag,
        ncg: 1,
        fpg,
        ipg,
        total_frags: fpg as u64,
        maxcontig,
    };
    let min_group = trial.data_offset() as u64 + MIN_GROUP_DATA_BLOCKS as u64 * frag as u64;
    if (fpg as u64) < min_group && group_blocks < options.group_size / bs as u64 {
        return Err(refuse(format!(
            "device of {device_bytes} bytes is too small for an FFS with these options (try {} bytes or more)",
            min_group * fs as u64
        )));
    }
    if (fpg as u64) < min_group {
        return Err(refuse(format!(
            "a cylinder group of {} bytes cannot hold its metadata ({} blocks: superblock copy, \
             group area, inode table of {ipg} inodes) and {MIN_GROUP_DATA_BLOCKS} data blocks; \
             use larger groups, fewer inodes (more bytes per inode) or a larger device",
            group_blocks * bs as u64,
            trial.data_offset() / frag
        )));
    }
    let device_frags = device_blocks * frag as u64;
    let mut ncg = device_frags / fpg as u64;
    let rest = device_frags % fpg as u64;
    let total_frags = if rest >= min_group {
        ncg += 1;
        device_frags
    } else {
        ncg * fpg as u64
    };
    if total_frags > u32::MAX as u64 {
        return Err(refuse(format!(
            "a device of {device_bytes} bytes has more than 2^32 fragments of {fs} bytes, \
             and block pointers are 32-bit fragment numbers: use larger fragments"
        )));
    }
    let geometry = Geometry::new(bs, fs, ncg as u32, fpg, ipg, total_frags, maxcontig).map_err(refuse)?;
    // 4.4BSD's default: the blocks one indirect block maps.
    let maxbpg = options.maxbpg.unwrap_or(crate::format::blockno::Geometry::sectored(bs).nindir as u32);
    let optim = options.optim.unwrap_or(if options.minfree >= 10 { Optim::Time } else { Optim::Space });
    let policy = Policy {
        maxbpg,
        minfree: options.minfree,
        optim,
        rotdelay: options.rotdelay,
        sectors_per_track: options.sectors_per_track,
        revolutions_per_second: options.revolutions_per_second,
        dirpref: options.dirpref,
        avgfilesize: options.avgfilesize,
        avgfpdir: options.avgfpdir,
    };
    check_policy(&policy).map_err(refuse)?;
    if let RotDelay::Blocks(b) = policy.rotdelay {
        if b >= geometry.blocks_per_group() {
            return Err(refuse(format!("rotdelay of {b} blocks is not less than a group")));
        }
    }
    Ok(Superblock {
        geometry,
        policy,
        fs_id: options.id.unwrap_or(0),
        created: 0,
        time: 0,
        flags: if options.realloc { SB_CLEAN | SB_REALLOC } else { SB_CLEAN },
        totals: fresh_totals(&geometry),
        orphan_head: 0,
        version: super::layout::FORMAT_VERSION,
        journal: JournalInfo::default(),
    })
}

/// The totals of a new file system: every data block free, every inode
/// but 0 and 1.
fn fresh_totals(geo: &Geometry) -> Totals {
    let frag = geo.frags_per_block as u64;
    let data_blocks = (0..geo.ncg).map(|cg| (geo.group_frags(cg) - geo.data_offset()) as u64 / frag).sum();
    Totals { free_blocks: data_blocks, free_frags: 0, free_inodes: geo.ninodes() - 2, directories: 0 }
}

/// A random 64-bit identity for a new file system.
fn new_fs_id() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_i64(now_ns());
    h.finish()
}

/// Writes a new, empty FFS to `dev` and returns its superblock. Inodes 0
/// and 1 are marked in use and nothing else; the namespace creates the
/// root directory (inode 2) on top.
pub fn mkfs(dev: Arc<dyn BlockDevice>, options: &MkfsOptions) -> Result<Superblock> {
    let sb = plan(dev.size(), options)?;
    write_new(dev, sb)
}

/// As [`mkfs`], with the journal on the log device `log`, which mkfs
/// formats (a header naming it and this file system); the superblock
/// records `log_path`, where a mount looks for it.
pub fn mkfs_with_log(
    dev: Arc<dyn BlockDevice>,
    log: Arc<dyn BlockDevice>,
    log_path: &str,
    options: &MkfsOptions,
) -> Result<Superblock> {
    let mut sb = plan_with_log(dev.size(), Some(log.size()), options)?;
    sb.journal.device =
        super::layout::LogDeviceName::new(super::log_device::new_uuid(), log_path).map_err(refuse)?;
    if sb.fs_id == 0 {
        sb.fs_id = new_fs_id();
    }
    super::log_device::format(log.as_ref(), &sb)?;
    let base = super::log_device::log_device_base(&sb.geometry);
    write_new(Arc::new(disk::DevicePair::new(dev, log, base)), sb)
}

/// Writes the groups and superblock `sb` plans (with a new identity
/// unless it has one) and returns the superblock written.
fn write_new(dev: Arc<dyn BlockDevice>, mut sb: Superblock) -> Result<Superblock> {
    let now = now_ns();
    if sb.fs_id == 0 {
        sb.fs_id = new_fs_id();
    }
    sb.created = now;
    sb.time = now;
    let geo = sb.geometry;
    let bs = geo.block_size as usize;
    let log_frags = sb.journal.bytes.div_ceil(geo.frag_size as u64);
    for cg in 0..geo.ncg {
        let mut group = CylinderGroup::new_empty(&geo, cg, now);
        if sb.journal.kind == JournalKind::File && geo.group_of(sb.journal.start) == cg {
            take_log_blocks(&mut group, &geo, sb.journal.start, log_frags)?;
            sb.totals.free_blocks -= log_frags.div_ceil(geo.frags_per_block as u64);
        }
        let area = group.encode(&geo, sb.fs_id);
        let at = geo.byte_offset(geo.group_base(cg));
        let sb_block = {
            let mut block = sb.encode();
            block.resize(bs, 0);
            block
        };
        if cg == 0 {
            dev.write_at(at + bs as u64, &area)?;
        } else {
            dev.write_vectored_at(at, &[&sb_block, &area])?;
        }
    }
    if sb.journal.present() {
        // An empty log: zeros, so nothing reads as a transaction at the
        // checkpoint (replay also checks sequence numbers, so older bytes
        // are never taken for one). The whole log is written, as mke2fs
        // writes its journal (decision 0023): a log never written is a hole
        // in a sparse image file, and each commit's flush would then pay
        // for the host file system's allocation too.
        let zeros = vec![0u8; LOG_ZEROING_BYTES.min(sb.journal.bytes) as usize];
        let start = geo.byte_offset(sb.journal.start);
        let mut done = 0;
        while done < sb.journal.bytes {
            let take = (sb.journal.bytes - done).min(zeros.len() as u64) as usize;
            dev.write_at(start + done, &zeros[..take])?;
            done += take as u64;
        }
    }
    // The primary superblock last, behind a barrier: an interrupted mkfs
    // leaves no FFS magic at byte 0 over groups that were never written.
    dev.flush()?;
    let mut sb_block = sb.encode();
    sb_block.resize(bs, 0);
    dev.write_at(0, &sb_block)?;
    dev.flush()?;
    Ok(sb)
}

/// Marks the `file` log's whole blocks in use in its group.
fn take_log_blocks(group: &mut CylinderGroup, geo: &Geometry, start: Frag, frags: u64) -> Result<()> {
    let fpb = geo.frags_per_block;
    let first = geo.within_group(start);
    for b in 0..frags.div_ceil(fpb as u64) as u32 {
        let at = first + b * fpb;
        if group.alloc_block(Some(at)) != Some(at) {
            return Err(refuse(format!("the journal's block at fragment {at} of its group is not free")));
        }
    }
    Ok(())
}

/// Reads and validates the primary superblock (byte 0).
pub fn read_superblock(dev: &dyn BlockDevice) -> Result<Superblock> {
    let mut bytes = vec![0u8; SUPERBLOCK_BYTES];
    if dev.size() < SUPERBLOCK_BYTES as u64 {
        return Err(Error::Foreign(format!("device of {} bytes is too small for an FFS", dev.size())));
    }
    dev.read_at(0, &mut bytes)?;
    if !Superblock::has_magic(&bytes) {
        return Err(Error::Foreign("not an fslab FFS image: no fslabFFS magic at byte 0".into()));
    }
    let sb = Superblock::decode(&bytes, 0)?;
    let mut end = sb.geometry.byte_offset(sb.geometry.total_frags);
    if sb.journal.present() {
        end = end.max(check_log_region(&sb, dev.size())?);
    }
    if end > dev.size() {
        return Err(Error::corrupt(
            "FFS superblock",
            0u64,
            format!("file system (with its journal) of {end} bytes exceeds the device"),
        ));
    }
    Ok(sb)
}

/// Checks that the journal's region lies where its kind says — a `file`
/// log inside one group's data area, a `wafs` log past the last group —
/// and on the device; returns the byte after it.
fn check_log_region(sb: &Superblock, device_bytes: u64) -> Result<u64> {
    let geo = &sb.geometry;
    let j = &sb.journal;
    let bad = |why: String| Error::corrupt("FFS superblock", 0u64, why);
    let frags = j.bytes.div_ceil(geo.frag_size as u64);
    let last = j.start.checked_add(frags).ok_or_else(|| bad("the journal's region overflows".into()))?;
    if last > device_bytes / geo.frag_size as u64 && j.kind == JournalKind::Device {
        return Err(Error::Foreign(format!(
            "the journal of this file system is on a log device ({}, identity {}), not attached \
             (mount -o journal_device=PATH)",
            j.device.path(),
            j.device.uuid_text()
        )));
    }
    if last > device_bytes / geo.frag_size as u64 {
        return Err(bad(format!(
            "the journal's region (fragments {} to {last}) is past the device",
            j.start
        )));
    }
    let inside = match j.kind {
        JournalKind::File => {
            let cg = geo.group_of(j.start);
            j.start >= geo.group_data_start(cg) && last <= geo.group_base(cg) + geo.group_frags(cg) as u64
        }
        JournalKind::Wafs | JournalKind::Device => j.start >= geo.total_frags,
        JournalKind::None => true,
    };
    if !inside {
        return Err(bad(format!(
            "a {} journal's region (fragments {} to {last}) is not where that kind of log lies",
            j.kind.name(),
            j.start
        )));
    }
    Ok(geo.byte_offset(last))
}

/// Reads and validates cylinder group `cg`.
pub fn read_group(dev: &dyn BlockDevice, sb: &Superblock, cg: u32) -> Result<CylinderGroup> {
    let geo = &sb.geometry;
    let mut bytes = vec![0u8; geo.cg_blocks() as usize * geo.block_size as usize];
    dev.read_at(geo.byte_offset(geo.cg_addr(cg)), &mut bytes)?;
    CylinderGroup::decode(&bytes, geo, cg, sb.fs_id)
}

fn rotdelay_text(p: &Policy, gap_frags: Frag, frags_per_block: u32) -> String {
    let blocks = gap_frags / frags_per_block as u64;
    match p.rotdelay {
        RotDelay::Off => "0 (no gap)".into(),
        RotDelay::Blocks(b) => format!("{b} blocks"),
        RotDelay::Millis(ms) => format!(
            "{ms} ms at {} sectors/track, {} rev/s = {blocks} blocks",
            p.sectors_per_track, p.revolutions_per_second
        ),
    }
}

/// A human-readable report of an FFS image (like `dumpfs`): the superblock's
/// parameters and totals, then one line per cylinder group. Reads only.
pub fn dump(dev: &dyn BlockDevice) -> Result<String> {
    let sb = read_superblock(dev)?;
    let g = &sb.geometry;
    let p = &sb.policy;
    let mut out = String::new();
    let w = &mut out;
    let _ = writeln!(w, "FFS superblock (format version {})", sb.version);
    let _ = writeln!(w, "  block size        {}", g.block_size);
    let _ = writeln!(w, "  fragment size     {} ({} per block)", g.frag_size, g.frags_per_block);
    let _ = writeln!(
        w,
        "  size              {} fragments ({} bytes)",
        g.total_frags,
        g.byte_offset(g.total_frags)
    );
    let _ = writeln!(w, "  cylinder groups   {} (ncg)", g.ncg);
    let _ = writeln!(w, "  fragments/group   {} (fpg; {} blocks)", g.fpg, g.blocks_per_group());
    let _ = writeln!(w, "  inodes/group      {} (ipg)", g.ipg);
    let _ = writeln!(
        w,
        "  group layout      superblock copy, area at frag {}, inodes at {}, data at {}",
        g.cg_offset(),
        g.inode_table_offset(),
        g.data_offset()
    );
    let _ = writeln!(w, "  maxcontig         {} blocks", g.maxcontig);
    let gap = super::alloc::rotdelay_gap_frags(g, p);
    let _ = writeln!(w, "  rotdelay          {}", rotdelay_text(p, gap, g.frags_per_block));
    let _ = writeln!(w, "  maxbpg            {} blocks", p.maxbpg);
    let _ = writeln!(w, "  minfree           {}%", p.minfree);
    let _ = writeln!(w, "  optimization      {}", if p.optim == Optim::Time { "time" } else { "space" });
    let _ = match p.dirpref {
        DirPref::Old => writeln!(w, "  dirpref           old (4.4BSD: spread over the groups)"),
        DirPref::New => writeln!(
            w,
            "  dirpref           new (near the parent; avgfilesize {} bytes, avgfpdir {})",
            p.avgfilesize, p.avgfpdir
        ),
    };
    let _ = writeln!(w, "  realloc           {}", if sb.realloc() { "on" } else { "off" });
    let _ = writeln!(w, "  file system id    {:016x}", sb.fs_id);
    let _ = writeln!(w, "  created (ns)      {}", sb.created);
    let _ = writeln!(w, "  written (ns)      {}", sb.time);
    let _ = writeln!(w, "  clean             {}", sb.flags & SB_CLEAN != 0);
    let j = &sb.journal;
    if j.present() {
        let _ = writeln!(
            w,
            "  journal           {} at fragment {}, {} bytes, written {} bytes at a time",
            j.kind.name(),
            j.start,
            j.bytes,
            j.unit
        );
        if j.kind == JournalKind::Device {
            let _ = writeln!(
                w,
                "  log device        {} (identity {}; the pair's byte {} is its byte 0)",
                j.device.path(),
                j.device.uuid_text(),
                super::log_device::log_device_base(&sb.geometry)
            );
        }
        let _ = writeln!(
            w,
            "  journal tail      position {}, transaction {}, mount generation {}",
            j.tail, j.tail_seq, j.generation
        );
        match super::journal::describe(dev, &sb) {
            Ok(log) => {
                for line in log.lines().skip(1) {
                    let _ = writeln!(w, "  {line}");
                }
            }
            Err(e) => {
                let _ = writeln!(w, "  the log cannot be read: {e}");
            }
        }
    }
    let t = &sb.totals;
    let _ = writeln!(
        w,
        "  totals            {} free blocks, {} free frags, {} free inodes, {} directories",
        t.free_blocks, t.free_frags, t.free_inodes, t.directories
    );
    let _ = writeln!(w, "cylinder groups");
    let _ = writeln!(
        w,
        "  {:>6} {:>12} {:>11} {:>12} {:>8}",
        "group", "free blocks", "free frags", "free inodes", "dirs"
    );
    let mut sum = Totals::default();
    for cg in 0..g.ncg {
        match read_group(dev, &sb, cg) {
            Ok(group) => {
                let c = group.counts();
                sum.add(&c, 1);
                let _ = writeln!(
                    w,
                    "  {:>6} {:>12} {:>11} {:>12} {:>8}",
                    cg, c.free_blocks, c.free_frags, c.free_inodes, c.directories
                );
            }
            Err(e) => {
                let _ = writeln!(w, "  {cg:>6} unreadable: {e}");
            }
        }
    }
    if sum != sb.totals {
        let _ = writeln!(
            w,
            "groups sum to {} free blocks, {} free frags, {} free inodes, {} directories (superblock totals are stale)",
            sum.free_blocks, sum.free_frags, sum.free_inodes, sum.directories
        );
    }
    Ok(out)
}

#[cfg(test)]
#[path = "mkfs_tests.rs"]
mod tests;
