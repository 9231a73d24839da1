//! The on-disk inode, shared by every layout: 256 bytes, checksummed.
//! `docs/FORMAT.md` ("Inode") gives the byte layout.

use super::blockno::{NDADDR, NIADDR};
use super::codec::{crc32c_skipping, Decoder, Encoder};
use super::{Daddr, Ino, PointerOverflow, TimeNs};

/// Bytes of one on-disk inode.
pub const INODE_SIZE: usize = 256;
const CRC_OFFSET: usize = INODE_SIZE - 4;

/// File type bits of `mode` (the `S_IFMT` values of POSIX).
pub mod kind {
    /// Mask of the type bits.
    pub const MASK: u32 = 0o170000;
    /// Regular file.
    pub const REG: u32 = 0o100000;
    /// Directory.
    pub const DIR: u32 = 0o040000;
    /// Symbolic link.
    pub const LNK: u32 = 0o120000;
    /// Character device.
    pub const CHR: u32 = 0o020000;
    /// Block device.
    pub const BLK: u32 = 0o060000;
    /// FIFO.
    pub const FIFO: u32 = 0o010000;
    /// Socket.
    pub const SOCK: u32 = 0o140000;
}

/// The attributes the namespace (ufs) owns and may change with `update`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct InodeAttr {
    /// Type and permission bits.
    pub mode: u32,
    /// Number of directory entries naming this inode.
    pub nlink: u32,
    /// Owner.
    pub uid: u32,
    /// Group.
    pub gid: u32,
    /// Length in bytes.
    pub size: u64,
    /// Last access.
    pub atime: TimeNs,
    /// Last data modification.
    pub mtime: TimeNs,
    /// Last status change.
    pub ctime: TimeNs,
    /// Creation (birth) time.
    pub btime: TimeNs,
    /// BSD file flags (chflags); stored, not interpreted yet.
    pub flags: u32,
    /// Device number of a character or block device.
    pub rdev: u64,
}

impl InodeAttr {
    /// The type bits of `mode`.
    pub fn kind(&self) -> u32 {
        self.mode & kind::MASK
    }
    /// Whether this is a directory.
    pub fn is_dir(&self) -> bool {
        self.kind() == kind::DIR
    }
    /// Whether this is a regular file.
    pub fn is_reg(&self) -> bool {
        self.kind() == kind::REG
    }
    /// Whether this is a symbolic link.
    pub fn is_symlink(&self) -> bool {
        self.kind() == kind::LNK
    }
    /// Whether this is a device node, a FIFO or a socket: an inode that
    /// `mknod` makes empty and nothing writes data to.
    pub fn is_node(&self) -> bool {
        matches!(self.kind(), kind::CHR | kind::BLK | kind::FIFO | kind::SOCK)
    }
}

/// A whole inode as stored: attributes plus the block map, which only the
/// storage manager changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Inode {
    /// This inode's number (lets an inode block be validated and searched).
    pub ino: Ino,
    /// Bumped each time the number is reused.
    pub generation: u32,
    /// The namespace's attributes.
    pub attr: InodeAttr,
    /// Space held, in 512-byte units (data, indirect and xattr blocks).
    pub blocks: u64,
    /// Direct block addresses.
    pub direct: [Daddr; NDADDR],
    /// Single, double and triple indirect block addresses.
    pub indirect: [Daddr; NIADDR],
    /// Address of the extended-attribute block.
    pub xattr: Daddr,
    /// The next inode on the layout's orphan list (0 ends it): set only
    /// while this inode has no name and is still open, so that a crash
    /// before its last close leaves a list mount can free it from.
    pub next_orphan: Ino,
}

/// Why an inode failed to decode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InodeError {
    /// The stored checksum does not match the bytes.
    Checksum,
    /// The slot is shorter than an inode.
    Truncated,
}

impl Inode {
    /// Whether the inode points at any block of a file's data tree (direct
    /// or indirect; its attribute block aside).
    pub fn holds_data_pointer(&self) -> bool {
        self.direct.iter().chain(&self.indirect).any(|a| a.is_some())
    }

