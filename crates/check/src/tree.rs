//! The namespace phases, the same for both layouts (fsck's phases II–IV in
//! Table 2 of the 1993 paper): every directory's chunks parse; the first
//! two entries are `.` (itself) and `..` (its parent); every entry names an
//! allocated inode of the type the entry says; every inode is reachable
//! from the root; every link count equals the entries naming the inode (for
//! a directory: its name, its `.`, and its subdirectories' `..`, i.e. 2 +
//! subdirectories); no name is listed twice in one directory (a torn
//! directory write can leave two entries `foo`; e2fsck's "Duplicate entry").
//!
//! Of a name listed twice the first entry, in directory order, is the one
//! checked and kept; each later one is reported and left out of everything
//! else (counts, reachability), as if already removed — which its repair
//! does — so what it named, unless named elsewhere, is planned for
//! `/lost+found` in the same round like any unreachable inode, and its
//! link count comes out right.
//!
//! Unreachable inodes are planned for repair as fsck does: a detached
//! directory tree is reconnected at its top (found by following `..` while
//! the parent really names the child), an inode with no links that no entry
//! names — unlinked while open, then a crash — is freed, and any other
//! unreachable inode is reconnected into `/lost+found`.
//!
//! A layout's checker offers what these phases read through [`Namespace`]:
//! the inodes and directory blocks its inode phase found, and what an
//! entry's inode number names. [`check_tree`] runs the phases.

use crate::{Fix, Kind, Report, Severity};
use fslab::format::dirent::{dt, dt_from_mode, parse_chunk, DIRBLKSIZ};
use fslab::format::inode::kind;
use fslab::format::{Daddr, Ino, ROOT_INO};
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};

/// An allocated inode as a layout's inode phase left it for the namespace
/// phases.
#[derive(Debug, Clone, Copy)]
pub(crate) struct InodeInfo {
    pub mode: u32,
    pub nlink: u32,
    pub size: u64,
    /// 512-byte units held (as the inode will record them after repair).
    pub blocks: u64,
    /// False if the inode could not be read: entries naming it are left alone.
    pub readable: bool,
    /// The next inode on the orphan list (0: none).
    pub next_orphan: Ino,
}

/// What an entry's inode number names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Target {
    /// An allocated inode (see [`Namespace::inodes`] for whether it is readable).
    Allocated,
    /// A free inode: the entry is removed.
    Free,
    /// A number no inode can have: the entry is removed.
    Impossible,
    /// Unknown (the structure that says is unreadable): nothing is said.
    Unknown,
}

/// What the namespace phases need from a layout's checker.
pub(crate) trait Namespace {
    /// Bytes per block (a directory is whole blocks).
    fn block_size(&self) -> usize;
    /// The allocated inodes the inode phase found.
    fn inodes(&self) -> &HashMap<Ino, InodeInfo>;
    /// Each directory's data blocks the inode phase found, (lbn, address).
    fn dir_blocks(&self) -> &HashMap<Ino, Vec<(u64, Daddr)>>;
    /// Reads the directory block at `addr`, which the inode phase checked.
    fn read_dir_block(&self, addr: Daddr) -> std::io::Result<Vec<u8>>;
    /// What an entry naming `ino` names.
    fn target(&self, ino: Ino) -> Target;
    /// The repair for a missing root directory, if the layout can make one.
    fn root_fix(&self) -> Option<Fix>;
    /// Whether a directory block missing from [`dir_blocks`](Self::dir_blocks)
    /// is a hole that repair may fill with empty chunks. (LFS leaves out
    /// blocks its summaries do not confirm, which are not holes.)
    fn fills_directory_holes(&self) -> bool;
    /// Whether an unreachable regular file that holds nothing (size 0, no
    /// blocks) is freed whatever its link count. FFS: it is what a create
    /// interrupted between writing the inode and writing its entry leaves
    /// (fsck_ffs clears it in preen mode rather than reconnecting it); LFS
    /// writes a create atomically, so there it means damage.
    fn frees_empty_files(&self) -> bool;
    /// Whether `ino` is on a sound orphan list (see `orphans`): pending
    /// reclaim, not damage, when it has no links and no name.
    fn on_orphan_list(&self, ino: Ino) -> bool;
    /// The label of these phases in progress messages.
    fn phase_label(&self) -> &'static str;
    /// Where problems and counts go.
    fn report_mut(&mut self) -> &mut Report;
    /// Reports progress: `done` of `total` in `phase`.
    fn tick(&mut self, phase: &str, done: u64, total: u64);
}

