//! The block-map engine: the walks over a file's tree of block pointers —
//! direct slots, then single, double and triple indirect blocks named by
//! negative logical block numbers (1993 paper §4.1.2, Fig. 6) — shared by
//! every layout and by fsck.
//!
//! Interface: [`pointer`] (bmap: where block `lbn` lives), [`set_pointer`],
//! [`load_indirect`], [`exists`], [`next_data`] (SEEK_DATA and SEEK_HOLE),
//! [`contiguous_run`] (how far a read can cluster), [`ReadAhead`] and
//! [`read_ahead_run`] (what to read ahead of a sequential reader), [`free_one`] and
//! [`free_range`] (truncation), [`balloc`] (addresses for a block about to
//! be written and every indirect block above it), [`move_blocks`] (a range
//! of block pointers moved along the file: collapsing and inserting a
//! range), and [`walk`] (every pointer of an inode, for fsck).
//!
//! Relies on a layout's [`BlockTree`]: where inodes are held, how an
//! indirect block is read, cached and dirtied, what freeing a block costs,
//! and — the one place the layouts differ in kind — when a block gets its
//! address ([`BlockTree::assign`]): FFS during the walk, as `ffs_balloc`
//! does; LFS only when it writes the block into a segment, so the walk
//! leaves its new blocks without an address, held in memory.

use crate::error::{errno, Error};
use crate::format::blockno::{Geometry, Parent, NDADDR, NIADDR, XATTR_LBN};
use crate::format::codec::{Decoder, Encoder};
use crate::format::inode::Inode;
use crate::format::{Daddr, Ino, Lbn};
use crate::Result;

/// What a layout offers the engine. Indirect blocks are held in memory by
/// (inode, logical block number) — both layouts name them so, as BSD did —
/// and a block "in memory" may have no address yet (LFS: written since the
/// last segment write).
pub trait BlockTree {
    /// The pointer arithmetic of the layout's block size.
    fn geometry(&self) -> Geometry;

    /// One past the largest address a block pointer may hold.
    fn address_limit(&self) -> u64;

    /// Inode `ino`, to read its pointers.
    fn inode(&mut self, ino: Ino) -> Result<&Inode>;

    /// Inode `ino`, to change its pointers or block count: the layout
    /// marks it dirty (this is where the engine dirties an inode).
    fn inode_mut(&mut self, ino: Ino) -> Result<&mut Inode>;

    /// Whether block `lbn` of `ino` is held in memory.
    fn in_memory(&self, ino: Ino, lbn: Lbn) -> bool;

    /// The first of blocks `lbns` of `ino` held in memory. A layout whose
    /// cache keeps its names in order answers with one search instead of
    /// one lookup a block.
    fn first_in_memory(&self, ino: Ino, lbns: std::ops::Range<Lbn>) -> Option<Lbn> {
        lbns.into_iter().find(|&lbn| self.in_memory(ino, lbn))
    }

    /// Reads indirect block `meta` of `ino` from `addr` into memory. The
    /// engine has checked `addr` against [`BlockTree::address_limit`]; the
    /// layout checks the block's checksums ([`Geometry::check`]).
    fn read_indirect(&mut self, ino: Ino, meta: Lbn, addr: Daddr) -> Result<()>;

    /// The bytes of indirect block `meta` of `ino`, held in memory.
    fn indirect(&mut self, ino: Ino, meta: Lbn) -> Result<&[u8]>;

    /// The bytes of indirect block `meta` of `ino` to change: a block not
    /// in memory is created zeroed (a hole being filled). The layout marks
    /// it dirty (this is where the engine dirties an indirect block).
    fn indirect_mut(&mut self, ino: Ino, meta: Lbn) -> Result<&mut [u8]>;

    /// Block `lbn` of `ino` is about to be freed: its pointer still names
    /// it, and its copy in memory is still there. Nothing by default.
    fn releasing(&mut self, ino: Ino, lbn: Lbn) -> Result<()> {
        let _ = (ino, lbn);
        Ok(())
    }

