//! Many threads at once through [`Shared`]: readers answering from memory
//! holding the file system shared, beside writers holding it exclusively,
//! on each layout. Every answer a reader gets must be a whole state some
//! writer left — a file all of one version, a name absent or naming its own
//! inode — and the image fsck finds afterwards must be clean.

use super::Shared;
use fslab::format::{Ino, ROOT_INO};
use fslab::storage::StorageManager;
use fslab::ufs::{Access, Creds, FileSystem, RenameFlags};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Files every reader may ask about; each always holds `LEN` bytes of one
/// version (every byte the version's number).
const FILES: usize = 48;
const LEN: usize = 6000;
/// Names that come and go (created, renamed over each other, removed).
const CHURN: usize = 16;
const WRITERS: usize = 2;
const READERS: usize = 4;
const RUN: Duration = Duration::from_millis(1500);

fn stable_name(i: usize) -> Vec<u8> {
    format!("stable-file-with-a-long-name-{i:03}").into_bytes()
}

fn churn_name(i: usize) -> Vec<u8> {
    format!("coming-and-going-{i:03}").into_bytes()
}

/// A tiny generator, so that each thread's choices differ.
fn next(x: &mut u64) -> usize {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    (*x >> 16) as usize
}

/// What the readers got from memory: attributes, lookups, reads, listings,
/// extended attributes.
#[derive(Default)]
struct Answers {
    attrs: AtomicUsize,
    lookups: AtomicUsize,
    reads: AtomicUsize,
    listings: AtomicUsize,
    xattrs: AtomicUsize,
    /// And the writers' rewrites, so that a reader starving them shows.
    writes: AtomicUsize,
}

