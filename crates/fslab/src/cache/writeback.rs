//! Write-back: dirty buffers written in place to the addresses a layout
//! gives them, neighbours on disk gathered into one device write (write
//! clustering, the 1993 paper's EFS §5.1), with a hook when each write starts
//! and when it is done.
//!
//! The hooks are where integrity schemes attach (2000 paper §4–5): soft
//! updates hands back a rolled-back copy at the start of a write and rolls
//! forward when it is done; a journal makes sure the log records describing
//! a block are on disk before the block goes. A layout without either
//! passes [`NoHooks`].
//!
//! Where the bytes go is a [`WriteDest`]: the device itself (the write
//! returns when the device has them) or a [`WriteQueue`] (the write is in
//! flight when it returns; `wait_idle` waits for it). Either way a write is
//! not durable until the device's flush barrier follows: whoever needs
//! durability (a synchronous write, fsync) issues it.

use super::{block_of, BlockData, BlockKey, BufferCache, Seq, WriteJob, WriteQueue};
use crate::error::errno;
use crate::format::Daddr;
use crate::Result;
use disk::BlockDevice;

/// Where write-back sends a run of buffers.
pub trait WriteDest {
    /// Writes `buffers`, each cut to its entry of `lens`, one after another
    /// from address `start` (in units of `unit_bytes`), or queues them.
    /// Returns the write's number in a [`WriteQueue`] (0 for none).
    fn write(
        &mut self,
        start: Daddr,
        unit_bytes: u64,
        buffers: Vec<BlockData>,
        lens: Vec<usize>,
    ) -> Result<Seq>;
}

/// Straight to the device: done when this returns.
impl WriteDest for &dyn BlockDevice {
    fn write(
        &mut self,
        start: Daddr,
        unit_bytes: u64,
        buffers: Vec<BlockData>,
        lens: Vec<usize>,
    ) -> Result<Seq> {
        let slices: Vec<&[u8]> = buffers.iter().zip(&lens).map(|(b, &l)| &b[..l]).collect();
        self.write_vectored_at(start.byte_offset(unit_bytes), &slices)?;
        Ok(0)
    }
}

/// To the writer thread: in flight when this returns.
impl WriteDest for &WriteQueue {
    fn write(
        &mut self,
        start: Daddr,
        unit_bytes: u64,
        buffers: Vec<BlockData>,
        lens: Vec<usize>,
    ) -> Result<Seq> {
        self.submit(WriteJob::of(start, unit_bytes, buffers, lens))
    }
}

/// To the device on the calling thread when the queue is idle, else
/// behind what is in flight ([`WriteQueue::write_now`]): for writes waited
/// for at once.
pub struct WriteNow<'a>(pub &'a WriteQueue);

impl WriteDest for WriteNow<'_> {
    fn write(
        &mut self,
        start: Daddr,
        unit_bytes: u64,
        buffers: Vec<BlockData>,
        lens: Vec<usize>,
    ) -> Result<Seq> {
        self.0.write_now(WriteJob::of(start, unit_bytes, buffers, lens))
    }
}

/// One buffer to write: its name in the cache, its address, and how many of
/// its bytes to write (all of a block, or a file's last few fragments).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placement {
    /// The buffer's name in the cache.
    pub key: BlockKey,
    /// Where it goes on the device.
    pub addr: Daddr,
    /// Bytes to write from the start of the buffer.
    pub bytes: usize,
}

/// Which bytes go to the device for a block being written back.
#[derive(Clone)]
pub enum WriteAs {
    /// The cached bytes, as they are.
    Cached,
    /// These bytes: the cached ones with what only the disk copy carries
    /// added (a trailer, a checksum). The buffer is clean once they are
    /// written.
    Sealed(BlockData),
    /// These bytes: a copy of the cached ones with the changes rolled back
    /// whose dependencies are not yet durable (soft updates), checksums
    /// recomputed in the copy. The buffer stays dirty with its real
    /// contents, to be written again once they may go.
    RolledBack(BlockData),
    /// Nothing: the block may not reach the disk yet (a journal's new
    /// block whose first contents are not yet logged). It stays dirty.
    Held,
}

