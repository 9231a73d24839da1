//! Creating and removing names, and the errno of every refusal.

use super::*;
use crate::error::Error;
use crate::format::inode::kind;

#[test]
fn create_lookup_and_unlink_a_file() {
    let mut fs = fs();
    let f = file(&mut fs, ROOT, "a");
    assert_eq!(fs.lookup(ROOT, b"a").expect("lookup").ino, f.ino);
    assert_eq!((f.attr.uid, f.attr.gid, f.attr.nlink), (1000, 100, 1));
    assert!(f.attr.btime > 0);
    fs.unlink(ROOT, b"a").expect("unlink");
    assert_eq!(errno(fs.lookup(ROOT, b"a")), libc::ENOENT);
    assert_eq!(errno(fs.getattr(f.ino)), libc::ENOENT, "unpinned inode freed at once");
    let (begun, ended) = fs.storage().transaction_counts();
    assert_eq!((begun, ended), (2, 2), "create and unlink each ran as one transaction");
}

#[test]
fn bad_names_get_linux_errnos() {
    let mut fs = fs();
    assert_eq!(errno(fs.lookup(ROOT, b"")), libc::ENOENT);
    assert_eq!(errno(fs.mknod(ROOT, b"", kind::REG, 0, ME)), libc::ENOENT);
    assert_eq!(errno(fs.mknod(ROOT, &[b'x'; 256], kind::REG, 0, ME)), libc::ENAMETOOLONG);
    assert_eq!(errno(fs.lookup(ROOT, &[b'x'; 256])), libc::ENAMETOOLONG);
    fs.mknod(ROOT, &[b'x'; 255], kind::REG, 0, ME).expect("255 bytes is fine");
    assert_eq!(errno(fs.mknod(ROOT, b"a/b", kind::REG, 0, ME)), libc::EINVAL);
    assert_eq!(errno(fs.mkdir(ROOT, b"a\0b", 0o755, ME)), libc::EINVAL);
    assert_eq!(errno(fs.mkdir(ROOT, b".", 0o755, ME)), libc::EEXIST);
    assert_eq!(errno(fs.mknod(ROOT, b"..", kind::REG, 0, ME)), libc::EEXIST);
}

#[test]
fn creating_an_existing_name_is_eexist_and_parent_must_be_a_directory() {
    let mut fs = fs();
    let f = file(&mut fs, ROOT, "f");
    assert_eq!(errno(fs.mknod(ROOT, b"f", kind::REG, 0, ME)), libc::EEXIST);
    assert_eq!(errno(fs.mkdir(ROOT, b"f", 0o755, ME)), libc::EEXIST);
    assert_eq!(errno(fs.mknod(f.ino, b"x", kind::REG, 0, ME)), libc::ENOTDIR);
    assert_eq!(errno(fs.lookup(f.ino, b"x")), libc::ENOTDIR);
    assert_eq!(errno(fs.readdir(f.ino, 0, 10)), libc::ENOTDIR);
    assert_eq!(errno(fs.unlink(f.ino, b"x")), libc::ENOTDIR);
    assert_eq!(errno(fs.lookup(ROOT, b"missing")), libc::ENOENT);
    assert_eq!(errno(fs.unlink(ROOT, b"missing")), libc::ENOENT);
}

#[test]
fn mknod_makes_every_special_kind_and_keeps_rdev_for_devices() {
    let mut fs = fs();
    let c = fs.mknod(ROOT, b"c", kind::CHR | 0o600, 0x0501, ME).expect("chr");
    assert_eq!((c.attr.kind(), c.attr.rdev), (kind::CHR, 0x0501));
    let b = fs.mknod(ROOT, b"b", kind::BLK | 0o600, 7, ME).expect("blk");
    assert_eq!(b.attr.rdev, 7);
    let p = fs.mknod(ROOT, b"p", kind::FIFO | 0o600, 7, ME).expect("fifo");
    assert_eq!((p.attr.kind(), p.attr.rdev), (kind::FIFO, 0));
    fs.mknod(ROOT, b"s", kind::SOCK | 0o600, 0, ME).expect("sock");
    let r = fs.mknod(ROOT, b"r", 0o600, 0, ME).expect("type 0 is a regular file");
    assert_eq!(r.attr.kind(), kind::REG);
    assert_eq!(errno(fs.mknod(ROOT, b"d", kind::DIR | 0o755, 0, ME)), libc::EPERM);
    assert_eq!(errno(fs.mknod(ROOT, b"l", kind::LNK | 0o777, 0, ME)), libc::EINVAL);
    let kinds: Vec<(Vec<u8>, u32)> =
        fs.readdir(ROOT, 0, 100).expect("readdir").into_iter().map(|e| (e.name, e.kind)).collect();
    assert!(kinds.contains(&(b"c".to_vec(), kind::CHR)));
    assert!(kinds.contains(&(b"s".to_vec(), kind::SOCK)));
    assert!(kinds.contains(&(b".".to_vec(), kind::DIR)));
}

