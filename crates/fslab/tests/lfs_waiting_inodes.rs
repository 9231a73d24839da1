//! LFS's segment writes as inodes wait: creating empty files fills no
//! cache, so without a bound on the inodes waiting for a segment write
//! they would all stay in memory until the next checkpoint.

use disk::MemDisk;
use fslab::format::inode::kind;
use fslab::format::ROOT_INO;
use fslab::lfs::{Lfs, MkfsOptions, MountOptions};
use fslab::storage::StorageManager;
use fslab::ufs::{Creds, FileSystem};
use std::sync::Arc;

fn small_options() -> MkfsOptions {
    MkfsOptions { block_size: 4096, segment_size: 64 << 10 }
}

/// The "directory operations' inodes" that `lfs` holds for its next
/// segment write.
fn dirop_inodes_held(lfs: &Lfs) -> u64 {
    lfs.memory().iter().find(|m| m.what == "directory operations' inodes").map_or(0, |m| m.entries)
}

#[test]
fn creating_empty_files_writes_segments_once_enough_inodes_wait() {
    for (limit, bounded) in [(Some(100), true), (None, false)] {
        let disk = Arc::new(MemDisk::new(32 << 20));
        fslab::mkfs_lfs(disk.clone(), &small_options(), Creds::default()).expect("mkfs");
        let options =
            MountOptions { cache_bytes: 4 << 20, max_dirty_inodes: limit, ..MountOptions::default() };
        let mut fs = FileSystem::new(Lfs::mount(disk, options).expect("mount"));
        let mut most = 0;
        for i in 0..600 {
            let name = format!("f{i}");
            fs.mknod(ROOT_INO, name.as_bytes(), kind::REG | 0o644, 0, Creds::default())
                .unwrap_or_else(|e| panic!("create {i} with {limit:?}: {e:?}"));
            most = most.max(dirop_inodes_held(fs.storage()));
        }
        if bounded {
            // A create changes the new inode and its directory's.
            assert!(most <= 100 + 2, "{most} inodes held with a limit of 100");
            assert!(fs.storage().stats().partial_segments > 0);
        } else {
            assert!(most >= 600, "{most} inodes held with no limit: the cache alone decides");
        }
        fs.sync().expect("sync");
        assert_eq!(dirop_inodes_held(fs.storage()), 0);
    }
}
