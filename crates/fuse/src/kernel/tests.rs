use super::reply::*;
use super::request::*;
use super::*;
use std::time::Duration;

fn message(opcode: u32, op_in: &[u8], payload: &[u8]) -> Vec<u8> {
    let mut m = vec![0; IN_HEADER_SIZE];
    let len = (IN_HEADER_SIZE + op_in.len() + payload.len()) as u32;
    m[0..4].copy_from_slice(&len.to_ne_bytes());
    m[4..8].copy_from_slice(&opcode.to_ne_bytes());
    m[8..16].copy_from_slice(&77u64.to_ne_bytes()); // unique
    m[16..24].copy_from_slice(&5u64.to_ne_bytes()); // nodeid
    m[24..28].copy_from_slice(&1000u32.to_ne_bytes());
    m[28..32].copy_from_slice(&100u32.to_ne_bytes());
    m[32..36].copy_from_slice(&4242u32.to_ne_bytes());
    m.extend_from_slice(op_in);
    m.extend_from_slice(payload);
    m
}

/// A fixed argument of `size` bytes whose every u64 slot holds its own
/// offset plus one, so that a decoder reading the wrong field is caught.
fn numbered(size: usize) -> Vec<u8> {
    let mut v = vec![0; size];
    for at in (0..size).step_by(8) {
        let end = (at + 8).min(size);
        v[at..end].copy_from_slice(&(at as u64 + 1).to_ne_bytes()[..end - at]);
    }
    v
}

fn put32(v: &mut [u8], at: usize, x: u32) {
    v[at..at + 4].copy_from_slice(&x.to_ne_bytes());
}

fn put64(v: &mut [u8], at: usize, x: u64) {
    v[at..at + 8].copy_from_slice(&x.to_ne_bytes());
}

fn decode(m: &[u8]) -> Op<'_> {
    Request::decode_message(m).expect("well formed").op
}

/// A well-formed message for every operation this layer decodes.
fn every_operation() -> Vec<Vec<u8>> {
    use opcode::*;
    let mut write_in = numbered(40);
    put32(&mut write_in, 16, 3);
    let mut setxattr_in = numbered(8);
    put32(&mut setxattr_in, 0, 2);
    let mut batch = numbered(8);
    put32(&mut batch, 0, 2);
    let forgets: Vec<u8> = [9u64, 1, 10, 2].iter().flat_map(|v| v.to_ne_bytes()).collect();
    let mut init_in = numbered(64);
    put32(&mut init_in, 12, init_flag::INIT_EXT as u32);
    vec![
        message(LOOKUP, &[], b"a\0"),
        message(FORGET, &numbered(8), &[]),
        message(BATCH_FORGET, &batch, &forgets),
        message(GETATTR, &numbered(16), &[]),
        message(SETATTR, &numbered(88), &[]),
        message(READLINK, &[], &[]),
        message(SYMLINK, &[], b"l\0t\0"),
        message(MKNOD, &numbered(16), b"n\0"),
        message(MKDIR, &numbered(8), b"d\0"),
        message(UNLINK, &[], b"u\0"),
        message(RMDIR, &[], b"r\0"),
        message(RENAME, &numbered(8), b"a\0b\0"),
        message(RENAME2, &numbered(16), b"a\0b\0"),
        message(LINK, &numbered(8), b"k\0"),
        message(OPEN, &numbered(8), &[]),
        message(READ, &numbered(40), &[]),
        message(WRITE, &write_in, b"xyz"),
        message(STATFS, &[], &[]),
        message(RELEASE, &numbered(24), &[]),
        message(FSYNC, &numbered(16), &[]),
        message(SETXATTR, &setxattr_in, b"user.a\0vv"),
        message(GETXATTR, &numbered(8), b"user.a\0"),
        message(LISTXATTR, &numbered(8), &[]),
        message(REMOVEXATTR, &[], b"user.a\0"),
        message(FLUSH, &numbered(24), &[]),
        message(INIT, &init_in, &[]),
        message(OPENDIR, &numbered(8), &[]),
        message(READDIR, &numbered(40), &[]),
        message(RELEASEDIR, &numbered(24), &[]),
        message(FSYNCDIR, &numbered(16), &[]),
        message(ACCESS, &numbered(8), &[]),
        message(CREATE, &numbered(16), b"c\0"),
        message(INTERRUPT, &numbered(8), &[]),
        message(DESTROY, &[], &[]),
        message(FALLOCATE, &numbered(32), &[]),
        message(READDIRPLUS, &numbered(40), &[]),
        message(LSEEK, &numbered(24), &[]),
        message(COPY_FILE_RANGE, &numbered(56), &[]),
    ]
}

