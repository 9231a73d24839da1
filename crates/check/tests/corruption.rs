//! Corrupted images never make mount, the namespace or fsck panic, hang or
//! allocate without bound.
//!
//! Two populated 4 MiB images (4 KiB blocks, 64 KiB segments) are built
//! through the library: one unmounted cleanly, one with log written after the
//! last checkpoint (files fsynced, then the file system dropped without
//! unmounting). Every block of each is classified by the kind of structure it
//! holds, found with the library's public decoders alone. Then, for each kind,
//! many damaged copies — bits flipped (1, 8, many), bytes overwritten, the
//! block zeroed or filled with garbage, each either left as is ("raw") or
//! with every checksum over it recomputed ("resealed", so the damage passes
//! validation and reaches the code behind it) — are mounted, walked
//! through `ufs::FileSystem` (readdir everywhere, every file read, readlink,
//! every xattr), unmounted, and separately checked and repaired by fsck.
//!
//! Module map:
//! * allocation guard ([`Guard`]) — the test binary's global allocator: it
//!   records each thread's largest single allocation and refuses (with the
//!   case named on stderr) any request over [`REFUSE_BYTES`];
//! * images ([`Fixture`], [`fixtures`]) — the two images, their surveys and
//!   what an undamaged walk sees;
//! * survey ([`Structure`], [`Survey`], [`survey`]) — where each kind of
//!   structure lives;
//! * damage ([`Damage`], [`damage_block`], [`reseal`]);
//! * walking ([`walk`]) — everything the namespace serves, as a [`Listing`];
//! * one case ([`Case`], [`run_case`]) — mount + walk + unmount, then check,
//!   repair and check again, on a thread bounded by [`LIMIT`];
//! * the tests — baselines, one test per structure kind, a crafted
//!   directory of one block repeated, and reproducers of the bugs found.
//!
//! What must hold in every case: no panic, no hang, no single allocation over
//! [`LARGEST_ALLOCATION`]; after a repair that ends with exit status 0 or 1 a
//! fresh check is clean, and after exit status 4 a fresh check reports only
//! problems the repair's last check reported. On the cleanly unmounted image,
//! raw damage to a checksummed structure must never be served: whatever the
//! walk returns equals what the undamaged image returns; and one raw-damaged
//! superblock copy never prevents mount.
//!
//! The tests at the end of the file reproduce bugs this suite found: a
//! damaged version field in superblock copy 0, an inode number over a million
//! in a log inode block, and a directory whose indirect blocks repeat one
//! block.
//!
//! `FSLAB_CORRUPTION_SEEDS` sets the seeds per (image, damage, sealing)
//! combination (default 12).

use disk::MemDisk;
use fslab::format::blockno::seal_indirect;
use fslab::format::codec::{crc32c_append, crc32c_skipping};
use fslab::format::crc32c;
use fslab::format::dirent::{seal_chunk, DIRBLKSIZ};
use fslab::format::inode::{Inode, INODE_SIZE};
use fslab::format::{Daddr, Ino, Lbn, IFILE_INO, ROOT_INO};
use fslab::lfs::ifile::Tables;
use fslab::lfs::inspect::superblock_copies;
use fslab::lfs::layout::{seal_ifile_block, Summary, Superblock};
use fslab::lfs::{Lfs, MkfsOptions, MountOptions};
use fslab::ufs::{Creds, FileSystem};
use fslab_check::{Options, Outcome, Report};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{mpsc, Arc, OnceLock};
use std::time::{Duration, Instant};

/// Bytes per block.
const BS: usize = 4096;
/// Bytes per segment.
const SEGMENT: u32 = 64 << 10;
/// Bytes of each image (64 segments).
const IMAGE_BYTES: u64 = 4 << 20;
/// Longest one case may take (mount, walk, unmount, check, repair, check).
const LIMIT: Duration = Duration::from_secs(20);
/// Largest single allocation a case may make (the images are 4 MiB).
const LARGEST_ALLOCATION: usize = 64 << 20;
/// Single allocations the guard refuses outright (the process aborts).
const REFUSE_BYTES: usize = 1 << 30;
/// Bytes of one file the walk reads at most.
const MAX_FILE_READ: u64 = 8 << 20;
/// Bytes all files of one walk read at most.
const MAX_WALK_READ: u64 = 64 << 20;
/// Directories one walk visits at most.
const MAX_DIRS: usize = 2_000;
/// Directory entries one walk looks at, at most.
const MAX_ENTRIES: usize = 20_000;
/// Failures listed in a test's message.
const SHOWN_FAILURES: usize = 12;

// ---------------------------------------------------------------------------
// Allocation guard

/// The global allocator of this test binary: the system allocator, plus a
/// per-thread record of the largest single request, plus a refusal of any
/// request over [`REFUSE_BYTES`] (which names the running case on stderr;
/// the process then aborts with "memory allocation failed").
struct Guard;

thread_local! {
    /// The largest single allocation this thread has asked for.
    static LARGEST: Cell<usize> = const { Cell::new(0) };
    /// The case this thread runs, for the refusal message.
    static LABEL: Cell<[u8; 96]> = const { Cell::new([b' '; 96]) };
}

#[global_allocator]
static GUARD: Guard = Guard;

impl Guard {
    /// Records a request of `size` bytes; false if it must be refused.
    fn admit(size: usize) -> bool {
        if size > REFUSE_BYTES {
            let label = LABEL.try_with(Cell::get).unwrap_or([b'?'; 96]);
            let mut digits = [0u8; 20];
            let mut n = size;
            let mut at = digits.len();
            loop {
                at -= 1;
                digits[at] = b'0' + (n % 10) as u8;
                n /= 10;
                if n == 0 {
                    break;
                }
            }
            for part in [
                &b"\ncorruption.rs: refused an allocation of "[..],
                &digits[at..],
                &b" bytes (sized from the image?) in case: "[..],
                &label[..],
                &b"\n"[..],
            ] {
                // SAFETY: writing a valid buffer to stderr; no allocation.
                unsafe { libc::write(2, part.as_ptr().cast(), part.len()) };
            }
            return false;
        }
        let _ = LARGEST.try_with(|l| l.set(l.get().max(size)));
        true
    }
}

