//! The in-process cleaner of a mount: a thread that wakes when a partial
//! segment is written while cleaning is wanted (or after a quiet half
//! second) and cleans while the clean segments are below the high-water
//! mark, taking the file system's lock one mechanism call at a time so
//! that requests are served in between.
//!
//! Lifecycle: [`Background::spawn`] → running → [`Background::stop`]
//! (or drop), which the mount calls before its final checkpoint: the
//! thread wakes at once, makes no further call on the file system, and
//! ends without a word. An unmount that comes first anyway (a library
//! user who unmounts without stopping it) ends it quietly too: every call
//! then fails with [`crate::mechanism::unmounted_error`], which is no sign
//! that anything went wrong. What it reports — a segment set aside for a
//! block that cannot be read, a pass that failed, the cleaner stopping on
//! an I/O error — is something a user must see.

use crate::driver::Cleaner;
use crate::mechanism::{is_unmounted_error, LfsAccess, Locked};
use fslab::lfs::clean::SegmentClock;
use fslab::lfs::Lfs;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// A running background cleaner. Dropping it stops the thread.
pub struct Background {
    stop: Arc<AtomicBool>,
    clock: Arc<SegmentClock>,
    thread: Option<JoinHandle<()>>,
}

/// The access the thread uses: refuses every call once a stop is asked
/// for, so a pass in progress ends at its next call instead of running on
/// into the unmount.
struct Stoppable<A> {
    access: A,
    stop: Arc<AtomicBool>,
}

impl<A: LfsAccess> LfsAccess for Stoppable<A> {
    fn with_lfs<R>(&self, op: impl FnOnce(&mut Lfs) -> fslab::Result<R>) -> fslab::Result<R> {
        if self.stop.load(Ordering::Acquire) {
            return Err(fslab::error::errno(libc::ECANCELED, "the cleaner is stopping"));
        }
        self.access.with_lfs(op)
    }

    fn is_unmounted(&self) -> bool {
        self.access.is_unmounted()
    }
}

impl Background {
    /// Starts cleaning `access` with `cleaner`; what the thread has to say
    /// goes to standard error.
    pub fn spawn<A>(access: A, cleaner: Cleaner) -> std::io::Result<Background>
    where
        A: LfsAccess + Send + 'static,
    {
        // Not `eprintln!`, which panics when standard error is gone (a
        // closed terminal, a log reader that died) and would end the thread.
        Background::spawn_reporting(access, cleaner, |line| {
            use std::io::Write as _;
            let _ = writeln!(std::io::stderr().lock(), "fslab: {line}");
        })
    }

    /// As [`Background::spawn`], handing each line the thread has to say
    /// to `report`.
    pub fn spawn_reporting<A, R>(
        access: A,
        mut cleaner: Cleaner,
        mut report: R,
    ) -> std::io::Result<Background>
    where
        A: LfsAccess + Send + 'static,
        R: FnMut(&str) + Send + 'static,
    {
        let stop = Arc::new(AtomicBool::new(false));
        let access = Stoppable { access, stop: stop.clone() };
        let mut mechanism = Locked::new(access).map_err(|e| std::io::Error::other(e.to_string()))?;
        let clock = mechanism.clock();
        let stopping = stop.clone();
        let thread = std::thread::Builder::new().name("fslab-cleaner".into()).spawn(move || {
            // What `cleaning_wanted` said when the last pass began: the
            // checkpoint after a pass wakes this thread too, and a pass that
            // gained nothing is not repeated until users write or delete
            // (`CleaningWanted::repeats`).
            let mut last_start = None;
            let policy = cleaner.policy_name();
            while !stopping.load(Ordering::Acquire) {
                // Partial segments written while no cleaning is wanted do
                // not wake it, and the answer comes without the file
                // system's lock: the common case must cost writers nothing.
                // An error here is the file system gone or stopped by an
                // internal error, which the mount reports itself.
                let Ok(now) = mechanism.wait_for_work(Duration::from_millis(500)) else {
                    return;
                };
                if !now.wanted || now.repeats(last_start) {
                    continue;
                }
                last_start = Some(now);
                match cleaner.pass(&mut mechanism) {
                    Ok(pass) => {
                        for seg in &pass.unreadable {
                            report(&format!(
                                "cleaner ({policy}): segment {seg} holds a block that cannot be read; \
                                 it is left uncleaned (run fslab fsck on the unmounted image)"
                            ));
                        }
                    }
                    // Stopped, or unmounted, in the middle of a pass: what
                    // it moved is safe (a segment becomes writable only at
                    // a checkpoint) and nothing went wrong.
                    Err(e) if stopping.load(Ordering::Acquire) || is_unmounted_error(&e) => return,
                    Err(e) if e.errno() == libc::EIO => {
                        report(&format!("cleaner ({policy}) stopped: {e}"));
                        return;
                    }
                    Err(e) => report(&format!("cleaner ({policy}): {e}")),
                }
            }
        })?;
        Ok(Background { stop, clock, thread: Some(thread) })
    }

