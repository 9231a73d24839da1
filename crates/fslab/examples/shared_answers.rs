//! Library-level stat, lookup and cached read from several threads: how the
//! file system's own work scales when requests that answer from memory hold
//! it shared (`FileSystem::*_cached` under a read lock, as the FUSE adapter
//! runs them) against taking turns under the lock, with no FUSE and no
//! kernel in the way. Usage:
//! `cargo run --release -p fslab --example shared_answers -- [THREADS...]`
//! (default 1 2 4; LFS on a memory disk, 2,000 files of 4 KiB in one
//! directory, one second per run).

use disk::{BlockDevice, MemDisk};
use fslab::format::{Ino, ROOT_INO};
use fslab::lfs::{Lfs, MkfsOptions, MountOptions};
use fslab::ufs::{Access, Creds, FileSystem};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, RwLock, RwLockWriteGuard};
use std::time::{Duration, Instant};

const FILES: usize = 2000;
const RUN: Duration = Duration::from_secs(1);

/// One request of a reader: the stat, lookup and read of file `i`.
fn request_exclusive(fs: &mut FileSystem<Lfs>, dir: Ino, inos: &[Ino], i: usize) -> fslab::Result<()> {
    fs.getattr(inos[i])?;
    fs.lookup(dir, format!("file-{i:05}").as_bytes())?;
    fs.read_as(inos[i], 0, 4096, Access::NoAtime)?;
    Ok(())
}

/// The same from memory; `false` if any part was declined.
fn request_shared(fs: &FileSystem<Lfs>, dir: Ino, inos: &[Ino], i: usize) -> bool {
    fs.getattr_cached(inos[i]).is_some()
        && fs.lookup_cached(dir, format!("file-{i:05}").as_bytes()).is_some_and(|r| r.is_ok())
        && fs.read_cached(inos[i], 0, 4096, Access::NoAtime).is_some()
}

/// Requests a second by `threads` threads each running `one` on files in
/// turn.
fn rate(threads: usize, one: impl Fn(usize) -> bool + Sync) -> f64 {
    let done = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let start = Instant::now();
    std::thread::scope(|scope| {
        for t in 0..threads {
            let (done, stop, one) = (&done, &stop, &one);
            scope.spawn(move || {
                let mut i = t * 7919;
                let mut n = 0;
                while !stop.load(Ordering::Relaxed) {
                    i = (i + 7) % FILES;
                    if !one(i) {
                        panic!("a request failed or was declined");
                    }
                    n += 1;
                }
                done.fetch_add(n, Ordering::Relaxed);
            });
        }
        std::thread::sleep(RUN);
        stop.store(true, Ordering::Relaxed);
    });
    done.load(Ordering::Relaxed) as f64 / start.elapsed().as_secs_f64()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let threads: Vec<usize> = std::env::args().skip(1).map(|a| a.parse()).collect::<Result<_, _>>()?;
    let threads = if threads.is_empty() { vec![1, 2, 4] } else { threads };
    let dev: Arc<dyn BlockDevice> = Arc::new(MemDisk::new(256 << 20));
    fslab::mkfs_lfs(dev.clone(), &MkfsOptions::default(), Creds::default())?;
    let mut fs = FileSystem::new(Lfs::mount(dev, MountOptions::default())?);
    let dir = fs.mkdir(ROOT_INO, b"d", 0o755, Creds::default())?.ino;
    let mut inos = Vec::with_capacity(FILES);
    for i in 0..FILES {
        let ino = fs.mknod(dir, format!("file-{i:05}").as_bytes(), 0o100644, 0, Creds::default())?.ino;
        fs.write(ino, 0, &[i as u8; 4096])?;
        inos.push(ino);
    }
    for i in 0..FILES {
        request_exclusive(&mut fs, dir, &inos, i)?;
    }
    // Taking the lock exclusively for every request is taking turns, as
    // every request did under the adapter's one mutex.
    let lock = RwLock::new(fs);
    println!("{:>8} {:>16} {:>16} {:>8}", "threads", "turns req/s", "shared req/s", "ratio");
    for &t in &threads {
        let turns = rate(t, |i| request_exclusive(&mut exclusive(&lock), dir, &inos, i).is_ok());
        let shared =
            rate(t, |i| request_shared(&lock.read().unwrap_or_else(|e| e.into_inner()), dir, &inos, i));
        println!("{t:>8} {turns:>16.0} {shared:>16.0} {:>8.2}", shared / turns);
    }
    exclusive(&lock).unmount()?;
    Ok(())
}

/// The file system held exclusively.
fn exclusive(lock: &RwLock<FileSystem<Lfs>>) -> RwLockWriteGuard<'_, FileSystem<Lfs>> {
    lock.write().unwrap_or_else(|e| e.into_inner())
}
