//! Rename, with Linux `renameat2` semantics (RENAME_NOREPLACE, RENAME_EXCHANGE).
//!
//! Order of checks, each with the errno Linux gives: names → EBUSY for `.`
//! and `..`; source missing → ENOENT; NOREPLACE over an existing target →
//! EEXIST; same inode → success doing nothing; moving a directory into its
//! own subtree → EINVAL; kind mismatch → EISDIR / ENOTDIR; non-empty target
//! directory → ENOTEMPTY. Then the target entry is added or retargeted
//! before the source entry is removed, so a failure part way never leaves
//! the file without a name.

use super::names::dtype_of;
use super::{check_name, is_dot, now, Ns, RenameFlags, LINK_MAX};
use crate::error::{errno, Location};
use crate::format::dirent::dt;
use crate::format::{Ino, ROOT_INO};
use crate::storage::StorageManager;
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
        let now = now();
        if flags.exchange {
            let dst = dst.ok_or(errno(libc::ENOENT, "no target to exchange with"))?;
            let dst_attr = self.s.vget(dst.ino)?.attr;
            let moves_dst_dir = dst_attr.is_dir() && parent != new_parent;
            if moves_dst_dir {
                self.check_not_inside(dst.ino, parent)?;
            }
            self.dir_retarget(parent, name, dst.ino, dtype_of(&dst_attr))?;
            self.dir_retarget(new_parent, new_name, src.ino, dtype_of(&src_attr))?;
            let (src_dirs, dst_dirs) = (i32::from(moves_dir), i32::from(moves_dst_dir));
            if moves_dir {
                self.dir_retarget(src.ino, b"..", new_parent, dt::DIR)?;
            }
            if moves_dst_dir {
                self.dir_retarget(dst.ino, b"..", parent, dt::DIR)?;
            }
            self.touch_dir(parent, now, dst_dirs - src_dirs)?;
            if new_parent != parent {
                self.touch_dir(new_parent, now, src_dirs - dst_dirs)?;
            }
            for ino in [src.ino, dst.ino] {
                self.modify(ino, |a| a.ctime = now)?;
            }
            return Ok(());
        }
        let mut replaced = None;
        match dst {
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
                self.dir_retarget(new_parent, new_name, src.ino, dtype_of(&src_attr))?;
                replaced = Some((dst.ino, dst_attr.is_dir()));
            }
            None => {
                if moves_dir && self.s.vget(new_parent)?.attr.nlink >= LINK_MAX {
                    return Err(errno(libc::EMLINK, "target directory has too many subdirectories"));
                }
                self.dir_add(new_parent, new_name, src.ino, dtype_of(&src_attr))?;
            }
        }
        self.dir_remove(parent, name)?;
        if moves_dir {
            self.dir_retarget(src.ino, b"..", new_parent, dt::DIR)?;
        }
        // Link counts: a moved directory's `..` leaves `parent` for
        // `new_parent`; a replaced directory's `..` leaves `new_parent`.
        let replaced_dir = i32::from(replaced.is_some_and(|(_, is_dir)| is_dir));
        if parent == new_parent {
            self.touch_dir(parent, now, -replaced_dir)?;
        } else {
            self.touch_dir(parent, now, -i32::from(moves_dir))?;
            self.touch_dir(new_parent, now, i32::from(moves_dir) - replaced_dir)?;
        }
        self.modify(src.ino, |a| a.ctime = now)?;
        if let Some((ino, is_dir)) = replaced {
            let attr = self.modify(ino, |a| {
                a.nlink = if is_dir { 0 } else { a.nlink.saturating_sub(1) };
                a.ctime = now;
            })?;
            if attr.nlink == 0 {
                self.release(ino)?;
            }
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
