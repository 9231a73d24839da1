//! Collapsing and inserting a range of a file (`fallocate`'s
//! `FALLOC_FL_COLLAPSE_RANGE` and `FALLOC_FL_INSERT_RANGE`, as ext4 and XFS
//! have them): the blocks after the range move along the file by their
//! pointers ([`StorageManager::move_blocks`]), so a range of any length
//! costs the blocks that follow it, not their bytes.
//!
//! Both need whole blocks: the offset and the length are multiples of the
//! block size. The file's last block is the one that may be partial — and
//! FFS keeps a partial last block in fragments, which cannot move as a
//! block — so for the move the file's size is first rounded up to whole
//! blocks (FFS grows its tail to a block), and the final size settles the
//! tail again (FFS shrinks the new last block to its fragments).

use super::file::{remove_privileges, COLLAPSE_RANGE, INSERT_RANGE};
use super::{Ns, Privilege};
use crate::error::errno;
use crate::format::Ino;
use crate::storage::StorageManager;
use crate::Result;

impl<S: StorageManager> Ns<'_, S> {
    /// `fallocate` with `mode` `COLLAPSE_RANGE` or `INSERT_RANGE` (the
    /// caller has checked it is one of them, alone). Errors, in Linux's
    /// order: EINVAL for a zero length; EISDIR for a directory, EINVAL for
    /// another non-regular file; EFBIG for a range past the largest file;
    /// EINVAL for an offset or length that is not whole blocks, a collapse
    /// that reaches the end of the file, or an insert at or past it; EFBIG
    /// when the file would grow past the largest file, or when the move
    /// is more than one transaction may hold; ENOSPC, having changed
    /// nothing, when the move has no room.
    pub(super) fn shift_range(
        &mut self,
        ino: Ino,
        offset: u64,
        len: u64,
        mode: i32,
        who: Privilege,
    ) -> Result<()> {
        let collapse = mode == COLLAPSE_RANGE;
        debug_assert!(collapse || mode == INSERT_RANGE);
        if len == 0 {
            return Err(errno(libc::EINVAL, "fallocate of zero bytes"));
        }
        let mut attr = self.regular(ino)?.attr;
        let max = self.s.max_file_size();
        if offset.checked_add(len).is_none_or(|end| end > max) {
            return Err(errno(libc::EFBIG, "range past the largest file"));
        }
        let bs = self.s.block_size() as u64;
        if !offset.is_multiple_of(bs) || !len.is_multiple_of(bs) {
            return Err(errno(libc::EINVAL, "collapse and insert take whole blocks"));
        }
        let size = attr.size;
        let new_size = if collapse {
            if offset + len >= size {
                return Err(errno(libc::EINVAL, "collapse reaches the end of the file"));
            }
            size - len
        } else {
            if offset >= size {
                return Err(errno(libc::EINVAL, "insert at or past the end of the file"));
            }
            size.checked_add(len)
                .filter(|&s| s <= max)
                .ok_or(errno(libc::EFBIG, "file would pass the largest"))?
        };
        let (first, shift, blocks) = (offset / bs, len / bs, size.div_ceil(bs));
        // Every pointer from the range to the end moves in this one
        // transaction: no step between would leave the file whole
        // (`StorageManager::blocks_per_tx`).
        if self.s.blocks_per_tx().is_some_and(|limit| blocks.saturating_sub(first) > limit) {
            return Err(errno(
                libc::EFBIG,
                "moving this many blocks takes more than one transaction can hold (a larger journal \
                 holds more: `fslab mkfs --journal-size`)",
            ));
        }
        let whole = blocks * bs;
        if whole != size {
            self.zero_past_end(ino, size, whole)?;
            self.s.update(ino, &crate::format::inode::InodeAttr { size: whole, ..attr })?;
        }
        let moved = if collapse {
            // What follows the range comes down onto it; what is left past
            // the new end (the range's own blocks, when the rest is
            // shorter, and anything preallocated past the old end) goes.
            let rest = blocks - first - shift;
            self.s
                .move_blocks(ino, first + shift, first, rest)
                .and_then(|()| self.s.free_blocks(ino, first + rest, u64::MAX))
        } else {
            self.s.move_blocks(ino, first, first + shift, blocks - first)
        };
        if let Err(e) = moved {
            // Nothing moved (a refusal comes first): the old size, and
            // its tail, come back.
            self.s.update(ino, &attr)?;
            return Err(e);
        }
        let now = self.s.now();
        attr.size = new_size;
        attr.mtime = now;
        attr.ctime = now;
        remove_privileges(&mut attr, who);
        self.s.update(ino, &attr)
    }
}
