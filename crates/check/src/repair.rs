//! Repair: apply the [`Fix`]es a check planned, then check again.
//!
//! LFS repairs entirely through the library (mount the image with `Lfs`,
//! change it with `ufs::FileSystem`'s operations and its `repair_*`
//! helpers, unmount with a clean checkpoint); FFS first writes what only
//! fsck can (`ffs::repair`), then uses the same namespace repairs
//! ([`apply_namespace`]).
//!
//! LFS rounds, at most [`MAX_ROUNDS`]: check → apply → check. Within a round:
//! 1. live-byte counts, right after mount and before anything is written, so
//!    they describe the state they were counted from; if mounting rolled the
//!    log forward (a new checkpoint), nothing is applied and the next round
//!    checks the new state;
//! 2. the namespace ([`apply_namespace`]): unreadable directory chunks, then
//!    the later entries of a name listed twice, then other entries (remove,
//!    retarget), then orphans (free) and unreachable inodes
//!    (into `/lost+found`); link counts only in a round without those steps,
//!    since they change the counts (the next round recounts them);
//! 3. superblock copies are all rewritten by the unmount.
//!
//! An inode failing only its checksum is sealed again, one that cannot be
//! found where the inode map says is cleared (its entries go in the next
//! round, as entries naming a free inode). A block pointer the log cannot
//! back is cleared (a hole); a block or inode the log no longer confirms
//! because its summary is lost is written again as it reads. Counts those
//! change (blocks held, live bytes) are set right in the next round. An
//! ifile block, or the inode block of the ifile's inode, is rebuilt and
//! written in place before the mount (`ifile.rs`); a log head whose
//! segment lost a summary moves on to a clean segment before the mount
//! writes anything (`image.rs`). What cannot be fixed here (a block the device
//! cannot read, flags) is left for the final report: exit status 4.

use crate::{check, ffs, layout_of, Fatal, Fix, Layout, Options, Outcome, Repaired, Report, Severity};
use disk::BlockDevice;
use fslab::format::{Ino, ROOT_INO};
use fslab::lfs::layout::Superblock;
use fslab::lfs::{Lfs, MountOptions};
use fslab::storage::StorageManager;
use fslab::ufs::{Creds, FileSystem};
use std::sync::Arc;

/// Check-and-repair rounds before giving up.
pub const MAX_ROUNDS: usize = 4;

const LOST_FOUND: &[u8] = b"lost+found";

/// Checks the image on `dev`; with `options.repair`, repairs what can be
/// repaired and checks again (see the module comment). `progress` receives
/// a line now and then.
pub fn fsck(
    dev: Arc<dyn BlockDevice>,
    options: &Options,
    progress: &mut dyn FnMut(&str),
) -> Result<Outcome, Fatal> {
    let layout = match layout_of(dev.as_ref()) {
        Some(layout) => layout,
        None => check(dev.as_ref(), &Options { repair: false, ..*options }, progress)?.layout,
    };
    if options.repair && options.preen {
        let looking = Options { repair: false, ..*options };
        // A journal's crash is judged after its log is replayed (onto a
        // copy in memory here), as mount and the repair see it: the home
        // blocks alone may show damage the log puts right.
        let first = if layout == Layout::Ffs {
            ffs::fsck(dev.clone(), &looking, progress)?.first
        } else {
            check(dev.as_ref(), &looking, progress)?
        };
        if let Some(why) = not_preenable(&first) {
            let failed = vec![format!("not repaired: {why}; run the repair without -p")];
            return Ok(Outcome { first: first.clone(), last: first, repaired: Vec::new(), failed });
        }
    }
    if layout == Layout::Ffs {
        return ffs::fsck(dev, options, progress);
    }
    let first = check(dev.as_ref(), options, progress)?;
    let mut outcome = Outcome { first: first.clone(), last: first, repaired: Vec::new(), failed: Vec::new() };
    if !options.repair {
        return Ok(outcome);
    }
    for round in 1..=MAX_ROUNDS {
        if outcome.last.is_clean() && outcome.last.pending_reclaim.is_empty() {
            break;
        }
        // A repair can uncover what the first check could not see; preening
        // goes no further than leaks.
        if let Some(why) = options.preen.then(|| not_preenable(&outcome.last)).flatten() {
            outcome.failed.push(format!("not repaired: {why}; run the repair without -p"));
            break;
        }
        let fixes = planned(&outcome.last);
        if fixes.is_empty() {
            break;
        }
        progress(&format!("repair round {round}: {} fixes", fixes.len()));
        let serial = outcome.last.checkpoint_serial;
        let done = apply(dev.clone(), serial, &fixes, &mut outcome);
        outcome.last = check(dev.as_ref(), options, progress)?;
        if done == 0 {
            break;
        }
    }
    if !outcome.last.is_clean() && mark_damaged(dev.clone(), &mut outcome) {
        // The final report shows the mark among what is left.
        outcome.last = check(dev.as_ref(), options, progress)?;
    }
    Ok(outcome)
}

