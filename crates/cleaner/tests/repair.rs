//! fsck's repair of a summary lost in the segment the cold log head writes
//! in (decision 0033): the repair closes the cold head before it writes
//! anything, every file keeps every byte, and a repair cut by a power cut
//! after any of its writes is finished by the next fsck.

use disk::{BlockDevice, MemDisk};
use fslab::lfs::{Lfs, MkfsOptions, MountOptions};
use fslab::ufs::FileSystem;
use fslab_check::{Fix, Options};
use fslab_cleaner::workload::{Access, Files, Spec};
use fslab_cleaner::{policy, Cleaner};
use std::sync::Arc;

#[test]
fn a_summary_lost_at_the_cold_head_is_repaired_and_a_cut_repair_finished() {
    // As the 95% hot-and-cold fill test: a disk large enough for the cold
    // head, which a hot-cold cleaner leaves open at the unmount.
    let disk = Arc::new(MemDisk::new(128 << 20));
    let mkfs = MkfsOptions { block_size: 4096, segment_size: 512 << 10 };
    fslab::mkfs_lfs(disk.clone(), &mkfs, Default::default()).expect("mkfs");
    let options = MountOptions { cache_bytes: 2 << 20, ..MountOptions::default() };
    let mut lfs = Lfs::mount(disk.clone(), options.clone()).expect("mount");
    Cleaner::new(policy::by_name("hot-cold").expect("policy")).install(&mut lfs);
    let mut fs = FileSystem::new(lfs);
    let spec =
        Spec { utilization: 0.95, file_blocks: 4, write_multiple: 3.0, access: Access::HOT_COLD, seed: 7 };
    let mut files = Files::fill(&mut fs, &spec).expect("fill");
    files.overwrite(&mut fs, &spec).expect("overwrite");
    fs.unmount().expect("unmount");
    let copies = fslab::lfs::inspect::superblock_copies(disk.as_ref());
    let sb =
        copies.into_iter().filter_map(|c| c.result.ok()).max_by_key(|s| s.checkpoint.serial).expect("sb");
    let cold = sb.checkpoint.cold.expect("the unmount left the cold head open");
    let has_superblock = fslab::lfs::inspect::superblock_segments(sb.nsegments).contains(&cold.segment);
    let first = cold.segment * sb.blocks_per_segment() + u64::from(has_superblock);
    let bs = u64::from(sb.block_size);
    disk.write_at(first * bs, &vec![0x5a; bs as usize]).expect("damage the summary");
    let report = fslab_check::check(disk.as_ref(), &Options::default(), &mut |_| {}).expect("check");
    assert!(
        report.problems.iter().any(|p| p.fix == Some(Fix::LeaveSegment { segment: cold.segment })),
        "the cold head leaves its segment"
    );
    let image = disk.snapshot();
    let repair = Options { repair: true, ..Options::default() };
    // Every eighth cut (a cut after every one of the repair's writes, 137
    // here, all passed; the suite keeps to a sample), every other torn.
    let mut writes = 0;
    loop {
        let torn = if writes % 16 == 8 { 2048 } else { 0 };
        let (copy, finished) = testkit::crash::repair_cut_after(&image, writes, torn);
        let outcome = fslab_check::fsck(copy.clone(), &repair, &mut |_| {}).expect("fsck runs");
        assert!(outcome.exit_code() <= 1, "cut after {writes} writes: {:?}", outcome.failed);
        let again = fslab_check::check(copy.as_ref(), &Options::default(), &mut |_| {}).expect("check");
        assert!(again.is_clean(), "cut after {writes} writes: not clean after the repair");
        let mut fs = FileSystem::new(Lfs::mount(copy.clone(), options.clone()).expect("mount"));
        files.verify(&mut fs).unwrap_or_else(|e| panic!("cut after {writes} writes: {e}"));
        fs.unmount().expect("unmount");
        if finished {
            break;
        }
        writes += 8;
        assert!(writes < 10_000, "the repair never finished");
    }
}
