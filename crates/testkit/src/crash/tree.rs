//! The oracle model: [`Tree`], the namespace and contents after each
//! primitive operation (a workload's run keeps one per step), with the path
//! helpers [`parent_of`] and [`name_of`].

use super::op::Op;
use super::pattern;
use fslab::format::inode::kind;
use fslab::format::Ino;
use std::collections::BTreeMap;

/// A model node's identity (never reused within a run).
pub type NodeId = usize;

/// What a model node holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Body {
    /// A regular file's bytes.
    File(Vec<u8>),
    /// A directory (its entries are the paths under it in [`Tree::names`]).
    Dir,
    /// A symbolic link's target.
    Symlink(Vec<u8>),
}

impl Body {
    /// The `format::inode::kind` bits of this body.
    pub fn kind(&self) -> u32 {
        match self {
            Body::File(_) => kind::REG,
            Body::Dir => kind::DIR,
            Body::Symlink(_) => kind::LNK,
        }
    }
}

/// A model node: contents and the inode number the file system gave it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// Contents.
    pub body: Body,
    /// Inode number (0 while generating, before any file system is asked).
    pub ino: Ino,
}

/// The oracle model: every path (the root excluded) and the node it names.
/// Cloned after every primitive operation of a run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tree {
    /// Path → node.
    pub names: BTreeMap<String, NodeId>,
    /// Live nodes.
    pub nodes: BTreeMap<NodeId, Node>,
    next: NodeId,
}

/// The directory part of `path` (`""` for a name in the root).
pub fn parent_of(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(p, _)| p)
}

/// The last component of `path`.
pub fn name_of(path: &str) -> &str {
    path.rsplit_once('/').map_or(path, |(_, n)| n)
}

impl Tree {
    /// The node `path` names, if any.
    pub fn node_at(&self, path: &str) -> Option<(NodeId, &Node)> {
        let id = *self.names.get(path)?;
        self.nodes.get(&id).map(|n| (id, n))
    }

    pub(super) fn is_dir(&self, path: &str) -> bool {
        path.is_empty() || matches!(self.node_at(path), Some((_, Node { body: Body::Dir, .. })))
    }

    fn children(&self, dir: &str) -> Vec<String> {
        self.names.keys().filter(|p| parent_of(p) == dir && !p.is_empty()).cloned().collect()
    }

    fn add(&mut self, path: &str, body: Body) -> Result<NodeId, String> {
        if !self.is_dir(parent_of(path)) {
            return Err(format!("{path}: parent is not a directory"));
        }
        if self.names.contains_key(path) {
            return Err(format!("{path}: exists"));
        }
        let id = self.next;
        self.next += 1;
        self.nodes.insert(id, Node { body, ino: 0 });
        self.names.insert(path.to_string(), id);
        Ok(id)
    }

    /// Removes the name `path`; frees its node if no other name is left.
    fn drop_name(&mut self, path: &str) {
        if let Some(id) = self.names.remove(path) {
            if !self.names.values().any(|&v| v == id) {
                self.nodes.remove(&id);
            }
        }
    }

    fn file_mut(&mut self, path: &str) -> Result<&mut Vec<u8>, String> {
        let id = *self.names.get(path).ok_or_else(|| format!("{path}: absent"))?;
        match self.nodes.get_mut(&id) {
            Some(Node { body: Body::File(data), .. }) => Ok(data),
            _ => Err(format!("{path}: not a file")),
        }
    }

    /// Applies `op`; returns the node it created, if any. An error means the
    /// operation is not valid here (the generator drops such workloads).
    pub fn apply(&mut self, op: &Op) -> Result<Option<NodeId>, String> {
        match op {
            Op::Create(p) => self.add(p, Body::File(Vec::new())).map(Some),
            Op::Mkdir(p) => self.add(p, Body::Dir).map(Some),
            Op::Symlink(p, t) => self.add(p, Body::Symlink(t.as_bytes().to_vec())).map(Some),
            Op::Write { path, offset, len, tag } => {
                let data = self.file_mut(path)?;
                let end = *offset as usize + len;
                if data.len() < end {
                    data.resize(end, 0);
                }
                data[*offset as usize..end].copy_from_slice(&pattern(*tag, *offset, *len));
                Ok(None)
            }
            Op::Truncate(p, size) => {
                self.file_mut(p)?.resize(*size as usize, 0);
                Ok(None)
            }
            Op::Link(from, to) => {
                let (id, node) = self.node_at(from).ok_or_else(|| format!("{from}: absent"))?;
                if node.body == Body::Dir {
                    return Err(format!("{from}: a directory"));
                }
                if !self.is_dir(parent_of(to)) || self.names.contains_key(to.as_str()) {
                    return Err(format!("{to}: exists or no parent"));
                }
                self.names.insert(to.clone(), id);
                Ok(None)
            }
            Op::Unlink(p) | Op::UnlinkOpen(p) => match self.node_at(p) {
                Some((_, n)) if n.body != Body::Dir => {
                    self.drop_name(p);
                    Ok(None)
                }
                _ => Err(format!("{p}: absent or a directory")),
            },
            Op::Rmdir(p) => {
                if !self.is_dir(p) || p.is_empty() || !self.children(p).is_empty() {
                    return Err(format!("{p}: not an empty directory"));
                }
                self.drop_name(p);
                Ok(None)
            }
            Op::Rename(from, to) => self.rename(from, to).map(|()| None),
        }
    }

    fn rename(&mut self, from: &str, to: &str) -> Result<(), String> {
        let (id, node) = self.node_at(from).ok_or_else(|| format!("{from}: absent"))?;
        let from_dir = node.body == Body::Dir;
        if from == to || to.starts_with(&format!("{from}/")) || !self.is_dir(parent_of(to)) {
            return Err(format!("rename {from} -> {to}: not allowed"));
        }
        if let Some((_, target)) = self.node_at(to) {
            let to_dir = target.body == Body::Dir;
            if from_dir != to_dir || (to_dir && !self.children(to).is_empty()) {
                return Err(format!("rename {from} -> {to}: target of the wrong kind or not empty"));
            }
            self.drop_name(to);
        }
        self.names.remove(from);
        self.names.insert(to.to_string(), id);
        if from_dir {
            let prefix = format!("{from}/");
            let moved: Vec<(String, NodeId)> = self
                .names
                .iter()
                .filter(|(p, _)| p.starts_with(&prefix))
                .map(|(p, &v)| (p.clone(), v))
                .collect();
            for (p, v) in moved {
                self.names.remove(&p);
                self.names.insert(format!("{to}/{}", &p[prefix.len()..]), v);
            }
        }
        Ok(())
    }

    /// The namespace: path → (type bits, inode number).
    pub fn namespace(&self) -> BTreeMap<String, (u32, Ino)> {
        self.names
            .iter()
            .filter_map(|(p, id)| self.nodes.get(id).map(|n| (p.clone(), (n.body.kind(), n.ino))))
            .collect()
    }
}