/// Runs the namespace phases over `ns` (see the module comment).
pub(crate) fn check_tree(ns: &mut impl Namespace) {
    Tree { ns }.check_tree();
}

/// The namespace phases over one layout's checker.
struct Tree<'n, N: Namespace> {
    ns: &'n mut N,
}

/// Holes of one directory that repair fills with empty chunks, at most.
const MAX_HOLE_BLOCKS: usize = 64;

/// What the chunks of one directory hold.
#[derive(Default)]
struct DirData {
    dot: Option<Ino>,
    dotdot: Option<Ino>,
    /// Inodes named by entries other than `.` and `..` (allocated ones
    /// only), with the entries' names.
    children: Vec<(Ino, Vec<u8>)>,
    /// Chunks that do not parse, or lie in a hole: byte offset, why, and
    /// whether it is a hole.
    bad_chunks: Vec<(u64, String, bool)>,
    /// The inodes named by later entries under a name an earlier entry
    /// holds: named, so reconnected rather than freed however empty.
    duplicates: Vec<Ino>,
}

impl<N: Namespace> Tree<'_, N> {
    /// Records a problem that is damage ([`Severity::Damage`]).
    fn damage(&mut self, kind: Kind, ino: Option<Ino>, message: String, fix: Option<Fix>) {
        self.ns.report_mut().push(Severity::Damage, kind, ino, message, fix);
    }

    /// Records a problem that is a leak ([`Severity::Leak`]).
    fn leak(&mut self, kind: Kind, ino: Option<Ino>, message: String, fix: Option<Fix>) {
        self.ns.report_mut().push(Severity::Leak, kind, ino, message, fix);
    }

    /// A directory rename cut short: a moved directory named in both its
    /// old and its new parent, or named only in one while its `..` still
    /// names the other. No order of the rename's writes avoids both (two
    /// directory blocks and the `..` block change), 4.4BSD's sync writes
    /// and soft updates leave them, and the `..` entry or the one name left
    /// says what the repair is, so nothing is guessed or lost (the link
    /// counts rose first). A leak when the image was not unmounted cleanly,
    /// which is when a crash can have left it; damage on a clean image.
    fn interrupted_rename(&mut self, kind: Kind, ino: Option<Ino>, message: String, fix: Option<Fix>) {
        let severity = if self.ns.report_mut().clean_unmount { Severity::Damage } else { Severity::Leak };
        self.ns.report_mut().push(severity, kind, ino, message, fix);
    }

    fn info(&self, ino: Ino) -> Option<InodeInfo> {
        self.ns.inodes().get(&ino).copied()
    }

    fn is_dir(&self, ino: Ino) -> bool {
        self.ns.inodes().get(&ino).is_some_and(|i| i.readable && i.mode & kind::MASK == kind::DIR)
    }

    /// Phase 4 (see the module comment).
    fn check_tree(&mut self) {
        if !self.is_dir(ROOT_INO) {
            self.damage(
                Kind::Directory,
                Some(ROOT_INO),
                "the root inode is missing or not a directory".into(),
                self.ns.root_fix(),
            );
            return;
        }
        let mut refs: HashMap<Ino, u64> = HashMap::new();
        let mut dirs: BTreeMap<Ino, DirData> = BTreeMap::new();
        let mut list: Vec<Ino> = self.ns.dir_blocks().keys().copied().collect();
        list.sort_unstable();
        let total = list.len() as u64;
        for (i, &dir) in list.iter().enumerate() {
            let label = self.ns.phase_label();
            self.ns.tick(label, i as u64, total);
            let data = self.read_dir(dir, &mut refs);
            dirs.insert(dir, data);
        }
        // Walk down from the root; `parent` is where each directory was found.
        let mut parent: HashMap<Ino, Ino> = HashMap::from([(ROOT_INO, ROOT_INO)]);
        let mut reached: HashSet<Ino> = HashSet::from([ROOT_INO]);
        self.reach(ROOT_INO, &dirs, &mut parent, &mut reached);
        for (&dir, data) in &dirs {
            let Some(&p) = parent.get(&dir) else { continue };
            if data.dotdot.is_some_and(|dd| dd != p) {
                let dd = data.dotdot.unwrap_or(0);
                // Found in one parent only (a second name is reported
                // below): the rename moved it and its `..` lags.
                self.interrupted_rename(
                    Kind::Directory,
                    Some(dir),
                    format!("directory {dir}: '..' names {dd}, but the directory is in {p}"),
                    Some(Fix::RetargetEntry { dir, name: b"..".to_vec(), ino: p }),
                );
            }
        }
        for (&dir, data) in &dirs {
            let p = parent.get(&dir).copied().or(data.dotdot).unwrap_or(ROOT_INO);
            for (offset, why, hole) in &data.bad_chunks {
                let offset = *offset;
                let what = match (offset == 0, hole) {
                    (true, _) => "'.' and '..' are rewritten",
                    (false, false) => "its entries are lost",
                    (false, true) => "it held no entries",
                };
                self.damage(
                    Kind::Directory,
                    Some(dir),
                    format!("directory {dir}: {why}; repair empties the chunk ({what})"),
                    Some(Fix::ResetChunk { dir, offset, parent: p }),
                );
            }
        }
        let originally_reached = reached.clone();
        self.plan_unreachable(&dirs, &refs, &mut parent, &mut reached);
        let mut inos: Vec<Ino> = self.ns.inodes().keys().copied().collect();
        inos.sort_unstable();
        for ino in inos {
            let Some(info) = self.info(ino) else { continue };
            if !info.readable || !originally_reached.contains(&ino) {
                continue;
            }
            let expected = refs.get(&ino).copied().unwrap_or(0);
            if info.nlink as u64 != expected {
                // Too high only keeps the inode until fsck: the order of
                // writes that unlinking follows leaves this after a crash.
                // Too low: removing one name would free the inode while
                // another still points at it.
                let severity = if info.nlink as u64 > expected { Severity::Leak } else { Severity::Damage };
                let names = crate::count(expected, "entry", "entries");
                self.ns.report_mut().push(
                    severity,
                    Kind::LinkCount,
                    Some(ino),
                    format!("inode {ino}: link count {} but {names} name it", info.nlink),
                    nlink_fix(ino, expected),
                );
            }
        }
    }

    /// Marks everything reachable from `top` (a directory already in `parent`).
    fn reach(
        &mut self,
        top: Ino,
        dirs: &BTreeMap<Ino, DirData>,
        parent: &mut HashMap<Ino, Ino>,
        reached: &mut HashSet<Ino>,
    ) {
        let mut queue = VecDeque::from([top]);
        while let Some(dir) = queue.pop_front() {
            let Some(data) = dirs.get(&dir) else { continue };
            for (child, name) in &data.children {
                let child = *child;
                if self.is_dir(child) && dirs.contains_key(&child) {
                    if let Some(&first) = parent.get(&child) {
                        // In another directory or in the same one (a
                        // rename within one directory, cut short).
                        self.second_name(child, (dir, name), first, dirs, parent);
                        continue;
                    }
                    parent.insert(child, dir);
                    queue.push_back(child);
                }
                reached.insert(child);
            }
        }
    }

    /// Directory `child`, found in `first`, is named again by entry `name`
    /// of `dir` — as a rename of a directory cut short by a crash leaves it
    /// in FFS, which names the new place, then removes the old name, then
    /// points `..` at the new parent (4.4BSD's order, which soft updates
    /// keep for `..`). So when `..` names one of the two directories, the
    /// name there is the old one, and the repair completes the rename if
    /// the other directory's link count already counts the `..` to come
    /// (a rename raises it first): it keeps the other name (which may have
    /// replaced an empty directory: it must not go) and points `..` at
    /// it. Otherwise (a rename back, cut short) the name where `..` points
    /// stays. When `..` names neither, or both names are in one directory,
    /// the first name found stays.
    fn second_name(
        &mut self,
        child: Ino,
        (dir, name): (Ino, &[u8]),
        first: Ino,
        dirs: &BTreeMap<Ino, DirData>,
        parent: &mut HashMap<Ino, Ino>,
    ) {
        let shown = String::from_utf8_lossy(name).into_owned();
        let dotdot = dirs.get(&child).and_then(|d| d.dotdot);
        let old_name = dirs.get(&first).and_then(|d| d.children.iter().find(|(c, _)| *c == child));
        // The names and `..` entries naming `p`, with its own `.`: the
        // `..` of a directory nothing names (one a rename replaced) does
        // not count, since the repair frees it.
        let named: HashSet<Ino> = dirs.values().flat_map(|d| d.children.iter().map(|&(c, _)| c)).collect();
        let names_of = |p: Ino| -> u64 {
            let own_dot = u64::from(dirs.get(&p).is_some_and(|d| d.dot == Some(p)));
            let entries: u64 = dirs
                .iter()
                .map(|(ino, d)| {
                    let dotdot = d.dotdot == Some(p) && named.contains(ino);
                    d.children.iter().filter(|(c, _)| *c == p).count() as u64 + u64::from(dotdot)
                })
                .sum();
            own_dot + entries
        };
        let counts_one_more = |p: Ino| self.info(p).is_some_and(|i| u64::from(i.nlink) > names_of(p));
        let keep_second = child != ROOT_INO
            && first != dir
            && match dotdot {
                Some(d) if d == first => counts_one_more(dir),
                Some(d) if d == dir => !counts_one_more(first),
                _ => false,
            };
        let (drop_dir, drop_name) = match old_name {
            Some((_, old)) if keep_second => {
                parent.insert(child, dir);
                (first, old.clone())
            }
            _ => (dir, name.to_vec()),
        };
        let dropped = String::from_utf8_lossy(&drop_name).into_owned();
        let message = format!(
            "directory {child} has a second name, '{shown}' in directory {dir} (also in {first}); \
             repair removes '{dropped}' from directory {drop_dir}"
        );
        let fix = Some(Fix::RemoveEntry { dir: drop_dir, name: drop_name });
        // `..` naming one of the two parents says which name is the
        // directory's; naming neither, the repair would guess.
        if child != ROOT_INO && (dotdot == Some(dir) || dotdot == Some(first)) {
            return self.interrupted_rename(Kind::Directory, Some(child), message, fix);
        }
        self.damage(Kind::Directory, Some(child), message, fix);
    }

    /// Reports every unreachable inode with its planned repair.
    fn plan_unreachable(
        &mut self,
        dirs: &BTreeMap<Ino, DirData>,
        refs: &HashMap<Ino, u64>,
        parent: &mut HashMap<Ino, Ino>,
        reached: &mut HashSet<Ino>,
    ) {
        // Entries naming each inode from directories other than itself.
        let named_by_others = |ino: Ino| {
            let own_dot = u64::from(dirs.get(&ino).is_some_and(|d| d.dot == Some(ino)));
            refs.get(&ino).copied().unwrap_or(0).saturating_sub(own_dot)
        };
        // Inodes a removed later entry of a name listed twice names: named
        // until the repair, so moved to /lost+found rather than freed.
        let named_twice: HashSet<Ino> = dirs.values().flat_map(|d| d.duplicates.iter().copied()).collect();
        let unreachable_dirs: Vec<Ino> = dirs.keys().copied().filter(|d| !parent.contains_key(d)).collect();
        for dir in unreachable_dirs {
            if parent.contains_key(&dir) {
                continue;
            }
            let nlink = self.info(dir).map_or(0, |i| i.nlink);
            if nlink == 0
                && named_by_others(dir) == 0
                && !named_twice.contains(&dir)
                && dirs.get(&dir).is_some_and(|d| d.children.is_empty())
            {
                if self.ns.on_orphan_list(dir) {
                    self.ns.report_mut().pending_reclaim.push(dir);
                    parent.insert(dir, dir);
                    continue;
                }
                self.leak(
                    Kind::Unreachable,
                    Some(dir),
                    format!("directory {dir} has no links and no name (removed while in use, then a crash); repair frees it"),
                    Some(Fix::FreeOrphan { ino: dir }),
                );
                parent.insert(dir, dir);
                continue;
            }
            // Climb to the top of the detached tree.
            let mut top = dir;
            let mut seen = HashSet::from([dir]);
            while let Some(up) = dirs.get(&top).and_then(|d| d.dotdot) {
                let names_us = dirs.get(&up).is_some_and(|d| d.children.iter().any(|(c, _)| *c == top));
                if parent.contains_key(&up) || !names_us || !seen.insert(up) {
                    break;
                }
                top = up;
            }
            let message =
                format!("directory {top} is not reachable from the root; repair moves it to /lost+found");
            let fix = Some(Fix::Reconnect { ino: top });
            if named_by_others(top) == 0 {
                // Only its own name is missing, as a crash between writing
                // a new directory and the entry naming it leaves it; the
                // reconnection keeps everything under it.
                self.leak(Kind::Unreachable, Some(top), message, fix);
            } else {
                // Named, yet not reachable: a loop of directories, which
                // no order of writes makes.
                self.damage(Kind::Unreachable, Some(top), message, fix);
            }
            parent.insert(top, top);
            reached.insert(top);
            self.reach(top, dirs, parent, reached);
        }
        let mut inos: Vec<Ino> = self.ns.inodes().keys().copied().collect();
        inos.sort_unstable();
        for ino in inos {
            let Some(info) = self.info(ino) else { continue };
            if !info.readable || reached.contains(&ino) || parent.contains_key(&ino) {
                continue;
            }
            let holds_nothing = info.mode & kind::MASK == kind::REG && info.size == 0 && info.blocks == 0;
            if named_twice.contains(&ino) && named_by_others(ino) == 0 {
                self.leak(
                    Kind::Unreachable,
                    Some(ino),
                    format!(
                        "inode {ino} ({} bytes, {} links) is named only by the second entry of a name listed twice; repair moves it to /lost+found",
                        info.size, info.nlink
                    ),
                    Some(Fix::Reconnect { ino }),
                );
                continue;
            }
            // An inode no entry names is a leak whatever it holds: nothing
            // points at it, so nothing can be misled by it; the repair
            // frees what has no links or no bytes and keeps the rest in
            // /lost+found, so preening loses no byte.
            if named_by_others(ino) == 0 && holds_nothing && info.nlink > 0 && self.ns.frees_empty_files() {
                self.leak(
                    Kind::Unreachable,
                    Some(ino),
                    format!(
                        "inode {ino} is an empty file with {} links and no name (a create cut short by a crash); repair frees it",
                        info.nlink
                    ),
                    Some(Fix::FreeOrphan { ino }),
                );
            } else if info.nlink == 0 && named_by_others(ino) == 0 && self.ns.on_orphan_list(ino) {
                self.ns.report_mut().pending_reclaim.push(ino);
            } else if info.nlink == 0 && named_by_others(ino) == 0 {
                self.leak(
                    Kind::Unreachable,
                    Some(ino),
                    format!(
                        "inode {ino} ({} bytes) has no links and no name (unlinked while open, then a crash); repair frees it",
                        info.size
                    ),
                    Some(Fix::FreeOrphan { ino }),
                );
            } else {
                let message = format!(
                    "inode {ino} ({} bytes, {} links) is not reachable from the root; repair moves it to /lost+found",
                    info.size, info.nlink
                );
                let fix = Some(Fix::Reconnect { ino });
                if named_by_others(ino) == 0 {
                    self.leak(Kind::Unreachable, Some(ino), message, fix);
                } else {
                    self.damage(Kind::Unreachable, Some(ino), message, fix);
                }
            }
        }
    }

    /// Plans empty chunks for the holes of directory `dir` (`nblocks`
    /// long, `present` its blocks in order), at most [`MAX_HOLE_BLOCKS`]
    /// blocks of them; past that the holes are reported, not filled.
    fn plan_hole_fills(&mut self, dir: Ino, nblocks: u64, present: &[(u64, Daddr)], data: &mut DirData) {
        let bs = self.ns.block_size() as u64;
        let mut holes = Vec::new();
        let mut next = 0u64;
        for lbn in present.iter().map(|&(l, _)| l).chain(std::iter::once(nblocks)) {
            while next < lbn && holes.len() <= MAX_HOLE_BLOCKS {
                holes.push(next);
                next += 1;
            }
            next = lbn + 1;
        }
        if holes.len() > MAX_HOLE_BLOCKS {
            let missing = nblocks - present.len() as u64;
            self.damage(
                Kind::Directory,
                Some(dir),
                format!("directory {dir}: {missing} of its {nblocks} blocks are holes, too many to fill"),
                None,
            );
            return;
        }
        for lbn in holes {
            for at in (0..bs).step_by(DIRBLKSIZ) {
                let offset = lbn * bs + at;
                data.bad_chunks.push((
                    offset,
                    format!("block {lbn} is a hole (chunk at byte {offset})"),
                    true,
                ));
            }
        }
    }

    /// Reads and checks every chunk of directory `dir`, counting in `refs`
    /// the entries naming each allocated inode (`.` and `..` included).
    fn read_dir(&mut self, dir: Ino, refs: &mut HashMap<Ino, u64>) -> DirData {
        let mut data = DirData::default();
        // Each name's first entry: the inode it names and its byte offset.
        let mut seen: HashMap<Vec<u8>, (Ino, u64)> = HashMap::new();
        let bs = self.ns.block_size() as u64;
        let size = self.info(dir).map_or(0, |i| i.size);
        let nblocks = size / bs;
        let mut blocks = self.ns.dir_blocks().get(&dir).cloned().unwrap_or_default();
        blocks.sort_unstable();
        blocks.retain(|&(lbn, _)| lbn < nblocks);
        if (blocks.len() as u64) < nblocks && self.ns.fills_directory_holes() {
            self.plan_hole_fills(dir, nblocks, &blocks, &mut data);
        } else if (blocks.len() as u64) < nblocks {
            let missing = nblocks - blocks.len() as u64;
            let first_missing = (0..nblocks)
                .zip(blocks.iter())
                .find(|(l, b)| *l != b.0)
                .map_or(blocks.len() as u64, |(l, _)| l);
            self.damage(
                Kind::Directory,
                Some(dir),
                format!("directory {dir}: {missing} of its {nblocks} blocks are missing (the first is block {first_missing})"),
                None,
            );
        }
        for (lbn, daddr) in blocks {
            let Ok(block) = self.ns.read_dir_block(daddr) else {
                self.damage(
                    Kind::Directory,
                    Some(dir),
                    format!("directory {dir}: block {lbn} cannot be read"),
                    None,
                );
                continue;
            };
            for (i, chunk) in block.chunks_exact(DIRBLKSIZ).enumerate() {
                let offset = lbn * bs + (i * DIRBLKSIZ) as u64;
                match parse_chunk(chunk, dir, offset) {
                    Ok(entries) => {
                        for (k, e) in entries.iter().enumerate() {
                            if e.ino == 0 && !(offset == 0 && k < 2) {
                                continue;
                            }
                            let at = offset + e.offset as u64;
                            if !(offset == 0 && k < 2) && self.is_duplicate(dir, at, e.ino, e.name, &mut seen)
                            {
                                data.duplicates.push(e.ino);
                                continue;
                            }
                            self.check_entry(dir, offset, k, e.ino, e.dtype, e.name, refs, &mut data);
                        }
                        if offset == 0 && entries.len() < 2 {
                            self.damage(
                                Kind::Directory,
                                Some(dir),
                                format!("directory {dir}: no '..' entry"),
                                None,
                            );
                        }
                    }
                    // Reported once parents are known, with the repair.
                    Err(e) => data.bad_chunks.push((offset, e.to_string(), false)),
                }
            }
        }
        data
    }

    /// Whether entry `name` → `target` at byte `at` of `dir` repeats a name
    /// an earlier entry holds (in `seen`, which learns the names first
    /// met); if so, reports it as damage with its removal. `.` and `..`
    /// out of place are left to [`check_entry`](Self::check_entry).
    fn is_duplicate(
        &mut self,
        dir: Ino,
        at: u64,
        target: Ino,
        name: &[u8],
        seen: &mut HashMap<Vec<u8>, (Ino, u64)>,
    ) -> bool {
        if name == b"." || name == b".." {
            return false;
        }
        let Some(&(first, first_at)) = seen.get(name) else {
            seen.insert(name.to_vec(), (target, at));
            return false;
        };
        self.ns.report_mut().counts.entries += 1;
        let shown = String::from_utf8_lossy(name).into_owned();
        self.damage(
            Kind::DirEntry,
            Some(dir),
            format!(
                "directory {dir}: name '{shown}' listed twice, naming {first} (byte {first_at}) and {target} \
                 (byte {at}); repair removes the second entry (what it names, if named nowhere else, goes \
                 to /lost+found)"
            ),
            Some(Fix::RemoveDuplicate { dir, name: name.to_vec(), offset: at, ino: target }),
        );
        true
    }

    #[allow(clippy::too_many_arguments)]
    fn check_entry(
        &mut self,
        dir: Ino,
        offset: u64,
        k: usize,
        target: Ino,
        dtype: u8,
        name: &[u8],
        refs: &mut HashMap<Ino, u64>,
        data: &mut DirData,
    ) {
        self.ns.report_mut().counts.entries += 1;
        let shown = String::from_utf8_lossy(name).into_owned();
        let first_chunk = offset == 0;
        if first_chunk && k == 0 {
            if name != b"." {
                self.damage(
                    Kind::Directory,
                    Some(dir),
                    format!("directory {dir}: first entry is not '.'"),
                    None,
                );
                return;
            }
            data.dot = Some(target);
            if target != dir {
                self.damage(
                    Kind::Directory,
                    Some(dir),
                    format!("directory {dir}: '.' names {target}"),
                    Some(Fix::RetargetEntry { dir, name: b".".to_vec(), ino: dir }),
                );
                return;
            }
            *refs.entry(dir).or_insert(0) += 1;
            return;
        }
        if first_chunk && k == 1 {
            if name != b".." {
                self.damage(
                    Kind::Directory,
                    Some(dir),
                    format!("directory {dir}: second entry is not '..'"),
                    None,
                );
                return;
            }
            data.dotdot = Some(target);
            if self.is_dir(target) {
                *refs.entry(target).or_insert(0) += 1;
            } else if self.info(target).is_none_or(|i| i.readable) {
                // Fixed against the parent found by the walk from the root.
                self.damage(
                    Kind::Directory,
                    Some(dir),
                    format!("directory {dir}: '..' names {target}, not a directory"),
                    None,
                );
            }
            return;
        }
        if name == b"." || name == b".." {
            self.damage(
                Kind::Directory,
                Some(dir),
                format!("directory {dir}: a second '{shown}' entry at byte {offset}"),
                None,
            );
            return;
        }
        let why_bad = match self.ns.target(target) {
            Target::Impossible => Some("an impossible inode number"),
            Target::Free => Some("a free inode"),
            Target::Unknown => return, // what says is unreadable: nothing to say
            Target::Allocated => None,
        };
        if let Some(why) = why_bad {
            self.damage(
                Kind::DirEntry,
                Some(dir),
                format!("directory {dir}: entry '{shown}' names {target}, {why}; repair removes the entry"),
                Some(Fix::RemoveEntry { dir, name: name.to_vec() }),
            );
            return;
        }
        *refs.entry(target).or_insert(0) += 1;
        data.children.push((target, name.to_vec()));
        let Some(info) = self.info(target) else { return };
        if !info.readable {
            return;
        }
        let actual = if info.mode & kind::MASK == kind::DIR { dt::DIR } else { dt_from_mode(info.mode) };
        if dtype != actual {
            self.damage(
                Kind::DirEntry,
                Some(dir),
                format!(
                    "directory {dir}: entry '{shown}' has type {dtype} but inode {target} has type {actual}"
                ),
                Some(Fix::RetargetEntry { dir, name: name.to_vec(), ino: target }),
            );
        }
    }
}

/// The repair for a link count found wrong.
fn nlink_fix(ino: Ino, nlink: u64) -> Option<Fix> {
    u32::try_from(nlink).ok().map(|nlink| Fix::SetNlink { ino, nlink })
}
