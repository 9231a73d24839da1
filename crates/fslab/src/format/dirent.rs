//! Directory blocks: the BSD directory format, in 512-byte checksummed chunks.
//!
//! # Format
//!
//! A directory's data is a sequence of **chunks** of [`DIRBLKSIZ`] = 512 bytes.
//! A file-system block of `B` bytes holds `B / 512` chunks, and a directory's
//! size is always a multiple of `B`: a directory grows by whole blocks of
//! empty chunks. No entry ever crosses a chunk boundary.
//!
//! Chunk layout (all integers little-endian):
//!
//! | bytes     | field                                                     |
//! |-----------|-----------------------------------------------------------|
//! | 0..504    | entries, tiling the 504 bytes exactly                     |
//! | 504..508  | u32 CRC32C of bytes 0..504 of this chunk                  |
//! | 508..512  | u32 magic [`CHUNK_MAGIC`] = 0x4449_5254 ("DIRT" read as a big-endian word) |
//!
//! Entry layout, at a 4-aligned offset inside the chunk:
//!
//! | bytes        | field                                                  |
//! |--------------|--------------------------------------------------------|
//! | 0..4         | u32 inode number; 0 = an unused slot                   |
//! | 4..6         | u16 `reclen`: bytes from this entry to the next entry of the chunk (or to byte 504) |
//! | 6            | u8 file type, a `DT_*` value (see [`dt`])              |
//! | 7            | u8 `namelen`                                           |
//! | 8..8+namelen | the name; then zero padding to a multiple of 4         |
//!
//! An entry needs [`entry_size`]`(namelen)` = 8 + namelen rounded up to 4
//! bytes; any bytes of `reclen` beyond that are slack where a later entry may
//! be inserted. Rules checked on every read ([`parse_chunk`]):
//!
//! * the tail's magic and CRC match;
//! * every `reclen` is a multiple of 4, at least the entry's size, and keeps the
//!   entry inside bytes 0..504; the records tile 0..504 exactly;
//! * a live entry (`ino != 0`) has `1 <= namelen <= 255` and a name free of
//!   `/` and NUL; an unused slot may have any `namelen` that fits its record
//!   (writers store 0).
//!
//! An empty chunk is one unused slot with `reclen = 504`. The first chunk of
//! a directory starts with `.` (reclen 12) and `..`, both real entries.
//!
//! Entries never move, so an entry's byte offset in the directory file is a
//! stable `readdir` cookie: insertion splits the slack of an existing record
//! or fills an unused slot; deletion merges the record into the previous
//! entry of its chunk, or, for the first entry of a chunk, sets its inode
//! number to 0. There is no compaction of entries; trailing blocks left with
//! no live entry are freed (never the first block), which moves nothing.

use super::codec::{crc32c, Decoder, Encoder};
use super::inode::kind;
use super::{Ino, NAME_MAX};
use crate::error::Location;
use crate::{Error, Result};

/// Bytes of one directory chunk.
pub const DIRBLKSIZ: usize = 512;
/// Bytes of a chunk that hold entries; the rest is the tail.
pub const ENTRY_BYTES: usize = DIRBLKSIZ - 8;
/// The magic number in every chunk tail.
pub const CHUNK_MAGIC: u32 = 0x4449_5254;
/// Bytes of an entry before its name.
pub const ENTRY_HEADER: usize = 8;

/// The `DT_*` file-type values stored in entries (as in BSD `<dirent.h>`).
pub mod dt {
    /// Unknown type.
    pub const UNKNOWN: u8 = 0;
    /// FIFO.
    pub const FIFO: u8 = 1;
    /// Character device.
    pub const CHR: u8 = 2;
    /// Directory.
    pub const DIR: u8 = 4;
    /// Block device.
    pub const BLK: u8 = 6;
    /// Regular file.
    pub const REG: u8 = 8;
    /// Symbolic link.
    pub const LNK: u8 = 10;
    /// Socket.
    pub const SOCK: u8 = 12;
}

/// The `DT_*` value for an inode `mode`.
pub fn dt_from_mode(mode: u32) -> u8 {
    match mode & kind::MASK {
        kind::FIFO => dt::FIFO,
        kind::CHR => dt::CHR,
        kind::DIR => dt::DIR,
        kind::BLK => dt::BLK,
        kind::REG => dt::REG,
        kind::LNK => dt::LNK,
        kind::SOCK => dt::SOCK,
        _ => dt::UNKNOWN,
    }
}