    /// Frees block `lbn` of `ino`, which lived at `addr` (none if it never
    /// got one) and whose pointer the engine has just cleared: the
    /// layout's accounting, and its copy in memory.
    fn release(&mut self, ino: Ino, lbn: Lbn, addr: Daddr) -> Result<()>;

    /// Gives new block `lbn` of `ino` an address, near `preference` (the
    /// address of the block before it in the file, if any), or returns
    /// [`Daddr::NONE`] to give it one later. Called by [`balloc`] for a
    /// block that is neither on disk nor in memory.
    fn assign(&mut self, ino: Ino, lbn: Lbn, preference: Daddr) -> Result<Daddr>;

    /// Makes data block `to` of `ino`, a hole, hold what data block `from`
    /// holds (it lives at `addr`, [`Daddr::NONE`] if only in memory): the
    /// layout moves its copy in memory and readies the indirect blocks
    /// above `to`, and returns the address `to` gets (none: given later).
    /// The engine then clears `from`'s pointer and sets `to`'s. Called by
    /// [`move_blocks`].
    fn relocate(&mut self, ino: Ino, from: Lbn, to: Lbn, addr: Daddr) -> Result<Daddr>;
}

/// The indirect blocks above data block `lbn`, top first (none for a
/// direct block, the extended-attribute block or an indirect block).
pub fn ancestors(geometry: &Geometry, lbn: Lbn) -> Vec<Lbn> {
    if lbn < 0 {
        return Vec::new();
    }
    match geometry.path(lbn as u64) {
        Some(path) => path.metas[..path.levels].to_vec(),
        None => Vec::new(),
    }
}

/// The pointer in slot `index` of an indirect block laid out as
/// `geometry` says.
fn slot(geometry: &Geometry, block: &[u8], index: usize) -> Result<Daddr> {
    Decoder::new(block)
        .u32(geometry.pointer_offset(index))
        .map(Daddr::from_pointer)
        .map_err(|_| Error::corrupt("indirect block", 0u64, "shorter than its pointers"))
}

/// The disk address recorded for block `lbn` of `ino` (data, indirect or
/// the extended-attribute block): [`Daddr::NONE`] for a hole or a block
/// with no address yet. A pointer past the device is a corrupt structure.
pub fn pointer<T: BlockTree + ?Sized>(t: &mut T, ino: Ino, lbn: Lbn) -> Result<Daddr> {
    let parent = t.geometry().parent(lbn).ok_or_else(|| errno(libc::EFBIG, "block number out of range"))?;
    let addr = match parent {
        Parent::Direct(i) => t.inode(ino)?.direct[i],
        Parent::Indirect(i) => t.inode(ino)?.indirect[i],
        Parent::Xattr => t.inode(ino)?.xattr,
        Parent::Meta { meta, index } => {
            if !load_indirect(t, ino, meta)? {
                return Ok(Daddr::NONE);
            }
            let geometry = t.geometry();
            slot(&geometry, t.indirect(ino, meta)?, index)?
        }
    };
    on_device(t, ino, lbn, addr)
}

/// `addr`, the pointer of block `lbn` of `ino`, if it lies on the device:
/// past it, the pointer is a corrupt structure.
fn on_device<T: BlockTree + ?Sized>(t: &T, ino: Ino, lbn: Lbn, addr: Daddr) -> Result<Daddr> {
    if addr.get() >= t.address_limit() {
        return Err(Error::corrupt(
            "block pointer",
            addr,
            format!("inode {ino} block {lbn} points past the device"),
        ));
    }
    Ok(addr)
}

