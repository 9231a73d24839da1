//! Extended attributes: all of an inode's attributes live in its one xattr
//! block, logical block [`XATTR_LBN`], rewritten whole on every change.
//!
//! # Format of the xattr block (little-endian)
//!
//! | bytes   | field                                                        |
//! |---------|--------------------------------------------------------------|
//! | 0..4    | u32 magic [`XATTR_MAGIC`] = 0x5841_5454 ("XATT" as a big-endian word) |
//! | 4..8    | u32 CRC32C of the whole block, computed with bytes 4..8 zero  |
//! | 8..10   | u16 number of entries                                         |
//! | 10..12  | u16 zero (reserved)                                           |
//! | 12..16  | u32 bytes used: 16 + the size of all entries                  |
//! | 16..    | entries, back to back, no padding; zeros after `used`         |
//!
//! Entry: u8 `name_len` (1..=255), u32 `value_len` (0..=65536), then the
//! full name (with its namespace prefix: `user.`, `trusted.` or
//! `security.`), then the value. Entries are in insertion order; names
//! are unique. A block of all zeros (a hole) means "no attributes"; when the
//! last attribute goes, the block is freed with `free_xattr`.

use super::Ns;
use crate::error::{errno, Location};
use crate::format::codec::{crc32c_skipping, Decoder, Encoder};
use crate::format::Ino;
use crate::storage::{StorageManager, XATTR_LBN};
use crate::{Error, Result};

/// The magic number at the start of an xattr block.
pub const XATTR_MAGIC: u32 = 0x5841_5454;
/// The largest value of one extended attribute (Linux `XATTR_SIZE_MAX`); E2BIG beyond.
pub const XATTR_VALUE_MAX: usize = 65536;
const HEADER: usize = 16;
const ENTRY_HEADER: usize = 5;
const CRC_OFFSET: usize = 4;
// `system.` names are not stored: they stand for file-system features
// (POSIX ACLs) that fslab does not have, and storing
// `system.posix_acl_access` as plain bytes would let `cp -a` believe it had
// set a mode that was never applied. EOPNOTSUPP makes it fall back to chmod.
const NAMESPACES: [&[u8]; 3] = [b"user.", b"trusted.", b"security."];

type Attrs = Vec<(Vec<u8>, Vec<u8>)>;

/// Checks an attribute name: too long → ERANGE, unknown namespace →
/// EOPNOTSUPP, nothing after the prefix → EINVAL (as Linux).
pub(super) fn check_name(name: &[u8]) -> Result<()> {
    if name.len() > 255 {
        return Err(errno(libc::ERANGE, "attribute name longer than 255 bytes"));
    }
    match NAMESPACES.iter().find(|p| name.starts_with(p)) {
        None => Err(errno(libc::EOPNOTSUPP, "attribute name has no known namespace prefix")),
        Some(p) if name.len() == p.len() => Err(errno(libc::EINVAL, "attribute name is only a prefix")),
        Some(_) if name.contains(&0) => Err(errno(libc::EINVAL, "attribute name contains NUL")),
        Some(_) => Ok(()),
    }
}

/// Whether `block` is all zeros: the hole that stands for no attributes.
/// Every cached write asks for `security.capability` first (the kernel's
/// check for privileges to drop), so this runs once per write; a block
/// with attributes starts with the magic and is told apart at once, and
/// an OR over whole words lets the compiler check a hole a vector at a
/// time, where a byte-by-byte early exit cost 5% of a random writer's
/// daemon time.
fn is_hole(block: &[u8]) -> bool {
    if block.get(..4).is_some_and(|magic| magic != [0; 4]) {
        return false;
    }
    let words = block.chunks_exact(8);
    let tail = words.remainder().iter().fold(0u8, |acc, &b| acc | b);
    let body =
        words.fold(0u64, |acc, w| acc | u64::from_ne_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]));
    body == 0 && tail == 0
}

