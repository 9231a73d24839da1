//! The lock around the file system, shared by the kernel-request threads,
//! the tick thread, the write-behind thread and the shutdown path: held
//! exclusively by every call that may change anything, and shared by the
//! calls that answer from memory alone (`Shared::try_shared`).

use fslab::durable::Ticket;
use fslab::error::errno;
use fslab::storage::StorageManager;
use fslab::ufs::FileSystem;
use fslab::Result;
use std::cell::RefCell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{
    Arc, Condvar, Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard, TryLockError,
};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

mod counters;
pub use counters::LockStats;
use counters::{LockCounters, Mode};

/// A clonable handle on the lock around a mounted file system, for code
/// outside the adapter that must call the library while the kernel's
/// requests are served (the cleaner). Each call takes the lock for itself
/// alone, exactly as one kernel request does; once the file system is
/// unmounted (or broken) every call fails with EIO, so a holder learns that
/// the mount is gone without being told.
pub struct FsHandle<S: StorageManager> {
    shared: Arc<Shared<S>>,
}

impl<S: StorageManager> Clone for FsHandle<S> {
    fn clone(&self) -> Self {
        FsHandle { shared: Arc::clone(&self.shared) }
    }
}

impl<S: StorageManager> FsHandle<S> {
    /// Runs `op` on the file system under its lock. Fails with EIO once the
    /// file system is unmounted or broken; a panic in `op` becomes EIO.
    pub fn with<T>(&self, op: impl FnOnce(&mut FileSystem<S>) -> Result<T>) -> Result<T> {
        self.shared.with_as("the cleaner or the control socket", op)
    }

    /// How the lock has been used since mount.
    pub fn lock_stats(&self) -> LockStats {
        self.shared.lock_stats()
    }

    /// Whether the file system has been unmounted (rather than stopped by
    /// an internal error): calls fail from now on, and that is no fault.
    pub fn is_unmounted(&self) -> bool {
        let state = self.shared.read();
        state.fs.is_none() && !self.shared.is_broken()
    }
}

thread_local! {
    /// While this thread runs [`deferring`]: the durability its calls
    /// through [`Shared::with_as`] promised, gathered rather than waited for.
    static DEFERRED: RefCell<Option<Ticket>> = const { RefCell::new(None) };
}

/// Runs `work`, whose calls through [`Shared::with_as`] on this thread gather
/// what they promised durable instead of waiting for it; returns its result
/// and the gathered ticket, which the caller must wait for before it
/// acknowledges anything `work` did (a ring queue, whose thread serves
/// every caller of its CPU, hands it to another thread).
pub fn deferring<T>(work: impl FnOnce() -> T) -> (T, Ticket) {
    /// Ends the gathering however `work` ends.
    struct Gathering;
    impl Drop for Gathering {
        fn drop(&mut self) {
            DEFERRED.with(|deferred| deferred.borrow_mut().take());
        }
    }
    DEFERRED.with(|deferred| *deferred.borrow_mut() = Some(Ticket::none()));
    let gathering = Gathering;
    let value = work();
    let ticket = DEFERRED.with(|deferred| deferred.borrow_mut().take()).unwrap_or_default();
    drop(gathering);
    (value, ticket)
}

/// Work to finish before the final checkpoint ([`Shared::before_unmount`]).
type BeforeUnmount = Box<dyn FnOnce() + Send>;

