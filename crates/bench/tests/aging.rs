//! Aging on fslab's FFS: the layout score read from a real image, with
//! placements made on purpose (one file alone; two files written a block
//! at a time in turn), and a small run of the seeded stream.

use disk::{BlockDevice, MemDisk};
use fslab::ffs::{Ffs, FilePlacement, MkfsOptions, MountOptions};
use fslab::format::inode::kind;
use fslab::format::{Ino, ROOT_INO};
use fslab::time::TimeSource;
use fslab::ufs::{Creds, FileSystem};
use fslab_bench::aging::score::{score, Tally, Variant};
use std::sync::Arc;

const CREDS: Creds = Creds { uid: 0, gid: 0 };
const BLOCK: usize = 8192;

fn new_ffs() -> FileSystem<Ffs> {
    let dev: Arc<dyn BlockDevice> = Arc::new(MemDisk::new(64 << 20));
    // Without realloc, which would move the files written in turn to runs
    // of their own: the placements below are FFS's first choices.
    let options = MkfsOptions {
        block_size: BLOCK as u32,
        fragment_size: 1024,
        realloc: false,
        ..MkfsOptions::default()
    };
    fslab::ffs::mkfs(dev.clone(), &options).expect("mkfs");
    let ffs = Ffs::mount(dev, MountOptions::deterministic(TimeSource::wall())).expect("mount");
    let mut fs = FileSystem::new(ffs);
    fs.create_root(0o755, CREDS).expect("root");
    fs
}

fn create(fs: &mut FileSystem<Ffs>, name: &str) -> Ino {
    fs.mknod(ROOT_INO, name.as_bytes(), kind::REG | 0o644, 0, CREDS).expect("create").ino
}

fn placement(all: &[FilePlacement], ino: Ino) -> &FilePlacement {
    all.iter().find(|f| f.ino == ino).expect("the file's placement")
}

/// The tally worked out by hand from the addresses: a data block (or the
/// tail) is optimal when it starts where the data block before it ends.
fn by_hand(file: &FilePlacement) -> Tally {
    let data: Vec<_> = file.blocks.iter().filter(|b| b.lbn >= 0).collect();
    let mut t = Tally { files: u64::from(data.len() >= 2), ..Tally::default() };
    for pair in data.windows(2) {
        t.counted += 1;
        if pair[1].addr == pair[0].addr + u64::from(pair[0].frags) {
            t.optimal += 1;
        }
    }
    t
}

/// One file written alone on an empty FFS lies in one run: six blocks and
/// a tail, 6 of 6 optimal. Two files written a block at a time in turn
/// interleave: neither has one block after the previous, so their blocks
/// score 0 of 2 × 5; the aggregate is blocks over blocks, 6 of 16.
#[test]
fn the_layout_score_of_placements_made_on_purpose() {
    let mut fs = new_ffs();
    let alone = create(&mut fs, "alone");
    fs.write(alone, 0, &vec![1u8; 6 * BLOCK + 3000]).expect("write");
    let (a, b) = (create(&mut fs, "a"), create(&mut fs, "b"));
    for i in 0..6u64 {
        for ino in [a, b] {
            fs.write(ino, i * BLOCK as u64, &vec![2u8; BLOCK]).expect("write");
        }
    }
    fs.sync().expect("sync");
    let all = fs.storage().file_placements().expect("placements");
    let fpb = 8;

    let one = placement(&all, alone);
    assert_eq!(one.blocks.len(), 7, "six blocks and a tail: {:?}", one.blocks);
    assert_eq!(one.blocks[6].frags, 3, "a 3000-byte tail holds three 1 KiB fragments");
    assert_eq!(by_hand(one), Tally { files: 1, optimal: 6, counted: 6 }, "{:?}", one.blocks);
    for ino in [a, b] {
        let f = placement(&all, ino);
        assert_eq!(by_hand(f), Tally { files: 1, optimal: 0, counted: 5 }, "{:?}", f.blocks);
    }

    let s = score(&all, fpb);
    assert_eq!(s.regular_files, 3);
    assert_eq!(s.primary(), Tally { files: 3, optimal: 6, counted: 16 });
    assert_eq!(s.of(Variant { indirect: false, tail: false }), Tally { files: 3, optimal: 5, counted: 15 });
    assert_eq!(s.primary().score(), Some(6.0 / 16.0));
}

