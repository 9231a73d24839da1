//! `fsck --repair` for FFS: what only fsck can change is written directly,
//! as fsck_ffs writes everything; the namespace is then repaired through
//! `ufs::FileSystem<Ffs>`, with the same steps as LFS (`crate::repair`).
//! `docs/design/fsck.md` ("Where repairs are written") gives the reasons.
//!
//! Rounds, at most [`MAX_ROUNDS`]: check (keeping its [`Model`]) → apply →
//! check. Within a round:
//! 1. nothing is written unless every group can be rebuilt; the primary
//!    superblock is marked unclean first, behind a barrier;
//! 2. inodes (cleared, resealed, pointers cleared, sizes and block counts
//!    set) and the indirect blocks whose pointers are cleared, each
//!    encoded by the format's own encoders with its checksum; a barrier;
//! 3. the groups that differ from their rebuilt form, the damaged
//!    superblock copies, then the primary with the groups' totals and,
//!    unless step 4 follows, the clean flag; a barrier;
//! 4. if the namespace needs changes (entries, chunks, lost+found, orphans,
//!    link counts, a new root): mount (unclean: the groups were just
//!    rebuilt), apply them, unmount — which writes the groups and marks the
//!    image clean. Marked clean in step 3, an image whose repair was cut
//!    between the steps mounted with entries naming inodes just cleared.
//!
//! At the end, when rounds ran but problems are left, the clean flag is
//! cleared, so that the image does not mount until they are dealt with,
//! and the image is checked once more for the final report.

use super::{check_keeping_model, InodeRepair, Model};
use crate::repair::{apply_namespace, changes_namespace, note, planned, MAX_ROUNDS};
use crate::{check, Fatal, Fix, Kind, Options, Outcome};
use disk::BlockDevice;
use fslab::ffs::geometry::Geometry;
use fslab::ffs::journal::Replayed;
use fslab::ffs::layout::{SB_CLEAN, SUPERBLOCK_BYTES};
use fslab::ffs::{Ffs, Frag, Integrity, MountOptions, Superblock};
use fslab::format::blockno::{Parent, INDIRECT_SECTOR, POINTER_BYTES};
use fslab::format::inode::{Inode, INODE_SIZE};
use fslab::format::{blockno, now_ns, Daddr, Ino, Lbn};
use fslab::ufs::FileSystem;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Checks the FFS image on `dev` and, with `options.repair`, repairs it
/// (see the module comment).
pub(crate) fn fsck(
    dev: Arc<dyn BlockDevice>,
    options: &Options,
    progress: &mut dyn FnMut(&str),
) -> Result<Outcome, Fatal> {
    // A journal mount's crash is put right by replaying its log, as mount
    // does; a check that may not write replays onto a copy in memory.
    let replayed = replay_journal(&dev, options.repair, progress)?;
    let dev = replayed.as_ref().map_or(dev, |(dev, _)| dev.clone());
    let (mut first, mut model) = check_keeping_model(dev.as_ref(), options, progress)?;
    if replayed.is_some() && !options.repair {
        // After a replay the groups are what the log made them, not stale:
        // a journal's crash needs no repair, so a check that may not mark
        // the image clean does not count its unclean flag as a problem (a
        // repair still rebuilds the totals and marks it clean).
        first.problems.retain(|p| !(p.kind == Kind::Superblock && p.fix == Some(Fix::RebuildGroups)));
    }
    if let Some((_, done)) = &replayed {
        progress(&format!(
            "journal replayed: {} transactions, {} changes ({} revoked), {} blocks written{}",
            done.transactions,
            done.changes,
            done.revoked,
            done.blocks,
            if options.repair { "" } else { " (to a copy in memory: -n writes nothing)" }
        ));
    }
    let mut outcome = Outcome { first: first.clone(), last: first, repaired: Vec::new(), failed: Vec::new() };
    if !options.repair {
        return Ok(outcome);
    }
    let mut tried = false;
    for round in 1..=MAX_ROUNDS {
        let fixes = planned(&outcome.last);
        let Some(m) = model.as_ref() else { break };
        if (outcome.last.is_clean() && outcome.last.pending_reclaim.is_empty()) || fixes.is_empty() {
            break;
        }
        // A repair can uncover what the first check could not see; preening
        // goes no further than leaks.
        if let Some(why) = options.preen.then(|| crate::repair::not_preenable(&outcome.last)).flatten() {
            outcome.failed.push(format!("not repaired: {why}; run the repair without -p"));
            break;
        }
        progress(&format!("repair round {round}: {} fixes", fixes.len()));
        tried = true;
        let done = apply(&dev, m, &fixes, &mut outcome);
        (outcome.last, model) = check_keeping_model(dev.as_ref(), options, progress)?;
        if done == 0 {
            break;
        }
    }
    if tried && !outcome.last.is_clean() && mark_unclean(dev.as_ref()) {
        outcome.last = check(dev.as_ref(), options, progress)?;
    }
    Ok(outcome)
}

