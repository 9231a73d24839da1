//! The harness's comparisons of state: one node's attributes, a
//! directory's listing, a node's extended attributes, the whole tree, and
//! the inodes in use.

use std::collections::HashMap;
use std::fmt::Write as _;

use fslab::format::Ino;

use super::{first_difference, Harness, Subject};
use crate::model::{Body, NodeId, ROOT};

impl<T: Subject> Harness<T> {
    /// Compares kind, permission bits, nlink and size of node `id`.
    pub(super) fn check_attr(&mut self, id: NodeId) {
        let ino = self.ino(id);
        let Some(node) = self.model.node(id) else { return };
        let (kind, perm, nlink, size) = (node.kind(), node.perm, node.nlink, node.size());
        let attr = match self.fs().getattr(ino) {
            Ok(inode) => inode.attr,
            Err(e) => self.fail(format!("getattr of node {id} (inode {ino}): {e}")),
        };
        let real = (attr.mode & libc::S_IFMT, attr.mode & 0o7777, attr.nlink);
        if real != (kind.mode_bits(), perm, nlink) {
            self.fail(format!(
                "attributes of node {id} (inode {ino}): model kind {kind:?} mode {perm:o} nlink {nlink}, \
                 fslab mode {:o} nlink {}",
                attr.mode, attr.nlink
            ));
        }
        if size.is_some_and(|s| s != attr.size) {
            self.fail(format!("size of node {id} (inode {ino}): model {size:?}, fslab {}", attr.size));
        }
    }

    /// Reads directory `id` in pages of `page` entries and compares it with
    /// the model: every name once, with its kind and inode.
    pub(super) fn check_listing(&mut self, id: NodeId, page: usize) {
        let ino = self.ino(id);
        let mut expected: HashMap<Vec<u8>, (u32, Ino)> = HashMap::new();
        let list = match self.model.list(id) {
            Ok(l) => l,
            Err(e) => self.fail(format!("model listing of {id}: {e}")),
        };
        for (name, child) in list {
            let kind = self.model.node(child).map(|n| n.kind().mode_bits()).unwrap_or(0);
            expected.insert(name, (kind, self.ino(child)));
        }
        let parent = self.model.parent_of(id).unwrap_or(ROOT);
        expected.insert(b".".to_vec(), (libc::S_IFDIR, ino));
        expected.insert(b"..".to_vec(), (libc::S_IFDIR, self.ino(parent)));
        let mut seen: HashMap<Vec<u8>, (u32, Ino)> = HashMap::new();
        let mut offset = 0;
        for _ in 0..100_000 {
            let entries = match self.fs().readdir(ino, offset, page) {
                Ok(e) => e,
                Err(e) => self.fail(format!("readdir of inode {ino} at {offset}: {e}")),
            };
            let Some(last) = entries.last() else { break };
            offset = last.next_offset;
            for e in entries {
                let name = String::from_utf8_lossy(&e.name).into_owned();
                if seen.insert(e.name, (e.kind, e.ino)).is_some() {
                    self.fail(format!("readdir of inode {ino} lists {name:?} twice"));
                }
            }
        }
        if seen != expected {
            let mut diff = String::new();
            for (n, v) in &expected {
                if seen.get(n) != Some(v) {
                    let _ = write!(
                        diff,
                        " {:?}: model {v:?} fslab {:?};",
                        String::from_utf8_lossy(n),
                        seen.get(n)
                    );
                }
            }
            for (n, v) in &seen {
                if !expected.contains_key(n) {
                    let _ = write!(diff, " {:?}: only fslab {v:?};", String::from_utf8_lossy(n));
                }
            }
            self.fail(format!("listing of node {id} (inode {ino}) differs (kind, ino):{diff}"));
        }
        match self.fs().dir_index_matches(ino) {
            Ok(true) => {}
            Ok(false) => self.fail(format!("index of directory {ino} disagrees with its blocks")),
            Err(e) => self.fail(format!("index check of directory {ino}: {e}")),
        }
    }

    /// Compares the xattr names (as sets) and every value of node `id`.
    pub(super) fn check_xattrs(&mut self, id: NodeId) {
        let ino = self.ino(id);
        let Some(node) = self.model.node(id) else { return };
        let attrs = node.xattrs.clone();
        let listed = match self.fs().listxattr(ino) {
            Ok(l) => l,
            Err(e) => self.fail(format!("listxattr of inode {ino}: {e}")),
        };
        let mut real: Vec<&[u8]> = listed.split(|&b| b == 0).filter(|n| !n.is_empty()).collect();
        let mut want: Vec<&[u8]> = attrs.iter().map(|(n, _)| n.as_slice()).collect();
        real.sort_unstable();
        want.sort_unstable();
        if real != want {
            self.fail(format!(
                "xattr names of inode {ino}: model {:?}, fslab {:?}",
                want.iter().map(|n| String::from_utf8_lossy(n)).collect::<Vec<_>>(),
                real.iter().map(|n| String::from_utf8_lossy(n)).collect::<Vec<_>>()
            ));
        }
        for (name, value) in &attrs {
            let r = self.fs().getxattr(ino, name);
            self.compare("getxattr (tree check)", &Ok(value.clone()), &r, |a, b| a == b);
        }
    }

    /// Compares every live node: listings, attributes, contents, targets,
    /// xattrs, and the count of inodes in use.
    pub fn check_tree(&mut self) {
        self.stats.tree_checks += 1;
        let mut ids: Vec<NodeId> = self.model.live().collect();
        ids.sort_unstable();
        self.inos.retain(|id, _| ids.binary_search(id).is_ok());
        for &id in &ids {
            self.check_attr(id);
            self.check_xattrs(id);
            let ino = self.ino(id);
            let Some(node) = self.model.node(id) else { continue };
            match &node.body {
                Body::Dir { .. } => self.check_listing(id, 3),
                Body::File(data) => {
                    let want = data.clone();
                    let got = match self.fs().read(ino, 0, want.len() + 4096) {
                        Ok(g) => g,
                        Err(e) => self.fail(format!("read of node {id} (inode {ino}): {e}")),
                    };
                    if got != want {
                        self.fail(format!(
                            "contents of node {id} (inode {ino}): {}",
                            first_difference(&want, &got)
                        ));
                    }
                }
                Body::Symlink(target) => {
                    let want = target.clone();
                    let r = self.fs().readlink(ino);
                    self.compare("readlink (tree check)", &Ok(want), &r, |a, b| a == b);
                }
            }
        }
        self.check_inode_count();
    }

    /// Checks that the inodes in use are the model's live nodes plus what the
    /// layout keeps for itself (learnt at the first check).
    pub fn check_inode_count(&mut self) {
        let statfs = match self.fs().statfs() {
            Ok(s) => s,
            Err(e) => self.fail(format!("statfs: {e}")),
        };
        let used = statfs.total_inodes as i64 - statfs.free_inodes as i64;
        let offset = used - self.model.live_count() as i64;
        match self.inode_offset {
            None => self.inode_offset = Some(offset),
            Some(o) if o != offset => self.fail(format!(
                "inodes in use: fslab {used}, model {} live nodes (+{o} the layout keeps): an inode leaked or \
                 was freed too soon",
                self.model.live_count()
            )),
            Some(_) => {}
        }
    }
}
