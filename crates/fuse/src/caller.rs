//! Who sent a request, as Linux's rules for clearing set-user-ID and
//! set-group-ID need to know it: whether the caller holds `CAP_FSETID`
//! and whether it is in a file's group.
//!
//! FUSE hands over only the caller's fsuid, fsgid and thread id. With
//! `FUSE_HANDLE_KILLPRIV` the kernel leaves the clearing to fslab, so the
//! rest is read from `/proc/<tid>/status` (`CapEff:` and `Groups:`), and
//! only for a file that has one of the bits to lose; capabilities of a
//! thread in another user namespace do not count. Where that cannot be
//! read (the thread has gone, or its ids no longer match the request's),
//! uid 0 counts as holding `CAP_FSETID` and the fsgid as the only group.

use fslab::ufs::Privilege;

/// `CAP_FSETID`'s bit in a capability set (linux/capability.h).
const CAP_FSETID: u32 = 4;

/// `CAP_SYS_ADMIN`'s bit: what reading `trusted.*` attributes takes.
const CAP_SYS_ADMIN: u32 = 21;

/// The ids a FUSE request carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caller {
    /// fsuid.
    pub uid: u32,
    /// fsgid.
    pub gid: u32,
    /// Thread id (0 for requests the kernel makes on its own).
    pub pid: u32,
}

/// What `/proc/<tid>/status` says of a thread.
#[derive(Debug, Default, PartialEq, Eq)]
struct Status {
    fsuid: Option<u32>,
    fsgid: Option<u32>,
    cap_eff: Option<u64>,
    groups: Vec<u32>,
    /// The thread is known to be in a user namespace other than the
    /// daemon's (`/proc/<tid>/ns/user` differs from ours).
    other_user_namespace: bool,
}

/// Parses the lines of `/proc/<tid>/status` this module needs; the fourth
/// id of `Uid:` and `Gid:` is the file-system id.
fn parse_status(text: &str) -> Status {
    let mut status = Status::default();
    for line in text.lines() {
        let Some((key, value)) = line.split_once(':') else { continue };
        let mut words = value.split_whitespace();
        match key {
            "Uid" => status.fsuid = words.nth(3).and_then(|w| w.parse().ok()),
            "Gid" => status.fsgid = words.nth(3).and_then(|w| w.parse().ok()),
            "CapEff" => status.cap_eff = words.next().and_then(|w| u64::from_str_radix(w, 16).ok()),
            "Groups" => status.groups = words.filter_map(|w| w.parse().ok()).collect(),
            _ => {}
        }
    }
    status
}

/// Whether thread `pid` is in a user namespace other than this process's.
/// False where either cannot be read (an unprivileged daemon may not look
/// at another user's thread): then its status is taken as it is.
fn in_other_user_namespace(pid: u32) -> bool {
    use std::os::unix::fs::MetadataExt;
    let id = |path: &str| std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()));
    match (id(&format!("/proc/{pid}/ns/user")), id("/proc/self/ns/user")) {
        (Some(theirs), Some(ours)) => theirs != ours,
        _ => false,
    }
}

impl Caller {
    /// How Linux's rules see this caller changing a file of group `gid`.
    pub fn privilege(&self, gid: u32) -> Privilege {
        self.judge(self.status(), gid)
    }

    /// Whether the caller holds `CAP_SYS_ADMIN`, which Linux's own file
    /// systems ask before listing `trusted.*` attributes (the kernel checks
    /// it for get and set, but leaves the list to the file system).
    pub fn sys_admin(&self) -> bool {
        self.holds(self.status(), CAP_SYS_ADMIN)
    }

    /// What `/proc/<tid>/status` says now of the thread that sent the
    /// request, if there is one.
    fn status(&self) -> Option<Status> {
        match self.pid {
            0 => None,
            pid => {
                let mut status = parse_status(&std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?);
                status.other_user_namespace = in_other_user_namespace(pid);
                Some(status)
            }
        }
    }