/// What an integrity scheme does around each block write.
pub trait WriteHooks {
    /// `key` is about to be written to `addr`: which bytes to write. May
    /// first write what must precede the block.
    fn write_starting(&mut self, key: BlockKey, addr: Daddr, data: &BlockData) -> Result<WriteAs> {
        let _ = (key, addr, data);
        Ok(WriteAs::Cached)
    }

    /// The write of `key` to `addr` was issued as write `seq` of the queue
    /// (0 for a write straight to the device): the device has the bytes,
    /// or they are in flight, and the queue's `wait_idle` is when the
    /// device has them; they are durable once a ticket for `seq` is.
    fn write_done(&mut self, key: BlockKey, addr: Daddr, seq: Seq) {
        let _ = (key, addr, seq);
    }
}

/// No integrity scheme: the cached bytes are written as they are.
pub struct NoHooks;

impl WriteHooks for NoHooks {}

/// What one [`write_back`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WrittenBack {
    /// Buffers written.
    pub blocks: u64,
    /// Device writes issued (clusters).
    pub writes: u64,
    /// Bytes written.
    pub bytes: u64,
    /// The number of the last write queued (0: none, or not queued).
    pub last: Seq,
}

/// Writes the buffers of `placements` to `dest`, in address order, and
/// marks them clean (all but those written rolled back, which stay
/// dirty). Buffers whose addresses follow one another — the next starting
/// where one ends — go in one device write of at most `max_run_bytes` (a
/// layout passes its `maxcontig`): whole blocks always, and with
/// `join_fragments` a file's tail of fragments too, with the fragments
/// after it (another file's, in the same block). `unit_bytes` is the size
/// of an address unit (a fragment). A buffer no longer in the cache is
/// skipped.
pub fn write_back(
    cache: &mut BufferCache,
    dest: &mut dyn WriteDest,
    placements: &mut [Placement],
    unit_bytes: u64,
    max_run_bytes: usize,
    join_fragments: bool,
    hooks: &mut dyn WriteHooks,
) -> Result<WrittenBack> {
    placements.sort_by_key(|p| p.addr);
    let block = cache.block_size;
    // Whether `next` goes in the same device write as `last`.
    let follows = |last: &Placement, next: &Placement| {
        (last.bytes == block || join_fragments)
            && next.addr == last.addr + (last.bytes as u64).div_ceil(unit_bytes.max(1))
    };
    let mut done = WrittenBack::default();
    let mut i = 0;
    while i < placements.len() {
        if cache.partial(placements[i].key).is_some() {
            write_partial_back(cache, dest, placements[i], unit_bytes, hooks, &mut done)?;
            i += 1;
            continue;
        }
        let mut run = vec![placements[i]];
        let mut bytes = placements[i].bytes;
        while let Some(&next) = placements.get(i + run.len()) {
            let last = run[run.len() - 1];
            if !follows(&last, &next)
                || bytes + next.bytes > max_run_bytes.max(block)
                || cache.partial(next.key).is_some()
            {
                break;
            }
            bytes += next.bytes;
            run.push(next);
        }
        i += run.len();
        let mut buffers: Vec<BlockData> = Vec::with_capacity(run.len());
        let mut written: Vec<Placement> = Vec::with_capacity(run.len());
        let mut rolled_back: Vec<bool> = Vec::with_capacity(run.len());
        for p in &run {
            let Some(data) = cache.share(p.key) else { continue };
            if p.bytes > data.len() {
                return Err(errno(libc::EINVAL, "write-back of more bytes than a buffer holds"));
            }
            let (data, rolled) = match hooks.write_starting(p.key, p.addr, &data)? {
                WriteAs::Cached => (data, false),
                WriteAs::Sealed(copy) => (copy, false),
                WriteAs::RolledBack(copy) => {
                    if let Some(seq) = cache.copy_on_disk(p.key, p.addr, &copy) {
                        // These very bytes went with write `seq`: what this
                        // write would satisfy, that one does.
                        hooks.write_done(p.key, p.addr, seq);
                        done.last = done.last.max(seq);
                        continue;
                    }
                    (copy, true)
                }
                WriteAs::Held => continue,
            };
            if data.len() < p.bytes {
                return Err(errno(libc::EINVAL, "write hook gave back fewer bytes than the block"));
            }
            buffers.push(data);
            written.push(*p);
            rolled_back.push(rolled);
        }
        // A skipped buffer splits the run: write what is contiguous.
        let mut start = 0;
        while start < written.len() {
            let mut end = start + 1;
            while end < written.len() && follows(&written[end - 1], &written[end]) {
                end += 1;
            }
            let run_buffers = buffers[start..end].to_vec();
            let lens = written[start..end].iter().map(|p| p.bytes).collect();
            let seq = dest.write(written[start].addr, unit_bytes, run_buffers, lens)?;
            done.writes += 1;
            done.last = done.last.max(seq);
            for ((p, &rolled), data) in
                written[start..end].iter().zip(&rolled_back[start..end]).zip(&buffers[start..end])
            {
                if rolled {
                    cache.note_copy_written(p.key, p.addr, data.clone(), seq);
                } else {
                    // A file's tail of fragments stays cached as what went
                    // to the device: a small file takes its own size.
                    let held = if p.key.0 == super::DEVICE { block } else { p.bytes };
                    cache.mark_written_holding(p.key, seq, held);
                }
                hooks.write_done(p.key, p.addr, seq);
                done.blocks += 1;
                done.bytes += p.bytes as u64;
            }
            start = end;
        }
    }
    Ok(done)
}