/// The type bits (`format::inode::kind`) for a `DT_*` value; 0 if unknown.
pub fn kind_from_dt(dtype: u8) -> u32 {
    match dtype {
        dt::FIFO => kind::FIFO,
        dt::CHR => kind::CHR,
        dt::DIR => kind::DIR,
        dt::BLK => kind::BLK,
        dt::REG => kind::REG,
        dt::LNK => kind::LNK,
        dt::SOCK => kind::SOCK,
        _ => 0,
    }
}

/// Bytes an entry with a `namelen`-byte name needs.
pub const fn entry_size(namelen: usize) -> usize {
    ENTRY_HEADER + namelen.div_ceil(4) * 4
}

/// One entry of a chunk, borrowed from the chunk's bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry<'a> {
    /// Byte offset of the entry inside its chunk.
    pub offset: usize,
    /// Inode number; 0 for an unused slot.
    pub ino: Ino,
    /// Bytes from this entry to the next.
    pub reclen: usize,
    /// `DT_*` type.
    pub dtype: u8,
    /// The name (empty for an unused slot written by fslab).
    pub name: &'a [u8],
}

impl Entry<'_> {
    /// Bytes of this record a new entry could use: the slack after a live
    /// entry, or the whole record of an unused slot.
    pub fn free_bytes(&self) -> usize {
        if self.ino == 0 {
            self.reclen
        } else {
            self.reclen - entry_size(self.name.len())
        }
    }
}

/// Whether `name` may be stored in a directory entry: 1..=255 bytes, no `/`, no NUL.
#[inline]
pub fn valid_name(name: &[u8]) -> bool {
    // Eight bytes at a time, with no early exit: a linear lookup checks
    // every name it passes, and most are a few bytes long.
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
    const SLASHES: u64 = u64::from_ne_bytes([b'/'; 8]);
    let has_zero_byte = |w: u64| w.wrapping_sub(ONES) & !w & HIGHS != 0;
    let words = name.chunks_exact(8);
    let mut forbidden = words.remainder().iter().fold(false, |bad, &b| bad | (b == b'/') | (b == 0));
    for word in words {
        let w = u64::from_ne_bytes([word[0], word[1], word[2], word[3], word[4], word[5], word[6], word[7]]);
        forbidden |= has_zero_byte(w) | has_zero_byte(w ^ SLASHES);
    }
    !name.is_empty() && name.len() <= NAME_MAX && !forbidden
}

/// Whether two names are the same bytes. Compared inline rather than by
/// `==`, which calls `memcmp` for every entry of the same length a linear
/// lookup passes; names are short, so a call costs more than the compare.
#[inline]
pub fn same_name(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(true, |same, (x, y)| same & (x == y))
}

/// Decodes and validates one chunk. `ino` and `chunk_offset` (the chunk's
/// byte offset in the directory) only name the chunk in errors.
pub fn parse_chunk(chunk: &[u8], ino: Ino, chunk_offset: u64) -> Result<Vec<Entry<'_>>> {
    let mut entries = Vec::with_capacity(8);
    for_each_entry(chunk, ino, chunk_offset, |e| entries.push(*e))?;
    Ok(entries)
}

/// Validates one chunk as [`parse_chunk`] does and hands each entry to
/// `visit` in order, without collecting them: the linear scan of a large
/// directory visits every chunk per lookup, and an allocation per chunk
/// was most of its cost. `visit` sees every entry before the chunk is
/// known valid; the caller discards what it learned on an error.
pub fn for_each_entry<'a>(
    chunk: &'a [u8],
    ino: Ino,
    chunk_offset: u64,
    mut visit: impl FnMut(&Entry<'a>),
) -> Result<()> {
    let mut walk = ChunkWalk::new(chunk, ino, chunk_offset)?;
    loop {
        match walk.next_entry(true) {
            Ok(Some(e)) => visit(&e),
            Ok(None) => return Ok(()),
            Err(damage) => return Err(walk.bad(damage.to_string())),
        }
    }
}

/// The entry that starts at byte `at` of one chunk, found without decoding
/// the records after it: the tail's magic and CRC are checked as by
/// [`parse_chunk`], and so are the headers of the records from the start
/// of the chunk up to `at` (their names are not read) and the entry at
/// `at` whole. `None` if no record starts at `at`. This is the confirmation of a directory-hash candidate, which
/// knows the offset and needs only that one entry.
pub fn entry_in_chunk(chunk: &[u8], ino: Ino, chunk_offset: u64, at: usize) -> Result<Option<Entry<'_>>> {
    let mut walk = ChunkWalk::new(chunk, ino, chunk_offset)?;
    while walk.at <= at {
        match walk.next(walk.at == at)? {
            Some(e) if e.offset == at => return Ok(Some(e)),
            Some(_) => {}
            None => break,
        }
    }
    Ok(None)
}