/// How fsck mounts an image to repair it: allowed where an earlier fsck
/// left it marked damaged.
fn repair_mount_options() -> MountOptions {
    MountOptions { cache_bytes: 64 << 20, allow_damaged: true, ..MountOptions::default() }
}

/// Marks an image whose damage the repair could not mend, so that mounts
/// refuse to write to it: a writer would take the space a damaged file may
/// still hold for clean, and write over it. Returns whether it was marked.
fn mark_damaged(dev: Arc<dyn BlockDevice>, outcome: &mut Outcome) -> bool {
    let marked = Lfs::mount(dev, repair_mount_options()).and_then(|mut lfs| {
        lfs.set_damaged(true);
        lfs.unmount()
    });
    match marked {
        Ok(()) => {
            let message = "the image is marked damaged: mounts refuse it until fsck finds it clean";
            note(outcome, None, message.into());
            true
        }
        Err(e) => {
            outcome.failed.push(format!("cannot mark the image damaged: {e}"));
            false
        }
    }
}

/// Why preening must leave `report`'s problems to a person, if it must:
/// damage, or a leak that cannot be repaired.
pub(crate) fn not_preenable(report: &Report) -> Option<String> {
    if let Some(p) = report.problems.iter().find(|p| p.severity == Severity::Damage) {
        return Some(format!("{p}"));
    }
    if let Some(p) = report.problems.iter().find(|p| p.fix.is_none()) {
        return Some(format!("{p}"));
    }
    if report.omitted > 0 {
        return Some(format!("{} more problems than a report holds", report.omitted));
    }
    None
}

/// The fixes of `report`'s problems, each once, in the order found, and
/// the freeing of the orphans pending reclaim.
pub(crate) fn planned(report: &Report) -> Vec<Fix> {
    let mut fixes: Vec<Fix> = Vec::new();
    if !report.pending_reclaim.is_empty() {
        fixes.push(Fix::ReclaimOrphans);
    }
    for fix in report.problems.iter().filter_map(|p| p.fix.clone()) {
        if !fixes.contains(&fix) {
            fixes.push(fix);
        }
    }
    fixes
}

/// Notes a repair made.
pub(crate) fn note(outcome: &mut Outcome, fix: Option<Fix>, message: String) {
    outcome.repaired.push(Repaired { fix, message });
}