/// Records `addr` as the address of block `lbn` of `ino`, dirtying the
/// inode or indirect block that holds the pointer (creating that indirect
/// block if it was a hole). Fails before changing anything if `addr` does
/// not fit a pointer.
pub fn set_pointer<T: BlockTree + ?Sized>(t: &mut T, ino: Ino, lbn: Lbn, addr: Daddr) -> Result<()> {
    let parent = t.geometry().parent(lbn).ok_or_else(|| errno(libc::EFBIG, "block number out of range"))?;
    let encoded = addr.to_pointer()?;
    match parent {
        Parent::Direct(i) => t.inode_mut(ino)?.direct[i] = addr,
        Parent::Indirect(i) => t.inode_mut(ino)?.indirect[i] = addr,
        Parent::Xattr => t.inode_mut(ino)?.xattr = addr,
        Parent::Meta { meta, index } => {
            load_indirect(t, ino, meta)?;
            let at = t.geometry().pointer_offset(index);
            Encoder::new(t.indirect_mut(ino, meta)?).u32(at, encoded);
        }
    }
    Ok(())
}

/// Makes sure indirect block `meta` of `ino` is in memory if it exists;
/// returns false for a hole.
pub fn load_indirect<T: BlockTree + ?Sized>(t: &mut T, ino: Ino, meta: Lbn) -> Result<bool> {
    if t.in_memory(ino, meta) {
        return Ok(true);
    }
    let addr = pointer(t, ino, meta)?;
    if addr.is_none() {
        return Ok(false);
    }
    t.read_indirect(ino, meta, addr)?;
    Ok(true)
}

/// Whether block `lbn` of `ino` holds data: on disk, or in memory.
pub fn exists<T: BlockTree + ?Sized>(t: &mut T, ino: Ino, lbn: Lbn) -> Result<bool> {
    Ok(t.in_memory(ino, lbn) || pointer(t, ino, lbn)?.is_some())
}

/// Frees block `lbn` of `ino` (data, indirect or xattr) if it exists:
/// [`BlockTree::releasing`], the pointer cleared, [`BlockTree::release`]. In that order because
/// a layout that defers the free until nothing on disk names the block
/// (soft updates) lists, as it releases, the inode and indirect blocks
/// that must be written first: they must already be without the pointer.
pub fn free_one<T: BlockTree + ?Sized>(t: &mut T, ino: Ino, lbn: Lbn) -> Result<()> {
    let addr = pointer(t, ino, lbn)?;
    if addr.is_none() && !t.in_memory(ino, lbn) {
        return Ok(());
    }
    t.releasing(ino, lbn)?;
    if addr.is_some() {
        set_pointer(t, ino, lbn, Daddr::NONE)?;
    }
    t.release(ino, lbn, addr)
}

/// First data block covered by each of the inode's indirect trees.
fn tree_starts(g: &Geometry) -> [u64; NIADDR] {
    let n = g.nindir;
    [NDADDR as u64, NDADDR as u64 + n, NDADDR as u64 + n + n * n]
}

/// Frees data blocks `first ..= last` of `ino` and every indirect block
/// left covering only freed blocks (truncation is `first ..= u64::MAX`;
/// punching a hole is a range).
pub fn free_range<T: BlockTree + ?Sized>(t: &mut T, ino: Ino, first: u64, last: u64) -> Result<()> {
    let g = t.geometry();
    let last = last.min(g.max_blocks().saturating_sub(1));
    if first > last {
        return Ok(());
    }
    // Only the direct blocks that hold data are visited: a freed block
    // gives no other one data.
    let mut from = first;
    while let Some(lbn) = next_direct(t, ino, from, last.saturating_add(1))? {
        free_one(t, ino, lbn as Lbn)?;
        from = lbn + 1;
    }
    for (i, &start) in tree_starts(&g).iter().enumerate() {
        let level = i + 1;
        let end = start + g.nindir.pow(level as u32) - 1;
        if last < start || first > end {
            continue;
        }
        let top = Geometry::meta_lbn(level, start);
        free_tree(t, ino, top, level, start, first, last)?;
        if first <= start && last >= end {
            free_one(t, ino, top)?;
        }
    }
    Ok(())
}

