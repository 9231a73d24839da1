//! The in-process cleaner of a mount: a thread that wakes when a partial
//! segment is written while cleaning is wanted (or after a quiet half
//! second) and cleans while the clean segments are below the high-water
//! mark, taking the file system's lock one mechanism call at a time so
//! that requests are served in between.

use crate::driver::Cleaner;
use crate::mechanism::{LfsAccess, Locked};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// A running background cleaner. Dropping it stops the thread.
pub struct Background {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Background {
    /// Starts cleaning `access` with `cleaner`. The thread ends by itself
    /// when the file system stops answering (it was unmounted).
    pub fn spawn<A>(access: A, mut cleaner: Cleaner) -> std::io::Result<Background>
    where
        A: LfsAccess + Send + 'static,
    {
        let mut mechanism = Locked::new(access).map_err(|e| std::io::Error::other(e.to_string()))?;
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = stop.clone();
        let thread = std::thread::Builder::new().name("fslab-cleaner".into()).spawn(move || {
            // What `cleaning_wanted` said when the last pass began: the
            // checkpoint after a pass wakes this thread too, and a pass that
            // gained nothing is not repeated until users write or delete
            // (`CleaningWanted::repeats`).
            let mut last_start = None;
            while !stopping.load(Ordering::Relaxed) {
                // Partial segments written while no cleaning is wanted do
                // not wake it, and the answer comes without the file
                // system's lock: the common case must cost writers nothing.
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
                            eprintln!(
                                "fslab: cleaner ({}): segment {seg} holds a block that cannot be read; \
                                 it is left uncleaned (run fslab fsck on the unmounted image)",
                                cleaner.policy_name()
                            );
                        }
                    }
                    Err(e) if e.errno() == libc::EIO => {
                        eprintln!("fslab: cleaner ({}) stopped: {e}", cleaner.policy_name());
                        return;
                    }
                    Err(e) => eprintln!("fslab: cleaner ({}): {e}", cleaner.policy_name()),
                }
            }
        })?;
        Ok(Background { stop, thread: Some(thread) })
    }

    /// Stops the thread and waits for it.
    pub fn stop(mut self) {
        self.halt();
    }

    fn halt(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
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
}
