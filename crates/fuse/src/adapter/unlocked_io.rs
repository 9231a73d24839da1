//! READ and WRITE, whose waits for the device run without the file
//! system's lock (decision 0017): a read of blocks the cache does not hold,
//! and the read a write makes of a block it changes only in part, are
//! planned under the lock and their transfers run after it is let go.

use super::{privilege, FuseAdapter};
use crate::caller::Caller;
use crate::convert::from_fuse;
use crate::stale::Dropped;
use fslab::storage::StorageManager;
use fslab::ufs::{Access, BlockCopies, ReadStart};
use fslab::Result;

impl<S: StorageManager> FuseAdapter<S> {
    /// READ: planned under the lock; the device transfers of blocks not
    /// cached run after letting go of it, so that other requests go on
    /// while this one waits for the device (`fslab::storage::Fetches`).
    /// If a write may have changed what they read, or they failed, the
    /// read is made again, wholly under the lock.
    pub(super) fn read_data(&self, ino: u64, offset: u64, len: usize, access: Access) -> Result<Vec<u8>> {
        let target = from_fuse(ino);
        let mut pending = match self.run("read", ino, |fs| fs.read_begin_as(target, offset, len, access))? {
            ReadStart::Done(data) => return Ok(data),
            ReadStart::Pending(pending) => pending,
        };
        if !matches!(pending.fetch(), Ok(true)) {
            // The access time was updated as the read began.
            return self.run("read", ino, |fs| fs.read_as(target, offset, len, Access::NoAtime));
        }
        // Caching is a hint: an unmounted or broken file system declines.
        let _ = self.shared.with(|fs| {
            fs.adopt_read(&pending);
            Ok(())
        });
        Ok(pending.into_data())
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
