//! The fsck tests that are the same on both layouts, generic over
//! [`Layout`]: `tests/fsck.rs` runs them on LFS, `tests/ffs.rs` on FFS.
//! Each makes its image through the library, damages it through the
//! library (states a crash or a bug could leave), and requires the problem
//! found with its repair and the repair to leave a clean image.

use super::{check, listing, pattern, populate, run_on, Tree};
use disk::{BlockDevice, MemDisk};
use fslab::format::dirent::{seal_chunk, DIRBLKSIZ};
use fslab::format::inode::Inode;
use fslab::format::{Ino, ROOT_INO};
use fslab::storage::orphans::OrphanReport;
use fslab::storage::StorageManager;
use fslab::ufs::{Creds, FileSystem};
use fslab_check::{Fix, Kind, Outcome, Report, Severity};
use std::sync::Arc;

/// A `#[test]` for each case in this module, run on `$layout` (a
/// [`Layout`]); a test file says `shared_cases!(Lfs);` once. (Test files
/// that include `common` without it would warn of it.)
#[allow(unused_macros)]
macro_rules! shared_cases {
    ($layout:ty) => {
        shared_cases!(@each $layout:
            a_fresh_image_is_clean,
            a_populated_image_is_clean_and_every_inode_is_counted,
            a_wrong_link_count_is_found_and_repaired,
            an_orphan_left_by_a_crash_is_pending_reclaim_and_repair_frees_it,
            unreachable_files_and_directories_go_to_lost_and_found,
            on_a_full_disk_an_unreachable_file_is_reconnected_to_the_root,
            a_file_named_lost_and_found_is_kept_under_another_name,
            an_entry_naming_a_free_inode_is_found_and_removed,
            a_looping_orphan_list_stops_the_walk_and_the_mount_goes_on,
            a_looping_orphan_list_is_damage_that_repair_empties,
            a_name_listed_twice_keeps_the_first_entry_and_reconnects_the_other,
            a_file_whose_type_reads_as_a_device_with_data_is_cleared,
        );
    };
    (@each $layout:ty: $($case:ident),* $(,)?) => {
        $(
            #[test]
            fn $case() {
                $crate::common::cases::$case::<$layout>();
            }
        )*
    };
}
#[allow(unused_imports)]
pub(crate) use shared_cases;

/// A layout the cases run on.
pub trait Layout {
    /// What fsck calls it.
    const KIND: fslab_check::Layout;
    /// Its storage manager.
    type S: StorageManager;
    /// A fresh, empty image of `bytes` bytes.
    fn fresh(bytes: u64) -> Arc<MemDisk>;
    /// Mounts `dev`, runs `body`, then unmounts — or with `crash`, drops
    /// the file system without unmounting.
    fn with_fs<T>(dev: &Arc<MemDisk>, crash: bool, body: impl FnOnce(&mut FileSystem<Self::S>) -> T) -> T;
    /// What a repair that ended with exit status 1 must leave besides an
    /// image that checks clean.
    fn after_repair(dev: &Arc<MemDisk>);
    /// Rewrites inode `ino` where the image holds it, after `change`, with
    /// a valid checksum (damage a bug could leave).
    fn rewrite_inode(dev: &Arc<MemDisk>, ino: Ino, change: impl FnOnce(&mut Inode));
    /// Rewrites the first 512-byte chunk of directory `dir` where the
    /// image holds it, after `change`, resealed (and, for LFS, its partial
    /// segment's checksum recomputed): damage every checksum passes, as a
    /// torn directory write can leave.
    fn rewrite_first_dir_chunk(dev: &Arc<MemDisk>, dir: Ino, change: impl FnOnce(&mut [u8]));
    /// The head of the orphan list the image holds.
    fn orphan_head(dev: &Arc<MemDisk>) -> Ino;
    /// What the mount of `fs` did with the orphan list.
    fn orphan_report(fs: &mut FileSystem<Self::S>) -> OrphanReport;

    /// A populated ([`populate`]), cleanly unmounted 24 MiB image.
    fn populated() -> (Arc<MemDisk>, Tree) {
        let dev = Self::fresh(24 << 20);
        let tree = Self::with_fs(&dev, false, populate);
        (dev, tree)
    }
}

