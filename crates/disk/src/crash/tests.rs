//! Tests of the crash disk: recording, crash images for every kind of
//! choice, and the enumeration of crash states.

use super::*;
use crate::splitmix::SplitMix64;
use crate::SECTOR_SIZE;

const SIZE: u64 = 64 * 1024;

fn read(disk: &MemDisk, offset: u64, len: usize) -> Vec<u8> {
    let mut buf = vec![0; len];
    disk.read_at(offset, &mut buf).expect("read from a crash image");
    buf
}

fn sector(fill: u8) -> Vec<u8> {
    vec![fill; SECTOR_SIZE as usize]
}

#[test]
fn flushed_writes_are_present_in_every_crash_image() {
    let crash = CrashDisk::over(MemDisk::new(SIZE));
    crash.write_at(0, &sector(1)).expect("write A");
    crash.write_at(4096, &sector(2)).expect("write B");
    crash.flush().expect("flush");
    crash.write_at(0, &sector(3)).expect("overwrite A, unflushed");
    crash.write_at(8192, &[4; 2048]).expect("write C, unflushed");
    let barrier = crash.barrier_positions()[0];
    let mut seen = 0;
    for state in crash.crash_states(1000, 7) {
        if state.cut <= barrier {
            continue;
        }
        seen += 1;
        assert_eq!(read(&state.disk, 4096, 512), sector(2), "{}", state.description);
        let a = read(&state.disk, 0, 512);
        assert!(a == sector(1) || a == sector(3), "{}: A is {:?}", state.description, &a[..4]);
    }
    assert!(seen >= 4, "only {seen} states after the barrier");
    for cut in barrier + 1..=crash.events() {
        let image = crash.crash_image(cut, &CrashChoice::NonePersisted).expect("image");
        assert_eq!(read(&image, 0, 512), sector(1), "cut {cut}");
        assert_eq!(read(&image, 4096, 512), sector(2), "cut {cut}");
    }
}

#[test]
fn unflushed_writes_can_be_absent() {
    let crash = CrashDisk::over(MemDisk::new(SIZE));
    crash.write_at(1024, &sector(9)).expect("write");
    let image = crash.crash_image(1, &CrashChoice::NonePersisted).expect("image");
    assert_eq!(read(&image, 1024, 512), sector(0));
    let image = crash.crash_image(1, &CrashChoice::AllPersisted).expect("image");
    assert_eq!(read(&image, 1024, 512), sector(9));
    let states: Vec<CrashState> = crash.crash_states(100, 1).collect();
    assert!(states.iter().any(|s| read(&s.disk, 1024, 512) == sector(0)), "never absent");
    assert!(states.iter().any(|s| read(&s.disk, 1024, 512) == sector(9)), "never present");
}

#[test]
fn reordering_can_keep_a_later_write_without_an_earlier_one() {
    let crash = CrashDisk::over(MemDisk::new(SIZE));
    crash.write_at(0, &sector(1)).expect("earlier write");
    crash.write_at(4096, &sector(2)).expect("later write");
    let image = crash.crash_image(2, &CrashChoice::Reordered(vec![1])).expect("image");
    assert_eq!(read(&image, 0, 512), sector(0));
    assert_eq!(read(&image, 4096, 512), sector(2));
    let found = crash
        .crash_states(100, 3)
        .any(|s| read(&s.disk, 0, 512) == sector(0) && read(&s.disk, 4096, 512) == sector(2));
    assert!(found, "the enumerator never kept the later write alone");
}

#[test]
fn reordering_lets_an_earlier_overlapping_write_land_last() {
    let crash = CrashDisk::over(MemDisk::new(SIZE));
    crash.write_at(0, &sector(1)).expect("old");
    crash.write_at(0, &sector(2)).expect("new");
    let image = crash.crash_image(2, &CrashChoice::Reordered(vec![1, 0])).expect("image");
    assert_eq!(read(&image, 0, 512), sector(1));
    let found = crash.crash_states(100, 3).any(|s| read(&s.disk, 0, 512) == sector(1) && s.cut == 2);
    assert!(found, "the enumerator never let the old write land last");
}

