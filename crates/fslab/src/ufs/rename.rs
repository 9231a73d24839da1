//! Rename, with Linux `renameat2` semantics (RENAME_NOREPLACE, RENAME_EXCHANGE).
//!
//! Order of checks, each with the errno Linux gives: names → EBUSY for `.`
//! and `..`; source missing → ENOENT; NOREPLACE over an existing target →
//! EEXIST; same inode → success doing nothing; moving a directory into its
//! own subtree → EINVAL; kind mismatch → EISDIR / ENOTDIR; non-empty target
//! directory → ENOTEMPTY. Then the target entry is added or retargeted
//! before the source entry is removed, so a failure part way never leaves
//! the file without a name, and a link count never falls below the names
//! that count it (4.4BSD's order, which FFS's synchronous writes follow).

use super::names::dtype_of;
use super::{check_name, is_dot, Ns, RenameFlags, LINK_MAX};
use crate::error::{errno, Location};
use crate::format::dirent::dt;
use crate::format::TimeNs;
use crate::format::{Ino, ROOT_INO};
use crate::storage::{Hint, StorageManager};
use crate::{Error, Result};

impl<S: StorageManager> Ns<'_, S> {
    pub(super) fn rename(
        &mut self,
        parent: Ino,
        name: &[u8],
        new_parent: Ino,
        new_name: &[u8],
        flags: RenameFlags,
    ) -> Result<()> {
        check_name(name)?;
        check_name(new_name)?;
        if flags.exchange && flags.noreplace {
            return Err(errno(libc::EINVAL, "RENAME_EXCHANGE with RENAME_NOREPLACE"));
        }
        if is_dot(name) || is_dot(new_name) {
            return Err(errno(libc::EBUSY, "cannot rename '.' or '..'"));
        }
        self.dir_inode(parent)?;
        if self.dir_inode(new_parent)?.attr.nlink == 0 {
            return Err(errno(libc::ENOENT, "target directory was removed"));
        }
        let src = self.dir_lookup(parent, name)?.ok_or(errno(libc::ENOENT, "no such source"))?;
        let dst = self.dir_lookup(new_parent, new_name)?;
        if flags.noreplace && dst.is_some() {
            return Err(errno(libc::EEXIST, "target exists"));
        }
        if dst.is_some_and(|d| d.ino == src.ino) {
            // POSIX: renaming onto another link of the same file does nothing.
            return Ok(());
        }
        let src_attr = self.s.vget(src.ino)?.attr;
        let moves_dir = src_attr.is_dir() && parent != new_parent;
        if moves_dir {
            self.check_not_inside(src.ino, new_parent)?;
        }
        let now = self.s.now();
        if flags.exchange {
            let dst = dst.ok_or(errno(libc::ENOENT, "no target to exchange with"))?;
            return self.exchange(parent, name, src.ino, new_parent, new_name, dst.ino, now);
        }
        // Checks first: nothing may change before one of them fails.
        let replaced = match dst {
            Some(dst) => {
                let dst_attr = self.s.vget(dst.ino)?.attr;
                if dst_attr.is_dir() && !src_attr.is_dir() {
                    return Err(errno(libc::EISDIR, "cannot rename a non-directory over a directory"));
                }
                if src_attr.is_dir() && !dst_attr.is_dir() {
                    return Err(errno(libc::ENOTDIR, "cannot rename a directory over a non-directory"));
                }
                if dst_attr.is_dir() && !self.dir_is_empty(dst.ino)? {
                    return Err(errno(libc::ENOTEMPTY, "target directory not empty"));
                }
                Some((dst.ino, dst_attr.is_dir()))
            }
            None => {
                if moves_dir && self.s.vget(new_parent)?.attr.nlink >= LINK_MAX {
                    return Err(errno(libc::EMLINK, "target directory has too many subdirectories"));
                }
                None
            }
        };
        // 4.4BSD's order (ufs_rename): the source's link count, and the new
        // parent's for a moved directory's `..`, rise before the new entry
        // exists; the old entry goes before they fall again.
        self.add_links(src.ino, now, 1)?;
        let replaced_dir = replaced.is_some_and(|(_, is_dir)| is_dir);
        if moves_dir && !replaced_dir {
            self.add_links(new_parent, now, 1)?;
        }
        let src_type = dtype_of(&src_attr);
        match replaced {
            Some((old, is_dir)) => {
                let slot = self.dir_retarget(new_parent, new_name, src.ino, src_type)?;
                self.s.hint(Hint::EntryChanged {
                    dir: new_parent,
                    offset: slot.offset,
                    old,
                    ino: src.ino,
                })?;
                let attr = self.modify(old, |a| {
                    a.nlink = if is_dir { 0 } else { a.nlink.saturating_sub(1) };
                    a.ctime = now;
                })?;
                self.s.hint(Hint::LinkCount { ino: old, nlink: attr.nlink })?;
                // A replaced directory's `..` no longer counts its parent,
                // unless the moved directory's `..` takes its place.
                if is_dir && !moves_dir {
                    self.add_links(new_parent, now, -1)?;
                }
                if attr.nlink == 0 {
                    self.release(old)?;
                }
            }
            None => match self.dir_add(new_parent, new_name, src.ino, src_type) {
                Ok(offset) => self.s.hint(Hint::EntryAdded { dir: new_parent, offset, ino: src.ino })?,
                Err(e) => {
                    // No room for the new entry (ENOSPC): nothing else changed.
                    let _ = self.add_links(src.ino, now, -1);
                    if moves_dir {
                        let _ = self.add_links(new_parent, now, -1);
                    }
                    return Err(e);
                }
            },
        }
        let slot = self.dir_remove(parent, name)?;
        self.s.hint(Hint::EntryRemoved { dir: parent, offset: slot.offset, ino: src.ino })?;
        self.add_links(src.ino, now, -1)?;
        if moves_dir {
            let dotdot = self.dir_retarget(src.ino, b"..", new_parent, dt::DIR)?;
            self.s.hint(Hint::EntryChanged {
                dir: src.ino,
                offset: dotdot.offset,
                old: parent,
                ino: new_parent,
            })?;
            self.add_links(parent, now, -1)?;
        }
        self.touch_dir(parent, now, 0)?;
        if new_parent != parent {
            self.touch_dir(new_parent, now, 0)?;
        }
        Ok(())
    }

    /// RENAME_EXCHANGE: `parent/name` (inode `a`) and `new_parent/new_name`
    /// (inode `b`) swap inodes; each entry stays where it is.
    #[allow(clippy::too_many_arguments)]
    fn exchange(
        &mut self,
        parent: Ino,
        name: &[u8],
        a: Ino,
        new_parent: Ino,
        new_name: &[u8],
        b: Ino,
        now: TimeNs,
    ) -> Result<()> {
        let a_attr = self.s.vget(a)?.attr;
        let b_attr = self.s.vget(b)?.attr;
        let moves_a = a_attr.is_dir() && parent != new_parent;
        let moves_b = b_attr.is_dir() && parent != new_parent;
        if moves_b {
            self.check_not_inside(b, parent)?;
        }
        // A directory's `..` follows it: the parent gaining one gains its
        // link before the `..` names it, the one losing it loses it after.
        let (gaining, losing) = match moves_b.cmp(&moves_a) {
            std::cmp::Ordering::Greater => (Some(parent), Some(new_parent)),
            std::cmp::Ordering::Less => (Some(new_parent), Some(parent)),
            std::cmp::Ordering::Equal => (None, None),
        };
        if let Some(dir) = gaining {
            if self.s.vget(dir)?.attr.nlink >= LINK_MAX {
                return Err(errno(libc::EMLINK, "target directory has too many subdirectories"));
            }
            self.add_links(dir, now, 1)?;
        }
        let slot = self.dir_retarget(parent, name, b, dtype_of(&b_attr))?;
        self.s.hint(Hint::EntryChanged { dir: parent, offset: slot.offset, old: a, ino: b })?;
        let slot = self.dir_retarget(new_parent, new_name, a, dtype_of(&a_attr))?;
        self.s.hint(Hint::EntryChanged { dir: new_parent, offset: slot.offset, old: b, ino: a })?;
        if moves_a {
            let dotdot = self.dir_retarget(a, b"..", new_parent, dt::DIR)?;
            self.s.hint(Hint::EntryChanged {
                dir: a,
                offset: dotdot.offset,
                old: parent,
                ino: new_parent,
            })?;
        }
        if moves_b {
            let dotdot = self.dir_retarget(b, b"..", parent, dt::DIR)?;
            self.s.hint(Hint::EntryChanged {
                dir: b,
                offset: dotdot.offset,
                old: new_parent,
                ino: parent,
            })?;
        }
        if let Some(dir) = losing {
            self.add_links(dir, now, -1)?;
        }
        self.touch_dir(parent, now, 0)?;
        if new_parent != parent {
            self.touch_dir(new_parent, now, 0)?;
        }
        for ino in [a, b] {
            self.modify(ino, |attr| attr.ctime = now)?;
        }
        Ok(())
    }

    /// Fails with EINVAL if directory `dir` is `moved` or lies below it:
    /// walks up from `dir` through the `..` entries to the root.
    fn check_not_inside(&mut self, moved: Ino, dir: Ino) -> Result<()> {
        let mut at = dir;
        // A tree deeper than this is a loop in a corrupt image.
        for _ in 0..1_000_000 {
            if at == moved {
                return Err(errno(libc::EINVAL, "cannot move a directory into itself"));
            }
            if at == ROOT_INO {
                return Ok(());
            }
            at = self.dir_parent(at)?;
        }
        Err(Error::corrupt_at("directory tree", Location::Inode(dir), "'..' entries form a loop"))
    }
}
