//! FFS filled to ENOSPC and emptied again, in every integrity mode: each
//! way of filling (one large file, many small ones in directories, then
//! rewrites of what is there at 100%) leaves a disk where every way of
//! giving space back works — rename over an existing file, truncate,
//! punching a hole, unlink, rmdir — after a sync and a remount; once
//! everything is deleted, `statfs` shows the space and inodes of the new
//! file system and fsck finds nothing wrong. Fragments written into
//! blocks already on disk, which FFS takes without reading the block, fit
//! at 100% and read back as written.

mod common;

use common::ffs::{fresh_for, with_fs_in};
use common::{check, listing};
use fslab::ffs::{Ffs, Integrity};
use fslab::format::inode::kind;
use fslab::format::{Ino, ROOT_INO};
use fslab::ufs::{Creds, FileSystem, RenameFlags, SetAttr};

const DISK: u64 = 24 << 20;

/// How the disk is filled.
#[derive(Debug, Clone, Copy)]
enum Fill {
    /// One file written in 256 KiB pieces until ENOSPC.
    OneLarge,
    /// Files of 3 000 bytes (tails of three fragments) spread over four
    /// directories until ENOSPC (out of inodes, these files then grow
    /// 3 000 bytes at a time until the space runs out).
    ManySmall,
    /// Files of every size from 1 byte to 100 KiB, in turn, until ENOSPC.
    Mixed,
}

fn is_enospc<T>(r: &fslab::Result<T>) -> bool {
    r.as_ref().is_err_and(|e| e.errno() == libc::ENOSPC)
}

/// Writes `data` to `f` at `offset`; false once the disk is full (ENOSPC
/// or a short count). Any other error fails the test.
fn write_fits(fs: &mut FileSystem<Ffs>, f: Ino, offset: u64, data: &[u8], what: &str) -> bool {
    match fs.write(f, offset, data) {
        Ok(n) => n == data.len(),
        Err(e) if e.errno() == libc::ENOSPC => false,
        Err(e) => panic!("{what}: write: {e}"),
    }
}

/// Fills `fs` as `how` says, after two small files `a` and `b` in the
/// root and four directories; returns the files made, (directory, name).
fn fill(fs: &mut FileSystem<Ffs>, how: Fill, what: &str) -> Vec<(Ino, String)> {
    let creds = Creds::default();
    let mut files = Vec::new();
    for name in ["a", "b"] {
        let f = fs.mknod(ROOT_INO, name.as_bytes(), kind::REG | 0o644, 0, creds).expect("create").ino;
        fs.write(f, 0, &[name.as_bytes()[0]; 5000]).expect("write");
        files.push((ROOT_INO, name.to_string()));
    }
    let dirs: Vec<Ino> = (0..4)
        .map(|i| fs.mkdir(ROOT_INO, format!("d{i}").as_bytes(), 0o755, creds).expect("mkdir").ino)
        .collect();
    let mut i = 0u64;
    loop {
        let dir = dirs[i as usize % dirs.len()];
        let name = format!("f{i}");
        let made = fs.mknod(dir, name.as_bytes(), kind::REG | 0o644, 0, creds);
        if is_enospc(&made) {
            // Out of inodes first, perhaps: the files made grow by their
            // tails, in turn, until the space runs out too.
            let mut k = 0;
            'grow: loop {
                for (d, n) in &files {
                    let f = fs.lookup(*d, n.as_bytes()).expect("lookup").ino;
                    let size = fs.getattr(f).expect("getattr").attr.size;
                    if !write_fits(fs, f, size, &[(k as u8) | 1; 3000], what) {
                        break 'grow;
                    }
                }
                k += 1;
            }
            break;
        }
        let f = made.unwrap_or_else(|e| panic!("{what}: create: {e}")).ino;
        files.push((dir, name));
        let full = match how {
            Fill::OneLarge => {
                let piece = vec![(i as u8) | 1; 256 << 10];
                let mut at = 0;
                while write_fits(fs, f, at, &piece, what) {
                    at += piece.len() as u64;
                }
                true
            }
            Fill::ManySmall => !write_fits(fs, f, 0, &[(i as u8) | 1; 3000], what),
            Fill::Mixed => {
                let len = [1usize, 1000, 8192, 9000, 30_000, 100 << 10][i as usize % 6];
                !write_fits(fs, f, 0, &vec![(i as u8) | 1; len], what)
            }
        };
        if full {
            break;
        }
        i += 1;
    }
    files
}

/// Rewrites the first 20 000 bytes (or all) of every file in place: on
/// a full disk, as on any other, a rewrite needs no new space.
fn rewrite_all(fs: &mut FileSystem<Ffs>, files: &[(Ino, String)], what: &str) {
    for (dir, name) in files {
        let f = fs.lookup(*dir, name.as_bytes()).expect("lookup").ino;
        let size = fs.getattr(f).expect("getattr").attr.size;
        let len = size.min(20_000) as usize;
        if let Err(e) = fs.write(f, 0, &vec![0x5a; len]) {
            panic!("{what}: rewriting {len} bytes of {name} at 100%: {e}");
        }
    }
}

/// The third block of every file that has one whole, as it should read.
type ThirdBlocks = std::collections::BTreeMap<(Ino, String), Vec<u8>>;