/// Whether fsck writes `fix` itself (else it is the namespace's).
fn is_direct(fix: &Fix) -> bool {
    matches!(
        fix,
        Fix::ClearInode { .. }
            | Fix::SealInode { .. }
            | Fix::ClearPointer { .. }
            | Fix::SetSize { .. }
            | Fix::SetBlocks { .. }
            | Fix::RebuildGroups
            | Fix::RestoreSuperblock
            | Fix::RewriteSuperblocks
            | Fix::ClearOrphanList
    )
}

/// One round's repairs (steps 1–4 of the module comment); returns how many
/// were made.
fn apply(dev: &Arc<dyn BlockDevice>, model: &Model, fixes: &[Fix], outcome: &mut Outcome) -> usize {
    let mut done = 0;
    // With namespace repairs to follow, the image is marked clean only by
    // their unmount: marked clean here, a crash between the two would leave
    // a mountable image whose entries name the inodes just cleared.
    let namespace = changes_namespace(fixes);
    if fixes.iter().any(is_direct) {
        let clear_orphans = fixes.contains(&Fix::ClearOrphanList);
        match write_direct(dev.as_ref(), model, clear_orphans, !namespace) {
            Ok(()) => {
                for fix in fixes.iter().filter(|f| is_direct(f)) {
                    done += 1;
                    note(outcome, Some(fix.clone()), describe(fix, model));
                }
            }
            Err(why) => {
                outcome.failed.push(why);
                return done;
            }
        }
    }
    if !namespace {
        return done;
    }
    // The groups were just rebuilt (or were sound): an image left unclean
    // above mounts to have its namespace repaired.
    let options = MountOptions {
        cache_bytes: 64 << 20,
        integrity: Integrity::Async,
        allow_unclean: true,
        ..MountOptions::default()
    };
    let ffs = match Ffs::mount(dev.clone(), options) {
        Ok(ffs) => ffs,
        Err(e) => {
            outcome.failed.push(format!("cannot mount the image to repair its namespace: {e}"));
            return done;
        }
    };
    crate::repair::note_orphans(outcome, ffs.orphan_report());
    done += ffs.orphan_report().reclaimed as usize;
    let mut fs = FileSystem::new(ffs);
    done += apply_namespace(&mut fs, fixes, outcome);
    if let Err(e) = fs.unmount() {
        outcome.failed.push(format!("unmount after repair: {e}"));
    }
    done
}

/// What a direct fix did, for the outcome.
fn describe(fix: &Fix, model: &Model) -> String {
    match fix {
        Fix::ClearInode { ino } => format!("inode {ino}: cleared"),
        Fix::SealInode { ino } => format!("inode {ino}: checksum recomputed"),
        Fix::ClearPointer { ino, lbn } => format!("inode {ino}: pointer to block {lbn} cleared"),
        Fix::SetSize { ino, size } => format!("inode {ino}: size set to {size}"),
        Fix::SetBlocks { ino, blocks } => format!("inode {ino}: blocks held set to {blocks}"),
        Fix::RebuildGroups => "cylinder groups and superblock totals rebuilt; marked clean".into(),
        Fix::RestoreSuperblock => format!(
            "primary superblock restored from the copy in group {}",
            model.from_copy.unwrap_or_default()
        ),
        Fix::RewriteSuperblocks => format!("superblock copies rewritten in groups {:?}", model.bad_copies),
        Fix::ClearOrphanList => "orphan list emptied".into(),
        other => format!("{other:?}"),
    }
}

