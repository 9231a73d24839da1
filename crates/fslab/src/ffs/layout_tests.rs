//! Tests of the FFS on-disk structures (`layout.rs`): the superblock, a log
//! device's name and the cylinder group round-trip through their encoders
//! and decoders, and each decoder refuses damage, another version, bad
//! fields under a good checksum, and counts that disagree with bitmaps.

use super::*;

fn sample() -> Superblock {
    Superblock {
        geometry: Geometry::new(8192, 1024, 4, 4096, 512, 4 * 4096, 8).expect("valid"),
        policy: Policy {
            maxbpg: 2046,
            minfree: 10,
            optim: Optim::Time,
            rotdelay: RotDelay::Millis(4),
            sectors_per_track: 72,
            revolutions_per_second: 66,
            dirpref: DirPref::New,
            avgfilesize: 20000,
            avgfpdir: 50,
        },
        fs_id: 0xfeed,
        created: 5,
        time: 6,
        flags: SB_CLEAN,
        totals: Totals { free_blocks: 100, free_frags: 3, free_inodes: 2000, directories: 1 },
        orphan_head: 0,
        version: FORMAT_VERSION,
        journal: JournalInfo::default(),
    }
}

#[test]
fn orphan_head_round_trips_and_a_version_1_image_reads_as_an_empty_list() {
    let with_version = |version: u32| {
        let mut bytes = sample().encode();
        Encoder::new(&mut bytes).u32(8, version);
        let crc = crc32c_skipping(&bytes, SB_CRC);
        Encoder::new(&mut bytes).u32(SB_CRC, crc);
        bytes
    };
    let sb = Superblock { orphan_head: 99, ..sample() };
    assert_eq!(Superblock::decode(&sb.encode(), 0).expect("valid").orphan_head, 99);
    assert_eq!(Superblock::decode(&with_version(1), 0).expect("version 1 is read").orphan_head, 0);
    let newer = FORMAT_VERSION + 1;
    let err = Superblock::decode(&with_version(newer), 0).expect_err("a newer version is refused");
    assert!(err.to_string().contains(&format!("version {newer}")), "{err}");
    let old = Superblock::decode(&with_version(2), 0).expect("version 2 is read");
    assert_eq!(old.version, 2, "and written back as version 2");
    assert!(!old.indirect_geometry().sectored, "with the indirect blocks it was made with");
    assert!(Superblock::decode(&sample().encode(), 0).expect("valid").indirect_geometry().sectored);
}

#[test]
fn the_directory_policy_round_trips_and_a_version_5_image_reads_as_the_old_policy() {
    let sb = sample();
    let back = Superblock::decode(&sb.encode(), 0).expect("valid");
    assert_eq!(
        (back.policy.dirpref, back.policy.avgfilesize, back.policy.avgfpdir),
        (DirPref::New, 20000, 50)
    );
    let bytes = sb.encode();
    assert_eq!(&bytes[SB_DIRPREF..SB_AVGFPDIR + 4], [1, 0, 0, 0, 0x20, 0x4e, 0, 0, 50, 0, 0, 0]);

    // A version-5 image has zeros there and keeps them when written back.
    let v5 = Superblock { version: 5, ..sample() };
    let bytes = v5.encode();
    assert!(bytes[SB_DIRPREF..SB_AVGFPDIR + 4].iter().all(|&b| b == 0));
    let back = Superblock::decode(&bytes, 0).expect("version 5 is read");
    assert_eq!(back.version, 5);
    assert_eq!(
        (back.policy.dirpref, back.policy.avgfilesize, back.policy.avgfpdir),
        (DirPref::Old, DEFAULT_AVGFILESIZE, DEFAULT_AVGFPDIR)
    );
    assert_eq!(Superblock::decode(&back.encode(), 0).expect("again"), back);

    assert!(reseal(SB_DIRPREF, 2).contains("directory placement 2"));
    assert!(reseal(SB_AVGFILESIZE, 0).contains("average file size"));
    assert!(reseal(SB_AVGFPDIR, 0).contains("files per directory"));
}