/// The log-structured layout (`tests/common`'s images).
pub struct Lfs;

impl Layout for Lfs {
    const KIND: fslab_check::Layout = fslab_check::Layout::Lfs;
    type S = fslab::lfs::Lfs;
    fn fresh(bytes: u64) -> Arc<MemDisk> {
        super::fresh(bytes)
    }
    fn with_fs<T>(dev: &Arc<MemDisk>, crash: bool, body: impl FnOnce(&mut FileSystem<Self::S>) -> T) -> T {
        super::with_fs(dev, crash, body)
    }
    fn after_repair(_dev: &Arc<MemDisk>) {}
    fn rewrite_inode(dev: &Arc<MemDisk>, ino: Ino, change: impl FnOnce(&mut Inode)) {
        super::rewrite_inode(dev.as_ref(), ino, change)
    }
    fn rewrite_first_dir_chunk(dev: &Arc<MemDisk>, dir: Ino, change: impl FnOnce(&mut [u8])) {
        let daddr = super::inode_slot(dev.as_ref(), dir).2.direct[0];
        let at = daddr.byte_offset(super::BS as u64);
        rewrite_chunk_at(dev, at, change);
        super::reseal_partial_of(dev.as_ref(), daddr);
    }
    fn orphan_head(dev: &Arc<MemDisk>) -> Ino {
        super::superblock(dev.as_ref()).checkpoint.orphan_head
    }
    fn orphan_report(fs: &mut FileSystem<Self::S>) -> OrphanReport {
        fs.storage().orphan_report().clone()
    }
}

/// The Fast File System (`tests/common/ffs.rs`'s images).
pub struct Ffs;

impl Layout for Ffs {
    const KIND: fslab_check::Layout = fslab_check::Layout::Ffs;
    type S = fslab::ffs::Ffs;
    fn fresh(bytes: u64) -> Arc<MemDisk> {
        super::ffs::fresh(bytes)
    }
    fn with_fs<T>(dev: &Arc<MemDisk>, crash: bool, body: impl FnOnce(&mut FileSystem<Self::S>) -> T) -> T {
        super::ffs::with_fs(dev, crash, body)
    }
    /// Marked clean, so that it mounts.
    fn after_repair(dev: &Arc<MemDisk>) {
        let sb = super::ffs::superblock(dev.as_ref());
        assert!(sb.flags & fslab::ffs::layout::SB_CLEAN != 0, "marked clean");
        let options = fslab::ffs::MountOptions::default();
        run_on(fslab::ffs::Ffs::mount(dev.clone(), options).expect("mounts"), false, |fs| {
            fs.getattr(ROOT_INO).expect("the root")
        });
    }
    fn rewrite_inode(dev: &Arc<MemDisk>, ino: Ino, change: impl FnOnce(&mut Inode)) {
        super::ffs::rewrite_inode(dev.as_ref(), ino, change)
    }
    fn rewrite_first_dir_chunk(dev: &Arc<MemDisk>, dir: Ino, change: impl FnOnce(&mut [u8])) {
        let block = super::ffs::inode(dev.as_ref(), dir).direct[0].get();
        let at = super::ffs::geometry(dev.as_ref()).byte_offset(block);
        rewrite_chunk_at(dev, at, change);
    }
    fn orphan_head(dev: &Arc<MemDisk>) -> Ino {
        super::ffs::superblock(dev.as_ref()).orphan_head
    }
    fn orphan_report(fs: &mut FileSystem<Self::S>) -> OrphanReport {
        fs.storage().orphan_report().clone()
    }
}

/// Rewrites the 512-byte directory chunk at byte `at` of `dev` after
/// `change`, with its checksum recomputed.
fn rewrite_chunk_at(dev: &Arc<MemDisk>, at: u64, change: impl FnOnce(&mut [u8])) {
    let mut chunk = vec![0u8; DIRBLKSIZ];
    dev.read_at(at, &mut chunk).expect("read");
    change(&mut chunk);
    seal_chunk(&mut chunk);
    dev.write_at(at, &chunk).expect("write");
}

