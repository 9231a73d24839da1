//! File contents: sparse files, truncate, seek, fallocate, copy, ENOSPC.

use super::*;
use crate::ufs::SetAttr;

const BS: u64 = 4096;

fn truncate(fs: &mut FileSystem<MemStorage>, ino: Ino, size: u64) {
    fs.setattr(ino, &SetAttr { size: Some(size), ..SetAttr::default() }).expect("truncate");
}

#[test]
fn writes_at_any_offset_leave_holes_that_read_as_zeros() {
    let mut fs = fs();
    let f = file(&mut fs, ROOT, "f").ino;
    assert_eq!(fs.write(f, 10 * BS + 100, b"far").expect("write"), 3);
    assert_eq!(fs.write(f, 5, b"near").expect("write"), 4);
    assert_eq!(fs.getattr(f).expect("getattr").attr.size, 10 * BS + 103);
    let all = fs.read(f, 0, 1 << 20).expect("read");
    assert_eq!(all.len() as u64, 10 * BS + 103);
    assert_eq!(&all[5..9], b"near");
    assert!(all[9..(10 * BS + 100) as usize].iter().all(|&b| b == 0));
    assert_eq!(&all[(10 * BS + 100) as usize..], b"far");
    assert!(!fs.storage().has_block(f, 3), "the middle is a hole");
    assert_eq!(fs.read(f, 10 * BS + 103, 10).expect("at eof"), b"");
    // A write spanning a block boundary.
    let data: Vec<u8> = (0..2 * BS as usize).map(|i| i as u8).collect();
    assert_eq!(fs.write(f, BS - 10, &data).expect("write"), data.len());
    assert_eq!(fs.read(f, BS - 10, data.len()).expect("read"), data);
}

#[test]
fn writes_and_reads_refuse_directories_and_writes_past_the_largest_file_fail() {
    let mut fs = fs();
    fs.storage().set_max_file_size(10 * BS);
    let f = file(&mut fs, ROOT, "f").ino;
    assert_eq!(errno(fs.write(f, 10 * BS, b"x")), libc::EFBIG);
    assert_eq!(fs.write(f, 10 * BS - 2, b"xyz").expect("short"), 2);
    assert_eq!(errno(fs.read(ROOT, 0, 1)), libc::EISDIR);
    assert_eq!(errno(fs.write(ROOT, 0, b"x")), libc::EISDIR);
    let e = fs.setattr(f, &SetAttr { size: Some(10 * BS + 1), ..SetAttr::default() });
    assert_eq!(errno(e), libc::EFBIG);
    // A copy is cut short at the largest file as a write is (Linux's
    // generic_write_check_limits()); only one starting there is refused.
    let g = file(&mut fs, ROOT, "g").ino;
    fs.write(g, 0, &[9u8; 100]).expect("source");
    assert_eq!(fs.copy_file_range(g, 0, f, 10 * BS - 30, 100).expect("short copy"), 30);
    assert_eq!(errno(fs.copy_file_range(g, 0, f, 10 * BS, 100)), libc::EFBIG);
}

