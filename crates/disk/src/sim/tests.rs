//! SimDisk's contract as a `BlockDevice`, and how its time behaves.
//! The checks against the papers' numbers are in `tests/simdisk_validation.rs`.

use super::*;
use std::thread;

fn disk_with(name: &str, options: SimOptions) -> SimDisk {
    let model = DiskModel::by_name(name).expect("a catalogued model");
    SimDisk::with_options(model, Arc::new(VirtualClock::new()), options).expect("a valid model")
}

fn disk(name: &str) -> SimDisk {
    disk_with(name, SimOptions { trace: true, ..SimOptions::default() })
}

#[test]
fn unwritten_bytes_read_as_zero_and_the_latest_write_wins() {
    let d = disk("hp97560");
    let mut buf = vec![7u8; 1000];
    d.read_at(12_345, &mut buf).expect("read");
    assert!(buf.iter().all(|&b| b == 0));
    d.write_at(100, b"first write").expect("write");
    d.write_at(106, b"WRITE").expect("write");
    let mut back = [0u8; 11];
    d.read_at(100, &mut back).expect("read before any flush");
    assert_eq!(&back, b"first WRITE");
}

#[test]
fn a_vectored_write_is_one_command() {
    let d = disk("hp97560");
    d.write_vectored_at(4096, &[b"abc", b"def", &[b'g'; 1024]]).expect("write");
    d.flush().expect("flush");
    let trace = d.take_trace();
    assert_eq!(trace.len(), 1);
    assert_eq!((trace[0].lbn, trace[0].sectors), (8, 3), "1030 bytes at sector 8 touch 3 sectors");
    let mut back = [0u8; 7];
    d.read_at(4096, &mut back).expect("read");
    assert_eq!(&back, b"abcdefg");
}

#[test]
fn access_past_the_end_fails_and_changes_nothing() {
    let d = disk("wren4");
    let size = d.size();
    assert_eq!(size, 1546 * 9 * 45 * 512);
    let err = d.write_at(size - 1, b"ab").expect_err("write past the end");
    assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
    let mut buf = [0u8; 2];
    let err = d.read_at(u64::MAX - 1, &mut buf).expect_err("read past the end");
    assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
    d.write_at(size - 2, b"ok").expect("the last two bytes");
    d.write_at(size, b"").expect("an empty write at the end");
    assert_eq!(d.clock().now(), 0, "refused and empty requests take no time");
    assert_eq!(d.stats().writes, 1);
}

#[test]
fn posted_writes_return_at_once_and_flush_waits_for_them() {
    let d = disk("dsp3105");
    for i in 0..4 {
        d.write_at(i * 65536, &[1u8; 65536]).expect("write");
    }
    assert_eq!(d.clock().now(), 0, "posting writes takes no simulated time");
    d.flush().expect("flush");
    let trace = d.take_trace();
    assert_eq!(trace.len(), 4);
    assert_eq!(d.clock().now(), trace[3].finish, "flush returns when the last write is done");
    for pair in trace.windows(2) {
        assert_eq!(pair[1].start, pair[0].finish, "queued commands follow each other");
    }
}

#[test]
fn a_read_waits_behind_posted_writes() {
    let d = disk("dsp3105");
    d.write_at(0, &[1u8; 65536]).expect("write");
    let mut buf = [0u8; 512];
    d.read_at(500 * 65536, &mut buf).expect("read");
    let trace = d.take_trace();
    assert_eq!(trace[1].kind, RequestKind::Read);
    assert_eq!(trace[1].start, trace[0].finish, "first come, first served");
    assert_eq!(d.clock().now(), trace[1].finish, "the reader waits for its read");
}

#[test]
fn a_synchronous_write_is_write_then_flush() {
    let d = disk("hp97560");
    d.write_at(0, &[3u8; 8192]).expect("write");
    d.flush().expect("flush");
    let after_first = d.clock().now();
    let trace = d.take_trace();
    assert_eq!(after_first, trace[0].finish);
    // Idle again: flushing an empty queue takes no time.
    d.flush().expect("flush");
    assert_eq!(d.clock().now(), after_first);
}