/// Repairs `dev`, then requires exit status 1, an image a fresh check
/// calls clean, and the layout's [`Layout::after_repair`].
#[track_caller]
pub fn repaired_to_clean<L: Layout>(dev: &Arc<MemDisk>) -> Outcome {
    let outcome = super::repair(dev);
    assert_repaired_to_clean(dev, &outcome);
    L::after_repair(dev);
    outcome
}

/// Writes `len` bytes of garbage over `image` at each of `offsets` in turn,
/// on a copy of its own, and requires each to repair to an image that
/// checks clean, takes a new file through the layout's mount and checks
/// clean again. At every fourth offset the repair is also cut after each
/// of its writes in turn ([`a_repair_cut_after_any_write_is_finished_by_the_next`]),
/// and every regular file's contents the uncut repair kept must be kept.
pub fn garbage_at_each_offset_repairs_to_an_image_that_takes_writes<L: Layout>(
    image: &[u8],
    offsets: impl IntoIterator<Item = u64>,
    len: usize,
) {
    let garbage: Vec<u8> = (0..len).map(|i| (i as u8).wrapping_mul(167).wrapping_add(13)).collect();
    for (n, at) in offsets.into_iter().enumerate() {
        let dev = Arc::new(MemDisk::from_bytes(image.to_vec()));
        dev.write_at(at, &garbage).expect("damage");
        let damaged = dev.snapshot();
        let outcome = super::repair(&dev);
        assert!(outcome.exit_code() <= 1, "byte {at}: left:\n{}{:?}", listing(&outcome.last), outcome.failed);
        assert!(check(&dev).is_clean(), "byte {at}: after:\n{}", listing(&check(&dev)));
        let kept = L::with_fs(&dev, false, |fs| {
            let kept = file_contents(fs).unwrap_or_else(|e| panic!("byte {at}: {e}"));
            let f = fs
                .mknod(ROOT_INO, b"after-repair", 0o644, 0, Creds::default())
                .unwrap_or_else(|e| panic!("byte {at}: create after the repair: {e}"))
                .ino;
            fs.write(f, 0, b"written after the repair").expect("write");
            kept
        });
        assert!(check(&dev).is_clean(), "byte {at}: after use:\n{}", listing(&check(&dev)));
        if n % 4 == 0 {
            a_repair_cut_after_any_write_is_finished_by_the_next::<L>(&damaged, |fs, cut| {
                let got = file_contents(fs).unwrap_or_else(|e| panic!("byte {at}, {cut}: {e}"));
                for (data, count) in &kept {
                    let found = got.get(data).copied().unwrap_or(0);
                    assert!(
                        found >= *count,
                        "byte {at}, {cut}: a file of {} bytes the uncut repair kept is lost",
                        data.len()
                    );
                }
            });
        }
    }
}

/// The contents of every regular file the namespace reaches, counted.
fn file_contents<S: StorageManager>(
    fs: &mut FileSystem<S>,
) -> Result<std::collections::BTreeMap<Vec<u8>, usize>, String> {
    let seen = testkit::crash::walk(fs)?;
    let mut contents = std::collections::BTreeMap::new();
    for inode in seen.inodes.into_values().filter(|s| s.kind == fslab::format::inode::kind::REG) {
        *contents.entry(inode.data).or_insert(0) += 1;
    }
    Ok(contents)
}

