//! Tests of the write queue (`queue.rs`): numbering, durability and
//! flushes shared by waiters, the stop-access threshold, writes made on
//! the caller's thread, and what a reader without the lock learns.

use super::*;
use crate::cache::block_of;
use disk::{CountingDisk, MemDisk};
use std::time::Duration;

fn job_at(addr: u64) -> WriteJob {
    WriteJob {
        start: Daddr::new(addr),
        units: 1,
        buffers: vec![block_of(&[7; 512])],
        lens: vec![512],
        header: None,
    }
}

#[test]
fn a_reader_learns_of_writes_submitted_since_to_its_addresses_and_of_forgotten_ones() {
    let queue = WriteQueue::new(Arc::new(MemDisk::new(8 << 20)), "test-io", 512, 0, 1 << 20);
    let reader = queue.reader();
    let since = reader.issued();
    assert!(!reader.written_since(since, 4, 512), "nothing written yet");
    queue.submit(job_at(4)).expect("submit");
    assert!(reader.written_since(since, 4, 512));
    assert!(reader.written_since(since, 3, 1024), "a range reaching the write");
    assert!(!reader.written_since(since, 5, 512), "the unit after it");
    assert!(!reader.written_since(since, 2, 1024), "the two units before it");
    let later = reader.issued();
    assert!(!reader.written_since(later, 4, 512), "written before the moment asked about");
    let mut buf = [0u8; 512];
    reader.read(4, &mut buf).expect("read");
    assert_eq!(buf, [7; 512], "a read waits for the write in flight");
    // The history holds the last WRITE_HISTORY writes: all since
    // `later` still, then one too many.
    for _ in 0..WRITE_HISTORY {
        queue.submit(job_at(100)).expect("submit");
    }
    assert!(!reader.written_since(later, 5000, 512));
    queue.submit(job_at(100)).expect("submit");
    assert!(
        reader.written_since(later, 5000, 512),
        "once the history no longer reaches back, anything may have been written"
    );
    assert!(!reader.written_since(reader.issued() - 1, 5000, 512));
}

#[test]
fn a_write_is_durable_only_once_a_flush_issued_after_it_returns() {
    let disk = Arc::new(CountingDisk::new(MemDisk::new(1 << 20)));
    let queue = WriteQueue::new(disk.clone(), "test-io", 512, 0, 1 << 20);
    let first = queue.submit(job_at(4)).expect("submit");
    assert_eq!((first, queue.issued()), (1, 1));
    let ticket = queue.ticket(first);
    assert_eq!(queue.durable(), 0, "issued is not durable");
    ticket.wait().expect("durable");
    assert!(ticket.is_ready());
    assert_eq!((queue.durable(), disk.flushes()), (1, 1));
    // Nothing new since: waiting again, or a flush, costs no barrier.
    ticket.wait().expect("still durable");
    queue.flush().expect("flush");
    assert_eq!(disk.flushes(), 1);
    let second = queue.submit(job_at(8)).expect("submit");
    assert_eq!(second, 2);
    assert!(ticket.is_ready() && !queue.ticket(second).is_ready());
    queue.flush().expect("flush");
    assert_eq!((queue.durable(), disk.flushes()), (2, 2));
    // A barrier is for writes made beside the queue: always issued.
    queue.barrier().expect("barrier");
    assert_eq!(disk.flushes(), 3);
    assert!(Ticket::none().is_ready() && Ticket::none().wait().is_ok());
}

#[test]
fn callers_waiting_for_the_same_writes_share_one_flush() {
    let disk = Arc::new(CountingDisk::with_flush_delay(MemDisk::new(1 << 20), Duration::from_millis(30)));
    let queue = WriteQueue::new(disk.clone(), "test-io", 512, 0, 1 << 20);
    let tickets: Vec<Ticket> =
        (0..8).map(|i| queue.ticket(queue.submit(job_at(2 * i)).expect("submit"))).collect();
    // On the device, not yet durable: the first flush covers all eight.
    queue.wait_idle().expect("idle");
    assert_eq!(queue.durable(), 0);
    let waiters: Vec<_> = tickets.into_iter().map(|t| std::thread::spawn(move || t.wait())).collect();
    for waiter in waiters {
        waiter.join().expect("joined").expect("durable");
    }
    assert_eq!(disk.flushes(), 1, "eight waiters, one barrier");
    assert_eq!(queue.durable(), 8);
}

/// A memory disk whose writes wait until the test opens the gate.
struct GatedDisk {
    inner: MemDisk,
    open: std::sync::Mutex<bool>,
    opened: std::sync::Condvar,
}

impl disk::BlockDevice for GatedDisk {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<()> {
        self.inner.read_at(offset, buf)
    }

    fn write_at(&self, offset: u64, buf: &[u8]) -> std::io::Result<()> {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        while !*open {
            open = self.opened.wait(open).unwrap_or_else(|e| e.into_inner());
        }
        self.inner.write_at(offset, buf)
    }

    fn flush(&self) -> std::io::Result<()> {
        self.inner.flush()
    }

    fn size(&self) -> u64 {
        self.inner.size()
    }
}

