//! A directory of 100,000 entries, through dirhash under its default 2 MiB
//! budget, on `MemStorage` and on LFS over a `MemDisk`: created, looked up
//! in random order, every entry renamed into another directory, that
//! directory moved, every entry removed and the directory with it; correct
//! at every step and the hashes inside the budget throughout.

use disk::{BlockDevice, MemDisk};
use fslab::format::inode::kind;
use fslab::format::{Ino, ROOT_INO};
use fslab::lfs::{Lfs, MkfsOptions, MountOptions};
use fslab::storage::{MemStorage, StorageManager};
use fslab::ufs::{Creds, DirhashOptions, FileSystem, RenameFlags};
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use std::sync::Arc;

const ENTRIES: usize = 100_000;
const ME: Creds = Creds { uid: 1000, gid: 100 };

fn name(i: usize) -> Vec<u8> {
    format!("f{i:06}").into_bytes()
}

fn errno<T>(r: fslab::Result<T>) -> i32 {
    r.err().map_or(0, |e| e.errno())
}

fn live_entries<S: StorageManager>(fs: &mut FileSystem<S>, dir: Ino) -> usize {
    fs.readdir(dir, 0, usize::MAX).expect("readdir").len() - 2
}

fn hundred_thousand_entries<S: StorageManager>(fs: &mut FileSystem<S>) {
    assert_eq!(fs.dirhash_options(), DirhashOptions::default());
    let mut rng = SmallRng::seed_from_u64(42);
    let a = fs.mkdir(ROOT_INO, b"a", 0o755, ME).expect("mkdir a").ino;
    let b = fs.mkdir(ROOT_INO, b"b", 0o755, ME).expect("mkdir b").ino;
    let elsewhere = fs.mkdir(ROOT_INO, b"elsewhere", 0o755, ME).expect("mkdir elsewhere").ino;
    let mut inos = Vec::with_capacity(ENTRIES);
    for i in 0..ENTRIES {
        inos.push(fs.mknod(a, &name(i), kind::REG | 0o644, 0, ME).expect("create").ino);
    }
    let mut order: Vec<usize> = (0..ENTRIES).collect();
    order.shuffle(&mut rng);
    for &i in &order {
        assert_eq!(fs.lookup(a, &name(i)).expect("lookup").ino, inos[i]);
    }
    for i in ENTRIES..ENTRIES + 10_000 {
        assert_eq!(errno(fs.lookup(a, &name(i))), libc::ENOENT);
    }
    assert_eq!(errno(fs.mknod(a, &name(7), kind::REG, 0, ME)), libc::EEXIST);
    assert!(fs.dir_index_matches(a).expect("check a"));
    let after_create = fs.dirhash_stats();
    assert!(after_create.hits >= 2 * ENTRIES as u64, "{after_create:?}");
    let full_size = fs.getattr(a).expect("getattr").attr.size;

    order.shuffle(&mut rng);
    for &i in &order {
        fs.rename(a, &name(i), b, &name(i), RenameFlags::default()).expect("rename into b");
    }
    assert_eq!(live_entries(fs, a), 0);
    assert_eq!(
        fs.getattr(a).expect("getattr").attr.size,
        u64::from(fs.block_size()),
        "a shrank to one block"
    );
    assert!(full_size > 100 * u64::from(fs.block_size()));
    assert_eq!(live_entries(fs, b), ENTRIES);
    assert!(fs.dir_index_matches(b).expect("check b"));

    fs.rename(ROOT_INO, b"b", elsewhere, b"b", RenameFlags::default()).expect("move b");
    assert_eq!(fs.lookup(elsewhere, b"b").expect("moved").ino, b);
    order.shuffle(&mut rng);
    for &i in &order {
        assert_eq!(fs.lookup(b, &name(i)).expect("lookup in b").ino, inos[i]);
    }
    for &i in &order {
        fs.unlink(b, &name(i)).expect("unlink");
    }
    assert_eq!(
        fs.getattr(b).expect("getattr").attr.size,
        u64::from(fs.block_size()),
        "b shrank to one block"
    );
    fs.rmdir(elsewhere, b"b").expect("rmdir b");
    fs.rmdir(ROOT_INO, b"a").expect("rmdir a");

    let stats = fs.dirhash_stats();
    assert!(stats.peak_memory <= DirhashOptions::default().max_memory, "{stats:?}");
    assert!(stats.peak_memory > 1 << 20, "both hashes were held at once: {stats:?}");
    assert!(stats.refused == 0 && stats.drops == 0, "{stats:?}");
    // Both directories were cut back to their first block.
    let blocks = full_size / u64::from(fs.block_size());
    assert!(stats.truncated_blocks >= 2 * (blocks - 1), "{stats:?}");
}

#[test]
fn a_hundred_thousand_entry_directory_on_mem_storage() {
    hundred_thousand_entries(&mut FileSystem::new(MemStorage::new(4096)));
}

#[test]
fn a_hundred_thousand_entry_directory_on_lfs() {
    let disk: Arc<dyn BlockDevice> = Arc::new(MemDisk::new(512 << 20));
    fslab::mkfs_lfs(disk.clone(), &MkfsOptions::default(), Creds::default()).expect("mkfs");
    let mut fs = FileSystem::new(Lfs::mount(disk.clone(), MountOptions::default()).expect("mount"));
    hundred_thousand_entries(&mut fs);
    fs.unmount().expect("unmount");
    let mut fs = FileSystem::new(Lfs::mount(disk, MountOptions::default()).expect("mount again"));
    assert_eq!(fs.readdir(ROOT_INO, 0, usize::MAX).expect("readdir").len(), 3, "only elsewhere is left");
}