/// Repairs a copy of `image` (damaged) with the power cut after each of
/// the repair's writes in turn, every other cut tearing the write it falls
/// in at 2 KiB; requires the next fsck to finish each to an image that
/// checks clean, on which `kept` finds what the damage left (its second
/// argument names the cut) and a new file can be made. Stops after the
/// first repair the cut did not reach; returns how many writes it made.
pub fn a_repair_cut_after_any_write_is_finished_by_the_next<L: Layout>(
    image: &[u8],
    kept: impl Fn(&mut FileSystem<L::S>, &str),
) -> u64 {
    let mut writes = 0;
    loop {
        let torn = if writes % 2 == 1 { 2048 } else { 0 };
        let (copy, finished) = testkit::crash::repair_cut_after(image, writes, torn);
        let at = format!("cut after {writes} writes{}", if torn > 0 { ", torn" } else { "" });
        let outcome = super::repair(&copy);
        assert!(outcome.exit_code() <= 1, "{at}: left:\n{}{:?}", listing(&outcome.last), outcome.failed);
        assert!(check(&copy).is_clean(), "{at}: after:\n{}", listing(&check(&copy)));
        L::with_fs(&copy, false, |fs| {
            kept(fs, &at);
            fs.mknod(ROOT_INO, b"after-repair", 0o644, 0, Creds::default())
                .unwrap_or_else(|e| panic!("{at}: create after the repair: {e}"));
        });
        assert!(check(&copy).is_clean(), "{at}: after use:\n{}", listing(&check(&copy)));
        if finished {
            return writes;
        }
        writes += 1;
        assert!(writes < 5_000, "the repair never finished");
    }
}

/// Requires `fs` to hold [`Tree`]'s files with their contents: the
/// medium file, the large one to its double indirect block, the small one
/// and the last of the docs.
pub fn assert_tree_kept<S: StorageManager>(fs: &mut FileSystem<S>, tree: &Tree, at: &str) {
    let bs = fs.block_size() as u64;
    assert_eq!(fs.read(tree.medium, 0, 200 << 10).expect("read"), pattern(200 << 10, 1), "{at}");
    assert_eq!(fs.read(tree.large, 0, 64 << 10).expect("read"), pattern(64 << 10, 2), "{at}");
    let far = (12 + (bs - 8) / 4 + 3) * bs;
    assert_eq!(fs.read(tree.large, far, bs as usize).expect("read"), pattern(bs as usize, 3), "{at}");
    assert_eq!(fs.read(tree.small, 0, 13).expect("read"), b"hello, world\n", "{at}");
    let last = fs.lookup(tree.docs, b"file39").unwrap_or_else(|e| panic!("{at}: file39: {e}")).ino;
    assert_eq!(fs.read(last, 0, 20_000).expect("read"), pattern(1000 + 39 * 300, 39), "{at}");
}

/// Requires `outcome`, a repair of `dev`, to have ended with exit status 1
/// and `dev` to check clean after it.
#[track_caller]
pub fn assert_repaired_to_clean(dev: &Arc<MemDisk>, outcome: &Outcome) {
    assert_eq!(
        outcome.exit_code(),
        1,
        "found:\n{}left:\n{}failed: {:?}",
        listing(&outcome.first),
        listing(&outcome.last),
        outcome.failed
    );
    let again = check(dev);
    assert!(again.is_clean(), "after repair:\n{}", listing(&again));
}

/// A fresh image checks clean as its layout, counts its root, and repair
/// leaves it be.
pub fn a_fresh_image_is_clean<L: Layout>() {
    let dev = L::fresh(16 << 20);
    let report = check(&dev);
    assert!(report.is_clean(), "problems:\n{}", listing(&report));
    assert_eq!(report.layout, L::KIND);
    assert_eq!(report.counts.inodes, 1);
    assert_eq!(super::repair(&dev).exit_code(), 0);
}

/// A populated image checks clean, every inode counted.
pub fn a_populated_image_is_clean_and_every_inode_is_counted<L: Layout>() {
    let (dev, _) = L::populated();
    let report = check(&dev);
    assert!(report.is_clean(), "problems:\n{}", listing(&report));
    // root, docs, deep, deeper, small, medium, large, link, fifo, 40 files
    assert_eq!(report.counts.inodes, 49);
    assert_eq!(report.counts.directories, 4);
    assert!(report.clean_unmount);
}

