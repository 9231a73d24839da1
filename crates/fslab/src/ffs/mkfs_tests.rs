use super::*;
use disk::MemDisk;

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

fn geometry_line(sb: &Superblock) -> String {
    let g = &sb.geometry;
    format!(
        "{} B blocks / {} B frags, ncg {}, fpg {}, ipg {}, data at frag {} of each group, {} inodes, {} data blocks, maxcontig {}, maxbpg {}",
        g.block_size,
        g.frag_size,
        g.ncg,
        g.fpg,
        g.ipg,
        g.data_offset(),
        g.ninodes(),
        sb.totals.free_blocks,
        g.maxcontig,
        sb.policy.maxbpg
    )
}

#[test]
fn default_geometry_of_1_and_4_gib_devices() {
    let one = plan(GIB, &MkfsOptions::default()).expect("plan");
    println!("1 GiB: {}", geometry_line(&one));
    let g = &one.geometry;
    assert_eq!((g.block_size, g.frag_size, g.ncg, g.fpg, g.ipg), (8192, 1024, 32, 32768, 4096));
    // Superblock copy, one block of group area, 128 blocks of inodes.
    assert_eq!(g.data_offset(), 8 + 8 + 128 * 8);
    assert_eq!(one.totals.free_blocks, 32 * (4096 - 130));
    assert_eq!(one.totals.free_inodes, 32 * 4096 - 2);
    assert_eq!((g.maxcontig, one.policy.maxbpg, one.policy.minfree), (128, 2032, 10));
    assert_eq!(one.policy.optim, Optim::Time);
    assert_eq!(one.policy.rotdelay, RotDelay::Off);

    let four = plan(4 * GIB, &MkfsOptions::default()).expect("plan");
    println!("4 GiB: {}", geometry_line(&four));
    assert_eq!((four.geometry.ncg, four.geometry.fpg), (128, 32768));
    assert_eq!(four.geometry.total_frags, 4 * GIB / 1024);
}

#[test]
fn a_device_tail_too_short_for_a_group_is_left_unused_and_a_longer_one_is_a_short_group() {
    let sb = plan(64 * MIB + 100 * 1024, &MkfsOptions::default()).expect("plan");
    assert_eq!(sb.geometry.ncg, 2);
    assert_eq!(sb.geometry.total_frags, 2 * 32768);
    let sb = plan(64 * MIB + 8 * MIB, &MkfsOptions::default()).expect("plan");
    assert_eq!(sb.geometry.ncg, 3);
    assert_eq!(sb.geometry.group_frags(2), 8192);
}

#[test]
fn a_device_smaller_than_a_group_gets_one_group_of_its_size() {
    let sb = plan(5 * MIB, &MkfsOptions::default()).expect("plan");
    assert_eq!(sb.geometry.ncg, 1);
    assert_eq!(sb.geometry.fpg, 5 * 1024);
    assert_eq!(sb.geometry.ipg, 640);
}

#[test]
fn bad_combinations_are_refused_with_a_reason() {
    let d = MkfsOptions::default();
    let cases: [(MkfsOptions, u64, &str); 9] = [
        (MkfsOptions { block_size: 12288, ..d }, GIB, "block size"),
        (MkfsOptions { fragment_size: 512, ..d }, GIB, "fragment size"),
        (MkfsOptions { fragment_size: 3000, ..d }, GIB, "fragment size"),
        (MkfsOptions { maxcontig: Some(0), ..d }, GIB, "maxcontig"),
        (MkfsOptions { minfree: 100, ..d }, GIB, "minfree"),
        (MkfsOptions { bytes_per_inode: 256, group_size: MIB, ..d }, GIB, "metadata"),
        (MkfsOptions { rotdelay: RotDelay::Millis(4), revolutions_per_second: 0, ..d }, GIB, "revolutions"),
        (d, 128 * 1024, "too small"),
        (MkfsOptions { block_size: 4096, fragment_size: 512, ..d }, 4096 * GIB, "2^32 fragments"),
    ];
    for (options, size, why) in cases {
        let err = plan(size, &options).expect_err("refused").to_string();
        assert!(err.contains(why), "{why}: {err}");
    }
}

