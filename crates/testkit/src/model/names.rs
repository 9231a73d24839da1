//! The namespace operations of the [`Model`]: create (file, directory,
//! symlink), readlink, link, unlink, rmdir and rename, each with the errno
//! order of the crate map (the library's where the VFS screens first,
//! Linux's elsewhere).

use super::{check_name, is_dot, Body, Kind, Model, NodeId, Res, ROOT};
use std::collections::BTreeMap;

impl Model {
    fn create(&mut self, parent: NodeId, name: &[u8], body: Body, perm: u32) -> Res<NodeId> {
        check_name(name)?;
        if is_dot(name) {
            return Err(libc::EEXIST);
        }
        if self.get(parent)?.nlink == 0 {
            return Err(libc::ENOENT);
        }
        if self.entries(parent)?.contains_key(name) {
            return Err(libc::EEXIST);
        }
        let is_dir = matches!(body, Body::Dir { .. });
        let mut perm = perm & 0o7777;
        // A directory made under a set-group-ID directory inherits the bit.
        if is_dir && self.get(parent)?.perm & libc::S_ISGID != 0 {
            perm |= libc::S_ISGID;
        }
        let id = self.alloc(body, perm, if is_dir { 2 } else { 1 });
        self.entries_mut(parent)?.insert(name.to_vec(), id);
        if is_dir {
            self.get_mut(parent)?.nlink += 1;
        }
        Ok(id)
    }

    /// Creates an empty regular file.
    pub fn create_file(&mut self, parent: NodeId, name: &[u8], perm: u32) -> Res<NodeId> {
        self.create(parent, name, Body::File(Vec::new()), perm)
    }

    /// Creates an empty directory.
    pub fn mkdir(&mut self, parent: NodeId, name: &[u8], perm: u32) -> Res<NodeId> {
        self.create(parent, name, Body::Dir { entries: BTreeMap::new(), parent }, perm)
    }

    /// Creates a symbolic link.
    pub fn symlink(&mut self, parent: NodeId, name: &[u8], target: &[u8]) -> Res<NodeId> {
        if target.is_empty() {
            return Err(libc::ENOENT);
        }
        // A block, and PATH_MAX with its NUL.
        if target.len() > self.limits.block_size.min(libc::PATH_MAX as usize - 1) {
            return Err(libc::ENAMETOOLONG);
        }
        if target.contains(&0) {
            return Err(libc::EINVAL);
        }
        self.create(parent, name, Body::Symlink(target.to_vec()), 0o777)
    }

    /// The target of symlink `id`.
    pub fn readlink(&self, id: NodeId) -> Res<Vec<u8>> {
        match &self.get(id)?.body {
            Body::Symlink(t) => Ok(t.clone()),
            _ => Err(libc::EINVAL),
        }
    }

    /// Adds the name `parent/name` for `id` (library order: EPERM for a
    /// directory before EEXIST).
    pub fn link(&mut self, id: NodeId, parent: NodeId, name: &[u8]) -> Res<()> {
        check_name(name)?;
        if is_dot(name) {
            return Err(libc::EEXIST);
        }
        let node = self.get(id)?;
        if node.kind() == Kind::Dir {
            return Err(libc::EPERM);
        }
        if node.nlink == 0 {
            return Err(libc::ENOENT);
        }
        if self.get(parent)?.nlink == 0 {
            return Err(libc::ENOENT);
        }
        if self.entries(parent)?.contains_key(name) {
            return Err(libc::EEXIST);
        }
        self.entries_mut(parent)?.insert(name.to_vec(), id);
        self.get_mut(id)?.nlink += 1;
        Ok(())
    }

    /// Removes a non-directory name.
    pub fn unlink(&mut self, parent: NodeId, name: &[u8]) -> Res<()> {
        check_name(name)?;
        if is_dot(name) {
            return Err(libc::EISDIR);
        }
        let id = *self.entries(parent)?.get(name).ok_or(libc::ENOENT)?;
        if self.get(id)?.kind() == Kind::Dir {
            return Err(libc::EISDIR);
        }
        self.entries_mut(parent)?.remove(name);
        let node = self.get_mut(id)?;
        node.nlink = node.nlink.saturating_sub(1);
        self.maybe_free(id);
        Ok(())
    }

