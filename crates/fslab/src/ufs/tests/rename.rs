//! The rename matrix.

use super::*;
use crate::ufs::RenameFlags;

const PLAIN: RenameFlags = RenameFlags { noreplace: false, exchange: false };
const NOREPLACE: RenameFlags = RenameFlags { noreplace: true, exchange: false };
const EXCHANGE: RenameFlags = RenameFlags { noreplace: false, exchange: true };

#[test]
fn rename_file_to_a_new_name_in_another_directory() {
    let mut fs = fs();
    let f = file(&mut fs, ROOT, "f");
    let d = dir(&mut fs, ROOT, "d");
    fs.rename(ROOT, b"f", d.ino, b"g", PLAIN).expect("rename");
    assert_eq!(errno(fs.lookup(ROOT, b"f")), libc::ENOENT);
    assert_eq!(fs.lookup(d.ino, b"g").expect("moved").ino, f.ino);
    assert_eq!((nlink(&mut fs, f.ino), nlink(&mut fs, ROOT), nlink(&mut fs, d.ino)), (1, 3, 2));
    assert_eq!(fs.storage().transaction_depth(), 0);
}

#[test]
fn rename_file_over_an_existing_file_frees_the_old_one() {
    let mut fs = fs();
    let a = file(&mut fs, ROOT, "a");
    let b = file(&mut fs, ROOT, "b");
    fs.write(b.ino, 0, b"old").expect("write");
    fs.rename(ROOT, b"a", ROOT, b"b", PLAIN).expect("rename");
    assert_eq!(fs.lookup(ROOT, b"b").expect("b").ino, a.ino);
    assert_eq!(errno(fs.getattr(b.ino)), libc::ENOENT);
    assert_eq!(names(&mut fs, ROOT), vec!["b"]);
    assert!(fs.dir_index_matches(ROOT).expect("check"));
}

#[test]
fn rename_dir_over_an_empty_dir_fixes_dotdot_and_link_counts() {
    let mut fs = fs();
    let p1 = dir(&mut fs, ROOT, "p1");
    let p2 = dir(&mut fs, ROOT, "p2");
    let src = dir(&mut fs, p1.ino, "src");
    let dst = dir(&mut fs, p2.ino, "dst");
    fs.rename(p1.ino, b"src", p2.ino, b"dst", PLAIN).expect("rename");
    assert_eq!(fs.lookup(p2.ino, b"dst").expect("dst").ino, src.ino);
    assert_eq!(fs.lookup(src.ino, b"..").expect("..").ino, p2.ino);
    assert_eq!(errno(fs.getattr(dst.ino)), libc::ENOENT);
    assert_eq!((nlink(&mut fs, p1.ino), nlink(&mut fs, p2.ino)), (2, 3));
    fs.drop_dir_indexes();
    assert_eq!(fs.lookup(src.ino, b"..").expect("from disk").ino, p2.ino);
}

#[test]
fn rename_dir_to_a_new_name_moves_one_link_between_parents() {
    let mut fs = fs();
    let p1 = dir(&mut fs, ROOT, "p1");
    let p2 = dir(&mut fs, ROOT, "p2");
    let src = dir(&mut fs, p1.ino, "src");
    fs.rename(p1.ino, b"src", p2.ino, b"moved", PLAIN).expect("rename");
    assert_eq!((nlink(&mut fs, p1.ino), nlink(&mut fs, p2.ino)), (2, 3));
    assert_eq!(fs.lookup(src.ino, b"..").expect("..").ino, p2.ino);
    fs.rename(p2.ino, b"moved", p2.ino, b"again", PLAIN).expect("same-directory rename");
    assert_eq!(nlink(&mut fs, p2.ino), 3);
}

#[test]
fn rename_kind_mismatches_and_nonempty_targets_fail() {
    let mut fs = fs();
    file(&mut fs, ROOT, "f");
    let d = dir(&mut fs, ROOT, "d");
    let full = dir(&mut fs, ROOT, "full");
    file(&mut fs, full.ino, "x");
    assert_eq!(errno(fs.rename(ROOT, b"f", ROOT, b"d", PLAIN)), libc::EISDIR);
    assert_eq!(errno(fs.rename(ROOT, b"d", ROOT, b"f", PLAIN)), libc::ENOTDIR);
    assert_eq!(errno(fs.rename(ROOT, b"d", ROOT, b"full", PLAIN)), libc::ENOTEMPTY);
    assert_eq!(errno(fs.rename(ROOT, b"missing", ROOT, b"z", PLAIN)), libc::ENOENT);
    assert_eq!(errno(fs.rename(ROOT, b".", ROOT, b"z", PLAIN)), libc::EBUSY);
    assert_eq!(errno(fs.rename(ROOT, b"f", d.ino, b"..", PLAIN)), libc::EBUSY);
    assert_eq!(names(&mut fs, ROOT), vec!["d", "f", "full"], "failed renames change nothing");
    assert_eq!(fs.storage().transaction_depth(), 0);
}