// SAFETY: every call is forwarded to `System` with the same arguments; a
// refusal returns null, which the `GlobalAlloc` contract allows.
unsafe impl GlobalAlloc for Guard {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if !Guard::admit(layout.size()) {
            return std::ptr::null_mut();
        }
        // SAFETY: forwarded from our caller.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if !Guard::admit(layout.size()) {
            return std::ptr::null_mut();
        }
        // SAFETY: forwarded from our caller.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if !Guard::admit(new_size) {
            return std::ptr::null_mut();
        }
        // SAFETY: forwarded from our caller.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded from our caller.
        unsafe { System.dealloc(ptr, layout) }
    }
}

/// Names the case this thread runs in the guard's refusal message.
fn set_label(label: &str) {
    let mut buf = [b' '; 96];
    let n = label.len().min(buf.len());
    buf[..n].copy_from_slice(&label.as_bytes()[..n]);
    let _ = LABEL.try_with(|l| l.set(buf));
}

/// The process's peak resident set, from `/proc/self/status` (0 if unknown).
fn peak_rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

// ---------------------------------------------------------------------------
// Images

/// Mount options of every mount here: a small cache, as for small images.
fn mount_options() -> MountOptions {
    MountOptions { cache_bytes: 16 << 20, ..MountOptions::default() }
}

/// Bytes `0..len` of a file, deterministic.
fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect()
}

/// Fills a fresh file system: directories (one of two blocks), files of
/// several sizes (one with single and double indirect blocks), a symlink, a
/// hard link, a FIFO, and xattrs on a file and a directory. Three hundred
/// files in `/many` make the inode map two blocks long.
fn populate(fs: &mut FileSystem<Lfs>) -> fslab::Result<()> {
    let c = Creds::default();
    let docs = fs.mkdir(ROOT_INO, b"docs", 0o755, c)?.ino;
    let deep = fs.mkdir(docs, b"deep", 0o755, c)?.ino;
    fs.mkdir(deep, b"deeper", 0o755, c)?;
    let small = fs.mknod(docs, b"small", 0o644, 0, c)?.ino;
    fs.write(small, 0, b"hello, world\n")?;
    let medium = fs.mknod(ROOT_INO, b"medium", 0o644, 0, c)?.ino;
    fs.write(medium, 0, &pattern(200 << 10, 1))?;
    fs.setxattr(medium, b"user.note", b"kept", 0)?;
    fs.setxattr(docs, b"user.dir", b"an attribute of a directory", 0)?;
    let large = fs.mknod(deep, b"large", 0o644, 0, c)?.ino;
    fs.write(large, 0, &pattern(64 << 10, 2))?;
    // Past the single indirect tree: a double indirect block.
    fs.write(large, (12 + 1024 + 3) * BS as u64, &pattern(BS, 3))?;
    fs.symlink(ROOT_INO, b"link", b"docs/small", c)?;
    fs.link(small, ROOT_INO, b"small-again")?;
    fs.mknod(ROOT_INO, b"fifo", libc::S_IFIFO | 0o644, 0, c)?;
    for i in 0..12usize {
        let f = fs.mknod(docs, format!("file{i:02}").as_bytes(), 0o644, 0, c)?.ino;
        fs.write(f, 0, &pattern(1000 + i * 2500, i as u8))?;
    }
    let many = fs.mkdir(ROOT_INO, b"many", 0o755, c)?.ino;
    for i in 0..300usize {
        let f = fs.mknod(many, format!("entry-{i:04}").as_bytes(), 0o644, 0, c)?.ino;
        if i % 10 == 0 {
            fs.write(f, 0, &pattern(100 + i, i as u8))?;
        }
    }
    Ok(())
}

/// The inode at `path` (components separated by `/`, from the root).
fn resolve(fs: &mut FileSystem<Lfs>, path: &str) -> fslab::Result<Ino> {
    let mut ino = ROOT_INO;
    for name in path.split('/').filter(|n| !n.is_empty()) {
        ino = fs.lookup(ino, name.as_bytes())?.ino;
    }
    Ok(ino)
}

/// Changes made after the last checkpoint, each made durable by fsync (a
/// partial segment of its own), so that mount must roll them forward.
fn append_log(fs: &mut FileSystem<Lfs>) -> fslab::Result<()> {
    let medium = resolve(fs, "medium")?;
    fs.write(medium, 4096, &pattern(8192, 9))?;
    fs.fsync(medium, false)?;
    let docs = resolve(fs, "docs")?;
    let late = fs.mknod(docs, b"late", 0o644, 0, Creds::default())?.ino;
    fs.write(late, 0, &pattern(20 << 10, 10))?;
    fs.fsync(late, false)?;
    let small = resolve(fs, "docs/small")?;
    fs.setxattr(small, b"user.late", b"after the checkpoint", 0)?;
    fs.fsync(small, false)?;
    let large = resolve(fs, "docs/deep/large")?;
    fs.write(large, 100 * BS as u64, &pattern(BS, 11))?;
    fs.fsync(large, false)?;
    Ok(())
}

/// One undamaged image with what is known about it.
struct Fixture {
    /// "clean" or "tail".
    name: &'static str,
    /// Its bytes.
    image: Vec<u8>,
    /// Where each kind of structure is.
    survey: Survey,
    /// What a walk of the undamaged image sees.
    listing: Listing,
}

/// The two images: `clean` (unmounted cleanly) and `tail` (log after the
/// checkpoint, not unmounted).
struct Fixtures {
    clean: Fixture,
    tail: Fixture,
}

fn build_fixtures() -> Fixtures {
    let dev = Arc::new(MemDisk::new(IMAGE_BYTES));
    let options = MkfsOptions { block_size: BS as u32, segment_size: SEGMENT };
    fslab::mkfs_lfs(dev.clone(), &options, Creds::default()).expect("mkfs");
    let mut fs = FileSystem::new(Lfs::mount(dev.clone(), mount_options()).expect("mount"));
    populate(&mut fs).expect("populate");
    fs.unmount().expect("unmount");
    let clean = dev.snapshot();
    let mut fs = FileSystem::new(Lfs::mount(dev.clone(), mount_options()).expect("mount again"));
    append_log(&mut fs).expect("log after the checkpoint");
    drop(fs);
    let tail = dev.snapshot();
    let fixture = |name, image: Vec<u8>| {
        let survey = survey(&image);
        let dev = Arc::new(MemDisk::from_bytes(image.clone()));
        let mut fs = FileSystem::new(Lfs::mount(dev, mount_options()).expect("mount undamaged"));
        let listing = walk(&mut fs);
        Fixture { name, image, survey, listing }
    };
    Fixtures { clean: fixture("clean", clean), tail: fixture("tail", tail) }
}

