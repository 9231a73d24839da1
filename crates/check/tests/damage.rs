//! Random damage, on either layout: 200 damaged copies of a populated
//! image (random bits flipped in one to three of the blocks that hold
//! anything), each checked read-only (which must change nothing) and then
//! repaired, each run bounded in time. fsck must never panic, hang or run
//! away, check and repair must agree on whether the image is clean, and
//! fsck must find every damage it can see. `FSLAB_FSCK_DAMAGE` changes the
//! number of copies.
//!
//! What LFS's fsck can see ([`guarded_blocks`]): every superblock copy (a
//! CRC over the whole block) and every block of a partial segment that
//! holds a live block or inode — its summary has a CRC over itself, and
//! fsck checks the summary's CRC over all the partial segment's blocks the
//! first time it confirms a live block from it. So file data is covered
//! there too, though a read does not check it (docs/SEMANTICS.md,
//! "Images"). What it cannot see, and need not: blocks no live structure
//! names any more — dead partial segments (old copies of data, inodes and
//! ifile blocks, which the cleaner has not yet reclaimed), and the zeros
//! past the end of the log. A flip there changes nothing anything will read.
//! Measured before setting the thresholds (seed below, 200 copies): 193
//! rounds left errors (exit 4), 3 were repaired (exit 1), 4 were clean; all
//! 4 clean ones touched only dead partial segments. So: every round that
//! touches a guarded block must end with exit status 1 or 4 (a miss is a
//! checksum that is not checked), and most rounds must touch one (else the
//! image is mostly dead space and the test says little).
//!
//! What FFS's fsck can see ([`ffs_guarded`]): every structure but file data
//! carries a checksum it checks — superblock copies, group areas, every
//! inode slot below its group's initialised mark, indirect, directory and
//! extended-attribute blocks. Every round that flips a byte of one must end
//! with exit status 1 or 4; one that ends with 1 must leave an image a
//! fresh check calls clean, that mounts, and whose tree walks consistently
//! (testkit's walk); one that ends with 4 after repairing something must
//! leave it unmountable (not marked clean). And at least a quarter of the
//! rounds must touch such a byte, or the test says little. Measured before
//! setting that share (the seed here, 200 copies): 64 rounds touched a
//! guarded byte, all were found and repaired (exit 1); the other 136
//! touched only file data and checked clean. With fsck's inode-checksum
//! check turned off, 2 of the 64 go unreported and 8 rounds break a rule.
//! A journaled image runs the same rounds, and is used after its repair
//! with the journal.

mod common;

use common::*;
use disk::{BlockDevice, MemDisk};
use fslab::bmap;
use fslab::ffs::mkfs::{read_group, read_superblock};
use fslab::format::blockno::{is_indirect, XATTR_LBN};
use fslab::format::inode::{Inode, INODE_SIZE};
use fslab::format::{Daddr, Lbn};
use fslab::lfs::layout::Summary;
use fslab::lfs::{Lfs, MountOptions};
use fslab_check::{Options, Outcome};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::{BTreeSet, HashSet};
use std::ops::Range;
use std::sync::Arc;
use std::time::{Duration, Instant};

const LIMIT: Duration = Duration::from_secs(20);

/// What the rounds over one image found.
#[derive(Default)]
struct Rounds {
    statuses: [usize; 9],
    /// Rounds that flipped a guarded byte, and those of them fsck found.
    guarded: usize,
    guarded_found: usize,
    /// Rules broken, with the round and blocks damaged.
    broken: Vec<String>,
}

impl Rounds {
    /// Fails with the first rules broken, if any; returns how many rounds ran.
    #[track_caller]
    fn assert_unbroken(&self) -> usize {
        assert!(
            self.broken.is_empty(),
            "{} rounds broke a rule; the first:\n{}",
            self.broken.len(),
            self.broken[..self.broken.len().min(10)].join("\n")
        );
        self.statuses.iter().sum()
    }
}

/// What must hold of the image a repair left (beyond the checks every
/// round makes); says what does not.
type AfterRepair<'a> = &'a dyn Fn(&Arc<MemDisk>, &Outcome) -> Result<(), String>;