/// Applies `fixes` planned from a check of checkpoint `checked_serial`; returns how many steps were made.
fn apply(dev: Arc<dyn BlockDevice>, checked_serial: u64, fixes: &[Fix], outcome: &mut Outcome) -> usize {
    // Before anything mounts: a mount refuses an ifile block that fails
    // its trailer.
    let copies = fslab::lfs::inspect::superblock_copies(dev.as_ref());
    let newest = copies.into_iter().filter_map(|c| c.result.ok()).max_by_key(|s| s.checkpoint.serial);
    let resealed = newest.map_or(0, |sb| write_before_mount(dev.as_ref(), &sb, fixes, outcome));
    let mut lfs = match Lfs::mount(dev, repair_mount_options()) {
        Ok(lfs) => lfs,
        Err(e) => {
            outcome.failed.push(format!("cannot mount the image to repair it: {e}"));
            return 0;
        }
    };
    let mut done = resealed;
    note_orphans(outcome, lfs.orphan_report());
    if lfs.superblock().checkpoint.serial != checked_serial {
        note(outcome, None, "mounting rolled the log forward to a new checkpoint; checking again".into());
        if let Err(e) = lfs.unmount() {
            outcome.failed.push(format!("unmount after roll-forward: {e}"));
        }
        return 1;
    }
    // Before anything this mount writes: the head leaves a segment whose
    // chain of summaries is broken.
    for fix in fixes {
        let Fix::LeaveSegment { segment } = *fix else { continue };
        match lfs.repair_leave_segment(segment) {
            Ok(()) => {
                done += 1;
                note(outcome, Some(fix.clone()), format!("segment {segment}: the log head moved on from it"));
            }
            Err(e) => outcome.failed.push(format!("segment {segment}: moving the log head on: {e}")),
        }
    }
    if fixes.contains(&Fix::ClearDamaged) {
        lfs.set_damaged(false);
        done += 1;
        note(
            outcome,
            Some(Fix::ClearDamaged),
            "the mark of an earlier fsck's unrepaired damage cleared".into(),
        );
    }
    // Below the namespace: each changes the inode map, an inode, a block
    // pointer or a count in memory, written by the segment writer and the
    // unmount's checkpoint.
    for fix in fixes {
        let (subject, applied, what) = match *fix {
            Fix::SetBlocks { ino, blocks } => (
                format!("inode {ino}"),
                lfs.repair_set_blocks(ino, blocks),
                format!("blocks held set to {blocks}"),
            ),
            Fix::SealInode { ino } => {
                (format!("inode {ino}"), lfs.repair_rewrite_inode(ino), "checksum recomputed".to_string())
            }
            Fix::RewriteInode { ino } => (
                format!("inode {ino}"),
                lfs.repair_rewrite_inode(ino),
                "written again at the log's head".to_string(),
            ),
            Fix::ClearInode { ino } => {
                (format!("inode {ino}"), lfs.repair_clear_inode(ino), "cleared".to_string())
            }
            Fix::ClearPointer { ino, lbn } if lbn == fslab::format::blockno::XATTR_LBN => (
                format!("inode {ino}"),
                lfs.free_xattr(ino),
                "its damaged extended attributes dropped".to_string(),
            ),
            Fix::ClearPointer { ino, lbn } => (
                format!("inode {ino}"),
                lfs.repair_clear_pointer(ino, lbn),
                format!("pointer to block {lbn} cleared (a hole now)"),
            ),
            Fix::RewriteBlock { ino, lbn } => (
                format!("inode {ino}"),
                lfs.repair_rewrite_block(ino, lbn),
                format!("block {lbn} written again at the log's head"),
            ),
            Fix::SetLiveBytes { segment, bytes } => (
                format!("segment {segment}"),
                lfs.repair_set_live_bytes(segment, bytes),
                format!("live bytes set to {bytes}"),
            ),
            Fix::RebuildFreeList => (
                "the free-inode list".to_string(),
                lfs.repair_rebuild_free_list(),
                "threaded again through every free inode number".to_string(),
            ),
            Fix::SetSummaryCounts { segment, nsums, ninos } => (
                format!("segment {segment}"),
                lfs.repair_set_summary_counts(segment, nsums, ninos),
                format!("counts set to {nsums} summaries and {ninos} inode blocks"),
            ),
            _ => continue,
        };
        match applied {
            Ok(()) => {
                done += 1;
                note(outcome, Some(fix.clone()), format!("{subject}: {what}"));
            }
            Err(e) => outcome.failed.push(format!("{subject}: {e}")),
        }
    }
    let mut fs = FileSystem::new(lfs);
    done += apply_namespace(&mut fs, fixes, outcome);
    match fs.unmount() {
        Ok(()) => {
            if fixes.contains(&Fix::RewriteSuperblocks) {
                done += 1;
                note(outcome, Some(Fix::RewriteSuperblocks), "every superblock copy rewritten".into());
            }
        }
        Err(e) => outcome.failed.push(format!("unmount after repair: {e}")),
    }
    done
}