/// Both images, built once for the whole test binary.
fn fixtures() -> &'static Fixtures {
    static FIXTURES: OnceLock<Fixtures> = OnceLock::new();
    FIXTURES.get_or_init(build_fixtures)
}

// ---------------------------------------------------------------------------
// Survey

/// A kind of on-disk structure (`docs/FORMAT.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Structure {
    /// A superblock copy.
    Superblock,
    /// A partial-segment summary.
    Summary,
    /// An inode block (the ifile's inode included).
    InodeBlock,
    /// Ifile block 0.
    CleanerInfo,
    /// Ifile blocks 1 ..= T.
    SegmentUsage,
    /// Ifile blocks after the segment usage table.
    InodeMap,
    /// A directory's data block.
    Directory,
    /// An indirect block (single or double).
    Indirect,
    /// An extended-attribute block.
    Xattr,
    /// A plain data block (file contents, symlink target).
    Data,
}

/// One block to damage.
#[derive(Debug, Clone, Copy)]
struct Target {
    /// Its address.
    daddr: Daddr,
    /// The summary of the partial segment holding it, whose data checksum
    /// covers it (`None` for superblocks and summaries).
    partial: Option<Daddr>,
    /// Whether that partial segment was written after the checkpoint (mount
    /// rolls it forward).
    in_tail: bool,
}

/// Where each kind of structure lives in an image.
struct Survey {
    /// The blocks of each kind.
    by_kind: BTreeMap<Structure, Vec<Target>>,
    /// Blocks after each summary, by the summary's address.
    partial_blocks: HashMap<Daddr, u32>,
    /// The checkpoint's inode map: the block holding each inode (0: free).
    imap: Vec<Daddr>,
}

/// Block `daddr` of `image`.
fn block(image: &[u8], daddr: Daddr) -> &[u8] {
    &image[daddr.get() as usize * BS..(daddr.get() as usize + 1) * BS]
}

/// Inode `ino` in the inode block at `daddr`.
fn inode_in(image: &[u8], daddr: Daddr, ino: Ino) -> Option<Inode> {
    block(image, daddr).chunks_exact(INODE_SIZE).filter_map(|s| Inode::decode(s).ok()).find(|i| i.ino == ino)
}

/// The kind of ifile block `lbn` when the segment usage table is `segtab`
/// blocks long.
fn ifile_kind(lbn: Lbn, segtab: u32) -> Structure {
    match lbn {
        ..=-1 => Structure::Indirect,
        0 => Structure::CleanerInfo,
        l if l <= segtab as Lbn => Structure::SegmentUsage,
        _ => Structure::InodeMap,
    }
}

/// Classifies the block tree of `inode`: its data (or directory) blocks, its
/// indirect blocks, its xattr block.
fn classify_tree(image: &[u8], inode: &Inode, kinds: &mut BTreeMap<Daddr, Structure>) {
    let leaf = if inode.attr.is_dir() { Structure::Directory } else { Structure::Data };
    for &d in inode.direct.iter().filter(|&&d| d.is_some()) {
        kinds.insert(d, leaf);
    }
    fn pointers(
        image: &[u8],
        daddr: Daddr,
        level: usize,
        leaf: Structure,
        kinds: &mut BTreeMap<Daddr, Structure>,
    ) {
        if daddr.is_none() {
            return;
        }
        kinds.insert(daddr, Structure::Indirect);
        let indirect = block(image, daddr);
        let children: Vec<Daddr> = indirect[..indirect.len() - fslab::format::blockno::INDIRECT_TRAILER]
            .chunks_exact(4)
            .map(|p| Daddr::from_pointer(u32::from_le_bytes([p[0], p[1], p[2], p[3]])))
            .filter(|&p| p.is_some())
            .collect();
        for child in children {
            if level == 0 {
                kinds.insert(child, leaf);
            } else {
                pointers(image, child, level - 1, leaf, kinds);
            }
        }
    }
    for (level, &d) in inode.indirect.iter().enumerate() {
        pointers(image, d, level, leaf, kinds);
    }
    if inode.xattr.is_some() {
        kinds.insert(inode.xattr, Structure::Xattr);
    }
}