/// Steps 1–3 of the module comment; with `clear_orphans`, the superblock
/// names no orphan list (its inodes are freed as unreferenced ones).
fn write_direct(
    dev: &dyn BlockDevice,
    model: &Model,
    clear_orphans: bool,
    clean: bool,
) -> Result<(), String> {
    let geo = model.sb.geometry;
    for g in 0..geo.ncg {
        model
            .rebuilt_group(g)
            .map_err(|why| format!("cylinder group {g} cannot be rebuilt ({why}); nothing was written"))?;
    }
    let io = |what: String| move |e: std::io::Error| format!("{what}: {e}");
    // The clean flag goes first: an image whose repair is cut between the
    // steps below (an inode cleared while the entry naming it is not yet
    // removed, a group marking it free) must not mount as if sound.
    let unclean = Superblock { flags: model.sb.flags & !SB_CLEAN, ..model.sb };
    dev.write_at(0, &unclean.encode()).map_err(io("marking the primary superblock unclean".into()))?;
    dev.flush().map_err(io("barrier after marking the image unclean".into()))?;
    write_inodes(dev, &geo, &model.sb.indirect_geometry(), &model.repairs)?;
    dev.flush().map_err(io("barrier after the inodes".into()))?;
    let now = now_ns();
    for g in 0..geo.ncg {
        let mut cg = model.rebuilt_group(g).map_err(|why| format!("cylinder group {g}: {why}"))?;
        let scan = &model.groups[g as usize];
        if scan.on_disk.as_ref().is_ok_and(|old| *old == cg) {
            continue;
        }
        cg.time = now;
        let area = cg.encode(&geo, model.sb.fs_id);
        dev.write_at(geo.byte_offset(geo.cg_addr(g)), &area)
            .map_err(io(format!("writing cylinder group {g}")))?;
    }
    let orphan_head = if clear_orphans { 0 } else { model.sb.orphan_head };
    let sb = Superblock {
        totals: model.totals,
        flags: if clean { model.sb.flags | SB_CLEAN } else { model.sb.flags & !SB_CLEAN },
        time: now,
        orphan_head,
        ..model.sb
    };
    let bytes = sb.encode();
    for &g in &model.bad_copies {
        let at = geo.byte_offset(geo.group_base(g));
        dev.write_at(at, &bytes).map_err(io(format!("writing the superblock copy in group {g}")))?;
    }
    dev.flush().map_err(io("barrier before the superblock".into()))?;
    debug_assert_eq!(bytes.len(), SUPERBLOCK_BYTES);
    dev.write_at(0, &bytes).map_err(io("writing the primary superblock".into()))?;
    dev.flush().map_err(io("barrier after the superblock".into()))?;
    Ok(())
}

/// Applies the inode repairs, one inode-table block at a time.
fn write_inodes(
    dev: &dyn BlockDevice,
    geo: &Geometry,
    tree: &blockno::Geometry,
    repairs: &BTreeMap<Ino, InodeRepair>,
) -> Result<(), String> {
    let bs = geo.block_size as usize;
    let mut by_block: BTreeMap<Frag, Vec<(Ino, &InodeRepair)>> = BTreeMap::new();
    for (&ino, r) in repairs {
        by_block.entry(geo.inode_block_addr(ino)).or_default().push((ino, r));
    }
    for (addr, list) in by_block {
        let at = geo.byte_offset(addr);
        let mut block = vec![0u8; bs];
        dev.read_at(at, &mut block).map_err(|e| format!("reading the inode block at {addr}: {e}"))?;
        for (ino, r) in list {
            let offset = geo.inode_offset_in_block(ino);
            let slot = &mut block[offset..offset + INODE_SIZE];
            let old =
                Inode::decode(slot).ok().or_else(|| Inode::decode_unsealed(slot)).filter(|i| i.ino == ino);
            let inode = if r.clear {
                Inode { ino, generation: old.map_or(0, |i| i.generation), ..Inode::default() }
            } else {
                let mut inode = old.ok_or_else(|| format!("inode {ino}: its slot no longer holds it"))?;
                for &(lbn, parent) in &r.clear_pointers {
                    clear_pointer(dev, geo, tree, &mut inode, lbn, parent)?;
                }
                if let Some(size) = r.size {
                    inode.attr.size = size;
                }
                if let Some(blocks) = r.blocks {
                    inode.blocks = blocks;
                }
                inode
            };
            inode.encode(slot).map_err(|e| format!("inode {ino}: {e}"))?;
        }
        dev.write_at(at, &block).map_err(|e| format!("writing the inode block at {addr}: {e}"))?;
    }
    Ok(())
}

