//! The cleaner's view of a file system: the operations of the 1993 paper's
//! Table 3 (`bmapv`, `markv`, `segclean`, `segwait`) plus reading the
//! segment usage table and raw segments. Policies see nothing else.

use fslab::format::Daddr;
use fslab::lfs::clean::{
    BlockRef, CleaningWanted, Destination, MarkBlock, Markv, SegmentClock, SegmentTable,
};
use fslab::lfs::Lfs;
use fslab::Result;
use std::sync::Arc;
use std::time::Duration;

/// What a cleaner may do to a mounted LFS.
pub trait Mechanism {
    /// The segment usage table, with the cleaner's budget and thresholds.
    fn segment_table(&mut self) -> Result<SegmentTable>;
    /// The raw bytes of segment `seg`.
    fn read_segment(&mut self, seg: u64) -> Result<Vec<u8>>;
    /// What the summaries of segment `seg` name, read without the data
    /// blocks (live or dead: ask `bmapv`).
    fn segment_refs(&mut self, seg: u64) -> Result<Vec<BlockRef>>;
    /// The current address of each block (0: gone).
    fn bmapv(&mut self, blocks: &[BlockRef]) -> Result<Vec<Daddr>>;
    /// Blocks a rewrite of `blocks` would consume, hidden cost included.
    fn markv_cost(&mut self, blocks: &[BlockRef]) -> Result<u64>;
    /// Rewrites the live ones among `blocks` at the log head `to` names.
    fn markv(&mut self, blocks: &[MarkBlock], to: Destination) -> Result<Markv>;
    /// Declares segment `seg` empty (clean from the next checkpoint).
    fn segclean(&mut self, seg: u64) -> Result<()>;
    /// Sleeps until a partial segment is written or `timeout` passes.
    fn segwait(&mut self, timeout: Duration) -> Result<()>;
}

/// A file system held directly: nothing else can write while the cleaner
/// holds it, so `segwait` returns at once.
impl Mechanism for Lfs {
    fn segment_table(&mut self) -> Result<SegmentTable> {
        Ok(Lfs::segment_table(self))
    }
    fn read_segment(&mut self, seg: u64) -> Result<Vec<u8>> {
        Lfs::read_segment(self, seg)
    }
    fn segment_refs(&mut self, seg: u64) -> Result<Vec<BlockRef>> {
        Lfs::segment_refs(self, seg)
    }
    fn bmapv(&mut self, blocks: &[BlockRef]) -> Result<Vec<Daddr>> {
        Lfs::bmapv(self, blocks)
    }
    fn markv_cost(&mut self, blocks: &[BlockRef]) -> Result<u64> {
        Lfs::markv_cost(self, blocks)
    }
    fn markv(&mut self, blocks: &[MarkBlock], to: Destination) -> Result<Markv> {
        Lfs::markv(self, blocks, to)
    }
    fn segclean(&mut self, seg: u64) -> Result<()> {
        Lfs::segclean(self, seg)
    }
    fn segwait(&mut self, _timeout: Duration) -> Result<()> {
        Ok(())
    }
}

/// Access to a file system that other threads share: runs one call with
/// the file system locked. The FUSE mount implements it over its lock.
pub trait LfsAccess {
    /// Runs `op` on the file system under its lock.
    fn with_lfs<R>(&self, op: impl FnOnce(&mut Lfs) -> Result<R>) -> Result<R>;

    /// Whether the file system has been unmounted: every call fails from
    /// then on, and its error says nothing about the disk. An access that
    /// cannot tell says no.
    fn is_unmounted(&self) -> bool {
        false
    }
}

/// The error of a [`Locked`] call that failed because the file system was
/// unmounted under it ([`is_unmounted_error`]): ENODEV, which no mechanism
/// call returns otherwise, so that a cleaner neither takes it for a damaged
/// block (EIO) nor reports it as a failure.
pub fn unmounted_error() -> fslab::Error {
    fslab::error::errno(libc::ENODEV, "file system is unmounted")
}

/// Whether `e` is [`unmounted_error`].
pub fn is_unmounted_error(e: &fslab::Error) -> bool {
    e.errno() == libc::ENODEV
}

/// A [`Mechanism`] over shared access: each operation takes the lock for
/// itself alone, so requests are served between a cleaner's steps (markv
/// re-checks what changed meanwhile), and `segwait` sleeps unlocked.
pub struct Locked<A: LfsAccess> {
    access: A,
    clock: Arc<SegmentClock>,
}

impl<A: LfsAccess> Locked<A> {
    /// Wraps `access`.
    pub fn new(access: A) -> Result<Locked<A>> {
        let clock = access.with_lfs(|lfs| Ok(lfs.segment_clock()))?;
        Ok(Locked { access, clock })
    }