#[test]
fn transfers_larger_than_the_maximum_are_split() {
    let d = disk("hp97560");
    d.write_at(0, &vec![9u8; 256 * 1024]).expect("write");
    d.flush().expect("flush");
    let mut back = vec![0u8; 200 * 1024];
    d.read_at(0, &mut back).expect("read");
    assert!(back.iter().all(|&b| b == 9));
    let s = d.stats();
    assert_eq!(s.writes, 4, "64 KB commands");
    assert_eq!(s.reads, 4, "three of 64 KB and one of 8 KB");
    assert_eq!(s.bytes_read, 200 * 1024);
}

#[test]
fn cpu_time_charged_by_the_caller_delays_later_requests() {
    let d = disk("hp97560");
    d.clock().advance(1_000_000_000);
    let mut buf = [0u8; 512];
    d.read_at(0, &mut buf).expect("read");
    let trace = d.take_trace();
    assert_eq!(trace[0].submit, 1_000_000_000);
    assert_eq!(d.stats().idle_ns, 1_000_000_000);
}

#[test]
fn clook_serves_queued_writes_in_one_upward_sweep() {
    let d = disk_with(
        "hp97560",
        SimOptions { scheduler: Scheduler::CLook, trace: true, ..SimOptions::default() },
    );
    // The first write keeps the drive busy while the others queue.
    for sector in [1000u64, 5000, 3000, 9000, 2000] {
        d.write_at(sector * 512, &[0u8; 4096]).expect("write");
    }
    d.flush().expect("flush");
    let order: Vec<u64> = d.take_trace().iter().map(|r| r.lbn).collect();
    assert_eq!(order, [1000, 2000, 3000, 5000, 9000]);
    let fcfs = disk("hp97560");
    for sector in [1000u64, 5000, 3000, 9000, 2000] {
        fcfs.write_at(sector * 512, &[0u8; 4096]).expect("write");
    }
    fcfs.flush().expect("flush");
    let order: Vec<u64> = fcfs.take_trace().iter().map(|r| r.lbn).collect();
    assert_eq!(order, [1000, 5000, 3000, 9000, 2000]);
}

#[test]
fn the_write_cache_streams_back_to_back_writes_and_flush_drains_it() {
    let run = |write_cache: bool| {
        let d = disk_with("cheetah9lp", SimOptions { write_cache, trace: true, ..SimOptions::default() });
        for i in 0..16u64 {
            d.write_at(i * 65536, &[5u8; 65536]).expect("write");
            d.clock().advance(100_000);
        }
        d.flush().expect("flush");
        (d.clock().now(), d.stats(), d.take_trace())
    };
    let (through, _, _) = run(false);
    let (cached, stats, trace) = run(true);
    assert_eq!(stats.cached_writes, 16);
    assert!(trace.iter().all(|r| r.service == Service::WriteCache));
    // Without the cache each 64 KB write loses most of a revolution.
    let revolution = DiskModel::by_name("cheetah9lp").expect("model").revolution_ns();
    assert!(through > cached + 12 * revolution, "through {through} ns, cached {cached} ns");
    // The flush waited for the media, not just the acknowledgements.
    assert!(cached > trace[15].finish);
}

#[test]
fn reads_of_the_next_sectors_come_from_read_ahead() {
    let d = disk("hp97560");
    let mut buf = vec![0u8; 8192];
    d.read_at(0, &mut buf).expect("read");
    d.clock().advance(5_000_000);
    d.read_at(8192, &mut buf).expect("read");
    let s = d.stats();
    assert_eq!(s.buffer_hits + s.streaming_hits, 1);
    assert_eq!(s.seeks + s.head_switches, 0);
    let trace = d.take_trace();
    assert_eq!(trace[1].service, Service::BufferHit);
    // A write to the buffered sectors evicts them: the next read misses.
    d.write_at(16384, &[1u8; 512]).expect("write");
    d.read_at(16384, &mut buf[..512]).expect("read");
    assert_eq!(d.take_trace()[1].service, Service::Media);
}

#[test]
fn sharing_between_threads_keeps_every_write() {
    let d = Arc::new(disk("cheetah9lp"));
    let handles: Vec<_> = (0..4u8)
        .map(|t| {
            let d = Arc::clone(&d);
            thread::spawn(move || {
                for i in 0..50u64 {
                    let offset = (u64::from(t) * 1000 + i) * 4096;
                    d.write_at(offset, &[t + 1; 4096]).expect("write");
                    let mut back = [0u8; 4096];
                    d.read_at(offset, &mut back).expect("read");
                    assert!(back.iter().all(|&b| b == t + 1));
                }
            })
        })
        .collect();
    for h in handles {
        h.join().expect("thread");
    }
    d.flush().expect("flush");
    assert_eq!(d.stats().writes, 200);
}