#[test]
fn operations_larger_than_one_transaction_may_hold_are_made_in_steps_with_the_same_result() {
    let mut fs = fs();
    fs.storage().set_blocks_per_tx(Some(4));
    let pattern = |n: usize| (0..n).map(|i| (i % 251) as u8).collect::<Vec<u8>>();
    let f = file(&mut fs, ROOT, "f").ino;
    fs.write(f, 0, &pattern(20 * BS as usize)).expect("write");
    let steps = |fs: &mut FileSystem<MemStorage>, run: &mut dyn FnMut(&mut FileSystem<MemStorage>)| {
        let before = fs.storage().transaction_counts().1;
        run(fs);
        fs.storage().transaction_counts().1 - before
    };

    // A truncate from 20 blocks to 3 + 10 bytes: the size falls 4 blocks at a time.
    let n = steps(&mut fs, &mut |fs| truncate(fs, f, 3 * BS + 10));
    assert!(n >= 4, "{n} transactions");
    assert_eq!(contents(&mut fs, f), pattern(3 * BS as usize + 10));
    assert_eq!(fs.storage().blocks_used(), 1 + 4, "the root's block and the file's");

    // A fallocate of 18 blocks from the middle of block 3, and a copy of 16.
    let n = steps(&mut fs, &mut |fs| fs.fallocate(f, 3 * BS + 10, 18 * BS, 0).expect("fallocate"));
    assert!(n >= 5, "{n} transactions");
    let mut want = pattern(3 * BS as usize + 10);
    want.resize(21 * BS as usize + 10, 0);
    assert_eq!(contents(&mut fs, f), want);
    let g = file(&mut fs, ROOT, "g").ino;
    let n =
        steps(&mut fs, &mut |fs| assert_eq!(fs.copy_file_range(f, 0, g, 0, 16 * BS).expect("copy"), 16 * BS));
    assert!(n >= 4, "{n} transactions");
    assert_eq!(contents(&mut fs, g), want[..16 * BS as usize]);
    // A copy within one file whose ranges overlap is refused whole, not in steps.
    assert_eq!(errno(fs.copy_file_range(f, 0, f, BS, 16 * BS)), libc::EINVAL);

    // A removal: the name goes in one transaction, the blocks in steps,
    // the inode last.
    let n = steps(&mut fs, &mut |fs| fs.unlink(ROOT, b"f").expect("unlink"));
    assert!(n >= 5, "{n} transactions");
    assert!(fs.orphans().is_empty());
    assert_eq!(fs.storage().blocks_used(), 1 + 16, "the root's block and g's");

    // A collapse that would move more blocks than one transaction holds is
    // refused; one that is invalid anyway gets Linux's error first.
    let e = fs.fallocate(g, 0, BS, libc::FALLOC_FL_COLLAPSE_RANGE);
    assert_eq!(errno(e), libc::EFBIG);
    assert_eq!(errno(fs.fallocate(g, 1, BS, libc::FALLOC_FL_COLLAPSE_RANGE)), libc::EINVAL);
    assert_eq!(contents(&mut fs, g), want[..16 * BS as usize]);

    // Holes cost no steps: a truncate of a file grown to a terabyte, and a
    // hole punched over one, take a transaction for each few blocks of
    // data, not one for each span of the range.
    let h = file(&mut fs, ROOT, "h").ino;
    fs.write(h, 0, &pattern(8 * BS as usize)).expect("write");
    fs.write(h, 1 << 39, &pattern(8 * BS as usize)).expect("write far away");
    truncate(&mut fs, h, 1 << 40);
    let n = steps(&mut fs, &mut |fs| {
        let punch = libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE;
        fs.fallocate(h, 4 * BS, 1 << 40, punch).expect("punch")
    });
    assert!((2..=8).contains(&n), "{n} transactions");
    assert_eq!(fs.read(h, 0, 4 * BS as usize).expect("read"), pattern(4 * BS as usize));
    fs.write(h, 1 << 39, &pattern(8 * BS as usize)).expect("write far away again");
    let n = steps(&mut fs, &mut |fs| truncate(fs, h, BS));
    assert!((2..=8).contains(&n), "{n} transactions");
    assert_eq!(contents(&mut fs, h), pattern(BS as usize));

    // A read-only file system changes nothing, not even in steps.
    fs.write(h, 0, &pattern(12 * BS as usize)).expect("write");
    let held = fs.storage().blocks_used();
    fs.set_read_only(true);
    assert_eq!(errno(fs.setattr(h, &SetAttr { size: Some(0), ..SetAttr::default() })), libc::EROFS);
    assert_eq!(fs.storage().blocks_used(), held);
}

#[test]
fn truncate_down_frees_blocks_and_zeroes_the_tail() {
    let mut fs = fs();
    let f = file(&mut fs, ROOT, "f").ino;
    fs.write(f, 0, &vec![0xaa; 3 * BS as usize]).expect("write");
    truncate(&mut fs, f, BS + 10);
    assert!(!fs.storage().has_block(f, 2));
    assert_eq!(fs.getattr(f).expect("getattr").attr.size, BS + 10);
    truncate(&mut fs, f, 3 * BS);
    let all = fs.read(f, 0, 3 * BS as usize).expect("read");
    assert!(all[..(BS + 10) as usize].iter().all(|&b| b == 0xaa));
    assert!(all[(BS + 10) as usize..].iter().all(|&b| b == 0), "no old data comes back");
    assert!(!fs.storage().has_block(f, 2), "truncate up leaves a hole");
    truncate(&mut fs, f, 0);
    assert_eq!(fs.storage().blocks_used(), 1);
}

