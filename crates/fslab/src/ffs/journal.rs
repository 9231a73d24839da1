//! The journal's log: how a transaction is laid out in it, and replay
//! (2000 paper §5; `docs/FORMAT.md`, "Journal"). Shared by the journal
//! mode that writes it (`integrity/journal/`), by mount, and by fsck.
//!
//! The log is a circular region of the device. A *position* counts bytes
//! since the log began and never wraps; byte `p` of the log lives at byte
//! `p mod size` of the region. Transactions follow one another, each
//! starting at a multiple of 8, each numbered one more than the last. A
//! transaction holds redo records — the bytes a metadata block changed
//! (block, offset, bytes), never whole blocks unless a block is new, so
//! that what is logged per operation stays what the paper's journals
//! logged — and a record per run of fragments freed, which also revokes
//! what the log held for those fragments before (a freed directory block
//! may be file data by the time replay runs). It ends in a commit record
//! whose CRC32C covers the whole transaction: a transaction torn by a
//! crash, or bytes of an older lap of the log, fail it, and replay stops
//! there.

use super::geometry::Geometry;
use super::layout::{patch_journal_checkpoint, Superblock, LOG_BLOCK};
use super::Frag;
use crate::error::Error;
use crate::format::codec::{crc32c_skipping, Decoder, Encoder};
use crate::Result;
use disk::BlockDevice;
use std::collections::BTreeMap;

/// Magic at the front of a transaction ("FJTX").
const TX_MAGIC: u32 = 0x5854_4a46;
/// Magic of a commit record ("FJCM").
const COMMIT_MAGIC: u32 = 0x4d43_4a46;
/// Bytes of a transaction's header.
const HEADER_BYTES: usize = 32;
/// Bytes of a commit record.
const COMMIT_BYTES: usize = 16;
/// Bytes of a change record before its bytes.
const CHANGE_HEADER_BYTES: usize = 24;
/// Bytes of a free record.
const FREE_BYTES: usize = 16;
const CHANGE: u8 = 1;
const FREE: u8 = 2;

/// One record of a transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record {
    /// `bytes` now lie at `offset` of the metadata block at `block`. A
    /// block new in the transaction held zeros before: its first record
    /// says how many bytes of it to zero first (`zeroed`, the length of
    /// the block or of its run of fragments), the others 0.
    Change { block: Frag, offset: u32, zeroed: u32, bytes: Vec<u8> },
    /// `count` fragments from `start` were freed: records before this one
    /// for blocks among them are void.
    Free { start: Frag, count: u32 },
}

impl Record {
    /// Bytes the record takes in the log.
    pub fn encoded_len(&self) -> usize {
        match self {
            Record::Change { bytes, .. } => CHANGE_HEADER_BYTES + bytes.len().next_multiple_of(8),
            Record::Free { .. } => FREE_BYTES,
        }
    }
}

/// Bytes a transaction of `records` takes in the log.
pub fn transaction_len(records: &[Record]) -> usize {
    HEADER_BYTES + records.iter().map(Record::encoded_len).sum::<usize>() + COMMIT_BYTES
}

/// Encodes transaction `seq` of mount `generation`.
pub fn encode_transaction(seq: u64, generation: u64, records: &[Record]) -> Vec<u8> {
    let len = transaction_len(records);
    let mut out = vec![0u8; len];
    let mut e = Encoder::new(&mut out);
    e.u32(0, TX_MAGIC);
    e.u32(4, len as u32);
    e.u64(8, seq);
    e.u64(16, generation);
    e.u32(24, records.len() as u32);
    let mut at = HEADER_BYTES;
    for r in records {
        match r {
            Record::Change { block, offset, zeroed, bytes } => {
                e.u8(at, CHANGE);
                e.u32(at + 4, bytes.len() as u32);
                e.u64(at + 8, *block);
                e.u32(at + 16, *offset);
                e.u32(at + 20, *zeroed);
                e.bytes(at + CHANGE_HEADER_BYTES, bytes);
            }
            Record::Free { start, count } => {
                e.u8(at, FREE);
                e.u32(at + 4, *count);
                e.u64(at + 8, *start);
            }
        }
        at += r.encoded_len();
    }
    e.u32(at, COMMIT_MAGIC);
    e.u64(at + 8, seq);
    let crc = crc32c_skipping(&out, at + 4);
    Encoder::new(&mut out).u32(at + 4, crc);
    out
}

