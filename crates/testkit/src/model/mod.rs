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
//!
//! Files: this one holds the types, the lookups and open handles; `names.rs` the
//! namespace operations, `data.rs` files' contents, `xattr.rs` extended
//! attributes.

mod data;
mod names;
mod xattr;

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
