//! Where a workload runs: the calls it may make, and the clock its phases
//! are timed by.
//!
//! A workload sees one type, [`Target`]: paths relative to its own root,
//! file handles, `fsync`, `sync`, a way to empty the caches between phases,
//! and `compute` for the application's own CPU time. Under it is a
//! [`Backend`] of one of three kinds:
//!
//! * [`library::Library`] — fslab's file system as a library on a
//!   `BlockDevice`: a `SimDisk` (virtual time) or an image file (wall time);
//! * [`raw::Raw`] — the device itself, no file system (files are extents);
//! * [`dir::Dir`] — any mounted directory (wall time): an fslab mount,
//!   kernel ext4 or xfs, fuse2fs, a plain temporary directory.
//!
//! On virtual time, [`Target`] charges the CPU cost model (`crate::cpu`)
//! for every call to the clock; the layout's own CPU work is charged by
//! the blocks it checksummed (`Backend::checksummed`), read after
//! each call. On wall time the host's CPU is real and nothing is charged.

pub mod dir;
pub mod library;
pub mod raw;

use crate::cpu::{Checksummed, CpuModel};
use disk::sim::Stats as DiskStats;
use disk::VirtualClock;
use fslab::lfs::clean::CleanerCounters;
use std::io;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A file handle a backend gave out.
pub type Fd = u64;

/// Space on a target, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Usage {
    /// What the file system could hold.
    pub total: u64,
    /// What is still free.
    pub free: u64,
}

impl Usage {
    /// The share in use, 0 to 1.
    pub fn utilization(&self) -> f64 {
        if self.total == 0 {
            return 0.0;
        }
        1.0 - self.free as f64 / self.total as f64
    }
}

/// The operations a workload may use, as a file system offers them.
/// Paths are relative to the backend's root, `/`-separated, without `.` or
/// `..`. Errors are `io::Error`s whose raw OS error is the errno where
/// there is one (ENOSPC, ENOENT…).
pub trait Backend {
    /// Whether the backend charges the copies between user and kernel
    /// itself (the raw device, whose transfers alternate with them).
    fn copies_itself(&self) -> bool {
        false
    }
    /// Whether the file system does a call's work on the calling thread
    /// (the library: on wall time only device writes may go to a thread of
    /// its own), so that the thread's CPU time is the file system's. A
    /// mounted directory works in a kernel or a daemon.
    fn works_on_the_callers_thread(&self) -> bool {
        false
    }
    /// Makes a directory.
    fn mkdir(&mut self, path: &str) -> io::Result<()>;
    /// Removes an empty directory.
    fn rmdir(&mut self, path: &str) -> io::Result<()>;
    /// Creates an empty regular file and opens it.
    fn create(&mut self, path: &str) -> io::Result<Fd>;
    /// Opens an existing file.
    fn open(&mut self, path: &str) -> io::Result<Fd>;
    /// Closes a handle.
    fn close(&mut self, fd: Fd) -> io::Result<()>;
    /// Writes `data` at `offset`.
    fn write(&mut self, fd: Fd, offset: u64, data: &[u8]) -> io::Result<()>;
    /// Reads `buf.len()` bytes at `offset` (short files read as zeros).
    fn read(&mut self, fd: Fd, offset: u64, buf: &mut [u8]) -> io::Result<()>;
    /// Makes one file durable.
    fn fsync(&mut self, fd: Fd) -> io::Result<()>;
    /// Sets an open file's length (`ftruncate(2)`): cuts it down, or
    /// extends it with a hole. The raw device has no files to cut.
    fn truncate(&mut self, _fd: Fd, _size: u64) -> io::Result<()> {
        Err(io::Error::from_raw_os_error(libc::EOPNOTSUPP))
    }
    /// Removes a file.
    fn unlink(&mut self, path: &str) -> io::Result<()>;
    /// Renames a file, replacing `to` if it exists (`rename(2)`).
    fn rename(&mut self, from: &str, to: &str) -> io::Result<()>;
    /// The size of the file at `path`, or `None` if there is none.
    fn stat(&mut self, path: &str) -> io::Result<Option<u64>>;
    /// Makes everything durable.
    fn sync(&mut self) -> io::Result<()>;
    /// Empties every cache between the workload and the device (a library
    /// file system unmounts and mounts again), so the next reads go to the
    /// disk. Returns false where it cannot (a mounted directory without
    /// root), which the report then says.
    fn drop_caches(&mut self) -> io::Result<bool>;
    /// Periodic work (LFS's checkpoints), about once a second of the
    /// target's time.
    fn tick(&mut self) -> io::Result<()> {
        Ok(())
    }
    /// Space and utilization.
    fn usage(&mut self) -> io::Result<Usage>;
    /// What the layout has checksummed so far (for the CPU model's
    /// checksum charge).
    fn checksummed(&mut self) -> Checksummed {
        Checksummed::default()
    }
    /// Directory blocks the namespace has scanned for lookups and changes
    /// so far, and the block size (for the CPU model's scan charge).
    fn dir_blocks_scanned(&mut self) -> (u64, u32) {
        (0, 0)
    }
    /// The simulated disk's counters, if on one.
    fn disk_stats(&mut self) -> Option<DiskStats> {
        None
    }
    /// The LFS cleaner's counters, if any.
    fn cleaner(&mut self) -> Option<CleanerCounters> {
        None
    }
    /// Where every file's blocks lie, on a layout that places blocks
    /// (FFS), for the layout score; `None` elsewhere.
    fn placements(&mut self) -> Option<io::Result<Placements>> {
        None
    }
    /// How the free space lies, group by group, on a layout that keeps
    /// cylinder groups (FFS); `None` elsewhere.
    fn free_space(&mut self) -> Option<FreeSpaceMap> {
        None
    }
    /// How inodes divide among cylinder groups, on a layout that keeps
    /// them (FFS); `None` elsewhere.
    fn cylinder_groups(&mut self) -> Option<CylinderGroups> {
        None
    }
    /// Work a file system does while nobody calls it: on LFS without a
    /// cleaning thread, the background cleaner's round
    /// (`fslab::lfs::Lfs::clean_while_idle`). Nothing elsewhere.
    fn idle(&mut self) -> io::Result<()> {
        Ok(())
    }
    /// The inode number of the file at `path` (by which [`placements`]
    /// name files), where fslab serves it; `None` on a mounted directory.
    ///
    /// [`placements`]: Backend::placements
    fn inode(&mut self, _path: &str) -> Option<io::Result<u64>> {
        None
    }
    /// Unmounts, or removes the run's files; the backend is not used after.
    fn finish(&mut self) -> io::Result<()>;
}