#[test]
fn directory_link_counts_are_two_plus_subdirectories() {
    let mut fs = fs();
    let d = dir(&mut fs, ROOT, "d");
    assert_eq!(nlink(&mut fs, ROOT), 3);
    assert_eq!(d.attr.nlink, 2);
    assert_eq!(d.attr.size, 4096);
    dir(&mut fs, d.ino, "e");
    file(&mut fs, d.ino, "f");
    assert_eq!(nlink(&mut fs, d.ino), 3);
    assert_eq!(fs.lookup(d.ino, b"..").expect("..").ino, ROOT);
    assert_eq!(fs.lookup(d.ino, b".").expect(".").ino, d.ino);
    assert_eq!(errno(fs.rmdir(ROOT, b"d")), libc::ENOTEMPTY);
    fs.rmdir(d.ino, b"e").expect("rmdir e");
    assert_eq!(nlink(&mut fs, d.ino), 2);
    fs.unlink(d.ino, b"f").expect("unlink f");
    fs.rmdir(ROOT, b"d").expect("rmdir d");
    assert_eq!(nlink(&mut fs, ROOT), 2);
    assert_eq!(fs.storage().inodes_used(), 1, "only the root is left");
    assert_eq!(fs.storage().blocks_used(), 1, "only the root's block is left");
}

#[test]
fn rmdir_and_unlink_refuse_the_wrong_kinds() {
    let mut fs = fs();
    let d = dir(&mut fs, ROOT, "d");
    file(&mut fs, ROOT, "f");
    assert_eq!(errno(fs.unlink(ROOT, b"d")), libc::EISDIR);
    assert_eq!(errno(fs.unlink(ROOT, b".")), libc::EISDIR);
    assert_eq!(errno(fs.rmdir(ROOT, b"f")), libc::ENOTDIR);
    assert_eq!(errno(fs.rmdir(d.ino, b".")), libc::EINVAL);
    assert_eq!(errno(fs.rmdir(d.ino, b"..")), libc::ENOTEMPTY);
    assert_eq!(errno(fs.rmdir(ROOT, b"missing")), libc::ENOENT);
    fs.rmdir(ROOT, b"d").expect("rmdir");
}

#[test]
fn hard_links_count_and_refuse_directories() {
    let mut fs = fs();
    let f = file(&mut fs, ROOT, "f");
    let d = dir(&mut fs, ROOT, "d");
    let linked = fs.link(f.ino, d.ino, b"g").expect("link");
    assert_eq!(linked.attr.nlink, 2);
    assert!(linked.attr.ctime >= f.attr.ctime);
    assert_eq!(errno(fs.link(d.ino, ROOT, b"d2")), libc::EPERM);
    assert_eq!(errno(fs.link(f.ino, ROOT, b"f")), libc::EEXIST);
    assert_eq!(errno(fs.link(f.ino, f.ino, b"x")), libc::ENOTDIR);
    fs.unlink(ROOT, b"f").expect("unlink one name");
    assert_eq!(fs.lookup(d.ino, b"g").expect("other name").attr.nlink, 1);
}

#[test]
fn links_past_link_max_are_emlink() {
    let mut fs = fs();
    let f = file(&mut fs, ROOT, "f");
    let mut attr = fs.getattr(f.ino).expect("getattr").attr;
    attr.nlink = crate::ufs::LINK_MAX;
    crate::storage::StorageManager::update(fs.storage(), f.ino, &attr).expect("update");
    assert_eq!(errno(fs.link(f.ino, ROOT, b"g")), libc::EMLINK);
}

#[test]
fn symlinks_store_their_target_up_to_a_block() {
    let mut fs = fs_with_block(1024);
    let l = fs.symlink(ROOT, b"l", b"../some/where", ME).expect("symlink");
    assert_eq!(l.attr.kind(), kind::LNK);
    assert_eq!(l.attr.size, 13);
    assert_eq!(fs.readlink(l.ino).expect("readlink"), b"../some/where");
    fs.symlink(ROOT, b"max", &[b'a'; 1024], ME).expect("a block-long target");
    assert_eq!(errno(fs.symlink(ROOT, b"big", &[b'a'; 1025], ME)), libc::ENAMETOOLONG);
    assert_eq!(errno(fs.symlink(ROOT, b"empty", b"", ME)), libc::ENOENT);
    // With larger blocks, PATH_MAX bounds it: 4,095 bytes and the NUL.
    let mut big = fs_with_block(8192);
    big.symlink(ROOT, b"max", &[b'a'; 4095], ME).expect("PATH_MAX - 1");
    assert_eq!(errno(big.symlink(ROOT, b"over", &[b'a'; 4096], ME)), libc::ENAMETOOLONG);
    let f = file(&mut fs, ROOT, "f");
    assert_eq!(errno(fs.readlink(f.ino)), libc::EINVAL);
}