/// Clears the pointer to block `lbn` of `inode`: in the inode, or in the
/// indirect block at `parent`, which is sealed again.
fn clear_pointer(
    dev: &dyn BlockDevice,
    geo: &Geometry,
    tree: &blockno::Geometry,
    inode: &mut Inode,
    lbn: Lbn,
    parent: Option<Frag>,
) -> Result<(), String> {
    let ino = inode.ino;
    match (tree.parent(lbn), parent) {
        (Some(Parent::Direct(i)), _) => inode.direct[i] = Daddr::NONE,
        (Some(Parent::Indirect(i)), _) => inode.indirect[i] = Daddr::NONE,
        (Some(Parent::Xattr), _) => inode.xattr = Daddr::NONE,
        (Some(Parent::Meta { meta, index }), Some(addr)) => {
            let at = geo.byte_offset(addr);
            let mut block = vec![0u8; geo.block_size as usize];
            dev.read_at(at, &mut block)
                .map_err(|e| format!("reading indirect block {meta} of inode {ino}: {e}"))?;
            if let Err(e) = tree.check(&block, ino, meta, Daddr::new(addr)) {
                // Sectors that fail their checksums beside ones that pass
                // (phase 1 kept the rest of the tree): their pointers go,
                // every one phase 1 cleared, and the seal below makes the
                // sectors whole again.
                let bad = tree.bad_sectors(&block, ino, meta);
                if bad.is_empty() || bad.len() == block.len() / INDIRECT_SECTOR {
                    return Err(e.to_string());
                }
                for s in bad {
                    block[s * INDIRECT_SECTOR..(s + 1) * INDIRECT_SECTOR - 4].fill(0);
                }
            }
            let at_pointer = tree.pointer_offset(index);
            block[at_pointer..at_pointer + POINTER_BYTES].fill(0);
            tree.seal(&mut block, ino, meta);
            dev.write_at(at, &block)
                .map_err(|e| format!("writing indirect block {meta} of inode {ino}: {e}"))?;
        }
        _ => return Err(format!("inode {ino}: no pointer to block {lbn} to clear")),
    }
    Ok(())
}

/// Clears the primary superblock's clean flag, if it decodes and has it;
/// returns whether it was written.
fn mark_unclean(dev: &dyn BlockDevice) -> bool {
    let mut bytes = vec![0u8; SUPERBLOCK_BYTES];
    if dev.read_at(0, &mut bytes).is_err() {
        return false;
    }
    let Ok(sb) = Superblock::decode(&bytes, 0) else { return false };
    if sb.flags & SB_CLEAN == 0 {
        return false;
    }
    let sb = Superblock { flags: sb.flags & !SB_CLEAN, ..sb };
    dev.write_at(0, &sb.encode()).is_ok() && dev.flush().is_ok()
}

/// The device a replay wrote to (the image, or an overlay of it in memory)
/// and what the replay did.
type ReplayedOnto = (Arc<dyn BlockDevice>, Replayed);

/// Replays the journal of the FFS on `dev` if a journal mount's crash left
/// it to replay: onto `dev` when `write`, else onto an overlay in memory.
/// Returns the device to check then, and what the replay did. A device
/// error stops fsck, as it stops the mount: a replay cut short by one,
/// then repaired and marked clean, would drop the rest of a log whose
/// transactions were durable. A log whose records are damaged leaves the
/// image to the check, as `docs/FORMAT.md` says, and fsck says so.
fn replay_journal(
    dev: &Arc<dyn BlockDevice>,
    write: bool,
    progress: &mut dyn FnMut(&str),
) -> Result<Option<ReplayedOnto>, Fatal> {
    let Ok(sb) = fslab::ffs::mkfs::read_superblock(dev.as_ref()) else { return Ok(None) };
    if !fslab::ffs::journal::needs_replay(&sb) {
        return Ok(None);
    }
    let target: Arc<dyn BlockDevice> =
        if write { dev.clone() } else { Arc::new(disk::ReadOnlyOverlay::new(dev.clone())) };
    match fslab::ffs::journal::replay(target.as_ref(), &sb) {
        Ok(done) => Ok(Some((target, done))),
        Err(fslab::Error::Io(e)) => Err(Fatal::Io(e)),
        Err(e) => {
            progress(&format!("journal not replayed ({e}): checking the image as it is"));
            Ok(None)
        }
    }
}
