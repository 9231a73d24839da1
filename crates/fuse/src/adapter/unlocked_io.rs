//! READ and WRITE, whose waits for the device run without the file
//! system's lock (decision 0017): a read of blocks the cache does not hold,
//! and the read a write makes of a block it changes only in part, are
//! planned under the lock and their transfers run after it is let go.

use super::{privilege, FuseAdapter};
use crate::caller::Caller;
use crate::convert::{from_fuse, to_fuse};
use crate::damage::DamageLog;
use crate::shared::Shared;
use crate::stale::Dropped;
use fslab::storage::StorageManager;
use fslab::ufs::{Access, BlockCopies, PendingRead, ReadStart};
use fslab::Result;
use std::sync::{Arc, Mutex};

impl<S: StorageManager> FuseAdapter<S> {
    /// READ: planned under the lock; the device transfers of blocks not
    /// cached run after letting go of it, so that other requests go on
    /// while this one waits for the device (`fslab::storage::Fetches`).
    pub(super) fn read_data(&self, ino: u64, offset: u64, len: usize, access: Access) -> Result<Vec<u8>> {
        match self.read_begin(ino, offset, len, access)? {
            ReadStart::Done(data) => Ok(data),
            ReadStart::Pending(pending) => self.read_rest().finish(pending),
        }
    }

    /// The first half of a READ: the data, from the cache holding the file
    /// system shared if it is all there; otherwise, under the lock, the
    /// data or what must still be read from the device
    /// ([`ReadRest::finish`]).
    pub(super) fn read_begin(&self, ino: u64, offset: u64, len: usize, access: Access) -> Result<ReadStart> {
        let target = from_fuse(ino);
        if let Some(data) = self.shared.try_shared(|fs| fs.read_cached(target, offset, len, access)) {
            return Ok(ReadStart::Done(data));
        }
        self.run("read", ino, |fs| fs.read_begin_as(target, offset, len, access))
    }

    /// What finishing a READ needs, which another thread may own.
    pub(super) fn read_rest(&self) -> ReadRest<S> {
        ReadRest { shared: Arc::clone(&self.shared), damage: Arc::clone(&self.damage) }
    }
    /// WRITE of `data` at `offset` by `caller`, with `copies` made from
    /// them beforehand. A block the write changes only in part is read
    /// first; if the cache does not hold it, the read's device transfer
    /// runs without the lock (`FileSystem::write_edges_to_fetch`), and the
    /// write follows, under the lock, once the block is cached.
    pub(super) fn write_data(
        &self,
        ino: u64,
        offset: u64,
        data: &[u8],
        copies: BlockCopies,
        caller: Caller,
    ) -> Result<usize> {
        let target = from_fuse(ino);
        let mut copies = Some(copies);
        let first = self.changing("write", ino, Dropped::Contents, |fs| {
            let edges = fs.write_edges_to_fetch(target, offset, data.len())?;
            if !edges.is_empty() {
                return Ok(Err(edges));
            }
            let who = privilege(fs, ino, caller)?;
            fs.write_copied(target, offset, data, copies.take().unwrap_or_default(), who).map(Ok)
        });
        let mut edges = match first {
            Ok(Ok(n)) => return Ok(n),
            Ok(Err(edges)) => edges,
            Err(e) => return Err(e),
        };
        // A transfer that failed or went stale is not cached: the write
        // reads the block under the lock, as it always did.
        for edge in &mut edges {
            let _ = edge.fetch();
        }
        self.changing("write", ino, Dropped::Contents, |fs| {
            for edge in &edges {
                fs.adopt_read(edge);
            }
            let who = privilege(fs, ino, caller)?;
            fs.write_copied(target, offset, data, copies.take().unwrap_or_default(), who)
        })
    }
}

/// The second half of a READ, owned apart from the adapter so that a ring
/// queue can hand it to a worker thread.
pub(crate) struct ReadRest<S: StorageManager> {
    shared: Arc<Shared<S>>,
    damage: Arc<Mutex<DamageLog>>,
}

impl<S: StorageManager> ReadRest<S> {
    /// Runs `pending`'s device transfers without the lock. If a write may
    /// have changed what they read, or they failed, the read is made
    /// again, wholly under the lock.
    pub(crate) fn finish(&self, mut pending: PendingRead) -> Result<Vec<u8>> {
        if !matches!(pending.fetch(), Ok(true)) {
            let (ino, offset, len) = pending.request();
            // The access time was updated as the read began.
            let again = self.shared.with_as("read", |fs| fs.read_as(ino, offset, len, Access::NoAtime));
            if let Err(e) = &again {
                super::report_damage(&self.damage, "read", to_fuse(ino), e);
            }
            return again;
        }
        // Caching is a hint: an unmounted or broken file system declines.
        let _ = self.shared.with_as("read", |fs| {
            fs.adopt_read(&pending);
            Ok(())
        });
        Ok(pending.into_data())
    }
}