#[test]
fn mkfs_writes_every_group_and_dump_reads_them_back() {
    let dev: Arc<dyn BlockDevice> = Arc::new(MemDisk::new(72 * MIB));
    let sb = mkfs(dev.clone(), &MkfsOptions::default()).expect("mkfs");
    let read = read_superblock(dev.as_ref()).expect("superblock");
    assert_eq!(read, sb);
    assert_eq!(sb.geometry.ncg, 3);
    let mut totals = Totals::default();
    for cg in 0..sb.geometry.ncg {
        let group = read_group(dev.as_ref(), &sb, cg).expect("group");
        assert_eq!(group, CylinderGroup::new_empty(&sb.geometry, cg, sb.created));
        totals.add(&group.counts(), 1);
        // Every group's first block is a copy of the superblock.
        let mut copy = vec![0u8; SUPERBLOCK_BYTES];
        let base = sb.geometry.group_base(cg);
        dev.read_at(sb.geometry.byte_offset(base), &mut copy).expect("read");
        assert_eq!(Superblock::decode(&copy, base).expect("copy"), sb);
    }
    assert_eq!(totals, sb.totals);
    let group0 = read_group(dev.as_ref(), &sb, 0).expect("group");
    assert!(group0.is_inode_used(0) && group0.is_inode_used(1));
    assert_eq!(group0.counts().free_inodes, sb.geometry.ipg - 2, "only inodes 0 and 1 are taken");

    let report = dump(dev.as_ref()).expect("dump");
    for want in [
        "block size        8192",
        "cylinder groups   3",
        "maxcontig         128 blocks",
        "minfree           10%",
        "dirpref           new (near the parent; avgfilesize 16384 bytes, avgfpdir 64)",
    ] {
        assert!(report.contains(want), "missing {want:?} in\n{report}");
    }
    let per_group = format!("{:>6} {:>12} {:>11} {:>12} {:>8}", 2, 1024 - 130, 0, 4096, 0);
    assert!(report.contains(&per_group), "missing {per_group:?} in\n{report}");
    assert!(!report.contains("stale"));
}

#[test]
fn the_directory_policy_chosen_at_mkfs_is_in_the_superblock_and_the_dump() {
    let dev: Arc<dyn BlockDevice> = Arc::new(MemDisk::new(72 * MIB));
    let options =
        MkfsOptions { dirpref: DirPref::Old, avgfilesize: 4096, avgfpdir: 8, ..MkfsOptions::default() };
    let sb = mkfs(dev.clone(), &options).expect("mkfs");
    let read = read_superblock(dev.as_ref()).expect("superblock");
    assert_eq!((read.policy.dirpref, read.policy.avgfilesize, read.policy.avgfpdir), (DirPref::Old, 4096, 8));
    assert_eq!(read, sb);
    let report = dump(dev.as_ref()).expect("dump");
    assert!(report.contains("dirpref           old (4.4BSD: spread over the groups)"), "{report}");
    let zero = MkfsOptions { avgfpdir: 0, ..MkfsOptions::default() };
    let err = plan(72 * MIB, &zero).expect_err("refused");
    assert!(err.to_string().contains("files per directory"), "{err}");
}

#[test]
fn dump_names_a_damaged_group_and_reads_the_rest() {
    let dev: Arc<dyn BlockDevice> = Arc::new(MemDisk::new(72 * MIB));
    let sb = mkfs(dev.clone(), &MkfsOptions::default()).expect("mkfs");
    let at = sb.geometry.byte_offset(sb.geometry.cg_addr(1)) + 200;
    dev.write_at(at, &[0xff]).expect("write");
    let err = read_group(dev.as_ref(), &sb, 1).expect_err("damaged").to_string();
    assert!(err.contains("group 1") && err.contains("checksum"), "{err}");
    let report = dump(dev.as_ref()).expect("dump");
    assert!(report.contains("1 unreadable"), "{report}");
    assert!(report.contains("stale"), "{report}");
}

#[test]
fn an_image_without_ffs_magic_is_named_foreign() {
    let dev = MemDisk::new(8 * MIB);
    let err = read_superblock(&dev).expect_err("no magic");
    assert!(matches!(err, Error::Foreign(_)), "{err}");
    assert!(dump(&dev).is_err());
}

#[test]
fn a_superblock_claiming_more_than_the_device_is_refused() {
    let dev: Arc<dyn BlockDevice> = Arc::new(MemDisk::new(72 * MIB));
    mkfs(dev.clone(), &MkfsOptions::default()).expect("mkfs");
    let mut bytes = vec![0u8; 72 * MIB as usize];
    dev.read_at(0, &mut bytes).expect("read");
    let small = MemDisk::from_bytes(bytes[..40 * MIB as usize].to_vec());
    let err = read_superblock(&small).expect_err("too big").to_string();
    assert!(err.contains("exceeds the device"), "{err}");
}