/// Past twelve blocks a file has an indirect block; the variant that
/// counts it meets two more blocks (the seek to it and back) than data
/// blocks alone, whatever the allocator chose.
#[test]
fn an_indirect_block_is_placed_and_counted_only_in_its_variant() {
    let mut fs = new_ffs();
    let big = create(&mut fs, "big");
    fs.write(big, 0, &vec![3u8; 20 * BLOCK]).expect("write");
    fs.sync().expect("sync");
    let all = fs.storage().file_placements().expect("placements");
    let f = placement(&all, big);
    assert_eq!(f.blocks.iter().filter(|b| b.lbn < 0).count(), 1, "one indirect block: {:?}", f.blocks);
    assert_eq!(f.blocks.iter().position(|b| b.lbn < 0), Some(12), "met after the twelve direct blocks");
    let s = score(&all, 8);
    let (data, with_ind) = (s.primary(), s.of(Variant { indirect: true, tail: true }));
    assert_eq!((data.counted, with_ind.counted), (19, 20));
    assert_eq!(data, by_hand(f));
    let ind = f.blocks[12].addr;
    let contiguous_around = u64::from(ind == f.blocks[11].addr + 8) + u64::from(f.blocks[13].addr == ind + 8);
    let thirteenth = u64::from(f.blocks[13].addr == f.blocks[11].addr + 8);
    assert_eq!(with_ind.optimal, data.optimal - thirteenth + contiguous_around);
}

/// Device writes an async FFS makes while `trace` runs on it (virtual
/// time, no explicit sync), the mount's own left out.
fn writes_during(trace: &str) -> usize {
    use disk::{CountingDisk, VirtualClock};
    use fslab_bench::aging::run::{run, RunOptions};
    use fslab_bench::aging::trace::TraceReader;
    use fslab_bench::cpu::CpuModel;
    use fslab_bench::system::{FfsParams, Integrity, Rotdelay};
    use fslab_bench::target::library::{Library, MountEnv};
    use fslab_bench::target::Target;

    let counting = Arc::new(CountingDisk::new(MemDisk::new(32 << 20)));
    let dev: Arc<dyn BlockDevice> = counting.clone();
    fslab::mkfs_ffs(dev.clone(), &MkfsOptions::default(), CREDS).expect("mkfs");
    let clock = Arc::new(VirtualClock::new());
    let params = FfsParams {
        block_size: 8192,
        fragment_size: 1024,
        maxcontig: 8,
        rotdelay: Rotdelay::Blocks(0),
        integrity: Integrity::Async,
        dirhash: true,
        group_bytes: None,
        realloc: false,
        dirpref: fslab::ffs::DirPref::Old,
    };
    let env = MountEnv {
        clock: TimeSource::virtual_clock(clock.clone()),
        deterministic: true,
        cache_bytes: 64 << 20,
    };
    let library = Library::<Ffs>::open(dev, None, params, env).expect("mount");
    let mut target = Target::on_virtual_time(Box::new(library), clock.clone(), CpuModel::off());
    counting.clear_writes();
    let mut source = TraceReader::new(trace.as_bytes());
    let options = RunOptions {
        max_ops: None,
        clock: Some(clock.as_ref()),
        record: None,
        on_op: &mut |_, _| {},
        on_day: &mut |_| {},
    };
    run(&mut target, &mut source, options).expect("run");
    assert!(clock.now() >= 1_000_000_000 * 2, "the clock follows the operations' times");
    let writes = counting.writes().len();
    target.finish().expect("unmount");
    writes
}

/// The clock moves to each operation's simulated time, so an idle hour
/// between two operations lets the periodic sync (every 30 s of the
/// mount's clock) write what the first left in the cache; a second's gap
/// does not.
#[test]
fn an_idle_gap_in_the_stream_is_idle_time_for_the_mount() {
    let quiet = writes_during("fslab-age-trace 1\n0 create f 100000\n2 mkdir d\n");
    let idle = writes_during("fslab-age-trace 1\n0 create f 100000\n3600 mkdir d\n");
    assert!(idle > quiet, "writes with an idle hour {idle}, without {quiet}");
}
