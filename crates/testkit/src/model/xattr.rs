//! Extended attributes in the [`Model`]: names checked as Linux and the
//! library check them, and all of a node's attributes in one block.

use super::{Model, NodeId, Res, XATTR_CREATE, XATTR_REPLACE, XATTR_VALUE_MAX};

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
}