#[test]
fn every_operation_decodes_and_every_shorter_message_is_malformed() {
    for m in every_operation() {
        let request = Request::decode_message(&m).unwrap_or_else(|e| panic!("{e}: {m:?}"));
        assert_eq!(request.header.unique, 77);
        assert_eq!(request.header.nodeid, 5);
        assert_eq!((request.header.uid, request.header.gid, request.header.pid), (1000, 100, 4242));
        assert!(!matches!(request.op, Op::Unsupported { .. }), "{:?}", request.op);
        for cut in 0..m.len() {
            assert!(Request::decode_message(&m[..cut]).is_err(), "{:?} cut at {cut}", request.op);
        }
    }
}

#[test]
fn arguments_come_from_the_kernels_offsets() {
    use opcode::*;
    let mut write_in = numbered(40);
    put32(&mut write_in, 16, 3);
    let m = message(WRITE, &write_in, b"xyzw");
    assert_eq!(decode(&m), Op::Write { fh: 1, offset: 9, write_flags: 0, flags: 33, data: b"xyz" });

    let m = message(READ, &numbered(40), &[]);
    assert_eq!(decode(&m), Op::Read { fh: 1, offset: 9, size: 17, flags: 33 });

    let mut rename2 = numbered(16);
    put32(&mut rename2, 8, 4);
    let m = message(RENAME2, &rename2, b"old\0new\0");
    assert_eq!(decode(&m), Op::Rename { newdir: 1, flags: 4, name: b"old", newname: b"new" });
    let m = message(RENAME, &numbered(8), b"old\0new\0");
    assert_eq!(decode(&m), Op::Rename { newdir: 1, flags: 0, name: b"old", newname: b"new" });

    let m = message(SYMLINK, &[], b"link\0/target\0");
    assert_eq!(decode(&m), Op::Symlink { name: b"link", target: b"/target" });

    let mut setxattr_in = [0u8; 8];
    put32(&mut setxattr_in, 0, 2);
    put32(&mut setxattr_in, 4, 1);
    let m = message(SETXATTR, &setxattr_in, b"user.a\0vvv");
    assert_eq!(decode(&m), Op::Setxattr { name: b"user.a", value: b"vv", flags: 1 });

    let mut batch = [0u8; 8];
    put32(&mut batch, 0, 2);
    let forgets: Vec<u8> = [9u64, 1, 10, 2].iter().flat_map(|v| v.to_ne_bytes()).collect();
    let m = message(BATCH_FORGET, &batch, &forgets);
    match decode(&m) {
        Op::BatchForget { nodes } => assert_eq!(nodes.collect::<Vec<_>>(), vec![(9, 1), (10, 2)]),
        op => panic!("{op:?}"),
    }

    let mut getattr = [0u8; 16];
    put64(&mut getattr, 8, 12);
    assert_eq!(decode(&message(GETATTR, &getattr, &[])), Op::Getattr { fh: None });
    put32(&mut getattr, 0, 1);
    assert_eq!(decode(&message(GETATTR, &getattr, &[])), Op::Getattr { fh: Some(12) });

    let mut fsync = [0u8; 16];
    put32(&mut fsync, 8, 1);
    assert_eq!(decode(&message(FSYNC, &fsync, &[])), Op::Fsync { fh: 0, datasync: true });

    let m = message(COPY_FILE_RANGE, &numbered(56), &[]);
    assert_eq!(
        decode(&m),
        Op::CopyFileRange {
            fh_in: 1,
            off_in: 9,
            nodeid_out: 17,
            fh_out: 25,
            off_out: 33,
            len: 41,
            flags: 49
        }
    );
    let m = message(LSEEK, &numbered(24), &[]);
    assert_eq!(decode(&m), Op::Lseek { fh: 1, offset: 9, whence: 17 });
    let m = message(FALLOCATE, &numbered(32), &[]);
    assert_eq!(decode(&m), Op::Fallocate { fh: 1, offset: 9, length: 17, mode: 25 });
    let m = message(CREATE, &numbered(16), b"f\0");
    assert_eq!(decode(&m), Op::Create { flags: 1, mode: 0, umask: 9, name: b"f" });
    assert_eq!(decode(&message(99, &[], &[])), Op::Unsupported { opcode: 99 });
}

#[test]
fn setattr_sets_only_what_valid_says() {
    use setattr_valid::*;
    let mut s = numbered(88);
    put32(&mut s, 0, SIZE | MTIME_NOW | ATIME | UID);
    put32(&mut s, 76, 1234);
    match decode(&message(opcode::SETATTR, &s, &[])) {
        Op::Setattr(set) => {
            assert_eq!(set.size, Some(17));
            assert_eq!(set.atime, Some(SetTime::At(33, 57)));
            assert_eq!(set.mtime, Some(SetTime::Now));
            assert_eq!(set.uid, Some(1234));
            assert_eq!((set.mode, set.gid, set.ctime, set.fh), (None, None, None, None));
        }
        op => panic!("{op:?}"),
    }
}

