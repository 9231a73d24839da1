//! The control socket end to end: every request round-trips, a remote
//! cleaner cleans, an FFS mount serves its reports and refuses the
//! cleaner's requests with one clear error, garbage gets errors and never a
//! panic, a lying server is refused, the server binds where clients look
//! and cleans up after itself.

use super::path::fnv1a64;
use super::server::{serve_connection, serve_connection_idle};
use super::wire::*;
use super::{find_socket, socket_file_name, Client, LogAccess, ServedStorage, Server, SharedFs};
use super::{LayoutReport, FFS_HAS_NO_CLEANER};
use disk::MemDisk;
use fslab::ffs::{Ffs, Integrity};
use fslab::lfs::clean::{BlockRef, Destination, MarkBlock};
use fslab::lfs::{Lfs, MkfsOptions, MountOptions};
use fslab::storage::StorageManager;
use fslab::ufs::FileSystem;
use fslab::Result;
use fslab_cleaner::mechanism::{LfsAccess, Mechanism};
use fslab_cleaner::workload::{Access, Files, Spec};
use fslab_cleaner::{policy, Cleaner};
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// The mount's lock, as the FUSE adapter holds it.
struct Shared<S: StorageManager>(Arc<Mutex<FileSystem<S>>>);

impl<S: StorageManager> Clone for Shared<S> {
    fn clone(&self) -> Self {
        Shared(Arc::clone(&self.0))
    }
}

impl<S: ServedStorage> SharedFs for Shared<S> {
    type Storage = S;