/// A mounted file system behind one reader-writer lock.
///
/// Lifecycle: *serving* (the `FileSystem` is present; every call takes the
/// lock, exclusively or shared, runs one library call and lets go) →
/// *unmounted* (after [`Shared::shutdown`]; the `FileSystem` is gone and
/// calls fail with EIO).
/// A library call that panics moves the file system to *broken*: calls fail
/// with EIO, ticks stop, and shutdown skips the final checkpoint so that the
/// image stays at its last consistent checkpoint rather than recording
/// whatever half-done state the panic left in memory. Shutdown first runs,
/// without the lock, what was registered with [`Shared::before_unmount`]
/// (stopping the mount's cleaner thread), so that nothing else works on the
/// file system while its last checkpoint is written.
///
/// Locking: `state` guards the file system; `broken` is read without it.
/// `signals` is taken alone, never while waiting for `state`: `changed` is
/// signalled when the state leaves *serving*, which wakes the tick thread
/// so it can stop; `written` when a request leaves data to write behind,
/// or the state leaves *serving*, which wakes the write-behind thread.
pub struct Shared<S: StorageManager> {
    state: RwLock<State<S>>,
    /// Set when a library call panicked: calls fail from then on.
    broken: AtomicBool,
    signals: Mutex<Signals>,
    changed: Condvar,
    written: Condvar,
    /// Kept open while the kernel's mount serves, closed when it is gone,
    /// before the final checkpoint ([`Shared::close_while_serving`]).
    while_serving: Mutex<Vec<std::fs::File>>,
    /// Run once, in order, when shutdown begins.
    before_unmount: Mutex<Vec<BeforeUnmount>>,
    /// How `state` has been used, for `fslab stat`.
    counters: LockCounters,
}

/// The background threads, each woken by its own condition variable.
#[derive(Clone, Copy)]
enum Background {
    /// Periodic work (`FileSystem::tick`), every tick interval.
    Tick,
    /// Writing out dirty data between requests (`FileSystem::write_behind`).
    WriteBehind,
}

/// How long the write-behind thread sleeps unless woken: only a safety net,
/// since requests wake it when there is work.
const WRITE_BEHIND_POLL: Duration = Duration::from_secs(1);

struct State<S: StorageManager> {
    fs: Option<FileSystem<S>>,
    /// What the one and only unmount returned, once it has run.
    unmounted: Option<std::result::Result<(), String>>,
}

/// Why the background threads were woken, so that a wake-up sent while a
/// thread was busy is not lost.
#[derive(Default)]
struct Signals {
    /// A request left data to write behind.
    write_behind: bool,
    /// The file system left *serving*.
    stopped: bool,
}

impl<S: StorageManager> Shared<S> {
    /// A serving file system, with group commit.
    #[cfg(test)]
    pub fn new(fs: FileSystem<S>) -> Shared<S> {
        Shared::with_group_commit(fs, true)
    }

    /// A serving file system; with `group_commit`, requests wait for
    /// durability after letting go of the lock (`with`), so that fsyncs
    /// and synchronous operations finishing together share one flush
    /// (group commit); without, each waits for its own holding the lock,
    /// one flush per operation — the baseline group commit is measured
    /// against.
    pub fn with_group_commit(mut fs: FileSystem<S>, group_commit: bool) -> Shared<S> {
        fs.wait_outside(group_commit);
        Shared {
            state: RwLock::new(State { fs: Some(fs), unmounted: None }),
            broken: AtomicBool::new(false),
            signals: Mutex::new(Signals::default()),
            changed: Condvar::new(),
            written: Condvar::new(),
            while_serving: Mutex::new(Vec::new()),
            before_unmount: Mutex::new(Vec::new()),
            counters: LockCounters::new(),
        }
    }

    /// Runs `work` when shutdown begins, before the final checkpoint and
    /// without the file system's lock (so it may still call through a
    /// [`FsHandle`] and wait for threads that do).
    pub fn before_unmount(&self, work: BeforeUnmount) {
        self.before_unmount.lock().unwrap_or_else(PoisonError::into_inner).push(work);
    }

    /// Keeps `file` open (with those kept before) until the mount stops
    /// serving requests.
    pub fn keep_while_serving(&self, file: std::fs::File) {
        self.while_serving.lock().unwrap_or_else(PoisonError::into_inner).push(file);
    }

    /// Closes the files kept while serving (and so releases their locks).
    fn close_while_serving(&self) {
        drop(std::mem::take(&mut *self.while_serving.lock().unwrap_or_else(PoisonError::into_inner)));
    }

