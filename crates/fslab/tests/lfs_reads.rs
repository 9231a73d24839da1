//! How many device reads LFS makes to find files' inodes.
//!
//! Regression test for an LFS that read a file's inode block from the disk
//! every time it loaded an inode: files written together share inode
//! blocks, and reading them back in creation order after a remount cost
//! one inode-block read per file where 4.4BSD's LFS, which reads inode
//! blocks through its buffer cache, reads each block once.

use disk::{CountingDisk, MemDisk};
use fslab::format::inode::kind;
use fslab::format::ROOT_INO;
use fslab::lfs::{Lfs, MkfsOptions, MountOptions};
use fslab::ufs::{Creds, FileSystem};
use std::sync::Arc;

#[test]
fn files_written_together_share_their_inode_block_reads() {
    let disk = Arc::new(CountingDisk::new(MemDisk::new(32 << 20)));
    let mkfs = MkfsOptions { block_size: 4096, segment_size: 1 << 20 };
    fslab::mkfs_lfs(disk.clone(), &mkfs, Creds::default()).expect("mkfs");
    let mount = || FileSystem::new(Lfs::mount(disk.clone(), MountOptions::default()).expect("mount"));
    let mut fs = mount();
    let files = 200;
    let mut inos = Vec::new();
    for i in 0..files {
        let name = format!("f{i}");
        let ino =
            fs.mknod(ROOT_INO, name.as_bytes(), kind::REG | 0o644, 0, Creds::default()).expect("create").ino;
        fs.write(ino, 0, &[i as u8; 100]).expect("write");
        inos.push(ino);
    }
    fs.unmount().expect("unmount");

    let mut fs = mount();
    let before = disk.reads();
    for (i, &ino) in inos.iter().enumerate() {
        assert_eq!(fs.read(ino, 0, 100).expect("read"), vec![i as u8; 100]);
    }
    let reads = disk.reads() - before;
    // One read per file for its data block, and one per inode block (a
    // few dozen inodes each); an inode read per file would double it.
    assert!(reads < files as u64 * 5 / 4, "{reads} device reads to read {files} one-block files");
}