#[test]
fn a_given_identity_is_kept_and_none_draws_a_new_one() {
    let made = |id| {
        let dev: Arc<dyn BlockDevice> = Arc::new(MemDisk::new(72 * MIB));
        mkfs(dev.clone(), &MkfsOptions { id, ..MkfsOptions::default() }).expect("mkfs");
        read_superblock(dev.as_ref()).expect("superblock").fs_id
    };
    assert_eq!(made(Some(0x5eed)), 0x5eed, "fixed: the new dirpref's random start repeats");
    let (a, b) = (made(None), made(None));
    assert!(a != 0 && b != 0 && a != b, "random: {a:x} {b:x}");
}

#[test]
fn fragments_are_the_default_or_an_eighth_of_a_large_block() {
    let frag = |bs| MkfsOptions::with_block_size(bs).fragment_size;
    assert_eq!((frag(4096), frag(8192), frag(16384), frag(65536)), (1024, 1024, 2048, 8192));
    let o = MkfsOptions::with_block_size(4096);
    assert_eq!(MkfsOptions { block_size: 8192, ..o }, MkfsOptions::default());
}

#[test]
fn a_created_log_device_holds_the_journal_after_its_header() {
    let o = MkfsOptions::default();
    let header = super::super::log_device::region_offset_for(o.fragment_size);
    assert_eq!(o.log_device_bytes(), (64 << 20) + header);
    let o = MkfsOptions { journal_bytes: Some(8 << 20), ..o };
    assert_eq!(o.log_device_bytes(), (8 << 20) + header);
}

/// A journal's log is written a 4 KiB log block at a time at fragment
/// addresses: with larger fragments every other block landed on the one
/// before it, and a crash lost every transaction. mkfs refuses it, for
/// every place a log can live, and still makes the same geometry without
/// a journal or with 4 KiB fragments.
#[test]
fn a_journal_with_fragments_larger_than_a_log_block_is_refused() {
    let big = MkfsOptions { block_size: 16384, fragment_size: 8192, ..MkfsOptions::default() };
    for journal in [JournalKind::File, JournalKind::Wafs] {
        let err =
            plan(256 * MIB, &MkfsOptions { journal, ..big }).expect_err("8 KiB fragments with a journal");
        assert!(err.to_string().contains("fragments of at most 4096 bytes"), "{err}");
    }
    let device = MkfsOptions { journal: JournalKind::Device, ..big };
    let err = plan_with_log(256 * MIB, Some(64 * MIB), &device).expect_err("8 KiB fragments, log device");
    assert!(err.to_string().contains("fragments of at most 4096 bytes"), "{err}");
    plan(256 * MIB, &big).expect("no journal");
    let four = MkfsOptions { block_size: 16384, fragment_size: 4096, journal: JournalKind::File, ..big };
    plan(256 * MIB, &four).expect("4 KiB fragments with a journal");
}

/// mkfs writes the whole log (decision 0023): over whatever the device
/// held, every byte of it reads as zero afterwards.
#[test]
fn mkfs_writes_zeros_over_the_whole_log() {
    for journal in [JournalKind::File, JournalKind::Wafs] {
        let dev = Arc::new(MemDisk::new(64 * MIB));
        dev.write_at(0, &vec![0xa5; (64 * MIB) as usize]).expect("old bytes");
        let options = MkfsOptions { journal, ..MkfsOptions::default() };
        let sb = mkfs(dev.clone(), &options).expect("mkfs");
        let mut log = vec![0xffu8; sb.journal.bytes as usize];
        dev.read_at(sb.geometry.byte_offset(sb.journal.start), &mut log).expect("read the log");
        assert!(log.iter().all(|&b| b == 0), "{journal:?}: a log byte left as it was");
    }
    let dev = Arc::new(MemDisk::new(64 * MIB));
    let log = Arc::new(MemDisk::new(4 * MIB));
    log.write_at(0, &vec![0xa5; (4 * MIB) as usize]).expect("old bytes");
    let options = MkfsOptions { journal: JournalKind::Device, ..MkfsOptions::default() };
    let sb = mkfs_with_log(dev.clone(), log.clone(), "/dev/log", &options).expect("mkfs");
    let base = super::super::log_device::log_device_base(&sb.geometry);
    let pair = disk::DevicePair::new(dev, log, base);
    let mut bytes = vec![0xffu8; sb.journal.bytes as usize];
    pair.read_at(sb.geometry.byte_offset(sb.journal.start), &mut bytes).expect("read the log");
    assert!(bytes.iter().all(|&b| b == 0), "a log device's byte left as it was");
}
