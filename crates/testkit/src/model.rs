//! An in-memory model of a POSIX file system: the answers fslab should give.
//!
//! Map: [`Model`] holds [`Node`]s by [`NodeId`] (ids are never reused); a
//! directory maps names to ids and knows its parent; hard links are several
//! names for one id; a node lives while it has a name or an open handle.
//! Every operation returns `Result<T, i32>` with the errno the real file
//! system must return.
//!
//! Whose errno order: where Linux's VFS answers before the file system is
//! asked (the kernel screens rename into an ancestor, a link over an existing
//! name, user xattrs on symlinks), no program can tell which check a file
//! system makes first, so the model follows the library's documented order
//! (`ufs/rename.rs`, `ufs/names.rs`). Everywhere else it follows Linux.

use std::collections::{BTreeMap, BTreeSet, HashMap};

/// A node's identity in the model (the model's inode number).
pub type NodeId = u64;

/// The root directory's id.
pub const ROOT: NodeId = 1;

/// Longest name in a directory.
pub const NAME_MAX: usize = 255;

/// Largest value of one extended attribute.
pub const XATTR_VALUE_MAX: usize = 65536;

/// Errno results, as the real file system reports them.
pub type Res<T> = Result<T, i32>;

/// What a node holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Body {
    /// A regular file's bytes (its length is the file size).
    File(Vec<u8>),
    /// A directory: entries by name, and the parent (`..`).
    Dir {
        /// Entries, `.` and `..` excluded.
        entries: BTreeMap<Vec<u8>, NodeId>,
        /// The directory named by `..` (the root's is itself).
        parent: NodeId,
    },
    /// A symbolic link's target.
    Symlink(Vec<u8>),
}

/// The kind of a node, as readdir reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Regular file.
    File,
    /// Directory.
    Dir,
    /// Symbolic link.
    Symlink,
}

impl Kind {
    /// The `S_IFMT` bits of this kind.
    pub fn mode_bits(self) -> u32 {
        match self {
            Kind::File => libc::S_IFREG,
            Kind::Dir => libc::S_IFDIR,
            Kind::Symlink => libc::S_IFLNK,
        }
    }
}

/// One file, directory or symlink.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// Contents.
    pub body: Body,
    /// Permission bits (`0o7777`).
    pub perm: u32,
    /// Link count: names for a file, 2 + subdirectories for a live directory,
    /// 0 once removed.
    pub nlink: u32,
    /// Extended attributes in insertion order (a replaced value keeps its place).
    pub xattrs: Vec<(Vec<u8>, Vec<u8>)>,
    /// Open handles on it (a removed node lives while this is not 0).
    pub open: u32,
    /// A regular file's blocks that may be stored: written or preallocated,
    /// and since neither truncated away nor punched whole. An upper bound
    /// of its data blocks (holes the model cannot tell from written zeros
    /// are left out of it by construction), for `space`.
    pub allocated: BTreeSet<u64>,
}

impl Node {
    /// Its kind.
    pub fn kind(&self) -> Kind {
        match self.body {
            Body::File(_) => Kind::File,
            Body::Dir { .. } => Kind::Dir,
            Body::Symlink(_) => Kind::Symlink,
        }
    }

    /// Its size in bytes as `getattr` reports it (`None` for a directory,
    /// whose size is the layout's business).
    pub fn size(&self) -> Option<u64> {
        match &self.body {
            Body::File(d) => Some(d.len() as u64),
            Body::Dir { .. } => None,
            Body::Symlink(t) => Some(t.len() as u64),
        }
    }
}

/// Fixed facts about the file system being modelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The block size: the longest symlink target and the room for all of
    /// one inode's extended attributes.
    pub block_size: usize,
}

/// The modelled file system.
#[derive(Debug, Clone)]
pub struct Model {
    nodes: HashMap<NodeId, Node>,
    next: NodeId,
    limits: Limits,
}

/// Kind of `setxattr` call.
pub const XATTR_CREATE: i32 = libc::XATTR_CREATE;
/// Kind of `setxattr` call.
pub const XATTR_REPLACE: i32 = libc::XATTR_REPLACE;

fn check_name(name: &[u8]) -> Res<()> {
    if name.is_empty() {
        Err(libc::ENOENT)
    } else if name.len() > NAME_MAX {
        Err(libc::ENAMETOOLONG)
    } else if name.iter().any(|&b| b == b'/' || b == 0) {
        Err(libc::EINVAL)
    } else {
        Ok(())
    }
}