/// Damages copies of `image` (blocks of `unit` bytes) and runs fsck on
/// each (see the module comment); `guarded` says whether fsck must see a
/// flipped byte, `after` checks the image a repair left.
fn damage_rounds(
    image: &[u8],
    unit: usize,
    seed: u64,
    guarded: &dyn Fn(usize) -> bool,
    after: AfterRepair,
) -> Rounds {
    let used: Vec<usize> = image
        .chunks_exact(unit)
        .enumerate()
        .filter(|(_, b)| b.iter().any(|&x| x != 0))
        .map(|(i, _)| i)
        .collect();
    assert!(used.len() > 50, "the image holds data");
    let copies = testkit::harness::env_or("FSLAB_FSCK_DAMAGE", 200);
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut rounds = Rounds::default();
    for round in 0..copies {
        let mut bytes = image.to_vec();
        let blocks = if round % 4 == 0 { 3 } else { 1 };
        let (mut damaged, mut flipped) = (Vec::new(), Vec::new());
        for _ in 0..blocks {
            let block = used[rng.gen_range(0..used.len())];
            damaged.push(block);
            for _ in 0..rng.gen_range(1..=8) {
                let at = block * unit + rng.gen_range(0..unit);
                bytes[at] ^= 1 << rng.gen_range(0..8);
                flipped.push(at);
            }
        }
        let dev: Arc<MemDisk> = Arc::new(MemDisk::from_bytes(bytes));
        let started = Instant::now();
        let before = dev.snapshot();
        let checked = fslab_check::check(dev.as_ref() as &dyn BlockDevice, &Options::default(), &mut |_| {});
        assert!(
            started.elapsed() < LIMIT,
            "round {round} (blocks {damaged:?}): check took {:?}",
            started.elapsed()
        );
        assert!(
            dev.snapshot() == before,
            "round {round} (blocks {damaged:?}): a read-only check changed the image"
        );
        let started = Instant::now();
        let options = Options { repair: true, ..Options::default() };
        let outcome = fslab_check::fsck(dev.clone(), &options, &mut |_| {});
        assert!(
            started.elapsed() < LIMIT,
            "round {round} (blocks {damaged:?}): fsck took {:?}",
            started.elapsed()
        );
        let status = outcome.as_ref().map_or(8, |o| o.exit_code() as usize);
        if let Ok(report) = checked {
            assert_eq!(
                report.is_clean(),
                status == 0,
                "round {round}: check and fsck agree on a clean image"
            );
        }
        rounds.statuses[status] += 1;
        if flipped.iter().any(|&at| guarded(at)) {
            rounds.guarded += 1;
            if status == 0 {
                rounds
                    .broken
                    .push(format!("round {round} (blocks {damaged:?}): damage fsck can see went unreported"));
            } else {
                rounds.guarded_found += 1;
            }
        }
        if let Ok(outcome) = &outcome {
            if let Err(why) = after(&dev, outcome) {
                rounds.broken.push(format!("round {round} (blocks {damaged:?}): {why}"));
            }
        }
    }
    let s = rounds.statuses;
    eprintln!(
        "exit statuses over {copies} damaged copies: 0: {}, 1: {}, 4: {}, 8: {}; {} of {} rounds that damaged a \
         byte fsck must see were found",
        s[0], s[1], s[4], s[8], rounds.guarded_found, rounds.guarded
    );
    rounds
}

/// The blocks of `image` where any damage is fsck's to find (module doc).
fn guarded_blocks(image: &[u8]) -> BTreeSet<u64> {
    let dev = Arc::new(MemDisk::from_bytes(image.to_vec()));
    let sb = superblock(dev.as_ref());
    let mut guarded: BTreeSet<u64> =
        (0..sb.ncopies as usize).map(|i| sb.copy_offset(i) / BS as u64).collect();
    let mut lfs = Lfs::mount(dev, MountOptions::default()).expect("mount the undamaged image");
    let table = lfs.segment_table();
    let bps = table.blocks_per_segment;
    for (seg, state) in table.segments.iter().enumerate() {
        let seg = seg as u64;
        if state.clean {
            continue;
        }
        let refs = lfs.segment_refs(seg).expect("segment refs");
        let now = lfs.bmapv(&refs).expect("bmapv");
        let live: HashSet<u64> = refs
            .iter()
            .zip(&now)
            .filter(|(r, at)| **at == r.daddr && at.is_some())
            .map(|(r, _)| r.daddr.get())
            .collect();
        let bytes = lfs.read_segment(seg).expect("read segment");
        let mut offset = state.first_log_block;
        while offset + 1 < bps {
            let start = seg * bps + offset;
            let block = &bytes[offset as usize * BS..(offset as usize + 1) * BS];
            let Ok(summary) = Summary::decode(block, Daddr::new(start)) else { break };
            let n = summary.nblocks as u64;
            if summary.fs_id != table.fs_id || n == 0 {
                break;
            }
            if (start + 1..=start + n).any(|d| live.contains(&d)) {
                guarded.extend(start..=start + n);
            }
            offset += 1 + n;
        }
    }
    guarded
}