/// Frees what indirect block `meta` (at `level`, covering data from
/// `meta_first`) holds inside `first ..= last`, children before parents.
fn free_tree<T: BlockTree + ?Sized>(
    t: &mut T,
    ino: Ino,
    meta: Lbn,
    level: usize,
    meta_first: u64,
    first: u64,
    last: u64,
) -> Result<()> {
    if !load_indirect(t, ino, meta)? {
        return Ok(());
    }
    let g = t.geometry();
    let child_span = g.nindir.pow(level as u32 - 1);
    let lo = first.saturating_sub(meta_first) / child_span;
    let hi = (last.min(meta_first + child_span * g.nindir - 1) - meta_first) / child_span;
    for index in lo..=hi {
        let child_first = meta_first + index * child_span;
        if level == 1 {
            free_one(t, ino, child_first as Lbn)?;
            continue;
        }
        let child = Geometry::meta_lbn(level - 1, child_first);
        if !exists(t, ino, child)? {
            continue;
        }
        free_tree(t, ino, child, level - 1, child_first, first, last)?;
        if first <= child_first && last >= child_first + child_span - 1 {
            free_one(t, ino, child)?;
        }
    }
    Ok(())
}

/// The first data block at or after `from`, below `end`, that holds data.
/// Skips whole absent indirect trees, so a sparse file of any size is
/// searched in steps of the trees it has.
pub fn next_data<T: BlockTree + ?Sized>(t: &mut T, ino: Ino, from: u64, end: u64) -> Result<Option<u64>> {
    let g = t.geometry();
    let end = end.min(g.max_blocks());
    let mut at = from;
    if at < NDADDR as u64 && at < end {
        if let Some(lbn) = next_direct(t, ino, at, end)? {
            return Ok(Some(lbn));
        }
        at = end.min(NDADDR as u64);
    }
    'search: while at < end {
        let path = g.path(at).ok_or_else(|| errno(libc::EFBIG, "block out of range"))?;
        for &meta in &path.metas[..path.levels] {
            if !exists(t, ino, meta)? {
                let (level, first) =
                    g.meta_level(meta).ok_or_else(|| errno(libc::EIO, "bad indirect block number"))?;
                at = first + g.nindir.pow(level as u32);
                continue 'search;
            }
        }
        if exists(t, ino, at as Lbn)? {
            return Ok(Some(at));
        }
        at += 1;
    }
    Ok(None)
}

/// The first direct block of `ino` in `from..stop` that holds data, on
/// disk or in memory: from one copy of the inode's pointers and one search
/// of memory. A small file's tail (`tail_of`) is looked for on every
/// write, read and free of it, and a lookup of pointer and memory a block
/// was a tenth of an unlink's work.
fn next_direct<T: BlockTree + ?Sized>(t: &mut T, ino: Ino, from: u64, stop: u64) -> Result<Option<u64>> {
    let stop = stop.min(NDADDR as u64);
    if from >= stop {
        return Ok(None);
    }
    let direct = t.inode(ino)?.direct;
    let on_disk = (from..stop).find(|&lbn| direct[lbn as usize].is_some());
    if let Some(lbn) = on_disk {
        on_device(t, ino, lbn as Lbn, direct[lbn as usize])?;
    }
    let in_memory = t.first_in_memory(ino, from as Lbn..on_disk.unwrap_or(stop) as Lbn);
    Ok(in_memory.map(|lbn| lbn as u64).or(on_disk))
}

