//! Each kernel request, whichever transport brought it, to the adapter's
//! call and its reply's bytes; and the FUSE_INIT answer that sets up what
//! the kernel may send.

use super::{masked, rename_flags, FuseAdapter, MAX_IO};
use crate::caller::Caller;
use crate::convert::from_fuse;
use crate::kernel::reply::{self as wire, answer, Answer, InitOut, Out};
use crate::kernel::request::{InHeader, InitIn, Op, Request};
use crate::kernel::{init_flag, open_flag, Finish, Serve};
use crate::reply::{put_created, put_dir, put_dir_plus, put_statfs, put_xattr, TTL};
use fslab::storage::StorageManager;
use fslab::ufs::{Access, Creds, ReadStart};
use std::sync::Arc;

/// Background requests (read-ahead, write-back) the kernel may have
/// outstanding at once.
const MAX_BACKGROUND: u16 = 64;

/// The FUSE_INIT answer: what fslab asks of a kernel that offers `init`;
/// `writeback_cache` asks it to cache writes, `ring` to serve over FUSE
/// over io_uring. The handshake keeps only the flags the kernel offered,
/// so an old kernel still mounts.
pub(crate) fn init_reply(init: &InitIn, writeback_cache: bool, ring: bool) -> InitOut {
    let mut flags = init_flag::ASYNC_READ
        | init_flag::BIG_WRITES
        | init_flag::MAX_PAGES
        | init_flag::PARALLEL_DIROPS
        // ufs clears set-user-ID and set-group-ID on write, truncate,
        // fallocate and chown itself (with the caller's privilege,
        // `caller`), and drops security.capability. With V2 the kernel
        // marks a file it has checked once (`S_NOSEC`) and stops asking for
        // security.capability before every cached write: a GETXATTR round
        // trip a write fewer.
        | init_flag::HANDLE_KILLPRIV
        | init_flag::HANDLE_KILLPRIV_V2
        // A file handle is the node id (the inode number) and the
        // generation, both on disk: the kernel may ask for nodes it has
        // forgotten (`lookup` of "." and ".."), and handles work across
        // remounts, so the mount can be exported over NFS.
        | init_flag::EXPORT_SUPPORT
        // `ls -l` and `find` of a directory the kernel has not cached get
        // its names and attributes in one request per buffer, not a LOOKUP
        // per name; the kernel decides per directory whether its callers
        // look names up (READDIRPLUS_AUTO).
        | init_flag::DO_READDIRPLUS
        | init_flag::READDIRPLUS_AUTO
        // The flags past the first 32 travel in `flags2`.
        | init_flag::INIT_EXT;
    if writeback_cache {
        flags |= init_flag::WRITEBACK_CACHE;
    }
    if ring {
        flags |= init_flag::OVER_IO_URING;
    }
    InitOut {
        max_readahead: init.max_readahead.min(MAX_IO),
        flags,
        max_background: MAX_BACKGROUND,
        congestion_threshold: MAX_BACKGROUND / 4 * 3,
        max_write: MAX_IO,
        time_gran: 1,
        max_pages: (MAX_IO / 4096) as u16,
    }
}

/// The caller of a request.
fn caller(h: &InHeader) -> Caller {
    Caller { uid: h.uid, gid: h.gid, pid: h.pid }
}

/// Who creates a node: the caller of the request.
fn creds(h: &InHeader) -> Creds {
    Creds { uid: h.uid, gid: h.gid }
}

/// A library error as the errno the kernel passes on.
fn code(e: fslab::Error) -> i32 {
    e.errno()
}

impl<S: StorageManager + 'static> Serve for FuseAdapter<S> {
    fn serve(&self, request: &Request, reply: &mut [u8]) -> Answer {
        let node = request.header.nodeid;
        match &request.op {
            Op::Forget { nlookup } => self.forget(std::iter::once((node, *nlookup))),
            Op::BatchForget { nodes } => self.forget(*nodes),
            Op::Destroy => self.destroy(),
            _ => {}
        }
        answer(request, reply, |out| self.answer(request, out))
    }

    /// As `serve`, with what the answer waits for handed back to finish
    /// on another thread: a READ's device transfers, and the durability a
    /// successful answer promised (`shared::deferring`). An error is sent
    /// at once: it acknowledges nothing.
    fn serve_later(&self, request: &Request, reply: &mut [u8]) -> (Answer, Option<Finish>) {
        if let Op::Read { offset, size, flags, .. } = request.op {
            return self.read_later(request.header.nodeid, offset, size, flags, reply);
        }
        let (answer, ticket) = crate::shared::deferring(|| self.serve(request, reply));
        match answer {
            Answer::Reply(_) if !ticket.is_ready() => {
                let (damage, node) = (Arc::clone(&self.damage), request.header.nodeid);
                let finish = move |_: &mut [u8], answer: Answer| match ticket.wait() {
                    Ok(()) => answer,
                    Err(e) => {
                        super::report_damage(&damage, "durability", node, &e);
                        Answer::Error(e.errno())
                    }
                };
                (answer, Some(Box::new(finish)))
            }
            answer => (answer, None),
        }
    }
}