fn is_dot(name: &[u8]) -> bool {
    name == b"." || name == b".."
}

/// Checks an xattr name as Linux and the library do.
fn check_xattr_name(name: &[u8]) -> Res<()> {
    if name.len() > 255 {
        return Err(libc::ERANGE);
    }
    const NAMESPACES: [&[u8]; 4] = [b"user.", b"trusted.", b"security.", b"system."];
    match NAMESPACES.iter().find(|p| name.starts_with(p)) {
        None => Err(libc::EOPNOTSUPP),
        Some(p) if name.len() == p.len() => Err(libc::EINVAL),
        Some(_) if name.contains(&0) => Err(libc::EINVAL),
        Some(_) => Ok(()),
    }
}

impl Model {
    /// A file system holding only an empty root directory (mode 0755).
    pub fn new(limits: Limits) -> Model {
        let root = Node {
            body: Body::Dir { entries: BTreeMap::new(), parent: ROOT },
            perm: 0o755,
            nlink: 2,
            xattrs: Vec::new(),
            open: 0,
            allocated: BTreeSet::new(),
        };
        Model { nodes: HashMap::from([(ROOT, root)]), next: ROOT + 1, limits }
    }

    /// The fixed facts it was made with.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// The node `id`, if it is alive.
    pub fn node(&self, id: NodeId) -> Option<&Node> {
        self.nodes.get(&id)
    }