/// Finds every structure of `image` with the public decoders: superblock
/// copies; every segment's chain of summaries; the checkpoint's ifile, its
/// tables, and through the inode map every live inode and its block tree;
/// and every block of the log after the checkpoint, by its summary's FINFO.
fn survey(image: &[u8]) -> Survey {
    let dev = MemDisk::from_bytes(image.to_vec());
    let copies = superblock_copies(&dev);
    let sb: Superblock = copies
        .iter()
        .filter_map(|c| c.result.as_ref().ok().copied())
        .max_by_key(|s| s.checkpoint.serial)
        .expect("a valid superblock");
    let mut kinds: BTreeMap<Daddr, Structure> = BTreeMap::new();
    for copy in copies.iter().filter(|c| c.result.is_ok()) {
        kinds.insert(Daddr::new(copy.offset / BS as u64), Structure::Superblock);
    }

    // Every segment's partial segments, front to back.
    let bps = sb.blocks_per_segment();
    let mut partial_of: HashMap<Daddr, Daddr> = HashMap::new();
    let mut partial_blocks: HashMap<Daddr, u32> = HashMap::new();
    let mut tail_partials: HashSet<Daddr> = HashSet::new();
    let mut tail_blocks: Vec<(Daddr, Ino, Lbn)> = Vec::new();
    let mut tail_inode_blocks: Vec<Daddr> = Vec::new();
    for seg in 0..sb.nsegments {
        let mut offset = u64::from(sb.sb_segments[..sb.ncopies as usize].contains(&seg));
        let mut last_serial = None;
        while offset + 1 < bps {
            let at = Daddr::new(seg * bps + offset);
            let Ok(s) = Summary::decode(block(image, at), at) else { break };
            let n = s.nblocks as u64;
            if s.fs_id != sb.fs_id
                || n == 0
                || offset + 1 + n > bps
                || last_serial.is_some_and(|l| s.serial <= l)
            {
                break;
            }
            last_serial = Some(s.serial);
            kinds.insert(at, Structure::Summary);
            partial_blocks.insert(at, s.nblocks);
            let tail = s.serial >= sb.checkpoint.next_summary_serial;
            if tail {
                tail_partials.insert(at);
            }
            let mut b = at + 1;
            for f in &s.finfos {
                for &lbn in &f.lbns {
                    partial_of.insert(b, at);
                    if tail {
                        tail_blocks.push((b, f.ino, lbn));
                    }
                    b += 1;
                }
            }
            for _ in 0..s.ninoblocks {
                partial_of.insert(b, at);
                if tail {
                    tail_inode_blocks.push(b);
                }
                b += 1;
            }
            offset += 1 + n;
        }
    }

    // The checkpoint: the ifile, its tables, every live inode.
    let segtab = sb.segtab_blocks;
    let ifile_daddr = sb.checkpoint.ifile_daddr;
    let ifile = inode_in(image, ifile_daddr, IFILE_INO).expect("the ifile inode");
    kinds.insert(ifile_daddr, Structure::InodeBlock);
    let nblocks = (ifile.attr.size / BS as u64) as usize;
    assert!(nblocks <= ifile.direct.len(), "the ifile of a small image has direct blocks only");
    let blocks: Vec<Vec<u8>> = (0..nblocks)
        .map(|lbn| {
            kinds.insert(ifile.direct[lbn], ifile_kind(lbn as Lbn, segtab));
            block(image, ifile.direct[lbn]).to_vec()
        })
        .collect();
    let tables = Tables::decode(sb.block_size, sb.nsegments, sb.blocks_per_segment(), segtab as u64, &blocks)
        .expect("ifile tables");
    let mut modes: HashMap<Ino, u32> = HashMap::new();
    for (ino, entry) in tables.entries_in_memory().skip(IFILE_INO as usize + 1) {
        if entry.daddr.is_none() {
            continue;
        }
        kinds.insert(entry.daddr, Structure::InodeBlock);
        let inode = inode_in(image, entry.daddr, ino as Ino).expect("a live inode where the map says");
        modes.insert(ino as Ino, inode.attr.mode);
        classify_tree(image, &inode, &mut kinds);
    }

    // The log after the checkpoint, by its summaries.
    for &b in &tail_inode_blocks {
        kinds.insert(b, Structure::InodeBlock);
        for inode in block(image, b).chunks_exact(INODE_SIZE).filter_map(|s| Inode::decode(s).ok()) {
            modes.insert(inode.ino, inode.attr.mode);
        }
    }
    for &(b, ino, lbn) in &tail_blocks {
        let kind = if ino == IFILE_INO {
            ifile_kind(lbn, segtab)
        } else if lbn == fslab::format::blockno::XATTR_LBN {
            Structure::Xattr
        } else if lbn < 0 {
            Structure::Indirect
        } else if modes.get(&ino).is_some_and(|&m| m & libc::S_IFMT == libc::S_IFDIR) {
            Structure::Directory
        } else {
            Structure::Data
        };
        kinds.insert(b, kind);
    }

    let mut by_kind: BTreeMap<Structure, Vec<Target>> = BTreeMap::new();
    for (&daddr, &kind) in &kinds {
        let partial = match kind {
            Structure::Superblock | Structure::Summary => None,
            _ => partial_of.get(&daddr).copied(),
        };
        let in_tail = partial.is_some_and(|p| tail_partials.contains(&p));
        by_kind.entry(kind).or_default().push(Target { daddr, partial, in_tail });
    }
    let imap = tables.entries_in_memory().map(|(_, e)| e.daddr).collect();
    Survey { by_kind, partial_blocks, imap }
}

// ---------------------------------------------------------------------------
// Damage

/// What is done to one block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Damage {
    /// Flip this many random bits.
    FlipBits(u32),
    /// Overwrite this many random bytes with random values.
    RandomBytes(u32),
    /// Zero the whole block.
    Zero,
    /// Fill the whole block with random bytes.
    Garbage,
}

/// Every damage each structure kind gets.
const DAMAGES: [Damage; 7] = [
    Damage::FlipBits(1),
    Damage::FlipBits(8),
    Damage::FlipBits(300),
    Damage::RandomBytes(1),
    Damage::RandomBytes(16),
    Damage::Zero,
    Damage::Garbage,
];

/// Applies `damage` to `block`.
fn damage_block(block: &mut [u8], damage: Damage, rng: &mut SmallRng) {
    match damage {
        Damage::FlipBits(n) => {
            for _ in 0..n {
                let bit = rng.gen_range(0..block.len() * 8);
                block[bit / 8] ^= 1 << (bit % 8);
            }
        }
        Damage::RandomBytes(n) => {
            for _ in 0..n {
                let at = rng.gen_range(0..block.len());
                block[at] = rng.gen();
            }
        }
        Damage::Zero => block.fill(0),
        Damage::Garbage => rng.fill(block),
    }
}

fn put_u32(bytes: &mut [u8], at: usize, value: u32) {
    bytes[at..at + 4].copy_from_slice(&value.to_le_bytes());
}

/// Recomputes every checksum over the block at `target` as a structure of
/// `kind` (and the data checksum of its partial segment), so that damage
/// passes validation.
fn reseal(image: &mut [u8], kind: Structure, target: Target, survey: &Survey) {
    let d = target.daddr.get() as usize;
    // An indirect block's checksum names its file and block: the summary
    // of its partial segment says which.
    let owner = target.partial.and_then(|p| {
        let summary = Summary::decode(block(image, p), p).ok()?;
        let slot = (target.daddr.units_after(p) - 1) as usize;
        summary.finfos.iter().flat_map(|f| f.lbns.iter().map(move |&lbn| (f.ino, lbn))).nth(slot)
    });
    let blk = &mut image[d * BS..(d + 1) * BS];
    match kind {
        Structure::Superblock => {
            let crc = crc32c_skipping(blk, 12);
            put_u32(blk, 12, crc);
        }
        Structure::Summary | Structure::Xattr => {
            let crc = crc32c_skipping(blk, 4);
            put_u32(blk, 4, crc);
        }
        Structure::InodeBlock => {
            for slot in blk.chunks_exact_mut(INODE_SIZE).filter(|s| s.iter().any(|&b| b != 0)) {
                let crc = crc32c_skipping(slot, INODE_SIZE - 4);
                put_u32(slot, INODE_SIZE - 4, crc);
            }
        }
        Structure::CleanerInfo | Structure::SegmentUsage | Structure::InodeMap => seal_ifile_block(blk),
        Structure::Directory => blk.chunks_exact_mut(DIRBLKSIZ).for_each(seal_chunk),
        Structure::Indirect => {
            if let Some((ino, lbn)) = owner {
                seal_indirect(blk, ino, lbn);
            }
        }
        Structure::Data => {}
    }
    if let Some(p) = target.partial {
        let n = survey.partial_blocks[&p] as usize;
        let p = p.get() as usize;
        let crc = crc32c(&image[(p + 1) * BS..(p + 1 + n) * BS]);
        let summary = &mut image[p * BS..(p + 1) * BS];
        put_u32(summary, 8, crc);
        let crc = crc32c_skipping(summary, 4);
        put_u32(summary, 4, crc);
    }
}

