//! Making, mounting and describing an LFS image.
//!
//! Mount reads every superblock copy it can find (1993 paper §4.5), takes
//! the valid one with the newest checkpoint, reads the ifile inode the
//! checkpoint names and rebuilds the ifile's tables from its blocks. The log
//! written after that checkpoint is replayed by `rollforward`, which
//! `Lfs::mount` runs next; `dump` looks at the checkpoint alone.

use super::ifile::{Ifile, Tables};
use super::inspect::superblock_copies;
use super::layout::{
    segtab_entries_per_block, Checkpoint, Summary, Superblock, MAX_SUPERBLOCKS, SEGUSE_ACTIVE, SEGUSE_CLEAN,
    SEGUSE_DIRTY, SEGUSE_SUPERBLOCK, SUPERBLOCK_BYTES,
};
use super::log::{Log, LogWriter};
use super::{
    Lfs, MkfsOptions, MountOptions, MAX_BLOCK_SIZE, MIN_BLOCK_SIZE, MIN_SEGMENTS, MIN_SEGMENT_BLOCKS,
};
use crate::cache::{BufferCache, CacheLimits};
use crate::error::{Error, Location};
use crate::format::blockno::Geometry;
use crate::format::inode::{kind, Inode, InodeAttr};
use crate::format::{crc32c, now_ns, Daddr, IFILE_INO};
use crate::time::TimeSource;
use crate::Result;
use disk::BlockDevice;
use std::fmt::Write as _;
use std::sync::Arc;

/// A random 64-bit identity for a new file system.
fn random_id() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_i64(now_ns());
    h.write_u32(std::process::id());
    h.finish()
}

fn check_options(options: &MkfsOptions, device_bytes: u64) -> Result<u64> {
    let bs = options.block_size;
    if !bs.is_power_of_two() || !(MIN_BLOCK_SIZE..=MAX_BLOCK_SIZE).contains(&u64::from(bs)) {
        return Err(Error::Foreign(format!(
            "block size {bs} must be a power of two from {MIN_BLOCK_SIZE} to {MAX_BLOCK_SIZE}"
        )));
    }
    let ss = options.segment_size;
    let min_segment = MIN_SEGMENT_BLOCKS * u64::from(bs);
    if !ss.is_power_of_two() || u64::from(ss) < min_segment || ss > 1 << 30 {
        return Err(Error::Foreign(format!(
            "segment size {ss} must be a power of two of at least {MIN_SEGMENT_BLOCKS} blocks ({min_segment}) \
             and at most 1 GiB"
        )));
    }
    let nsegments = device_bytes / ss as u64;
    if nsegments < MIN_SEGMENTS {
        return Err(Error::Foreign(format!(
            "device of {device_bytes} bytes is too small: it must hold at least {MIN_SEGMENTS} segments of {ss} bytes"
        )));
    }
    if nsegments * (ss / bs) as u64 > u32::MAX as u64 {
        return Err(Error::Foreign("device too large for 32-bit block addresses at this block size".into()));
    }
    Ok(nsegments)
}

/// Writes a new, empty file system to `dev`: the ifile, an empty inode map
/// whose first free number is the root's, and every superblock copy. The
/// namespace creates the root directory on top (see `crate::mkfs`). Its
/// timestamps are the host's calendar time ([`mkfs_at`] takes a clock).
pub fn mkfs(dev: Arc<dyn BlockDevice>, options: &MkfsOptions) -> Result<()> {
    mkfs_at(dev, options, &TimeSource::wall())
}