    /// Encodes into exactly [`INODE_SIZE`] bytes of `out`. Fails, writing
    /// nothing useful, if a block pointer does not fit its 32 bits.
    pub fn encode(&self, out: &mut [u8]) -> Result<(), PointerOverflow> {
        let out = &mut out[..INODE_SIZE];
        out.fill(0);
        let mut e = Encoder::new(out);
        let a = &self.attr;
        e.u64(0, self.ino);
        e.u32(8, a.mode);
        e.u32(12, a.nlink);
        e.u32(16, a.uid);
        e.u32(20, a.gid);
        e.u64(24, a.size);
        e.u64(32, self.blocks);
        e.i64(40, a.atime);
        e.i64(48, a.mtime);
        e.i64(56, a.ctime);
        e.i64(64, a.btime);
        e.u32(72, self.generation);
        e.u32(76, a.flags);
        e.u64(80, a.rdev);
        for (i, &d) in self.direct.iter().enumerate() {
            e.u32(88 + 4 * i, d.to_pointer()?);
        }
        for (i, &d) in self.indirect.iter().enumerate() {
            e.u32(136 + 4 * i, d.to_pointer()?);
        }
        e.u32(148, self.xattr.to_pointer()?);
        e.u64(152, self.next_orphan);
        let crc = crc32c_skipping(out, CRC_OFFSET);
        Encoder::new(out).u32(CRC_OFFSET, crc);
        Ok(())
    }

    /// Decodes and validates an inode slot.
    pub fn decode(bytes: &[u8]) -> Result<Inode, InodeError> {
        let bytes = bytes.get(..INODE_SIZE).ok_or(InodeError::Truncated)?;
        let d = Decoder::new(bytes);
        let get32 = |o| d.u32(o).map_err(|_| InodeError::Truncated);
        let get64 = |o| d.u64(o).map_err(|_| InodeError::Truncated);
        let geti = |o| d.i64(o).map_err(|_| InodeError::Truncated);
        if get32(CRC_OFFSET)? != crc32c_skipping(bytes, CRC_OFFSET) {
            return Err(InodeError::Checksum);
        }
        let mut inode = Inode {
            ino: get64(0)?,
            generation: get32(72)?,
            attr: InodeAttr {
                mode: get32(8)?,
                nlink: get32(12)?,
                uid: get32(16)?,
                gid: get32(20)?,
                size: get64(24)?,
                atime: geti(40)?,
                mtime: geti(48)?,
                ctime: geti(56)?,
                btime: geti(64)?,
                flags: get32(76)?,
                rdev: get64(80)?,
            },
            blocks: get64(32)?,
            ..Inode::default()
        };
        for i in 0..NDADDR {
            inode.direct[i] = Daddr::from_pointer(get32(88 + 4 * i)?);
        }
        for i in 0..NIADDR {
            inode.indirect[i] = Daddr::from_pointer(get32(136 + 4 * i)?);
        }
        inode.xattr = Daddr::from_pointer(get32(148)?);
        inode.next_orphan = get64(152)?;
        Ok(inode)
    }

    /// Decodes an inode slot as if its checksum were right: for fsck, which
    /// seals again an inode whose fields all pass its checks. `None` for a
    /// slot shorter than an inode.
    pub fn decode_unsealed(bytes: &[u8]) -> Option<Inode> {
        let mut copy = bytes.get(..INODE_SIZE)?.to_vec();
        let crc = crc32c_skipping(&copy, CRC_OFFSET);
        Encoder::new(&mut copy).u32(CRC_OFFSET, crc);
        Inode::decode(&copy).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inode_round_trips_and_detects_a_flipped_bit() {
        let mut inode = Inode { ino: 77, generation: 3, blocks: 16, ..Inode::default() };
        inode.attr =
            InodeAttr { mode: kind::REG | 0o644, nlink: 1, size: 8191, mtime: -5, ..InodeAttr::default() };
        inode.direct[0] = Daddr::new(1234);
        inode.indirect[2] = Daddr::new(99);
        inode.next_orphan = 4242;
        let mut buf = [0u8; INODE_SIZE];
        inode.encode(&mut buf).expect("pointers fit");
        assert_eq!(Inode::decode(&buf), Ok(inode));
        buf[30] ^= 0x10;
        assert_eq!(Inode::decode(&buf), Err(InodeError::Checksum));
        assert_eq!(Inode::decode(&buf[..100]), Err(InodeError::Truncated));
        inode.xattr = Daddr::new(1 << 32);
        assert!(inode.encode(&mut buf).is_err(), "an address past 32 bits is refused, not wrapped");
    }
}