    /// The access this wraps.
    pub fn access(&self) -> &A {
        &self.access
    }

    /// The clock of the file system: a waiter on it can be woken early
    /// ([`SegmentClock::interrupt`]).
    pub fn clock(&self) -> Arc<SegmentClock> {
        self.clock.clone()
    }

    /// Whether the file system is gone.
    fn unmounted(&self) -> bool {
        self.clock.is_closed() || self.access.is_unmounted()
    }

    /// Fails with [`unmounted_error`] once the file system is gone.
    fn check_open(&self) -> Result<()> {
        if self.unmounted() {
            return Err(unmounted_error());
        }
        Ok(())
    }

    /// Runs `op` under the lock; an error once the file system is gone
    /// becomes [`unmounted_error`], whatever the call said (the lock
    /// answers EIO, as it does to a kernel request).
    fn call<R>(&self, op: impl FnOnce(&mut Lfs) -> Result<R>) -> Result<R> {
        self.access.with_lfs(op).map_err(|e| if self.unmounted() { unmounted_error() } else { e })
    }

    /// Sleeps until a partial segment is written while cleaning is wanted
    /// (others do not wake it) or `timeout` passes, then returns what
    /// [`Lfs::cleaning_wanted`] says: as the partial segments written
    /// meanwhile left it, read without the file system's lock, or asked
    /// under the lock when none was written. Fails once the file system is
    /// gone.
    pub fn wait_for_work(&mut self, timeout: Duration) -> Result<CleaningWanted> {
        let seen = self.clock.now();
        self.clock.wait_until_wanted(seen, timeout);
        self.check_open()?;
        if self.clock.now() > seen {
            Ok(self.clock.cleaning_wanted())
        } else {
            self.call(|lfs| Ok(lfs.cleaning_wanted()))
        }
    }
}

impl<A: LfsAccess> Mechanism for Locked<A> {
    fn segment_table(&mut self) -> Result<SegmentTable> {
        self.call(|lfs| Ok(lfs.segment_table()))
    }
    fn read_segment(&mut self, seg: u64) -> Result<Vec<u8>> {
        self.call(|lfs| lfs.read_segment(seg))
    }
    fn segment_refs(&mut self, seg: u64) -> Result<Vec<BlockRef>> {
        self.call(|lfs| lfs.segment_refs(seg))
    }
    fn bmapv(&mut self, blocks: &[BlockRef]) -> Result<Vec<Daddr>> {
        self.call(|lfs| lfs.bmapv(blocks))
    }
    fn markv_cost(&mut self, blocks: &[BlockRef]) -> Result<u64> {
        self.call(|lfs| lfs.markv_cost(blocks))
    }
    /// The live blocks markv would read from the device are read first,
    /// without the lock (`Lfs::live_block_fetches`), so that requests are
    /// served while the cleaner waits for the disk; markv, under the lock,
    /// uses what was read for each block that still lies where it was
    /// read, and reads the rest itself.
    fn markv(&mut self, blocks: &[MarkBlock], to: Destination) -> Result<Markv> {
        let (fetches, owners) = self.call(|lfs| Ok(lfs.live_block_fetches(blocks)))?;
        if fetches.is_empty() {
            return self.call(|lfs| lfs.markv(blocks, to));
        }
        let mut buf = vec![0u8; fetches.list().iter().map(|f| f.at + f.len).max().unwrap_or(0)];
        // A transfer that failed leaves its blocks to markv, which reads
        // them under the lock and reports a failing device itself.
        let transferred = fetches.transfer(&mut buf).is_ok();
        self.call(|lfs| {
            // Checked under the lock markv runs under: a write to a block's
            // address after the check (its segment cleaned and reused, the
            // block written there again) would otherwise let markv move
            // the bytes read before it as the file's.
            let mut filled = blocks.to_vec();
            let mut bytes = 0u64;
            for (fetch, &i) in fetches.list().iter().zip(&owners).filter(|_| transferred) {
                if fetches.written_since(fetch) {
                    continue;
                }
                if let (Some(block), Some(bytes_read)) =
                    (filled.get_mut(i), buf.get(fetch.at..fetch.at + fetch.len))
                {
                    block.data = Some(bytes_read.to_vec());
                    bytes += fetch.len as u64;
                }
            }
            lfs.count_cleaner_read(bytes);
            lfs.markv(&filled, to)
        })
    }
    fn segclean(&mut self, seg: u64) -> Result<()> {
        self.call(|lfs| lfs.segclean(seg))
    }
    fn segwait(&mut self, timeout: Duration) -> Result<()> {
        let seen = self.clock.now();
        self.clock.wait(seen, timeout);
        self.check_open()
    }
}