#[test]
fn seek_data_and_seek_hole_walk_a_sparse_file() {
    let mut fs = fs();
    let f = file(&mut fs, ROOT, "f").ino;
    fs.write(f, 2 * BS, &[1; 10]).expect("write");
    fs.write(f, 3 * BS, &[1; 10]).expect("write");
    truncate(&mut fs, f, 8 * BS);
    assert_eq!(fs.lseek(f, 0, libc::SEEK_DATA).expect("data"), 2 * BS);
    assert_eq!(fs.lseek(f, (2 * BS + 5) as i64, libc::SEEK_DATA).expect("data"), 2 * BS + 5);
    assert_eq!(fs.lseek(f, 0, libc::SEEK_HOLE).expect("hole"), 0);
    assert_eq!(fs.lseek(f, (2 * BS) as i64, libc::SEEK_HOLE).expect("hole"), 4 * BS);
    assert_eq!(errno(fs.lseek(f, (4 * BS) as i64, libc::SEEK_DATA)), libc::ENXIO);
    assert_eq!(errno(fs.lseek(f, (8 * BS) as i64, libc::SEEK_HOLE)), libc::ENXIO);
    fs.write(f, 7 * BS, &[1; 10]).expect("write");
    assert_eq!(fs.lseek(f, (7 * BS) as i64, libc::SEEK_HOLE).expect("hole at eof"), 8 * BS);
    for whence in [libc::SEEK_DATA, libc::SEEK_HOLE] {
        assert_eq!(errno(fs.lseek(f, -1, whence)), libc::ENXIO, "negative offset, whence {whence}");
    }
}

#[test]
fn punch_hole_frees_whole_blocks_and_zeroes_partial_ends() {
    let mut fs = fs();
    let f = file(&mut fs, ROOT, "f").ino;
    fs.write(f, 0, &vec![7; 4 * BS as usize]).expect("write");
    let mode = libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE;
    fs.fallocate(f, BS / 2, 2 * BS, mode).expect("punch");
    assert!(!fs.storage().has_block(f, 1));
    let all = fs.read(f, 0, 4 * BS as usize).expect("read");
    assert!(all[..(BS / 2) as usize].iter().all(|&b| b == 7));
    assert!(all[(BS / 2) as usize..(2 * BS + BS / 2) as usize].iter().all(|&b| b == 0));
    assert!(all[(2 * BS + BS / 2) as usize..].iter().all(|&b| b == 7));
    assert_eq!(fs.getattr(f).expect("getattr").attr.size, 4 * BS);
    fs.fallocate(f, 10, 20, mode).expect("punch inside one block");
    assert_eq!(fs.read(f, 8, 24).expect("read"), [[7, 7].as_slice(), &[0; 20], &[7, 7]].concat());
}

#[test]
fn fallocate_preallocates_extends_or_keeps_size_and_refuses_other_modes() {
    let mut fs = fs();
    let f = file(&mut fs, ROOT, "f").ino;
    fs.write(f, BS, b"keep").expect("write");
    fs.fallocate(f, 0, 3 * BS + 1, 0).expect("preallocate");
    assert_eq!(fs.getattr(f).expect("getattr").attr.size, 3 * BS + 1);
    assert!((0..4).all(|l| fs.storage().has_block(f, l)));
    assert_eq!(fs.read(f, BS, 4).expect("read"), b"keep", "data in the range is kept");
    fs.fallocate(f, 10 * BS, BS, libc::FALLOC_FL_KEEP_SIZE).expect("keep size");
    assert_eq!(fs.getattr(f).expect("getattr").attr.size, 3 * BS + 1);
    assert!(fs.storage().has_block(f, 10));
    fs.fallocate(f, BS + 1, 2, libc::FALLOC_FL_ZERO_RANGE).expect("zero range");
    assert_eq!(fs.read(f, BS, 4).expect("read"), b"k\0\0p");
    for mode in [libc::FALLOC_FL_PUNCH_HOLE, 0x4000] {
        assert_eq!(errno(fs.fallocate(f, 0, BS, mode)), libc::EOPNOTSUPP, "mode {mode:#x}");
    }
    assert_eq!(errno(fs.fallocate(ROOT, 0, BS, 0)), libc::EISDIR);
}