/// A transaction read back from the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoggedTransaction {
    /// Its sequence number.
    pub seq: u64,
    /// Bytes it takes in the log.
    pub len: usize,
    /// Its records, in order.
    pub records: Vec<Record>,
}

/// Decodes the transaction at the front of `bytes` if it is whole and is
/// transaction `seq` of mount `generation`; `None` for anything else (the
/// end of the log: a torn or unwritten transaction, an older lap).
pub fn decode_transaction(bytes: &[u8], seq: u64, generation: u64) -> Option<LoggedTransaction> {
    let d = Decoder::new(bytes);
    if d.u32(0).ok()? != TX_MAGIC || d.u64(8).ok()? != seq || d.u64(16).ok()? != generation {
        return None;
    }
    let len = d.u32(4).ok()? as usize;
    if len < HEADER_BYTES + COMMIT_BYTES || !len.is_multiple_of(8) || len > bytes.len() {
        return None;
    }
    let commit = len - COMMIT_BYTES;
    if d.u32(commit).ok()? != COMMIT_MAGIC
        || d.u64(commit + 8).ok()? != seq
        || d.u32(commit + 4).ok()? != crc32c_skipping(&bytes[..len], commit + 4)
    {
        return None;
    }
    let count = d.u32(24).ok()?;
    let mut records = Vec::with_capacity(count.min(1 << 16) as usize);
    let mut at = HEADER_BYTES;
    for _ in 0..count {
        let record = match d.u8(at).ok()? {
            CHANGE => {
                let n = d.u32(at + 4).ok()? as usize;
                let bytes = d.bytes(at + CHANGE_HEADER_BYTES, n).ok()?.to_vec();
                Record::Change {
                    block: d.u64(at + 8).ok()?,
                    offset: d.u32(at + 16).ok()?,
                    zeroed: d.u32(at + 20).ok()?,
                    bytes,
                }
            }
            FREE => Record::Free { start: d.u64(at + 8).ok()?, count: d.u32(at + 4).ok()? },
            _ => return None,
        };
        at += record.encoded_len();
        if at > commit {
            return None;
        }
        records.push(record);
    }
    (at == commit).then_some(LoggedTransaction { seq, len, records })
}

/// What a scan of the log found from the checkpoint on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LogScan {
    /// The whole transactions, in order.
    pub transactions: Vec<LoggedTransaction>,
    /// The position after the last of them: where the log continues.
    pub end: u64,
    /// The sequence number the next transaction gets.
    pub next_seq: u64,
}

/// Reads the log region of `sb`'s journal from `dev`.
fn read_region(dev: &dyn BlockDevice, sb: &Superblock) -> Result<Vec<u8>> {
    let j = &sb.journal;
    let mut region = vec![0u8; j.bytes as usize];
    dev.read_at(sb.geometry.byte_offset(j.start), &mut region)?;
    Ok(region)
}

/// The log's bytes from position `pos` on, `len` of them, wrapping around
/// the region.
fn log_bytes(region: &[u8], pos: u64, len: usize) -> Vec<u8> {
    let size = region.len();
    let mut out = Vec::with_capacity(len);
    let mut at = (pos % size as u64) as usize;
    while out.len() < len {
        let take = (size - at).min(len - out.len());
        out.extend_from_slice(&region[at..at + take]);
        at = 0;
    }
    out
}

/// Finds every whole transaction from the checkpoint on (jbd2's SCAN
/// pass): each must carry the next sequence number and the superblock's
/// mount generation, and pass its CRC.
pub fn scan(dev: &dyn BlockDevice, sb: &Superblock) -> Result<LogScan> {
    let j = &sb.journal;
    if !j.present() {
        return Ok(LogScan::default());
    }
    let region = read_region(dev, sb)?;
    let mut found = LogScan { transactions: Vec::new(), end: j.tail, next_seq: j.tail_seq };
    while found.end - j.tail < j.bytes {
        let room = (j.bytes - (found.end - j.tail)) as usize;
        // Only the transaction's own bytes, by the length in its header:
        // a copy of all the room left for each transaction made a scan of
        // a long log of small transactions quadratic in its length.
        let header = log_bytes(&region, found.end, HEADER_BYTES.min(room));
        let Ok(len) = Decoder::new(&header).u32(4) else { break };
        let bytes = log_bytes(&region, found.end, (len as usize).min(room));
        let Some(tx) = decode_transaction(&bytes, found.next_seq, j.generation) else { break };
        found.end += tx.len as u64;
        found.next_seq += 1;
        found.transactions.push(tx);
    }
    Ok(found)
}