#[test]
fn random_damage_to_lfs_is_found_where_fsck_can_see_it_and_never_makes_it_panic_or_hang() {
    let (dev, _) = populated();
    let image = dev.snapshot();
    let guarded = guarded_blocks(&image);
    let is_guarded = |at: usize| guarded.contains(&((at / BS) as u64));
    let rounds = damage_rounds(&image, BS, 0xdead_f5c4, &is_guarded, &|_, _| Ok(()));
    let copies = rounds.assert_unbroken();
    assert!(
        rounds.guarded * 4 >= copies * 3,
        "only {} of {copies} rounds damaged a block fsck can see: the image is mostly dead space",
        rounds.guarded
    );
}

/// The byte ranges of an FFS image whose damage fsck must find (module
/// comment), found with the public decoders and the block-map walk.
fn ffs_guarded(dev: &dyn BlockDevice) -> Vec<Range<usize>> {
    let sb = read_superblock(dev).expect("superblock");
    let geo = sb.geometry;
    let bs = geo.block_size as usize;
    let at = |frag: u64| geo.byte_offset(frag) as usize;
    let mut ranges = Vec::new();
    for g in 0..geo.ncg {
        ranges.push(at(geo.group_base(g))..at(geo.group_base(g)) + 4096);
        ranges.push(at(geo.cg_addr(g))..at(geo.cg_addr(g)) + geo.cg_sections().end);
        let mark = read_group(dev, &sb, g).expect("group").initialised_inodes() as usize;
        let table = at(geo.group_base(g) + geo.inode_table_offset() as u64);
        ranges.push(table..table + mark * INODE_SIZE);
        let mut slots = vec![0u8; mark * INODE_SIZE];
        dev.read_at(table as u64, &mut slots).expect("read");
        for slot in slots.chunks_exact(INODE_SIZE) {
            let Some(inode) = Inode::decode(slot).ok().filter(|i| i.attr.mode != 0) else { continue };
            let mut v =
                Metadata { dev, frag: geo.frag_size as u64, bs, dir: inode.attr.is_dir(), found: Vec::new() };
            bmap::walk(&sb.indirect_geometry(), &inode, &mut v);
            ranges.extend(v.found.into_iter().map(|f| at(f)..at(f) + bs));
        }
    }
    ranges
}

/// Collects the checksummed blocks a walk of one inode meets: indirect and
/// extended-attribute blocks, and a directory's blocks.
struct Metadata<'d> {
    dev: &'d dyn BlockDevice,
    frag: u64,
    bs: usize,
    dir: bool,
    found: Vec<u64>,
}

impl bmap::Visitor for Metadata<'_> {
    fn pointer(&mut self, lbn: Lbn, addr: Daddr) -> bool {
        if is_indirect(lbn) || lbn == XATTR_LBN || self.dir {
            self.found.push(addr.get());
        }
        true
    }

    fn read(&mut self, addr: Daddr) -> fslab::Result<Vec<u8>> {
        let mut block = vec![0u8; self.bs];
        self.dev.read_at(addr.byte_offset(self.frag), &mut block)?;
        Ok(block)
    }

    fn unreadable(&mut self, _lbn: Lbn, _addr: Daddr, e: fslab::Error) {
        panic!("the undamaged image has an unreadable indirect block: {e}");
    }
}

/// What an FFS repair must leave (module comment).
fn ffs_after(dev: &Arc<MemDisk>, outcome: &Outcome) -> Result<(), String> {
    ffs_after_in(dev, outcome, fslab::ffs::Integrity::Sync)
}

/// [`ffs_after`], the image mounted in `integrity` mode.
fn ffs_after_in(
    dev: &Arc<MemDisk>,
    outcome: &Outcome,
    integrity: fslab::ffs::Integrity,
) -> Result<(), String> {
    let options = fslab::ffs::MountOptions { integrity, ..fslab::ffs::MountOptions::default() };
    let mount = || fslab::ffs::Ffs::mount(dev.clone(), options.clone());
    match outcome.exit_code() {
        1 => {
            let again = check(dev);
            if !again.is_clean() {
                return Err(format!("exit 1, but a check after it reports:\n{}", listing(&again)));
            }
            let mut fs = fslab::ufs::FileSystem::new(mount().map_err(|e| format!("exit 1, but mount: {e}"))?);
            testkit::crash::walk(&mut fs).map_err(|e| format!("exit 1, but the tree: {e}"))?;
            fs.unmount().map_err(|e| format!("unmount: {e}"))
        }
        4 if !outcome.repaired.is_empty() && mount().is_ok() => {
            Err(format!("exit 4 after repairs, but the image mounts; left:\n{}", listing(&outcome.last)))
        }
        _ => Ok(()),
    }
}