#[test]
fn a_log_devices_name_round_trips_and_an_unended_path_is_refused() {
    let device = LogDeviceName::new([7; 16], "/dev/disk/by-id/log").expect("a path");
    let journal = JournalInfo {
        kind: JournalKind::Device,
        unit: LOG_BLOCK,
        start: 1 << 20,
        bytes: 1 << 20,
        device,
        ..JournalInfo::default()
    };
    let sb = Superblock { journal, ..sample() };
    let back = Superblock::decode(&sb.encode(), 0).expect("valid");
    assert_eq!(back.journal.device.path(), "/dev/disk/by-id/log");
    assert_eq!(back.journal.device.uuid_text(), "07070707-0707-0707-0707-070707070707");
    assert_eq!(back, sb);
    assert!(LogDeviceName::new([1; 16], "").is_err());
    assert!(LogDeviceName::new([1; 16], &"x".repeat(LOG_PATH_BYTES)).is_err());
    // A path that fills its field to the end, without its NUL.
    let mut bytes = sb.encode();
    bytes[SB_LOG_PATH..SB_LOG_PATH + LOG_PATH_BYTES].fill(b'x');
    let crc = crc32c_skipping(&bytes, SB_CRC);
    Encoder::new(&mut bytes).u32(SB_CRC, crc);
    assert!(Superblock::decode(&bytes, 0).is_err());
}

/// The sample superblock with the u32 at `at` set to `value` and its
/// checksum made good again: why it is refused.
fn reseal(at: usize, value: u32) -> String {
    let mut bytes = sample().encode();
    Encoder::new(&mut bytes).u32(at, value);
    let crc = crc32c_skipping(&bytes, SB_CRC);
    Encoder::new(&mut bytes).u32(SB_CRC, crc);
    Superblock::decode(&bytes, 0).expect_err("refused").to_string()
}

#[test]
fn superblock_round_trips_and_rejects_a_flipped_bit() {
    let sb = sample();
    let mut bytes = sb.encode();
    assert_eq!(Superblock::decode(&bytes, 0).expect("valid"), sb);
    bytes[100] ^= 1;
    let err = Superblock::decode(&bytes, 0).expect_err("damaged");
    assert!(err.to_string().contains("checksum"), "{err}");
    assert!(Superblock::decode(&bytes[..100], 0).is_err());
}

#[test]
fn superblock_of_another_version_is_refused_by_name() {
    let mut bytes = sample().encode();
    Encoder::new(&mut bytes).u32(8, 7);
    let crc = crc32c_skipping(&bytes, SB_CRC);
    Encoder::new(&mut bytes).u32(SB_CRC, crc);
    let err = Superblock::decode(&bytes, 0).expect_err("other version");
    assert!(err.to_string().contains("version 7"), "{err}");
}

#[test]
fn superblock_with_bad_fields_but_a_good_checksum_is_refused() {
    assert!(reseal(20, 3000).contains("fragment size"));
    assert!(reseal(56, 99).contains("data offset"));
    assert!(reseal(108, 2).contains("both"));
    assert!(reseal(120, 9).contains("optimization"));
    assert!(reseal(92, 100).contains("minfree"));
}

#[test]
fn lfs_and_ffs_superblocks_are_told_apart_by_magic() {
    let bytes = sample().encode();
    assert!(Superblock::has_magic(&bytes));
    let mut lfs = bytes.clone();
    lfs[..8].copy_from_slice(b"fslabLFS");
    assert!(!Superblock::has_magic(&lfs));
}