/// [`mkfs`], with the file system's creation time, the ifile's timestamps
/// and the first checkpoint's time read from `clock`: on a simulated
/// disk's virtual clock, the same run writes the same times.
pub fn mkfs_at(dev: Arc<dyn BlockDevice>, options: &MkfsOptions, clock: &TimeSource) -> Result<()> {
    let nsegments = check_options(options, dev.size())?;
    let bs = options.block_size;
    // Spread over the device, so that damage to one region leaves others
    // readable.
    let listed = super::inspect::superblock_segments(nsegments);
    let mut sb_segments = [0u64; MAX_SUPERBLOCKS];
    sb_segments[..listed.len()].copy_from_slice(&listed);
    let ncopies = listed.len() as u32;
    let segtab_blocks = nsegments.div_ceil(segtab_entries_per_block(bs) as u64);
    let now = clock.calendar_ns();
    let sb = Superblock {
        block_size: bs,
        segment_size: options.segment_size,
        nsegments,
        fs_id: random_id(),
        created: now,
        sb_segments,
        ncopies,
        segtab_blocks: segtab_blocks as u32,
        checkpoint: Checkpoint::default(),
    };
    let mut tables = Tables::new(bs, nsegments, sb.blocks_per_segment(), segtab_blocks);
    for &s in &sb_segments[..ncopies as usize] {
        tables.update_segment(s, |s| s.flags |= SEGUSE_SUPERBLOCK);
    }
    tables.update_segment(0, |s| s.flags = SEGUSE_SUPERBLOCK | SEGUSE_DIRTY | SEGUSE_ACTIVE);
    let ifile = Inode {
        ino: IFILE_INO,
        attr: InodeAttr {
            mode: kind::REG | 0o400,
            nlink: 1,
            atime: now,
            mtime: now,
            ctime: now,
            btime: now,
            ..InodeAttr::default()
        },
        ..Inode::default()
    };
    // Inline: mkfs writes one checkpoint, and no thread's timing may move
    // it on a simulated disk.
    let options = MountOptions {
        segment_writes: super::SegmentWrites::Inline,
        clock: clock.clone(),
        ..MountOptions::default()
    };
    let mut lfs = assemble(dev, sb, tables, ifile, Daddr::NONE, Log::new_file_system(), options);
    lfs.writer.log.set_next_segment(lfs.clean_after(0).unwrap_or(0));
    lfs.checkpoint(true)
}

fn assemble(
    dev: Arc<dyn BlockDevice>,
    sb: Superblock,
    tables: Tables,
    ifile: Inode,
    ifile_daddr: Daddr,
    log: Log,
    options: MountOptions,
) -> Lfs {
    let limits = CacheLimits::for_memory(options.cache_bytes);
    let writes = options.segment_writes;
    let clean_inodes = options.clean_inodes;
    // Before the writer thread starts, as the schedule always was: the
    // first checkpoint is due an interval after this moment.
    let mount = Mounted::new(options);
    let io = super::io::SegmentIo::new(dev.clone(), sb.block_size, limits.stop_access_bytes, writes);
    Lfs {
        dev,
        geometry: Geometry::new(sb.block_size),
        block_size: sb.block_size as usize,
        cache: BufferCache::new(sb.block_size, limits),
        inodes: crate::cache::InodeCache::with_clean_limit(clean_inodes),
        ifile: Ifile { tables, inode: ifile, daddr: ifile_daddr },
        writer: LogWriter::new(log, io),
        tx: Default::default(),
        mount,
        clean: Default::default(),
        orphans: Default::default(),
        read_ahead: Default::default(),
        sb,
    }
}