// ---------------------------------------------------------------------------
// Walking

/// What the namespace served, one entry per path (and per path and xattr
/// name): a short description with a checksum of any contents.
type Listing = BTreeMap<Vec<u8>, String>;

/// Reads everything the namespace serves from the root down: readdir of
/// every directory, lookup and getattr of every entry, every file read (up
/// to [`MAX_FILE_READ`]), every symlink's target, every xattr. Any call may
/// fail; what succeeded goes into the listing. Bounded in directories,
/// entries and bytes read, whatever the image says.
fn walk(fs: &mut FileSystem<Lfs>) -> Listing {
    let mut out = Listing::new();
    let mut stack: Vec<(Ino, Vec<u8>)> = vec![(ROOT_INO, b"/".to_vec())];
    let mut seen: HashSet<Ino> = HashSet::new();
    let mut read_budget = MAX_WALK_READ;
    let mut entries_left = MAX_ENTRIES;
    if let Ok(root) = fs.getattr(ROOT_INO) {
        out.insert(b"/".to_vec(), format!("dir {:o}", root.attr.mode));
        xattrs(fs, ROOT_INO, b"/", &mut out);
    }
    while let Some((dir, path)) = stack.pop() {
        if seen.len() >= MAX_DIRS || !seen.insert(dir) {
            continue;
        }
        let mut offset = 0;
        while let Ok(entries) = fs.readdir(dir, offset, 128) {
            let Some(last) = entries.last() else { break };
            if last.next_offset <= offset {
                break;
            }
            offset = last.next_offset;
            for e in entries {
                entries_left = entries_left.saturating_sub(1);
                if e.name == b"." || e.name == b".." {
                    continue;
                }
                let mut child = path.clone();
                if child.len() > 1 {
                    child.push(b'/');
                }
                child.extend_from_slice(&e.name);
                let _ = fs.lookup(dir, &e.name);
                let Ok(inode) = fs.getattr(e.ino) else { continue };
                let a = inode.attr;
                if a.is_dir() {
                    out.insert(child.clone(), format!("dir {:o}", a.mode));
                    stack.push((e.ino, child.clone()));
                } else if a.is_reg() {
                    let limit = a.size.min(MAX_FILE_READ).min(read_budget);
                    let (mut at, mut crc, mut ok) = (0u64, 0u32, true);
                    while at < limit {
                        match fs.read(e.ino, at, (256 << 10).min(limit - at) as usize) {
                            Ok(bytes) if bytes.is_empty() => break,
                            Ok(bytes) => {
                                crc = crc32c_append(crc, &bytes);
                                at += bytes.len() as u64;
                            }
                            Err(_) => {
                                ok = false;
                                break;
                            }
                        }
                    }
                    read_budget -= at.min(read_budget);
                    if ok {
                        out.insert(
                            child.clone(),
                            format!("file {:o} {} {} {crc:08x}", a.mode, a.nlink, a.size),
                        );
                    }
                } else if a.is_symlink() {
                    if let Ok(target) = fs.readlink(e.ino) {
                        out.insert(child.clone(), format!("link {}", String::from_utf8_lossy(&target)));
                    }
                } else {
                    out.insert(child.clone(), format!("node {:o} {}", a.mode, a.rdev));
                }
                xattrs(fs, e.ino, &child, &mut out);
            }
            if entries_left == 0 {
                return out;
            }
        }
    }
    out
}

/// Every xattr of `ino`, into `out` under `path` NUL name.
fn xattrs(fs: &mut FileSystem<Lfs>, ino: Ino, path: &[u8], out: &mut Listing) {
    let _ = fs.getxattr(ino, b"user.note");
    let Ok(names) = fs.listxattr(ino) else { return };
    for name in names.split(|&b| b == 0).filter(|n| !n.is_empty()).take(64) {
        if let Ok(value) = fs.getxattr(ino, name) {
            let mut key = path.to_vec();
            key.push(0);
            key.extend_from_slice(name);
            out.insert(key, format!("xattr {:08x} {}", crc32c(&value), value.len()));
        }
    }
}

// ---------------------------------------------------------------------------
// One case

/// One damaged image to try.
#[derive(Debug, Clone, Copy)]
struct Case {
    /// Which image.
    clean_image: bool,
    /// Which kind of structure is damaged.
    kind: Structure,
    /// How.
    damage: Damage,
    /// Whether checksums over the damage are recomputed.
    resealed: bool,
    /// Picks the block and the damage's randomness.
    seed: u64,
}

impl Case {
    fn label(&self) -> String {
        format!(
            "{} image, {:?}, {:?}, {}, seed {}",
            if self.clean_image { "clean" } else { "tail" },
            self.kind,
            self.damage,
            if self.resealed { "resealed" } else { "raw" },
            self.seed
        )
    }
}

/// What one case did (when it neither panicked nor hung).
#[derive(Debug, Default)]
struct Ran {
    /// The block damaged.
    daddr: Daddr,
    /// Whether mount succeeded.
    mounted: bool,
    /// fsck's exit status (8: it could not run).
    exit: u8,
    /// The largest single allocation of the case's thread.
    largest_allocation: usize,
    /// Properties that did not hold.
    violations: Vec<String>,
}