#[test]
fn a_directory_cannot_move_into_its_own_subtree() {
    let mut fs = fs();
    let a = dir(&mut fs, ROOT, "a");
    let b = dir(&mut fs, a.ino, "b");
    let c = dir(&mut fs, b.ino, "c");
    assert_eq!(errno(fs.rename(ROOT, b"a", c.ino, b"a", PLAIN)), libc::EINVAL);
    assert_eq!(errno(fs.rename(ROOT, b"a", a.ino, b"self", PLAIN)), libc::EINVAL);
    fs.rename(b.ino, b"c", ROOT, b"c", PLAIN).expect("moving up is fine");
    assert_eq!(fs.lookup(c.ino, b"..").expect("..").ino, ROOT);
}

#[test]
fn noreplace_refuses_an_existing_target() {
    let mut fs = fs();
    file(&mut fs, ROOT, "a");
    file(&mut fs, ROOT, "b");
    assert_eq!(errno(fs.rename(ROOT, b"a", ROOT, b"b", NOREPLACE)), libc::EEXIST);
    fs.rename(ROOT, b"a", ROOT, b"c", NOREPLACE).expect("new name");
    assert_eq!(names(&mut fs, ROOT), vec!["b", "c"]);
    let both = RenameFlags { noreplace: true, exchange: true };
    assert_eq!(errno(fs.rename(ROOT, b"b", ROOT, b"c", both)), libc::EINVAL);
}

#[test]
fn exchange_swaps_a_file_and_a_directory_across_parents() {
    let mut fs = fs();
    let p1 = dir(&mut fs, ROOT, "p1");
    let p2 = dir(&mut fs, ROOT, "p2");
    let f = file(&mut fs, p1.ino, "x");
    let d = dir(&mut fs, p2.ino, "y");
    fs.rename(p1.ino, b"x", p2.ino, b"y", EXCHANGE).expect("exchange");
    assert_eq!(fs.lookup(p1.ino, b"x").expect("x").ino, d.ino);
    assert_eq!(fs.lookup(p2.ino, b"y").expect("y").ino, f.ino);
    assert_eq!(fs.lookup(d.ino, b"..").expect("..").ino, p1.ino);
    assert_eq!((nlink(&mut fs, p1.ino), nlink(&mut fs, p2.ino)), (3, 2));
    let kinds: Vec<(Vec<u8>, u32)> =
        fs.readdir(p1.ino, 0, 10).expect("readdir").into_iter().map(|e| (e.name, e.kind)).collect();
    assert!(kinds.contains(&(b"x".to_vec(), kind::DIR)), "entry type follows the inode");
    assert_eq!(errno(fs.rename(p1.ino, b"x", p2.ino, b"none", EXCHANGE)), libc::ENOENT);
}

/// An exchange that gives a directory at `LINK_MAX` another subdirectory
/// fails with EMLINK and changes nothing, as a plain rename does.
#[test]
fn exchange_into_a_directory_at_link_max_is_emlink() {
    let mut fs = fs();
    let p1 = dir(&mut fs, ROOT, "p1");
    let p2 = dir(&mut fs, ROOT, "p2");
    let d = dir(&mut fs, p1.ino, "d");
    let f = file(&mut fs, p2.ino, "f");
    let mut attr = fs.getattr(p2.ino).expect("getattr").attr;
    attr.nlink = crate::ufs::LINK_MAX;
    crate::storage::StorageManager::update(fs.storage(), p2.ino, &attr).expect("update");
    assert_eq!(errno(fs.rename(p1.ino, b"d", p2.ino, b"f", EXCHANGE)), libc::EMLINK);
    assert_eq!(nlink(&mut fs, p2.ino), crate::ufs::LINK_MAX);
    assert_eq!(fs.lookup(p1.ino, b"d").expect("d").ino, d.ino);
    assert_eq!(fs.lookup(p2.ino, b"f").expect("f").ino, f.ino);
}

#[test]
fn rename_onto_itself_or_another_link_of_the_same_inode_does_nothing() {
    let mut fs = fs();
    let f = file(&mut fs, ROOT, "f");
    fs.link(f.ino, ROOT, b"g").expect("link");
    fs.rename(ROOT, b"f", ROOT, b"f", PLAIN).expect("onto itself");
    fs.rename(ROOT, b"f", ROOT, b"g", PLAIN).expect("onto a hard link");
    assert_eq!(names(&mut fs, ROOT), vec!["f", "g"]);
    assert_eq!(nlink(&mut fs, f.ino), 2);
}

#[test]
fn rename_over_a_pinned_file_keeps_it_as_an_orphan() {
    let mut fs = fs();
    file(&mut fs, ROOT, "a");
    let b = file(&mut fs, ROOT, "b");
    fs.pin(b.ino);
    fs.rename(ROOT, b"a", ROOT, b"b", PLAIN).expect("rename");
    assert_eq!(fs.getattr(b.ino).expect("orphan").attr.nlink, 0);
    fs.unpin(b.ino, 1).expect("unpin");
    assert_eq!(errno(fs.getattr(b.ino)), libc::ENOENT);
}