#[test]
fn an_old_kernels_init_has_no_second_flags_word() {
    let mut init = numbered(64);
    put32(&mut init, 12, 1);
    put32(&mut init, 16, 1);
    assert_eq!(InitIn::decode(&init).map(|i| i.flags), Ok(1));
    put32(&mut init, 12, 1 | init_flag::INIT_EXT as u32);
    assert_eq!(InitIn::decode(&init).map(|i| i.flags), Ok(1 | init_flag::INIT_EXT | 1 << 32));
}

#[test]
fn random_bytes_never_make_a_decoder_panic() {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for m in every_operation() {
        for _ in 0..200 {
            let mut garbled = m.clone();
            for _ in 0..(next() % 6) {
                let at = IN_HEADER_SIZE + (next() as usize) % (garbled.len() - IN_HEADER_SIZE).max(1);
                if let Some(b) = garbled.get_mut(at) {
                    *b = next() as u8;
                }
            }
            garbled.truncate(garbled.len() - (next() as usize) % 4);
            let _ = Request::decode_message(&garbled);
        }
    }
}

#[test]
fn replies_have_the_kernels_sizes() {
    assert_eq!(std::mem::size_of::<ring::ReqHeader>(), 288);
    let mut buf = [0; 512];
    let attr = Attr::default();
    let entry = Entry { attr, ..Entry::default() };
    type Put = fn(&mut Out, &Entry);
    let sizes: [(usize, Put); 8] = [
        (88, |o, e| put_attr(o, &e.attr).expect("fits")),
        (104, |o, e| put_attr_out(o, &e.attr, Duration::from_secs(1)).expect("fits")),
        (128, |o, e| put_entry(o, e).expect("fits")),
        (16, |o, _| put_open(o, 0, 0).expect("fits")),
        (8, |o, _| put_write(o, 1).expect("fits")),
        (80, |o, _| put_statfs(o, &Statfs::default()).expect("fits")),
        (64, |o, _| put_init(o, &InitOut::default()).expect("fits")),
        (128 + 40, |o, e| assert!(put_direntplus(o, 512, e, 1, 8, b"name-of-9").expect("fits"))),
    ];
    for (size, put) in sizes {
        let mut out = Out::new(&mut buf);
        put(&mut out, &entry);
        assert_eq!(out.len(), size);
    }
    assert_eq!(inval_inode_message(1, -1, 0).len(), OUT_HEADER_SIZE + 24);
}

#[test]
fn an_entry_carries_its_lifetimes_seconds_then_nanoseconds() {
    let mut buf = [0; 128];
    let mut out = Out::new(&mut buf);
    let attr = Attr { ino: 9, mode: 0o100644, ..Attr::default() };
    let e = Entry { attr, generation: 3, entry_valid: Duration::new(5, 6), attr_valid: Duration::new(7, 8) };
    put_entry(&mut out, &e).expect("fits");
    let u64_at = |at: usize| u64::from_ne_bytes(buf[at..at + 8].try_into().expect("8 bytes"));
    let u32_at = |at: usize| u32::from_ne_bytes(buf[at..at + 4].try_into().expect("4 bytes"));
    assert_eq!((u64_at(0), u64_at(8), u64_at(16), u64_at(24)), (9, 3, 5, 7));
    assert_eq!((u32_at(32), u32_at(36)), (6, 8));
    assert_eq!(u64_at(40), 9, "fuse_attr.ino");
    assert_eq!(u32_at(40 + 60), 0o100644, "fuse_attr.mode");
}

#[test]
fn a_reply_that_does_not_fit_is_an_overflow_and_a_dirent_past_the_limit_is_left_out() {
    let mut small = [0; 100];
    let mut out = Out::new(&mut small);
    assert_eq!(put_entry(&mut out, &Entry::default()), Err(Overflow));
    let mut buf = [0; 64];
    let mut out = Out::new(&mut buf);
    assert_eq!(put_dirent(&mut out, 40, 1, 1, 4, b"abcdefgh"), Ok(true));
    assert_eq!(out.len(), 32);
    assert_eq!(put_dirent(&mut out, 40, 2, 2, 4, b"x"), Ok(false));
    assert_eq!(out.len(), 32, "nothing written past the limit");
    let mut header = [0; OUT_HEADER_SIZE];
    put_out_header(&mut header, 9, Answer::Error(libc::ENOENT));
    assert_eq!(i32::from_ne_bytes(header[4..8].try_into().expect("4 bytes")), -libc::ENOENT);
}