/// Writes back a buffer held in part ([`BufferCache::write_partial`]):
/// only its bytes, at their place in the block, which stays the disk's
/// elsewhere; it then leaves the cache. Its bytes past `p.bytes` (a block
/// that became a tail since) lie past the file's end and are not written.
fn write_partial_back(
    cache: &mut BufferCache,
    dest: &mut dyn WriteDest,
    p: Placement,
    unit_bytes: u64,
    hooks: &mut dyn WriteHooks,
    done: &mut WrittenBack,
) -> Result<()> {
    let Some((data, valid)) = cache.share_for_write(p.key) else { return Ok(()) };
    match hooks.write_starting(p.key, p.addr, &data)? {
        WriteAs::Cached => {}
        WriteAs::Held => return Ok(()),
        WriteAs::Sealed(_) | WriteAs::RolledBack(_) => {
            return Err(errno(libc::EIO, "a block held in part was to be written as another copy"));
        }
    }
    let end = valid.end.min(p.bytes);
    let (from, unit) = (valid.start as u64, unit_bytes.max(1));
    if !from.is_multiple_of(unit) {
        return Err(errno(libc::EINVAL, "a block held in part starts inside a fragment"));
    }
    let mut seq = 0;
    if valid.start < end {
        let bytes = block_of(&data[valid.start..end]);
        seq = dest.write(p.addr + from / unit, unit_bytes, vec![bytes], vec![end - valid.start])?;
        done.writes += 1;
        done.bytes += (end - valid.start) as u64;
    }
    done.last = done.last.max(seq);
    cache.mark_written(p.key, seq);
    hooks.write_done(p.key, p.addr, seq);
    done.blocks += 1;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::{block_of, device_key, CacheLimits};
    use disk::MemDisk;

    /// Records the writes' order and serves a rolled-back copy of one key.
    #[derive(Default)]
    struct Recorder {
        started: Vec<BlockKey>,
        done: Vec<BlockKey>,
        roll_back: Option<BlockKey>,
    }

    impl WriteHooks for Recorder {
        fn write_starting(&mut self, key: BlockKey, _addr: Daddr, _data: &BlockData) -> Result<WriteAs> {
            self.started.push(key);
            Ok(if self.roll_back == Some(key) {
                WriteAs::RolledBack(block_of(&[0xEE; 1024]))
            } else {
                WriteAs::Cached
            })
        }
        fn write_done(&mut self, key: BlockKey, _addr: Daddr, _seq: Seq) {
            self.done.push(key);
        }
    }

    #[test]
    fn neighbours_go_in_one_write_up_to_the_run_limit_and_hooks_see_each_block() {
        let mut cache = BufferCache::new(1024, CacheLimits::for_memory(1 << 20));
        let dev = MemDisk::new(64 * 1024);
        // Blocks of 1 KiB at unit 512: addresses 10, 12, 14 adjacent, 20 apart;
        // a device block and a fragment tail (512 bytes) at 16.
        for (lbn, byte) in [(0, 1u8), (1, 2), (2, 3), (3, 4)] {
            cache.insert((5, lbn), block_of(&[byte; 1024]), true);
        }
        cache.insert(device_key(Daddr::new(20)), block_of(&[9; 1024]), true);
        let mut placements = vec![
            Placement { key: (5, 2), addr: Daddr::new(14), bytes: 1024 },
            Placement { key: (5, 0), addr: Daddr::new(10), bytes: 1024 },
            Placement { key: (5, 1), addr: Daddr::new(12), bytes: 1024 },
            Placement { key: (5, 3), addr: Daddr::new(16), bytes: 512 },
            Placement { key: device_key(Daddr::new(20)), addr: Daddr::new(20), bytes: 1024 },
        ];
        let mut hooks = Recorder { roll_back: Some((5, 1)), ..Recorder::default() };
        let mut dest: &dyn BlockDevice = &dev;
        let done = write_back(&mut cache, &mut dest, &mut placements, 512, 2048, false, &mut hooks)
            .expect("write back");
        assert_eq!(
            done,
            WrittenBack { blocks: 5, writes: 3, bytes: 4 * 1024 + 512, last: 0 },
            "10-12, 14-16, 20"
        );
        assert_eq!(hooks.started, vec![(5, 0), (5, 1), (5, 2), (5, 3), device_key(Daddr::new(20))]);
        assert_eq!(hooks.done, hooks.started);
        assert_eq!(cache.dirty_count(), 1, "every buffer written is clean but the one rolled back");
        assert!(cache.is_dirty((5, 1)) && cache.durable_after((5, 1)).is_none());
        let mut image = vec![0u8; 64 * 1024];
        dev.read_at(0, &mut image).expect("read");
        let at = |addr: usize| image[addr * 512];
        assert_eq!((at(10), at(12), at(14), at(16), at(20)), (1, 0xEE, 3, 4, 9), "the rolled-back copy went");
        assert_eq!(image[16 * 512 + 512], 0, "only the fragment's bytes of the tail");
        assert_eq!(cache.get((5, 1)).map(|b| b[0]), Some(2), "the cache keeps the current bytes");
    }

    #[test]
    fn tails_of_fragments_join_the_writes_after_them_only_when_asked() {
        for join in [false, true] {
            let mut cache = BufferCache::new(1024, CacheLimits::for_memory(1 << 20));
            let dev = MemDisk::new(64 * 1024);
            // Two files' tails of one fragment sharing the block at 16, a
            // third file's whole block at 18, a fourth's tail past a gap.
            for (ino, byte) in [(5, 1u8), (6, 2), (7, 3), (8, 4)] {
                cache.insert((ino, 0), block_of(&[byte; 1024]), true);
            }
            let mut placements = vec![
                Placement { key: (6, 0), addr: Daddr::new(17), bytes: 512 },
                Placement { key: (5, 0), addr: Daddr::new(16), bytes: 512 },
                Placement { key: (8, 0), addr: Daddr::new(21), bytes: 512 },
                Placement { key: (7, 0), addr: Daddr::new(18), bytes: 1024 },
            ];
            let mut hooks = Recorder::default();
            let mut dest: &dyn BlockDevice = &dev;
            let done = write_back(&mut cache, &mut dest, &mut placements, 512, 4096, join, &mut hooks)
                .expect("write back");
            let writes = if join { 2 } else { 4 };
            assert_eq!(done, WrittenBack { blocks: 4, writes, bytes: 2560, last: 0 }, "joined: {join}");
            assert_eq!(hooks.done, vec![(5, 0), (6, 0), (7, 0), (8, 0)]);
            let mut image = vec![0u8; 64 * 1024];
            dev.read_at(0, &mut image).expect("read");
            let at = |unit: usize| (image[unit * 512], image[unit * 512 + 511]);
            assert_eq!(
                [at(16), at(17), at(18), at(19), at(20), at(21)],
                [(1, 1), (2, 2), (3, 3), (3, 3), (0, 0), (4, 4)]
            );
            assert_eq!(image[22 * 512], 0, "only the last tail's fragment");
            assert_eq!(cache.dirty_count(), 0);
        }
    }

    #[test]
    fn a_block_held_in_part_goes_alone_with_only_its_bytes_and_leaves_the_cache() {
        let mut cache = BufferCache::new(1024, CacheLimits::for_memory(1 << 20));
        let dev = MemDisk::new(64 * 1024);
        dev.write_at(0, &[0x55; 64 * 1024]).expect("write");
        // 10 and 14 whole, 12 between them held in part (its second half).
        cache.insert((5, 0), block_of(&[1; 1024]), true);
        assert!(cache.write_partial((5, 1), 512, &[2; 512]));
        cache.insert((5, 2), block_of(&[3; 1024]), true);
        let mut placements = vec![
            Placement { key: (5, 0), addr: Daddr::new(10), bytes: 1024 },
            Placement { key: (5, 1), addr: Daddr::new(12), bytes: 1024 },
            Placement { key: (5, 2), addr: Daddr::new(14), bytes: 1024 },
        ];
        let mut hooks = Recorder::default();
        let mut dest: &dyn BlockDevice = &dev;
        let done = write_back(&mut cache, &mut dest, &mut placements, 512, 4096, false, &mut hooks)
            .expect("write back");
        assert_eq!(
            done,
            WrittenBack { blocks: 3, writes: 3, bytes: 2048 + 512, last: 0 },
            "no run through it"
        );
        assert_eq!(hooks.done, vec![(5, 0), (5, 1), (5, 2)]);
        let mut image = vec![0u8; 64 * 1024];
        dev.read_at(0, &mut image).expect("read");
        assert_eq!(&image[12 * 512..13 * 512], &[0x55; 512][..], "the disk's half is left alone");
        assert_eq!(&image[13 * 512..14 * 512], &[2; 512][..]);
        assert!(!cache.contains((5, 1)) && cache.contains((5, 0)) && !cache.is_dirty((5, 0)));
        // Made a tail of one fragment since: the bytes past it are not written.
        assert!(cache.write_partial((5, 3), 512, &[4; 512]));
        let mut tail = [Placement { key: (5, 3), addr: Daddr::new(20), bytes: 512 }];
        let done =
            write_back(&mut cache, &mut dest, &mut tail, 512, 4096, false, &mut hooks).expect("write back");
        assert_eq!((done.blocks, done.writes, done.bytes), (1, 0, 0));
        assert!(!cache.contains((5, 3)));
    }

    /// A write queue's numbers, so that the first write's can be told.
    struct Numbered(u64);

    impl WriteDest for Numbered {
        fn write(&mut self, _: Daddr, _: u64, _: Vec<BlockData>, _: Vec<usize>) -> Result<Seq> {
            self.0 += 1;
            Ok(self.0)
        }
    }

    #[test]
    fn a_rolled_back_copy_already_written_there_is_not_written_again() {
        let mut cache = BufferCache::new(1024, CacheLimits::for_memory(1 << 20));
        cache.insert((5, 1), block_of(&[2; 1024]), true);
        let placement = Placement { key: (5, 1), addr: Daddr::new(12), bytes: 1024 };
        let mut hooks = Recorder { roll_back: Some((5, 1)), ..Recorder::default() };
        let mut dest = Numbered(0);
        let first =
            write_back(&mut cache, &mut dest, &mut [placement], 512, 2048, false, &mut hooks).expect("write");
        assert_eq!((first.writes, first.last), (1, 1));
        let again =
            write_back(&mut cache, &mut dest, &mut [placement], 512, 2048, false, &mut hooks).expect("write");
        assert_eq!((again.writes, again.last, dest.0), (0, 1, 1), "the same bytes: write 1 stands for it");
        assert_eq!(hooks.done, vec![(5, 1), (5, 1)], "what the write would satisfy, write 1 does");
        let moved = Placement { addr: Daddr::new(20), ..placement };
        let elsewhere =
            write_back(&mut cache, &mut dest, &mut [moved], 512, 2048, false, &mut hooks).expect("write");
        assert_eq!((elsewhere.writes, elsewhere.last), (1, 2), "another address is written");
        hooks.roll_back = None;
        write_back(&mut cache, &mut dest, &mut [placement], 512, 2048, false, &mut hooks).expect("write");
        assert!(!cache.is_dirty((5, 1)), "written as it is: clean");
    }
}
