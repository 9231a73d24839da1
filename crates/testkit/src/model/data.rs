//! A file's contents in the [`Model`]: read, write, truncate, chmod and
//! fallocate (with its collapse and insert ranges), and the privileges a
//! write or a change of size takes away.

use super::{Body, Model, NodeId, Res};

impl Model {
    fn file(&self, id: NodeId) -> Res<&Vec<u8>> {
        match &self.get(id)?.body {
            Body::File(d) => Ok(d),
            Body::Dir { .. } => Err(libc::EISDIR),
            Body::Symlink(_) => Err(libc::EINVAL),
        }
    }

    fn file_mut(&mut self, id: NodeId) -> Res<&mut Vec<u8>> {
        match &mut self.get_mut(id)?.body {
            Body::File(d) => Ok(d),
            Body::Dir { .. } => Err(libc::EISDIR),
            Body::Symlink(_) => Err(libc::EINVAL),
        }
    }

    /// Reads up to `len` bytes at `offset`.
    pub fn read(&self, id: NodeId, offset: u64, len: usize) -> Res<Vec<u8>> {
        let data = self.file(id)?;
        let start = (offset as usize).min(data.len());
        let end = start.saturating_add(len).min(data.len());
        Ok(data[start..end].to_vec())
    }

    /// Clears set-user-ID, and set-group-ID when group-execute is set, as
    /// POSIX asks when a file is written or truncated (and Linux on
    /// fallocate).
    fn kill_privileges(&mut self, id: NodeId) -> Res<()> {
        let node = self.get_mut(id)?;
        node.perm &= !libc::S_ISUID;
        if node.perm & libc::S_IXGRP != 0 {
            node.perm &= !libc::S_ISGID;
        }
        Ok(())
    }

    /// The block numbers `offset .. end` touches.
    fn blocks_of(&self, offset: u64, end: u64) -> std::ops::Range<u64> {
        let bs = self.limits.block_size as u64;
        offset / bs..end.div_ceil(bs)
    }

    /// Writes `bytes` at `offset`; returns the count.
    pub fn write(&mut self, id: NodeId, offset: u64, bytes: &[u8]) -> Res<usize> {
        self.file(id)?;
        if bytes.is_empty() {
            return Ok(0);
        }
        self.kill_privileges(id)?;
        let touched = self.blocks_of(offset, offset + bytes.len() as u64);
        self.get_mut(id)?.allocated.extend(touched);
        let data = self.file_mut(id)?;
        let end = offset as usize + bytes.len();
        if data.len() < end {
            data.resize(end, 0);
        }
        data[offset as usize..end].copy_from_slice(bytes);
        Ok(bytes.len())
    }

    /// Sets the size of a regular file.
    pub fn truncate(&mut self, id: NodeId, size: u64) -> Res<()> {
        self.file_mut(id)?.resize(size as usize, 0);
        let kept = self.blocks_of(0, size).end;
        self.get_mut(id)?.allocated.retain(|&b| b < kept);
        self.kill_privileges(id)
    }

    /// Sets the permission bits.
    pub fn chmod(&mut self, id: NodeId, perm: u32) -> Res<()> {
        self.get_mut(id)?.perm = perm & 0o7777;
        Ok(())
    }

    /// `fallocate` with `mode` as in Linux: 0 and KEEP_SIZE allocate,
    /// PUNCH_HOLE|KEEP_SIZE punches, ZERO_RANGE (|KEEP_SIZE) zeroes.
    pub fn fallocate(&mut self, id: NodeId, offset: u64, len: u64, mode: i32) -> Res<()> {
        let keep = libc::FALLOC_FL_KEEP_SIZE;
        let allocate = mode & !keep == 0;
        let punch = mode == libc::FALLOC_FL_PUNCH_HOLE | keep;
        let zero = mode & !keep == libc::FALLOC_FL_ZERO_RANGE;
        let (collapse, insert) = (libc::FALLOC_FL_COLLAPSE_RANGE, libc::FALLOC_FL_INSERT_RANGE);
        if mode == collapse || mode == insert {
            return self.shift(id, offset, len, mode == collapse);
        }
        if mode & (collapse | insert) != 0 {
            return Err(libc::EINVAL);
        }
        if !(allocate || punch || zero) {
            return Err(libc::EOPNOTSUPP);
        }
        let data = self.file_mut(id)?;
        if len == 0 {
            return Err(libc::EINVAL);
        }
        let end = offset.checked_add(len).ok_or(libc::EFBIG)? as usize;
        if punch || zero {
            let stop = end.min(data.len());
            if (offset as usize) < stop {
                data[offset as usize..stop].fill(0);
            }
        }
        if !punch && mode & keep == 0 && end > data.len() {
            data.resize(end, 0);
        }
        let touched = self.blocks_of(offset, end as u64);
        let bs = self.limits.block_size as u64;
        let allocated = &mut self.get_mut(id)?.allocated;
        if punch {
            // Blocks wholly inside the range go; the partial ones at its
            // ends are zeroed in place.
            let whole = offset.div_ceil(bs)..end as u64 / bs;
            allocated.retain(|b| !whole.contains(b));
        } else {
            allocated.extend(touched);
        }
        self.kill_privileges(id)
    }

    /// `fallocate`'s COLLAPSE_RANGE (`collapse`) or INSERT_RANGE: the bytes
    /// of `offset .. offset + len` go, or that many zeros come in, and
    /// what follows moves; whole blocks only, inside the file.
    fn shift(&mut self, id: NodeId, offset: u64, len: u64, collapse: bool) -> Res<()> {
        if len == 0 {
            return Err(libc::EINVAL);
        }
        let size = self.file(id)?.len() as u64;
        let end = offset.checked_add(len).ok_or(libc::EFBIG)?;
        let bs = self.limits.block_size as u64;
        if !offset.is_multiple_of(bs) || !len.is_multiple_of(bs) {
            return Err(libc::EINVAL);
        }
        if (collapse && end >= size) || (!collapse && offset >= size) {
            return Err(libc::EINVAL);
        }
        let (first, shift) = (offset / bs, len / bs);
        let data = self.file_mut(id)?;
        let blocks_after = if collapse {
            data.drain(offset as usize..end as usize);
            (size - len).div_ceil(bs)
        } else {
            data.splice(offset as usize..offset as usize, std::iter::repeat_n(0, len as usize));
            u64::MAX
        };
        let node = self.get_mut(id)?;
        node.allocated = std::mem::take(&mut node.allocated)
            .into_iter()
            .filter_map(|b| match b {
                b if b < first => Some(b),
                b if collapse && b < first + shift => None,
                b if collapse => Some(b - shift),
                b => Some(b + shift),
            })
            .filter(|&b| b < blocks_after)
            .collect();
        self.kill_privileges(id)
    }
}