#[test]
fn fallocate_in_every_mode_sets_the_modification_time() {
    use crate::ufs::TimeSet;
    let mut fs = fs();
    let f = file(&mut fs, ROOT, "f").ino;
    let past = SetAttr { mtime: Some(TimeSet::At(1)), ..SetAttr::default() };
    for mode in [0, libc::FALLOC_FL_KEEP_SIZE] {
        fs.setattr(f, &past).expect("set mtime");
        fs.fallocate(f, 0, 2 * BS, mode).expect("fallocate");
        let attr = fs.getattr(f).expect("getattr").attr;
        assert!(attr.mtime > 1, "mode {mode:#x}: mtime {:?}", attr.mtime);
        assert_eq!(attr.mtime, attr.ctime, "mode {mode:#x}");
    }
}

#[test]
fn fallocate_fails_whole_when_space_cannot_be_reserved() {
    let mut fs = fs();
    let f = file(&mut fs, ROOT, "f").ino;
    let used = fs.storage().blocks_used();
    fs.storage().set_block_limit(Some(used + 3));
    assert_eq!(errno(fs.fallocate(f, 0, 4 * BS, 0)), libc::ENOSPC);
    assert_eq!(fs.storage().blocks_used(), used, "nothing was allocated");
    assert_eq!(fs.getattr(f).expect("getattr").attr.size, 0);
    fs.fallocate(f, 0, 3 * BS, 0).expect("fits");
}

#[test]
fn enospc_after_some_blocks_gives_a_short_write_and_a_matching_size() {
    let mut fs = fs();
    let f = file(&mut fs, ROOT, "f").ino;
    let used = fs.storage().blocks_used();
    fs.storage().set_block_limit(Some(used + 2));
    let data = vec![9u8; 3 * BS as usize];
    assert_eq!(fs.write(f, 100, &data).expect("short write"), 2 * BS as usize - 100);
    assert_eq!(fs.getattr(f).expect("getattr").attr.size, 2 * BS);
    assert_eq!(errno(fs.write(f, 2 * BS, b"more")), libc::ENOSPC);
    assert_eq!(fs.getattr(f).expect("getattr").attr.size, 2 * BS);
    assert_eq!(fs.write(f, 0, b"overwrite").expect("no new block needed"), 9);
}

#[test]
fn copy_file_range_copies_data_and_keeps_holes() {
    let mut fs = fs();
    let a = file(&mut fs, ROOT, "a").ino;
    let b = file(&mut fs, ROOT, "b").ino;
    fs.write(a, 0, &[1; 100]).expect("write");
    fs.write(a, 5 * BS, &[2; 100]).expect("write");
    assert_eq!(fs.copy_file_range(a, 0, b, 0, 1 << 30).expect("copy"), 5 * BS + 100);
    assert_eq!(fs.read(b, 0, 1 << 20).expect("read"), fs.read(a, 0, 1 << 20).expect("read"));
    assert!(!fs.storage().has_block(b, 2), "a hole stays a hole");
    assert_eq!(fs.copy_file_range(a, 50, b, BS * 9 + 7, 60).expect("unaligned"), 60);
    assert_eq!(
        fs.read(b, BS * 9 + 7, 60).expect("read"),
        vec![1; 50].into_iter().chain([0; 10]).collect::<Vec<_>>()
    );
    assert_eq!(fs.copy_file_range(a, 1 << 30, b, 0, 10).expect("past eof"), 0);
    assert_eq!(errno(fs.copy_file_range(a, 0, a, 50, 100)), libc::EINVAL);
}

#[test]
fn writing_truncating_or_chowning_clears_set_user_id_and_set_group_id() {
    let mut fs = fs();
    let f = file(&mut fs, ROOT, "f").ino;
    let set_mode = |fs: &mut FileSystem<MemStorage>, mode: u32| {
        fs.setattr(f, &SetAttr { mode: Some(mode), ..SetAttr::default() }).expect("chmod");
    };
    set_mode(&mut fs, 0o6755);
    fs.write(f, 0, b"x").expect("write");
    assert_eq!(fs.getattr(f).expect("getattr").attr.mode & 0o7777, 0o755);
    set_mode(&mut fs, 0o6750);
    truncate(&mut fs, f, 0);
    assert_eq!(fs.getattr(f).expect("getattr").attr.mode & 0o7777, 0o750);
    // Set-group-ID without group execute marks mandatory locking: it stays.
    set_mode(&mut fs, 0o2644);
    fs.write(f, 0, b"x").expect("write");
    assert_eq!(fs.getattr(f).expect("getattr").attr.mode & 0o7777, 0o2644);
    set_mode(&mut fs, 0o4755);
    fs.setattr(f, &SetAttr { uid: Some(1234), ..SetAttr::default() }).expect("chown");
    assert_eq!(fs.getattr(f).expect("getattr").attr.mode & 0o7777, 0o755);
    // fallocate(2) and copy_file_range(2) into the file change it too.
    set_mode(&mut fs, 0o6755);
    fs.fallocate(f, 0, BS, libc::FALLOC_FL_KEEP_SIZE).expect("fallocate");
    assert_eq!(fs.getattr(f).expect("getattr").attr.mode & 0o7777, 0o755);
    let g = file(&mut fs, ROOT, "g").ino;
    fs.write(g, 0, b"data").expect("write");
    set_mode(&mut fs, 0o4755);
    assert_eq!(fs.copy_file_range(g, 0, f, 0, 4).expect("copy"), 4);
    assert_eq!(fs.getattr(f).expect("getattr").attr.mode & 0o7777, 0o755);
}