    fn with_fs<R>(&self, op: impl FnOnce(&mut FileSystem<S>) -> Result<R>) -> Result<R> {
        op(&mut self.0.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

impl Shared<Lfs> {
    /// Runs `op` on the log, as the server's own access does.
    fn with_lfs<R>(&self, op: impl FnOnce(&mut Lfs) -> Result<R>) -> Result<R> {
        LogAccess(self.clone()).with_lfs(op)
    }
}

/// A 16 MiB file system, half full, with a third of it overwritten:
/// segments with dead blocks for a cleaner to find.
fn dirty_fs() -> (Shared<Lfs>, Files) {
    let disk = Arc::new(MemDisk::new(16 << 20));
    let mkfs = MkfsOptions { block_size: 4096, segment_size: 128 << 10 };
    fslab::mkfs_lfs(disk.clone(), &mkfs, Default::default()).expect("mkfs");
    let options = MountOptions { cache_bytes: 1 << 20, ..MountOptions::default() };
    let mut fs = FileSystem::new(Lfs::mount(disk, options).expect("mount"));
    let spec =
        Spec { utilization: 0.5, file_blocks: 4, write_multiple: 0.3, access: Access::Uniform, seed: 3 };
    let mut files = Files::fill(&mut fs, &spec).expect("fill");
    files.overwrite(&mut fs, &spec).expect("overwrite");
    (Shared(Arc::new(Mutex::new(fs))), files)
}

/// A client and a server thread over a socket pair.
fn pair<S: ServedStorage>(access: &Shared<S>) -> Client {
    let (ours, theirs) = UnixStream::pair().expect("socket pair");
    let access = access.clone();
    std::thread::spawn(move || serve_connection(theirs, access, "greedy"));
    Client::over(ours).expect("hello")
}

#[test]
fn every_request_round_trips_and_a_remote_cleaner_cleans() {
    let (shared, files) = dirty_fs();
    let mut client = pair(&shared);

    let mut remote = client.segment_table().expect("segment_table");
    let mut local = shared.with_lfs(|lfs| Ok(lfs.segment_table())).expect("local table");
    // The clock moved between the two calls; nothing else did.
    remote.now = local.now;
    local.budget_blocks = remote.budget_blocks.max(local.budget_blocks);
    remote.budget_blocks = local.budget_blocks;
    assert_eq!(remote, local);

    let seg =
        (0..local.segments.len()).find(|&s| local.segments[s].cleanable).expect("a dirty segment") as u64;
    let bytes = client.read_segment(seg).expect("read_segment");
    assert_eq!(bytes.len() as u64, local.blocks_per_segment * u64::from(local.block_size));
    let refs = fslab::lfs::clean::parse_segment(&local, seg, &bytes);
    assert!(!refs.is_empty());
    let remote_now = client.bmapv(&refs).expect("bmapv");
    let local_now = shared.with_lfs(|lfs| lfs.bmapv(&refs)).expect("local bmapv");
    assert_eq!(remote_now, local_now);
    // More blocks than one request carries: split, answered in order.
    let many: Vec<BlockRef> = refs.iter().copied().cycle().take(MAX_BLOCKS + 3).collect();
    let split = client.bmapv(&many).expect("bmapv in two requests");
    assert_eq!(split, local_now.iter().copied().cycle().take(MAX_BLOCKS + 3).collect::<Vec<_>>());
    let live: Vec<BlockRef> = refs
        .iter()
        .zip(&remote_now)
        .filter(|(r, &at)| at == r.daddr && at.is_some())
        .map(|(r, _)| *r)
        .collect();
    let cost = client.markv_cost(&live).expect("markv_cost");
    assert_eq!(cost, shared.with_lfs(|lfs| lfs.markv_cost(&live)).expect("local cost"));

    // Contents sent by a client are never used: garbage here changes nothing.
    let blocks: Vec<MarkBlock> =
        live.iter().map(|&block| MarkBlock { block, data: Some(vec![0xAB; 4096]) }).collect();
    let moved = client.markv(&blocks, Destination::Cold).expect("markv");
    assert_eq!(moved.moved + moved.skipped, live.len() as u64);
    client.segclean(seg).expect("segclean");
    let err = client.segclean(u64::MAX).expect_err("no such segment");
    assert_eq!(err.errno(), libc::EINVAL);
    assert_eq!(err.to_string(), fslab::error::errno(libc::EINVAL, "no such segment").to_string());
    // An error leaves the connection usable.
    client.segwait(Duration::from_millis(10)).expect("segwait");

    let report = client.report().expect("report");
    assert_eq!(report.policy, "greedy");
    assert!(report.cleaner.total.segments_cleaned >= 1);
    assert_eq!(report.cleaner.cleaned_utilization.last().map(|c| c.0), Some(seg));
    assert_eq!(report.segments, local.segments.len() as u64);
    assert_eq!(report.high_water, local.high_water);
    assert_eq!(report.ages_predict_survival, local.ages_predict_survival);
    let (cold_head, cold_partials) =
        shared.with_lfs(|lfs| Ok((lfs.has_cold_head(), lfs.stats().cold_partial_segments))).expect("local");
    assert_eq!((report.cold_head, report.cold_partial_segments), (cold_head, cold_partials));
    let local_report = shared.with_lfs(|lfs| Ok(lfs.cleaner_report())).expect("local report");
    assert_eq!(report.cleaner, local_report);

    // The driver, unchanged, over the socket.
    let mut cleaner = Cleaner::new(policy::by_name("cost-benefit").expect("policy"));
    let pass = cleaner.pass(&mut client).expect("pass");
    assert!(!pass.cleaned.is_empty(), "{pass:?}");
    let mut guard = shared.0.lock().expect("lock");
    files.verify(&mut guard).expect("every byte after remote cleaning");
}

#[test]
fn the_dirhash_and_mount_reports_round_trip() {
    let (shared, _files) = dirty_fs();
    {
        let mut fs = shared.0.lock().unwrap_or_else(PoisonError::into_inner);
        let mut options = fs.dirhash_options();
        options.max_memory = 3 << 20;
        options.check = true;
        fs.set_dirhash_options(options);
        let d = fs.mkdir(fslab::format::ROOT_INO, b"d", 0o755, Default::default()).expect("mkdir").ino;
        fs.lookup(d, b"absent").expect_err("absent");
    }
    let local = shared.dirhash_report().expect("local");
    assert!(local.stats.builds > 0 && local.stats.memory > 0, "{local:?}");
    let mut client = pair(&shared);
    assert_eq!(client.dirhash_report().expect("dirhash"), local);

    let local = shared.mount_report().expect("local");
    assert_eq!(local.layout.layout(), fslab::Layout::Lfs);
    let LayoutReport::Lfs(stats) = local.layout else { unreachable!() };
    assert!(stats.partial_segments > 0 && local.space.free_blocks < local.space.total_blocks, "{local:?}");
    assert_eq!(client.mount_report().expect("mount report"), local);

    let memory = client.memory_report().expect("memory report");
    assert_eq!(memory.parts, shared.memory_report().expect("local").parts);
    for what in ["buffer cache: blocks", "inode cache", "inode map", "segment usage table"] {
        let part = memory.parts.iter().find(|p| p.what == what);
        assert!(part.is_some_and(|p| p.entries > 0 && p.bytes > 0), "{what}: {part:?}");
    }
}

/// A small FFS, mounted as the FUSE adapter holds it, with a directory
/// large enough for a hash.
fn ffs_with_a_large_directory() -> Shared<Ffs> {
    let disk = Arc::new(MemDisk::new(16 << 20));
    let mkfs = fslab::ffs::MkfsOptions { group_size: 4 << 20, ..Default::default() };
    fslab::mkfs_ffs(disk.clone(), &mkfs, Default::default()).expect("mkfs");
    let options = fslab::ffs::MountOptions { integrity: Integrity::Async, ..Default::default() };
    let mut fs = FileSystem::new(Ffs::mount(disk, options).expect("mount"));
    let d = fs.mkdir(fslab::format::ROOT_INO, b"d", 0o755, Default::default()).expect("mkdir").ino;
    for i in 0..300 {
        let name = format!("file-with-a-long-name-{i:04}");
        fs.mknod(d, name.as_bytes(), libc::S_IFREG | 0o644, 0, Default::default()).expect("create");
    }
    fs.lookup(d, b"absent").expect_err("absent");
    StorageManager::sync(fs.storage()).expect("sync");
    Shared(Arc::new(Mutex::new(fs)))
}

#[test]
fn an_ffs_mount_serves_its_reports_and_answers_each_cleaners_request_with_one_clear_error() {
    let shared = ffs_with_a_large_directory();
    let mut client = pair(&shared);

    let local = shared.mount_report().expect("local");
    let LayoutReport::Ffs { integrity, cylinder_groups, stats, ref leaks, journal } = local.layout else {
        panic!("an FFS mount reports FFS: {local:?}")
    };
    assert_eq!(integrity, Integrity::Async);
    assert_eq!(cylinder_groups, 4);
    assert_eq!(leaks.state, fslab::ffs::LeakScanState::NotNeeded, "a fresh image has nothing to scan");
    assert_eq!(journal, None, "no journal on an async mount");
    assert!(stats.writes > 0 && stats.syncs == 1, "{local:?}");
    assert!(local.space.total_inodes - local.space.free_inodes > 300, "{local:?}");
    assert_eq!(client.mount_report().expect("mount report"), local);
    let dirhash = client.dirhash_report().expect("dirhash");
    assert!(dirhash.stats.builds > 0 && dirhash.stats.memory > 0, "{dirhash:?}");
    assert_eq!(dirhash, shared.dirhash_report().expect("local"));
    let memory = client.memory_report().expect("memory");
    assert_eq!(memory.parts, shared.memory_report().expect("local").parts);
    let part = |what: &str| memory.parts.iter().find(|p| p.what == what).cloned();
    let inodes = part("inode cache").expect("the inode cache is reported");
    assert!(inodes.entries > 300 && inodes.bytes > inodes.entries * 200, "{inodes:?}");
    let groups = part("cylinder groups").expect("the groups are reported");
    assert_eq!(groups.entries, 4);
    let hashes = part("directory hashes").expect("the hashes are reported");
    assert_eq!(hashes.bytes, dirhash.stats.memory);
    assert!(memory.resident.is_some_and(|r| r > inodes.bytes), "{:?}", memory.resident);

    // Every cleaner's request: the same error, and the connection serves on.
    let ffs_has_no_cleaner = fslab::error::errno(libc::EOPNOTSUPP, FFS_HAS_NO_CLEANER).to_string();
    let none = BlockRef {
        ino: 2,
        version: 1,
        kind: fslab::lfs::clean::BlockKind::Block(0),
        daddr: fslab::format::Daddr::new(1),
        age: 0,
    };
    let answers: Vec<(&str, fslab::Error)> = vec![
        ("segment_table", client.segment_table().expect_err("no log")),
        ("read_segment", client.read_segment(0).expect_err("no log")),
        ("segment_refs", client.segment_refs(0).expect_err("no log")),
        ("bmapv", client.bmapv(&[none]).expect_err("no log")),
        ("markv_cost", client.markv_cost(&[none]).expect_err("no log")),
        ("markv", client.markv(&[MarkBlock { block: none, data: None }], Destination::Cold).expect_err("")),
        ("segclean", client.segclean(0).expect_err("no log")),
        ("segwait", client.segwait(Duration::from_millis(10)).expect_err("no log")),
        ("report", client.report().expect_err("no log")),
    ];
    for (request, err) in answers {
        assert_eq!(err.errno(), libc::EOPNOTSUPP, "{request}: {err}");
        assert_eq!(err.to_string(), ffs_has_no_cleaner, "{request}");
    }
    let mut cleaner = Cleaner::new(policy::by_name("greedy").expect("policy"));
    let err = cleaner.pass(&mut client).expect_err("a pass on FFS");
    assert_eq!(err.to_string(), ffs_has_no_cleaner);
    assert_eq!(client.mount_report().expect("still served"), local);
}

#[test]
fn segwait_returns_when_a_segment_is_written_and_holds_no_lock() {
    let (shared, _files) = dirty_fs();
    let mut client = pair(&shared);
    let writer = shared.clone();
    let waiter = std::thread::spawn(move || {
        let start = std::time::Instant::now();
        client.segwait(Duration::from_secs(60)).expect("segwait");
        start.elapsed()
    });
    // Taking the lock proves segwait sleeps without it; each checkpoint
    // writes a partial segment, which wakes it. The request must reach the
    // server before the segment it waits for is written, and on a loaded
    // machine no fixed sleep makes sure of that: checkpoints go on, each
    // with a change to write, until the waiter returns.
    let deadline = std::time::Instant::now() + MAX_SEGWAIT;
    for n in 0.. {
        std::thread::sleep(Duration::from_millis(200));
        if waiter.is_finished() || std::time::Instant::now() > deadline {
            break;
        }
        let mut fs = writer.0.lock().unwrap_or_else(PoisonError::into_inner);
        let name = format!("wake{n}");
        fs.mkdir(fslab::format::ROOT_INO, name.as_bytes(), 0o755, Default::default()).expect("mkdir");
        StorageManager::sync(fs.storage()).expect("sync");
    }
    let waited = waiter.join().expect("waiter");
    assert!(waited < MAX_SEGWAIT, "{waited:?}");
}

/// Sends raw bytes, returns the first response frame (None: closed).
fn raw(stream: &mut UnixStream, bytes: &[u8]) -> Option<Vec<u8>> {
    stream.write_all(bytes).ok()?;
    read_frame(stream, MAX_RESPONSE).ok().flatten()
}

fn frame(body: &[u8]) -> Vec<u8> {
    let mut v = (body.len() as u32).to_le_bytes().to_vec();
    v.extend_from_slice(body);
    v
}

fn errno_of(response: &[u8]) -> i32 {
    assert_eq!(response[0], STATUS_ERROR, "{response:?}");
    i32::from_le_bytes(response[1..5].try_into().expect("4 bytes"))
}

#[test]
fn garbage_gets_errors_and_never_a_panic() {
    let (shared, _files) = dirty_fs();
    let connect = || {
        let (ours, theirs) = UnixStream::pair().expect("pair");
        let access = shared.clone();
        let server = std::thread::spawn(move || serve_connection(theirs, access, "off"));
        ours.set_read_timeout(Some(Duration::from_secs(20))).expect("timeout");
        (ours, server)
    };

    // Before hello, nothing is served.
    let (mut s, server) = connect();
    assert_eq!(errno_of(&raw(&mut s, &frame(&[OP_SEGMENT_TABLE])).expect("answer")), libc::EPROTO);
    assert_eq!(errno_of(&raw(&mut s, &frame(b"\0FSLX\x01\0\0\0")).expect("answer")), libc::EPROTO);
    let mut hello = vec![OP_HELLO];
    hello.extend_from_slice(MAGIC);
    hello.extend_from_slice(&VERSION.to_le_bytes());
    assert_eq!(raw(&mut s, &frame(&hello)).expect("answer")[0], STATUS_OK);

    // Malformed requests: each an error, the connection still usable.
    let mut huge_count = vec![OP_BMAPV];
    huge_count.extend_from_slice(&u32::MAX.to_le_bytes());
    let mut lying_count = vec![OP_MARKV];
    lying_count.extend_from_slice(&1000u32.to_le_bytes());
    lying_count.extend_from_slice(&[0; REF_BYTES]);
    let mut bad_kind = vec![OP_MARKV_COST];
    bad_kind.extend_from_slice(&1u32.to_le_bytes());
    bad_kind.extend_from_slice(&[7; REF_BYTES]);
    for body in [
        vec![],
        vec![99],
        vec![OP_READ_SEGMENT, 1],
        huge_count,
        lying_count,
        bad_kind,
        vec![OP_REPORT, 0],
        vec![OP_MOUNT, 0],
        vec![OP_DIRHASH, 0],
    ] {
        let answer = raw(&mut s, &frame(&body)).expect("answer");
        assert!([libc::EPROTO, libc::EOPNOTSUPP].contains(&errno_of(&answer)), "{body:?}");
    }
    let mut read = vec![OP_READ_SEGMENT];
    read.extend_from_slice(&u64::MAX.to_le_bytes());
    assert_eq!(errno_of(&raw(&mut s, &frame(&read)).expect("answer")), libc::EINVAL);

    // Random references reach the file system: answers, not panics.
    let mut rng = 0x2545_F491_4F6C_DD1Du64;
    let mut next = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    for op in [OP_BMAPV, OP_MARKV_COST, OP_MARKV, OP_SEGCLEAN, OP_READ_SEGMENT] {
        for _ in 0..50 {
            let mut body = vec![op];
            if op == OP_SEGCLEAN || op == OP_READ_SEGMENT {
                body.extend_from_slice(&(next() % 300).to_le_bytes());
            } else {
                body.extend_from_slice(&8u32.to_le_bytes());
                for _ in 0..8 {
                    body.extend_from_slice(&(next() % 40).to_le_bytes());
                    body.extend_from_slice(&(next() as u32).to_le_bytes());
                    let inode = next() % 4 == 0;
                    body.push(u8::from(inode));
                    let lbn = if inode { 0 } else { next() as i64 >> (next() % 64) };
                    body.extend_from_slice(&lbn.to_le_bytes());
                    body.extend_from_slice(&(next() % 5000).to_le_bytes());
                    body.extend_from_slice(&(next() as i64).to_le_bytes());
                }
            }
            let answer = raw(&mut s, &frame(&body)).expect("an answer, not a dead server");
            assert!(answer[0] == STATUS_OK || answer[0] == STATUS_ERROR);
        }
    }

    // Random bytes in valid frames.
    for len in [1usize, 7, 64, 1000] {
        let body: Vec<u8> = (0..len).map(|_| next() as u8).collect();
        let answer = raw(&mut s, &frame(&body)).expect("answer");
        assert!(answer[0] == STATUS_OK || answer[0] == STATUS_ERROR);
    }

    // A length beyond the cap: an error, then the connection closes.
    let answer = raw(&mut s, &u32::MAX.to_le_bytes()).expect("answer");
    assert_eq!(errno_of(&answer), libc::EMSGSIZE);
    assert!(raw(&mut s, &frame(&[OP_REPORT])).is_none(), "closed after a bad frame");
    server.join().expect("the server thread did not panic");

    // A frame cut short, and pure noise: the thread ends quietly.
    let (mut s, server) = connect();
    s.write_all(&1000u32.to_le_bytes()).expect("write");
    s.write_all(&[1, 2, 3]).expect("write");
    drop(s);
    server.join().expect("no panic on a short frame");
    let (mut s, server) = connect();
    let noise: Vec<u8> = (0..4096).map(|_| next() as u8).collect();
    let _ = s.write_all(&noise);
    drop(s);
    server.join().expect("no panic on noise");

    // The file system is still fine.
    let mut client = pair(&shared);
    client.report().expect("report after garbage");
}

#[test]
fn client_rejects_a_lying_server() {
    for body in [vec![STATUS_OK, 1, 2], vec![STATUS_ERROR, 1], vec![5], vec![]] {
        let (ours, mut theirs) = UnixStream::pair().expect("pair");
        let server = std::thread::spawn(move || {
            let _ = read_frame(&mut theirs, MAX_REQUEST);
            let _ = theirs.write_all(&frame(&body));
        });
        assert!(Client::over(ours).is_err());
        server.join().expect("server");
    }
    // A huge length is refused before anything is allocated.
    let (ours, mut theirs) = UnixStream::pair().expect("pair");
    let server = std::thread::spawn(move || {
        let _ = read_frame(&mut theirs, MAX_REQUEST);
        let _ = theirs.write_all(&u32::MAX.to_le_bytes());
    });
    let err = Client::over(ours).err().expect("refused");
    assert_eq!(err.errno(), libc::EPROTO);
    server.join().expect("server");
}

#[test]
fn server_binds_at_the_derived_path_serves_many_clients_and_removes_its_socket() {
    let (shared, _files) = dirty_fs();
    let tmp = std::env::temp_dir().join(format!("fslab-control-test-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).expect("mkdir");
    let mountpoint = tmp.canonicalize().expect("canonical");
    let server = Server::start(shared.clone(), &mountpoint, "hot-cold").expect("start");
    let path = server.path().to_path_buf();
    assert_eq!(find_socket(&mountpoint).expect("find"), Some(path.clone()));
    let dir_mode = std::fs::metadata(path.parent().expect("dir")).expect("stat").mode();
    assert_eq!(dir_mode & 0o777, 0o700);

    let clients: Vec<_> = (0..4)
        .map(|_| {
            let path = path.clone();
            std::thread::spawn(move || {
                let mut c = Client::connect_to(&path).expect("connect");
                for _ in 0..5 {
                    assert_eq!(c.report().expect("report").policy, "hot-cold");
                    c.segment_table().expect("table");
                }
            })
        })
        .collect();
    for c in clients {
        c.join().expect("client");
    }
    // A second server for the same mount point is refused.
    assert!(Server::bind(shared.clone(), &path, "x").is_err());

    let mut idle = Client::connect(&mountpoint).expect("connect by mount point");
    drop(server);
    assert!(!path.exists(), "socket removed");
    assert!(idle.report().is_err(), "connections closed with the server");
    let err = Client::connect(&mountpoint).err().expect("no server");
    // EACCES when run by a user who may not look into root's /run/fslab.
    assert!([libc::ENOENT, libc::EACCES].contains(&err.errno()), "{err}");
    let _ = std::fs::remove_dir(&tmp);
}

#[test]
fn socket_names_are_stable() {
    // FNV-1a test vectors.
    assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
    assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
    assert_eq!(socket_file_name(Path::new("/mnt")).len(), 16 + 5);
    assert_ne!(socket_file_name(Path::new("/mnt/a")), socket_file_name(Path::new("/mnt/b")));
}

/// A client that connects and sends nothing is closed after the idle
/// time, so that idle connections cannot hold every one the server takes;
/// one that keeps asking is served throughout.
#[test]
fn an_idle_connection_is_closed_and_a_busy_one_kept() {
    use std::io::Read;
    let (shared, _files) = dirty_fs();
    let idle = Duration::from_millis(300);
    let (mut ours, theirs) = UnixStream::pair().expect("pair");
    let access = shared.clone();
    let server = std::thread::spawn(move || serve_connection_idle(theirs, access, "off", idle));
    ours.set_read_timeout(Some(Duration::from_secs(20))).expect("timeout");
    let mut byte = [0u8; 1];
    assert_eq!(ours.read(&mut byte).expect("the server closes, not the timeout"), 0);
    server.join().expect("the connection's thread ended");

    let (ours, theirs) = UnixStream::pair().expect("pair");
    let access = shared.clone();
    std::thread::spawn(move || serve_connection_idle(theirs, access, "off", idle));
    let mut client = Client::over(ours).expect("hello");
    for _ in 0..4 {
        std::thread::sleep(idle / 2);
        client.mount_report().expect("served while it keeps asking");
    }
}