/// Damages a copy of the case's image and runs mount + walk + unmount, then
/// check, repair and check again, checking the properties of the module
/// comment. Runs on the calling thread.
fn execute(case: Case) -> Ran {
    let fx = fixtures();
    let fixture = if case.clean_image { &fx.clean } else { &fx.tail };
    let targets = &fixture.survey.by_kind[&case.kind];
    let mut rng = SmallRng::seed_from_u64(case.seed ^ ((case.kind as u64) << 32));
    let target = targets[rng.gen_range(0..targets.len())];
    let mut image = fixture.image.clone();
    let d = target.daddr.get() as usize;
    damage_block(&mut image[d * BS..(d + 1) * BS], case.damage, &mut rng);
    if case.resealed {
        reseal(&mut image, case.kind, target, &fixture.survey);
    }
    let mut ran = Ran { daddr: target.daddr, ..Ran::default() };

    // Mount, walk, unmount.
    let dev = Arc::new(MemDisk::from_bytes(image.clone()));
    match Lfs::mount(dev, mount_options()) {
        Ok(lfs) => {
            ran.mounted = true;
            let mut fs = FileSystem::new(lfs);
            let listing = walk(&mut fs);
            let _ = fs.unmount();
            let checksummed = case.kind != Structure::Data;
            if case.clean_image && !case.resealed && checksummed {
                for (key, value) in &listing {
                    if fixture.listing.get(key) != Some(value) {
                        ran.violations.push(format!(
                            "served damaged content: {:?} is {value:?}, undamaged {:?}",
                            String::from_utf8_lossy(key),
                            fixture.listing.get(key)
                        ));
                        break;
                    }
                }
            }
        }
        Err(e) => {
            if case.kind == Structure::Superblock && !case.resealed {
                ran.violations.push(format!("one damaged superblock copy prevents mount: {e}"));
            }
        }
    }

    // fsck: check, repair, check again.
    let dev = Arc::new(MemDisk::from_bytes(image));
    let _ = fslab_check::check(dev.as_ref(), &Options::default(), &mut |_| {});
    let repair = Options { repair: true, ..Options::default() };
    ran.exit = 8;
    if let Ok(outcome) = fslab_check::fsck(dev.clone(), &repair, &mut |_| {}) {
        ran.exit = outcome.exit_code();
        match fslab_check::check(dev.as_ref(), &Options::default(), &mut |_| {}) {
            Ok(again) => ran.violations.extend(after_repair(&outcome, &again)),
            Err(e) => ran.violations.push(format!("fsck ran, then a check could not: {e}")),
        }
    }
    ran.largest_allocation = LARGEST.with(Cell::get);
    if ran.largest_allocation > LARGEST_ALLOCATION {
        ran.violations.push(format!("a single allocation of {} bytes", ran.largest_allocation));
    }
    ran
}

/// What a check right after a repair may report: nothing after exit status
/// 0 or 1; after 4, only problems the repair's last check reported.
fn after_repair(outcome: &Outcome, again: &Report) -> Vec<String> {
    let code = outcome.exit_code();
    let left: HashSet<(fslab_check::Kind, &str)> =
        outcome.last.problems.iter().map(|p| (p.kind, p.message.as_str())).collect();
    let new: Vec<String> = again
        .problems
        .iter()
        .filter(|p| code < 4 || !left.contains(&(p.kind, p.message.as_str())))
        .take(3)
        .map(|p| format!("{:?}: {p}", p.kind))
        .collect();
    if new.is_empty() && (code == 4 || again.omitted == 0) {
        return Vec::new();
    }
    vec![format!(
        "fsck exited {code} (repaired {:?}, failed {:?}) but a check right after reports {new:?}",
        outcome.repaired.iter().map(|r| &r.message).collect::<Vec<_>>(),
        outcome.failed
    )]
}

/// Runs `case` on its own thread, bounded by [`LIMIT`]; a panic, a hang or
/// a violated property comes back as `Err` naming the case.
fn run_case(case: Case) -> Result<Ran, String> {
    let label = case.label();
    match run_bounded(&label, move || execute(case))? {
        ran if ran.violations.is_empty() => Ok(ran),
        ran => Err(format!("{label} (block {}): {}", ran.daddr, ran.violations.join("; "))),
    }
}

/// Runs `body` on its own thread named by `label`, bounded by [`LIMIT`]; a
/// panic or a hang comes back as `Err` naming `label`.
fn run_bounded<T: Send + 'static>(
    label: &str,
    body: impl FnOnce() -> T + Send + 'static,
) -> Result<T, String> {
    let (tx, rx) = mpsc::channel();
    let thread_label = label.to_string();
    std::thread::Builder::new()
        .name(format!("case {label}"))
        .spawn(move || {
            set_label(&thread_label);
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)).map_err(|payload| {
                payload
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_else(|| "a panic without a message".into())
            });
            let _ = tx.send(result);
        })
        .map_err(|e| format!("{label}: cannot start a thread: {e}"))?;
    match rx.recv_timeout(LIMIT) {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(panic)) => Err(format!("{label}: PANIC: {panic}")),
        Err(mpsc::RecvTimeoutError::Timeout) => Err(format!("{label}: HUNG for more than {LIMIT:?}")),
        Err(mpsc::RecvTimeoutError::Disconnected) => Err(format!("{label}: the case's thread died")),
    }
}

/// Every case for `kind`: both images, every damage, raw and resealed,
/// `FSLAB_CORRUPTION_SEEDS` seeds each; fails listing every case that
/// panicked, hung or broke a property.
fn damage_everywhere(kind: Structure) {
    let seeds = testkit::harness::env_or("FSLAB_CORRUPTION_SEEDS", 12);
    fixtures();
    let started = Instant::now();
    let mut failures: Vec<String> = Vec::new();
    let (mut cases, mut mounted, mut statuses) = (0usize, 0usize, [0usize; 9]);
    let mut largest = 0usize;
    for clean_image in [true, false] {
        for damage in DAMAGES {
            for resealed in [false, true] {
                for seed in 0..seeds {
                    let case = Case { clean_image, kind, damage, resealed, seed };
                    cases += 1;
                    match run_case(case) {
                        Ok(ran) => {
                            mounted += usize::from(ran.mounted);
                            statuses[ran.exit as usize] += 1;
                            largest = largest.max(ran.largest_allocation);
                        }
                        Err(why) => failures.push(why),
                    }
                }
            }
        }
    }
    eprintln!(
        "{kind:?}: {cases} cases in {:?}: {mounted} mounted; fsck exit 0: {}, 1: {}, 4: {}, 8: {}; \
         largest allocation {largest} bytes; peak RSS {} MiB",
        started.elapsed(),
        statuses[0],
        statuses[1],
        statuses[4],
        statuses[8],
        peak_rss_bytes() >> 20
    );
    assert!(
        failures.is_empty(),
        "{} of {cases} damaged images of {kind:?} broke a rule:\n  {}",
        failures.len(),
        failures.iter().take(SHOWN_FAILURES).cloned().collect::<Vec<_>>().join("\n  ")
    );
    assert!(peak_rss_bytes() < 1 << 30, "peak RSS {} MiB", peak_rss_bytes() >> 20);
}