#[test]
fn torn_writes_change_only_whole_sectors() {
    let crash = CrashDisk::over(MemDisk::new(SIZE));
    crash.write_at(1024, &[7; 4 * 512]).expect("aligned 4-sector write");
    // Unaligned: touches sectors 16..=19, partly the first and last.
    crash.write_at(16 * 512 + 100, &[8; 3 * 512]).expect("unaligned write");
    let writes = crash.unflushed_writes(2).expect("unflushed");
    assert_eq!(writes.iter().map(|w| w.sectors).collect::<Vec<_>>(), vec![4, 4]);

    let torn = CrashChoice::Torn { write: 0, sectors: vec![true, false, false, true] };
    let image = crash.crash_image(2, &torn).expect("image");
    let got = read(&image, 1024, 4 * 512);
    assert_eq!(&got[..512], &sector(7)[..]);
    assert_eq!(&got[512..1536], &[0; 1024][..]);
    assert_eq!(&got[1536..], &sector(7)[..]);

    let mut torn_states = 0;
    for state in crash.crash_states(1000, 5) {
        for s in 0..SIZE / SECTOR_SIZE {
            let bytes = read(&state.disk, s * SECTOR_SIZE, SECTOR_SIZE as usize);
            let old = sector(0);
            let mut new = old.clone();
            if (2..6).contains(&s) {
                new = sector(7);
            } else if (16..20).contains(&s) {
                let start = 16 * 512 + 100;
                for (i, b) in new.iter_mut().enumerate() {
                    let at = s * 512 + i as u64;
                    if at >= start && at < start + 3 * 512 {
                        *b = 8;
                    }
                }
            }
            assert!(bytes == old || bytes == new, "{}: sector {s} is mixed", state.description);
        }
        if matches!(state.choice, CrashChoice::Torn { .. }) {
            torn_states += 1;
        }
    }
    assert!(torn_states >= 6, "only {torn_states} torn states");
}

#[test]
fn enumerator_is_deterministic_for_a_seed_and_bounded() {
    let crash = CrashDisk::over(MemDisk::new(SIZE));
    let mut rng = SplitMix64::new(42);
    for i in 0..60u64 {
        let offset = rng.below(SIZE / 512 - 8) * 512;
        let len = (1 + rng.below(8) as usize) * 512;
        crash.write_at(offset, &vec![i as u8; len]).expect("write");
        if i % 13 == 12 {
            crash.flush().expect("flush");
        }
    }
    let run = |max, seed| -> Vec<(String, Vec<u8>)> {
        crash.crash_states(max, seed).map(|s| (s.description, s.disk.snapshot())).collect()
    };
    let first = run(80, 9);
    assert_eq!(first.len(), 80);
    assert!(first == run(80, 9), "same seed, different states");
    let other = run(80, 10);
    assert!(first.iter().map(|s| &s.0).ne(other.iter().map(|s| &s.0)), "seed ignored");
    assert_eq!(run(5, 9).len(), 5);
    assert_eq!(run(0, 9).len(), 0);
    // Every state can be rebuilt from its cut and choice.
    for state in crash.crash_states(40, 11) {
        let again = crash.crash_image(state.cut, &state.choice).expect("rebuild");
        assert!(again.snapshot() == state.disk.snapshot(), "{}", state.description);
    }
}

#[test]
fn enumerator_is_exhaustive_for_few_unflushed_writes() {
    let crash = CrashDisk::over(MemDisk::new(SIZE));
    for i in 0..4u8 {
        crash.write_at(u64::from(i) * 512, &sector(i + 1)).expect("write");
    }
    let mut images: Vec<Vec<u8>> = crash.crash_states(10_000, 0).map(|s| read(&s.disk, 0, 4 * 512)).collect();
    assert_eq!(images.len(), 16, "every subset of 4 single-sector writes, each once");
    images.sort();
    images.dedup();
    assert_eq!(images.len(), 16, "duplicate images");
}

