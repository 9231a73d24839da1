//! `async`: every metadata write delayed and nothing ordered, the 2000
//! paper's FFS-async (§2, §8) — the upper bound on what metadata integrity
//! costs. After a crash, fsck makes the image mountable; what the
//! namespace held since the last sync may be lost. Only fsync and sync
//! write anything synchronously.

use super::IntegrityMode;
use crate::cache::Ticket;
use crate::ffs::fs::Ffs;
use crate::format::{Daddr, Ino, Lbn};
use crate::storage::Hint;
use crate::Result;

/// Nothing ordered, everything delayed.
pub(super) struct Delayed;

impl IntegrityMode<Ffs> for Delayed {
    fn on_hint(&self, _fs: &mut Ffs, _hint: Hint) -> Result<()> {
        Ok(())
    }

    fn indirect_allocated(&self, _fs: &mut Ffs, _ino: Ino, _lbn: Lbn, _addr: Daddr) -> Result<()> {
        Ok(())
    }

    /// Nothing is promised at commit.
    fn commit(&self, _fs: &mut Ffs) -> Result<Ticket> {
        Ok(Ticket::none())
    }

    /// The file's blocks, a barrier, then every directory block and inode,
    /// so that the file's name is as durable as its contents (nothing wrote
    /// the name when it was made).
    fn fsync(&self, fs: &mut Ffs, ino: Ino) -> Result<Ticket> {
        fs.write_file_waited(ino)?;
        fs.queue.flush()?;
        fs.store_dirty_inodes()?;
        fs.write_fresh_inode_blocks()?;
        let dirs: Vec<Ino> =
            fs.cache.dirty_inodes().into_iter().filter(|&i| fs.is_namespace_file(i)).collect();
        fs.write_dirty(Some(&dirs), true)?;
        Ok(fs.queue.ticket_for_all())
    }
}