/// Recomputes the data checksum of the partial segment whose summary is at
/// `start` over its blocks as they are, and writes the summary again;
/// returns the files with blocks in it.
fn reseal(dev: &dyn BlockDevice, start: fslab::format::Daddr, bs: u64) -> Result<Vec<Ino>, String> {
    use fslab::format::codec::crc32c;
    use fslab::lfs::layout::Summary;
    let mut block = vec![0u8; bs as usize];
    dev.read_at(start.byte_offset(bs), &mut block).map_err(|e| e.to_string())?;
    let mut summary = Summary::decode(&block, start).map_err(|e| e.to_string())?;
    let mut data = vec![0u8; summary.nblocks as usize * bs as usize];
    dev.read_at((start + 1).byte_offset(bs), &mut data).map_err(|e| e.to_string())?;
    summary.data_crc = crc32c(&data);
    let encoded = summary.encode(bs as usize);
    dev.write_at(start.byte_offset(bs), &encoded).map_err(|e| e.to_string())?;
    dev.flush().map_err(|e| e.to_string())?;
    let mut files: Vec<Ino> = summary.finfos.iter().map(|f| f.ino).collect();
    files.sort_unstable();
    files.dedup();
    Ok(files)
}

/// Before the mount: each rebuilt ifile block written in place of the one
/// that failed (`Fix::RewriteIfileBlock`), then every partial segment
/// holding one of them or failing its data checksum (`Fix::ResealPartial`)
/// sealed again over its blocks as they are, once each (a damaged ifile
/// block also fails its partial segment's checksum, so both are usually
/// planned for it). Returns how many steps were made.
fn write_before_mount(dev: &dyn BlockDevice, sb: &Superblock, fixes: &[Fix], outcome: &mut Outcome) -> usize {
    let bs = u64::from(sb.block_size);
    let mut done = 0;
    let mut to_seal = Vec::new();
    for fix in fixes {
        let Fix::RewriteIfileBlock { daddr, partial, ref block } = *fix else { continue };
        match dev.write_at(daddr.byte_offset(bs), block) {
            Ok(()) => {
                done += 1;
                note(outcome, Some(fix.clone()), format!("block {daddr}: rebuilt and written in its place"));
                to_seal.push(partial);
            }
            Err(e) => outcome.failed.push(format!("block {daddr}: writing it again: {e}")),
        }
    }
    let asked: Vec<_> = fixes
        .iter()
        .filter_map(|f| match *f {
            Fix::ResealPartial { start } => Some(start),
            _ => None,
        })
        .collect();
    to_seal.extend(&asked);
    to_seal.sort_unstable();
    to_seal.dedup();
    for start in to_seal {
        let files = match reseal(dev, start, bs) {
            Ok(files) => files,
            Err(e) => {
                outcome.failed.push(format!("partial segment at block {start}: resealing it: {e}"));
                continue;
            }
        };
        if !asked.contains(&start) {
            let message =
                format!("partial segment at block {start}: sealed again over its rebuilt ifile block");
            note(outcome, None, message);
            continue;
        }
        done += 1;
        let which = if files.is_empty() {
            "no file's blocks are among them (inode blocks only)".to_string()
        } else {
            format!("files that may hold damaged bytes: inodes {files:?}")
        };
        note(
            outcome,
            Some(Fix::ResealPartial { start }),
            format!("partial segment at block {start}: data checksum recomputed over its blocks; {which}"),
        );
    }
    done
}

/// Notes what a mount made for a repair did with the orphan list (the
/// mount frees the orphans on it; `Fix::ReclaimOrphans`,
/// `Fix::ClearOrphanList`).
pub(crate) fn note_orphans(outcome: &mut Outcome, report: &fslab::storage::orphans::OrphanReport) {
    if report.reclaimed > 0 {
        let message = format!("{} orphans on the orphan list freed", report.reclaimed);
        note(outcome, Some(Fix::ReclaimOrphans), message);
    }
    if let Some(why) = &report.damage {
        note(outcome, Some(Fix::ClearOrphanList), format!("orphan list emptied ({why})"));
    }
}

