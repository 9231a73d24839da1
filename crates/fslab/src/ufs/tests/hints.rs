//! The transactions and dependency hints the namespace reports: each change
//! after it is made, in the order a layout writing synchronously needs
//! (a link count raised before the entry it counts, an inode initialised
//! before the entry that names it, an entry removed before its link count
//! falls).

use super::*;
use crate::storage::Hint;

/// The hints of the calls `body` makes, then forgets them.
fn hints_of(fs: &mut FileSystem<MemStorage>, body: impl FnOnce(&mut FileSystem<MemStorage>)) -> Vec<Hint> {
    fs.storage().clear_hints();
    body(fs);
    assert_eq!(fs.storage().transaction_depth(), 0, "every transaction ended");
    fs.storage().hints().to_vec()
}

/// The offset of entry `name` in `dir` (a `readdir` cookie is the offset
/// of the entry it follows, plus one).
fn offset(fs: &mut FileSystem<MemStorage>, dir: Ino, name: &str) -> u64 {
    fs.readdir(dir, 0, usize::MAX)
        .expect("readdir")
        .into_iter()
        .find(|e| e.name == name.as_bytes())
        .map(|e| e.next_offset - 1)
        .expect("entry present")
}

#[test]
fn create_and_mkdir_initialise_before_naming() {
    let mut fs = fs();
    let mut ino = 0;
    let h = hints_of(&mut fs, |fs| ino = file(fs, ROOT, "f").ino);
    let at = offset(&mut fs, ROOT, "f");
    assert_eq!(h, vec![Hint::EntryAdded { dir: ROOT, offset: at, ino }]);

    let h = hints_of(&mut fs, |fs| ino = dir(fs, ROOT, "d").ino);
    let at = offset(&mut fs, ROOT, "d");
    let allocated = Hint::BlocksAllocated { ino, lbn: 0 };
    assert_eq!(
        h,
        vec![
            Hint::LinkCount { ino: ROOT, nlink: 3 },
            allocated,
            Hint::EntryAdded { dir: ROOT, offset: at, ino }
        ],
        "the parent's link for `..` first, the new directory's block, then its name"
    );
}

#[test]
fn link_raises_the_count_before_the_entry_and_unlink_lowers_it_after() {
    let mut fs = fs();
    let f = file(&mut fs, ROOT, "f").ino;
    let d = dir(&mut fs, ROOT, "d").ino;
    let h = hints_of(&mut fs, |fs| {
        fs.link(f, d, b"g").expect("link");
    });
    let at = offset(&mut fs, d, "g");
    assert_eq!(
        h,
        vec![Hint::LinkCount { ino: f, nlink: 2 }, Hint::EntryAdded { dir: d, offset: at, ino: f }]
    );

    let h = hints_of(&mut fs, |fs| fs.unlink(d, b"g").expect("unlink"));
    assert_eq!(
        h,
        vec![Hint::EntryRemoved { dir: d, offset: at, ino: f }, Hint::LinkCount { ino: f, nlink: 1 }]
    );
}

#[test]
fn an_open_file_unlinked_is_an_orphan_until_its_last_close() {
    let mut fs = fs();
    let f = file(&mut fs, ROOT, "f").ino;
    fs.write(f, 0, b"data").expect("write");
    fs.pin(f);
    let at = offset(&mut fs, ROOT, "f");
    let h = hints_of(&mut fs, |fs| fs.unlink(ROOT, b"f").expect("unlink"));
    assert_eq!(
        h,
        vec![
            Hint::EntryRemoved { dir: ROOT, offset: at, ino: f },
            Hint::LinkCount { ino: f, nlink: 0 },
            Hint::Orphaned { ino: f },
        ]
    );
    let h = hints_of(&mut fs, |fs| fs.unpin(f, 1).expect("unpin"));
    assert_eq!(h, vec![Hint::Reclaimed { ino: f }, Hint::BlocksFreed { ino: f, first: 0, last: u64::MAX }]);
}

#[test]
fn rename_over_a_target_keeps_every_name_counted() {
    let mut fs = fs();
    let a = file(&mut fs, ROOT, "a").ino;
    let b = file(&mut fs, ROOT, "b").ino;
    let (from, to) = (offset(&mut fs, ROOT, "a"), offset(&mut fs, ROOT, "b"));
    let h = hints_of(&mut fs, |fs| fs.rename(ROOT, b"a", ROOT, b"b", Default::default()).expect("rename"));
    assert_eq!(
        h,
        vec![
            Hint::LinkCount { ino: a, nlink: 2 },
            Hint::EntryChanged { dir: ROOT, offset: to, old: b, ino: a },
            Hint::LinkCount { ino: b, nlink: 0 },
            Hint::EntryRemoved { dir: ROOT, offset: from, ino: a },
            Hint::LinkCount { ino: a, nlink: 1 },
        ]
    );
    assert_eq!(nlink(&mut fs, a), 1);
}

#[test]
fn a_moved_directory_takes_its_dotdot_link_to_the_new_parent_first() {
    let mut fs = fs();
    let p = dir(&mut fs, ROOT, "p").ino;
    let q = dir(&mut fs, ROOT, "q").ino;
    let c = dir(&mut fs, p, "c").ino;
    let h = hints_of(&mut fs, |fs| fs.rename(p, b"c", q, b"c", Default::default()).expect("rename"));
    let added = h.iter().position(|x| matches!(x, Hint::EntryAdded { ino, .. } if *ino == c));
    let q_up = h.iter().position(|x| *x == Hint::LinkCount { ino: q, nlink: 3 });
    let dotdot = h.iter().position(|x| matches!(x, Hint::EntryChanged { dir, .. } if *dir == c));
    let p_down = h.iter().position(|x| *x == Hint::LinkCount { ino: p, nlink: 2 });
    assert!(q_up < added && added < dotdot && dotdot < p_down, "order: {h:?}");
    assert!(q_up.is_some() && p_down.is_some());
    assert_eq!((nlink(&mut fs, p), nlink(&mut fs, q), nlink(&mut fs, c)), (2, 3, 2));
}

#[test]
fn writes_truncates_and_xattrs_are_transactions_too() {
    let mut fs = fs();
    let f = file(&mut fs, ROOT, "f").ino;
    let before = fs.storage().transaction_counts();
    let h = hints_of(&mut fs, |fs| {
        fs.write(f, 0, &[7u8; 3 * 4096]).expect("write");
    });
    assert_eq!(h, (0..3).map(|lbn| Hint::BlocksAllocated { ino: f, lbn }).collect::<Vec<_>>());
    let h = hints_of(&mut fs, |fs| {
        fs.setattr(f, &crate::ufs::SetAttr { size: Some(4096), ..Default::default() }).expect("truncate");
    });
    assert_eq!(h, vec![Hint::BlocksFreed { ino: f, first: 1, last: u64::MAX }]);
    fs.setxattr(f, b"user.a", b"1", 0).expect("setxattr");
    let after = fs.storage().transaction_counts();
    assert_eq!((after.0 - before.0, after.1 - before.1), (3, 3), "write, truncate and setxattr");
}