/// The records of one chunk, decoded and validated one at a time, after
/// its tail has been checked.
struct ChunkWalk<'a> {
    /// Bytes 0..504 of the chunk.
    entries: &'a [u8],
    at: usize,
    ino: Ino,
    chunk_offset: u64,
}

impl<'a> ChunkWalk<'a> {
    /// Checks the tail of `chunk` (its magic and CRC).
    fn new(chunk: &'a [u8], ino: Ino, chunk_offset: u64) -> Result<ChunkWalk<'a>> {
        let walk = ChunkWalk { entries: &[], at: 0, ino, chunk_offset };
        let d = Decoder::new(chunk);
        let magic = d.u32(ENTRY_BYTES + 4).map_err(|_| walk.bad("chunk shorter than 512 bytes".into()))?;
        if magic != CHUNK_MAGIC {
            return Err(walk.bad(format!("magic {magic:#010x}, expected {CHUNK_MAGIC:#010x}")));
        }
        let stored = d.u32(ENTRY_BYTES).map_err(|_| walk.bad("no checksum".into()))?;
        let computed = crc32c(&chunk[..ENTRY_BYTES]);
        if stored != computed {
            return Err(walk.bad(format!("checksum {stored:#010x}, computed {computed:#010x}")));
        }
        // Entries are read only from bytes 0..504, so a record can never reach into the tail.
        Ok(ChunkWalk { entries: &chunk[..ENTRY_BYTES], ..walk })
    }

    fn bad(&self, why: String) -> Error {
        Error::corrupt_at(
            "directory chunk",
            Location::Inode(self.ino),
            format!("offset {}: {why}", self.chunk_offset),
        )
    }

    /// The next record, validated (its name too if `check_name`); `None`
    /// after the last. The error is a small value and becomes an [`Error`]
    /// only when it happens ([`ChunkWalk::bad`]): this runs for every entry
    /// of every chunk a linear lookup passes, and a wide return value was
    /// a large part of that.
    #[inline(always)]
    fn next_entry(&mut self, check_name: bool) -> std::result::Result<Option<Entry<'a>>, Damage> {
        let at = self.at;
        if at >= ENTRY_BYTES {
            return Ok(None);
        }
        let damage = |kind| Damage { at, kind };
        let Some(header) = self.entries.get(at..at + ENTRY_HEADER) else {
            return Err(damage(DamageKind::CutShort));
        };
        let entry_ino = u32::from_le_bytes([header[0], header[1], header[2], header[3]]);
        let reclen = usize::from(u16::from_le_bytes([header[4], header[5]]));
        let (dtype, namelen) = (header[6], usize::from(header[7]));
        if !reclen.is_multiple_of(4) {
            return Err(damage(DamageKind::ReclenUnaligned(reclen)));
        } else if reclen < entry_size(namelen) {
            return Err(damage(DamageKind::ReclenShort(reclen)));
        } else if at + reclen > ENTRY_BYTES {
            return Err(damage(DamageKind::ReclenPastChunk(reclen)));
        }
        // reclen >= entry_size(namelen) and at + reclen <= 504: the name fits.
        let name = &self.entries[at + ENTRY_HEADER..at + ENTRY_HEADER + namelen];
        if check_name && entry_ino != 0 && !valid_name(name) {
            return Err(damage(DamageKind::InvalidName));
        }
        self.at = at + reclen;
        Ok(Some(Entry { offset: at, ino: entry_ino as Ino, reclen, dtype, name }))
    }

    /// The next record as [`ChunkWalk::next_entry`], its damage described.
    fn next(&mut self, check_name: bool) -> Result<Option<Entry<'a>>> {
        self.next_entry(check_name).map_err(|d| self.bad(d.to_string()))
    }
}

/// What is wrong with a record, and where it starts.
#[derive(Debug, Clone, Copy)]
struct Damage {
    at: usize,
    kind: DamageKind,
}

#[derive(Debug, Clone, Copy)]
enum DamageKind {
    CutShort,
    ReclenUnaligned(usize),
    ReclenShort(usize),
    ReclenPastChunk(usize),
    InvalidName,
}

impl std::fmt::Display for Damage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let at = self.at;
        match self.kind {
            DamageKind::CutShort => write!(f, "entry at {at} cut short"),
            DamageKind::ReclenUnaligned(r) => write!(f, "entry at {at}: reclen {r} not a multiple of 4"),
            DamageKind::ReclenShort(r) => write!(f, "entry at {at}: reclen {r} shorter than its name needs"),
            DamageKind::ReclenPastChunk(r) => write!(f, "entry at {at}: reclen {r} runs past the chunk"),
            DamageKind::InvalidName => write!(f, "entry at {at}: invalid name"),
        }
    }
}