/// Linux's rules as ext4 shows them (`file_remove_privs`, `chown_common`):
/// `CAP_FSETID` keeps both bits on a write, truncate or fallocate; a caller
/// outside the file's group loses set-group-ID even without group-execute;
/// a chown clears set-user-ID even by root and to the same owner.
#[test]
fn set_user_id_and_set_group_id_go_as_linux_decides_for_each_caller() {
    type Op<'a> = dyn Fn(&mut FileSystem<MemStorage>) + 'a;
    use crate::ufs::Privilege;
    let outsider = Privilege { fsetid: false, in_group: false };
    let member = Privilege::default();
    let root = Privilege::ROOT;
    let mut fs = fs();
    let f = file(&mut fs, ROOT, "f").ino;
    let g = file(&mut fs, ROOT, "g").ino;
    fs.write(g, 0, b"data").expect("write");
    // (mode before, caller, mode after a write / truncate / fallocate / copy, after a chown)
    let cases = [
        (0o2666, outsider, 0o666, 0o666),
        (0o6666, outsider, 0o666, 0o666),
        (0o6777, outsider, 0o777, 0o777),
        (0o2666, member, 0o2666, 0o2666),
        (0o6666, member, 0o2666, 0o2666),
        (0o6777, member, 0o777, 0o777),
        (0o2666, root, 0o2666, 0o2666),
        (0o6666, root, 0o6666, 0o2666),
        (0o6755, root, 0o6755, 0o755),
    ];
    let mode = |fs: &mut FileSystem<MemStorage>| fs.getattr(f).expect("getattr").attr.mode & 0o7777;
    for (before, who, after_change, after_chown) in cases {
        let ops: [(&str, &Op<'_>); 5] = [
            ("write", &|fs| {
                fs.write_copied(f, 0, b"x", crate::ufs::BlockCopies::default(), who).expect("write");
            }),
            ("truncate", &|fs| {
                fs.setattr(f, &SetAttr { size: Some(1), who, ..SetAttr::default() }).expect("truncate");
            }),
            ("fallocate", &|fs| fs.fallocate_by(f, 0, BS, 0, who).expect("fallocate")),
            ("copy_file_range", &|fs| {
                fs.copy_file_range_by(g, 0, f, 0, 4, who).expect("copy");
            }),
            ("chown to the same owner", &|fs| {
                let uid = fs.getattr(f).expect("getattr").attr.uid;
                fs.setattr(f, &SetAttr { uid: Some(uid), who, ..SetAttr::default() }).expect("chown");
            }),
        ];
        for (what, op) in ops {
            fs.setattr(f, &SetAttr { mode: Some(before), ..SetAttr::default() }).expect("chmod");
            op(&mut fs);
            let want = if what.starts_with("chown") { after_chown } else { after_change };
            assert_eq!(mode(&mut fs), want, "{what} of {before:o} by {who:?}");
        }
    }
    // A directory keeps its bits through a chown.
    let d = dir(&mut fs, ROOT, "d").ino;
    fs.setattr(d, &SetAttr { mode: Some(0o2775), ..SetAttr::default() }).expect("chmod");
    fs.setattr(d, &SetAttr { uid: Some(5), who: outsider, ..SetAttr::default() }).expect("chown");
    assert_eq!(fs.getattr(d).expect("getattr").attr.mode & 0o7777, 0o2775);
}

#[test]
fn writes_with_blocks_copied_beforehand_store_what_the_bytes_say() {
    use crate::ufs::BlockCopies;
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::SmallRng::seed_from_u64(11);
    let mut fs = fs();
    let f = file(&mut fs, ROOT, "f").ino;
    let mut model: Vec<u8> = Vec::new();
    for step in 0..200u32 {
        let offset = rng.gen_range(0..12 * BS);
        let len = rng.gen_range(1..5 * BS as usize);
        let data: Vec<u8> = (0..len).map(|i| (i as u32 * 7 + step) as u8).collect();
        // Now and then the copies are of another block size, and must be
        // passed over for the bytes.
        let block_size = if step % 7 == 0 { 8192 } else { BS as u32 };
        let copies = BlockCopies::of(offset, &data, block_size);
        assert_eq!(
            fs.write_copied(f, offset, &data, copies, crate::ufs::Privilege::default()).expect("write"),
            len
        );
        let end = offset as usize + len;
        if model.len() < end {
            model.resize(end, 0);
        }
        model[offset as usize..end].copy_from_slice(&data);
    }
    assert_eq!(fs.read(f, 0, model.len() + 1).expect("read"), model);
}

#[test]
fn block_copies_cover_exactly_the_whole_blocks_of_a_write() {
    use crate::ufs::BlockCopies;
    let data: Vec<u8> = (0..3 * BS as usize).map(|i| (i / BS as usize) as u8).collect();
    // From byte 100 of block 1: whole blocks 2 and 3 only.
    let mut copies = BlockCopies::of(BS + 100, &data, BS as u32);
    assert!(copies.take(1, BS).is_none());
    let second = copies.take(2, BS).expect("block 2");
    assert_eq!(second.len(), BS as usize);
    assert_eq!(&second[..], &data[BS as usize - 100..2 * BS as usize - 100]);
    assert!(copies.take(3, BS).is_some());
    assert!(copies.take(2, BS).is_none(), "taken once");
    assert!(copies.take(4, BS).is_none(), "block 4 is partly written");
    assert!(BlockCopies::of(5, &data[..100], BS as u32).take(0, BS).is_none());
    assert!(BlockCopies::of(u64::MAX - 10, &data, BS as u32).take(0, BS).is_none(), "no overflow");
}

/// The file's bytes, read whole.
fn contents(fs: &mut FileSystem<MemStorage>, ino: Ino) -> Vec<u8> {
    fs.read(ino, 0, usize::MAX >> 1).expect("read")
}

#[test]
fn collapse_and_insert_move_blocks_and_keep_the_bytes_around_the_range() {
    let mut fs = fs();
    let f = file(&mut fs, ROOT, "f").ino;
    let data: Vec<u8> = (0..6 * BS as usize + 100).map(|i| (i / BS as usize) as u8 + 1).collect();
    fs.write(f, 0, &data).expect("write");
    fs.fallocate(f, 3 * BS, BS, libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE).expect("hole");
    let mut model = data.clone();
    model[3 * BS as usize..4 * BS as usize].fill(0);

    fs.fallocate(f, BS, 2 * BS, libc::FALLOC_FL_COLLAPSE_RANGE).expect("collapse");
    model.drain(BS as usize..3 * BS as usize);
    assert_eq!(contents(&mut fs, f), model);
    assert!(!fs.storage().has_block(f, 1), "the hole moved down with the rest");
    assert!(!fs.storage().has_block(f, 5), "nothing is left past the new end");

    fs.fallocate(f, 0, 3 * BS, libc::FALLOC_FL_INSERT_RANGE).expect("insert");
    model.splice(0..0, vec![0u8; 3 * BS as usize]);
    assert_eq!(contents(&mut fs, f), model);
    assert!((0..3).all(|l| !fs.storage().has_block(f, l)), "an inserted range is a hole");
    assert_eq!(fs.getattr(f).expect("getattr").attr.size, model.len() as u64);
}

#[test]
fn collapse_and_insert_refuse_what_linux_refuses_and_change_nothing() {
    let mut fs = fs();
    fs.storage().set_max_file_size(16 * BS);
    let f = file(&mut fs, ROOT, "f").ino;
    fs.write(f, 0, &vec![7u8; 4 * BS as usize]).expect("write");
    let (collapse, insert) = (libc::FALLOC_FL_COLLAPSE_RANGE, libc::FALLOC_FL_INSERT_RANGE);
    let cases = [
        (collapse, 1, BS, libc::EINVAL, "offset not whole blocks"),
        (insert, 0, BS + 1, libc::EINVAL, "length not whole blocks"),
        (collapse, 0, 0, libc::EINVAL, "zero length"),
        (collapse, 2 * BS, 2 * BS, libc::EINVAL, "collapse reaching the end"),
        (collapse, 3 * BS, 2 * BS, libc::EINVAL, "collapse passing the end"),
        (insert, 4 * BS, BS, libc::EINVAL, "insert at the end"),
        (insert, 0, 13 * BS, libc::EFBIG, "growing past the largest file"),
        (insert, 0, 17 * BS, libc::EFBIG, "a range past the largest file"),
        (collapse | libc::FALLOC_FL_KEEP_SIZE, 0, BS, libc::EINVAL, "collapse with another flag"),
        (insert | libc::FALLOC_FL_PUNCH_HOLE, 0, BS, libc::EINVAL, "insert with another flag"),
    ];
    for (mode, offset, len, want, what) in cases {
        assert_eq!(errno(fs.fallocate(f, offset, len, mode)), want, "{what}");
        assert_eq!(contents(&mut fs, f), vec![7u8; 4 * BS as usize], "{what} changed nothing");
    }
    assert_eq!(errno(fs.fallocate(ROOT, 0, BS, collapse)), libc::EISDIR);
    fs.fallocate(f, 0, 12 * BS, insert).expect("up to the largest file");
    assert_eq!(fs.getattr(f).expect("getattr").attr.size, 16 * BS);
}

#[test]
fn collapse_and_insert_set_times_and_clear_set_user_id_as_a_write_does() {
    let mut fs = fs();
    let f = file(&mut fs, ROOT, "f").ino;
    fs.write(f, 0, &vec![1u8; 3 * BS as usize]).expect("write");
    let mode = kind::REG | libc::S_ISUID | libc::S_ISGID | 0o755;
    for op in [libc::FALLOC_FL_INSERT_RANGE, libc::FALLOC_FL_COLLAPSE_RANGE] {
        fs.setattr(f, &SetAttr { mode: Some(mode), ..SetAttr::default() }).expect("chmod");
        let before = fs.getattr(f).expect("getattr").attr;
        std::thread::sleep(std::time::Duration::from_millis(2));
        fs.fallocate(f, BS, BS, op).expect("shift");
        let after = fs.getattr(f).expect("getattr").attr;
        assert!(after.mtime > before.mtime && after.ctime > before.ctime, "mode {op:#x}");
        assert_eq!(after.mode & (libc::S_ISUID | libc::S_ISGID), 0, "mode {op:#x}");
    }
}

#[test]
fn a_refused_collapse_keeps_the_file_as_it_was() {
    let mut fs = fs();
    let f = file(&mut fs, ROOT, "f").ino;
    let data: Vec<u8> = (0..3 * BS as usize + 10).map(|i| i as u8).collect();
    fs.write(f, 0, &data).expect("write");
    assert_eq!(errno(fs.fallocate(f, BS, 2 * BS + 10, libc::FALLOC_FL_COLLAPSE_RANGE)), libc::EINVAL);
    assert_eq!(contents(&mut fs, f), data);
}

#[test]
fn a_read_only_file_system_refuses_every_change_and_still_reads() {
    let mut fs = fs();
    let f = file(&mut fs, ROOT, "f").ino;
    fs.write(f, 0, b"kept").expect("write");
    fs.set_read_only(true);
    assert_eq!(errno(fs.write(f, 0, b"lost")), libc::EROFS);
    assert_eq!(errno(fs.mknod(ROOT, b"g", kind::REG | 0o644, 0, ME)), libc::EROFS);
    assert_eq!(errno(fs.unlink(ROOT, b"f")), libc::EROFS);
    assert_eq!(errno(fs.setattr(f, &SetAttr { size: Some(0), ..SetAttr::default() })), libc::EROFS);
    assert_eq!(errno(fs.fallocate(f, 0, BS, 0)), libc::EROFS);
    assert_eq!(fs.read(f, 0, 4).expect("read"), b"kept");
    fs.set_read_only(false);
    fs.write(f, 0, b"took").expect("a write once writable again");
    assert_eq!(fs.read(f, 0, 4).expect("read"), b"took");
}