    /// Ids of all live nodes (named or open).
    pub fn live(&self) -> impl Iterator<Item = NodeId> + '_ {
        self.nodes.keys().copied()
    }

    /// How many nodes are alive.
    pub fn live_count(&self) -> usize {
        self.nodes.len()
    }

    fn get(&self, id: NodeId) -> Res<&Node> {
        self.nodes.get(&id).ok_or(libc::ENOENT)
    }

    fn get_mut(&mut self, id: NodeId) -> Res<&mut Node> {
        self.nodes.get_mut(&id).ok_or(libc::ENOENT)
    }

    fn entries(&self, dir: NodeId) -> Res<&BTreeMap<Vec<u8>, NodeId>> {
        match &self.get(dir)?.body {
            Body::Dir { entries, .. } => Ok(entries),
            _ => Err(libc::ENOTDIR),
        }
    }

    fn entries_mut(&mut self, dir: NodeId) -> Res<&mut BTreeMap<Vec<u8>, NodeId>> {
        match &mut self.get_mut(dir)?.body {
            Body::Dir { entries, .. } => Ok(entries),
            _ => Err(libc::ENOTDIR),
        }
    }

    /// The entries of directory `dir`, `.` and `..` excluded, sorted by name.
    pub fn list(&self, dir: NodeId) -> Res<Vec<(Vec<u8>, NodeId)>> {
        Ok(self.entries(dir)?.iter().map(|(n, &i)| (n.clone(), i)).collect())
    }

    /// Every path reachable from the root (the root itself as the empty
    /// path) with its kind, names as lossy UTF-8.
    pub fn paths(&self) -> Vec<(Vec<String>, Kind)> {
        let mut out = vec![(Vec::new(), Kind::Dir)];
        let mut i = 0;
        while i < out.len() {
            let (path, kind): (Vec<String>, Kind) = out[i].clone();
            i += 1;
            if kind != Kind::Dir {
                continue;
            }
            let Ok(dir) = self.walk(&path.iter().map(|c| c.as_bytes().to_vec()).collect::<Vec<_>>()) else {
                continue;
            };
            for (name, id) in self.entries(dir).into_iter().flatten() {
                if let Some(node) = self.nodes.get(id) {
                    let mut p = path.clone();
                    p.push(String::from_utf8_lossy(name).into_owned());
                    out.push((p, node.kind()));
                }
            }
        }
        out
    }

    /// The parent (`..`) of directory `dir`.
    pub fn parent_of(&self, dir: NodeId) -> Res<NodeId> {
        match &self.get(dir)?.body {
            Body::Dir { parent, .. } => Ok(*parent),
            _ => Err(libc::ENOTDIR),
        }
    }

    /// Looks up `name` in directory `dir`.
    pub fn lookup(&self, dir: NodeId, name: &[u8]) -> Res<NodeId> {
        check_name(name)?;
        let entries = self.entries(dir)?;
        match name {
            b"." => Ok(dir),
            b".." => self.parent_of(dir),
            _ => entries.get(name).copied().ok_or(libc::ENOENT),
        }
    }

    /// Walks `path` from the root as the kernel's path walk would (no symlink
    /// is followed): ENOTDIR through a non-directory, ENOENT for a missing name.
    pub fn walk(&self, path: &[Vec<u8>]) -> Res<NodeId> {
        let mut at = ROOT;
        for name in path {
            at = self.lookup(at, name)?;
        }
        Ok(at)
    }

    /// Walks to the parent of the last component of `path`, which must be a
    /// directory (ENOTDIR); returns it and the last name.
    pub fn walk_parent<'p>(&self, path: &'p [Vec<u8>]) -> Res<(NodeId, &'p [u8])> {
        let (last, dirs) = path.split_last().ok_or(libc::ENOENT)?;
        let parent = self.walk(dirs)?;
        self.entries(parent)?;
        Ok((parent, last))
    }

    fn alloc(&mut self, body: Body, perm: u32, nlink: u32) -> NodeId {
        let id = self.next;
        self.next += 1;
        self.nodes
            .insert(id, Node { body, perm, nlink, xattrs: Vec::new(), open: 0, allocated: BTreeSet::new() });
        id
    }

    /// Frees `id` if it has neither links nor handles.
    fn maybe_free(&mut self, id: NodeId) {
        if self.nodes.get(&id).is_some_and(|n| n.nlink == 0 && n.open == 0) {
            self.nodes.remove(&id);
        }
    }

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
        if target.len() > self.limits.block_size {
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

    fn file(&self, id: NodeId) -> Res<&Vec<u8>> {
        match &self.get(id)?.body {
            Body::File(d) => Ok(d),
            Body::Dir { .. } => Err(libc::EISDIR),
            Body::Symlink(_) => Err(libc::EINVAL),
        }
    }

    fn file_mut(&mut self, id: NodeId) -> Res<&mut Vec<u8>> {
        match &mut self.get_mut(id)?.body {
            Body::File(d) => Ok(d),
            Body::Dir { .. } => Err(libc::EISDIR),
            Body::Symlink(_) => Err(libc::EINVAL),
        }
    }

    /// Reads up to `len` bytes at `offset`.
    pub fn read(&self, id: NodeId, offset: u64, len: usize) -> Res<Vec<u8>> {
        let data = self.file(id)?;
        let start = (offset as usize).min(data.len());
        let end = start.saturating_add(len).min(data.len());
        Ok(data[start..end].to_vec())
    }

    /// Clears set-user-ID, and set-group-ID when group-execute is set, as
    /// POSIX asks when a file is written or truncated (and Linux on
    /// fallocate).
    fn kill_privileges(&mut self, id: NodeId) -> Res<()> {
        let node = self.get_mut(id)?;
        node.perm &= !libc::S_ISUID;
        if node.perm & libc::S_IXGRP != 0 {
            node.perm &= !libc::S_ISGID;
        }
        Ok(())
    }

    /// The block numbers `offset .. end` touches.
    fn blocks_of(&self, offset: u64, end: u64) -> std::ops::Range<u64> {
        let bs = self.limits.block_size as u64;
        offset / bs..end.div_ceil(bs)
    }

    /// Writes `bytes` at `offset`; returns the count.
    pub fn write(&mut self, id: NodeId, offset: u64, bytes: &[u8]) -> Res<usize> {
        self.file(id)?;
        if bytes.is_empty() {
            return Ok(0);
        }
        self.kill_privileges(id)?;
        let touched = self.blocks_of(offset, offset + bytes.len() as u64);
        self.get_mut(id)?.allocated.extend(touched);
        let data = self.file_mut(id)?;
        let end = offset as usize + bytes.len();
        if data.len() < end {
            data.resize(end, 0);
        }
        data[offset as usize..end].copy_from_slice(bytes);
        Ok(bytes.len())
    }

    /// Sets the size of a regular file.
    pub fn truncate(&mut self, id: NodeId, size: u64) -> Res<()> {
        self.file_mut(id)?.resize(size as usize, 0);
        let kept = self.blocks_of(0, size).end;
        self.get_mut(id)?.allocated.retain(|&b| b < kept);
        self.kill_privileges(id)
    }

    /// Sets the permission bits.
    pub fn chmod(&mut self, id: NodeId, perm: u32) -> Res<()> {
        self.get_mut(id)?.perm = perm & 0o7777;
        Ok(())
    }

    /// `fallocate` with `mode` as in Linux: 0 and KEEP_SIZE allocate,
    /// PUNCH_HOLE|KEEP_SIZE punches, ZERO_RANGE (|KEEP_SIZE) zeroes.
    pub fn fallocate(&mut self, id: NodeId, offset: u64, len: u64, mode: i32) -> Res<()> {
        let keep = libc::FALLOC_FL_KEEP_SIZE;
        let allocate = mode & !keep == 0;
        let punch = mode == libc::FALLOC_FL_PUNCH_HOLE | keep;
        let zero = mode & !keep == libc::FALLOC_FL_ZERO_RANGE;
        let (collapse, insert) = (libc::FALLOC_FL_COLLAPSE_RANGE, libc::FALLOC_FL_INSERT_RANGE);
        if mode == collapse || mode == insert {
            return self.shift(id, offset, len, mode == collapse);
        }
        if mode & (collapse | insert) != 0 {
            return Err(libc::EINVAL);
        }
        if !(allocate || punch || zero) {
            return Err(libc::EOPNOTSUPP);
        }
        let data = self.file_mut(id)?;
        if len == 0 {
            return Err(libc::EINVAL);
        }
        let end = offset.checked_add(len).ok_or(libc::EFBIG)? as usize;
        if punch || zero {
            let stop = end.min(data.len());
            if (offset as usize) < stop {
                data[offset as usize..stop].fill(0);
            }
        }
        if !punch && mode & keep == 0 && end > data.len() {
            data.resize(end, 0);
        }
        let touched = self.blocks_of(offset, end as u64);
        let bs = self.limits.block_size as u64;
        let allocated = &mut self.get_mut(id)?.allocated;
        if punch {
            // Blocks wholly inside the range go; the partial ones at its
            // ends are zeroed in place.
            let whole = offset.div_ceil(bs)..end as u64 / bs;
            allocated.retain(|b| !whole.contains(b));
        } else {
            allocated.extend(touched);
        }
        self.kill_privileges(id)
    }

    /// `fallocate`'s COLLAPSE_RANGE (`collapse`) or INSERT_RANGE: the bytes
    /// of `offset .. offset + len` go, or that many zeros come in, and
    /// what follows moves; whole blocks only, inside the file.
    fn shift(&mut self, id: NodeId, offset: u64, len: u64, collapse: bool) -> Res<()> {
        if len == 0 {
            return Err(libc::EINVAL);
        }
        let size = self.file(id)?.len() as u64;
        let end = offset.checked_add(len).ok_or(libc::EFBIG)?;
        let bs = self.limits.block_size as u64;
        if !offset.is_multiple_of(bs) || !len.is_multiple_of(bs) {
            return Err(libc::EINVAL);
        }
        if (collapse && end >= size) || (!collapse && offset >= size) {
            return Err(libc::EINVAL);
        }
        let (first, shift) = (offset / bs, len / bs);
        let data = self.file_mut(id)?;
        let blocks_after = if collapse {
            data.drain(offset as usize..end as usize);
            (size - len).div_ceil(bs)
        } else {
            data.splice(offset as usize..offset as usize, std::iter::repeat_n(0, len as usize));
            u64::MAX
        };
        let node = self.get_mut(id)?;
        node.allocated = std::mem::take(&mut node.allocated)
            .into_iter()
            .filter_map(|b| match b {
                b if b < first => Some(b),
                b if collapse && b < first + shift => None,
                b if collapse => Some(b - shift),
                b => Some(b + shift),
            })
            .filter(|&b| b < blocks_after)
            .collect();
        self.kill_privileges(id)
    }

    fn xattr_room(&self, attrs: &[(Vec<u8>, Vec<u8>)]) -> usize {
        16 + attrs.iter().map(|(n, v)| 5 + n.len() + v.len()).sum::<usize>()
    }

    /// Sets an extended attribute (`flags`: XATTR_CREATE / XATTR_REPLACE).
    /// All of a node's attributes must fit in one block (ENOSPC otherwise).
    pub fn setxattr(&mut self, id: NodeId, name: &[u8], value: &[u8], flags: i32) -> Res<()> {
        check_xattr_name(name)?;
        if value.len() > XATTR_VALUE_MAX {
            return Err(libc::E2BIG);
        }
        if flags & !(XATTR_CREATE | XATTR_REPLACE) != 0 {
            return Err(libc::EINVAL);
        }
        let mut attrs = self.get(id)?.xattrs.clone();
        match attrs.iter_mut().find(|(n, _)| n == name) {
            Some(_) if flags & XATTR_CREATE != 0 => return Err(libc::EEXIST),
            Some((_, v)) => *v = value.to_vec(),
            None if flags & XATTR_REPLACE != 0 => return Err(libc::ENODATA),
            None => attrs.push((name.to_vec(), value.to_vec())),
        }
        if self.xattr_room(&attrs) > self.limits.block_size {
            return Err(libc::ENOSPC);
        }
        self.get_mut(id)?.xattrs = attrs;
        Ok(())
    }

    /// The value of an extended attribute.
    pub fn getxattr(&self, id: NodeId, name: &[u8]) -> Res<Vec<u8>> {
        check_xattr_name(name)?;
        let node = self.get(id)?;
        node.xattrs.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone()).ok_or(libc::ENODATA)
    }

    /// The names of all extended attributes, each followed by NUL, in order.
    pub fn listxattr(&self, id: NodeId) -> Res<Vec<u8>> {
        let mut out = Vec::new();
        for (n, _) in &self.get(id)?.xattrs {
            out.extend_from_slice(n);
            out.push(0);
        }
        Ok(out)
    }

    /// Removes an extended attribute.
    pub fn removexattr(&mut self, id: NodeId, name: &[u8]) -> Res<()> {
        check_xattr_name(name)?;
        let node = self.get_mut(id)?;
        let i = node.xattrs.iter().position(|(n, _)| n == name).ok_or(libc::ENODATA)?;
        node.xattrs.remove(i);
        Ok(())
    }

    /// Opens a handle on `id` (keeps it alive after its last name goes).
    pub fn open(&mut self, id: NodeId) -> Res<()> {
        self.get_mut(id)?.open += 1;
        Ok(())
    }

    /// Closes a handle on `id`; frees it if that was the last thing holding it.
    pub fn close(&mut self, id: NodeId) -> Res<()> {
        let node = self.get_mut(id)?;
        node.open = node.open.saturating_sub(1);
        self.maybe_free(id);
        Ok(())
    }

    /// Closes every handle (what an unmount does to them).
    pub fn close_all(&mut self) {
        let ids: Vec<NodeId> = self.nodes.keys().copied().collect();
        for id in ids {
            if let Some(n) = self.nodes.get_mut(&id) {
                n.open = 0;
            }
            self.maybe_free(id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model() -> Model {
        Model::new(Limits { block_size: 4096 })
    }

    #[test]
    fn rename_of_a_directory_moves_its_dotdot_and_link_counts() {
        let mut m = model();
        let a = m.mkdir(ROOT, b"a", 0o755).expect("mkdir a");
        let b = m.mkdir(ROOT, b"b", 0o755).expect("mkdir b");
        let c = m.mkdir(a, b"c", 0o755).expect("mkdir c");
        assert_eq!(m.node(a).expect("a").nlink, 3);
        m.rename(a, b"c", b, b"c", false, false).expect("rename");
        assert_eq!(m.parent_of(c), Ok(b));
        assert_eq!(m.node(a).expect("a").nlink, 2);
        assert_eq!(m.node(b).expect("b").nlink, 3);
        assert_eq!(m.rename(ROOT, b"b", c, b"x", false, false), Err(libc::EINVAL));
        assert_eq!(m.rename(ROOT, b"a", ROOT, b"b", false, false), Err(libc::ENOTEMPTY));
    }

    #[test]
    fn an_open_file_outlives_its_last_name() {
        let mut m = model();
        let f = m.create_file(ROOT, b"f", 0o644).expect("create");
        m.write(f, 10, b"xy").expect("write");
        m.open(f).expect("open");
        m.unlink(ROOT, b"f").expect("unlink");
        assert_eq!(m.read(f, 0, 100).expect("read").len(), 12);
        m.close(f).expect("close");
        assert!(m.node(f).is_none());
    }
}