#[test]
fn only_written_regions_take_memory() {
    let d = disk("cheetah9lp");
    assert!(d.size() > 9_000_000_000);
    d.write_at(d.size() - 4096, &[1u8; 4096]).expect("write");
    d.write_at(0, &[1u8; 4096]).expect("write");
    assert_eq!(d.resident_bytes(), 2 * 64 * 1024);
}

#[test]
fn every_catalogued_model_is_found_by_name() {
    let names = DiskModel::names();
    assert_eq!(names, ["hp97560", "dsp3105", "wren4", "m2694", "st32430n", "cheetah9lp"]);
    for name in names {
        let model = DiskModel::by_name(&name.to_uppercase()).expect("found ignoring case");
        assert_eq!(model.name, name);
        SimDisk::new(model, Arc::new(VirtualClock::new())).expect("valid");
    }
    assert!(DiskModel::by_name("rk05").is_none());
}

#[test]
fn an_inconsistent_model_is_refused() {
    let mut model = DiskModel::by_name("hp97560").expect("model");
    model.zones[0].track_skew = 72;
    let err = SimDisk::new(model, Arc::new(VirtualClock::new())).err().expect("refused");
    assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
}

#[test]
fn read_ahead_resumes_after_pausing_at_its_limit() {
    // Regression: read-ahead that reached its limit stopped for good, so a
    // reader slower than the media (the HP 97560's 1.6 MB/s bus against its
    // 2.2 MB/s media) ran the buffer dry every few requests and then missed,
    // waiting for the sector to come round. Read-ahead now pauses at its
    // limit and resumes when a read is served from the segment.
    let d = disk("hp97560");
    let mut buf = vec![0u8; 64 * 1024];
    for i in 0..32u64 {
        d.read_at(i * 64 * 1024, &mut buf).expect("read");
    }
    let s = d.stats();
    assert_eq!(s.buffer_hits + s.streaming_hits, 31, "every read after the first is served by read-ahead");
    assert_eq!(s.seeks + s.head_switches, 0, "read-ahead moved the heads, not the reads");
}

#[test]
fn a_posted_read_overlaps_the_callers_cpu_time() {
    // Read 64 KB, charge a 20 ms copy, read the next 64 KB: in series
    // without read-ahead; with the next read posted before the copy, the
    // copy hides under it.
    let run = |post: bool| {
        let d = disk("dsp3105");
        let mut buf = vec![0u8; 64 << 10];
        d.read_at(1 << 20, &mut buf).expect("read");
        if post {
            d.read_ahead((1 << 20) + (64 << 10), 64 << 10).expect("read ahead");
        }
        d.clock().advance(20_000_000);
        d.read_at((1 << 20) + (64 << 10), &mut buf).expect("read");
        (d.clock().now(), d.stats().reads)
    };
    let (serial, reads_serial) = run(false);
    let (overlapped, reads_overlapped) = run(true);
    assert_eq!(reads_serial, reads_overlapped, "the read waited for the posted command");
    assert!(
        overlapped + 15_000_000 < serial,
        "the copy overlapped the read-ahead: {overlapped} ns against {serial} ns"
    );
}

#[test]
fn a_read_ahead_returns_at_once_and_a_read_outside_it_is_its_own_command() {
    let d = disk("hp97560");
    d.read_ahead(0, 64 << 10).expect("read ahead");
    assert_eq!(d.clock().now(), 0, "posted");
    let mut buf = vec![0u8; 4096];
    d.read_at(10 << 20, &mut buf).expect("read elsewhere");
    assert_eq!(d.take_trace().len(), 2, "the posted read and the new one");
}

#[test]
fn reads_inside_a_posted_read_wait_for_it_until_one_reaches_its_end() {
    // A reader in 8 KB units inside a 64 KB read-ahead: no command of its
    // own until it reads past the posted sectors.
    let d = disk("dsp3105");
    d.read_ahead(0, 64 << 10).expect("read ahead");
    let mut buf = vec![0u8; 8 << 10];
    for i in 0..8 {
        d.read_at(i * (8 << 10), &mut buf).expect("read inside");
    }
    d.read_at(64 << 10, &mut buf).expect("read past it");
    let trace = d.take_trace();
    assert_eq!(trace.len(), 2, "the posted read and one for the sectors past it: {trace:?}");
}
