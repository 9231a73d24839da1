//! A full LFS can always be emptied (1993 paper §3.2: space is kept back so
//! that the cleaner and the operations that free space can always run):
//! filled to ENOSPC in several ways, checkpointed and remounted, every
//! unlink, rmdir, truncate, hole punch and rename over a file succeeds,
//! the space comes back, and fsck finds nothing — with every cleaner policy
//! and with none, and with a cache too small to hold what is deleted (or
//! the inode map).

use disk::MemDisk;
use fslab::format::inode::kind;
use fslab::format::{Ino, ROOT_INO};
use fslab::lfs::{Lfs, MkfsOptions, MountOptions};
use fslab::ufs::{Creds, FileSystem, RenameFlags, SetAttr};
use fslab_cleaner::{policy, Cleaner};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::sync::Arc;

const CREDS: Creds = Creds { uid: 0, gid: 0 };
const BLOCK: usize = 4096;

/// How a test fills the disk.
#[derive(Debug, Clone, Copy)]
enum Fill {
    /// One file written until ENOSPC.
    OneBigFile,
    /// Directories of small files, then empty files and directories (names
    /// only) until those fail too: what `tar xf` of a tree does.
    SmallFilesThenNames,
    /// Files of 16 blocks to ENOSPC, then whole files rewritten at random
    /// for two disks' worth (the cleaner, if any, keeps up; without one
    /// the rewrites soon fail).
    RewritesAtFull,
}

/// A mount whose inode map keeps a sixty-fourth of the cache in memory (two
/// to 256 map blocks): the fills of names make more inodes than that, so
/// the cleaner and the deletes read the map a block at a time.
fn mount(dev: &Arc<MemDisk>, cleaner: Option<&str>, cache_bytes: u64) -> FileSystem<Lfs> {
    let options =
        MountOptions { cache_bytes, imap_resident_bytes: cache_bytes / 64, ..MountOptions::default() };
    let mut lfs = Lfs::mount(dev.clone(), options).expect("mount");
    if let Some(name) = cleaner {
        Cleaner::new(policy::by_name(name).expect("policy")).install(&mut lfs);
    }
    FileSystem::new(lfs)
}

/// Ok(true) if done, Ok(false) on ENOSPC.
fn room<T>(r: fslab::Result<T>, what: &str) -> Option<T> {
    match r {
        Ok(v) => Some(v),
        Err(e) if e.errno() == libc::ENOSPC => None,
        Err(e) => panic!("{what}: {e}"),
    }
}

fn create(fs: &mut FileSystem<Lfs>, dir: Ino, name: &str) -> Option<Ino> {
    room(fs.mknod(dir, name.as_bytes(), kind::REG | 0o644, 0, CREDS), "create").map(|i| i.ino)
}

fn fill(fs: &mut FileSystem<Lfs>, how: Fill) {
    let block = vec![0x5au8; BLOCK];
    match how {
        Fill::OneBigFile => {
            let ino = create(fs, ROOT_INO, "big").expect("room for one file");
            for b in 0.. {
                if room(fs.write(ino, b * BLOCK as u64, &block), "write").is_none() {
                    return;
                }
            }
        }
        Fill::SmallFilesThenNames => {
            'data: for d in 0.. {
                let Some(dir) = room(fs.mkdir(ROOT_INO, format!("d{d}").as_bytes(), 0o755, CREDS), "mkdir")
                else {
                    break;
                };
                for f in 0..200 {
                    let Some(ino) = create(fs, dir.ino, &format!("f{f}")) else { break 'data };
                    if room(fs.write(ino, 0, &block[..1500]), "write").is_none() {
                        break 'data;
                    }
                }
            }
            let Some(names) = room(fs.mkdir(ROOT_INO, b"names", 0o755, CREDS), "mkdir") else { return };
            for n in 0.. {
                let name = format!("n{n}");
                let made = if n % 2 == 0 {
                    create(fs, names.ino, &name).is_some()
                } else {
                    room(fs.mkdir(names.ino, name.as_bytes(), 0o755, CREDS), "mkdir").is_some()
                };
                if !made {
                    return;
                }
            }
        }
        Fill::RewritesAtFull => {
            let mut files = Vec::new();
            'fill: for f in 0.. {
                let Some(ino) = create(fs, ROOT_INO, &format!("r{f}")) else { break };
                files.push(ino);
                for b in 0..16u64 {
                    if room(fs.write(ino, b * BLOCK as u64, &block), "write").is_none() {
                        break 'fill;
                    }
                }
            }
            let total = files.len() * 16 * 2;
            let mut rng = SmallRng::seed_from_u64(0x9e37_79b9_7f4a_7c15);
            let mut failed = 0;
            for _ in 0..total / 16 {
                let ino = files[rng.gen_range(0..files.len())];
                for b in 0..16u64 {
                    if room(fs.write(ino, b * BLOCK as u64, &block), "rewrite").is_none() {
                        failed += 1;
                        break;
                    }
                }
                if failed > 50 {
                    return;
                }
            }
        }
    }
}

