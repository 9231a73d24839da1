//! Extended attributes through the namespace.

use super::*;

#[test]
fn xattrs_set_get_list_replace_and_remove() {
    let mut fs = fs();
    let f = file(&mut fs, ROOT, "f").ino;
    assert_eq!(fs.listxattr(f).expect("list"), b"");
    fs.setxattr(f, b"user.a", b"one", 0).expect("set");
    fs.setxattr(f, b"security.selinux", b"ctx", 0).expect("set");
    assert_eq!(fs.getxattr(f, b"user.a").expect("get"), b"one");
    assert_eq!(fs.listxattr(f).expect("list"), b"user.a\0security.selinux\0");
    assert_eq!(errno(fs.setxattr(f, b"user.a", b"x", libc::XATTR_CREATE)), libc::EEXIST);
    assert_eq!(errno(fs.setxattr(f, b"user.b", b"x", libc::XATTR_REPLACE)), libc::ENODATA);
    fs.setxattr(f, b"user.a", b"uno", libc::XATTR_REPLACE).expect("replace");
    assert_eq!(fs.getxattr(f, b"user.a").expect("get"), b"uno");
    assert_eq!(errno(fs.getxattr(f, b"user.missing")), libc::ENODATA);
    assert_eq!(errno(fs.removexattr(f, b"user.missing")), libc::ENODATA);
    assert!(fs.storage().has_block(f, crate::storage::XATTR_LBN));
    fs.removexattr(f, b"user.a").expect("remove");
    fs.removexattr(f, b"security.selinux").expect("remove");
    assert!(!fs.storage().has_block(f, crate::storage::XATTR_LBN), "an empty set frees its block");
    fs.setxattr(ROOT, b"trusted.x", b"", 0).expect("directories have xattrs too");
    assert_eq!(fs.getxattr(ROOT, b"trusted.x").expect("get"), b"");
}

#[test]
fn xattr_names_and_sizes_are_checked() {
    let mut fs = fs_with_block(1024);
    let f = file(&mut fs, ROOT, "f").ino;
    assert_eq!(errno(fs.setxattr(f, b"nospace", b"x", 0)), libc::EOPNOTSUPP);
    assert_eq!(errno(fs.getxattr(f, b"other.x")), libc::EOPNOTSUPP);
    assert_eq!(errno(fs.setxattr(f, b"user.", b"x", 0)), libc::EINVAL);
    assert_eq!(errno(fs.setxattr(f, b"user.big", &vec![0; 65537], 0)), libc::E2BIG);
    assert_eq!(errno(fs.setxattr(f, b"user.big", &[0; 1100], 0)), libc::ENOSPC);
    fs.setxattr(f, b"user.fits", &[5; 990], 0).expect("fits");
    assert_eq!(errno(fs.setxattr(f, b"user.more", &[5; 10], 0)), libc::ENOSPC);
    assert_eq!(fs.getxattr(f, b"user.fits").expect("kept").len(), 990);
    let name = [b"user.".as_slice(), &[b'n'; 251]].concat();
    assert_eq!(errno(fs.setxattr(f, &name, b"", 0)), libc::ERANGE);
}

#[test]
fn a_corrupt_xattr_block_is_an_error_and_unlink_frees_the_block() {
    let mut fs = fs();
    let f = file(&mut fs, ROOT, "f").ino;
    fs.setxattr(f, b"user.a", b"1", 0).expect("set");
    let block = fs.storage().block_mut(f, crate::storage::XATTR_LBN).expect("xattr block");
    block[20] ^= 1;
    assert_eq!(errno(fs.getxattr(f, b"user.a")), libc::EIO);
    fs.unlink(ROOT, b"f").expect("unlink");
    assert_eq!(fs.storage().blocks_used(), 1);
}
