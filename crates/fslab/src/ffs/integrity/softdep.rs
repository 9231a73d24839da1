//! `softdep`: soft updates (being built; for now the ordered mode's
//! behaviour, so the rest of the system can name it).

use super::ordered::Ordered;
use super::IntegrityMode;
use crate::cache::Ticket;
use crate::ffs::fs::Ffs;
use crate::format::{Daddr, Ino, Lbn};
use crate::storage::Hint;
use crate::Result;

/// Soft updates.
pub(super) struct Softdep;

impl Softdep {
    pub(super) fn new() -> Softdep {
        Softdep
    }
}

impl IntegrityMode for Softdep {
    fn on_hint(&self, fs: &mut Ffs, hint: Hint) -> Result<()> {
        Ordered.on_hint(fs, hint)
    }
    fn indirect_allocated(&self, fs: &mut Ffs, ino: Ino, lbn: Lbn, addr: Daddr) -> Result<()> {
        Ordered.indirect_allocated(fs, ino, lbn, addr)
    }
    fn blocks_freed(&self, fs: &mut Ffs, ino: Ino) -> Result<()> {
        Ordered.blocks_freed(fs, ino)
    }
    fn block_moving(&self, fs: &mut Ffs, ino: Ino, lbn: Lbn) -> Result<()> {
        Ordered.block_moving(fs, ino, lbn)
    }
    fn orphan_link_changed(&self, fs: &mut Ffs, ino: Ino) -> Result<()> {
        Ordered.orphan_link_changed(fs, ino)
    }
    fn orphan_head_changed(&self, fs: &mut Ffs) -> Result<()> {
        Ordered.orphan_head_changed(fs)
    }
    fn commit(&self, fs: &mut Ffs) -> Result<Ticket> {
        Ordered.commit(fs)
    }
    fn fsync(&self, fs: &mut Ffs, ino: Ino) -> Result<Ticket> {
        Ordered.fsync(fs, ino)
    }
}