/// Link counts set wrong through the storage manager are found, repaired,
/// and right after.
pub fn a_wrong_link_count_is_found_and_repaired<L: Layout>() {
    let (dev, tree) = L::populated();
    L::with_fs(&dev, false, |fs| {
        for (ino, nlink) in [(tree.medium, 5), (tree.docs, 1)] {
            let mut attr = fs.getattr(ino).expect("getattr").attr;
            attr.nlink = nlink;
            fs.storage().update(ino, &attr).expect("update");
        }
    });
    let report = check(&dev);
    let mut wrong: Vec<Ino> =
        report.problems.iter().filter(|p| p.kind == Kind::LinkCount).filter_map(|p| p.ino).collect();
    wrong.sort_unstable();
    let mut want = vec![tree.docs, tree.medium];
    want.sort_unstable();
    assert_eq!(wrong, want, "problems:\n{}", listing(&report));
    assert!(report.problems.iter().any(|p| p.fix == Some(Fix::SetNlink { ino: tree.docs, nlink: 3 })));
    repaired_to_clean::<L>(&dev);
    L::with_fs(&dev, false, |fs| {
        assert_eq!(fs.getattr(tree.medium).expect("getattr").attr.nlink, 1);
        assert_eq!(fs.getattr(tree.docs).expect("getattr").attr.nlink, 3, "2 + one subdirectory");
    });
}

/// Regression: a file unlinked while open, then a crash, was reported as
/// damage (an unreachable inode). It is on the orphan list now: fsck says
/// it is pending reclaim, which is not damage, and repair frees it.
pub fn an_orphan_left_by_a_crash_is_pending_reclaim_and_repair_frees_it<L: Layout>() {
    let (dev, tree) = L::populated();
    L::with_fs(&dev, true, |fs| {
        fs.pin(tree.small);
        fs.unlink(tree.docs, b"small").expect("unlink");
        fs.unlink(ROOT_INO, b"small-again").expect("unlink");
        assert_eq!(fs.orphans(), vec![tree.small]);
        fs.sync().expect("sync");
    });
    let report = check(&dev);
    assert_eq!(report.pending_reclaim, vec![tree.small]);
    assert!(report.problems.iter().all(|p| p.ino != Some(tree.small)), "problems:\n{}", listing(&report));
    let outcome = super::repair(&dev);
    assert!(outcome.failed.is_empty(), "{:?}", outcome.failed);
    assert!(outcome.repaired.iter().any(|r| r.fix == Some(Fix::ReclaimOrphans)), "{:?}", outcome.repaired);
    assert!(outcome.last.is_clean(), "left:\n{}", listing(&outcome.last));
    assert!(outcome.last.pending_reclaim.is_empty());
    L::after_repair(&dev);
    L::with_fs(&dev, false, |fs| assert!(fs.getattr(tree.small).is_err(), "the orphan is freed"));
}

/// Files of `len` bytes made in the root under `names`, each held open
/// (pinned) and unlinked: orphans, on the list newest first.
pub fn held_open_and_unlinked<S: StorageManager>(
    fs: &mut FileSystem<S>,
    names: &[&[u8]],
    len: usize,
) -> Vec<Ino> {
    let c = fslab::ufs::Creds::default();
    let mut files = Vec::new();
    for name in names {
        let ino = fs.mknod(ROOT_INO, name, 0o644, 0, c).expect("create").ino;
        fs.write(ino, 0, &pattern(len, 3)).expect("write");
        fs.pin(ino);
        fs.unlink(ROOT_INO, name).expect("unlink");
        files.push(ino);
    }
    files
}

/// Two orphans on the image's list, left by a storage manager unmounted
/// under a namespace that still held them open (the image is marked
/// clean, so both layouts mount it); the list made to loop (b → a → b → …)
/// by a rewrite of `a`'s `next_orphan`.
fn looping_orphan_list<L: Layout>() -> (Arc<MemDisk>, Vec<Ino>) {
    let dev = L::fresh(24 << 20);
    let files = L::with_fs(&dev, true, |fs| {
        let files = held_open_and_unlinked(fs, &[b"a", b"b"], 10_000);
        fs.storage().unmount().expect("unmount under the namespace");
        files
    });
    assert_eq!(L::orphan_head(&dev), files[1], "the newest orphan heads the list");
    L::rewrite_inode(&dev, files[0], |i| i.next_orphan = files[1]);
    (dev, files)
}