/// Writes two fragments of `byte` into the third block of every file that
/// has it whole, then reads the block back. `blocks` holds what each
/// block read as after the last call; a block found there is not read
/// before the write, and after a remount it is not cached, so FFS takes
/// the fragments without reading the block (`write_without_reading`) —
/// on a disk with no space left, where such a write needs none. Returns
/// the device reads the writes themselves made.
fn write_fragments(
    fs: &mut FileSystem<Ffs>,
    files: &[(Ino, String)],
    blocks: &mut ThirdBlocks,
    byte: u8,
    what: &str,
) -> u64 {
    const BLOCK: u64 = 3 * 8192;
    let mut reads = 0;
    for (dir, name) in files {
        let f = fs.lookup(*dir, name.as_bytes()).expect("lookup").ino;
        if fs.getattr(f).expect("getattr").attr.size < BLOCK + 8192 {
            continue;
        }
        let key = (*dir, name.clone());
        let mut expected = match blocks.get(&key) {
            Some(block) => block.clone(),
            None => fs.read(f, BLOCK, 8192).expect("read"),
        };
        let before = fs.storage().stats().reads;
        if let Err(e) = fs.write(f, BLOCK + 1024, &[byte; 2048]) {
            panic!("{what}: two fragments into a block of {name} at 100%: {e}");
        }
        reads += fs.storage().stats().reads - before;
        expected[1024..3072].fill(byte);
        let got = fs.read(f, BLOCK, 8192).expect("read");
        assert!(
            got == expected,
            "{what}: {name}'s block written in part differs at byte {:?}",
            got.iter().zip(&expected).position(|(a, b)| a != b)
        );
        blocks.insert(key, expected);
    }
    reads
}

/// Deletes everything on the full disk: a rename over an existing file, a
/// truncate, a hole punched, then every file and directory.
fn empty(fs: &mut FileSystem<Ffs>, files: &[(Ino, String)], what: &str) {
    let flags = RenameFlags::default();
    fs.rename(ROOT_INO, b"a", ROOT_INO, b"b", flags)
        .unwrap_or_else(|e| panic!("{what}: rename over an existing file on the full disk: {e}"));
    let (dir, name) = files
        .iter()
        .max_by_key(|(d, n)| {
            let f = fs.lookup(*d, n.as_bytes()).map(|i| i.ino).unwrap_or(0);
            fs.getattr(f).map(|i| i.attr.size).unwrap_or(0)
        })
        .expect("a file");
    let f = fs.lookup(*dir, name.as_bytes()).expect("lookup").ino;
    let size = fs.getattr(f).expect("getattr").attr.size;
    let punch = libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE;
    fs.fallocate(f, 1000, (size / 2).max(2000), punch)
        .unwrap_or_else(|e| panic!("{what}: punching a hole on the full disk: {e}"));
    let half = SetAttr { size: Some(size / 2 + 123), ..Default::default() };
    fs.setattr(f, &half).unwrap_or_else(|e| panic!("{what}: truncate on the full disk: {e}"));
    for (dir, name) in files.iter().filter(|(_, n)| n != "a") {
        fs.unlink(*dir, name.as_bytes()).unwrap_or_else(|e| panic!("{what}: unlink {name}: {e}"));
    }
    for i in 0..4 {
        fs.rmdir(ROOT_INO, format!("d{i}").as_bytes()).unwrap_or_else(|e| panic!("{what}: rmdir d{i}: {e}"));
    }
}

#[test]
fn a_disk_filled_to_enospc_empties_to_the_space_it_had_new_and_checks_clean() {
    for integrity in Integrity::ALL {
        for how in [Fill::OneLarge, Fill::ManySmall, Fill::Mixed] {
            let what = format!("{integrity:?}, {how:?}");
            let dev = fresh_for(DISK, integrity);
            let new = with_fs_in(&dev, integrity, false, |fs| fs.statfs().expect("statfs"));
            let mut third_blocks = ThirdBlocks::new();
            let files = with_fs_in(&dev, integrity, false, |fs| {
                let files = fill(fs, how, &what);
                assert_eq!(fs.statfs().expect("statfs").free_blocks, 0, "{what}: full, statfs shows room");
                rewrite_all(fs, &files, &what);
                write_fragments(fs, &files, &mut third_blocks, 0x3c, &what);
                fs.sync().expect("sync");
                files
            });
            let report = check(&dev);
            assert!(report.is_clean(), "{what}, full:\n{}", listing(&report));
            assert!(
                !third_blocks.is_empty() || matches!(how, Fill::ManySmall),
                "{what}: no file has a third block"
            );
            let reads = with_fs_in(&dev, integrity, false, |fs| {
                write_fragments(fs, &files, &mut third_blocks, 0xc3, &what)
            });
            // The journal's modes read what they change (its log keeps
            // before-images); the others take the fragments unread.
            if !matches!(integrity, Integrity::Journal | Integrity::JournalSync) {
                assert_eq!(reads, 0, "{what}: fragments into blocks on disk read them first");
            }
            let report = check(&dev);
            assert!(report.is_clean(), "{what}, fragments written:\n{}", listing(&report));
            with_fs_in(&dev, integrity, false, |fs| {
                write_fragments(fs, &files, &mut third_blocks, 0x96, &what);
                rewrite_all(fs, &files, &what);
                empty(fs, &files, &what);
                let now = fs.statfs().expect("statfs");
                assert_eq!(now.free_blocks, new.free_blocks, "{what}: free blocks after deleting everything");
                assert_eq!(now.free_inodes, new.free_inodes, "{what}: free inodes after deleting everything");
            });
            let report = check(&dev);
            assert!(report.is_clean(), "{what}, emptied:\n{}", listing(&report));
            with_fs_in(&dev, integrity, false, |fs| {
                let now = fs.statfs().expect("statfs");
                assert_eq!(now.free_blocks, new.free_blocks, "{what}: free blocks after a remount");
                fs.storage().check_groups().unwrap_or_else(|e| panic!("{what}: {e}"));
            });
        }
    }
}
