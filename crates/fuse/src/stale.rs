//! Attributes the kernel caches that a request changed behind its back.
//!
//! The kernel keeps an inode's attributes for [`crate::TTL`] (an hour). A
//! reply that carries attributes (SETATTR, LOOKUP, CREATE, LINK, ...)
//! replaces them; after a request whose reply carries none, the kernel
//! drops by itself only what it expects that request to change:
//!
//! | request | what the kernel drops |
//! |---|---|
//! | WRITE, FALLOCATE, COPY_FILE_RANGE | size, blocks, mtime, ctime |
//! | SETXATTR, REMOVEXATTR | ctime |
//!
//! Whatever else fslab changes in such a request has to be dropped with a
//! notification (`FUSE_NOTIFY_INVAL_INODE`), sent before the reply, or
//! `stat` — and the kernel's own permission checks (`default_permissions`)
//! and set-user-ID on `execve` — go on using the old value for the hour:
//!
//! * a write, fallocate or copy_file_range clears set-user-ID and
//!   set-group-ID (fslab asks for `FUSE_HANDLE_KILLPRIV` and clears them
//!   itself, as POSIX asks); the kernel never drops the mode;
//! * an xattr change allocates or frees the inode's xattr block, which
//!   changes its block count.
//!
//! [`Kept`] is what the kernel would keep; the adapter compares it before
//! and after such a request and notifies only when it changed, so an
//! ordinary write costs no notification and no later GETATTR.

use fslab::format::inode::Inode;

/// Which attributes the kernel drops by itself after a request whose
/// reply carries none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dropped {
    /// WRITE, FALLOCATE, COPY_FILE_RANGE: size, blocks, mtime and ctime
    /// (the kernel's `FUSE_STATX_MODSIZE`).
    Contents,
    /// SETXATTR, REMOVEXATTR: ctime.
    Ctime,
}

/// The attributes of an inode that the kernel keeps trusting after a
/// request that drops `Dropped`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kept([u64; 11]);

/// What the kernel keeps of `inode` after a request of kind `dropped`
/// (after a write, the last three fields are zero: the kernel drops them).
pub fn kept(inode: &Inode, dropped: Dropped) -> Kept {
    let a = &inode.attr;
    let (size, blocks, mtime) =
        if dropped == Dropped::Ctime { (a.size, inode.blocks, a.mtime as u64) } else { (0, 0, 0) };
    Kept([
        u64::from(a.mode),
        u64::from(a.uid),
        u64::from(a.gid),
        u64::from(a.nlink),
        u64::from(a.flags),
        a.rdev,
        a.atime as u64,
        a.btime as u64,
        size,
        blocks,
        mtime,
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cleared_set_user_id_bit_is_a_change_the_kernel_keeps() {
        let mut inode = Inode::default();
        inode.attr.mode = 0o104777;
        let before = kept(&inode, Dropped::Contents);
        inode.attr.size = 4096;
        inode.blocks = 8;
        inode.attr.mtime = 5;
        inode.attr.ctime = 5;
        assert_eq!(kept(&inode, Dropped::Contents), before, "what a write changes, the kernel drops itself");
        inode.attr.mode = 0o100777;
        assert_ne!(kept(&inode, Dropped::Contents), before, "set-user-ID cleared");
    }

    #[test]
    fn an_xattr_block_changes_the_block_count_the_kernel_keeps() {
        let mut inode = Inode::default();
        let before = kept(&inode, Dropped::Ctime);
        inode.attr.ctime = 9;
        assert_eq!(kept(&inode, Dropped::Ctime), before);
        inode.blocks = 8;
        assert_ne!(kept(&inode, Dropped::Ctime), before);
    }
}