    /// Removes an empty directory.
    pub fn rmdir(&mut self, parent: NodeId, name: &[u8]) -> Res<()> {
        check_name(name)?;
        if name == b"." {
            return Err(libc::EINVAL);
        }
        if name == b".." {
            return Err(libc::ENOTEMPTY);
        }
        let id = *self.entries(parent)?.get(name).ok_or(libc::ENOENT)?;
        if self.get(id)?.kind() != Kind::Dir {
            return Err(libc::ENOTDIR);
        }
        if !self.entries(id)?.is_empty() {
            return Err(libc::ENOTEMPTY);
        }
        self.entries_mut(parent)?.remove(name);
        self.get_mut(id)?.nlink = 0;
        self.get_mut(parent)?.nlink -= 1;
        self.maybe_free(id);
        Ok(())
    }

    /// Whether `dir` is `ancestor` or lies below it.
    fn is_within(&self, ancestor: NodeId, dir: NodeId) -> bool {
        let mut at = dir;
        loop {
            if at == ancestor {
                return true;
            }
            if at == ROOT {
                return false;
            }
            match self.parent_of(at) {
                Ok(p) => at = p,
                Err(_) => return false,
            }
        }
    }

    fn set_parent(&mut self, dir: NodeId, new_parent: NodeId) -> Res<()> {
        match &mut self.get_mut(dir)?.body {
            Body::Dir { parent, .. } => {
                *parent = new_parent;
                Ok(())
            }
            _ => Err(libc::ENOTDIR),
        }
    }

    /// Renames with `renameat2` semantics (`noreplace`, `exchange`), checks in
    /// the library's documented order.
    pub fn rename(
        &mut self,
        parent: NodeId,
        name: &[u8],
        new_parent: NodeId,
        new_name: &[u8],
        noreplace: bool,
        exchange: bool,
    ) -> Res<()> {
        check_name(name)?;
        check_name(new_name)?;
        if exchange && noreplace {
            return Err(libc::EINVAL);
        }
        if is_dot(name) || is_dot(new_name) {
            return Err(libc::EBUSY);
        }
        self.entries(parent)?;
        if self.get(new_parent)?.nlink == 0 {
            return Err(libc::ENOENT);
        }
        let src = *self.entries(parent)?.get(name).ok_or(libc::ENOENT)?;
        let dst = self.entries(new_parent)?.get(new_name).copied();
        if noreplace && dst.is_some() {
            return Err(libc::EEXIST);
        }
        if dst == Some(src) {
            return Ok(());
        }
        let src_dir = self.get(src)?.kind() == Kind::Dir;
        let moves_dir = src_dir && parent != new_parent;
        if moves_dir && self.is_within(src, new_parent) {
            return Err(libc::EINVAL);
        }
        if exchange {
            let dst = dst.ok_or(libc::ENOENT)?;
            let dst_dir = self.get(dst)?.kind() == Kind::Dir;
            let moves_dst_dir = dst_dir && parent != new_parent;
            if moves_dst_dir && self.is_within(dst, parent) {
                return Err(libc::EINVAL);
            }
            self.entries_mut(parent)?.insert(name.to_vec(), dst);
            self.entries_mut(new_parent)?.insert(new_name.to_vec(), src);
            if moves_dir {
                self.set_parent(src, new_parent)?;
                self.get_mut(parent)?.nlink -= 1;
                self.get_mut(new_parent)?.nlink += 1;
            }
            if moves_dst_dir {
                self.set_parent(dst, parent)?;
                self.get_mut(new_parent)?.nlink -= 1;
                self.get_mut(parent)?.nlink += 1;
            }
            return Ok(());
        }
        if let Some(dst) = dst {
            let dst_dir = self.get(dst)?.kind() == Kind::Dir;
            if dst_dir && !src_dir {
                return Err(libc::EISDIR);
            }
            if src_dir && !dst_dir {
                return Err(libc::ENOTDIR);
            }
            if dst_dir && !self.entries(dst)?.is_empty() {
                return Err(libc::ENOTEMPTY);
            }
        }
        self.entries_mut(parent)?.remove(name);
        self.entries_mut(new_parent)?.insert(new_name.to_vec(), src);
        if moves_dir {
            self.set_parent(src, new_parent)?;
            self.get_mut(parent)?.nlink -= 1;
            self.get_mut(new_parent)?.nlink += 1;
        }
        if let Some(dst) = dst {
            let node = self.get_mut(dst)?;
            if node.kind() == Kind::Dir {
                node.nlink = 0;
                self.get_mut(new_parent)?.nlink -= 1;
            } else {
                node.nlink -= 1;
            }
            self.maybe_free(dst);
        }
        Ok(())
    }
}