/// Runs the readers and writers on `fs` for `time` and unmounts it;
/// returns the stable files' inode numbers, made and synced before the
/// threads start, when `synced` runs.
fn run<S: StorageManager + 'static>(fs: FileSystem<S>, time: Duration, synced: impl FnOnce()) -> Vec<Ino> {
    let shared = Arc::new(Shared::new(fs));
    let creds = Creds::default();
    let (dir, inos) = shared
        .with(|fs| {
            let dir = fs.mkdir(ROOT_INO, b"d", 0o755, creds)?.ino;
            let mut inos = Vec::new();
            for i in 0..FILES {
                let ino = fs.mknod(dir, &stable_name(i), libc::S_IFREG | 0o644, 0, creds)?.ino;
                fs.write(ino, 0, &[1u8; LEN])?;
                fs.read(ino, 0, LEN)?;
                inos.push(ino);
            }
            fs.sync()?;
            Ok((dir, inos))
        })
        .expect("set up");
    synced();
    let inos: Arc<Vec<Ino>> = Arc::new(inos);
    let stop = Arc::new(AtomicBool::new(false));
    let answers = Arc::new(Answers::default());
    let mut threads = Vec::new();
    for w in 0..WRITERS {
        let (shared, inos, stop, answers) =
            (Arc::clone(&shared), Arc::clone(&inos), Arc::clone(&stop), Arc::clone(&answers));
        threads.push(std::thread::spawn(move || {
            let mut x = 0x9e37_79b9_7f4a_7c15 ^ (w as u64 + 1);
            let mut version = 1u8;
            while !stop.load(Ordering::Relaxed) {
                let i = next(&mut x) % FILES;
                version = version.wrapping_add(1).max(1);
                shared.with(|fs| fs.write(inos[i], 0, &[version; LEN])).expect("rewrite");
                answers.writes.fetch_add(1, Ordering::Relaxed);
                let (a, b) = (churn_name(next(&mut x) % CHURN), churn_name(next(&mut x) % CHURN));
                let churned = shared.with(|fs| match next(&mut x) % 3 {
                    0 => fs.mknod(dir, &a, libc::S_IFREG | 0o644, 0, creds).map(|_| ()),
                    1 => fs.rename(dir, &a, dir, &b, RenameFlags::default()),
                    _ => fs.unlink(dir, &a),
                });
                if let Err(e) = churned {
                    assert!(matches!(e.errno(), libc::ENOENT | libc::EEXIST), "a name's change failed: {e}");
                }
                if next(&mut x).is_multiple_of(64) {
                    shared.with(|fs| fs.sync()).expect("sync");
                }
            }
        }));
    }
    for r in 0..READERS {
        let (shared, inos, stop, answers) =
            (Arc::clone(&shared), Arc::clone(&inos), Arc::clone(&stop), Arc::clone(&answers));
        threads.push(std::thread::spawn(move || {
            let mut x = 0x2545_f491_4f6c_dd1d ^ (r as u64 + 7);
            while !stop.load(Ordering::Relaxed) {
                let i = next(&mut x) % FILES;
                let ino = inos[i];
                if let Some(inode) = shared.try_shared(|fs| fs.getattr_cached(ino)) {
                    answers.attrs.fetch_add(1, Ordering::Relaxed);
                    assert_eq!(
                        (inode.ino, inode.attr.size, inode.attr.nlink),
                        (ino, LEN as u64, 1),
                        "attributes"
                    );
                }
                if let Some(found) = shared.try_shared(|fs| fs.lookup_cached(dir, &stable_name(i))) {
                    answers.lookups.fetch_add(1, Ordering::Relaxed);
                    assert_eq!(found.expect("a stable name is there").ino, ino, "lookup of a stable name");
                }
                let churn = next(&mut x) % CHURN;
                if let Some(found) = shared.try_shared(|fs| fs.lookup_cached(dir, &churn_name(churn))) {
                    answers.lookups.fetch_add(1, Ordering::Relaxed);
                    match found {
                        Ok(inode) => assert!(inode.attr.is_reg() && inode.attr.nlink == 1, "{inode:?}"),
                        Err(e) => assert_eq!(e.errno(), libc::ENOENT, "lookup of a name that comes and goes"),
                    }
                }
                if next(&mut x).is_multiple_of(16) {
                    if let Some(listed) = shared.try_shared(|fs| fs.readdir_cached(dir, 0, usize::MAX)) {
                        answers.listings.fetch_add(1, Ordering::Relaxed);
                        let mut names: Vec<&[u8]> = listed.iter().map(|e| &e.name[..]).collect();
                        names.sort_unstable();
                        names.dedup();
                        assert_eq!(names.len(), listed.len(), "a listing shows a name twice");
                        for (i, &ino) in inos.iter().enumerate() {
                            let name = stable_name(i);
                            assert!(
                                listed.iter().any(|e| e.name == name && e.ino == ino),
                                "a listing lost a name"
                            );
                        }
                    }
                }
                if let Some(found) = shared.try_shared(|fs| fs.getxattr_cached(ino, b"security.capability")) {
                    answers.xattrs.fetch_add(1, Ordering::Relaxed);
                    assert_eq!(found.err().map(|e| e.errno()), Some(libc::ENODATA), "an attribute never set");
                }
                if let Some(data) = shared.try_shared(|fs| fs.read_cached(ino, 0, LEN, Access::NoAtime)) {
                    answers.reads.fetch_add(1, Ordering::Relaxed);
                    assert_eq!(data.len(), LEN, "read length");
                    assert!(data.iter().all(|&b| b == data[0]), "a read saw two versions of one write");
                }
            }
        }));
    }
    let start = Instant::now();
    while start.elapsed() < time && !threads.iter().any(|t| t.is_finished()) {
        std::thread::sleep(Duration::from_millis(20));
    }
    stop.store(true, Ordering::Relaxed);
    for thread in threads {
        thread.join().expect("a thread failed its checks");
    }
    let counts = [
        &answers.attrs,
        &answers.lookups,
        &answers.reads,
        &answers.listings,
        &answers.xattrs,
        &answers.writes,
    ]
    .map(|n| n.load(Ordering::Relaxed));
    eprintln!("from memory: attributes, lookups, reads, listings, xattrs; rewrites: {counts:?}");
    assert!(
        counts.iter().all(|&n| n > 0),
        "some call was never answered from memory, or never written: {counts:?}"
    );
    shared.shutdown().expect("unmount");
    inos.to_vec()
}

/// The layouts the stress runs on, by name.
const LAYOUTS: [&str; 4] = ["lfs", "ffs-async", "ffs-softdep", "ffs-journal"];

/// Makes a file system of `layout` on `dev`.
fn mkfs(layout: &str, dev: &Arc<dyn disk::BlockDevice>) {
    if layout == "lfs" {
        fslab::mkfs_lfs(dev.clone(), &Default::default(), Creds::default()).expect("mkfs");
    } else {
        let journal = match layout {
            "ffs-journal" => fslab::ffs::JournalKind::File,
            _ => fslab::ffs::JournalKind::None,
        };
        let mkfs = fslab::ffs::MkfsOptions { journal, ..Default::default() };
        fslab::mkfs_ffs(dev.clone(), &mkfs, Creds::default()).expect("mkfs");
    }
}