/// This mount's life: the options it was given, what it found when it
/// mounted, when its next periodic checkpoint falls due and whether it has
/// ended. Kept together because one reads the others: `checkpoints` runs on
/// `options`' clock and interval; `recovery` and `fallback` are set once,
/// while mounting, and only read after; once `unmounted` is set, no
/// checkpoint falls due and every change is refused.
pub(super) struct Mounted {
    /// The choices made at this mount.
    pub(super) options: MountOptions,
    /// When checkpoints are due.
    pub(super) checkpoints: super::checkpoint::Schedule,
    /// What roll-forward did at mount.
    pub(super) recovery: super::Recovery,
    /// Set when the newest checkpoint could not be used.
    pub(super) fallback: Option<CheckpointFallback>,
    /// Whether the file system has been unmounted.
    pub(super) unmounted: bool,
    /// The log writer's first error, once one happened. The writer marks
    /// blocks and inodes written as it places them, before the partial
    /// segments holding them reach the device, and it has used the serial
    /// numbers and the log head's room of those it did not write: what an
    /// error drops is gone from memory, and roll-forward would stop at the
    /// gap. So the mount refuses every change and every promise of
    /// durability from then on (`check_mounted`), and unmount writes no
    /// checkpoint: what was durable before the error stays as it was, and
    /// the next mount recovers it. ext4 remounts read-only on such errors.
    pub(super) failed: Option<String>,
    /// The segments this mount made clean because the checkpoint's table
    /// said nothing in them was live, with their entries as it had them
    /// (`Lfs::repair_set_live_bytes`).
    pub(super) reclaimed: Vec<(u64, super::layout::SegUse)>,
}

impl Mounted {
    /// A mount with `options` just begun: its first checkpoint due an
    /// interval from now, nothing recovered yet.
    fn new(options: MountOptions) -> Mounted {
        Mounted {
            checkpoints: super::checkpoint::Schedule::starting(options.clock.now()),
            options,
            recovery: super::Recovery::default(),
            fallback: None,
            unmounted: false,
            failed: None,
            reclaimed: Vec::new(),
        }
    }
}

/// Whether `dev` holds an fslab LFS superblock at its start (valid or not).
pub fn probe(dev: &dyn BlockDevice) -> bool {
    let mut buf = vec![0u8; SUPERBLOCK_BYTES];
    dev.size() >= SUPERBLOCK_BYTES as u64 && dev.read_at(0, &mut buf).is_ok() && Superblock::has_magic(&buf)
}

/// Every valid superblock copy of the file system on `dev`, newest
/// checkpoint first (where they are looked for: [`superblock_copies`]).
fn find_superblocks(dev: &dyn BlockDevice) -> Result<Vec<Superblock>> {
    let mut found = Vec::new();
    let mut first_error = None;
    for copy in superblock_copies(dev) {
        match copy.result {
            Ok(sb) => found.push(sb),
            Err(e @ Error::Foreign(_)) if copy.offset == 0 => return Err(e),
            Err(e) if copy.offset == 0 => first_error = Some(e),
            Err(_) => {}
        }
    }
    // Copies found where byte 0 holds another file system: left from
    // before the device was made into that one. Used, they would write
    // over it.
    if !found.is_empty() && !probe(dev) {
        if let Some(other) = crate::other_file_system(dev) {
            return Err(Error::Foreign(format!(
                "the device holds {other}, not fslab (the fslab superblock copies further in are \
                 left from before it was made)"
            )));
        }
    }
    if found.is_empty() {
        return Err(match first_error {
            Some(Error::Corrupt { why, .. }) if why == "no fslab magic" => {
                Error::Foreign("the device does not hold an fslab file system (no superblock found)".into())
            }
            Some(e) => e,
            None => Error::Foreign("no valid superblock copy found".into()),
        });
    }
    let best_fs = found.iter().max_by_key(|s| s.checkpoint.serial).map(|s| s.fs_id);
    found.retain(|s| Some(s.fs_id) == best_fs);
    found.sort_by_key(|s| std::cmp::Reverse(s.checkpoint.serial));
    Ok(found)
}

/// A mount that could not use the newest checkpoint and fell back to an
/// older one: what was lost is what the newest one recorded and roll-forward
/// from the older one did not find again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckpointFallback {
    /// The newest checkpoint, which could not be used.
    pub newest: Checkpoint,
    /// The checkpoint the mount used.
    pub used: Checkpoint,
    /// Why the newest could not be used.
    pub why: String,
}