#[test]
fn random_damage_to_ffs_is_found_wherever_fsck_can_see_it_and_repairs_leave_a_sound_image() {
    let (dev, _) = ffs::populated();
    let guarded = ffs_guarded(dev.as_ref());
    let is_guarded = |at: usize| guarded.iter().any(|r| r.contains(&at));
    let rounds = damage_rounds(&dev.snapshot(), 8192, 0xdead_ffc4, &is_guarded, &ffs_after);
    let copies = rounds.assert_unbroken();
    // A fifth, not a quarter: the log's blocks, about a quarter of those
    // in use here, are nothing a check of a clean image reads (what lands
    // there must only do no harm), and how many of them hold records
    // depends on the image's identity, drawn at mkfs.
    assert!(
        rounds.guarded * 5 >= copies,
        "only {} of {copies} rounds damaged what fsck can see: the test says little",
        rounds.guarded
    );
}

/// The same on a journaled image (a `file` log in one group's data area,
/// which a clean image's check need not read), repaired and then used
/// with its journal.
#[test]
fn random_damage_to_a_journaled_ffs_is_found_and_repairs_leave_an_image_the_journal_mounts() {
    let journal = fslab::ffs::Integrity::Journal;
    let dev = ffs::fresh_for(24 << 20, journal);
    ffs::with_fs_in(&dev, journal, false, populate);
    let guarded = ffs_guarded(dev.as_ref());
    let is_guarded = |at: usize| guarded.iter().any(|r| r.contains(&at));
    let after = |dev: &Arc<MemDisk>, outcome: &Outcome| ffs_after_in(dev, outcome, journal);
    let rounds = damage_rounds(&dev.snapshot(), 8192, 0xdead_ffc5, &is_guarded, &after);
    let copies = rounds.assert_unbroken();
    // A fifth, not a quarter: the log's blocks, about a quarter of those
    // in use here, are nothing a check of a clean image reads (what lands
    // there must only do no harm), and how many of them hold records
    // depends on the image's identity, drawn at mkfs.
    assert!(
        rounds.guarded * 5 >= copies,
        "only {} of {copies} rounds damaged what fsck can see: the test says little",
        rounds.guarded
    );
}

/// An unlinked file still open at unmount whose indirect block is damaged
/// cannot be freed; the unmount says so, but still makes everything else
/// durable (it returned before the final checkpoint, losing every write
/// since the last one).
#[test]
fn an_unlinked_file_that_cannot_be_freed_does_not_stop_the_final_checkpoint() {
    let dev = fresh(24 << 20);
    let c = fslab::ufs::Creds::default();
    let open = with_fs(&dev, false, |fs| {
        let ino = fs.mknod(fslab::format::ROOT_INO, b"open", 0o644, 0, c).expect("create").ino;
        fs.write(ino, 0, &pattern(20 * BS, 1)).expect("write");
        ino
    });
    let (_, _, inode) = inode_slot(dev.as_ref(), open);
    assert!(inode.indirect[0].is_some(), "the file has an indirect block");
    flip(dev.as_ref(), inode.indirect[0], 0, 8);
    let lfs = Lfs::mount(dev.clone(), MountOptions { cache_bytes: 32 << 20, ..MountOptions::default() })
        .expect("mount");
    let mut fs = fslab::ufs::FileSystem::new(lfs);
    fs.pin(open);
    fs.unlink(fslab::format::ROOT_INO, b"open").expect("unlink while open");
    let kept = fs.mknod(fslab::format::ROOT_INO, b"kept", 0o644, 0, c).expect("create").ino;
    fs.write(kept, 0, &pattern(3000, 2)).expect("write");
    assert!(fs.unmount().is_err(), "the damaged file's free failed");
    drop(fs);
    with_fs(&dev, true, |fs| {
        assert_eq!(
            fs.lookup(fslab::format::ROOT_INO, b"kept").expect("written before the unmount").ino,
            kept
        );
        assert_eq!(fs.read(kept, 0, 3000).expect("read"), pattern(3000, 2));
    });
}