/// Writes an entry header and name at `offset` of `chunk` (no tail update).
/// The caller has checked that `ino` fits in 32 bits and the name is valid.
pub fn put_entry(chunk: &mut [u8], offset: usize, ino: Ino, reclen: usize, dtype: u8, name: &[u8]) {
    let mut e = Encoder::new(chunk);
    e.u32(offset, ino as u32);
    e.u16(offset + 4, reclen as u16);
    e.u8(offset + 6, dtype);
    e.u8(offset + 7, name.len() as u8);
    e.bytes(offset + ENTRY_HEADER, name);
    let padded = entry_size(name.len());
    chunk[offset + ENTRY_HEADER + name.len()..offset + padded].fill(0);
}

/// Changes the `reclen` of the entry at `offset`.
pub fn set_reclen(chunk: &mut [u8], offset: usize, reclen: usize) {
    Encoder::new(chunk).u16(offset + 4, reclen as u16);
}

/// Recomputes the tail (CRC and magic) of a chunk after its entries changed.
pub fn seal_chunk(chunk: &mut [u8]) {
    let crc = crc32c(&chunk[..ENTRY_BYTES]);
    let mut e = Encoder::new(chunk);
    e.u32(ENTRY_BYTES, crc);
    e.u32(ENTRY_BYTES + 4, CHUNK_MAGIC);
}

/// Fills `chunk` with one unused slot spanning it, sealed.
pub fn init_chunk(chunk: &mut [u8]) {
    chunk[..DIRBLKSIZ].fill(0);
    put_entry(chunk, 0, 0, ENTRY_BYTES, dt::UNKNOWN, b"");
    seal_chunk(chunk);
}

/// A block of `block_size` bytes of empty chunks.
pub fn empty_dir_block(block_size: usize) -> Vec<u8> {
    let mut block = vec![0u8; block_size];
    for chunk in block.chunks_exact_mut(DIRBLKSIZ) {
        init_chunk(chunk);
    }
    block
}