/// Mounts the file system on `dev` (see the module comment).
pub fn mount(dev: Arc<dyn BlockDevice>, options: MountOptions) -> Result<Lfs> {
    let superblocks = find_superblocks(dev.as_ref())?;
    let mut last_error = None;
    // The newest checkpoint that could not be used, if the mount falls back.
    let mut newest_refused: Option<(Checkpoint, String)> = None;
    // A checkpoint whose ifile cannot be read falls back to an older copy.
    for sb in superblocks {
        match mount_checkpoint(dev.clone(), sb, options.clone()) {
            Ok(mut lfs) => {
                lfs.mount.fallback = newest_refused
                    .filter(|(newest, _)| newest.serial != sb.checkpoint.serial)
                    .map(|(newest, why)| CheckpointFallback { newest, used: sb.checkpoint, why });
                return Ok(lfs);
            }
            Err(e) => {
                if newest_refused.is_none() {
                    newest_refused = Some((sb.checkpoint, e.to_string()));
                }
                last_error = Some(e)
            }
        }
    }
    Err(last_error.unwrap_or_else(|| Error::Foreign("no usable checkpoint".into())))
}

fn mount_checkpoint(dev: Arc<dyn BlockDevice>, sb: Superblock, options: MountOptions) -> Result<Lfs> {
    if sb.nsegments * sb.segment_size as u64 > dev.size() {
        return Err(Error::Foreign(format!(
            "the file system is {} bytes but the device holds only {}",
            sb.nsegments * sb.segment_size as u64,
            dev.size()
        )));
    }
    let c = sb.checkpoint;
    let segtab_blocks = sb.segtab_blocks as u64;
    let placeholder = Tables::new(sb.block_size, sb.nsegments, sb.blocks_per_segment(), segtab_blocks);
    let log = Log::at_checkpoint(&c);
    let mut lfs = assemble(dev, sb, placeholder, Inode::default(), c.ifile_daddr, log, options);
    lfs.clean.clock_base = c.write_clock;
    lfs.load_ifile(c.ifile_daddr)?;
    if lfs.ifile.tables.usage().get(lfs.writer.log.head().segment).is_none() {
        return Err(Error::corrupt_at("checkpoint", Location::Unknown, "log segment out of range"));
    }
    // The writer made every segment this checkpoint left empty clean right
    // after writing it, and may have written log into them since: start
    // from the same table, so roll-forward finds them as the writer did.
    // Their entries as the checkpoint has them are kept for fsck's repair
    // of a table that called a segment empty wrongly.
    lfs.mount.reclaimed = lfs.reclaim_empty_segments();
    lfs.settle_log_head();
    Ok(lfs)
}