/// Runs of fragments, kept merged and apart: the frees a walk back through
/// the log has met.
#[derive(Default)]
struct FreedRuns {
    /// Each run's first fragment and the fragment after its last.
    runs: BTreeMap<Frag, Frag>,
}

impl FreedRuns {
    /// Adds fragments `start .. end`, merging the runs they touch.
    fn insert(&mut self, mut start: Frag, mut end: Frag) {
        if start >= end {
            return;
        }
        if let Some((&s, &e)) = self.runs.range(..=start).next_back() {
            if e >= start {
                start = s;
                end = end.max(e);
                self.runs.remove(&s);
            }
        }
        while let Some((&s, &e)) = self.runs.range(start..=end).next() {
            end = end.max(e);
            self.runs.remove(&s);
        }
        self.runs.insert(start, end);
    }

    /// The first of fragments `start .. end` in a run, if any. Runs are
    /// apart, so only the last one starting at or before `start` can hold
    /// `start`; else the first one starting after it.
    fn first_in(&self, start: Frag, end: Frag) -> Option<Frag> {
        if self.runs.range(..=start).next_back().is_some_and(|(_, &e)| e > start) {
            return Some(start);
        }
        self.runs.range(start..end).next().map(|(&s, _)| s)
    }
}

/// Whether the image `sb` describes was left by a crash of a mount with its
/// journal: replaying the log puts it right (mount and fsck do, first).
pub fn needs_replay(sb: &Superblock) -> bool {
    use super::layout::{SB_CLEAN, SB_JOURNALED};
    sb.flags & SB_CLEAN == 0 && sb.flags & SB_JOURNALED != 0 && sb.journal.present()
}

/// What replay did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Replayed {
    /// Transactions replayed.
    pub transactions: u64,
    /// Change records applied.
    pub changes: u64,
    /// Change records skipped: their block was freed later in the log
    /// (a record whose run lost only its last fragments is cut there and
    /// counted as applied).
    pub revoked: u64,
    /// Blocks written.
    pub blocks: u64,
}