/// How many blocks from `lbn` (which lives at `addr`) on, at most `max`,
/// lie one after another on disk — each `units_per_block` address units
/// past the one before — and are not held in memory: what one device read
/// can fetch (read clustering; BSD's bmap returns the same run length).
///
/// A run ends where the pointers that map it do: the inode's direct slots,
/// or one indirect block. 4.4BSD's `ufs_bmaparray` counted its run only
/// along the pointers it already held, so learning how far a run goes never
/// reads another indirect block first; the lab's reads of files just past
/// their direct blocks follow 4.4BSD's pattern (the direct run, the
/// indirect block, the rest) because of it.
pub fn contiguous_run<T: BlockTree + ?Sized>(
    t: &mut T,
    ino: Ino,
    lbn: Lbn,
    addr: Daddr,
    max: usize,
    units_per_block: u64,
) -> Result<usize> {
    let geometry = t.geometry();
    let Some(holder) = pointer_holder(&geometry, lbn) else { return Ok(1) };
    let mut run = 1;
    while run < max {
        let next = lbn + run as Lbn;
        if pointer_holder(&geometry, next) != Some(holder)
            || t.in_memory(ino, next)
            || pointer(t, ino, next)? != addr + run as u64 * units_per_block
        {
            break;
        }
        run += 1;
    }
    Ok(run)
}

/// Which pointers map block `lbn`: `Some(None)` for the inode's direct
/// slots, `Some(Some(meta))` for indirect block `meta`, `None` for a block
/// the inode points at alone (an indirect or the extended-attribute block)
/// or one out of range.
fn pointer_holder(geometry: &Geometry, lbn: Lbn) -> Option<Option<Lbn>> {
    match geometry.parent(lbn)? {
        Parent::Direct(_) => Some(None),
        Parent::Meta { meta, .. } => Some(Some(meta)),
        Parent::Indirect(_) | Parent::Xattr => None,
    }
}

/// Bytes read ahead after a sequential read: the next 64 KB cluster. The
/// 1995 paper's BSD-LFS and FFS read "in 64 KB clusters and read-ahead is
/// invoked on clusters rather than individual blocks" (§2), both with
/// 4.4BSD's `cluster_read`, which reads the wanted cluster and issues the
/// next one's read asynchronously (1993 §5.2: EFS and LFS "use the exact
/// same readahead algorithm"), so the disk reads it while the kernel copies
/// the first out.
pub const READ_AHEAD_BYTES: usize = 64 << 10;

/// Sequential-read detection for read-ahead: 4.4BSD's `v_lastr`, kept for
/// the one file read last (a second reader interleaved with the first
/// turns read-ahead off for both until one reads on alone), and the
/// cluster last read ahead for it. A reader in smaller units than a
/// cluster (the 1995 paper's 8 KB) gets one read-ahead per cluster: the
/// next is posted once it has entered the last one posted, as
/// `cluster_read` issued the next read-ahead when a read reached the
/// blocks the previous one had brought in.
#[derive(Debug, Default)]
pub struct ReadAhead {
    /// The inode read last and the block after the last one read.
    next: Option<(Ino, Lbn)>,
    /// The blocks last read ahead for that inode.
    window: Option<(Lbn, Lbn)>,
}

impl ReadAhead {
    /// Notes a read of `count` blocks of `ino` from `first`. Returns the
    /// block to read ahead from when the read is sequential — it starts the
    /// file or goes on where the last read of the same file ended — and has
    /// reached the last cluster read ahead (or there is none).
    pub fn note(&mut self, ino: Ino, first: Lbn, count: u64) -> Option<Lbn> {
        let sequential = first == 0 || self.next == Some((ino, first));
        let end = first + count as Lbn;
        if self.next.is_none_or(|(last, _)| last != ino) || !sequential {
            self.window = None;
        }
        self.next = Some((ino, end));
        match self.window {
            _ if !sequential => None,
            None => Some(end),
            Some((start, stop)) => (first >= start || end > stop).then_some(end.max(stop)),
        }
    }

    /// Notes that `blocks` blocks from `start` were read ahead.
    pub fn posted(&mut self, start: Lbn, blocks: usize) {
        self.window = Some((start, start + blocks as Lbn));
    }
}