    /// Stops the thread and waits for it: it wakes at once if it is
    /// waiting for work, and a pass in progress ends at its next call on
    /// the file system. Call it before the final checkpoint.
    pub fn stop(mut self) {
        self.halt();
    }

    fn halt(&mut self) {
        self.stop.store(true, Ordering::Release);
        self.clock.interrupt();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        self.halt();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mechanism::LfsAccess;
    use crate::policy;
    use disk::MemDisk;
    use fslab::format::inode::kind;
    use fslab::format::ROOT_INO;
    use fslab::lfs::{Lfs, MkfsOptions, MountOptions};
    use fslab::ufs::{Creds, FileSystem};
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};
    use std::collections::HashMap;
    use std::sync::{Mutex, PoisonError};
    use std::time::Instant;

    #[derive(Clone)]
    struct Shared(Arc<Mutex<FileSystem<Lfs>>>);

    impl LfsAccess for Shared {
        fn with_lfs<R>(&self, op: impl FnOnce(&mut Lfs) -> fslab::Result<R>) -> fslab::Result<R> {
            op(self.0.lock().unwrap_or_else(PoisonError::into_inner).storage())
        }
    }

    fn segments_cleaned(shared: &Shared) -> u64 {
        shared.with_lfs(|lfs| Ok(lfs.cleaner_report().total.segments_cleaned)).expect("report")
    }

    /// Files of many sizes written, rewritten and deleted at random until
    /// the disk has been full for a while: its dead space ends up spread
    /// thin over every segment, and a round of cleaning frees about what
    /// its own metadata takes. Returns what each file holds.
    fn fill_past_full(fs: &mut FileSystem<Lfs>) -> HashMap<String, Vec<u8>> {
        let mut rng = SmallRng::seed_from_u64(11);
        let mut files: HashMap<String, Vec<u8>> = HashMap::new();
        let mut refused = 0;
        while refused < 50 {
            let name = format!("f{}", rng.gen_range(0..900));
            if rng.gen_bool(0.15) {
                if files.remove(&name).is_some() {
                    fs.unlink(ROOT_INO, name.as_bytes()).expect("unlink");
                }
                continue;
            }
            if files.remove(&name).is_some() {
                fs.unlink(ROOT_INO, name.as_bytes()).expect("unlink");
            }
            let len = [1, 2, 3, 8, 16, 64][rng.gen_range(0..6)] * 4096 - rng.gen_range(0..4096);
            let seed: u8 = rng.gen();
            let data: Vec<u8> = (0..len).map(|i| (i as u8).wrapping_mul(31) ^ seed).collect();
            let made = fs.mknod(ROOT_INO, name.as_bytes(), kind::REG | 0o644, 0, Creds::default());
            match made.and_then(|inode| fs.write(inode.ino, 0, &data)) {
                // A write the space ran out in the middle of stores what it
                // counts.
                Ok(n) => {
                    files.insert(name, data[..n].to_vec());
                }
                Err(e) if e.errno() == libc::ENOSPC => {
                    refused += 1;
                    // What a refused write left is not known: drop the file.
                    let _ = fs.unlink(ROOT_INO, name.as_bytes());
                }
                Err(e) => panic!("write {name}: {e}"),
            }
        }
        files
    }

