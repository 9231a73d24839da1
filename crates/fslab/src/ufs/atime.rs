//! Access times: when a read or a directory listing updates a node's atime
//! (the mount options `noatime`, `relatime`, `strictatime`, `nodiratime`).
//!
//! The update is an ordinary change of the inode, written lazily with the
//! next checkpoint (LFS) or inode write (FFS), never forced to disk by
//! itself. As Linux's `touch_atime`, it cannot fail the read that caused
//! it: an update that finds no room (ENOSPC) is skipped.

use super::FileSystem;
use crate::format::inode::InodeAttr;
use crate::format::{Ino, TimeNs};
use crate::storage::{StorageManager, TxKind};

/// When reads update the access time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AtimePolicy {
    /// Never (`noatime`).
    Never,
    /// When the access time is not after the last change of the contents
    /// or the inode, or is a day old (`relatime`, Linux's default).
    Relative,
    /// On every read (`strictatime`).
    Always,
}

/// How reads update access times: the policy, and whether directory
/// listings count as reads (`diratime`; `nodiratime`).
///
/// A new [`FileSystem`] starts with [`AtimeOptions::NOATIME`], so that a
/// program using the library pays for no inode writes it did not ask for;
/// `fslab mount` sets [`AtimeOptions::RELATIME`] unless told otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AtimeOptions {
    /// When reads update the access time.
    pub policy: AtimePolicy,
    /// Whether listing a directory updates its access time.
    pub directories: bool,
}

impl AtimeOptions {
    /// Reads never update access times.
    pub const NOATIME: AtimeOptions = AtimeOptions { policy: AtimePolicy::Never, directories: true };
    /// Linux's default: `relatime`, directories included.
    pub const RELATIME: AtimeOptions = AtimeOptions { policy: AtimePolicy::Relative, directories: true };
}

impl Default for AtimeOptions {
    fn default() -> AtimeOptions {
        AtimeOptions::NOATIME
    }
}

/// A day in nanoseconds: `relatime` updates an access time at least this
/// often.
const DAY_NS: TimeNs = 24 * 60 * 60 * 1_000_000_000;

/// Whether a read at `now` updates the access time of `attr` under
/// `policy` (Linux's `atime_needs_update` and `relatime_need_update`).
pub(super) fn needs_update(policy: AtimePolicy, attr: &InodeAttr, now: TimeNs) -> bool {
    match policy {
        AtimePolicy::Never => false,
        AtimePolicy::Always => attr.atime != now,
        AtimePolicy::Relative => {
            attr.atime <= attr.mtime || attr.atime <= attr.ctime || now.saturating_sub(attr.atime) >= DAY_NS
        }
    }
}

impl<S: StorageManager> FileSystem<S> {
    /// Notes a read of `ino` (a directory listing if `directory`): updates
    /// its access time as the options say. Failures are not the reader's.
    pub(super) fn accessed(&mut self, ino: Ino, directory: bool) {
        let options = self.state.atime;
        if options.policy == AtimePolicy::Never || (directory && !options.directories) {
            return;
        }
        let Ok(inode) = self.storage.vget(ino) else { return };
        let now = self.storage.now();
        if !needs_update(options.policy, &inode.attr, now) {
            return;
        }
        let _ = self.tx(TxKind::SetAttr, |ns| ns.modify(ino, |a| a.atime = now).map(|_| ()));
    }

    /// How reads update access times.
    pub fn atime_options(&self) -> AtimeOptions {
        self.state.atime
    }

    /// Changes how reads update access times; takes effect at once.
    pub fn set_atime_options(&mut self, options: AtimeOptions) {
        self.state.atime = options;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attr(atime: TimeNs, mtime: TimeNs, ctime: TimeNs) -> InodeAttr {
        InodeAttr { atime, mtime, ctime, ..InodeAttr::default() }
    }

    #[test]
    fn relatime_updates_after_a_change_or_a_day_and_not_otherwise() {
        let now = 10 * DAY_NS;
        let r = AtimePolicy::Relative;
        assert!(needs_update(r, &attr(5, 5, 1), now), "atime == mtime");
        assert!(needs_update(r, &attr(5, 6, 1), now), "modified since the last access");
        assert!(needs_update(r, &attr(5, 1, 5), now), "inode changed since the last access");
        assert!(!needs_update(r, &attr(now - 1, 5, 5), now), "read a moment ago");
        assert!(!needs_update(r, &attr(now - DAY_NS + 1, 5, 5), now), "not quite a day");
        assert!(needs_update(r, &attr(now - DAY_NS, 5, 5), now), "a day old");
        assert!(needs_update(AtimePolicy::Always, &attr(now - 1, 5, 5), now));
        assert!(!needs_update(AtimePolicy::Always, &attr(now, 5, 5), now), "already now");
        assert!(!needs_update(AtimePolicy::Never, &attr(5, 6, 6), now));
    }
}
