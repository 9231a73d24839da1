//! The control protocol's bytes: the limits every frame and count is held
//! to, frames, the encoders ([`Out`]) and the validating decoders ([`In`])
//! of every request and response. The protocol itself is drawn in the
//! module doc of `control`.

use super::{DirhashReport, LayoutReport, LockReport, MemoryReport, MountReport, Report};
use fslab::error::errno;
use fslab::ffs::{Integrity, LeakReport, LeakScanState};
use fslab::format::Daddr;
use fslab::lfs::clean::{
    BlockKind, BlockRef, CleanerCounters, CleanerReport, Destination, SegmentState, SegmentTable,
};
use fslab::storage::StatFs;
use fslab::ufs::{DirhashOptions, DirhashStats};
use fslab::{Error, Result};
use std::io::{self, Read};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

pub(super) const MAGIC: &[u8; 4] = b"FSLC";
/// Version 7: the journal's integrity modes (3, 4) and counters in a mount
/// report. Version 10: the journal's largest transaction after its counters.
/// Version 11: the bytes of file data it logged after that.
pub(super) const VERSION: u32 = 11;

pub(super) const OP_HELLO: u8 = 0;
pub(super) const OP_SEGMENT_TABLE: u8 = 1;
pub(super) const OP_READ_SEGMENT: u8 = 2;
pub(super) const OP_BMAPV: u8 = 3;
pub(super) const OP_MARKV_COST: u8 = 4;
pub(super) const OP_MARKV: u8 = 5;
pub(super) const OP_SEGCLEAN: u8 = 6;
pub(super) const OP_SEGWAIT: u8 = 7;
pub(super) const OP_REPORT: u8 = 8;
pub(super) const OP_SEGMENT_REFS: u8 = 9;
pub(super) const OP_DIRHASH: u8 = 10;
pub(super) const OP_MOUNT: u8 = 11;
pub(super) const OP_MEMORY: u8 = 12;
pub(super) const OP_LOCK: u8 = 13;

pub(super) const STATUS_OK: u8 = 0;
pub(super) const STATUS_ERROR: u8 = 1;

/// Largest request frame: a markv of [`MAX_BLOCKS`] references fits.
pub(super) const MAX_REQUEST: usize = 16 << 20;
/// Largest response frame: a whole segment (at most 1 GiB) and its header.
pub(super) const MAX_RESPONSE: usize = (1 << 30) + (1 << 20);
/// Most block references in one request (16 segments of 16 MiB in 4 KiB
/// blocks is 65,536).
pub const MAX_BLOCKS: usize = 1 << 18;
/// Longest `segwait`: a waiting client must not hold a connection thread
/// for long after the mount ends.
pub const MAX_SEGWAIT: Duration = Duration::from_secs(10);
/// How long a connection may wait between requests (or between the
/// pieces of one) before the server closes it: clients send their next
/// request at once, and an idle one must not hold one of
/// [`MAX_CONNECTIONS`] forever.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// Connections served at once; more are refused with an error.
pub const MAX_CONNECTIONS: usize = 32;
/// Most structures in a memory report, and the longest name of one.
pub(super) const MAX_MEMORY_PARTS: usize = 256;
pub(super) const MAX_MEMORY_NAME: usize = 255;
/// Longest error message and policy name sent.
pub(super) const MAX_MESSAGE: usize = 1024;
pub(super) const MAX_POLICY: usize = 64;
/// Most recently cleaned segments in a report (the file system keeps 64).
pub(super) const MAX_CLEANED: usize = 4096;

pub(super) const REF_BYTES: usize = 8 + 4 + 1 + 8 + 8 + 8;
pub(super) const SEGMENT_BYTES: usize = 8 + 8 + 8 + 8 + 1;

/// A frame being built: four bytes for the length, patched by `finish`.
pub(super) struct Out(Vec<u8>);