/// Every file's placement and the fragments in a block, for
/// `crate::aging::score`.
#[derive(Debug, Clone)]
pub struct Placements {
    /// One entry per file.
    pub files: Vec<fslab::ffs::FilePlacement>,
    /// Fragments per block (tells a tail from a block).
    pub frags_per_block: u32,
}

/// Every cylinder group's free space and the fragments in a block, for
/// `crate::aging::fragmentation`.
#[derive(Debug, Clone)]
pub struct FreeSpaceMap {
    /// One entry per group, in group order.
    pub groups: Vec<fslab::ffs::GroupFreeSpace>,
    /// Fragments per block.
    pub frags_per_block: u32,
}

/// The cylinder groups of a layout that keeps them: enough to tell from
/// an inode's number which group holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CylinderGroups {
    /// Groups in the file system.
    pub count: u32,
    /// Inodes in each group (4.4BSD's `fs_ipg`).
    pub inodes_per_group: u32,
}

impl CylinderGroups {
    /// The group holding inode `ino` (4.4BSD's `ino_to_cg`); an inode
    /// number past the last group's is not one of this file system's.
    pub fn group_of(&self, ino: u64) -> Option<u32> {
        let g = ino / u64::from(self.inodes_per_group.max(1));
        (g < u64::from(self.count)).then_some(g as u32)
    }
}

/// Counters at one moment, for a phase's share.
#[derive(Debug, Clone, Default)]
pub struct Counters {
    /// The target's time.
    pub time: Duration,
    /// CPU time charged by the cost model.
    pub cpu: Duration,
    /// The simulated disk's counters.
    pub disk: Option<DiskStats>,
    /// The cleaner's counters.
    pub cleaner: Option<CleanerCounters>,
}