/// Replays `sb`'s journal onto `dev` (jbd2's REVOKE and REPLAY passes in
/// one): every change of every whole transaction from the checkpoint on,
/// in log order, except those a later free revoked; then the superblock's
/// checkpoint moves to the log's end, and a barrier. Idempotent: the
/// records are after-images, so a replay cut short by a crash is run again
/// from the same checkpoint. Returns what it did; the superblock on `dev`
/// is then the one to mount.
pub fn replay(dev: &dyn BlockDevice, sb: &Superblock) -> Result<Replayed> {
    let found = scan(dev, sb)?;
    let geo = sb.geometry;
    let bs = geo.block_size as usize;
    // Which change records a later free revokes, found walking the log
    // back from its end with the runs freed after the record at hand:
    // kept as merged runs, not fragment by fragment, so that the memory
    // grows with the records and not with the size of the files removed.
    let records: Vec<&Record> = found.transactions.iter().flat_map(|tx| &tx.records).collect();
    // Per record, the byte of its block where what a later free covers
    // begins (`usize::MAX`: nothing of it is freed).
    let mut cut = vec![usize::MAX; records.len()];
    let mut freed_after = FreedRuns::default();
    for (index, r) in records.iter().enumerate().rev() {
        match r {
            Record::Free { start, count } => {
                // Only fragments of the file system: a record that names
                // more (a log written by something else, sealed right) is
                // no reason to overflow.
                let end = start.saturating_add(u64::from(*count)).min(geo.total_frags);
                freed_after.insert(*start, end);
            }
            Record::Change { block, offset, zeroed, bytes } => {
                // Cut where a later free covers a fragment this record
                // writes, and only then: the block may be a run of
                // fragments (a directory's, a symbolic link's) with other
                // files' fragments after it, whose free says nothing of
                // this one. A run loses fragments from its end (a file's
                // tail cut shorter), so what comes before the first freed
                // fragment is still the block's, and is replayed.
                let frag = u64::from(geo.frag_size);
                let end = u64::from(*offset).saturating_add(bytes.len() as u64);
                let lo = if *zeroed > 0 { 0 } else { u64::from(*offset) };
                let hi = end.max(u64::from(*zeroed));
                let first = block.saturating_add(lo / frag);
                if let Some(freed) = freed_after.first_in(first, block.saturating_add(hi.div_ceil(frag))) {
                    cut[index] = usize::try_from((freed - block).saturating_mul(frag)).unwrap_or(usize::MAX);
                }
            }
        }
    }
    // Each block's image, and the span of it changed: only that span is
    // written back, since a metadata block may be a run of fragments (a
    // symbolic link's) with other files' fragments after it.
    let mut blocks: BTreeMap<Frag, (Vec<u8>, usize, usize)> = BTreeMap::new();
    let fs_bytes = geo.byte_offset(geo.total_frags);
    let mut done = Replayed { transactions: found.transactions.len() as u64, ..Replayed::default() };
    for (index, r) in records.iter().enumerate() {
        let Record::Change { block, offset, zeroed, bytes } = r else { continue };
        let bad = |why: &str| Error::corrupt("journal record", *block, why.to_string());
        let (start, end) = (*offset as usize, *offset as usize + bytes.len());
        if end > bs || *zeroed as usize > bs {
            return Err(bad("runs past the end of its block"));
        }
        let reach = end.max(*zeroed as usize) as u64;
        if *block >= geo.total_frags || geo.byte_offset(*block) + reach > fs_bytes {
            return Err(bad("names a block outside the file system"));
        }
        let limit = cut[index];
        let lo = if *zeroed > 0 { 0 } else { start };
        if limit <= lo {
            done.revoked += 1;
            continue;
        }
        let (end, zeroed) = (end.min(limit), (*zeroed as usize).min(limit));
        if !blocks.contains_key(block) {
            if blocks.len() >= REPLAY_BLOCKS_HELD {
                // Written home now, in log order: a later record of one of
                // them reads it back with these changes made.
                write_home(dev, &geo, &mut blocks, &mut done)?;
            }
            let mut buf = vec![0u8; bs];
            let readable = (fs_bytes - geo.byte_offset(*block)).min(bs as u64) as usize;
            dev.read_at(geo.byte_offset(*block), &mut buf[..readable])?;
            blocks.insert(*block, (buf, usize::MAX, 0));
        }
        let Some((buf, lo, hi)) = blocks.get_mut(block) else { continue };
        if zeroed > 0 {
            // The block was zeros before this transaction's records.
            buf[..zeroed].fill(0);
            *lo = 0;
            *hi = (*hi).max(zeroed);
        }
        if start < end {
            buf[start..end].copy_from_slice(&bytes[..end - start]);
            *lo = (*lo).min(start);
            *hi = (*hi).max(end);
        }
        done.changes += 1;
    }
    write_home(dev, &geo, &mut blocks, &mut done)?;
    dev.flush()?;
    // The superblock last: its checkpoint says the log is replayed.
    let mut primary = match blocks.remove(&0) {
        Some((buf, _, _)) => buf,
        None => {
            let mut buf = vec![0u8; bs];
            dev.read_at(0, &mut buf)?;
            buf
        }
    };
    patch_journal_checkpoint(&mut primary, found.end, found.next_seq);
    dev.write_at(0, &primary)?;
    dev.flush()?;
    Ok(done)
}

/// Blocks replay holds in memory before it writes them home: a log of
/// many small records on as many blocks (a crafted one, or a large log)
/// would otherwise hold a block of memory for each.
const REPLAY_BLOCKS_HELD: usize = 16_384;

/// Writes each held block's changed span home and forgets it, but the
/// superblock's (block 0), which replay writes last.
fn write_home(
    dev: &dyn BlockDevice,
    geo: &Geometry,
    blocks: &mut BTreeMap<Frag, (Vec<u8>, usize, usize)>,
    done: &mut Replayed,
) -> Result<()> {
    for (&addr, (buf, lo, hi)) in blocks.iter() {
        if addr == 0 || lo >= hi {
            continue;
        }
        dev.write_at(geo.byte_offset(addr) + *lo as u64, &buf[*lo..*hi])?;
        done.blocks += 1;
    }
    blocks.retain(|&addr, _| addr == 0);
    Ok(())
}

