//! Reads whose device transfers run after the file system's lock is let go.
//!
//! A read of blocks that are not cached spends most of its time waiting for
//! the device. Under the exclusive lock around a mounted file system, every
//! other request waits with it. So a storage manager may plan such a read under
//! the lock — which blocks come from the cache, which are holes, which lie
//! where on the device ([`StorageManager::read_blocks_later`]) — and leave
//! the device transfers in a [`Fetches`], which the caller runs without the
//! lock. What the transfers read is the file's contents as of the plan,
//! unless a write was submitted to those addresses since
//! ([`UnlockedReads::written_since`]); then the caller reads again under
//! the lock. Blocks read alone may then be cached
//! ([`StorageManager::adopt_fetched`]), once the lock is held again and the
//! block still maps where it was read from.
//!
//! [`StorageManager::read_blocks_later`]: super::StorageManager::read_blocks_later
//! [`StorageManager::adopt_fetched`]: super::StorageManager::adopt_fetched

use crate::durable::UnlockedReads;
use crate::format::{Daddr, Lbn};
use crate::Result;
use std::sync::Arc;

/// One device transfer of a planned read: `len` bytes at `addr` into the
/// read's buffer at byte `at`, the blocks from `lbn` on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fetch {
    /// Where in the read's buffer the bytes go.
    pub at: usize,
    /// Where they lie on the device.
    pub addr: Daddr,
    /// How many bytes: whole blocks, or the fragments of a file's tail
    /// (FFS), the rest of whose block in the buffer is zeros.
    pub len: usize,
    /// The file's block the transfer starts with.
    pub lbn: Lbn,
}

/// The device transfers a read planned under the lock left to its caller.
pub struct Fetches {
    reader: Arc<dyn UnlockedReads>,
    since: u64,
    block_size: usize,
    list: Vec<Fetch>,
}

impl Fetches {
    /// None yet, for a read planned now on `reader`'s device.
    pub fn new(reader: Arc<dyn UnlockedReads>, block_size: usize) -> Fetches {
        let since = reader.issued();
        Fetches { reader, since, block_size, list: Vec::new() }
    }

    /// Adds a transfer.
    pub fn push(&mut self, fetch: Fetch) {
        self.list.push(fetch);
    }

    /// Whether the plan left nothing to read.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// The transfers, in the order planned.
    pub fn list(&self) -> &[Fetch] {
        &self.list
    }

    /// Runs every transfer into `buf`, the read's buffer. Returns whether
    /// what it read is what the file held when the read was planned: false
    /// when a write submitted since may have changed any of it, and the
    /// read must be made again under the lock.
    pub fn run(&self, buf: &mut [u8]) -> Result<bool> {
        self.transfer(buf)?;
        Ok(!self.list.iter().any(|f| self.written_since(f)))
    }

    /// Runs every transfer into `buf`, without asking about writes since:
    /// for a caller that asks of each transfer itself
    /// ([`Fetches::written_since`]) and keeps those no write reached.
    pub fn transfer(&self, buf: &mut [u8]) -> Result<()> {
        for f in &self.list {
            let Some(into) = buf.get_mut(f.at..f.at + f.len) else {
                return Err(crate::error::errno(libc::EINVAL, "fetch outside the read's buffer"));
            };
            self.reader.read(f.addr.get(), into)?;
        }
        Ok(())
    }

    /// Whether a write submitted since the plan may cover `fetch`'s bytes.
    pub fn written_since(&self, fetch: &Fetch) -> bool {
        self.reader.written_since(self.since, fetch.addr.get(), fetch.len)
    }

    /// The transfers of a single block (or a tail's fragments) that no
    /// write since the plan may have reached, each with its whole block of
    /// `buf` as [`Fetches::run`] left it: what may be cached, if the block
    /// still lies at the address read, in as many bytes, and is not cached
    /// already.
    pub fn unwritten_single_blocks<'a>(
        &'a self,
        buf: &'a [u8],
    ) -> impl Iterator<Item = (&'a Fetch, &'a [u8])> + 'a {
        self.list
            .iter()
            .filter(|f| f.len <= self.block_size && !self.written_since(f))
            .filter_map(move |f| buf.get(f.at..f.at + self.block_size).map(|bytes| (f, bytes)))
    }
}