#[test]
fn cylinder_group_round_trips_and_rejects_damage() {
    let sb = sample();
    let geo = sb.geometry;
    let mut cg = CylinderGroup::new_empty(&geo, 1, 9);
    cg.alloc_frags(None, 3).expect("room");
    cg.alloc_inode(None, true).expect("room");
    let bytes = cg.encode(&geo, sb.fs_id);
    assert_eq!(bytes.len(), geo.cg_blocks() as usize * 8192);
    assert_eq!(CylinderGroup::decode(&bytes, &geo, 1, sb.fs_id).expect("valid"), cg);
    assert!(CylinderGroup::decode(&bytes, &geo, 2, sb.fs_id).is_err());
    assert!(CylinderGroup::decode(&bytes, &geo, 1, 1).is_err());
    let mut damaged = bytes.clone();
    damaged[300] ^= 0x40;
    assert!(CylinderGroup::decode(&damaged, &geo, 1, sb.fs_id).is_err());
}

#[test]
fn cylinder_group_whose_counts_disagree_with_its_bitmaps_is_refused() {
    let sb = sample();
    let geo = sb.geometry;
    let mut cg = CylinderGroup::new_empty(&geo, 0, 9);
    cg.counts.free_blocks += 1;
    let err = CylinderGroup::decode(&cg.encode(&geo, sb.fs_id), &geo, 0, sb.fs_id).expect_err("refused");
    assert!(err.to_string().contains("counts"), "{err}");

    let mut cg = CylinderGroup::new_empty(&geo, 0, 9);
    cg.frags_free.set(geo.inode_table_offset());
    cg.frsum[1] += 1;
    cg.counts.free_frags += 1;
    let err = CylinderGroup::decode(&cg.encode(&geo, sb.fs_id), &geo, 0, sb.fs_id).expect_err("refused");
    assert!(err.to_string().contains("metadata"), "{err}");
}

#[test]
fn a_damaged_group_still_gives_up_its_initialised_mark_when_plausible() {
    let sb = sample();
    let geo = sb.geometry;
    let mut cg = CylinderGroup::new_empty(&geo, 1, 9);
    cg.alloc_inode(Some(40), false).expect("room");
    let mut bytes = cg.encode(&geo, sb.fs_id);
    bytes[300] ^= 0x40;
    assert!(CylinderGroup::decode(&bytes, &geo, 1, sb.fs_id).is_err());
    assert_eq!(CylinderGroup::salvage_initialised_inodes(&bytes, &geo), Some(64));
    Encoder::new(&mut bytes).u32(60, 65);
    assert_eq!(CylinderGroup::salvage_initialised_inodes(&bytes, &geo), None, "not a whole block");
    bytes[0] ^= 1;
    assert_eq!(CylinderGroup::salvage_initialised_inodes(&bytes, &geo), None, "no magic");
}

/// Values no disk reaches, which would wrap the arithmetic built on them:
/// a log position or generation near the top, a rotational delay over a
/// drive of impossible speed.
#[test]
fn a_superblock_whose_counts_would_wrap_is_refused() {
    let sound = JournalInfo {
        kind: JournalKind::Wafs,
        unit: LOG_BLOCK,
        start: 64,
        bytes: 1 << 20,
        ..JournalInfo::default()
    };
    assert!(Superblock::decode(&Superblock { journal: sound, ..sample() }.encode(), 0).is_ok());
    for journal in [
        JournalInfo { tail: u64::MAX - 7, ..sound },
        JournalInfo { tail_seq: u64::MAX, ..sound },
        JournalInfo { generation: u64::MAX, ..sound },
        JournalInfo { start: 1 << 63, ..sound },
    ] {
        let err = Superblock::decode(&Superblock { journal, ..sample() }.encode(), 0).expect_err("refused");
        assert!(err.to_string().contains("journal"), "{err}");
    }
    let mut policy = sample().policy;
    policy.rotdelay = RotDelay::Millis(2);
    policy.sectors_per_track = u32::MAX;
    policy.revolutions_per_second = u32::MAX;
    assert!(check_policy(&policy).expect_err("refused").contains("beyond any disk"));
}