/// One phase's measurements (from [`Target::phase`]).
#[derive(Debug, Clone, Default)]
pub struct Phase {
    /// Elapsed time on the target's clock.
    pub elapsed: Duration,
    /// CPU time charged by the cost model during the phase.
    pub cpu: Duration,
    /// The simulated disk's work during the phase.
    pub disk: Option<DiskStats>,
    /// The cleaner's work during the phase.
    pub cleaner: Option<CleanerCounters>,
}

impl Phase {
    /// Elapsed seconds.
    pub fn seconds(&self) -> f64 {
        self.elapsed.as_secs_f64()
    }

    /// The CPU's share of the elapsed time, 0 to 1 (0 on wall time).
    pub fn cpu_share(&self) -> f64 {
        if self.elapsed.is_zero() {
            return 0.0;
        }
        self.cpu.as_secs_f64() / self.elapsed.as_secs_f64()
    }

    /// Segments the cleaner cleaned during the phase.
    pub fn segments_cleaned(&self) -> u64 {
        self.cleaner.map_or(0, |c| c.segments_cleaned)
    }
}

/// What time a target keeps.
enum Time {
    /// Simulated: the clock the disk shares, charged by the CPU model.
    Virtual { clock: Arc<VirtualClock>, cpu: CpuModel },
    /// The host's.
    Wall { start: Instant },
}

/// A backend and its clock: what workloads drive.
///
/// Every call charges, on virtual time, the CPU model's cost of the system
/// call it stands for, before the call (writes: the copy in too) or after
/// it (reads: the copy out), and then the checksums the layout computed
/// during it.
pub struct Target {
    backend: Box<dyn Backend>,
    time: Time,
    cpu_charged: u64,
    checksummed: Checksummed,
    scanned: u64,
    next_tick: Duration,
    /// Whether every `drop_caches` so far really dropped them.
    caches_dropped: bool,
    /// What must outlive the backend (its device). Declared last: dropped
    /// after it.
    kept: Vec<Box<dyn std::any::Any>>,
}

const TICK: Duration = Duration::from_secs(1);

/// The bytes a `pread` or `pwrite` moves between user and kernel before
/// the file system sees them (or after it served them). 4.4BSD's read and
/// write loops move a block at a time; charged here a cluster at a time —
/// the 64 KB the file systems read ahead and write in
/// ([`fslab::bmap::READ_AHEAD_BYTES`]) — which overlaps the copies with the
/// disk as much, in a sixteenth of the calls.
const LOOP_BYTES: usize = fslab::bmap::READ_AHEAD_BYTES;

fn components(path: &str) -> usize {
    path.split('/').filter(|c| !c.is_empty()).count().max(1)
}

impl Target {
    /// A target on virtual time: `clock` is the simulated disk's.
    pub fn on_virtual_time(backend: Box<dyn Backend>, clock: Arc<VirtualClock>, cpu: CpuModel) -> Target {
        Target::new(backend, Time::Virtual { clock, cpu })
    }

    /// A target on the host's time.
    pub fn on_wall_time(backend: Box<dyn Backend>) -> Target {
        Target::new(backend, Time::Wall { start: Instant::now() })
    }

    fn new(mut backend: Box<dyn Backend>, time: Time) -> Target {
        let checksummed = backend.checksummed();
        let scanned = backend.dir_blocks_scanned().0;
        let mut target = Target {
            backend,
            time,
            cpu_charged: 0,
            checksummed,
            scanned,
            next_tick: Duration::ZERO,
            caches_dropped: true,
            kept: Vec::new(),
        };
        target.next_tick = target.now() + TICK;
        target
    }

    /// The target's time since it was made.
    pub fn now(&self) -> Duration {
        match &self.time {
            Time::Virtual { clock, .. } => Duration::from_nanos(clock.now()),
            Time::Wall { start } => start.elapsed(),
        }
    }

    /// Whether the target keeps simulated time.
    pub fn is_virtual(&self) -> bool {
        matches!(self.time, Time::Virtual { .. })
    }

    /// Whether the calling thread's CPU time measures the file system's
    /// work: on wall time, with a file system working on this thread.
    /// Unlike elapsed time, it does not grow while other programs hold
    /// the CPU, so a loaded machine cannot move it much.
    pub fn thread_cpu_measures_the_file_system(&self) -> bool {
        !self.is_virtual() && self.backend.works_on_the_callers_thread()
    }