impl Out {
    pub(super) fn new(first: u8) -> Out {
        let mut v = Vec::with_capacity(64);
        v.extend_from_slice(&[0, 0, 0, 0, first]);
        Out(v)
    }
    pub(super) fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    pub(super) fn u16(&mut self, v: u16) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    pub(super) fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    pub(super) fn i32(&mut self, v: i32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    pub(super) fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    pub(super) fn i64(&mut self, v: i64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    pub(super) fn f64(&mut self, v: f64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    pub(super) fn bytes(&mut self, v: &[u8]) {
        self.0.extend_from_slice(v);
    }
    /// A count the decoder will check; callers never pass more than the
    /// caps, all far below `u32::MAX`.
    pub(super) fn count(&mut self, n: usize) {
        self.u32(u32::try_from(n).unwrap_or(u32::MAX));
    }
    pub(super) fn block_ref(&mut self, r: &BlockRef) {
        self.u64(r.ino);
        self.u32(r.version);
        let (kind, lbn) = match r.kind {
            BlockKind::Block(lbn) => (0, lbn),
            BlockKind::Inode => (1, 0),
        };
        self.u8(kind);
        self.i64(lbn);
        self.u64(r.daddr.get());
        self.i64(r.age);
    }
    pub(super) fn counters(&mut self, c: &CleanerCounters) {
        self.u64(c.segments_cleaned);
        self.u64(c.user_bytes_written);
        self.u64(c.user_data_bytes_written);
        self.u64(c.cleaner_bytes_written);
        self.u64(c.cleaner_bytes_read);
        self.u64(c.blocks_moved);
    }
    /// The frame, length filled in; fails if it exceeds `max`.
    pub(super) fn finish(mut self, max: usize) -> Result<Vec<u8>> {
        let len = self.0.len() - 4;
        if len > max {
            return Err(errno(libc::EMSGSIZE, "message too large for the control socket"));
        }
        self.0[..4].copy_from_slice(&(len as u32).to_le_bytes());
        Ok(self.0)
    }
}

pub(super) fn malformed() -> Error {
    errno(libc::EPROTO, "malformed message on the control socket")
}

/// Decoding is validating: every read checks that the bytes are there.
pub(super) struct In<'a>(pub(super) &'a [u8]);

impl<'a> In<'a> {
    pub(super) fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if n > self.0.len() {
            return Err(malformed());
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }
    pub(super) fn array<const N: usize>(&mut self) -> Result<[u8; N]> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N)?);
        Ok(a)
    }
    pub(super) fn u8(&mut self) -> Result<u8> {
        Ok(self.array::<1>()?[0])
    }
    pub(super) fn u16(&mut self) -> Result<u16> {
        Ok(u16::from_le_bytes(self.array()?))
    }
    pub(super) fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(self.array()?))
    }
    pub(super) fn i32(&mut self) -> Result<i32> {
        Ok(i32::from_le_bytes(self.array()?))
    }
    pub(super) fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(self.array()?))
    }
    pub(super) fn i64(&mut self) -> Result<i64> {
        Ok(i64::from_le_bytes(self.array()?))
    }
    pub(super) fn f64(&mut self) -> Result<f64> {
        let v = f64::from_le_bytes(self.array()?);
        if v.is_finite() {
            Ok(v)
        } else {
            Err(malformed())
        }
    }
    /// A count of items of `each` bytes: at most `max`, and no more than
    /// the bytes left can hold, so a lying count allocates nothing.
    pub(super) fn count(&mut self, each: usize, max: usize) -> Result<usize> {
        let n = self.u32()? as usize;
        if n > max || n.saturating_mul(each) > self.0.len() {
            return Err(malformed());
        }
        Ok(n)
    }
    pub(super) fn rest(&mut self) -> &'a [u8] {
        std::mem::take(&mut self.0)
    }
    pub(super) fn end(&self) -> Result<()> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(malformed())
        }
    }
    pub(super) fn block_ref(&mut self) -> Result<BlockRef> {
        let ino = self.u64()?;
        let version = self.u32()?;
        let kind = self.u8()?;
        let lbn = self.i64()?;
        let kind = match (kind, lbn) {
            (0, lbn) => BlockKind::Block(lbn),
            (1, 0) => BlockKind::Inode,
            _ => return Err(malformed()),
        };
        Ok(BlockRef { ino, version, kind, daddr: Daddr::new(self.u64()?), age: self.i64()? })
    }
    pub(super) fn block_refs(&mut self) -> Result<Vec<BlockRef>> {
        let n = self.count(REF_BYTES, MAX_BLOCKS)?;
        (0..n).map(|_| self.block_ref()).collect()
    }
    pub(super) fn counters(&mut self) -> Result<CleanerCounters> {
        Ok(CleanerCounters {
            segments_cleaned: self.u64()?,
            user_bytes_written: self.u64()?,
            user_data_bytes_written: self.u64()?,
            cleaner_bytes_written: self.u64()?,
            cleaner_bytes_read: self.u64()?,
            blocks_moved: self.u64()?,
        })
    }
    pub(super) fn text(&mut self, len: usize) -> Result<String> {
        String::from_utf8(self.take(len)?.to_vec()).map_err(|_| malformed())
    }
}