/// What to read ahead from block `lbn` of `ino`: its address and the run
/// [`contiguous_run`] finds from it (at most `max` blocks), or `None` where
/// `lbn` is a hole or already held in memory.
pub fn read_ahead_run<T: BlockTree + ?Sized>(
    t: &mut T,
    ino: Ino,
    lbn: Lbn,
    max: usize,
    units_per_block: u64,
) -> Result<Option<(Daddr, usize)>> {
    if max == 0 || t.in_memory(ino, lbn) {
        return Ok(None);
    }
    let addr = pointer(t, ino, lbn)?;
    if addr.is_none() {
        return Ok(None);
    }
    Ok(Some((addr, contiguous_run(t, ino, lbn, addr, max, units_per_block)?)))
}

/// Makes block `lbn` of `ino` ready to be written: every indirect block
/// above it exists, and each block of the chain that was a hole is given
/// an address by [`BlockTree::assign`] (top first, each preferring the
/// address of what comes before it). Returns the address of block `lbn`
/// ([`Daddr::NONE`] when the layout assigns it later, or when it is
/// already held in memory without one).
pub fn balloc<T: BlockTree + ?Sized>(t: &mut T, ino: Ino, lbn: Lbn) -> Result<Daddr> {
    let mut chain = ancestors(&t.geometry(), lbn);
    chain.push(lbn);
    give_space(t, ino, chain)
}

/// Makes every indirect block above data block `lbn` of `ino` exist, as
/// [`balloc`] does, without giving `lbn` itself space: where a block that
/// already has space is moved to.
pub fn balloc_above<T: BlockTree + ?Sized>(t: &mut T, ino: Ino, lbn: Lbn) -> Result<()> {
    let chain = ancestors(&t.geometry(), lbn);
    give_space(t, ino, chain).map(|_| ())
}

/// Gives each block of `chain` (top first) that is a hole an address, as
/// [`balloc`] describes; returns the last one's.
fn give_space<T: BlockTree + ?Sized>(t: &mut T, ino: Ino, chain: Vec<Lbn>) -> Result<Daddr> {
    let mut preference = Daddr::NONE;
    let mut addr = Daddr::NONE;
    for name in chain {
        addr = pointer(t, ino, name)?;
        if addr.is_none() && !t.in_memory(ino, name) {
            addr = t.assign(ino, name, preference)?;
            if addr.is_some() {
                set_pointer(t, ino, name, addr)?;
            }
            if name < 0 && name != XATTR_LBN {
                t.indirect_mut(ino, name)?;
            }
        }
        if addr.is_some() {
            preference = addr;
        }
    }
    Ok(addr)
}

/// The data blocks of `ino` in `first .. first + count` that hold data, in
/// order.
pub fn data_blocks<T: BlockTree + ?Sized>(t: &mut T, ino: Ino, first: u64, count: u64) -> Result<Vec<u64>> {
    let end = first.saturating_add(count);
    let mut found = Vec::new();
    let mut at = first;
    while let Some(lbn) = next_data(t, ino, at, end)? {
        found.push(lbn);
        at = lbn + 1;
    }
    Ok(found)
}