/// Decodes and validates an xattr block of inode `ino`.
pub(super) fn decode(block: &[u8], ino: Ino) -> Result<Attrs> {
    if is_hole(block) {
        return Ok(Vec::new());
    }
    let bad = |why: String| Error::corrupt_at("xattr block", Location::Inode(ino), why);
    let d = Decoder::new(block);
    let short = |_| bad("block shorter than its header".into());
    let magic = d.u32(0).map_err(short)?;
    if magic != XATTR_MAGIC {
        return Err(bad(format!("magic {magic:#010x}, expected {XATTR_MAGIC:#010x}")));
    }
    let stored = d.u32(CRC_OFFSET).map_err(short)?;
    let computed = crc32c_skipping(block, CRC_OFFSET);
    if stored != computed {
        return Err(bad(format!("checksum {stored:#010x}, computed {computed:#010x}")));
    }
    let count = d.u16(8).map_err(short)? as usize;
    let used = d.u32(12).map_err(short)? as usize;
    if used < HEADER || used > block.len() {
        return Err(bad(format!("used bytes {used} outside the block")));
    }
    let body = Decoder::new(&block[..used]);
    let mut attrs = Vec::with_capacity(count);
    let mut at = HEADER;
    for i in 0..count {
        let cut = |_| bad(format!("entry {i} runs past the used bytes"));
        let name_len = body.u8(at).map_err(cut)? as usize;
        let value_len = body.u32(at + 1).map_err(cut)? as usize;
        let name = body.bytes(at + ENTRY_HEADER, name_len).map_err(cut)?;
        let value = body.bytes(at + ENTRY_HEADER + name_len, value_len).map_err(cut)?;
        if check_name(name).is_err() || value_len > XATTR_VALUE_MAX {
            return Err(bad(format!("entry {i} has an invalid name or value length")));
        }
        if attrs.iter().any(|(n, _): &(Vec<u8>, Vec<u8>)| n == name) {
            return Err(bad(format!("entry {i} repeats a name")));
        }
        attrs.push((name.to_vec(), value.to_vec()));
        at += ENTRY_HEADER + name_len + value_len;
    }
    if at != used {
        return Err(bad(format!("entries end at {at}, header says {used}")));
    }
    Ok(attrs)
}

/// Encodes attributes into a `block_size` block; ENOSPC if they do not fit.
fn encode(attrs: &Attrs, block_size: usize) -> Result<Vec<u8>> {
    let used = HEADER + attrs.iter().map(|(n, v)| ENTRY_HEADER + n.len() + v.len()).sum::<usize>();
    if used > block_size || attrs.len() > u16::MAX as usize {
        return Err(errno(libc::ENOSPC, "extended attributes do not fit in one block"));
    }
    let mut block = vec![0u8; block_size];
    let mut e = Encoder::new(&mut block);
    e.u32(0, XATTR_MAGIC);
    e.u16(8, attrs.len() as u16);
    e.u32(12, used as u32);
    let mut at = HEADER;
    for (name, value) in attrs {
        e.u8(at, name.len() as u8);
        e.u32(at + 1, value.len() as u32);
        e.bytes(at + ENTRY_HEADER, name);
        e.bytes(at + ENTRY_HEADER + name.len(), value);
        at += ENTRY_HEADER + name.len() + value.len();
    }
    let crc = crc32c_skipping(&block, CRC_OFFSET);
    Encoder::new(&mut block).u32(CRC_OFFSET, crc);
    Ok(block)
}

/// The attribute a change of a file's contents or owner takes away: the
/// file capabilities that `execve` would grant (Linux's `cap_inode_killpriv`).
pub(super) const CAPABILITY_XATTR: &[u8] = b"security.capability";

impl<S: StorageManager> super::FileSystem<S> {
    /// Drops `ino`'s [`CAPABILITY_XATTR`], as Linux does before a write,
    /// truncate, fallocate or copy into a file and on a change of its owner
    /// (`file_remove_privs` and `chown_common` → `cap_inode_killpriv`): a
    /// file's capabilities do not survive a change of what it runs. Done
    /// first, in a transaction of its own, as Linux removes it before the
    /// change; a file with no attribute block (nearly every file) costs a
    /// look at its cached inode. The FUSE adapter relies on it
    /// (`FUSE_HANDLE_KILLPRIV_V2`), which spares the kernel's GETXATTR of it
    /// before every cached write.
    pub(super) fn drop_capability(&mut self, ino: Ino) -> Result<()> {
        let inode = self.storage.vget(ino)?;
        let has_block = inode.xattr.is_some() || self.storage.peek_block(ino, XATTR_LBN).is_some();
        if inode.attr.is_dir() || !has_block {
            return Ok(());
        }
        match self.removexattr(ino, CAPABILITY_XATTR) {
            Err(e) if e.errno() == libc::ENODATA => Ok(()),
            done => done,
        }
    }
}