#[test]
fn set_group_id_directories_pass_on_their_group() {
    let mut fs = fs();
    let d = fs.mkdir(ROOT, b"d", 0o2775, Creds { uid: 0, gid: 50 }).expect("mkdir");
    assert_eq!(d.attr.mode & 0o7777, 0o2775);
    let f = file(&mut fs, d.ino, "f");
    assert_eq!(f.attr.gid, 50);
    let sub = fs.mkdir(d.ino, b"sub", 0o755, ME).expect("mkdir");
    assert_eq!((sub.attr.gid, sub.attr.mode & libc::S_ISGID), (50, libc::S_ISGID));
    let plain = file(&mut fs, ROOT, "plain");
    assert_eq!(plain.attr.gid, 100);
}

#[test]
fn parent_times_move_on_create_and_unlink() {
    let mut fs = fs();
    let before = fs.getattr(ROOT).expect("getattr").attr;
    std::thread::sleep(std::time::Duration::from_millis(2));
    file(&mut fs, ROOT, "f");
    let after = fs.getattr(ROOT).expect("getattr").attr;
    assert!(after.mtime > before.mtime && after.ctime > before.ctime);
    std::thread::sleep(std::time::Duration::from_millis(2));
    fs.unlink(ROOT, b"f").expect("unlink");
    assert!(fs.getattr(ROOT).expect("getattr").attr.mtime > after.mtime);
}

#[test]
fn setattr_changes_mode_owner_and_times_but_never_the_type() {
    use crate::ufs::{SetAttr, TimeSet};
    let mut fs = fs();
    let f = file(&mut fs, ROOT, "f");
    let change = SetAttr {
        mode: Some(kind::DIR | 0o4711),
        uid: Some(7),
        gid: Some(8),
        atime: Some(TimeSet::At(11)),
        mtime: Some(TimeSet::At(12)),
        btime: Some(13),
        flags: Some(2),
        ..SetAttr::default()
    };
    let a = fs.setattr(f.ino, &change).expect("setattr").attr;
    assert_eq!(a.mode, kind::REG | 0o4711);
    assert_eq!((a.uid, a.gid, a.atime, a.mtime, a.btime, a.flags), (7, 8, 11, 12, 13, 2));
    assert!(a.ctime >= f.attr.ctime);
    let a =
        fs.setattr(f.ino, &SetAttr { mtime: Some(TimeSet::Now), ..SetAttr::default() }).expect("now").attr;
    assert!(a.mtime > 12);
    let d = dir(&mut fs, ROOT, "d");
    assert_eq!(errno(fs.setattr(d.ino, &SetAttr { size: Some(0), ..SetAttr::default() })), libc::EISDIR);
}

#[test]
fn pinned_unlinked_files_stay_readable_until_the_last_unpin() {
    let mut fs = fs();
    let f = file(&mut fs, ROOT, "f");
    fs.write(f.ino, 0, b"still here").expect("write");
    fs.pin(f.ino);
    fs.pin(f.ino);
    fs.unlink(ROOT, b"f").expect("unlink");
    assert_eq!(fs.getattr(f.ino).expect("orphan").attr.nlink, 0);
    assert_eq!(fs.read(f.ino, 0, 100).expect("read"), b"still here");
    assert_eq!(errno(fs.link(f.ino, ROOT, b"back")), libc::ENOENT);
    assert_eq!(fs.orphans(), vec![f.ino]);
    fs.unpin(f.ino, 1).expect("unpin");
    assert!(fs.getattr(f.ino).is_ok());
    fs.unpin(f.ino, 1).expect("last unpin");
    assert_eq!(errno(fs.getattr(f.ino)), libc::ENOENT);
    assert_eq!(fs.storage().blocks_used(), 1);
}

#[test]
fn unmount_frees_orphans_still_pinned() {
    let mut fs = fs();
    let f = file(&mut fs, ROOT, "f");
    fs.write(f.ino, 0, b"x").expect("write");
    fs.pin(f.ino);
    fs.unlink(ROOT, b"f").expect("unlink");
    fs.unmount().expect("unmount");
    assert_eq!(fs.storage().inodes_used(), 1);
    assert!(fs.storage().is_unmounted());
}