/// Which step of [`apply_namespace`] applies `fix`, if any.
fn namespace_step(fix: &Fix) -> Option<usize> {
    match fix {
        Fix::CreateRoot | Fix::ResetChunk { .. } => Some(0),
        // Before the fixes that find an entry by its name: once the later
        // entries under a name are gone, the name says which is meant.
        Fix::RemoveDuplicate { .. } => Some(1),
        Fix::RemoveEntry { .. } | Fix::RetargetEntry { .. } => Some(2),
        Fix::FreeOrphan { .. } | Fix::Reconnect { .. } => Some(3),
        _ => None,
    }
}

/// Whether `fixes` hold a change to the namespace (one that [`apply_namespace`] makes).
pub(crate) fn changes_namespace(fixes: &[Fix]) -> bool {
    fixes
        .iter()
        .any(|f| namespace_step(f).is_some() || matches!(f, Fix::SetNlink { .. } | Fix::ReclaimOrphans))
}

/// Applies the namespace fixes among `fixes` through `fs`, for any layout:
/// a new root and directory chunks, then the later entries of names listed
/// twice, then other entries, then orphans and
/// reconnections; link counts only when none of those ran (they change the
/// counts, and the next round recounts them). Returns how many were made;
/// failures go to `outcome.failed`.
pub(crate) fn apply_namespace<S: StorageManager>(
    fs: &mut FileSystem<S>,
    fixes: &[Fix],
    outcome: &mut Outcome,
) -> usize {
    let mut done = 0;
    let mut lost_found = None;
    for step in 0..4 {
        for fix in fixes.iter().filter(|f| namespace_step(f) == Some(step)) {
            match apply_one(fs, fix, &mut lost_found) {
                Ok(message) => {
                    done += 1;
                    note(outcome, Some(fix.clone()), message);
                }
                Err(e) => outcome.failed.push(e),
            }
        }
    }
    if fixes.iter().any(|f| namespace_step(f).is_some()) {
        return done;
    }
    for fix in fixes {
        if let Fix::SetNlink { ino, nlink } = *fix {
            match fs.repair_set_nlink(ino, nlink) {
                Ok(()) => {
                    done += 1;
                    note(outcome, Some(fix.clone()), format!("inode {ino}: link count set to {nlink}"));
                }
                Err(e) => outcome.failed.push(format!("inode {ino}: setting the link count: {e}")),
            }
        }
    }
    done
}

/// Applies one structural fix; the message says what was done.
fn apply_one<S: StorageManager>(
    fs: &mut FileSystem<S>,
    fix: &Fix,
    lost_found: &mut Option<Result<Ino, String>>,
) -> Result<String, String> {
    let shown = |name: &[u8]| String::from_utf8_lossy(name).into_owned();
    match fix {
        Fix::ResetChunk { dir, offset, parent } => fs
            .repair_reset_chunk(*dir, *offset, *parent)
            .map(|()| format!("directory {dir}: unreadable chunk at byte {offset} emptied"))
            .map_err(|e| format!("directory {dir}: emptying the chunk at byte {offset}: {e}")),
        Fix::RemoveEntry { dir, name } => fs
            .repair_remove_entry(*dir, name)
            .map(|()| format!("directory {dir}: entry '{}' removed", shown(name)))
            .map_err(|e| format!("directory {dir}: removing entry '{}': {e}", shown(name))),
        Fix::RemoveDuplicate { dir, name, offset, ino } => fs
            .repair_remove_entry_at(*dir, name, *offset, *ino)
            .map(|()| format!("directory {dir}: second entry '{}' (naming {ino}) removed", shown(name)))
            .map_err(|e| format!("directory {dir}: removing the second entry '{}': {e}", shown(name))),
        Fix::RetargetEntry { dir, name, ino } => fs
            .repair_retarget_entry(*dir, name, *ino)
            .map(|()| format!("directory {dir}: entry '{}' now names {ino}", shown(name)))
            .map_err(|e| format!("directory {dir}: fixing entry '{}': {e}", shown(name))),
        Fix::FreeOrphan { ino } => fs
            .repair_free_inode(*ino)
            .map(|()| format!("inode {ino}: orphan freed"))
            .map_err(|e| format!("inode {ino}: freeing the orphan: {e}")),
        Fix::Reconnect { ino } => {
            // A disk too full for /lost+found (or for one more entry in
            // it): the root takes what is reconnected, as e2fsck does,
            // rather than the repair ending with the file unnamed and the
            // image marked damaged, which no mount would let the user
            // empty.
            let found = lost_found.get_or_insert_with(|| find_lost_found(fs)).clone();
            let (dir, mut why_root) = match found {
                Ok(dir) => (dir, String::new()),
                Err(why) => (ROOT_INO, why),
            };
            let placed = match reconnect(fs, dir, *ino) {
                Err(e) if e.errno() == libc::ENOSPC && dir != ROOT_INO => {
                    why_root = format!("/lost+found cannot take another entry: {e}");
                    reconnect(fs, ROOT_INO, *ino).map(|name| (ROOT_INO, name))
                }
                other => other.map(|name| (dir, name)),
            };
            match placed {
                Ok((ROOT_INO, name)) => Ok(format!("inode {ino}: moved to /{name} ({why_root})")),
                Ok((_, name)) => Ok(format!("inode {ino}: moved to /lost+found/{name}")),
                Err(e) => Err(format!("inode {ino}: reconnecting it: {e}")),
            }
        }
        Fix::CreateRoot => fs
            .create_root(0o755, Creds::default())
            .map(|_| "made a new, empty root directory".to_string())
            .map_err(|e| format!("making a new root directory: {e}")),
        _ => Err("internal: not a namespace fix".into()),
    }
}