impl Lfs {
    /// Makes the ifile whose inode is in the block at `daddr` the current
    /// one: reads its inode and every block, and rebuilds the tables,
    /// keeping of the inode map what `MountOptions::imap_resident_bytes`
    /// allows (every block is read to be checked and to count the inodes
    /// in use).
    pub(super) fn load_ifile(&mut self, daddr: Daddr) -> Result<()> {
        let ifile = self.find_inode_in_block(daddr, IFILE_INO)?;
        let bs = self.block_size as u64;
        let segtab_blocks = self.sb.segtab_blocks as u64;
        let size = ifile.attr.size;
        let max_blocks = (1 + segtab_blocks + (u32::MAX as u64 / 16)).min(self.total_disk_blocks());
        if !size.is_multiple_of(bs) || size / bs < 1 + segtab_blocks || size / bs > max_blocks {
            return Err(Error::corrupt("ifile inode", daddr, format!("impossible ifile size {size}")));
        }
        let previous = std::mem::replace(&mut self.ifile.inode, ifile);
        for key in self.cache.keys_in(IFILE_INO, i64::MIN..=i64::MAX) {
            self.cache.remove(key);
        }
        let mut tables: Option<Tables> = None;
        let mut head = Vec::with_capacity(1 + segtab_blocks as usize);
        for lbn in 0..size / bs {
            // The log writes every ifile block: a hole is damage, and a
            // size naming holes only (a crafted inode) would otherwise
            // fill memory with zeros before the tables are decoded.
            let mut buf = vec![0u8; bs as usize];
            let read = self.pointer(IFILE_INO, lbn as i64).and_then(|addr| {
                if addr.is_none() {
                    return Err(Error::corrupt(
                        "ifile inode",
                        daddr,
                        format!("the ifile has a hole at block {lbn}"),
                    ));
                }
                self.read_addr(addr, &mut buf)
            });
            let taken = read.and_then(|()| {
                if lbn <= segtab_blocks {
                    head.push(buf);
                    if lbn == segtab_blocks {
                        tables = Some(Tables::decode_head(
                            self.sb.block_size,
                            self.sb.nsegments,
                            self.sb.blocks_per_segment(),
                            segtab_blocks,
                            &head,
                            self.mount.options.imap_resident_bytes,
                        )?);
                    }
                    return Ok(());
                }
                match tables.as_mut() {
                    Some(t) => t.load_imap_block(&buf),
                    None => Ok(()),
                }
            });
            if let Err(e) = taken {
                self.ifile.inode = previous;
                return Err(e);
            }
        }
        // The size check above left at least the head to read.
        let tables = tables
            .ok_or_else(|| Error::corrupt("ifile inode", daddr, "ifile shorter than its segment usage table"))
            .and_then(|t| t.finish_load().map(|()| t));
        // The ifile's blocks were only needed to build the tables.
        for key in self.cache.keys_in(IFILE_INO, i64::MIN..=i64::MAX) {
            self.cache.remove(key);
        }
        match tables {
            Ok(t) => {
                self.ifile.tables = t;
                self.ifile.daddr = daddr;
                Ok(())
            }
            Err(e) => {
                self.ifile.inode = previous;
                Err(e)
            }
        }
    }
}

fn flags_text(flags: u32) -> String {
    let names = [
        (SEGUSE_ACTIVE, "active"),
        (SEGUSE_DIRTY, "dirty"),
        (SEGUSE_SUPERBLOCK, "sb"),
        (SEGUSE_CLEAN, "clean"),
    ];
    let parts: Vec<&str> = names.iter().filter(|(f, _)| flags & f != 0).map(|(_, n)| *n).collect();
    if parts.is_empty() {
        "-".into()
    } else {
        parts.join(",")
    }
}