    /// With nobody writing, the mount's cleaners (the background thread
    /// and the writers' own, which the mount's ticks run) must come to rest
    /// on a full disk instead of moving the same data round it for as long
    /// as it stays mounted.
    #[test]
    fn the_cleaner_rests_on_a_full_disk_that_nobody_writes() {
        let disk = Arc::new(MemDisk::new(32 << 20));
        let mkfs = MkfsOptions { block_size: 4096, segment_size: 256 << 10 };
        fslab::mkfs_lfs(disk.clone(), &mkfs, Default::default()).expect("mkfs");
        let options = MountOptions {
            cache_bytes: 1 << 20,
            checkpoint_interval: Duration::from_millis(200),
            ..MountOptions::default()
        };
        let mut lfs = Lfs::mount(disk, options).expect("mount");
        Cleaner::new(policy::by_name("greedy").expect("greedy")).install(&mut lfs);
        let mut fs = FileSystem::new(lfs);
        // A writer on a full disk gets its space or ENOSPC; it must not wait
        // for ever while rounds of cleaning gain what the checkpoint after
        // each takes back.
        let (filled, done) = std::sync::mpsc::channel();
        let filler = std::thread::spawn(move || {
            let files = fill_past_full(&mut fs);
            let _ = filled.send(());
            (fs, files)
        });
        done.recv_timeout(Duration::from_secs(60)).expect("writers on a full disk answered within 60 s");
        let (fs, files) = filler.join().expect("filler");
        let shared = Shared(Arc::new(Mutex::new(fs)));
        let background =
            Background::spawn(shared.clone(), Cleaner::new(policy::by_name("greedy").expect("greedy")))
                .expect("spawn");
        // The mount's periodic work, as its tick thread does it.
        let stop_ticks = Arc::new(AtomicBool::new(false));
        let ticker = {
            let (shared, stop) = (shared.clone(), stop_ticks.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    shared.0.lock().unwrap_or_else(PoisonError::into_inner).tick().expect("tick");
                    std::thread::sleep(Duration::from_millis(20));
                }
            })
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut last = segments_cleaned(&shared);
        let mut quiet_since = Instant::now();
        while quiet_since.elapsed() < Duration::from_secs(2) {
            assert!(Instant::now() < deadline, "still cleaning after 20 s: {last} segments cleaned");
            std::thread::sleep(Duration::from_millis(100));
            let now = segments_cleaned(&shared);
            if now != last {
                (last, quiet_since) = (now, Instant::now());
            }
        }
        stop_ticks.store(true, Ordering::Relaxed);
        ticker.join().expect("ticker");
        background.stop();
        let mut fs = shared.0.lock().unwrap_or_else(PoisonError::into_inner);
        for (name, data) in &files {
            let ino = fs.lookup(ROOT_INO, name.as_bytes()).expect("lookup").ino;
            assert!(fs.read(ino, 0, data.len() + 1).expect("read") == *data, "{name} reads back");
        }
    }

    /// A mount's lock, as the FUSE adapter keeps it: the file system until
    /// the unmount takes it away, EIO for every call after. It counts the
    /// calls made through it and, at call number `unmount_at`, unmounts
    /// first: an unmount landing at that exact point of the cleaner's work.
    #[derive(Clone)]
    struct Unmountable {
        fs: Arc<Mutex<Option<FileSystem<Lfs>>>>,
        calls: Arc<std::sync::atomic::AtomicUsize>,
        unmount_at: usize,
    }

    impl Unmountable {
        /// The file system on `disk`, mounted, unmounting at call
        /// `unmount_at` (0: never).
        fn mount(disk: Arc<MemDisk>, unmount_at: usize) -> Unmountable {
            let lfs = Lfs::mount(disk, MountOptions::default()).expect("mount");
            Unmountable {
                fs: Arc::new(Mutex::new(Some(FileSystem::new(lfs)))),
                calls: Arc::new(std::sync::atomic::AtomicUsize::new(0)),
                unmount_at,
            }
        }

        fn unmount(&self) {
            let fs = self.fs.lock().unwrap_or_else(PoisonError::into_inner).take();
            if let Some(mut fs) = fs {
                fs.unmount().expect("unmount");
            }
        }

        /// Unlinks `f{n}` and fsyncs the root, if still mounted: a partial
        /// segment, which wakes the cleaner when cleaning is wanted (a write
        /// could fail with ENOSPC: no cleaner runs for the writers here).
        fn wake(&self, n: usize) {
            let mut guard = self.fs.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(fs) = guard.as_mut() {
                fs.unlink(ROOT_INO, format!("f{n}").as_bytes()).expect("unlink");
                fs.fsync(ROOT_INO, false).expect("fsync");
            }
        }

        /// Wakes the cleaner (after spawning it) until it has begun a pass:
        /// a wake-up that comes before it waits is missed, and it would
        /// only start after its half-second timeout, with another call.
        fn until_a_pass_begins(&self) {
            let deadline = Instant::now() + Duration::from_secs(10);
            let mut n = 1;
            while self.calls.load(Ordering::SeqCst) < 2 {
                assert!(Instant::now() < deadline, "no pass began");
                self.wake(n);
                n += 2;
                std::thread::sleep(Duration::from_millis(5));
            }
        }
    }

    impl LfsAccess for Unmountable {
        fn with_lfs<R>(&self, op: impl FnOnce(&mut Lfs) -> fslab::Result<R>) -> fslab::Result<R> {
            if self.calls.fetch_add(1, Ordering::SeqCst) + 1 == self.unmount_at {
                self.unmount();
            }
            match self.fs.lock().unwrap_or_else(PoisonError::into_inner).as_mut() {
                Some(fs) => op(fs.storage()),
                None => Err(fslab::error::errno(libc::EIO, "file system is unmounted")),
            }
        }

        fn is_unmounted(&self) -> bool {
            self.fs.lock().unwrap_or_else(PoisonError::into_inner).is_none()
        }
    }

    /// An image whose segments are all about half dead and whose clean
    /// segments are below the high-water mark: one-block files written
    /// round-robin, every other one deleted.
    fn half_dead_image() -> Vec<u8> {
        static IMAGE: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
        IMAGE.get_or_init(make_half_dead_image).clone()
    }

    fn make_half_dead_image() -> Vec<u8> {
        let disk = Arc::new(MemDisk::new(32 << 20));
        let mkfs = MkfsOptions { block_size: 4096, segment_size: 128 << 10 };
        fslab::mkfs_lfs(disk.clone(), &mkfs, Default::default()).expect("mkfs");
        let mut fs = FileSystem::new(Lfs::mount(disk.clone(), MountOptions::default()).expect("mount"));
        let c = Creds::default();
        let mut made = 0;
        for i in 0..10_000 {
            let name = format!("f{i}");
            let Ok(inode) = fs.mknod(ROOT_INO, name.as_bytes(), kind::REG | 0o644, 0, c) else { break };
            if fs.write(inode.ino, 0, &[i as u8; 4096]).is_err() {
                break;
            }
            made += 1;
            if made % 64 == 0 {
                fs.sync().expect("sync");
            }
        }
        for i in (0..made).step_by(2) {
            fs.unlink(ROOT_INO, format!("f{i}").as_bytes()).expect("unlink");
        }
        fs.unmount().expect("unmount");
        disk.snapshot()
    }

    /// A cleaner over shared access reads the blocks it moves without the
    /// file system's lock (`Locked::markv`) while a writer rewrites and
    /// removes files in the segments it cleans: every file reads back as
    /// last written, and the cleaner moved blocks.
    #[test]
    fn files_rewritten_while_the_cleaner_moves_their_blocks_read_back_as_last_written() {
        let disk = Arc::new(MemDisk::from_bytes(half_dead_image()));
        let options = MountOptions { cache_bytes: 1 << 20, ..MountOptions::default() };
        let fs = FileSystem::new(Lfs::mount(disk, options).expect("mount"));
        let shared = Shared(Arc::new(Mutex::new(fs)));
        // The odd files survive in the image, each 4 KiB of its number.
        let files: HashMap<u32, Vec<u8>> = {
            let mut fs = shared.0.lock().unwrap_or_else(PoisonError::into_inner);
            (1..10_000u32)
                .step_by(2)
                .take_while(|i| fs.lookup(ROOT_INO, format!("f{i}").as_bytes()).is_ok())
                .map(|i| (i, vec![i as u8; 4096]))
                .collect()
        };
        let count = files.len() as u32;
        assert!(count > 1_000, "the image holds {count} files");
        let stop = Arc::new(AtomicBool::new(false));
        let writer = {
            let (shared, stop, mut files) = (shared.clone(), stop.clone(), files);
            std::thread::spawn(move || {
                let mut rng = SmallRng::seed_from_u64(5);
                while !stop.load(Ordering::Relaxed) {
                    let i = 2 * rng.gen_range(0..count) + 1;
                    let name = format!("f{i}");
                    let mut fs = shared.0.lock().unwrap_or_else(PoisonError::into_inner);
                    let Ok(inode) = fs.lookup(ROOT_INO, name.as_bytes()) else { continue };
                    if rng.gen_bool(0.2) {
                        fs.unlink(ROOT_INO, name.as_bytes()).expect("unlink");
                        files.remove(&i);
                        continue;
                    }
                    let data: Vec<u8> = (0..4096).map(|_| rng.gen()).collect();
                    match fs.write(inode.ino, 0, &data) {
                        Ok(_) => {
                            files.insert(i, data);
                        }
                        Err(e) if e.errno() == libc::ENOSPC => {}
                        Err(e) => panic!("write f{i}: {e}"),
                    }
                }
                files
            })
        };
        let mut cleaner = Cleaner::new(policy::by_name("greedy").expect("greedy"));
        let mut locked = Locked::new(shared.clone()).expect("locked");
        let moved = |shared: &Shared| {
            shared.with_lfs(|lfs| Ok(lfs.cleaner_report().total.blocks_moved)).expect("report")
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        while moved(&shared) < 2_000 && Instant::now() < deadline {
            cleaner.pass(&mut locked).expect("a cleaning pass");
        }
        stop.store(true, Ordering::Relaxed);
        let files = writer.join().expect("writer");
        let total = moved(&shared);
        assert!(total >= 2_000, "the cleaner moved only {total} blocks");
        let mut fs = shared.0.lock().unwrap_or_else(PoisonError::into_inner);
        for (i, want) in &files {
            let inode = fs.lookup(ROOT_INO, format!("f{i}").as_bytes()).expect("lookup");
            assert!(
                fs.read(inode.ino, 0, 4096).expect("read") == *want,
                "f{i} differs from what was written"
            );
        }
    }

    /// What the background cleaner said, kept for the test.
    fn spawn_recording(access: Unmountable) -> (Background, Arc<Mutex<Vec<String>>>) {
        let said = Arc::new(Mutex::new(Vec::new()));
        let sink = said.clone();
        let cleaner = Cleaner::new(policy::by_name("greedy").expect("greedy"));
        let background = Background::spawn_reporting(access, cleaner, move |line| {
            sink.lock().unwrap_or_else(PoisonError::into_inner).push(line.to_string())
        })
        .expect("spawn");
        (background, said)
    }

    /// Regression: an unmount that came while the background cleaner was
    /// in the middle of a pass made it log "cleaner (hot-cold) stopped:
    /// file system is unmounted (Input/output error)" (about one unmount
    /// in 150 of a small busy mount), and one that came during a move made
    /// it set segments aside as holding unreadable blocks. Here the unmount
    /// lands at every call of a pass in turn (and, past its last call,
    /// while the thread waits for work): the cleaner must end without a
    /// word.
    #[test]
    fn an_unmount_at_any_point_of_a_pass_ends_the_cleaner_without_a_word() {
        let image = half_dead_image();
        let mut calls_in_a_pass = 0;
        for unmount_at in 2.. {
            let disk = Arc::new(MemDisk::from_bytes(image.clone()));
            let access = Unmountable::mount(disk, unmount_at);
            let (background, said) = spawn_recording(access.clone());
            access.until_a_pass_begins();
            // Until the unmount happened, or the passes are over and the
            // thread waits (no call for a while, less than its timeout):
            // then unmount under it.
            let mut last = (access.calls.load(Ordering::SeqCst), Instant::now());
            while !access.is_unmounted() && last.1.elapsed() < Duration::from_millis(400) {
                std::thread::sleep(Duration::from_millis(2));
                let now = access.calls.load(Ordering::SeqCst);
                if now != last.0 {
                    last = (now, Instant::now());
                }
            }
            let in_pass = !access.is_unmounted();
            access.unmount();
            background.stop();
            let said = said.lock().unwrap_or_else(PoisonError::into_inner).clone();
            assert!(said.is_empty(), "unmount at call {unmount_at}: the cleaner said {said:?}");
            if in_pass {
                calls_in_a_pass = access.calls.load(Ordering::SeqCst);
                break;
            }
        }
        assert!(calls_in_a_pass > 8, "the pass did real work: {calls_in_a_pass} calls");
    }

    /// The mount stops the cleaner before its final checkpoint: stopping
    /// must end a pass in progress at its next call, say nothing, and leave
    /// the file system whole; and a cleaner waiting for work must not make
    /// the unmount wait out its half-second timeout.
    #[test]
    fn stopping_the_cleaner_ends_its_pass_quietly_and_wakes_it_at_once() {
        let image = half_dead_image();
        for stop_after in [3, 6, 12] {
            let disk = Arc::new(MemDisk::from_bytes(image.clone()));
            let access = Unmountable::mount(disk.clone(), 0);
            let (background, said) = spawn_recording(access.clone());
            access.until_a_pass_begins();
            let deadline = Instant::now() + Duration::from_secs(10);
            while access.calls.load(Ordering::SeqCst) < stop_after {
                assert!(Instant::now() < deadline, "the cleaner never reached call {stop_after}");
                std::thread::yield_now();
            }
            background.stop();
            let calls = access.calls.load(Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(20));
            assert_eq!(access.calls.load(Ordering::SeqCst), calls, "a call after stop returned");
            let said = said.lock().unwrap_or_else(PoisonError::into_inner).clone();
            assert!(said.is_empty(), "stopped after call {stop_after}: the cleaner said {said:?}");
            access.unmount();
            let report = fslab_check::check(disk.as_ref(), &fslab_check::Options::default(), &mut |_| {})
                .expect("fsck runs");
            assert!(report.is_clean(), "stopped after call {stop_after}: fsck: {:?}", report.problems);
        }
        // Waiting for work (a fresh disk wants no cleaning): stop wakes it.
        let disk = Arc::new(MemDisk::new(8 << 20));
        let mkfs = MkfsOptions { block_size: 4096, segment_size: 128 << 10 };
        fslab::mkfs_lfs(disk.clone(), &mkfs, Default::default()).expect("mkfs");
        let fastest = (0..3)
            .map(|_| {
                let access = Unmountable::mount(disk.clone(), 0);
                let (background, _) = spawn_recording(access.clone());
                std::thread::sleep(Duration::from_millis(50));
                let started = Instant::now();
                background.stop();
                let took = started.elapsed();
                access.unmount();
                took
            })
            .min()
            .unwrap_or_default();
        assert!(fastest < Duration::from_millis(250), "stopping an idle cleaner took {fastest:?}");
    }
}