/// A list that loops is not followed forever: mount frees what it could
/// walk, says why it stopped, mounts, and leaves the list empty.
pub fn a_looping_orphan_list_stops_the_walk_and_the_mount_goes_on<L: Layout>() {
    let (dev, files) = looping_orphan_list::<L>();
    L::with_fs(&dev, false, |fs| {
        let report = L::orphan_report(fs);
        assert_eq!(report.reclaimed, 2, "{report:?}");
        assert!(report.damage.expect("a loop").contains("loops back"));
        for &ino in &files {
            assert!(fs.getattr(ino).is_err(), "orphan {ino} is freed");
        }
    });
    assert_eq!(L::orphan_head(&dev), 0);
    let report = check(&dev);
    assert!(report.is_clean(), "problems:\n{}", listing(&report));
}

/// A damaged orphan list (it loops) is damage: the orphans are reported as
/// unreferenced inodes, and repair frees them and empties the list.
pub fn a_looping_orphan_list_is_damage_that_repair_empties<L: Layout>() {
    let (dev, files) = looping_orphan_list::<L>();
    let report = check(&dev);
    assert!(report.has(Kind::OrphanList), "problems:\n{}", listing(&report));
    assert!(report.pending_reclaim.is_empty());
    for &ino in &files {
        let fixes: Vec<Option<Fix>> = report
            .problems
            .iter()
            .filter(|p| p.kind == Kind::Unreachable && p.ino == Some(ino))
            .map(|p| p.fix.clone())
            .collect();
        assert!(fixes.contains(&Some(Fix::FreeOrphan { ino })), "{ino}: {fixes:?}\n{}", listing(&report));
    }
    repaired_to_clean::<L>(&dev);
    assert_eq!(L::orphan_head(&dev), 0);
}

/// Names removed without touching the inodes — a file and a whole subtree:
/// only the top of the subtree is reported, and both go to /lost+found.
pub fn unreachable_files_and_directories_go_to_lost_and_found<L: Layout>() {
    let (dev, tree) = L::populated();
    L::with_fs(&dev, false, |fs| {
        fs.repair_remove_entry(ROOT_INO, b"medium").expect("remove");
        fs.repair_remove_entry(tree.docs, b"deep").expect("remove");
    });
    let report = check(&dev);
    let unreachable: Vec<Ino> =
        report.problems.iter().filter(|p| p.kind == Kind::Unreachable).filter_map(|p| p.ino).collect();
    assert_eq!(
        unreachable,
        vec![tree.deep, tree.medium],
        "only the top of the subtree:\n{}",
        listing(&report)
    );
    repaired_to_clean::<L>(&dev);
    L::with_fs(&dev, false, |fs| {
        let lf = fs.lookup(ROOT_INO, b"lost+found").expect("lost+found").ino;
        let moved = fs.lookup(lf, format!("#{}", tree.medium).as_bytes()).expect("medium moved");
        assert_eq!(fs.read(moved.ino, 0, 16).expect("read"), pattern(16, 1));
        let deep = fs.lookup(lf, format!("#{}", tree.deep).as_bytes()).expect("deep moved").ino;
        assert_eq!(fs.lookup(deep, b"..").expect("..").ino, lf);
        assert_eq!(fs.lookup(deep, b"large").expect("large").ino, tree.large);
    });
}