impl<S: StorageManager> Ns<'_, S> {
    fn load_xattrs(&mut self, ino: Ino) -> Result<Attrs> {
        self.s.vget(ino)?;
        let mut block = vec![0u8; self.s.block_size() as usize];
        self.s.read_block(ino, XATTR_LBN, &mut block)?;
        decode(&block, ino)
    }

    fn store_xattrs(&mut self, ino: Ino, attrs: &Attrs) -> Result<()> {
        if attrs.is_empty() {
            self.s.free_xattr(ino)?;
        } else {
            let block = encode(attrs, self.s.block_size() as usize)?;
            self.s.write_block(ino, XATTR_LBN, 0, &block)?;
        }
        let now = self.s.now();
        self.modify(ino, |a| a.ctime = now)?;
        Ok(())
    }

    pub(super) fn setxattr(&mut self, ino: Ino, name: &[u8], value: &[u8], flags: i32) -> Result<()> {
        check_name(name)?;
        if value.len() > XATTR_VALUE_MAX {
            return Err(errno(libc::E2BIG, "attribute value larger than 64 KiB"));
        }
        if flags & !(libc::XATTR_CREATE | libc::XATTR_REPLACE) != 0 {
            return Err(errno(libc::EINVAL, "unknown setxattr flags"));
        }
        let mut attrs = self.load_xattrs(ino)?;
        match attrs.iter_mut().find(|(n, _)| n == name) {
            Some(_) if flags & libc::XATTR_CREATE != 0 => {
                return Err(errno(libc::EEXIST, "attribute exists"));
            }
            Some((_, v)) => *v = value.to_vec(),
            None if flags & libc::XATTR_REPLACE != 0 => {
                return Err(errno(libc::ENODATA, "no such attribute"));
            }
            None => attrs.push((name.to_vec(), value.to_vec())),
        }
        self.store_xattrs(ino, &attrs)
    }

    pub(super) fn getxattr(&mut self, ino: Ino, name: &[u8]) -> Result<Vec<u8>> {
        check_name(name)?;
        let attrs = self.load_xattrs(ino)?;
        let found = attrs.into_iter().find(|(n, _)| n == name);
        found.map(|(_, v)| v).ok_or(errno(libc::ENODATA, "no such attribute"))
    }

    pub(super) fn listxattr(&mut self, ino: Ino) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        for (name, _) in self.load_xattrs(ino)? {
            out.extend_from_slice(&name);
            out.push(0);
        }
        Ok(out)
    }

    pub(super) fn removexattr(&mut self, ino: Ino, name: &[u8]) -> Result<()> {
        check_name(name)?;
        let mut attrs = self.load_xattrs(ino)?;
        let i = attrs.iter().position(|(n, _)| n == name).ok_or(errno(libc::ENODATA, "no such attribute"))?;
        attrs.remove(i);
        self.store_xattrs(ino, &attrs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xattr_block_round_trips_and_rejects_damage() {
        let attrs: Attrs = vec![(b"user.a".to_vec(), b"1".to_vec()), (b"trusted.bb".to_vec(), vec![])];
        let block = encode(&attrs, 512).expect("fits");
        assert_eq!(decode(&block, 5).expect("valid"), attrs);
        assert_eq!(decode(&[0u8; 512], 5).expect("a hole"), Vec::new());
        for at in [0usize, 5, 9, 13, 17, 30, 400] {
            let mut bad = block.clone();
            bad[at] ^= 0x40;
            assert!(matches!(decode(&bad, 5), Err(Error::Corrupt { .. })), "flip at {at}");
        }
        // A consistent checksum over a lying entry length is still rejected.
        let mut lying = block.clone();
        Encoder::new(&mut lying).u32(17, 1000);
        let crc = crc32c_skipping(&lying, CRC_OFFSET);
        Encoder::new(&mut lying).u32(CRC_OFFSET, crc);
        assert!(matches!(decode(&lying, 5), Err(Error::Corrupt { .. })));
        assert_eq!(
            encode(&vec![(b"user.x".to_vec(), vec![0; 600])], 512).map_err(|e| e.errno()),
            Err(libc::ENOSPC)
        );
    }

    #[test]
    fn one_nonzero_byte_anywhere_makes_a_block_no_hole() {
        for len in [0usize, 3, 8, 13, 512] {
            assert!(is_hole(&vec![0u8; len]), "{len} zeros");
            for at in 0..len {
                let mut block = vec![0u8; len];
                block[at] = 0x10;
                assert!(!is_hole(&block), "byte {at} of {len}");
                if len == 512 {
                    assert!(matches!(decode(&block, 5), Err(Error::Corrupt { .. })), "byte {at}");
                }
            }
        }
    }
}