/// A human-readable report of the superblock, the latest checkpoint, the
/// ifile's cleaner info and inode map, the segment usage table, and the
/// partial segments of the segment at the log head (like `dumplfs`).
pub fn dump(dev: Arc<dyn BlockDevice>) -> Result<String> {
    let lfs = mount(dev, MountOptions { cache_bytes: 16 << 20, ..MountOptions::default() })?;
    let sb = &lfs.sb;
    let c = &sb.checkpoint;
    let mut out = String::new();
    let w = &mut out;
    let _ = writeln!(w, "superblock (format version {})", super::layout::FORMAT_VERSION);
    let _ = writeln!(w, "  block size        {}", sb.block_size);
    let _ = writeln!(w, "  segment size      {} ({} blocks)", sb.segment_size, sb.blocks_per_segment());
    let _ = writeln!(w, "  segments          {}", sb.nsegments);
    let _ = writeln!(w, "  file system id    {:016x}", sb.fs_id);
    let _ = writeln!(w, "  created (ns)      {}", sb.created);
    let _ = writeln!(w, "  superblock copies in segments {:?}", &sb.sb_segments[..sb.ncopies as usize]);
    let _ = writeln!(w, "  segment table     {} ifile blocks", sb.segtab_blocks);
    let _ = writeln!(w, "checkpoint");
    let _ = writeln!(w, "  serial            {}", c.serial);
    let _ = writeln!(w, "  time (ns)         {}", c.time);
    let _ = writeln!(w, "  ifile inode at    block {}", c.ifile_daddr);
    let _ = writeln!(w, "  log head          segment {} block {}", c.log_segment, c.log_offset);
    let _ = writeln!(w, "  next segment      {}", c.next_segment);
    match c.cold {
        Some(h) => {
            let _ = writeln!(
                w,
                "  cold head         segment {} block {}, next segment {}",
                h.segment, h.offset, h.next_segment
            );
        }
        None => {
            let _ = writeln!(w, "  cold head         none");
        }
    }
    let _ = writeln!(w, "  next summary      serial {}", c.next_summary_serial);
    let _ = writeln!(w, "  write clock       {} bytes", c.write_clock);
    let _ = writeln!(w, "  orphan list head  inode {}", c.orphan_head);
    let _ = writeln!(w, "  unmounted cleanly {}", c.flags & super::layout::SB_CLEAN != 0);
    let t = &lfs.ifile.tables;
    let _ = writeln!(w, "ifile");
    let _ = writeln!(w, "  size              {} bytes ({} blocks)", lfs.ifile.inode.attr.size, t.nblocks());
    let _ = writeln!(w, "  clean segments    {}", t.cleaner.clean_segments);
    let _ = writeln!(w, "  dirty segments    {}", t.cleaner.dirty_segments);
    let _ = writeln!(w, "  inode numbers     {} ({} in use)", t.cleaner.ninodes, t.inodes_in_use());
    let _ = writeln!(w, "  free-list head    {}", t.cleaner.free_head);
    let _ = writeln!(w, "segment usage table (clean segments without a superblock omitted)");
    let _ = writeln!(
        w,
        "  {:>8}  {:<18} {:>10} {:>6} {:>6}  lastmod (write clock)",
        "segment", "flags", "live bytes", "sums", "inos"
    );
    let mut omitted = 0;
    for (i, s) in t.usage().iter().enumerate() {
        if s.flags == SEGUSE_CLEAN {
            omitted += 1;
            continue;
        }
        let _ = writeln!(
            w,
            "  {:>8}  {:<18} {:>10} {:>6} {:>6}  {}",
            i,
            flags_text(s.flags),
            s.live_bytes,
            s.nsums,
            s.ninos,
            s.lastmod
        );
    }
    let _ = writeln!(w, "  ({omitted} clean segments omitted)");
    let _ = writeln!(
        w,
        "log after the checkpoint: {} valid partial segments (roll-forward applies them at mount)",
        lfs.log_after_checkpoint()
    );
    let _ = writeln!(w, "partial segments in log-head segment {}", c.log_segment);
    dump_partials(&lfs, c.log_segment, w);
    Ok(out)
}

/// Lists the valid partial segments at the start of segment `seg`.
fn dump_partials(lfs: &Lfs, seg: u64, w: &mut String) {
    let bs = lfs.block_size;
    let bps = lfs.sb.blocks_per_segment();
    let mut offset =
        u64::from(lfs.ifile.tables.usage().get(seg).is_some_and(|s| s.flags & SEGUSE_SUPERBLOCK != 0));
    while offset + 1 < bps {
        let daddr = Daddr::new(seg * bps + offset);
        let mut block = vec![0u8; bs];
        if lfs.dev.read_at(daddr.byte_offset(bs as u64), &mut block).is_err() {
            break;
        }
        let Ok(s) = Summary::decode(&block, daddr) else { break };
        if s.fs_id != lfs.sb.fs_id || offset + 1 + s.nblocks as u64 > bps {
            break;
        }
        let mut data = vec![0u8; s.nblocks as usize * bs];
        let crc_ok = lfs.dev.read_at((daddr + 1).byte_offset(bs as u64), &mut data).is_ok()
            && crc32c(&data) == s.data_crc;
        let _ = writeln!(
            w,
            "  block {:>8}: serial {:>6} flags {:#x} blocks {:>4} (inode blocks {}) files {:>3} next seg {} data crc {}",
            daddr,
            s.serial,
            s.flags,
            s.nblocks,
            s.ninoblocks,
            s.finfos.len(),
            s.next_segment,
            if crc_ok { "ok" } else { "BAD" }
        );
        offset += 1 + s.nblocks as u64;
    }
}
