//! The run: [`setup_image`] builds the synced setup image once; [`record`]
//! runs a workload on a fresh `CrashDisk` over a copy of it, applying each
//! operation to the file system and the model ([`apply_both`]), and notes
//! for each persistence point the device event count when it returned
//! ([`Recorded`], [`Point`]).

use super::op::Op;
use super::tree::{name_of, parent_of, Body, NodeId, Tree};
use super::workload::{setup_ops, Persist, Step, Workload};
use super::{mount_options, pattern, BLOCK_SIZE, DISK_BYTES, SEGMENT_SIZE};
use disk::{BlockDevice, CrashDisk, MemDisk};
use fslab::format::{Ino, ROOT_INO};
use fslab::lfs::{Lfs, MkfsOptions};
use fslab::storage::StorageManager;
use fslab::ufs::{Creds, FileSystem, RenameFlags, SetAttr};
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

/// Resolves `path` to an inode by lookups from the root.
pub fn resolve<S: StorageManager>(fs: &mut FileSystem<S>, path: &str) -> fslab::Result<Ino> {
    let mut ino = ROOT_INO;
    for part in path.split('/').filter(|p| !p.is_empty()) {
        ino = fs.lookup(ino, part.as_bytes())?.ino;
    }
    Ok(ino)
}

/// Applies `op` to `fs` and `tree`, recording the inode number of a node it
/// creates. Panics (with `context`) if either refuses: every workload is
/// valid by construction.
pub fn apply_both<S: StorageManager>(
    fs: &mut FileSystem<S>,
    tree: &mut Tree,
    op: &Op,
    context: &dyn fmt::Display,
) {
    let creds = Creds::default();
    let dir = |fs: &mut FileSystem<S>, p: &str| resolve(fs, parent_of(p));
    let result: fslab::Result<Option<Ino>> = (|| {
        Ok(match op {
            Op::Create(p) => {
                let parent = dir(fs, p)?;
                Some(fs.mknod(parent, name_of(p).as_bytes(), 0o100644, 0, creds)?.ino)
            }
            Op::Mkdir(p) => {
                let parent = dir(fs, p)?;
                Some(fs.mkdir(parent, name_of(p).as_bytes(), 0o755, creds)?.ino)
            }
            Op::Symlink(p, t) => {
                let parent = dir(fs, p)?;
                Some(fs.symlink(parent, name_of(p).as_bytes(), t.as_bytes(), creds)?.ino)
            }
            Op::Write { path, offset, len, tag } => {
                let ino = resolve(fs, path)?;
                let n = fs.write(ino, *offset, &pattern(*tag, *offset, *len))?;
                assert_eq!(n, *len, "{context}: short write in {op}");
                None
            }
            Op::Truncate(p, size) => {
                let ino = resolve(fs, p)?;
                fs.setattr(ino, &SetAttr { size: Some(*size), ..SetAttr::default() })?;
                None
            }
            Op::Link(from, to) => {
                let ino = resolve(fs, from)?;
                let parent = dir(fs, to)?;
                fs.link(ino, parent, name_of(to).as_bytes())?;
                None
            }
            Op::Unlink(p) => {
                let parent = dir(fs, p)?;
                fs.unlink(parent, name_of(p).as_bytes())?;
                None
            }
            Op::UnlinkOpen(p) => {
                let parent = dir(fs, p)?;
                let ino = fs.lookup(parent, name_of(p).as_bytes())?.ino;
                fs.pin(ino);
                fs.unlink(parent, name_of(p).as_bytes())?;
                None
            }
            Op::Rmdir(p) => {
                let parent = dir(fs, p)?;
                fs.rmdir(parent, name_of(p).as_bytes())?;
                None
            }
            Op::Rename(from, to) => {
                let (p1, p2) = (dir(fs, from)?, dir(fs, to)?);
                fs.rename(p1, name_of(from).as_bytes(), p2, name_of(to).as_bytes(), RenameFlags::default())?;
                None
            }
        })
    })();
    let ino = match result {
        Ok(ino) => ino,
        Err(e) => panic!("{context}: {op} failed on the file system: {e}"),
    };
    let created = match tree.apply(op) {
        Ok(created) => created,
        Err(e) => panic!("{context}: {op} refused by the model: {e}"),
    };
    if let (Some(id), Some(ino)) = (created, ino) {
        if let Some(node) = tree.nodes.get_mut(&id) {
            node.ino = ino;
        }
    }
}

/// Makes the setup image: mkfs, [`setup_ops`], unmount (a clean checkpoint).
/// Returns the image and the model with inode numbers.
pub fn setup_image() -> (Vec<u8>, Tree) {
    setup_image_on(DISK_BYTES, |dev| {
        let mkfs = MkfsOptions { block_size: BLOCK_SIZE, segment_size: SEGMENT_SIZE };
        fslab::mkfs_lfs(dev.clone(), &mkfs, Creds::default())?;
        Ok(FileSystem::new(Lfs::mount(dev, mount_options())?))
    })
}