// ---------------------------------------------------------------------------
// Baselines

#[test]
fn the_survey_finds_every_kind_of_structure_in_both_images() {
    let fx = fixtures();
    for fixture in [&fx.clean, &fx.tail] {
        for kind in [
            Structure::Superblock,
            Structure::Summary,
            Structure::InodeBlock,
            Structure::CleanerInfo,
            Structure::SegmentUsage,
            Structure::InodeMap,
            Structure::Directory,
            Structure::Indirect,
            Structure::Xattr,
            Structure::Data,
        ] {
            let n = fixture.survey.by_kind.get(&kind).map_or(0, Vec::len);
            assert!(n > 0, "{} image: no {kind:?} found", fixture.name);
        }
        let copies = fixture.survey.by_kind[&Structure::Superblock].len();
        assert_eq!(copies, 4, "{} image: superblock copies", fixture.name);
        let imap = fixture.survey.by_kind[&Structure::InodeMap].len();
        assert!(imap >= 2, "{} image: the inode map is {imap} blocks", fixture.name);
    }
}

#[test]
fn undamaged_images_mount_walk_completely_and_check_clean() {
    let fx = fixtures();
    for fixture in [&fx.clean, &fx.tail] {
        let l = &fixture.listing;
        for path in ["/docs/small", "/medium", "/docs/deep/large", "/link", "/fifo", "/many/entry-0299"] {
            assert!(l.contains_key(path.as_bytes()), "{} image: the walk misses {path}", fixture.name);
        }
        assert!(
            l.contains_key(&b"/medium\0user.note"[..]),
            "{} image: the walk misses the xattr",
            fixture.name
        );
        let dev = Arc::new(MemDisk::from_bytes(fixture.image.clone()));
        let report = fslab_check::check(dev.as_ref(), &Options::default(), &mut |_| {}).expect("check");
        assert!(report.is_clean(), "{} image: {:?}", fixture.name, report.problems);
    }
    let tail = &fx.tail.listing;
    assert!(
        tail.contains_key(&b"/docs/late"[..]),
        "roll-forward recovers the file made after the checkpoint"
    );
    assert!(tail.contains_key(&b"/docs/small\0user.late"[..]), "and the xattr set after it");
    assert_ne!(fx.clean.listing.get(&b"/medium"[..]), tail.get(&b"/medium"[..]), "and the write after it");
}

#[test]
fn an_undamaged_case_passes_every_rule() {
    // Flipping no bits: the image is undamaged.
    let ran = run_case(Case {
        clean_image: true,
        kind: Structure::Data,
        damage: Damage::FlipBits(0),
        resealed: false,
        seed: 0,
    })
    .expect("an undamaged image passes");
    assert!(ran.mounted);
    assert_eq!(ran.exit, 0);
    assert!(ran.largest_allocation <= LARGEST_ALLOCATION);
}

/// The clean image with directory `/many` made 4 GiB long by single and
/// double indirect blocks that name its own first block over and over: about
/// eight million chunks of the same valid entries. Crafted rather than random,
/// and needing no resealing but the inode's: an indirect block has no
/// checksum. Returns the image and the directory's inode number.
fn repeating_directory_image() -> (Vec<u8>, Ino) {
    let fx = &fixtures().clean;
    let mut image = fx.image.clone();
    let dev = Arc::new(MemDisk::from_bytes(image.clone()));
    let mut fs = FileSystem::new(Lfs::mount(dev, mount_options()).expect("mount"));
    let many = fs.lookup(ROOT_INO, b"many").expect("lookup").ino;
    drop(fs);
    let at = fx.survey.imap[many as usize];
    let target = fx.survey.by_kind[&Structure::InodeBlock]
        .iter()
        .copied()
        .find(|t| t.daddr == at)
        .expect("the inode block of /many");
    // Two blocks nothing uses, at the end of the last segment.
    let used: HashSet<Daddr> = fx.survey.by_kind.values().flatten().map(|t| t.daddr).collect();
    let mut free = (0..(IMAGE_BYTES / BS as u64)).rev().map(Daddr::new).filter(|d| !used.contains(d));
    let (single, double) = (free.next().expect("a free block"), free.next().expect("another"));
    let d = at.get() as usize;
    let slot = image[d * BS..(d + 1) * BS]
        .chunks_exact_mut(INODE_SIZE)
        .find(|s| Inode::decode(s).is_ok_and(|i| i.ino == many))
        .expect("the slot of /many");
    let mut inode = Inode::decode(slot).expect("decodes");
    let first = inode.direct[0];
    inode.direct.iter_mut().filter(|p| p.is_none()).for_each(|p| *p = first);
    inode.indirect[0] = single;
    inode.indirect[1] = double;
    inode.attr.size = (12 + 1024 + 1024 * 1024) * BS as u64;
    inode.encode(slot).expect("pointers fit");
    for (blk, pointer) in [(single, first), (double, single)] {
        let b = blk.get() as usize;
        for p in image[b * BS..(b + 1) * BS].chunks_exact_mut(4) {
            p.copy_from_slice(&pointer.to_pointer().expect("fits").to_le_bytes());
        }
    }
    reseal(&mut image, Structure::InodeBlock, target, &fx.survey);
    (image, many)
}

#[test]
fn fsck_checks_a_directory_whose_indirect_blocks_repeat_one_block_in_bounded_time() {
    let (image, _) = repeating_directory_image();
    let ran = run_bounded("fsck of a directory of one block repeated", move || {
        let dev = Arc::new(MemDisk::from_bytes(image));
        let first = fslab_check::check(dev.as_ref(), &Options::default(), &mut |_| {});
        let repair = Options { repair: true, ..Options::default() };
        let outcome = fslab_check::fsck(dev, &repair, &mut |_| {});
        (first.map(|r| r.is_clean()).ok(), outcome.map(|o| o.exit_code()).ok(), LARGEST.with(Cell::get))
    });
    let (first_clean, exit, largest) = ran.expect("finishes without a panic in time");
    assert_eq!(first_clean, Some(false), "the check finds the repeated blocks");
    assert!(exit.is_some_and(|e| e != 0), "fsck exits {exit:?}");
    assert!(largest <= LARGEST_ALLOCATION, "a single allocation of {largest} bytes");
}