/// A disk too full to make /lost+found: what is unreachable is
/// reconnected to the root directory instead (as e2fsck does), and the
/// repair ends with a clean image, not one marked damaged that no mount
/// would let the user empty.
pub fn on_a_full_disk_an_unreachable_file_is_reconnected_to_the_root<L: Layout>() {
    let (dev, tree) = L::populated();
    L::with_fs(&dev, false, |fs| {
        let c = Creds::default();
        let filler = fs.mknod(ROOT_INO, b"filler", 0o644, 0, c).expect("create").ino;
        let chunk = vec![5u8; 64 << 10];
        let mut at = 0;
        while fs.write(filler, at, &chunk).is_ok() {
            at += chunk.len() as u64;
        }
        let mut block = 0;
        while fs.write(filler, at + block * 512, &[5u8; 512]).is_ok() {
            block += 1;
        }
        let dirs = fs.mkdir(ROOT_INO, b"d", 0o755, c).expect("a directory for the rest").ino;
        for i in 0.. {
            if fs.mkdir(dirs, format!("{i}").as_bytes(), 0o755, c).is_err() {
                break;
            }
        }
        assert!(fs.mkdir(ROOT_INO, b"lost+found", 0o700, c).is_err(), "the disk is not full");
        fs.repair_remove_entry(ROOT_INO, b"medium").expect("remove");
    });
    let outcome = repaired_to_clean::<L>(&dev);
    assert!(outcome.failed.is_empty(), "{:?}", outcome.failed);
    L::with_fs(&dev, false, |fs| {
        let name = format!("#{}", tree.medium);
        let moved = fs
            .lookup(ROOT_INO, name.as_bytes())
            .or_else(|_| fs.lookup(ROOT_INO, b"lost+found").and_then(|lf| fs.lookup(lf.ino, name.as_bytes())))
            .expect("medium reconnected");
        assert_eq!(fs.read(moved.ino, 0, 16).expect("read"), pattern(16, 1));
    });
    // The message says why the root took it, in the words of the error
    // that kept it out of /lost+found.
    let said = outcome
        .repaired
        .iter()
        .find(|r| r.message.starts_with(&format!("inode {}: moved to /", tree.medium)))
        .expect("the reconnection is reported");
    if !said.message.contains("/lost+found/") {
        assert!(said.message.contains("lost+found") && said.message.contains("space"), "{}", said.message);
    }
}

/// A regular file where /lost+found should be: kept as
/// `/lost+found.<inode>`, and a directory made in its place, so that what
/// is unreachable is reconnected (the repair used to fail every round).
pub fn a_file_named_lost_and_found_is_kept_under_another_name<L: Layout>() {
    let (dev, _) = L::populated();
    let squatter = L::with_fs(&dev, false, |fs| {
        let f = fs.mknod(ROOT_INO, b"lost+found", 0o644, 0, Creds::default()).expect("create").ino;
        fs.write(f, 0, b"mine").expect("write");
        fs.repair_remove_entry(ROOT_INO, b"medium").expect("remove");
        f
    });
    repaired_to_clean::<L>(&dev);
    L::with_fs(&dev, false, |fs| {
        let kept = fs.lookup(ROOT_INO, format!("lost+found.{squatter}").as_bytes()).expect("kept");
        assert_eq!(fs.read(kept.ino, 0, 16).expect("read"), b"mine");
        let lf = fs.lookup(ROOT_INO, b"lost+found").expect("lost+found");
        assert!(lf.attr.is_dir());
        assert_eq!(fs.readdir(lf.ino, 0, 16).expect("list").len(), 3, ". .. and the reconnected file");
    });
}

/// An inode freed while an entry still names it: the entry is removed.
pub fn an_entry_naming_a_free_inode_is_found_and_removed<L: Layout>() {
    let (dev, tree) = L::populated();
    L::with_fs(&dev, false, |fs| fs.repair_free_inode(tree.link).expect("free"));
    assert_removes_entry(&check(&dev), ROOT_INO, b"link");
    repaired_to_clean::<L>(&dev);
}