/// READ's access rule: the kernel passes the descriptor's flags with every
/// read, and refused O_NOATIME at open to all but the owner.
fn read_access(flags: u32) -> Access {
    if flags as i32 & libc::O_NOATIME != 0 {
        Access::NoAtime
    } else {
        Access::Touch
    }
}

/// `data` as READ's reply in `reply`.
fn read_answer(reply: &mut [u8], data: &[u8]) -> Answer {
    match reply.get_mut(..data.len()) {
        Some(out) => {
            out.copy_from_slice(data);
            Answer::Reply(data.len())
        }
        None => Answer::Error(libc::ERANGE),
    }
}

impl<S: StorageManager + 'static> FuseAdapter<S> {
    /// READ planned now, under the lock; its device transfers, if any,
    /// left to finish on another thread.
    fn read_later(
        &self,
        node: u64,
        offset: u64,
        size: u32,
        flags: u32,
        reply: &mut [u8],
    ) -> (Answer, Option<Finish>) {
        match self.read_begin(node, offset, size as usize, read_access(flags)) {
            Err(e) => (Answer::Error(e.errno()), None),
            Ok(ReadStart::Done(data)) => (read_answer(reply, &data), None),
            Ok(ReadStart::Pending(pending)) => {
                let rest = self.read_rest();
                let finish = move |reply: &mut [u8], _: Answer| match rest.finish(pending) {
                    Ok(data) => read_answer(reply, &data),
                    Err(e) => Answer::Error(e.errno()),
                };
                (Answer::Reply(0), Some(Box::new(finish)))
            }
        }
    }
}

