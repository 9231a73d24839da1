//! readdir, cookies and the directory index.

use super::*;
use std::collections::HashSet;

#[test]
fn readdir_lists_dot_dotdot_and_every_name_once() {
    let mut fs = fs();
    for i in 0..50 {
        file(&mut fs, ROOT, &format!("file-{i}"));
    }
    let all = fs.readdir(ROOT, 0, usize::MAX).expect("readdir");
    assert_eq!(&all[0].name, b".");
    assert_eq!(&all[1].name, b"..");
    assert_eq!(all.len(), 52);
    // Reading in small pages with the cookies gives the same list.
    let mut paged = Vec::new();
    let mut offset = 0;
    loop {
        let page = fs.readdir(ROOT, offset, 7).expect("page");
        let Some(last) = page.last() else { break };
        offset = last.next_offset;
        paged.extend(page);
    }
    assert_eq!(paged, all);
}

#[test]
fn readdir_cookies_survive_inserts_and_removals_between_calls() {
    let mut fs = fs_with_block(512);
    for i in 0..200 {
        file(&mut fs, ROOT, &format!("keep-{i:03}"));
        file(&mut fs, ROOT, &format!("gone-{i:03}"));
    }
    let mut seen = Vec::new();
    let mut offset = 0;
    let mut round = 0;
    loop {
        let page = fs.readdir(ROOT, offset, 13).expect("page");
        let Some(last) = page.last() else { break };
        offset = last.next_offset;
        seen.extend(page.into_iter().map(|e| String::from_utf8_lossy(&e.name).into_owned()));
        // Churn: remove some names before and after the cursor, add new ones.
        for i in [round * 3, 199 - round * 3] {
            let _ = fs.unlink(ROOT, format!("gone-{i:03}").as_bytes());
        }
        // Bounded, or a listing that only ever finds the newest name would never end.
        if round < 20 {
            file(&mut fs, ROOT, &format!("new-{round:03}"));
        }
        round += 1;
        assert!(round < 1000, "the listing does not end");
    }
    let keep: Vec<String> = seen.iter().filter(|n| n.starts_with("keep-")).cloned().collect();
    let unique: HashSet<&String> = seen.iter().collect();
    assert_eq!(unique.len(), seen.len(), "no entry returned twice");
    assert_eq!(keep.len(), 200, "no entry that existed throughout was skipped");
    assert!(fs.dir_index_matches(ROOT).expect("check"));
}

#[test]
fn the_index_agrees_with_a_scan_of_the_blocks_after_churn() {
    let mut fs = fs_with_block(1024);
    let d = dir(&mut fs, ROOT, "d");
    for i in 0..300 {
        file(&mut fs, d.ino, &format!("{}{i}", "n".repeat(i % 40 + 1)));
    }
    for i in (0..300).step_by(3) {
        fs.unlink(d.ino, format!("{}{i}", "n".repeat(i % 40 + 1)).as_bytes()).expect("unlink");
    }
    for i in 0..100 {
        file(&mut fs, d.ino, &format!("again-{i}"));
    }
    fs.rename(d.ino, b"nn1", d.ino, b"renamed", RenameFlags::default()).expect("rename");
    assert!(fs.dir_index_matches(d.ino).expect("check"));
    let listed = names(&mut fs, d.ino);
    fs.drop_dir_indexes();
    for name in &listed {
        fs.lookup(d.ino, name.as_bytes()).expect("every listed name is found after a rebuild");
    }
    assert_eq!(listed.len(), 300 - 100 + 100);
    let size = fs.getattr(d.ino).expect("getattr").attr.size;
    assert_eq!(size % 1024, 0, "directory size is a multiple of the block size");
}

#[test]
fn deleted_slots_are_reused_before_the_directory_grows() {
    let mut fs = fs_with_block(512);
    for i in 0..30 {
        file(&mut fs, ROOT, &format!("f{i:02}"));
    }
    let size = fs.getattr(ROOT).expect("getattr").attr.size;
    for i in 0..30 {
        fs.unlink(ROOT, format!("f{i:02}").as_bytes()).expect("unlink");
    }
    for i in 0..30 {
        file(&mut fs, ROOT, &format!("g{i:02}"));
    }
    assert_eq!(fs.getattr(ROOT).expect("getattr").attr.size, size);
}

use crate::ufs::RenameFlags;

#[test]
fn a_directory_larger_than_the_device_is_damage_not_a_long_scan() {
    use crate::storage::StorageManager;
    let mut fs = fs();
    fs.storage().set_block_limit(Some(1000));
    let d = dir(&mut fs, ROOT, "d").ino;
    file(&mut fs, d, "kept");
    let device = fs.storage().device_blocks().expect("device blocks");
    assert_eq!(device, 1000);
    let mut attr = fs.storage().vget(d).expect("vget").attr;
    attr.size = (device + 1) * u64::from(fs.storage().block_size());
    fs.storage().update(d, &attr).expect("damage the size");
    fs.drop_dir_indexes();
    let err = fs.lookup(d, b"kept").expect_err("a lookup must refuse the directory");
    assert_eq!(err.errno(), libc::EIO);
    assert!(err.to_string().contains("larger than"), "says why: {err}");
}
