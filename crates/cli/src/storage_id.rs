//! Which storage an image path names, whatever the path: one file reached
//! by two names (a hard link, a symlink) is one storage, and so is a loop
//! device and the file behind it (`losetup`). Two fslab servers writing one
//! storage would each lose the other's writes, so a mount, mkfs or fsck
//! compares storages this way before it starts (see `image_lock`).

use std::fs::File;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

/// One object holding the data: a file (its device and inode) or a block
/// device (its device number).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Key {
    /// A regular file: `st_dev`, `st_ino`.
    File(u64, u64),
    /// A block device: `st_rdev`.
    Block(u64),
}

/// The storage a path names: its own object, and for a loop device the
/// file behind it (and that file's path, when this process can reach it:
/// the lock is taken on it too).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Storage {
    /// Every object whose data this storage is.
    pub(crate) keys: Vec<Key>,
    /// The file behind a loop device, checked to be the very file the
    /// device reads (by device and inode).
    pub(crate) backing: Option<PathBuf>,
}

impl Storage {
    /// The storage at `path` (following symlinks); `None` if it cannot be
    /// examined (it does not exist, say).
    pub(crate) fn of(path: &Path) -> Option<Storage> {
        let meta = std::fs::metadata(path).ok()?;
        if !meta.file_type().is_block_device() {
            return Some(Storage { keys: vec![Key::File(meta.dev(), meta.ino())], backing: None });
        }
        let mut storage = Storage { keys: vec![Key::Block(meta.rdev())], backing: None };
        if let Some((dev, ino)) = loop_backing(path) {
            storage.keys.push(Key::File(dev, ino));
            storage.backing = backing_path(meta.rdev()).filter(|p| {
                std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.dev() == dev && m.ino() == ino)
            });
        }
        Some(storage)
    }

    /// Whether the two hold the same data.
    pub(crate) fn overlaps(&self, other: &Storage) -> bool {
        self.keys.iter().any(|k| other.keys.contains(k))
    }
}

/// `LOOP_GET_STATUS64` (linux/loop.h).
const LOOP_GET_STATUS64: rustix::ioctl::Opcode = 0x4C05;

/// `struct loop_info64` (linux/loop.h); only the first two fields are read.
#[repr(C)]
struct LoopInfo64 {
    lo_device: u64,
    lo_inode: u64,
    lo_rdevice: u64,
    lo_offset: u64,
    lo_sizelimit: u64,
    lo_number: u32,
    lo_encrypt_type: u32,
    lo_encrypt_key_size: u32,
    lo_flags: u32,
    lo_file_name: [u8; 64],
    lo_crypt_name: [u8; 64],
    lo_encrypt_key: [u8; 32],
    lo_init: [u64; 2],
}

/// The device and inode of the file behind the loop device at `path`
/// (`LOOP_GET_STATUS64`, as losetup(8) reads them); `None` for another
/// block device or a loop device with nothing behind it.
fn loop_backing(path: &Path) -> Option<(u64, u64)> {
    let device = File::open(path).ok()?;
    // SAFETY: LOOP_GET_STATUS64 writes one struct loop_info64, whose layout
    // LoopInfo64 repeats (a test checks its size), and the getter reads the
    // value only when the ioctl succeeded; on any other device it fails.
    // No safe wrapper exists: rustix and nix expose ioctls only unsafely.
    let info = unsafe {
        rustix::ioctl::ioctl(&device, rustix::ioctl::Getter::<LOOP_GET_STATUS64, LoopInfo64>::new())
    }
    .ok()?;
    Some((info.lo_device, info.lo_inode))
}

/// The path of the file behind the loop device `rdev`, as sysfs shows it
/// (`/sys/dev/block/MAJOR:MINOR/loop/backing_file`).
fn backing_path(rdev: u64) -> Option<PathBuf> {
    let (major, minor) = (rustix::fs::major(rdev), rustix::fs::minor(rdev));
    let text = std::fs::read_to_string(format!("/sys/dev/block/{major}:{minor}/loop/backing_file")).ok()?;
    let path = PathBuf::from(text.trim_end_matches('\n'));
    path.is_absolute().then_some(path)
}

/// A served fslab mount of the same storage as `storage`: its mount point
/// and source, from this process's mount table (each fslab mount names its
/// image as its source). A dead mount (its server killed) serves nothing
/// and is passed over: nobody holds its image's lock any more. Call it
/// while holding no lock on the storage.
pub(crate) fn mounted(storage: &Storage) -> Option<(PathBuf, String)> {
    let entries = fslab_fuse::mountinfo::read().ok()?;
    entries.into_iter().find_map(|e| {
        let source = Path::new(&e.source);
        let theirs = fslab_fuse::is_fslab_mount(&e.kind, &e.source)
            .then_some(source)
            .filter(|source| source.is_absolute())
            .and_then(Storage::of)?;
        (storage.overlaps(&theirs) && locked_by_another(source)).then_some((e.point, e.source))
    })
}

/// Whether some process holds the `flock` of the file at `path` (an fslab
/// process using it): tried without waiting, and let go at once.
fn locked_by_another(path: &Path) -> bool {
    let Ok(file) = File::open(path) else { return false };
    // Closing `file` on return releases a lock this call took.
    rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive)
        == Err(rustix::io::Errno::WOULDBLOCK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_file_by_two_names_is_one_storage_and_another_file_is_not() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (a, b, c) = (dir.path().join("a"), dir.path().join("b"), dir.path().join("c"));
        std::fs::write(&a, b"x").expect("write");
        std::fs::write(&c, b"y").expect("write");
        std::fs::hard_link(&a, &b).expect("link");
        let link = dir.path().join("sym");
        std::os::unix::fs::symlink(&a, &link).expect("symlink");
        let storage = |p: &Path| Storage::of(p).expect("storage");
        assert!(storage(&a).overlaps(&storage(&b)), "a hard link");
        assert!(storage(&a).overlaps(&storage(&link)), "a symlink");
        assert!(!storage(&a).overlaps(&storage(&c)), "another file");
        assert_eq!(Storage::of(&dir.path().join("missing")), None);
    }

    #[test]
    fn the_loop_status_layout_is_the_kernels() {
        // linux/loop.h: 5 u64, 4 u32, 64 + 64 + 32 bytes, 2 u64.
        assert_eq!(std::mem::size_of::<LoopInfo64>(), 232);
    }
}