#[test]
fn a_removed_but_pinned_directory_accepts_no_new_names() {
    let mut fs = fs();
    let d = dir(&mut fs, ROOT, "d");
    fs.pin(d.ino);
    fs.rmdir(ROOT, b"d").expect("rmdir");
    assert_eq!(errno(fs.mknod(d.ino, b"x", kind::REG, 0, ME)), libc::ENOENT);
    fs.unpin(d.ino, 1).expect("unpin");
    assert_eq!(errno(fs.getattr(d.ino)), libc::ENOENT);
}

#[test]
fn a_corrupt_directory_chunk_is_an_error_not_a_panic() {
    let mut fs = fs();
    let d = dir(&mut fs, ROOT, "d");
    fs.drop_dir_indexes();
    let block = fs.storage().block_mut(d.ino, 0).expect("dir block");
    block[20] ^= 0xff;
    let err = fs.lookup(d.ino, b"x").expect_err("corrupt");
    assert!(matches!(err, Error::Corrupt { what: "directory chunk", .. }), "{err}");
    assert_eq!(err.errno(), libc::EIO);
    assert_eq!(errno(fs.readdir(d.ino, 0, 10)), libc::EIO);
}

#[test]
fn a_failed_create_frees_the_new_inode() {
    let mut fs = fs_with_block(512);
    let limit = fs.storage().blocks_used();
    fs.storage().set_block_limit(Some(limit));
    assert_eq!(errno(fs.mkdir(ROOT, b"d", 0o755, ME)), libc::ENOSPC);
    assert_eq!(fs.storage().inodes_used(), 1);
    assert_eq!(fs.storage().transaction_depth(), 0);
    // Fill the root's one chunk, then the next create needs a new block.
    let mut created = 0;
    while fs.mknod(ROOT, format!("n{created:03}").as_bytes(), kind::REG, 0, ME).is_ok() {
        created += 1;
    }
    assert!(created > 10);
    assert_eq!(fs.storage().inodes_used(), 1 + created);
    assert!(fs.dir_index_matches(ROOT).expect("check"));
}

/// What `open_by_handle_at` finds: a linked file by its number, a
/// directory's parent by `..`; ESTALE for whatever a handle can no longer
/// name (freed, unlinked but still pinned, never allocated, the ifile).
#[test]
fn file_handles_find_linked_files_and_parents_and_nothing_else() {
    let mut fs = fs();
    let d = dir(&mut fs, ROOT, "d");
    let sub = dir(&mut fs, d.ino, "sub");
    let f = file(&mut fs, sub.ino, "f");
    assert_eq!(fs.by_handle(f.ino).expect("linked file"), fs.getattr(f.ino).expect("getattr"));
    assert_eq!(fs.parent(sub.ino).expect("parent").ino, d.ino);
    assert_eq!(fs.parent(d.ino).expect("parent").ino, ROOT);
    assert_eq!(fs.parent(ROOT).expect("the root is its own parent").ino, ROOT);
    assert_eq!(errno(fs.parent(f.ino)), libc::ENOTDIR);
    fs.pin(f.ino);
    fs.unlink(sub.ino, b"f").expect("unlink");
    assert_eq!(errno(fs.by_handle(f.ino)), libc::ESTALE, "unlinked, still pinned");
    fs.unpin(f.ino, 1).expect("unpin");
    assert_eq!(errno(fs.by_handle(f.ino)), libc::ESTALE, "freed");
    assert_eq!(errno(fs.by_handle(1_000_000)), libc::ESTALE, "never allocated");
    assert_eq!(errno(fs.by_handle(1)), libc::ESTALE, "the ifile");
    assert_eq!(errno(fs.by_handle(0)), libc::ESTALE);
}

/// The removal of a name is whole once its entry is gone: a damaged
/// chunk found after, while looking whether the directory's last block
/// can be freed, neither fails the unlink nor leaves the file's link
/// count as it was (a name gone, an inode held by nothing).
#[test]
fn an_unlink_is_whole_though_the_tail_it_empties_cannot_be_read() {
    let mut fs = fs();
    let d = dir(&mut fs, ROOT, "d");
    // One entry to a chunk: the ninth goes first into block 1.
    let long = |i: u32| format!("{i}{}", "n".repeat(250));
    for i in 0..8 {
        file(&mut fs, d.ino, &long(i));
    }
    let x = file(&mut fs, d.ino, &long(8)).ino;
    assert_eq!(fs.getattr(d.ino).expect("getattr").attr.size, 2 * u64::from(fs.block_size()));
    // A chunk of block 1 the unlink does not touch is damaged.
    let block = fs.storage().block_mut(d.ino, 1).expect("dir block 1");
    block[3 * 512 + 100] ^= 0xff;
    fs.unlink(d.ino, long(8).as_bytes()).expect("unlink");
    assert_eq!(errno(fs.lookup(d.ino, long(8).as_bytes())), libc::ENOENT);
    assert_eq!(errno(fs.getattr(x)), libc::ENOENT, "the file's inode outlived its only name");
}