    /// The file system held exclusively.
    fn write(&self) -> RwLockWriteGuard<'_, State<S>> {
        self.counters.take(
            Mode::Exclusive,
            || self.taken_now(self.state.try_write()),
            || self.recovered(self.state.write()),
        )
    }

    /// The file system held shared.
    fn read(&self) -> RwLockReadGuard<'_, State<S>> {
        self.counters.take(
            Mode::Shared,
            || self.taken_now(self.state.try_read()),
            || self.recovered(self.state.read()),
        )
    }

    /// A guard from a lock that waited. A poisoned lock means our own code
    /// panicked while holding it (the library's panics are caught below):
    /// the file system is treated as broken.
    fn recovered<G>(&self, taken: std::result::Result<G, PoisonError<G>>) -> G {
        taken.unwrap_or_else(|poisoned| {
            self.broken.store(true, Ordering::Relaxed);
            poisoned.into_inner()
        })
    }

    /// A guard from a lock that did not wait, or `None` if it was taken.
    fn taken_now<G>(&self, tried: std::sync::TryLockResult<G>) -> Option<G> {
        match tried {
            Ok(guard) => Some(guard),
            Err(TryLockError::Poisoned(poisoned)) => Some(self.recovered(Err(poisoned))),
            Err(TryLockError::WouldBlock) => None,
        }
    }

    /// How the lock has been used since mount.
    pub fn lock_stats(&self) -> LockStats {
        self.counters.snapshot()
    }

    fn is_broken(&self) -> bool {
        self.broken.load(Ordering::Relaxed)
    }

    fn signals(&self) -> MutexGuard<'_, Signals> {
        self.signals.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Marks the file system broken after a panic in a library call, before
    /// `state` (the guard the call ran under) lets the next caller in, and
    /// wakes the background threads to stop.
    fn break_down<G>(&self, state: G) {
        self.broken.store(true, Ordering::Relaxed);
        drop(state);
        self.stopped();
    }

    /// Runs `op` holding the file system shared, beside other such calls:
    /// a call that answers from memory alone (`FileSystem::getattr_cached`
    /// and its kin). `None` when `op` cannot answer, or the file system is
    /// not serving: the caller then asks [`Shared::with_as`], which answers
    /// whatever the state. A panic in `op` marks the file system broken.
    pub fn try_shared<T>(&self, op: impl FnOnce(&FileSystem<S>) -> Option<T>) -> Option<T> {
        let state = self.read();
        if self.is_broken() {
            return None;
        }
        let fs = state.fs.as_ref()?;
        match catch_unwind(AssertUnwindSafe(|| op(fs))) {
            Ok(answer) => {
                if answer.is_none() {
                    self.counters.declined();
                }
                answer
            }
            Err(_) => {
                self.break_down(state);
                None
            }
        }
    }

    /// [`Shared::with_as`] for a test's own calls.
    #[cfg(test)]
    pub fn with<T>(&self, op: impl FnOnce(&mut FileSystem<S>) -> Result<T>) -> Result<T> {
        self.with_as("a test", op)
    }

    /// Runs one library call holding the file system exclusively, on
    /// behalf of `by` (a request's name, which the lock's counters give if
    /// it holds the lock longest). Fails with EIO once the file system is
    /// unmounted or broken; a panic in `op` becomes EIO and marks the file
    /// system broken.
    pub fn with_as<T>(
        &self,
        by: &'static str,
        op: impl FnOnce(&mut FileSystem<S>) -> Result<T>,
    ) -> Result<T> {
        let mut state = self.write();
        let held = Instant::now();
        if self.is_broken() {
            return Err(errno(libc::EIO, "file system stopped after an internal error"));
        }
        let Some(fs) = state.fs.as_mut() else {
            return Err(errno(libc::EIO, "file system is unmounted"));
        };
        match catch_unwind(AssertUnwindSafe(|| op(fs))) {
            Ok(result) => {
                let due = fs.write_behind_due();
                let durable = fs.take_ticket();
                drop(state);
                self.counters.held(by, held);
                // The segment write a writer would otherwise do itself, once
                // the start-write threshold is reached, happens on another
                // core while the next request is on its way.
                if due {
                    self.signals().write_behind = true;
                    self.written.notify_one();
                }
                // What the call promised durable, waited for without the
                // lock: the next requests run meanwhile, and those that
                // wait for the same flush share it. A thread that defers
                // its waits (`deferring`) gathers it instead.
                let value = result?;
                let mut durable = Some(durable);
                DEFERRED.with(|deferred| {
                    if let Some(gathered) = deferred.borrow_mut().as_mut() {
                        *gathered = std::mem::take(gathered).join(durable.take().unwrap_or_default());
                    }
                });
                if let Some(durable) = durable {
                    durable.wait()?;
                }
                Ok(value)
            }
            Err(_) => {
                self.break_down(state);
                Err(errno(libc::EIO, "internal error in the file system"))
            }
        }
    }

    /// A handle other threads of the mounting program (a cleaner) keep to
    /// reach the file system through this lock.
    pub fn handle(self: &Arc<Self>) -> FsHandle<S> {
        FsHandle { shared: Arc::clone(self) }
    }

    /// Unmounts the file system: the final checkpoint. Runs the library's
    /// `unmount` exactly once, however often and from whichever thread this
    /// is called; later calls return the first call's result.
    pub fn shutdown(&self) -> std::result::Result<(), String> {
        // No request can come any more; what waits for the mount to be gone
        // need not wait for the checkpoint too.
        self.close_while_serving();
        let work = std::mem::take(&mut *self.before_unmount.lock().unwrap_or_else(PoisonError::into_inner));
        for work in work {
            work();
        }
        let mut state = self.write();
        if let Some(done) = &state.unmounted {
            return done.clone();
        }
        let result = match state.fs.take() {
            None => Ok(()),
            Some(_) if self.is_broken() => {
                Err("an internal error stopped the file system; the image is left \
                 at its last checkpoint"
                    .to_string())
            }
            Some(mut fs) => match catch_unwind(AssertUnwindSafe(|| fs.unmount())) {
                Ok(Ok(())) => Ok(()),
                Ok(Err(e)) => Err(format!("unmount failed: {e}")),
                Err(_) => Err("internal error during the final checkpoint".to_string()),
            },
        };
        state.unmounted = Some(result.clone());
        drop(state);
        self.stopped();
        result
    }

    /// Wakes the background threads so that they see the file system is no
    /// longer serving.
    fn stopped(&self) {
        self.signals().stopped = true;
        self.changed.notify_all();
        self.written.notify_all();
    }

    /// Starts a thread that calls the library's `tick` every `interval`
    /// while the file system is serving, and ends when it stops serving.
    pub fn start_ticker(self: &Arc<Self>, interval: Duration) -> std::io::Result<JoinHandle<()>>
    where
        S: 'static,
    {
        self.start(Background::Tick, interval)
    }

    /// Starts a thread that writes dirty data out between requests whenever
    /// one leaves enough waiting (`FileSystem::write_behind_due`), and ends
    /// when the file system stops serving.
    pub fn start_write_behind(self: &Arc<Self>) -> std::io::Result<JoinHandle<()>>
    where
        S: 'static,
    {
        self.start(Background::WriteBehind, WRITE_BEHIND_POLL)
    }

    /// Starts a thread named `name` that runs `work`, without the lock,
    /// every `interval` while the file system is serving, and ends when it
    /// stops serving or `work` returns false.
    pub fn start_every(
        self: &Arc<Self>,
        name: &str,
        interval: Duration,
        mut work: impl FnMut() -> bool + Send + 'static,
    ) -> std::io::Result<JoinHandle<()>>
    where
        S: 'static,
    {
        let shared = Arc::clone(self);
        std::thread::Builder::new().name(name.to_string()).spawn(move || {
            while shared.serving_after(interval) {
                if !work() {
                    return;
                }
            }
        })
    }

    /// Waits `interval`, or until the file system stops serving; whether
    /// it still serves.
    fn serving_after(&self, interval: Duration) -> bool {
        let signals = self.signals();
        let signals = self
            .changed
            .wait_timeout_while(signals, interval, |s| !s.stopped)
            .unwrap_or_else(PoisonError::into_inner)
            .0;
        !signals.stopped
    }

    fn start(self: &Arc<Self>, kind: Background, interval: Duration) -> std::io::Result<JoinHandle<()>>
    where
        S: 'static,
    {
        let shared = Arc::clone(self);
        let name = match kind {
            Background::Tick => "fslab-tick",
            Background::WriteBehind => "fslab-write-behind",
        };
        std::thread::Builder::new()
            .name(name.to_string())
            .spawn(move || shared.background_loop(kind, interval))
    }

    fn background_loop(&self, kind: Background, interval: Duration) {
        let what = match kind {
            Background::Tick => "periodic checkpoint",
            Background::WriteBehind => "write-behind",
        };
        loop {
            {
                let signals = self.signals();
                let mut signals = match kind {
                    Background::Tick => self.changed.wait_timeout_while(signals, interval, |s| !s.stopped),
                    Background::WriteBehind => {
                        self.written.wait_timeout_while(signals, interval, |s| !s.stopped && !s.write_behind)
                    }
                }
                .unwrap_or_else(PoisonError::into_inner)
                .0;
                if signals.stopped {
                    return;
                }
                signals.write_behind = false;
            }
            let mut state = self.write();
            let held = Instant::now();
            if self.is_broken() {
                return;
            }
            let Some(fs) = state.fs.as_mut() else { return };
            let work = || match kind {
                Background::Tick => fs.tick(),
                Background::WriteBehind => fs.write_behind(),
            };
            let outcome = catch_unwind(AssertUnwindSafe(work));
            self.counters.held(what, held);
            match outcome {
                Ok(Ok(())) => {}
                // FFS keeps what failed to go dirty, so the next write or
                // fsync meets the error again; LFS, whose failed segment
                // write loses what it had placed, refuses every change from
                // then on. Either way the next fsync reports it.
                Ok(Err(e)) => {
                    // Reported without the lock: a log that blocks or
                    // fails must not hold up or break the requests.
                    drop(state);
                    crate::report_line(&format!("fslab: {what} failed: {e}"));
                    if let Background::WriteBehind = kind {
                        // Every request would wake it to fail again: rest
                        // for an interval, woken early only by a stop.
                        if !self.serving_after(interval) {
                            return;
                        }
                    }
                }
                Err(_) => {
                    self.break_down(state);
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod stress;

#[cfg(test)]
mod tests {
    use super::*;
    use fslab::format::ROOT_INO;
    use fslab::storage::MemStorage;

    /// Four threads, each writing and fsyncing its own file ten times, on
    /// a device whose flush takes 20 ms: requests wait for durability after
    /// letting go of the lock, so fsyncs finishing together share a flush
    /// (group commit) and the device sees fewer flushes than when each
    /// fsync flushed under the lock (one per LFS fsync, two per FFS one).
    #[test]
    fn fsyncs_of_requests_running_together_share_flushes() {
        use disk::{CountingDisk, MemDisk};
        use fslab::ufs::Creds;
        use std::time::Duration;
        const THREADS: u64 = 4;
        const FSYNCS: u64 = 10;

        fn run<S: StorageManager + 'static>(fs: FileSystem<S>, disk: &CountingDisk<MemDisk>) -> u64 {
            let shared = Arc::new(Shared::new(fs));
            let before = disk.flushes();
            let threads: Vec<_> = (0..THREADS)
                .map(|t| {
                    let handle = shared.handle();
                    std::thread::spawn(move || {
                        let name = format!("f{t}");
                        let ino = handle
                            .with(|fs| fs.mknod(ROOT_INO, name.as_bytes(), 0o100644, 0, Creds::default()))
                            .expect("create")
                            .ino;
                        for i in 0..FSYNCS {
                            handle.with(|fs| fs.write(ino, i * 4096, &[t as u8; 4096])).expect("write");
                            handle.with(|fs| fs.fsync(ino, false)).expect("fsync");
                        }
                    })
                })
                .collect();
            for thread in threads {
                thread.join().expect("thread");
            }
            let flushes = disk.flushes() - before;
            shared.shutdown().expect("unmount");
            flushes
        }

        let layouts: [(&str, u64); 2] = [("lfs", 1), ("ffs", 2)];
        for (layout, per_fsync) in layouts {
            let image = Arc::new(MemDisk::new(64 << 20));
            match layout {
                "lfs" => fslab::mkfs_lfs(image.clone(), &Default::default(), Creds::default()),
                _ => fslab::mkfs_ffs(image.clone(), &Default::default(), Creds::default()),
            }
            .expect("mkfs");
            let disk = Arc::new(CountingDisk::with_flush_delay(
                MemDisk::from_bytes(image.snapshot()),
                Duration::from_millis(20),
            ));
            let flushes = match layout {
                "lfs" => {
                    let lfs = fslab::lfs::Lfs::mount(disk.clone(), Default::default()).expect("mount");
                    run(FileSystem::new(lfs), &disk)
                }
                _ => {
                    let options = fslab::ffs::MountOptions {
                        integrity: fslab::ffs::Integrity::Async,
                        ..Default::default()
                    };
                    let ffs = fslab::ffs::Ffs::mount(disk.clone(), options).expect("mount");
                    run(FileSystem::new(ffs), &disk)
                }
            };
            let alone = THREADS * FSYNCS * per_fsync;
            // An LFS fsync only queues its partial segment and waits
            // outside: most of its flushes are shared. An FFS one must
            // also put a barrier between the file's blocks and its inode
            // under the lock, which only a waiter outside can share.
            let shared_enough = match layout {
                "lfs" => flushes * 4 <= alone * 3,
                _ => flushes < alone,
            };
            assert!(
                shared_enough,
                "{layout}: {flushes} flushes for {} fsyncs; each alone would make {alone}",
                THREADS * FSYNCS
            );
        }
    }

    /// What must stop before the final checkpoint (the mount's cleaner
    /// thread) runs when shutdown begins, once, with the file system still
    /// there to call, and before anything else can see it unmounted.
    #[test]
    fn shutdown_runs_what_must_stop_first_while_the_file_system_is_still_there() {
        let shared = Arc::new(Shared::new(FileSystem::new(MemStorage::new(4096))));
        let handle = shared.handle();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        shared.before_unmount(Box::new(move || {
            let answered = handle.with(|fs| fs.getattr(ROOT_INO).map(|_| ())).is_ok();
            log.lock().unwrap_or_else(PoisonError::into_inner).push((answered, handle.is_unmounted()));
        }));
        let handle = shared.handle();
        assert!(!handle.is_unmounted());
        shared.shutdown().expect("shutdown");
        shared.shutdown().expect("a second shutdown returns the first one's result");
        assert_eq!(*seen.lock().unwrap_or_else(PoisonError::into_inner), vec![(true, false)]);
        assert!(handle.is_unmounted(), "unmounted, not broken");
        assert_eq!(handle.with(|_| Ok(())).err().map(|e| e.errno()), Some(libc::EIO));
    }

    /// A panic in a library call, shared or exclusive, stops the file
    /// system: every later call fails with EIO (shared ones decline), and
    /// shutdown leaves the image at its last checkpoint.
    #[test]
    fn a_panic_in_a_call_holding_the_file_system_either_way_stops_it() {
        for shared_panics in [true, false] {
            let shared = Shared::new(FileSystem::new(MemStorage::new(4096)));
            assert!(shared.try_shared(|fs| Some(fs.getattr_cached(ROOT_INO))).is_some(), "serving");
            if shared_panics {
                let answer: Option<()> = shared.try_shared(|_| panic!("a shared call panics"));
                assert!(answer.is_none());
            } else {
                let answer: Result<()> = shared.with(|_| panic!("an exclusive call panics"));
                assert_eq!(answer.err().map(|e| e.errno()), Some(libc::EIO));
            }
            assert!(shared.try_shared(|_| Some(())).is_none(), "a shared call after the panic");
            assert_eq!(shared.with(|_| Ok(())).err().map(|e| e.errno()), Some(libc::EIO));
            assert!(shared.shutdown().is_err(), "no final checkpoint after a panic");
        }
    }
}