impl<S: StorageManager + 'static> FuseAdapter<S> {
    /// Serves `request` and writes its reply into `out`, or fails with the
    /// errno the caller sees.
    fn answer(&self, request: &Request, out: &mut Out) -> Result<(), i32> {
        let h = &request.header;
        let node = h.nodeid;
        let dir = from_fuse(node);
        match request.op {
            Op::Lookup { name } => wire::put_entry(out, &self.lookup(node, name).map_err(code)?)?,
            Op::Getattr { .. } => {
                let attr = self.getattr(node).map_err(code)?;
                wire::put_attr_out(out, &attr, TTL)?;
            }
            Op::Setattr(ref set) => {
                let attr = self.setattr(node, caller(h), set).map_err(code)?;
                wire::put_attr_out(out, &attr, TTL)?;
            }
            Op::Readlink => out.bytes(&self.run("readlink", node, |fs| fs.readlink(dir)).map_err(code)?)?,
            Op::Mknod { mode, rdev, umask, name } => {
                let (mode, creds) = (masked(mode, umask), creds(h));
                let made = self.entry("mknod", node, |fs| fs.mknod(dir, name, mode, rdev.into(), creds));
                wire::put_entry(out, &made.map_err(code)?)?;
            }
            Op::Mkdir { mode, umask, name } => {
                let (mode, creds) = (masked(mode, umask), creds(h));
                let made = self.entry("mkdir", node, |fs| fs.mkdir(dir, name, mode, creds));
                wire::put_entry(out, &made.map_err(code)?)?;
            }
            Op::Symlink { name, target } => {
                let creds = creds(h);
                let made = self.entry("symlink", node, |fs| fs.symlink(dir, name, target, creds));
                wire::put_entry(out, &made.map_err(code)?)?;
            }
            Op::Link { oldnodeid, newname } => {
                let made = self.entry("link", oldnodeid, |fs| fs.link(from_fuse(oldnodeid), dir, newname));
                wire::put_entry(out, &made.map_err(code)?)?;
            }
            Op::Unlink { name } => self.run("unlink", node, |fs| fs.unlink(dir, name)).map_err(code)?,
            Op::Rmdir { name } => self.run("rmdir", node, |fs| fs.rmdir(dir, name)).map_err(code)?,
            Op::Rename { newdir, flags, name, newname } => {
                let flags = rename_flags(flags).map_err(code)?;
                self.run("rename", node, |fs| fs.rename(dir, name, from_fuse(newdir), newname, flags))
                    .map_err(code)?;
            }
            Op::Create { flags, mode, umask, name } => {
                let created = self.create(node, name, mode, umask, flags, creds(h)).map_err(code)?;
                put_created(out, &created)?;
            }
            // Stateless: O_TRUNC arrives as a separate setattr. The kernel's
            // page cache stays valid across opens because all writes come
            // through it. Where the kernel can skip OPEN, OPENDIR and their
            // releases (which carry nothing here), ENOSYS tells it to: a
            // small-file create or read saves two round trips each.
            Op::Open { .. } if self.zero_message_open => return Err(libc::ENOSYS),
            Op::Open { .. } => wire::put_open(out, 0, open_flag::KEEP_CACHE)?,
            Op::Opendir { .. } if self.zero_message_opendir => return Err(libc::ENOSYS),
            Op::Opendir { .. } => wire::put_open(out, 0, 0)?,
            Op::Release { .. } | Op::Releasedir { .. } => {}
            Op::Read { offset, size, flags, .. } => {
                out.bytes(&self.read_data(node, offset, size as usize, read_access(flags)).map_err(code)?)?;
            }
            Op::Write { fh, offset, flags, data, .. } => {
                wire::put_write(out, self.write(node, fh, offset, data, flags, caller(h)).map_err(code)?)?;
            }
            // close(2) promises nothing about durability; fsync does.
            // ENOSYS tells the kernel to stop sending FLUSH at every close.
            Op::Flush { .. } => return Err(libc::ENOSYS),
            Op::Fsync { datasync, .. } => {
                self.run("fsync", node, |fs| fs.fsync(dir, datasync)).map_err(code)?;
            }
            Op::Fsyncdir { datasync, .. } => self.fsyncdir(node, datasync).map_err(code)?,
            Op::Readdir { offset, size, .. } => {
                let items = self.readdir_items(node, offset).map_err(code)?;
                put_dir(out, size as usize, &items)?;
            }
            Op::Readdirplus { offset, size, .. } => {
                let items = self.readdirplus_items(node, offset).map_err(code)?;
                match put_dir_plus(out, size as usize, &items) {
                    Ok(unsent) => self.unpin_unsent(node, &unsent),
                    Err(overflow) => {
                        // Nothing is sent: every pin goes back.
                        let counted: Vec<u64> =
                            items.iter().filter(|p| p.counted).map(|p| p.item.ino).collect();
                        self.unpin_unsent(node, &counted);
                        return Err(overflow.into());
                    }
                }
            }
            Op::Statfs => put_statfs(out, &self.statfs(node).map_err(code)?)?,
            Op::Setxattr { name, value, flags } => self.setxattr(node, name, value, flags).map_err(code)?,
            Op::Getxattr { name, size } => put_xattr(out, &self.getxattr(node, name, size).map_err(code)?)?,
            Op::Listxattr { size } => put_xattr(out, &self.listxattr(node, size, caller(h)).map_err(code)?)?,
            Op::Removexattr { name } => {
                self.changing("removexattr", node, crate::stale::Dropped::Ctime, |fs| {
                    fs.removexattr(dir, name)
                })
                .map_err(code)?;
            }
            // Only reached without `default_permissions`: the inode must exist.
            Op::Access { .. } => self.run("access", node, |fs| fs.getattr(dir).map(|_| ())).map_err(code)?,
            Op::Fallocate { offset, length, mode, .. } => {
                self.fallocate(node, offset, length, mode, caller(h)).map_err(code)?;
            }
            Op::Lseek { offset, whence, .. } => {
                let found = self.run("lseek", node, |fs| fs.lseek(dir, offset as i64, whence as i32));
                wire::put_lseek(out, found.map_err(code)?)?;
            }
            Op::CopyFileRange { off_in, nodeid_out, off_out, len, flags, .. } => {
                if flags != 0 {
                    return Err(libc::EINVAL);
                }
                let copied = self.copy_file_range((node, off_in), (nodeid_out, off_out), len, caller(h));
                wire::put_write(out, copied.map_err(code)?)?;
            }
            Op::Destroy | Op::Forget { .. } | Op::BatchForget { .. } => {}
            // FUSE_INIT comes once, before serving (the handshake); an
            // interrupt is not acted on (ENOSYS tells the kernel to stop
            // sending them), and the rest fslab does not serve.
            Op::Init(_) => return Err(libc::EIO),
            Op::Interrupt { .. } | Op::Unsupported { .. } => return Err(libc::ENOSYS),
        }
        Ok(())
    }
}