/// Found by `repeating_directory_image`: the first lookup in the directory
/// builds its name index by reading every block up to the inode's size
/// (`Ns::scan_dir`, ufs/dir.rs:106, `for lbn in 0..size / bs`), so the work —
/// and the index's `free` vector, one u16 per chunk — grows with the size the
/// inode claims (up to the 4 TiB file limit), not with the blocks on the
/// device: here over a million block reads and about two hundred million
/// index insertions, minutes for a 4 MiB image. The same scan accepts a name
/// that appears twice (`entry(..).or_insert`), so the repeated entries are
/// not noticed as damage either.
#[test]
fn a_lookup_in_a_directory_whose_indirect_blocks_repeat_one_block_finishes_in_bounded_time() {
    let (image, many) = repeating_directory_image();
    let ran = run_bounded("lookup in a directory of one block repeated", move || {
        let dev = Arc::new(MemDisk::from_bytes(image));
        let mut fs = FileSystem::new(Lfs::mount(dev, mount_options()).expect("mount"));
        let found = fs.lookup(many, b"no-such-name").map(|i| i.ino);
        let _ = fs.unmount();
        (found.map_err(|e| e.errno()), LARGEST.with(Cell::get))
    });
    let (found, largest) = ran.expect("finishes without a panic in time");
    assert!(found.is_err(), "no such name: {found:?}");
    assert!(largest <= LARGEST_ALLOCATION, "a single allocation of {largest} bytes");
}

// ---------------------------------------------------------------------------
// One test per structure kind

#[test]
fn any_damage_to_a_superblock_copy_never_panics_mount_or_fsck() {
    damage_everywhere(Structure::Superblock);
}

#[test]
fn any_damage_to_a_segment_summary_never_panics_mount_or_fsck() {
    damage_everywhere(Structure::Summary);
}

#[test]
fn any_damage_to_an_inode_block_never_panics_mount_or_fsck() {
    damage_everywhere(Structure::InodeBlock);
}

#[test]
fn any_damage_to_the_cleaner_info_never_panics_mount_or_fsck() {
    damage_everywhere(Structure::CleanerInfo);
}

#[test]
fn any_damage_to_the_segment_usage_table_never_panics_mount_or_fsck() {
    damage_everywhere(Structure::SegmentUsage);
}

#[test]
fn any_damage_to_the_inode_map_never_panics_mount_or_fsck() {
    damage_everywhere(Structure::InodeMap);
}

#[test]
fn any_damage_to_a_directory_block_never_panics_mount_or_fsck() {
    damage_everywhere(Structure::Directory);
}

#[test]
fn any_damage_to_an_indirect_block_never_panics_mount_or_fsck() {
    damage_everywhere(Structure::Indirect);
}

#[test]
fn any_damage_to_an_xattr_block_never_panics_mount_or_fsck() {
    damage_everywhere(Structure::Xattr);
}

#[test]
fn any_damage_to_a_data_block_never_panics_mount_or_fsck() {
    damage_everywhere(Structure::Data);
}

// ---------------------------------------------------------------------------
// Reproducers of bugs found here

/// Found by `any_damage_to_a_superblock_copy_never_panics_mount_or_fsck`
/// (clean image, FlipBits(8), raw, seed 26): one flipped bit in the version
/// field of superblock copy 0 makes the file system unmountable although
/// three intact copies remain. `Superblock::decode` (lfs/layout.rs) judges
/// the version before the checksum and returns `Error::Foreign`, and
/// `find_superblocks` (lfs/mount.rs) returns a `Foreign` error of copy 0 at
/// once instead of trying the other copies. A copy whose checksum fails is
/// damage, not a newer format: the checksum should be checked first. fsck
/// meanwhile says nothing about the copy (a `Foreign` copy is not a
/// problem when another copy is valid), so it calls the image clean.
#[test]
fn a_bit_flip_in_the_version_of_superblock_copy_0_does_not_prevent_mount() {
    let mut image = fixtures().clean.image.clone();
    image[8] ^= 0x10; // version 1 → 17; the checksum no longer matches
    let dev = Arc::new(MemDisk::from_bytes(image));
    let report = fslab_check::check(dev.as_ref(), &Options::default(), &mut |_| {}).expect("check runs");
    let mounted = Lfs::mount(dev, mount_options()).map(|_| ());
    assert!(
        mounted.is_ok() && !report.is_clean(),
        "mount: {:?}; fsck's problems (it should report the damaged copy): {:?}",
        mounted.err(),
        report.problems
    );
}

/// Found by `any_damage_to_an_inode_block_never_panics_mount_or_fsck` (tail
/// image, InodeBlock, FlipBits(8), resealed, seed 86 with 100 seeds): the
/// test binary aborted on a refused allocation of 2 GiB. Roll-forward
/// installs every valid inode of a log inode block, and for an inode number
/// past the inode map `Tables::ensure_inode` (lfs/ifile.rs:157, called from
/// `replay_inode`, lfs/rollforward.rs:224) grows the map a block at a time
/// until it covers the number — any number up to `u32::MAX`
/// (rollforward.rs:179 only skips larger ones): up to 64 GiB of entries,
/// sized from one on-disk field, before anything checks that the ifile could
/// ever hold them. Here the number is eight million (a 128 MiB map) so the
/// test fails instead of aborting.
#[test]
fn an_inode_number_in_the_log_does_not_size_the_inode_map() {
    let fx = &fixtures().tail;
    let target = fx.survey.by_kind[&Structure::InodeBlock]
        .iter()
        .copied()
        .find(|t| t.in_tail)
        .expect("an inode block written after the checkpoint");
    let mut image = fx.image.clone();
    let d = target.daddr.get() as usize;
    let slot = image[d * BS..(d + 1) * BS]
        .chunks_exact_mut(INODE_SIZE)
        .find(|s| Inode::decode(s).is_ok_and(|i| i.ino > IFILE_INO))
        .expect("a file's inode in it");
    let mut inode = Inode::decode(slot).expect("decodes");
    inode.ino = 8_000_000;
    inode.encode(slot).expect("pointers fit");
    reseal(&mut image, Structure::InodeBlock, target, &fx.survey);
    let dev = Arc::new(MemDisk::from_bytes(image));
    LARGEST.with(|l| l.set(0));
    let mounted = Lfs::mount(dev, mount_options()).map(|_| ());
    let largest = LARGEST.with(Cell::get);
    assert!(
        largest <= LARGEST_ALLOCATION,
        "mount ({:?}) made a single allocation of {largest} bytes for one inode number in the log",
        mounted.err()
    );
}