/// `/lost+found`, made if absent. Something else of that name (a file, a
/// link) is kept under another name first, `/lost+found.<inode>`: e2fsck
/// unlinks it, and a repair that stopped there left every unreachable file
/// unreconnected, round after round.
fn find_lost_found<S: StorageManager>(fs: &mut FileSystem<S>) -> Result<Ino, String> {
    match fs.lookup(ROOT_INO, LOST_FOUND) {
        Ok(inode) if inode.attr.is_dir() => Ok(inode.ino),
        Ok(inode) => {
            let kept = format!("lost+found.{}", inode.ino);
            let flags = fslab::ufs::RenameFlags { noreplace: true, ..Default::default() };
            fs.rename(ROOT_INO, LOST_FOUND, ROOT_INO, kept.as_bytes(), flags).map_err(|e| {
                format!("/lost+found is not a directory, and renaming it to /{kept} failed: {e}")
            })?;
            fs.mkdir(ROOT_INO, LOST_FOUND, 0o700, Creds::default())
                .map(|inode| inode.ino)
                .map_err(|e| format!("cannot make /lost+found: {e}"))
        }
        Err(e) if e.errno() == libc::ENOENT => fs
            .mkdir(ROOT_INO, LOST_FOUND, 0o700, Creds::default())
            .map(|inode| inode.ino)
            .map_err(|e| format!("cannot make /lost+found: {e}")),
        Err(e) => Err(format!("cannot look up /lost+found: {e}")),
    }
}

/// Names `ino` `#<ino>` in `dir` (with a suffix if taken); a directory's
/// `..` is pointed at `dir`, whose link count counts it at once: left to
/// the next round, `dir`'s count would be one lower than its names,
/// damage that preening refuses to repair. (The count of the directory
/// `..` named before is left one too high, a leak the next round
/// repairs.) Returns the name used.
fn reconnect<S: StorageManager>(fs: &mut FileSystem<S>, dir: Ino, ino: Ino) -> fslab::Result<String> {
    let mut name = format!("#{ino}");
    let mut added = false;
    for n in 1..100 {
        match fs.repair_add_entry(dir, name.as_bytes(), ino) {
            Ok(()) => {
                added = true;
                break;
            }
            Err(e) if e.errno() == libc::EEXIST => name = format!("#{ino}.{n}"),
            Err(e) => return Err(e),
        }
    }
    if !added {
        return Err(fslab::error::errno(libc::EEXIST, "every name #<inode> and #<inode>.1-98 is taken"));
    }
    if fs.getattr(ino)?.attr.is_dir() {
        fs.repair_retarget_entry(ino, b"..", dir)?;
        let nlink = fs.getattr(dir)?.attr.nlink;
        fs.repair_set_nlink(dir, nlink.saturating_add(1))?;
    }
    Ok(name)
}