pub(super) fn encode_table(out: &mut Out, t: &SegmentTable) {
    out.u32(t.block_size);
    out.u64(t.blocks_per_segment);
    out.u64(t.fs_id);
    out.u64(t.clean_segments);
    out.u64(t.reserve_segments);
    out.u64(t.low_water);
    out.u64(t.high_water);
    out.u64(t.budget_blocks);
    out.u64(t.cold_budget_blocks);
    out.u8(u8::from(t.ages_predict_survival));
    out.i64(t.now);
    out.count(t.segments.len());
    for s in &t.segments {
        out.u64(s.live_bytes);
        out.i64(s.lastmod);
        out.u64(s.usable_blocks);
        out.u64(s.first_log_block);
        out.u8(u8::from(s.clean) | u8::from(s.cleanable) << 1);
    }
}

pub(super) fn decode_table(r: &mut In) -> Result<SegmentTable> {
    let block_size = r.u32()?;
    let blocks_per_segment = r.u64()?;
    let fs_id = r.u64()?;
    let clean_segments = r.u64()?;
    let reserve_segments = r.u64()?;
    let low_water = r.u64()?;
    let high_water = r.u64()?;
    let budget_blocks = r.u64()?;
    let cold_budget_blocks = r.u64()?;
    let ages_predict_survival = match r.u8()? {
        0 => false,
        1 => true,
        _ => return Err(malformed()),
    };
    let now = r.i64()?;
    let n = r.count(SEGMENT_BYTES, MAX_RESPONSE / SEGMENT_BYTES)?;
    let mut segments = Vec::with_capacity(n);
    for _ in 0..n {
        let live_bytes = r.u64()?;
        let lastmod = r.i64()?;
        let usable_blocks = r.u64()?;
        let first_log_block = r.u64()?;
        let flags = r.u8()?;
        if flags > 3 {
            return Err(malformed());
        }
        segments.push(SegmentState {
            live_bytes,
            lastmod,
            usable_blocks,
            first_log_block,
            clean: flags & 1 != 0,
            cleanable: flags & 2 != 0,
        });
    }
    Ok(SegmentTable {
        block_size,
        blocks_per_segment,
        fs_id,
        segments,
        clean_segments,
        reserve_segments,
        low_water,
        high_water,
        budget_blocks,
        cold_budget_blocks,
        ages_predict_survival,
        now,
    })
}

