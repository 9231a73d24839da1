//! How the cleaner reads: each segment it examines is read whole, in one
//! device request, and the live blocks' contents come from that read
//! (1993 paper §3: "the cleaner reads the segment from the raw partition").
//!
//! Regression test for a cleaner that read only the summaries and then had
//! `markv` read every live block on its own: on a disk each of those reads
//! costs a seek and a rotation, and TPC-B with the cleaner ran at half the
//! paper's throughput.

use disk::{CountingDisk, MemDisk};
use fslab::format::inode::kind;
use fslab::format::ROOT_INO;
use fslab::lfs::{Lfs, MkfsOptions, MountOptions};
use fslab::ufs::{Creds, FileSystem};
use fslab_cleaner::{policy, Cleaner, SegmentReads};
use std::sync::Arc;

const BLOCK: usize = 4096;
const SEGMENT: u64 = 256 << 10;

fn mount(disk: &Arc<CountingDisk<MemDisk>>) -> FileSystem<Lfs> {
    let options = MountOptions { cache_bytes: 4 << 20, ..MountOptions::default() };
    FileSystem::new(Lfs::mount(disk.clone(), options).expect("mount"))
}

#[test]
fn a_pass_reads_each_segment_in_one_request() {
    let disk = Arc::new(CountingDisk::new(MemDisk::new(16 << 20)));
    let mkfs = MkfsOptions { block_size: BLOCK as u32, segment_size: SEGMENT as u32 };
    fslab::mkfs_lfs(disk.clone(), &mkfs, Creds::default()).expect("mkfs");
    let mut fs = mount(&disk);
    // Forty 32 KB files, then every other one rewritten: the first
    // segments are left about half live, in blocks scattered through them.
    let mut files = Vec::new();
    for i in 0..40u32 {
        let name = format!("f{i}");
        let ino =
            fs.mknod(ROOT_INO, name.as_bytes(), kind::REG | 0o644, 0, Creds::default()).expect("create").ino;
        fs.write(ino, 0, &vec![i as u8; 8 * BLOCK]).expect("write");
        files.push(ino);
    }
    fs.sync().expect("sync");
    for (i, &ino) in files.iter().enumerate().step_by(2) {
        fs.write(ino, 0, &vec![i as u8 ^ 0xff; 8 * BLOCK]).expect("rewrite");
    }
    fs.sync().expect("sync");
    fs.unmount().expect("unmount");

    // Nothing cached: every block the pass moves must come from a read.
    let mut fs = mount(&disk);
    let mut cleaner =
        Cleaner::new(policy::by_name("greedy").expect("policy")).with_reads(SegmentReads::WholeSegments);
    let before = disk.reads();
    let pass = cleaner.pass(fs.storage()).expect("pass");
    let reads = disk.reads() - before;
    assert!(pass.moved >= 64, "the pass moved the live blocks of half-live segments: {pass:?}");
    // One read per segment, and one for each moved file's inode (at most
    // one per file); a read per live block would be at least `moved`.
    assert!(
        reads <= pass.segments_read + files.len() as u64 + 4,
        "{reads} device reads for {} segments read and {} blocks moved",
        pass.segments_read,
        pass.moved
    );

    // The moves kept every byte.
    fs.sync().expect("sync");
    for (i, &ino) in files.iter().enumerate() {
        let want = if i % 2 == 0 { i as u8 ^ 0xff } else { i as u8 };
        let got = fs.read(ino, 0, 8 * BLOCK).expect("read");
        assert!(got.iter().all(|&b| b == want), "file {i} reads back as written");
    }
}