/// A description of the log for `fslab dump`: where it is, the checkpoint,
/// and each whole transaction after it.
pub fn describe(dev: &dyn BlockDevice, sb: &Superblock) -> Result<String> {
    use std::fmt::Write as _;
    let found = scan(dev, sb)?;
    let j = &sb.journal;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "journal: {} log of {} bytes at fragment {}, checkpoint at position {} (transaction {})",
        j.kind.name(),
        j.bytes,
        j.start,
        j.tail,
        j.tail_seq
    );
    for tx in &found.transactions {
        let (mut changes, mut bytes, mut frees) = (0, 0, 0);
        for r in &tx.records {
            match r {
                Record::Change { bytes: b, .. } => {
                    changes += 1;
                    bytes += b.len();
                }
                Record::Free { .. } => frees += 1,
            }
        }
        let _ = writeln!(
            out,
            "  transaction {}: {} bytes, {changes} changes ({bytes} bytes), {frees} frees",
            tx.seq, tx.len
        );
    }
    let _ = writeln!(
        out,
        "  {} transactions to replay; the log continues at position {}",
        found.transactions.len(),
        found.end
    );
    Ok(out)
}

/// The byte ranges where `new` differs from `old` (equal lengths), as
/// (offset, length), ranges closer than a change record's header merged.
pub fn changed_ranges(old: &[u8], new: &[u8]) -> Vec<(usize, usize)> {
    let mut out: Vec<(usize, usize)> = Vec::new();
    let n = old.len().min(new.len());
    if old[..n] == new[..n] {
        return out;
    }
    // Whole 64-byte stretches that agree are skipped with one comparison
    // each (most of a block is unchanged by an operation).
    const STRETCH: usize = 64;
    let mut i = 0;
    while i < n {
        if i % STRETCH == 0 && i + STRETCH <= n && old[i..i + STRETCH] == new[i..i + STRETCH] {
            i += STRETCH;
            continue;
        }
        if old[i] == new[i] {
            i += 1;
            continue;
        }
        let start = i;
        while i < n && old[i] != new[i] {
            i += 1;
        }
        match out.last_mut() {
            Some((s, len)) if start - (*s + *len) < CHANGE_HEADER_BYTES => *len = i - *s,
            _ => out.push((start, i - start)),
        }
    }
    out
}