/// [`setup_image`] for any layout: a device of `disk_bytes`, on which
/// `make` makes a file system and mounts it.
pub fn setup_image_on<S: StorageManager>(
    disk_bytes: u64,
    make: impl FnOnce(Arc<dyn BlockDevice>) -> fslab::Result<FileSystem<S>>,
) -> (Vec<u8>, Tree) {
    let disk = Arc::new(MemDisk::new(disk_bytes));
    let mut fs = make(disk.clone()).expect("mkfs and mount the new image");
    let mut tree = Tree::default();
    for op in setup_ops() {
        apply_both(&mut fs, &mut tree, &op, &"setup");
    }
    fs.unmount().expect("unmount after setup");
    (disk.snapshot(), tree)
}

/// A persistence point as the run saw it.
#[derive(Debug, Clone)]
pub struct Point {
    /// Its step in the workload (`None`: the setup's sync).
    pub step: Option<usize>,
    /// What it was.
    pub persist: Persist,
    /// Index of the model state it made durable (`Recorded::states`).
    pub state: usize,
    /// Device events recorded when it returned: acknowledged at any cut
    /// at or after this.
    pub events: usize,
    /// The file it made durable (fsync / fdatasync of a file).
    pub node: Option<NodeId>,
}

/// A workload's run: the model after each primitive operation and the
/// persistence points with their event counts.
pub struct Recorded {
    /// The workload's steps.
    pub steps: Vec<Step>,
    /// `states[0]` is the setup; `states[k]` is after the k-th operation.
    pub states: Vec<Tree>,
    /// The setup's sync (at event 0), then each persistence point in order.
    pub points: Vec<Point>,
    /// The device the workload ran on.
    pub crash: CrashDisk,
    /// Device events when the workload ended.
    pub events: usize,
    /// Device events when each operation returned (`op_events[k]` for the
    /// operation that made `states[k + 1]`).
    pub op_events: Vec<usize>,
    /// Inodes that were open with no name left at some step of the run
    /// (`FileSystem::orphans`), each with the device events when the
    /// operation that left it so returned.
    pub orphans: BTreeMap<Ino, usize>,
}

/// Runs `workload` on a fresh [`CrashDisk`] over a copy of `image` (with
/// model `setup`), recording states and persistence points. The file system
/// is dropped without unmounting at the end, as a power cut would.
pub fn record(workload: &Workload, image: &[u8], setup: &Tree) -> Recorded {
    record_on(workload, image, setup, |dev| Ok(FileSystem::new(Lfs::mount(dev, mount_options())?)))
}

/// [`record`] for any layout: `mount` mounts the setup image's copy.
pub fn record_on<S: StorageManager>(
    workload: &Workload,
    image: &[u8],
    setup: &Tree,
    mount: impl FnOnce(Arc<dyn BlockDevice>) -> fslab::Result<FileSystem<S>>,
) -> Recorded {
    let crash = CrashDisk::over(MemDisk::from_bytes(image.to_vec()));
    let dev: Arc<dyn BlockDevice> = Arc::new(crash.clone());
    let mut fs = mount(dev).unwrap_or_else(|e| panic!("{workload}: mount the setup image: {e}"));
    let mut tree = setup.clone();
    let mut states = vec![tree.clone()];
    let mut op_events = Vec::new();
    let mut points = vec![Point { step: None, persist: Persist::Sync, state: 0, events: 0, node: None }];
    let mut orphans = BTreeMap::new();
    for (i, step) in workload.steps.iter().enumerate() {
        match step {
            Step::Op(op) => {
                apply_both(&mut fs, &mut tree, op, workload);
                states.push(tree.clone());
                op_events.push(crash.events());
                for ino in fs.orphans() {
                    orphans.entry(ino).or_insert(crash.events());
                }
            }
            Step::Persist(p) => {
                let path = match p {
                    Persist::Fsync(path) | Persist::Fdatasync(path) | Persist::FsyncDir(path) => Some(path),
                    Persist::Sync => None,
                };
                let result = match path {
                    Some(path) => resolve(&mut fs, path)
                        .and_then(|ino| fs.fsync(ino, matches!(p, Persist::Fdatasync(_)))),
                    None => fs.sync(),
                };
                if let Err(e) = result {
                    panic!("{workload}: {p} failed: {e}");
                }
                let node = match p {
                    Persist::Fsync(path) | Persist::Fdatasync(path) => {
                        tree.node_at(path).filter(|(_, n)| matches!(n.body, Body::File(_))).map(|(id, _)| id)
                    }
                    _ => None,
                };
                points.push(Point {
                    step: Some(i),
                    persist: p.clone(),
                    state: states.len() - 1,
                    events: crash.events(),
                    node,
                });
            }
        }
    }
    let events = crash.events();
    drop(fs);
    Recorded { steps: workload.steps.clone(), states, points, crash, events, op_events, orphans }
}