#[test]
fn vectored_writes_are_recorded_as_one_write() {
    let crash = CrashDisk::over(MemDisk::new(SIZE));
    let parts: [&[u8]; 3] = [&[1; 512], &[2; 512], &[3; 1024]];
    crash.write_vectored_at(512, &parts).expect("vectored write");
    assert_eq!(crash.write_count(), 1);
    assert_eq!(crash.events(), 1);
    let writes = crash.unflushed_writes(1).expect("unflushed");
    assert_eq!(writes, vec![RecordedWrite { seq: 0, offset: 512, len: 2048, sectors: 4 }]);
    let image = crash.crash_image(1, &CrashChoice::AllPersisted).expect("image");
    assert_eq!(read(&image, 512, 2048), parts.concat());
    let mut buf = vec![0; 2048];
    crash.read_at(512, &mut buf).expect("read through");
    assert_eq!(buf, parts.concat());
}

#[test]
fn clones_handed_out_share_the_log() {
    let crash = CrashDisk::over(MemDisk::new(SIZE));
    let device: Arc<dyn BlockDevice> = Arc::new(crash.clone());
    device.write_at(0, b"hello").expect("write");
    device.flush().expect("flush");
    assert!(device.write_at(SIZE - 2, b"abc").is_err(), "write past the end accepted");
    assert_eq!(crash.events(), 2);
    assert_eq!(crash.barrier_positions(), vec![1]);
    let image = crash.crash_image(2, &CrashChoice::NonePersisted).expect("image");
    assert_eq!(read(&image, 0, 5), b"hello");
}

#[test]
fn new_starts_from_the_inner_contents() {
    let inner = Arc::new(MemDisk::new(SIZE));
    inner.write_at(100, b"before").expect("write before recording");
    let crash = CrashDisk::new(inner.clone()).expect("crash disk");
    crash.write_at(200, b"after").expect("write");
    let image = crash.crash_image(0, &CrashChoice::AllPersisted).expect("image");
    assert_eq!(read(&image, 100, 6), b"before");
    assert_eq!(read(&image, 200, 5), [0; 5]);
    let last = crash.crash_image(crash.events(), &CrashChoice::AllPersisted).expect("image");
    assert!(last.snapshot() == inner.snapshot(), "the full replay differs from the device");
}

#[test]
fn checkpoint_base_keeps_later_images_and_forgets_earlier_cuts() {
    let crash = CrashDisk::over(MemDisk::new(SIZE));
    crash.write_at(0, &sector(1)).expect("write");
    crash.flush().expect("flush");
    crash.write_at(512, &sector(2)).expect("write");
    crash.flush().expect("flush");
    crash.write_at(1024, &sector(3)).expect("write");
    let choice = CrashChoice::NonePersisted;
    let before = crash.crash_image(5, &choice).expect("image").snapshot();
    crash.checkpoint_base();
    assert_eq!(crash.base_position(), 4);
    assert_eq!(crash.events(), 5);
    assert_eq!(crash.write_count(), 3);
    assert!(crash.crash_image(5, &choice).expect("image").snapshot() == before);
    assert!(crash.crash_image(3, &choice).is_err(), "a folded cut was accepted");
    let states: Vec<CrashState> = crash.crash_states(100, 0).collect();
    assert_eq!(states[0].cut, 4);
    assert!(states.iter().all(|s| read(&s.disk, 512, 512) == sector(2)));
}

#[test]
fn choices_that_do_not_fit_are_refused() {
    let crash = CrashDisk::over(MemDisk::new(SIZE));
    crash.write_at(0, &sector(1)).expect("write");
    crash.write_at(512, &sector(2)).expect("write");
    let refused = |choice: CrashChoice| crash.crash_image(2, &choice).is_err();
    assert!(refused(CrashChoice::Subset(vec![true])));
    assert!(refused(CrashChoice::Reordered(vec![1, 1])));
    assert!(refused(CrashChoice::Reordered(vec![2])));
    assert!(refused(CrashChoice::Torn { write: 1, sectors: vec![true, false] }));
    assert!(refused(CrashChoice::Plan(vec![Persist { write: 0, sectors: Some(vec![]) }])));
    assert!(crash.crash_image(3, &CrashChoice::AllPersisted).is_err(), "cut past the end");
}