/// Moves data blocks `from .. from + count` of `ino` to `to .. to + count`:
/// block `to + i` becomes what block `from + i` was (a hole stays a hole;
/// what `to + i` held is freed), and the blocks of the source range that
/// the destination does not cover become holes. Pointers move, not data
/// ([`BlockTree::relocate`]); the two ranges may overlap, so the walk goes
/// up when moving down the file and down when moving up, and each block
/// it moves onto has already been moved away or freed. Only blocks that
/// hold data at either end are visited, so a sparse file moves in steps
/// of its data. Indirect blocks left empty are not freed here: the caller
/// frees the range it knows to be empty ([`free_range`]).
pub fn move_blocks<T: BlockTree + ?Sized>(t: &mut T, ino: Ino, from: u64, to: u64, count: u64) -> Result<()> {
    if from == to || count == 0 {
        return Ok(());
    }
    let max = t.geometry().max_blocks();
    if from.max(to).checked_add(count).is_none_or(|end| end > max) {
        return Err(errno(libc::EFBIG, "blocks moved past the largest file"));
    }
    let mut steps: Vec<u64> = data_blocks(t, ino, from, count)?.into_iter().map(|l| l - from).collect();
    steps.extend(data_blocks(t, ino, to, count)?.into_iter().map(|l| l - to));
    steps.sort_unstable();
    steps.dedup();
    if to > from {
        steps.reverse();
    }
    for i in steps {
        let (source, target) = ((from + i) as Lbn, (to + i) as Lbn);
        free_one(t, ino, target)?;
        if !exists(t, ino, source)? {
            continue;
        }
        let addr = pointer(t, ino, source)?;
        let new = t.relocate(ino, source, target, addr)?;
        if addr.is_some() {
            set_pointer(t, ino, source, Daddr::NONE)?;
        }
        if new.is_some() {
            set_pointer(t, ino, target, new)?;
        }
    }
    Ok(())
}

/// Receives every pointer [`walk`] finds.
pub trait Visitor {
    /// Block `lbn` of the file lives at `addr` (not [`Daddr::NONE`]).
    /// Returns whether the block may be trusted; for an indirect block,
    /// whether to read it and follow its pointers.
    fn pointer(&mut self, lbn: Lbn, addr: Daddr) -> bool;

    /// Reads the indirect block at `addr` (one block).
    fn read(&mut self, addr: Daddr) -> Result<Vec<u8>>;

    /// Indirect block `lbn` at `addr` could not be read, or is not a sound
    /// indirect block of this file: its pointers are not followed.
    fn unreadable(&mut self, lbn: Lbn, addr: Daddr, error: Error);
}

/// Visits every pointer of `inode` in order: the direct blocks, each
/// indirect tree depth first (an indirect block before what it points
/// at), then the extended-attribute block. An indirect block is followed
/// only if the visitor trusts it and it passes [`Geometry::check`]: a
/// pointer read from a damaged block could send the walk anywhere.
pub fn walk(geometry: &Geometry, inode: &Inode, visitor: &mut impl Visitor) {
    for (lbn, &addr) in inode.direct.iter().enumerate() {
        if addr.is_some() {
            visitor.pointer(lbn as Lbn, addr);
        }
    }
    for (i, (&addr, &first)) in inode.indirect.iter().zip(tree_starts(geometry).iter()).enumerate() {
        if addr.is_some() {
            walk_indirect(geometry, inode.ino, i + 1, first, addr, visitor);
        }
    }
    if inode.xattr.is_some() {
        visitor.pointer(XATTR_LBN, inode.xattr);
    }
}

/// Visits the indirect block at `level` covering data from `first`, at
/// `addr`, and what it points at.
fn walk_indirect(geometry: &Geometry, ino: Ino, level: usize, first: u64, addr: Daddr, v: &mut impl Visitor) {
    let lbn = Geometry::meta_lbn(level, first);
    if !v.pointer(lbn, addr) {
        return;
    }
    let block = match v.read(addr) {
        Ok(block) => block,
        Err(e) => return v.unreadable(lbn, addr, e),
    };
    if let Err(e) = geometry.check(&block, ino, lbn, addr) {
        return v.unreadable(lbn, addr, e);
    }
    let child_span = geometry.nindir.pow(level as u32 - 1);
    for i in 0..geometry.pointers_in(block.len()) {
        let Ok(child) = slot(geometry, &block, i as usize) else { break };
        if child.is_none() {
            continue;
        }
        let child_first = first + i * child_span;
        if level == 1 {
            v.pointer(child_first as Lbn, child);
        } else {
            walk_indirect(geometry, ino, level - 1, child_first, child, v);
        }
    }
}

#[cfg(test)]
#[path = "bmap_tests.rs"]
mod tests;