/// Mounts `dev`, of `layout`, and runs `body` on it.
fn mounted<T>(layout: &str, dev: Arc<dyn disk::BlockDevice>, body: impl Runs<T>) -> fslab::Result<T> {
    if layout == "lfs" {
        return Ok(body.on(FileSystem::new(fslab::lfs::Lfs::mount(dev, Default::default())?)));
    }
    let integrity = match layout {
        "ffs-async" => fslab::ffs::Integrity::Async,
        "ffs-softdep" => fslab::ffs::Integrity::Softdep,
        _ => fslab::ffs::Integrity::Journal,
    };
    let options = fslab::ffs::MountOptions { integrity, ..Default::default() };
    Ok(body.on(FileSystem::new(fslab::ffs::Ffs::mount(dev, options)?)))
}

/// Something to do with a mounted file system of any layout.
trait Runs<T> {
    fn on<S: StorageManager + 'static>(self, fs: FileSystem<S>) -> T;
}

/// The stress, for a time, with what to do once its files are synced.
struct Stress<F>(Duration, F);

impl<F: FnOnce()> Runs<Vec<Ino>> for Stress<F> {
    fn on<S: StorageManager + 'static>(self, fs: FileSystem<S>) -> Vec<Ino> {
        run(fs, self.0, self.1)
    }
}

#[test]
fn readers_beside_writers_see_only_whole_states_and_leave_a_clean_image() {
    for layout in LAYOUTS {
        let disk = Arc::new(disk::MemDisk::new(64 << 20));
        let dev: Arc<dyn disk::BlockDevice> = disk.clone();
        mkfs(layout, &dev);
        mounted(layout, dev, Stress(RUN, || {})).expect("mount");
        testkit::subject::fsck_clean(&*disk, false).unwrap_or_else(|e| panic!("{layout}: fsck: {e}"));
    }
}

/// After a crash at a sampled point of such a run, on the layouts that
/// recover by mounting (LFS's roll-forward, the journal's replay; soft
/// updates leave leaks for fsck, which the crash explorer checks), the
/// image mounts, every stable file is there under its name with its size,
/// and fsck finds nothing after the unmount. The readers write nothing, so
/// what a crash can leave is what the writers, taking turns, wrote.
#[test]
fn a_crash_beside_readers_and_writers_recovers_to_a_clean_image() {
    /// Checks a recovered file system: the stable files, by name.
    struct Recovered<'a>(&'a [Ino]);
    impl Runs<Result<(), String>> for Recovered<'_> {
        fn on<S: StorageManager + 'static>(self, mut fs: FileSystem<S>) -> Result<(), String> {
            let dir = fs.lookup(ROOT_INO, b"d").map_err(|e| format!("lookup d: {e}"))?.ino;
            for (i, &ino) in self.0.iter().enumerate() {
                let found = fs.lookup(dir, &stable_name(i)).map_err(|e| format!("stable file {i}: {e}"))?;
                if (found.ino, found.attr.size) != (ino, LEN as u64) {
                    return Err(format!("stable file {i}: inode {} size {}", found.ino, found.attr.size));
                }
            }
            fs.unmount().map_err(|e| format!("unmount: {e}"))
        }
    }
    const STATES: usize = 12;
    for layout in ["lfs", "ffs-journal"] {
        let crash = disk::CrashDisk::over(disk::MemDisk::new(64 << 20));
        let dev: Arc<dyn disk::BlockDevice> = Arc::new(crash.clone());
        mkfs(layout, &dev);
        // Crashes from the stable files' sync on: what came before is
        // folded into the image every crash starts from.
        let inos = mounted(layout, dev, Stress(RUN / 3, || crash.checkpoint_base())).expect("mount");
        let mut checked = 0;
        for state in crash.crash_states(STATES, 0x5eed) {
            let image = Arc::new(state.disk);
            let recovered = mounted(layout, image.clone(), Recovered(&inos))
                .map_err(|e| format!("mount: {e}"))
                .and_then(|r| r)
                .and_then(|()| testkit::subject::fsck_clean(&*image, true));
            if let Err(e) = recovered {
                panic!("{layout}, {}: {e}", state.description);
            }
            checked += 1;
        }
        eprintln!("{layout}: {checked} crash states after {} events", crash.events());
        assert!(checked > STATES / 2, "{layout}: only {checked} crash states checked");
    }
}