/// Removes everything under `dir`: a file with blocks is first shortened
/// by a punched hole and a truncate, and every other file is first
/// renamed over by its neighbour, so each of those runs on a full disk.
fn empty(fs: &mut FileSystem<Lfs>, dir: Ino) {
    let entries = fs.readdir(dir, 0, usize::MAX).expect("readdir");
    let mut names: Vec<Vec<u8>> =
        entries.into_iter().map(|e| e.name).filter(|n| n != b"." && n != b"..").collect();
    names.sort();
    let mut renamed = false;
    for name in names {
        let node = fs.lookup(dir, &name).expect("lookup");
        let shown = String::from_utf8_lossy(&name).into_owned();
        if node.attr.mode & kind::MASK == kind::DIR {
            empty(fs, node.ino);
            fs.rmdir(dir, &name).unwrap_or_else(|e| panic!("rmdir {shown}: {e}"));
            continue;
        }
        if node.attr.size > 4 * BLOCK as u64 {
            let punch = libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE;
            fs.fallocate(node.ino, BLOCK as u64 / 2, 2 * BLOCK as u64, punch)
                .unwrap_or_else(|e| panic!("punch a hole in {shown}: {e}"));
            let half = SetAttr { size: Some(node.attr.size / 2 + 100), ..SetAttr::default() };
            fs.setattr(node.ino, &half).unwrap_or_else(|e| panic!("truncate {shown}: {e}"));
        }
        if !renamed {
            // The next file in order is renamed over this one (or this one
            // is the last, and just goes).
            renamed = true;
            fs.rename(dir, &name, dir, b"~over", RenameFlags::default())
                .unwrap_or_else(|e| panic!("rename {shown}: {e}"));
            continue;
        }
        fs.rename(dir, &name, dir, b"~over", RenameFlags::default())
            .unwrap_or_else(|e| panic!("rename {shown} over another file: {e}"));
    }
    if renamed {
        fs.unlink(dir, b"~over").unwrap_or_else(|e| panic!("unlink: {e}"));
    }
}

fn fsck_clean(dev: &MemDisk, what: &str) {
    let report = fslab_check::check(dev, &fslab_check::Options::default(), &mut |_| {}).expect("fsck runs");
    assert!(report.problems.is_empty() && report.omitted == 0, "fsck after {what}: {:?}", report.problems);
}

fn fill_then_empty(how: Fill, cleaner: Option<&str>, cache_bytes: u64) {
    let dev = Arc::new(MemDisk::new(24 << 20));
    let options = MkfsOptions { block_size: BLOCK as u32, segment_size: 256 << 10 };
    fslab::mkfs_lfs(dev.clone(), &options, CREDS).expect("mkfs");
    let mut fs = mount(&dev, cleaner, cache_bytes);
    let fresh = fs.statfs().expect("statfs").free_blocks;
    fill(&mut fs, how);
    assert!(fs.statfs().expect("statfs").free_blocks < fresh / 20, "{how:?} left the disk less than full");
    fs.sync().expect("checkpoint on a full disk");
    fs.unmount().expect("unmount a full disk");
    fsck_clean(&dev, "filling");

    let mut fs = mount(&dev, cleaner, cache_bytes);
    empty(&mut fs, ROOT_INO);
    fs.sync().expect("checkpoint after emptying");
    let after = fs.statfs().expect("statfs").free_blocks;
    fs.unmount().expect("unmount");
    fsck_clean(&dev, "emptying");
    // The inode file keeps the size the fill gave it (as in BSD-LFS, it
    // never shrinks), and the reserves grow with it: a percent or two.
    assert!(after >= fresh - fresh / 40, "{how:?}: {after} blocks free after emptying, {fresh} when fresh");

    // And the space is usable again.
    let mut fs = mount(&dev, cleaner, cache_bytes);
    fill(&mut fs, Fill::OneBigFile);
    let big = fs.lookup(ROOT_INO, b"big").expect("big").attr.size / BLOCK as u64;
    assert!(big >= after - after / 20, "{how:?}: refilled {big} blocks of {after} free");
    fs.unmount().expect("unmount");
}

macro_rules! every_fill_and_cleaner {
    ($($name:ident: $fill:expr, $cleaner:expr, $cache:expr;)*) => {$(
        #[test]
        fn $name() {
            fill_then_empty($fill, $cleaner, $cache);
        }
    )*};
}

every_fill_and_cleaner! {
    one_big_file_no_cleaner: Fill::OneBigFile, None, 4 << 20;
    one_big_file_greedy: Fill::OneBigFile, Some("greedy"), 4 << 20;
    small_files_then_names_no_cleaner: Fill::SmallFilesThenNames, None, 4 << 20;
    small_files_then_names_hot_cold: Fill::SmallFilesThenNames, Some("hot-cold"), 4 << 20;
    small_files_then_names_cost_benefit_small_cache: Fill::SmallFilesThenNames, Some("cost-benefit"), 512 << 10;
    small_files_then_names_greedy_large_cache: Fill::SmallFilesThenNames, Some("greedy"), 64 << 20;
    rewrites_at_full_no_cleaner: Fill::RewritesAtFull, None, 4 << 20;
    rewrites_at_full_hot_cold: Fill::RewritesAtFull, Some("hot-cold"), 4 << 20;
    rewrites_at_full_greedy_small_cache: Fill::RewritesAtFull, Some("greedy"), 512 << 10;
}