/// Log positions are kept in whole log blocks on the device.
pub const BLOCK: u64 = LOG_BLOCK as u64;

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn a_transaction_round_trips_and_any_flipped_bit_ends_the_log() {
        let records = vec![
            Record::Change { block: 64, offset: 8, zeroed: 0, bytes: vec![1, 2, 3] },
            Record::Free { start: 72, count: 8 },
            Record::Change { block: 80, offset: 0, zeroed: 8192, bytes: vec![9; 17] },
        ];
        let bytes = encode_transaction(7, 3, &records);
        assert_eq!(bytes.len(), transaction_len(&records));
        let tx = decode_transaction(&bytes, 7, 3).expect("whole");
        assert_eq!(tx.records, records);
        assert!(decode_transaction(&bytes, 8, 3).is_none(), "another sequence number");
        assert!(decode_transaction(&bytes, 7, 4).is_none(), "another mount's");
        assert!(decode_transaction(&bytes[..bytes.len() - 1], 7, 3).is_none(), "torn");
        for bit in (0..bytes.len() * 8).step_by(13) {
            let mut bad = bytes.clone();
            bad[bit / 8] ^= 1 << (bit % 8);
            assert!(decode_transaction(&bad, 7, 3).is_none(), "bit {bit} flipped");
        }
    }

    #[test]
    fn changed_ranges_find_every_difference_and_merge_near_ones() {
        let old = vec![0u8; 100];
        let mut new = old.clone();
        new[3] = 1;
        new[10] = 1;
        new[90] = 1;
        assert_eq!(changed_ranges(&old, &new), vec![(3, 8), (90, 1)]);
        assert!(changed_ranges(&old, &old).is_empty());
    }

    /// A journaled image on a memory disk, its superblock, and the first
    /// data fragment of group 0 that the log does not hold.
    fn journaled() -> (Arc<disk::MemDisk>, Superblock, Frag) {
        use crate::ffs::layout::JournalKind;
        use crate::ffs::mkfs::{mkfs, MkfsOptions};
        let dev = Arc::new(disk::MemDisk::new(64 << 20));
        let options = MkfsOptions { journal: JournalKind::Wafs, ..MkfsOptions::default() };
        let sb = mkfs(dev.clone(), &options).expect("mkfs");
        let data = sb.geometry.group_base(0) + u64::from(sb.geometry.data_offset()) + 64;
        (dev, sb, data)
    }

    /// Writes `transactions` into `sb`'s log from its checkpoint.
    fn write_log(dev: &dyn BlockDevice, sb: &Superblock, transactions: &[Vec<Record>]) {
        let j = &sb.journal;
        let mut pos = j.tail;
        for (n, records) in transactions.iter().enumerate() {
            let bytes = encode_transaction(j.tail_seq + n as u64, j.generation, records);
            dev.write_at(sb.geometry.byte_offset(j.start) + pos % j.bytes, &bytes).expect("write log");
            pos += (bytes.len() as u64).next_multiple_of(8);
        }
    }

    /// A free record naming fragments far past the file system (a log
    /// sealed right but written by something else) replays in bounded time
    /// and memory, and still revokes what it names inside.
    #[test]
    fn a_free_past_the_end_of_the_file_system_is_cut_at_it() {
        let change = |block| Record::Change { block, offset: 0, zeroed: 0, bytes: vec![7; 100] };
        let (dev, sb, a) = journaled();
        let huge = Record::Free { start: a, count: u32::MAX };
        write_log(dev.as_ref(), &sb, &[vec![change(a)], vec![huge]]);
        let done = replay(dev.as_ref(), &sb).expect("replay");
        assert_eq!((done.changes, done.revoked), (0, 1));
        let (dev, sb, _) = journaled();
        write_log(dev.as_ref(), &sb, &[vec![Record::Free { start: u64::MAX - 1, count: 8 }]]);
        replay(dev.as_ref(), &sb).expect("a free beyond the end overflows nothing");
    }

    /// A change whose zeroed span reaches past the end of the file system
    /// is a corrupt record, refused before anything is written (it used
    /// to write zeros past the end, into the log of a `wafs` journal).
    #[test]
    fn a_zeroed_span_past_the_end_of_the_file_system_is_refused() {
        let (dev, sb, _) = journaled();
        let last = sb.geometry.total_frags - 1;
        let bs = sb.geometry.block_size;
        write_log(
            dev.as_ref(),
            &sb,
            &[vec![Record::Change { block: last, offset: 0, zeroed: bs, bytes: vec![] }]],
        );
        let before = dev.snapshot();
        let refused = replay(dev.as_ref(), &sb).expect_err("a record past the end");
        assert!(refused.to_string().contains("outside the file system"), "{refused}");
        assert!(dev.snapshot() == before, "the refused replay wrote");
    }

    /// More blocks than replay holds at once: written home in batches, in
    /// log order, so that a later change of a block written earlier lands
    /// on top of it.
    #[test]
    fn a_log_of_more_blocks_than_replay_holds_is_replayed_in_batches() {
        let (dev, sb, a) = journaled();
        // One fragment apart: each its own key, as a metadata fragment run
        // (a symbolic link's) is.
        let room = sb.geometry.total_frags - a - u64::from(sb.geometry.frags_per_block);
        let n = (REPLAY_BLOCKS_HELD as u64 + 10).min(room);
        assert!(n > REPLAY_BLOCKS_HELD as u64, "the image is too small for the test");
        let first: Vec<Record> = (0..n)
            .map(|i| Record::Change { block: a + i, offset: 0, zeroed: 0, bytes: vec![1; 8] })
            .collect();
        let again = vec![Record::Change { block: a, offset: 4, zeroed: 0, bytes: vec![2; 2] }];
        write_log(dev.as_ref(), &sb, &[first, again]);
        let done = replay(dev.as_ref(), &sb).expect("replay");
        assert_eq!(done.changes, n + 1);
        let mut got = vec![0u8; 8];
        dev.read_at(sb.geometry.byte_offset(a), &mut got).expect("read");
        assert_eq!(got, [1, 1, 1, 1, 2, 2, 1, 1]);
        dev.read_at(sb.geometry.byte_offset(a + n - 1), &mut got).expect("read");
        assert_eq!(got, vec![1; 8]);
    }

    /// A free of the fragment after a one-fragment run (another file's)
    /// leaves the run's change in force; a free of the run's own fragment
    /// revokes it.
    #[test]
    fn a_free_revokes_only_records_that_write_a_fragment_it_frees() {
        let change = |block| Record::Change { block, offset: 0, zeroed: 0, bytes: vec![7; 100] };
        let (dev, sb, a) = journaled();
        write_log(dev.as_ref(), &sb, &[vec![change(a)], vec![Record::Free { start: a + 1, count: 1 }]]);
        let done = replay(dev.as_ref(), &sb).expect("replay");
        assert_eq!((done.transactions, done.changes, done.revoked), (2, 1, 0));
        let mut got = vec![0u8; 100];
        dev.read_at(sb.geometry.byte_offset(a), &mut got).expect("read");
        assert_eq!(got, vec![7; 100], "the run's bytes replayed");

        let (dev, sb, a) = journaled();
        write_log(dev.as_ref(), &sb, &[vec![change(a)], vec![Record::Free { start: a, count: 1 }]]);
        let done = replay(dev.as_ref(), &sb).expect("replay");
        assert_eq!((done.changes, done.revoked), (0, 1));
        dev.read_at(sb.geometry.byte_offset(a), &mut got).expect("read");
        assert_eq!(got, vec![0; 100], "a freed run's old bytes not replayed");
    }

    /// A file's tail cut shorter frees the run's last fragments: its
    /// logged image is still replayed for the fragments it keeps (they
    /// would otherwise show what was there before), and not past them.
    #[test]
    fn a_free_of_a_runs_last_fragments_cuts_its_record_there() {
        let (dev, sb, a) = journaled();
        let frag = sb.geometry.frag_size as usize;
        let fill = vec![9u8; 5 * frag];
        dev.write_at(sb.geometry.byte_offset(a), &vec![3u8; 5 * frag]).expect("old bytes");
        let logged = Record::Change { block: a, offset: 0, zeroed: (5 * frag) as u32, bytes: fill };
        write_log(dev.as_ref(), &sb, &[vec![logged], vec![Record::Free { start: a + 2, count: 3 }]]);
        let done = replay(dev.as_ref(), &sb).expect("replay");
        assert_eq!((done.changes, done.revoked), (1, 0));
        let mut got = vec![0u8; 5 * frag];
        dev.read_at(sb.geometry.byte_offset(a), &mut got).expect("read");
        assert_eq!(&got[..2 * frag], &vec![9u8; 2 * frag][..], "the fragments kept are replayed");
        assert_eq!(&got[2 * frag..], &vec![3u8; 3 * frag][..], "the freed ones are left as they were");
    }

    /// A change made again after its block's free is replayed; one made
    /// before it is not, whichever of several overlapping frees covers it.
    #[test]
    fn only_a_free_after_a_change_revokes_it_across_merged_runs() {
        let change = |block| Record::Change { block, offset: 0, zeroed: 0, bytes: vec![7; 100] };
        let (dev, sb, a) = journaled();
        write_log(
            dev.as_ref(),
            &sb,
            &[
                vec![change(a), change(a + 8)],
                vec![Record::Free { start: a + 4, count: 6 }, Record::Free { start: a, count: 2 }],
                vec![change(a)],
                vec![change(a + 20), Record::Free { start: a + 16, count: 2 }],
            ],
        );
        let done = replay(dev.as_ref(), &sb).expect("replay");
        assert_eq!(
            (done.changes, done.revoked),
            (2, 2),
            "a again and a+20 stand; a and a+8 before were freed"
        );
        let mut got = vec![0u8; 100];
        dev.read_at(sb.geometry.byte_offset(a), &mut got).expect("read");
        assert_eq!(got, vec![7; 100]);
    }

    #[test]
    fn freed_runs_merge_and_find_the_first_fragment_freed() {
        let mut runs = FreedRuns::default();
        runs.insert(10, 20);
        runs.insert(30, 40);
        runs.insert(18, 32);
        runs.insert(50, 50);
        assert_eq!(runs.runs.iter().map(|(&s, &e)| (s, e)).collect::<Vec<_>>(), vec![(10, 40)]);
        assert_eq!(
            (runs.first_in(39, 45), runs.first_in(0, 11), runs.first_in(15, 16)),
            (Some(39), Some(10), Some(15))
        );
        assert_eq!((runs.first_in(40, 45), runs.first_in(0, 10), runs.first_in(50, 51)), (None, None, None));
        runs.insert(40, 42);
        assert_eq!(runs.runs.len(), 1, "a run that begins where another ends joins it");
    }

    #[test]
    fn log_bytes_wrap_around_the_region() {
        let region: Vec<u8> = (0..16).collect();
        assert_eq!(log_bytes(&region, 30, 4), vec![14, 15, 0, 1]);
    }
}