    /// Keeps `thing` (the device under the backend) alive as long as the
    /// target.
    pub fn keep(&mut self, thing: Box<dyn std::any::Any>) {
        self.kept.push(thing);
    }

    /// Whether every cache drop asked for so far happened.
    pub fn caches_were_dropped(&self) -> bool {
        self.caches_dropped
    }

    fn charge(&mut self, ns: u64) {
        if let Time::Virtual { clock, .. } = &self.time {
            if ns > 0 {
                clock.advance(ns);
                self.cpu_charged += ns;
            }
        }
    }

    fn cpu(&self) -> CpuModel {
        match &self.time {
            Time::Virtual { cpu, .. } => *cpu,
            Time::Wall { .. } => CpuModel::off(),
        }
    }

    /// After a call: charge the checksums and directory scans it made, and
    /// tick if due.
    fn after(&mut self) -> io::Result<()> {
        let checksummed = self.backend.checksummed();
        let new = checksummed.since(&self.checksummed);
        self.checksummed = checksummed;
        self.charge(self.cpu().checksum_ns(&new));
        let (scanned, block_size) = self.backend.dir_blocks_scanned();
        let new = scanned.saturating_sub(self.scanned);
        self.scanned = scanned;
        self.charge(self.cpu().dir_scan_ns(new, block_size));
        if self.now() >= self.next_tick {
            self.next_tick = self.now() + TICK;
            self.backend.tick()?;
        }
        Ok(())
    }

    /// Application CPU time (a compiler's, say): charged on virtual time
    /// unless the CPU model is off; nothing on wall time.
    pub fn compute(&mut self, ns: u64) {
        if self.cpu().machine().is_some() {
            self.charge(ns);
        }
    }

    /// Application CPU work of `instructions` instructions, at the
    /// machine's speed (as [`Target::compute`]).
    pub fn compute_instructions(&mut self, instructions: f64) {
        let ns = self.cpu().instructions_ns(instructions);
        self.compute(ns);
    }

    fn name_op<T>(
        &mut self,
        path: &str,
        inode_change: bool,
        op: impl FnOnce(&mut dyn Backend) -> io::Result<T>,
    ) -> io::Result<T> {
        let cpu = self.cpu();
        let extra = if inode_change { cpu.inode_change_ns() } else { 0 };
        self.charge(cpu.syscall_ns() + cpu.lookup_ns(components(path)) + extra);
        let result = op(self.backend.as_mut());
        self.after()?;
        result
    }

    /// `mkdir`.
    pub fn mkdir(&mut self, path: &str) -> io::Result<()> {
        self.name_op(path, true, |b| b.mkdir(path))
    }

    /// `rmdir`.
    pub fn rmdir(&mut self, path: &str) -> io::Result<()> {
        self.name_op(path, true, |b| b.rmdir(path))
    }

    /// `creat`: a new empty file, open.
    pub fn create(&mut self, path: &str) -> io::Result<Fd> {
        self.name_op(path, true, |b| b.create(path))
    }

    /// `open` of an existing file.
    pub fn open(&mut self, path: &str) -> io::Result<Fd> {
        self.name_op(path, false, |b| b.open(path))
    }

    /// `unlink`.
    pub fn unlink(&mut self, path: &str) -> io::Result<()> {
        self.name_op(path, true, |b| b.unlink(path))
    }

    /// `rename(2)`: charged as one name change, its lookups by the source's
    /// path (both names are in one directory in the workloads that rename).
    pub fn rename(&mut self, from: &str, to: &str) -> io::Result<()> {
        self.name_op(from, true, |b| b.rename(from, to))
    }

    /// `stat`: the size, or `None` for no such file.
    pub fn stat(&mut self, path: &str) -> io::Result<Option<u64>> {
        self.name_op(path, false, |b| b.stat(path))
    }

    /// `ftruncate`.
    pub fn truncate(&mut self, fd: Fd, size: u64) -> io::Result<()> {
        self.charge(self.cpu().syscall_ns());
        let result = self.backend.truncate(fd, size);
        self.after()?;
        result
    }