/// Reads one frame of at most `max` bytes. `Ok(None)`: the peer closed the
/// connection between frames. The buffer grows only as bytes arrive, so a
/// length that lies costs nothing.
pub(super) fn read_frame(stream: &mut impl Read, max: usize) -> io::Result<Option<Vec<u8>>> {
    let mut len = [0u8; 4];
    let mut got = 0;
    while got < 4 {
        match stream.read(&mut len[got..]) {
            Ok(0) if got == 0 => return Ok(None),
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    let len = u32::from_le_bytes(len) as usize;
    if len > max {
        return Err(io::Error::new(io::ErrorKind::InvalidData, "frame too large"));
    }
    let mut body = Vec::new();
    stream.take(len as u64).read_to_end(&mut body)?;
    if body.len() != len {
        return Err(io::ErrorKind::UnexpectedEof.into());
    }
    Ok(Some(body))
}

/// The longest prefix of `s` of at most `max` bytes that ends on a
/// character boundary.
pub(super) fn truncate_utf8(s: &str, max: usize) -> &str {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// An error as a response frame: errno and the error's one line.
pub(super) fn error_frame(e: &Error) -> Vec<u8> {
    let text = match e {
        Error::Errno(_, why) => (*why).to_string(),
        other => other.to_string(),
    };
    let message = truncate_utf8(&text, MAX_MESSAGE);
    let mut out = Out::new(STATUS_ERROR);
    out.i32(e.errno());
    out.u16(message.len() as u16);
    out.bytes(message.as_bytes());
    // Short by construction; the fallback is never taken.
    out.finish(MAX_RESPONSE).unwrap_or_default()
}

/// An error that came over the socket, as the library's error type. Its
/// message must be `'static`: distinct messages are kept (a few hundred
/// bytes each, at most `MAX_KEPT_MESSAGES` of them) and reused, so a
/// long-running cleaner's memory does not grow with its errors.
pub(super) fn remote_error(code: i32, message: &str) -> Error {
    static KEPT: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());
    const MAX_KEPT_MESSAGES: usize = 256;
    let code = if code > 0 { code } else { libc::EIO };
    let mut kept = KEPT.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(m) = kept.iter().find(|m| **m == message) {
        return Error::Errno(code, m);
    }
    if kept.len() >= MAX_KEPT_MESSAGES {
        return Error::Errno(code, "the mounted file system reported an error");
    }
    let leaked: &'static str = Box::leak(message.to_string().into_boxed_str());
    kept.push(leaked);
    Error::Errno(code, leaked)
}

pub(super) fn encode_report(out: &mut Out, r: &Report) {
    let policy = truncate_utf8(&r.policy, MAX_POLICY);
    out.u8(policy.len() as u8);
    out.bytes(policy.as_bytes());
    out.counters(&r.cleaner.total);
    out.counters(&r.cleaner.recent);
    let cleaned = &r.cleaner.cleaned_utilization[..r.cleaner.cleaned_utilization.len().min(MAX_CLEANED)];
    out.count(cleaned.len());
    for &(seg, u) in cleaned {
        out.u64(seg);
        out.f64(u);
    }
    for v in [r.segments, r.segment_bytes, r.clean_segments, r.reserve_segments, r.low_water, r.high_water] {
        out.u64(v);
    }
    out.u8(u8::from(r.cold_head) | u8::from(r.ages_predict_survival) << 1);
    out.u64(r.cold_partial_segments);
}

pub(super) fn decode_report(r: &mut In) -> Result<Report> {
    let len = r.u8()? as usize;
    if len > MAX_POLICY {
        return Err(malformed());
    }
    let policy = r.text(len)?;
    let total = r.counters()?;
    let recent = r.counters()?;
    let n = r.count(16, MAX_CLEANED)?;
    let cleaned_utilization = (0..n).map(|_| Ok((r.u64()?, r.f64()?))).collect::<Result<Vec<_>>>()?;
    let [segments, segment_bytes, clean_segments, reserve_segments, low_water, high_water] =
        [r.u64()?, r.u64()?, r.u64()?, r.u64()?, r.u64()?, r.u64()?];
    let flags = r.u8()?;
    if flags > 3 {
        return Err(malformed());
    }
    Ok(Report {
        policy,
        cleaner: CleanerReport { total, recent, cleaned_utilization },
        segments,
        segment_bytes,
        clean_segments,
        reserve_segments,
        low_water,
        high_water,
        cold_head: flags & 1 != 0,
        ages_predict_survival: flags & 2 != 0,
        cold_partial_segments: r.u64()?,
    })
}

/// The byte that names a markv destination on the wire.
pub(super) fn destination_code(to: Destination) -> u8 {
    match to {
        Destination::Shared => 0,
        Destination::Cold => 1,
    }
}

/// The destination a markv request's byte names.
pub(super) fn destination_from(code: u8) -> Result<Destination> {
    match code {
        0 => Ok(Destination::Shared),
        1 => Ok(Destination::Cold),
        _ => Err(errno(libc::EINVAL, "unknown markv destination")),
    }
}

pub(super) fn encode_dirhash(out: &mut Out, r: &DirhashReport) {
    out.u8(u8::from(r.options.enabled) | u8::from(r.options.check) << 1);
    out.u64(r.options.max_memory);
    out.u64(r.options.min_dir_size);
    let s = &r.stats;
    for v in [
        s.hits,
        s.misses,
        s.builds,
        s.drops,
        s.rebuilds,
        s.refused,
        s.truncated_blocks,
        s.blocks_read,
        s.hashes,
        s.memory,
        s.peak_memory,
    ] {
        out.u64(v);
    }
}

pub(super) fn decode_dirhash(r: &mut In) -> Result<DirhashReport> {
    let flags = r.u8()?;
    if flags > 3 {
        return Err(malformed());
    }
    let options = DirhashOptions {
        enabled: flags & 1 != 0,
        check: flags & 2 != 0,
        max_memory: r.u64()?,
        min_dir_size: r.u64()?,
    };
    let stats = DirhashStats {
        hits: r.u64()?,
        misses: r.u64()?,
        builds: r.u64()?,
        drops: r.u64()?,
        rebuilds: r.u64()?,
        refused: r.u64()?,
        truncated_blocks: r.u64()?,
        blocks_read: r.u64()?,
        hashes: r.u64()?,
        memory: r.u64()?,
        peak_memory: r.u64()?,
    };
    Ok(DirhashReport { options, stats })
}

pub(super) fn encode_memory(out: &mut Out, r: &MemoryReport) {
    out.u64(r.resident.unwrap_or(0));
    let parts = &r.parts[..r.parts.len().min(MAX_MEMORY_PARTS)];
    out.u32(parts.len() as u32);
    for part in parts {
        let name = truncate_utf8(&part.what, MAX_MEMORY_NAME);
        out.u8(name.len() as u8);
        out.bytes(name.as_bytes());
        out.u64(part.entries);
        out.u64(part.bytes);
    }
}

pub(super) fn decode_memory(r: &mut In) -> Result<MemoryReport> {
    let resident = Some(r.u64()?).filter(|&b| b > 0);
    let n = r.count(1 + 8 + 8, MAX_MEMORY_PARTS)?;
    let mut parts = Vec::with_capacity(n);
    for _ in 0..n {
        let len = r.u8()? as usize;
        let what = r.text(len)?;
        parts.push(fslab::memory::MemoryUse { what, entries: r.u64()?, bytes: r.u64()? });
    }
    r.end()?;
    Ok(MemoryReport { resident, parts })
}

/// The longest name of what held the lock longest that crosses the wire.
const MAX_HOLDER_NAME: usize = 64;

pub(super) fn encode_lock(out: &mut Out, r: &LockReport) {
    for v in [
        r.since_mount_ns,
        r.exclusive,
        r.exclusive_waited,
        r.exclusive_wait_ns,
        r.exclusive_held_ns,
        r.longest_hold_ns,
        r.shared,
        r.shared_declined,
        r.shared_waited,
        r.shared_wait_ns,
    ] {
        out.u64(v);
    }
    let by = truncate_utf8(&r.longest_hold_by, MAX_HOLDER_NAME);
    out.u8(by.len() as u8);
    out.bytes(by.as_bytes());
}

pub(super) fn decode_lock(r: &mut In) -> Result<LockReport> {
    let mut v = [0u64; 10];
    for slot in &mut v {
        *slot = r.u64()?;
    }
    let len = r.u8()? as usize;
    if len > MAX_HOLDER_NAME {
        return Err(malformed());
    }
    let longest_hold_by = r.text(len)?;
    let [since_mount_ns, exclusive, exclusive_waited, exclusive_wait_ns, exclusive_held_ns, longest_hold_ns, shared, shared_declined, shared_waited, shared_wait_ns] =
        v;
    Ok(LockReport {
        since_mount_ns,
        exclusive,
        exclusive_waited,
        exclusive_wait_ns,
        exclusive_held_ns,
        longest_hold_ns,
        longest_hold_by,
        shared,
        shared_declined,
        shared_waited,
        shared_wait_ns,
    })
}

pub(super) fn encode_mount(out: &mut Out, r: &MountReport) {
    let s = &r.space;
    out.u8(match r.layout {
        LayoutReport::Lfs(_) => 0,
        LayoutReport::Ffs { .. } => 1,
    });
    out.u32(s.block_size);
    out.u32(s.name_max);
    for v in [s.total_blocks, s.free_blocks, s.total_inodes, s.free_inodes] {
        out.u64(v);
    }
    match &r.layout {
        LayoutReport::Lfs(c) => {
            for v in [
                c.partial_segments,
                c.cold_partial_segments,
                c.blocks_written,
                c.writes,
                c.checkpoints,
                c.segments_reclaimed,
            ] {
                out.u64(v);
            }
        }
        LayoutReport::Ffs { integrity, cylinder_groups, stats: c, leaks, journal } => {
            out.u8(match integrity {
                Integrity::Sync => 0,
                Integrity::Async => 1,
                Integrity::Softdep => 2,
                Integrity::Journal => 3,
                Integrity::JournalSync => 4,
            });
            out.u32(*cylinder_groups);
            for v in [
                c.writes,
                c.blocks_written,
                c.bytes_written,
                c.sync_writes,
                c.reads,
                c.syncs,
                c.checksummed_blocks,
                c.cluster_pushes,
                c.reallocations,
            ] {
                out.u64(v);
            }
            encode_leaks(out, leaks);
            match journal {
                None => out.u8(0),
                Some(j) => {
                    out.u8(1);
                    for v in [
                        j.transactions,
                        j.bytes_logged,
                        j.log_writes,
                        j.forces,
                        j.checkpoints,
                        j.largest_transaction,
                        j.data_logged,
                    ] {
                        out.u64(v);
                    }
                }
            }
        }
    }
}

/// Longest reason a stopped leak scan's report carries.
const MAX_LEAK_REASON: usize = 200;

fn encode_leaks(out: &mut Out, l: &LeakReport) {
    match &l.state {
        LeakScanState::NotNeeded => out.u8(0),
        LeakScanState::Running { next, of } => {
            out.u8(1);
            out.u64(*next);
            out.u64(*of);
        }
        LeakScanState::Done => out.u8(2),
        LeakScanState::Stopped(why) => {
            out.u8(3);
            let why = truncate_utf8(why, MAX_LEAK_REASON);
            out.u8(why.len() as u8);
            out.bytes(why.as_bytes());
        }
    }
    for v in [l.frags_freed, l.inodes_freed, l.links_lowered, l.block_counts_set, l.left_for_fsck] {
        out.u64(v);
    }
}

fn decode_leaks(r: &mut In) -> Result<LeakReport> {
    let state = match r.u8()? {
        0 => LeakScanState::NotNeeded,
        1 => LeakScanState::Running { next: r.u64()?, of: r.u64()? },
        2 => LeakScanState::Done,
        3 => {
            let len = r.u8()? as usize;
            if len > MAX_LEAK_REASON {
                return Err(malformed());
            }
            LeakScanState::Stopped(r.text(len)?)
        }
        _ => return Err(malformed()),
    };
    Ok(LeakReport {
        state,
        frags_freed: r.u64()?,
        inodes_freed: r.u64()?,
        links_lowered: r.u64()?,
        block_counts_set: r.u64()?,
        left_for_fsck: r.u64()?,
    })
}

pub(super) fn decode_mount(r: &mut In) -> Result<MountReport> {
    let layout = r.u8()?;
    let space = StatFs {
        block_size: r.u32()?,
        name_max: r.u32()?,
        total_blocks: r.u64()?,
        free_blocks: r.u64()?,
        total_inodes: r.u64()?,
        free_inodes: r.u64()?,
    };
    let layout = match layout {
        0 => LayoutReport::Lfs(fslab::lfs::Stats {
            partial_segments: r.u64()?,
            cold_partial_segments: r.u64()?,
            blocks_written: r.u64()?,
            writes: r.u64()?,
            checkpoints: r.u64()?,
            segments_reclaimed: r.u64()?,
        }),
        1 => {
            let integrity = match r.u8()? {
                0 => Integrity::Sync,
                1 => Integrity::Async,
                2 => Integrity::Softdep,
                3 => Integrity::Journal,
                4 => Integrity::JournalSync,
                _ => return Err(malformed()),
            };
            let cylinder_groups = r.u32()?;
            let stats = fslab::ffs::Stats {
                writes: r.u64()?,
                blocks_written: r.u64()?,
                bytes_written: r.u64()?,
                sync_writes: r.u64()?,
                reads: r.u64()?,
                syncs: r.u64()?,
                checksummed_blocks: r.u64()?,
                cluster_pushes: r.u64()?,
                reallocations: r.u64()?,
            };
            let leaks = decode_leaks(r)?;
            let journal = match r.u8()? {
                0 => None,
                1 => Some(fslab::ffs::JournalStats {
                    transactions: r.u64()?,
                    bytes_logged: r.u64()?,
                    log_writes: r.u64()?,
                    forces: r.u64()?,
                    checkpoints: r.u64()?,
                    largest_transaction: r.u64()?,
                    data_logged: r.u64()?,
                }),
                _ => return Err(malformed()),
            };
            LayoutReport::Ffs { integrity, cylinder_groups, stats, leaks, journal }
        }
        _ => return Err(malformed()),
    };
    Ok(MountReport { space, layout })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_state_of_a_leak_scan_crosses_the_wire_and_a_bad_one_is_refused() {
        let long = "x".repeat(3 * MAX_LEAK_REASON);
        for state in [
            LeakScanState::NotNeeded,
            LeakScanState::Running { next: 5, of: 9 },
            LeakScanState::Done,
            LeakScanState::Stopped("inode 7 could not be read".into()),
            LeakScanState::Stopped(long.clone()),
        ] {
            let sent = LeakReport {
                state,
                frags_freed: 1,
                inodes_freed: 2,
                links_lowered: 3,
                block_counts_set: 4,
                left_for_fsck: 5,
            };
            let mut out = Out::new(0);
            encode_leaks(&mut out, &sent);
            let mut r = In(&out.0[5..]);
            let got = decode_leaks(&mut r).expect("decodes");
            r.end().expect("nothing left over");
            match (&sent.state, &got.state) {
                (LeakScanState::Stopped(a), LeakScanState::Stopped(b)) if a.len() > MAX_LEAK_REASON => {
                    assert_eq!(b.len(), MAX_LEAK_REASON, "a long reason is cut");
                    assert_eq!(LeakReport { state: got.state.clone(), ..sent.clone() }, got);
                }
                _ => assert_eq!(got, sent),
            }
        }
        assert!(decode_leaks(&mut In(&[9])).is_err(), "an unknown state");
        assert!(decode_leaks(&mut In(&[3, 255])).is_err(), "a reason longer than any sent");
    }

    #[test]
    fn a_lock_report_crosses_the_wire_and_a_long_name_is_cut() {
        let sent = LockReport {
            since_mount_ns: 1,
            exclusive: 2,
            exclusive_waited: 3,
            exclusive_wait_ns: 4,
            exclusive_held_ns: 5,
            longest_hold_ns: 6,
            longest_hold_by: "fallocate".into(),
            shared: 7,
            shared_declined: 8,
            shared_waited: 9,
            shared_wait_ns: 10,
        };
        let round_trip = |sent: &LockReport| {
            let mut out = Out::new(0);
            encode_lock(&mut out, sent);
            let mut r = In(&out.0[5..]);
            let got = decode_lock(&mut r).expect("decodes");
            r.end().expect("nothing left over");
            got
        };
        assert_eq!(round_trip(&sent), sent);
        let long = LockReport { longest_hold_by: "é".repeat(MAX_HOLDER_NAME), ..sent.clone() };
        let got = round_trip(&long);
        assert_eq!(got.longest_hold_by, "é".repeat(MAX_HOLDER_NAME / 2), "cut at a character's edge");
        let mut bad = vec![0u8; 80];
        bad.push(MAX_HOLDER_NAME as u8 + 1);
        assert!(decode_lock(&mut In(&bad)).is_err(), "a name longer than any sent");
    }
}
