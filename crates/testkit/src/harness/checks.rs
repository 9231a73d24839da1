//! The harness's comparisons of state: one node's attributes, a
//! directory's listing, a node's extended attributes, the whole tree, and
//! the inodes in use.

use std::collections::HashMap;
use std::fmt::Write as _;

use fslab::format::Ino;
use fslab::ufs::Access;

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

    /// Compares what the calls that answer from memory, holding the file
    /// system shared, say of node `id` (where they answer at all) with the
    /// model: its listing, its attributes, its contents, its extended
    /// attributes and one it lacks, and a lookup of each of its names and of
    /// a name it lacks. They run with nothing else in between,
    /// so they must agree exactly.
    fn check_cached(&mut self, id: NodeId) {
        let ino = self.ino(id);
        let Some(node) = self.model.node(id) else { return };
        let (mode, nlink, size) = (node.kind().mode_bits() | node.perm, node.nlink, node.size());
        let contents = match &node.body {
            Body::File(data) => Some(data.clone()),
            _ => None,
        };
        let is_dir = matches!(node.body, Body::Dir { .. });
        let names = if is_dir { self.model.list(id).unwrap_or_default() } else { Vec::new() };
        let mut answers = [0; 5];
        if is_dir {
            if let Some(listed) = self.fs().readdir_cached(ino, 0, usize::MAX) {
                answers[3] += 1;
                let mut listed: Vec<(Vec<u8>, Ino)> = listed.into_iter().map(|e| (e.name, e.ino)).collect();
                let parent = self.ino(self.model.parent_of(id).unwrap_or(ROOT));
                let mut want: Vec<(Vec<u8>, Ino)> =
                    names.iter().map(|(n, child)| (n.clone(), self.ino(*child))).collect();
                want.extend([(b".".to_vec(), ino), (b"..".to_vec(), parent)]);
                listed.sort();
                want.sort();
                if listed != want {
                    self.fail(format!(
                        "cached listing of node {id} (inode {ino}): {listed:?}, model {want:?}"
                    ));
                }
            }
        }
        if let Some(inode) = self.fs().getattr_cached(ino) {
            answers[0] += 1;
            let a = inode.attr;
            if (a.mode, a.nlink) != (mode, nlink) || size.is_some_and(|s| s != a.size) {
                self.fail(format!(
                    "cached attributes of node {id} (inode {ino}): mode {:o} nlink {} size {}, model mode {mode:o} \
                     nlink {nlink} size {size:?}",
                    a.mode, a.nlink, a.size
                ));
            }
        }
        if let Some(want) = contents {
            if let Some(got) = self.fs().read_cached(ino, 0, want.len() + 4096, Access::NoAtime) {
                answers[2] += 1;
                if got != want {
                    self.fail(format!(
                        "cached contents of node {id} (inode {ino}): {}",
                        first_difference(&want, &got)
                    ));
                }
            }
        }
        let xattrs = self.model.node(id).map(|n| n.xattrs.clone()).unwrap_or_default();
        for (name, value) in
            xattrs.iter().map(|(n, v)| (&n[..], Some(v))).chain([(&b"user.not-in-the-model"[..], None)])
        {
            if let Some(found) = self.fs().getxattr_cached(ino, name) {
                answers[4] += 1;
                let agrees = match (&found, value) {
                    (Ok(got), Some(want)) => got == want,
                    (Err(e), None) => e.errno() == libc::ENODATA,
                    _ => false,
                };
                if !agrees {
                    self.fail(format!(
                        "cached xattr {:?} of node {id} (inode {ino}): {found:?}, model {value:?}",
                        String::from_utf8_lossy(name)
                    ));
                }
            }
        }
        // Checking mode (the model's subjects run in it) leaves every
        // lookup to the exclusive call, which scans: off for these.
        let dirhash = self.fs().dirhash_options();
        self.fs().set_dirhash_options(fslab::ufs::DirhashOptions { check: false, ..dirhash });
        for (name, child) in names {
            let want = self.ino(child);
            if let Some(found) = self.fs().lookup_cached(ino, &name) {
                answers[1] += 1;
                if !matches!(&found, Ok(inode) if inode.ino == want) {
                    self.fail(format!(
                        "cached lookup of {:?} in node {id} (inode {ino}): {found:?}, model inode {want}",
                        String::from_utf8_lossy(&name)
                    ));
                }
            }
        }
        if let Some(found) = self.fs().lookup_cached(ino, b"no such name in the model") {
            answers[1] += 1;
            if found.as_ref().err().map(|e| e.errno()) != Some(libc::ENOENT) {
                self.fail(format!("cached lookup of an absent name in node {id} (inode {ino}): {found:?}"));
            }
        }
        self.fs().set_dirhash_options(dirhash);
        for (total, n) in self.stats.cached_answers.iter_mut().zip(answers) {
            *total += n;
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
            self.check_cached(id);
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