    /// Whether `status` (if it is this caller's) holds capability `cap`;
    /// uid 0 counts as holding every one where it cannot be read.
    fn holds(&self, status: Option<Status>, cap: u32) -> bool {
        match status {
            // Capabilities held in a user namespace of its own (`unshare
            // -Ur`) are not held over this mount's files, whose owners
            // that namespace does not map (Linux's
            // capable_wrt_inode_uidgid): counted, they let "root" there
            // keep a set-user-ID bit a write should clear.
            Some(s) if s.other_user_namespace => false,
            Some(s) if s.fsuid == Some(self.uid) && s.fsgid == Some(self.gid) => {
                s.cap_eff.is_some_and(|caps| caps & (1 << cap) != 0)
            }
            _ => self.uid == 0,
        }
    }

    /// The privilege `status` (if it is this caller's) grants on a file of
    /// group `gid`.
    fn judge(&self, status: Option<Status>, gid: u32) -> Privilege {
        match status {
            // A thread id reused by another thread since the request was
            // sent shows other ids.
            Some(s) if s.fsuid == Some(self.uid) && s.fsgid == Some(self.gid) => {
                let in_group = gid == self.gid || s.groups.contains(&gid);
                Privilege { fsetid: self.holds(Some(s), CAP_FSETID), in_group }
            }
            _ => Privilege { fsetid: self.uid == 0, in_group: gid == self.gid },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STATUS: &str = "Name:\tsh\nUid:\t0\t65534\t65534\t65534\nGid:\t0\t100\t100\t100\n\
        Groups:\t4 24 27 \nCapEff:\t0000000000000000\n";

    #[test]
    fn capabilities_and_groups_come_from_the_status_of_the_thread() {
        let caller = Caller { uid: 65534, gid: 100, pid: 7 };
        let status = parse_status(STATUS);
        assert_eq!(status.groups, vec![4, 24, 27]);
        assert_eq!(caller.judge(Some(parse_status(STATUS)), 24), Privilege { fsetid: false, in_group: true });
        assert_eq!(
            caller.judge(Some(parse_status(STATUS)), 100),
            Privilege { fsetid: false, in_group: true }
        );
        assert_eq!(caller.judge(Some(parse_status(STATUS)), 0), Privilege { fsetid: false, in_group: false });
        let root = STATUS.replace("CapEff:\t0000000000000000", "CapEff:\t000001ffffffffff");
        assert!(caller.judge(Some(parse_status(&root)), 0).fsetid);
    }

    #[test]
    fn sys_admin_is_its_own_bit_of_the_effective_set() {
        let caller = Caller { uid: 65534, gid: 100, pid: 7 };
        assert!(!caller.holds(Some(parse_status(STATUS)), CAP_SYS_ADMIN));
        let admin = STATUS.replace("CapEff:\t0000000000000000", "CapEff:\t0000000000200000");
        assert!(caller.holds(Some(parse_status(&admin)), CAP_SYS_ADMIN));
        assert!(!caller.holds(Some(parse_status(&admin)), CAP_FSETID));
        assert!(!caller.holds(None, CAP_SYS_ADMIN), "not root, nothing read: no capability");
    }

    #[test]
    fn capabilities_held_in_another_user_namespace_do_not_count() {
        let caller = Caller { uid: 65534, gid: 100, pid: 7 };
        let root = STATUS.replace("CapEff:\t0000000000000000", "CapEff:\t000001ffffffffff");
        let mut status = parse_status(&root);
        status.other_user_namespace = true;
        assert_eq!(caller.judge(Some(status), 100), Privilege { fsetid: false, in_group: true });
        let mut status = parse_status(&root);
        status.other_user_namespace = true;
        assert!(!caller.holds(Some(status), CAP_SYS_ADMIN));
        assert!(!in_other_user_namespace(std::process::id()), "this process is in its own namespace");
    }

    #[test]
    fn a_status_of_other_ids_is_not_believed() {
        let caller = Caller { uid: 0, gid: 0, pid: 7 };
        // The status says 65534 and group 24: not this caller's.
        assert_eq!(caller.judge(Some(parse_status(STATUS)), 24), Privilege { fsetid: true, in_group: false });
        assert_eq!(caller.judge(None, 0), Privilege::ROOT);
    }
}