    /// Where every file's blocks lie (FFS), or `None`; not timed.
    pub fn placements(&mut self) -> Option<io::Result<Placements>> {
        self.backend.placements()
    }

    /// How the free space lies (FFS), or `None`; not timed.
    pub fn free_space(&mut self) -> Option<FreeSpaceMap> {
        self.backend.free_space()
    }

    /// How inodes divide among cylinder groups (FFS), or `None`; not
    /// timed.
    pub fn cylinder_groups(&mut self) -> Option<CylinderGroups> {
        self.backend.cylinder_groups()
    }

    /// Lets the file system do its idle work ([`Backend::idle`]): called
    /// where a workload pauses. Not charged: on virtual time, what the
    /// work does on a simulated disk moves the clock by itself.
    pub fn idle(&mut self) -> io::Result<()> {
        self.backend.idle()
    }

    /// The inode number of the file at `path`, where [`Target::placements`]
    /// has one; not timed (it picks files out of the placements, no
    /// workload's call).
    pub fn inode(&mut self, path: &str) -> Option<io::Result<u64>> {
        self.backend.inode(path)
    }

    /// `close`.
    pub fn close(&mut self, fd: Fd) -> io::Result<()> {
        self.charge(self.cpu().syscall_ns());
        let result = self.backend.close(fd);
        self.after()?;
        result
    }

    /// `pwrite`: the copy into the kernel comes before the file system sees
    /// the data — a cluster at a time, as in 4.4BSD's write loop
    /// (`ffs_write`, `lfs_write`: each block copied in, then handed to the
    /// buffer cache, which may start its write), so the file system can
    /// write the first clusters while the rest is still being copied.
    pub fn write(&mut self, fd: Fd, offset: u64, data: &[u8]) -> io::Result<()> {
        let cpu = self.cpu();
        self.charge(cpu.syscall_ns());
        let result = if self.backend.copies_itself() || !self.is_virtual() {
            self.backend.write(fd, offset, data)
        } else {
            self.write_a_cluster_at_a_time(fd, offset, data)
        };
        self.after()?;
        result
    }

    /// The write loop on virtual time: each cluster's copy charged, then
    /// the cluster handed to the file system.
    fn write_a_cluster_at_a_time(&mut self, fd: Fd, offset: u64, data: &[u8]) -> io::Result<()> {
        let cpu = self.cpu();
        for (i, piece) in data.chunks(LOOP_BYTES).enumerate() {
            self.charge(cpu.copy_ns(piece.len() as u64));
            self.backend.write(fd, offset + (i * LOOP_BYTES) as u64, piece)?;
        }
        Ok(())
    }

    /// The read loop on virtual time: each cluster read, then its copy
    /// charged.
    fn read_a_cluster_at_a_time(&mut self, fd: Fd, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        let cpu = self.cpu();
        for (i, piece) in buf.chunks_mut(LOOP_BYTES).enumerate() {
            self.backend.read(fd, offset + (i * LOOP_BYTES) as u64, piece)?;
            self.charge(cpu.copy_ns(piece.len() as u64));
        }
        Ok(())
    }

    /// `pread`: the copy out follows the file system's work. As in
    /// 4.4BSD's read loop (`ffs_read`, `lfs_read`), each cluster is copied
    /// out once it is in memory and before the next is asked for, so the
    /// read-ahead the file system posted for the next cluster proceeds
    /// during the copy ([`fslab::bmap::READ_AHEAD_BYTES`]; the simulated
    /// disk's posted reads).
    pub fn read(&mut self, fd: Fd, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        self.charge(self.cpu().syscall_ns());
        // On the host's time the copies are the host's own: one call.
        let result = if self.backend.copies_itself() || !self.is_virtual() {
            self.backend.read(fd, offset, buf)
        } else {
            self.read_a_cluster_at_a_time(fd, offset, buf)
        };
        self.after()?;
        result
    }

    /// `fsync`.
    pub fn fsync(&mut self, fd: Fd) -> io::Result<()> {
        self.charge(self.cpu().syscall_ns());
        let result = self.backend.fsync(fd);
        self.after()?;
        result
    }

    /// `sync`, waiting for it to finish.
    pub fn sync(&mut self) -> io::Result<()> {
        self.charge(self.cpu().syscall_ns());
        let result = self.backend.sync();
        self.after()?;
        result
    }