#[test]
fn a_block_written_again_while_queued_waits_and_a_flush_still_ends() {
    let disk = Arc::new(GatedDisk {
        inner: MemDisk::new(1 << 20),
        open: std::sync::Mutex::new(false),
        opened: std::sync::Condvar::new(),
    });
    let queue = Arc::new(WriteQueue::new(disk.clone(), "test-io", 512, 0, 1 << 20));
    queue.submit(job_at(4)).expect("first write");
    let again = {
        let queue = queue.clone();
        std::thread::spawn(move || queue.submit(job_at(4)))
    };
    std::thread::sleep(Duration::from_millis(50));
    assert!(!again.is_finished(), "the second write waits for the first");
    *disk.open.lock().expect("gate") = true;
    disk.opened.notify_all();
    let second = again.join().expect("joined").expect("second write");
    // Nothing in flight now: a write made on the caller's thread comes
    // after both, and a flush covers all three.
    queue.wait_idle().expect("idle");
    let third = queue.write_now(job_at(8)).expect("third write");
    assert_eq!((second, third), (2, 3));
    queue.flush().expect("flush");
    assert_eq!(queue.durable(), 3);
}

#[test]
fn writes_completing_out_of_order_count_as_completed_only_behind_every_earlier_one() {
    let mut state = State::default();
    for seq in [2, 4, 3] {
        state.complete(seq);
        assert_eq!(state.completed, 0, "write 1 has not completed");
    }
    state.complete(1);
    assert_eq!(state.completed, 4);
    assert!(state.completed_ahead.is_empty());
    state.complete(5);
    assert_eq!(state.completed, 5);
}

/// Threads submitting while another writes on its own thread: every
/// write is numbered once, none is counted durable before it lands.
#[test]
fn writes_from_several_threads_at_once_are_all_durable_after_a_flush() {
    let disk = Arc::new(MemDisk::new(1 << 20));
    let queue = Arc::new(WriteQueue::new(disk.clone(), "test-io", 512, 0, 1 << 20));
    let workers: Vec<_> = (0..4u64)
        .map(|t| {
            let (queue, disk) = (queue.clone(), disk.clone());
            std::thread::spawn(move || {
                for i in 0..50u64 {
                    let at = t * 100 + i;
                    let job =
                        WriteJob::of(Daddr::new(at), 512, vec![block_of(&[t as u8 + 1; 512])], vec![512]);
                    let seq =
                        if i % 2 == 0 { queue.write_now(job) } else { queue.submit(job) }.expect("write");
                    queue.ticket(seq).wait().expect("durable");
                    let mut got = [0u8; 512];
                    disk.read_at(at * 512, &mut got).expect("read");
                    assert_eq!(got[0], t as u8 + 1, "write {seq} durable before it landed");
                }
            })
        })
        .collect();
    for w in workers {
        w.join().expect("worker");
    }
    assert_eq!(queue.issued(), 200);
    assert_eq!(queue.durable(), 200);
}

#[test]
fn queued_writes_land_with_their_headers_and_a_read_waits_for_them() {
    let disk = Arc::new(MemDisk::new(1 << 20));
    let queue = WriteQueue::new(disk.clone(), "test-io", 512, 512, 1 << 20);
    let header: Header = Box::new(|blocks| block_of(&[blocks.len() as u8; 512]));
    queue
        .submit(WriteJob {
            start: Daddr::new(10),
            units: 3,
            buffers: vec![block_of(&[1; 512]), block_of(&[2; 512])],
            lens: vec![512, 100],
            header: Some(header),
        })
        .expect("submit");
    queue.wait_for(Daddr::new(12), 1);
    let mut got = vec![0u8; 3 * 512];
    disk.read_at(10 * 512, &mut got).expect("read");
    assert_eq!(
        (got[0], got[512], got[1024], got[1124]),
        (2, 1, 2, 0),
        "header, block, 100 bytes of the tail"
    );
    queue.wait_idle().expect("idle");
}

#[test]
fn an_inline_queue_has_written_each_job_when_submit_returns() {
    let disk = Arc::new(MemDisk::new(1 << 20));
    let queue = WriteQueue::with_mode(disk.clone(), "unused", 512, 0, 1 << 20, WriteMode::Inline);
    let job = WriteJob {
        start: Daddr::new(4),
        units: 1,
        buffers: vec![block_of(&[9; 512])],
        lens: vec![512],
        header: None,
    };
    queue.submit(job).expect("submit");
    let mut got = [0u8; 1];
    disk.read_at(4 * 512, &mut got).expect("read");
    assert_eq!(got, [9], "on the device at once, with nothing to wait for");
    queue.wait_idle().expect("idle");
}

#[test]
fn a_queue_failed_by_its_file_system_refuses_everything_after_and_wakes_its_waiters() {
    let queue = WriteQueue::new(Arc::new(MemDisk::new(1 << 20)), "test-io", 512, 0, 1 << 20);
    let seq = queue.submit(job_at(4)).expect("submit");
    queue.fail("a transaction larger than the log".to_string());
    queue.fail("a later reason".to_string());
    let e = queue.failure().expect_err("failed");
    assert!(e.to_string().contains("larger than the log"), "the first reason is kept: {e}");
    assert!(queue.submit(job_at(8)).is_err() && queue.flush().is_err());
    assert!(queue.ticket(seq + 1).wait().is_err(), "a wait for what will never be written ends");
}