/// The first block of a new directory `ino` whose parent is `parent`:
/// `.` and `..` in the first chunk, the other chunks empty. This is how
/// `mkdir` and `mkfs` (for the root, its own parent) make a directory.
pub fn new_dir_block(block_size: usize, ino: Ino, parent: Ino) -> Vec<u8> {
    let mut block = empty_dir_block(block_size);
    let chunk = &mut block[..DIRBLKSIZ];
    let dot = entry_size(1);
    put_entry(chunk, 0, ino, dot, dt::DIR, b".");
    put_entry(chunk, dot, parent, ENTRY_BYTES - dot, dt::DIR, b"..");
    seal_chunk(chunk);
    block
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_with_a_slash_or_nul_at_any_place_is_invalid() {
        for len in 1..=NAME_MAX {
            let name = vec![b'a'; len];
            assert!(valid_name(&name), "{len} bytes of 'a'");
            for at in 0..len {
                for bad in [b'/', 0] {
                    let mut name = name.clone();
                    name[at] = bad;
                    assert!(!valid_name(&name), "{bad:#x} at {at} of {len}");
                }
            }
        }
        // Bytes next to the forbidden ones, and high bytes (UTF-8), are allowed.
        assert!(valid_name(b".0\x01\xff\x80\x7f\x2e\x30 \xc3\xa9"));
        assert!(!valid_name(b""));
        assert!(!valid_name(&[b'a'; NAME_MAX + 1]));
        assert!(same_name(b"12345", b"12345") && !same_name(b"12345", b"12346") && !same_name(b"1", b"12"));
    }

    #[test]
    fn a_new_directory_block_holds_dot_and_dotdot() {
        let block = new_dir_block(4096, 7, 2);
        let entries = parse_chunk(&block[..512], 7, 0).expect("valid");
        assert_eq!(entries.len(), 2);
        assert_eq!((entries[0].ino, entries[0].name, entries[0].reclen), (7, &b"."[..], 12));
        assert_eq!((entries[1].ino, entries[1].name, entries[1].reclen), (2, &b".."[..], 492));
        for (i, chunk) in block.chunks(512).enumerate().skip(1) {
            let e = parse_chunk(chunk, 7, i as u64 * 512).expect("valid");
            assert_eq!((e.len(), e[0].ino, e[0].free_bytes()), (1, 0, 504));
        }
    }

    #[test]
    fn entries_round_trip_with_slack_split() {
        let mut chunk = empty_dir_block(512);
        put_entry(&mut chunk, 0, 5, 16, dt::REG, b"hello");
        put_entry(&mut chunk, 16, 6, ENTRY_BYTES - 16, dt::LNK, b"a");
        seal_chunk(&mut chunk);
        let e = parse_chunk(&chunk, 1, 0).expect("valid");
        assert_eq!(e[0], Entry { offset: 0, ino: 5, reclen: 16, dtype: dt::REG, name: b"hello" });
        assert_eq!(e[1].free_bytes(), ENTRY_BYTES - 16 - 12);
        assert_eq!(entry_size(255), 264);
        assert_eq!(kind_from_dt(dt_from_mode(kind::SOCK | 0o644)), kind::SOCK);
    }

    fn corrupt_err(chunk: &[u8]) -> String {
        match parse_chunk(chunk, 9, 1024) {
            Err(Error::Corrupt { what, why, .. }) => format!("{what}: {why}"),
            other => panic!("expected corruption, got {other:?}"),
        }
    }

    #[test]
    fn a_flipped_bit_bad_magic_or_short_chunk_is_corruption_not_panic() {
        let good = new_dir_block(512, 3, 2);
        let mut flipped = good.clone();
        flipped[9] ^= 1;
        assert!(corrupt_err(&flipped).contains("checksum"));
        let mut magic = good.clone();
        magic[511] = 0;
        assert!(corrupt_err(&magic).contains("magic"));
        assert!(corrupt_err(&good[..300]).contains("shorter"));
    }

    #[test]
    fn bad_reclens_and_names_are_rejected_even_with_a_good_checksum() {
        let cases: [(u32, u16, u8, &[u8], &str); 5] = [
            (4, 14, 1, b"x", "multiple of 4"),
            (4, 8, 5, b"abcde", "shorter"),
            (4, 508, 1, b"x", "past the chunk"),
            (4, 12, 1, b"/", "invalid name"),
            (4, 0, 1, b"x", "shorter"),
        ];
        for (ino, reclen, namelen, name, expect) in cases {
            let mut chunk = empty_dir_block(512);
            let mut e = Encoder::new(&mut chunk);
            e.u32(0, ino);
            e.u16(4, reclen);
            e.u8(7, namelen);
            e.bytes(8, name);
            seal_chunk(&mut chunk);
            let why = corrupt_err(&chunk);
            assert!(why.contains(expect), "{why} should mention {expect}");
        }
        // Records that do not reach byte 504 exactly: the last one is cut.
        let mut chunk = empty_dir_block(512);
        put_entry(&mut chunk, 0, 5, 500, dt::REG, b"a");
        seal_chunk(&mut chunk);
        assert!(corrupt_err(&chunk).contains("cut short"));
    }

    #[test]
    fn a_live_entry_needs_a_name() {
        let mut chunk = empty_dir_block(512);
        put_entry(&mut chunk, 0, 5, ENTRY_BYTES, dt::REG, b"");
        seal_chunk(&mut chunk);
        assert!(corrupt_err(&chunk).contains("invalid name"));
    }

    #[test]
    fn entry_in_chunk_finds_only_record_starts_and_checks_what_it_walks() {
        let mut chunk = empty_dir_block(512);
        put_entry(&mut chunk, 0, 5, 16, dt::REG, b"hello");
        put_entry(&mut chunk, 16, 6, 12, dt::LNK, b"a");
        put_entry(&mut chunk, 28, 0, ENTRY_BYTES - 28, 0, b"");
        seal_chunk(&mut chunk);
        let found = |at| entry_in_chunk(&chunk, 1, 0, at).expect("valid").map(|e| (e.ino, e.name));
        assert_eq!(found(0), Some((5, &b"hello"[..])));
        assert_eq!(found(16), Some((6, &b"a"[..])));
        assert_eq!(found(28), Some((0, &b""[..])), "an unused slot is a record too");
        assert_eq!(found(8), None, "inside a record: no entry starts there");
        assert_eq!(found(504), None);
        // A record before the offset that is damaged is an error even with a
        // good checksum, and so is a bad checksum anywhere in the chunk.
        let mut bad = chunk.clone();
        Encoder::new(&mut bad).u16(4, 14);
        seal_chunk(&mut bad);
        assert!(entry_in_chunk(&bad, 1, 0, 16).is_err());
        let mut flipped = chunk.clone();
        flipped[400] ^= 1;
        assert!(entry_in_chunk(&flipped, 1, 0, 0).is_err());
        let mut slash = chunk.clone();
        slash[8 + 16] = b'/';
        seal_chunk(&mut slash);
        assert!(entry_in_chunk(&slash, 1, 0, 16).is_err(), "the entry found is checked whole");
    }
}