    /// Empties the caches between phases (not meant to be timed).
    pub fn drop_caches(&mut self) -> io::Result<()> {
        let dropped = self.backend.drop_caches()?;
        self.caches_dropped &= dropped;
        self.checksummed = self.backend.checksummed();
        self.scanned = self.backend.dir_blocks_scanned().0;
        Ok(())
    }

    /// Space and utilization.
    pub fn usage(&mut self) -> io::Result<Usage> {
        self.backend.usage()
    }

    /// Counters now.
    pub fn counters(&mut self) -> Counters {
        Counters {
            time: self.now(),
            cpu: Duration::from_nanos(self.cpu_charged),
            disk: self.backend.disk_stats(),
            cleaner: self.backend.cleaner(),
        }
    }

    /// Segments the cleaner has cleaned so far (0 without one).
    pub fn segments_cleaned(&mut self) -> u64 {
        self.backend.cleaner().map_or(0, |c| c.segments_cleaned)
    }

    /// The cleaner's work so far: bytes it read and wrote (a cleaner that
    /// reads segments and finds none worth cleaning works too).
    pub fn cleaner_work(&mut self) -> u64 {
        self.backend.cleaner().map_or(0, |c| c.cleaner_bytes_read + c.cleaner_bytes_written)
    }

    /// Runs `body` as one measured phase.
    pub fn phase<T>(&mut self, body: impl FnOnce(&mut Target) -> io::Result<T>) -> io::Result<(T, Phase)> {
        let before = self.counters();
        let value = body(self)?;
        let after = self.counters();
        let phase = between(&before, &after);
        print_phase(&phase);
        Ok((value, phase))
    }

    /// Unmounts or cleans up.
    pub fn finish(&mut self) -> io::Result<()> {
        self.backend.finish()
    }
}

/// Prints [`describe`]'s line for `phase` when `FSLAB_BENCH_PHASES` is set
/// (for phases a workload measures between counters of its own).
pub fn print_phase(phase: &Phase) {
    if std::env::var_os("FSLAB_BENCH_PHASES").is_some() {
        eprintln!("{}", describe(phase));
    }
}

/// One line on a phase's time, CPU, disk and cleaner work: what
/// `FSLAB_BENCH_PHASES=1` prints after every phase, to find where a
/// result's time went (seeks, rotations, requests).
pub fn describe(phase: &Phase) -> String {
    let mut line = format!("phase: {:.3} s, cpu {:.3} s", phase.seconds(), phase.cpu.as_secs_f64());
    if let Some(d) = &phase.disk {
        line.push_str(&format!("; {d}"));
    }
    if let Some(c) = &phase.cleaner {
        line.push_str(&format!(
            "; cleaner: {} segments cleaned, {} KiB read, {} KiB written",
            c.segments_cleaned,
            c.cleaner_bytes_read >> 10,
            c.cleaner_bytes_written >> 10
        ));
    }
    line
}

/// The work done between two readings of the counters.
pub fn between(before: &Counters, after: &Counters) -> Phase {
    Phase {
        elapsed: after.time.saturating_sub(before.time),
        cpu: after.cpu.saturating_sub(before.cpu),
        disk: match (&before.disk, &after.disk) {
            (Some(b), Some(a)) => Some(a.since(b)),
            _ => None,
        },
        cleaner: match (&before.cleaner, &after.cleaner) {
            (Some(b), Some(a)) => Some(a.since(b)),
            _ => None,
        },
    }
}

/// An `io::Error` for a library error, keeping its errno (ENOSPC must stay
/// recognisable).
pub fn io_error(e: fslab::Error) -> io::Error {
    match e {
        fslab::Error::Io(e) => e,
        other => {
            let errno = other.errno();
            if errno == libc::EIO {
                io::Error::other(other.to_string())
            } else {
                io::Error::from_raw_os_error(errno)
            }
        }
    }
}

/// Whether `e` says the device is full.
pub fn is_no_space(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::ENOSPC)
}

/// Splits `path` into its parent directory and its last component.
pub fn split_path(path: &str) -> (&str, &str) {
    match path.rfind('/') {
        Some(i) => (&path[..i], &path[i + 1..]),
        None => ("", path),
    }
}
