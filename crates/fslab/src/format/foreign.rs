//! Other file systems' signatures at the start of a device: what a device
//! reformatted since it held fslab shows first. fslab keeps copies of its
//! superblock further in, which another mkfs may leave behind; a mount or a
//! repair that used them would write over the file system made since. The
//! signatures are those blkid's probes look for (each file system's own
//! documentation gives the offsets).

/// Bytes from the start of a device [`other_file_system`] looks at: up to
/// the end of btrfs's magic.
pub const SIGNATURE_BYTES: usize = BTRFS_MAGIC_AT + 8;

const BTRFS_MAGIC_AT: usize = 65_600;

/// The file system (or container) whose signature `head`, the first bytes
/// of a device, carries, named for a message; `None` if none is known.
/// A `head` shorter than [`SIGNATURE_BYTES`] is looked at as far as it goes.
pub fn other_file_system(head: &[u8]) -> Option<&'static str> {
    let at = |offset: usize, bytes: &[u8]| head.get(offset..offset + bytes.len()) == Some(bytes);
    let u32_at =
        |offset: usize| head.get(offset..offset + 4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
    // ext2/3/4: the superblock at byte 1024, its magic 56 bytes in; a
    // revision and block size it could hold, so that two stray bytes do
    // not pass for it.
    if at(1080, &[0x53, 0xEF])
        && u32_at(1024 + 76).is_some_and(|r| r <= 1)
        && u32_at(1024 + 24).is_some_and(|b| b <= 6)
    {
        return Some("an ext2/3/4 file system");
    }
    let signatures: [(usize, &[u8], &'static str); 10] = [
        (0, b"XFSB", "an XFS file system"),
        (BTRFS_MAGIC_AT, b"_BHRfS_M", "a btrfs file system"),
        (3, b"EXFAT   ", "an exFAT file system"),
        (3, b"NTFS    ", "an NTFS file system"),
        (0, b"LUKS\xba\xbe", "a LUKS encrypted volume"),
        (512, b"LABELONE", "an LVM physical volume"),
        (512, b"EFI PART", "a GPT partition table"),
        (32_769, b"CD001", "an ISO 9660 image"),
        (4086, b"SWAPSPACE2", "Linux swap space"),
        (4086, b"SWAP-SPACE", "Linux swap space"),
    ];
    if let Some((_, _, name)) = signatures.iter().find(|(offset, magic, _)| at(*offset, magic)) {
        return Some(name);
    }
    // FAT: the boot sector's signature and the type its BPB names.
    if at(510, &[0x55, 0xAA]) && (at(54, b"FAT") || at(82, b"FAT32")) {
        return Some("a FAT file system");
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head_with(offset: usize, bytes: &[u8]) -> Vec<u8> {
        let mut head = vec![0u8; SIGNATURE_BYTES];
        head[offset..offset + bytes.len()].copy_from_slice(bytes);
        head
    }

    #[test]
    fn each_signature_is_found_where_its_file_system_puts_it() {
        assert_eq!(other_file_system(&head_with(0, b"XFSB")), Some("an XFS file system"));
        assert_eq!(other_file_system(&head_with(BTRFS_MAGIC_AT, b"_BHRfS_M")), Some("a btrfs file system"));
        assert_eq!(other_file_system(&head_with(4086, b"SWAPSPACE2")), Some("Linux swap space"));
        let mut fat = head_with(510, &[0x55, 0xAA]);
        assert_eq!(other_file_system(&fat), None, "a boot sector alone is no file system");
        fat[82..87].copy_from_slice(b"FAT32");
        assert_eq!(other_file_system(&fat), Some("a FAT file system"));
        assert_eq!(other_file_system(&vec![0u8; SIGNATURE_BYTES]), None);
        assert_eq!(other_file_system(&[]), None, "a short head is looked at as far as it goes");
    }

    #[test]
    fn an_ext_magic_needs_a_superblock_around_it() {
        let mut ext = head_with(1080, &[0x53, 0xEF]);
        assert_eq!(other_file_system(&ext), Some("an ext2/3/4 file system"));
        ext[1024 + 76] = 7;
        assert_eq!(other_file_system(&ext), None, "a revision ext never had");
    }
}