/// One directory listing a name twice — two files made, then the second's
/// name rewritten to the first's in the directory block, as a torn
/// directory write under soft updates left it: found as damage naming
/// the directory, the name and both inodes; the repair keeps the first
/// entry under the name and moves the second file to /lost+found, with
/// every link count right and no byte lost.
pub fn a_name_listed_twice_keeps_the_first_entry_and_reconnects_the_other<L: Layout>() {
    let dev = L::fresh(24 << 20);
    let c = Creds::default();
    let (a, first, second) = L::with_fs(&dev, false, |fs| {
        let a = fs.mkdir(ROOT_INO, b"A", 0o755, c).expect("mkdir").ino;
        let first = fs.mknod(a, b"foo", 0o644, 0, c).expect("create").ino;
        fs.write(first, 0, &pattern(3000, 1)).expect("write");
        let second = fs.mknod(a, b"fop", 0o644, 0, c).expect("create").ino;
        fs.write(second, 0, &pattern(5000, 2)).expect("write");
        (a, first, second)
    });
    L::rewrite_first_dir_chunk(&dev, a, |chunk| {
        let at = chunk.windows(3).position(|w| w == b"fop").expect("the entry 'fop' in the first chunk");
        chunk[at + 2] = b'o';
    });
    let report = check(&dev);
    let found: Vec<_> = report
        .problems
        .iter()
        .filter(|p| matches!(&p.fix, Some(Fix::RemoveDuplicate { dir, name, ino, .. }) if *dir == a && name == b"foo" && *ino == second))
        .collect();
    assert_eq!(found.len(), 1, "problems:\n{}", listing(&report));
    let problem = found[0];
    assert_eq!((problem.severity, problem.kind, problem.ino), (Severity::Damage, Kind::DirEntry, Some(a)));
    for part in ["listed twice", "'foo'", &format!("{first}"), &format!("{second}")] {
        assert!(problem.message.contains(part), "{part:?} not in {:?}", problem.message);
    }
    repaired_to_clean::<L>(&dev);
    L::with_fs(&dev, false, |fs| {
        assert_eq!(fs.lookup(a, b"foo").expect("foo").ino, first, "the first entry keeps the name");
        let names: Vec<Vec<u8>> =
            fs.readdir(a, 0, 100).expect("readdir").into_iter().map(|e| e.name).collect();
        assert_eq!(names.iter().filter(|n| n.as_slice() == b"foo").count(), 1, "one 'foo' left");
        let lf = fs.lookup(ROOT_INO, b"lost+found").expect("lost+found").ino;
        let moved = fs.lookup(lf, format!("#{second}").as_bytes()).expect("the second file in lost+found");
        assert_eq!(moved.ino, second);
        assert_eq!(fs.read(first, 0, 3000).expect("read"), pattern(3000, 1));
        assert_eq!(fs.read(second, 0, 5000).expect("read"), pattern(5000, 2));
        assert_eq!(fs.getattr(first).expect("foo").attr.nlink, 1);
        assert_eq!(fs.getattr(second).expect("fop").attr.nlink, 1);
        assert_eq!(fs.getattr(a).expect("A").attr.nlink, 2);
    });
}

/// Requires `report` to find the entry `name` in `dir` wrong and to remove it.
#[track_caller]
pub fn assert_removes_entry(report: &Report, dir: Ino, name: &[u8]) {
    assert!(
        report
            .problems
            .iter()
            .any(|p| p.kind == Kind::DirEntry && p.fix == Some(Fix::RemoveEntry { dir, name: name.to_vec() })),
        "no fix removes {} in {dir}; problems:\n{}",
        String::from_utf8_lossy(name),
        listing(report)
    );
}

/// Requires `report` to find the directory chunk at `offset` in `dir`
/// broken and to reset it.
#[track_caller]
pub fn assert_resets_chunk(report: &Report, dir: Ino, offset: u64) {
    assert!(
        report.problems.iter().any(
            |p| matches!(p.fix, Some(Fix::ResetChunk { dir: d, offset: o, .. }) if d == dir && o == offset)
        ),
        "no fix resets the chunk at {offset} of {dir}; problems:\n{}",
        listing(report)
    );
}

/// A file whose type bits read as a block device's (garbled, its checksum
/// recomputed, as a salvaged inode can be): a device holds no data, so the
/// inode is cleared and its entry removed, rather than kept as a device
/// node of 200 KiB that nothing can read; everything else reads back.
pub fn a_file_whose_type_reads_as_a_device_with_data_is_cleared<L: Layout>() {
    let (dev, tree) = L::populated();
    L::rewrite_inode(&dev, tree.medium, |i| i.attr.mode = fslab::format::inode::kind::BLK | 0o644);
    let report = check(&dev);
    assert!(
        report.problems.iter().any(|p| p.fix == Some(Fix::ClearInode { ino: tree.medium })),
        "problems:\n{}",
        listing(&report)
    );
    repaired_to_clean::<L>(&dev);
    L::with_fs(&dev, false, |fs| {
        assert_eq!(fs.lookup(ROOT_INO, b"medium").map(|e| e.ino).map_err(|e| e.errno()), Err(libc::ENOENT));
        assert_eq!(fs.read(tree.large, 0, 16).expect("read"), pattern(16, 2));
    });
}
