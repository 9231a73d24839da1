//! One crash state checked against what the workload was promised
//! ([`check_state`], checks 1-7 of the module map): the namespace is that
//! of some prefix of the workload, files covered by a persistence point
//! hold their contents, no file shows data it was not given, renames are
//! atomic, fsck finds nothing, and a second power cut changes nothing.

use super::mount_options;
use super::observe::{namespace_text, walk, Observed};
use super::op::Op;
use super::record::Recorded;
use super::tree::{Body, Node, NodeId, Tree};
use super::workload::{Persist, Step};
use disk::{BlockDevice, CrashDisk, MemDisk};
use fslab::format::inode::kind;
use fslab::lfs::Lfs;
use fslab::ufs::FileSystem;
use std::collections::BTreeSet;
use std::sync::Arc;

/// What checking one crash state did.
#[derive(Debug, Clone, Copy, Default)]
pub struct Checked {
    /// What the mount's roll-forward applied and discarded.
    pub recovery: fslab::lfs::Recovery,
    /// Images after a second power cut (during or after the recovery mount
    /// and its unmount) checked.
    pub second_crashes: usize,
}

/// Mounts one crash state, unmounts it cleanly and checks it (module doc,
/// items 1-6).
///
/// When `second > 0` and the mount recovered something (applied or
/// discarded partial segments), it also checks item 7: the image after
/// that unmount, and up to `second` images a second power cut during the
/// recovery mount or the unmount could leave, mount again and show exactly
/// the tree the first recovery found (recovery is idempotent, a crash
/// inside it loses nothing, its log is not confused with log from before
/// the first crash), and items 3-6 hold on them after a clean unmount.
///
/// `disk` is the crash image (taken, not copied); `cut` its cut; `seed`
/// picks the second crashes.
pub fn check_state(
    rec: &Recorded,
    disk: MemDisk,
    cut: usize,
    second: usize,
    seed: u64,
) -> Result<Checked, String> {
    // Record the mount's writes only when second crashes are wanted.
    let (crash, dev): (Option<CrashDisk>, Arc<dyn BlockDevice>) = if second > 0 {
        let crash = CrashDisk::over(disk);
        (Some(crash.clone()), Arc::new(crash))
    } else {
        (None, Arc::new(disk))
    };
    let lfs = Lfs::mount(dev.clone(), mount_options()).map_err(|e| format!("mount failed: {e}"))?;
    let recovery = lfs.recovery();
    let mut fs = FileSystem::new(lfs);
    let seen = walk(&mut fs)?;
    fs.unmount().map_err(|e| format!("unmount after recovery failed: {e}"))?;
    drop(fs);
    check_image(rec, cut, dev.as_ref(), &seen)?;
    let crash = crash.filter(|_| recovery.applied > 0 || recovery.discarded > 0);
    let Some(crash) = crash else { return Ok(Checked { recovery, second_crashes: 0 }) };
    // The image after the clean unmount, then a sample of power cuts during
    // the mount and the unmount (the base image, the state already checked,
    // left out).
    let end = crash.events();
    let after_unmount =
        crash.crash_image(end, &disk::CrashChoice::AllPersisted).map_err(|e| e.to_string())?;
    let mut seconds =
        vec![(format!("none: the image after recovery and a clean unmount (cut {end})"), after_unmount)];
    seconds.extend(
        crash
            .crash_states(second + 1, seed)
            .filter(|s| s.cut > 0 && s.cut < end)
            .take(second)
            .map(|s| (s.description, s.disk)),
    );
    let second_crashes = seconds.len();
    for (description, disk) in seconds {
        let context =
            |e: String| format!("after recovery and a second power cut: {e} [second cut: {description}]");
        let dev: Arc<dyn BlockDevice> = Arc::new(disk);
        let lfs =
            Lfs::mount(dev.clone(), mount_options()).map_err(|e| context(format!("mount failed: {e}")))?;
        let mut fs = FileSystem::new(lfs);
        let seen_again = walk(&mut fs).map_err(context)?;
        fs.unmount().map_err(|e| context(format!("unmount failed: {e}")))?;
        drop(fs);
        if seen_again.namespace != seen.namespace {
            return Err(context(format!(
                "the second mount found namespace {}, the first {}",
                namespace_text(&seen_again.namespace),
                namespace_text(&seen.namespace)
            )));
        }
        if let Some((ino, a)) = seen.inodes.iter().find(|(ino, a)| seen_again.inodes.get(ino) != Some(a)) {
            return Err(context(format!(
                "inode #{ino} differs: first mount {} (nlink {}), second {:?}",
                describe(&a.data),
                a.nlink,
                seen_again.inodes.get(ino).map(|b| (describe(&b.data), b.nlink))
            )));
        }
        check_image(rec, cut, dev.as_ref(), &seen_again).map_err(context)?;
    }
    Ok(Checked { recovery, second_crashes })
}

/// Items 3-6 on an image mounted, walked and unmounted cleanly.
fn check_image(rec: &Recorded, cut: usize, dev: &dyn BlockDevice, seen: &Observed) -> Result<(), String> {
    check_renames(rec, seen)?;
    check_namespace(rec, cut, seen)?;
    check_contents(rec, cut, seen)?;
    check_fsck(dev)
}

/// Rename atomicity, checked on its own for a clearer report (item 3
/// implies it): after a rename of a name that existed at setup, when no other
/// operation of the workload touches either name, the target names the old or the new inode,
/// never nothing, and the renamed inode keeps one of its two names.
fn check_renames(rec: &Recorded, seen: &Observed) -> Result<(), String> {
    let ops: Vec<&Op> =
        rec.steps.iter().filter_map(|s| if let Step::Op(op) = s { Some(op) } else { None }).collect();
    for (i, op) in ops.iter().enumerate() {
        let Op::Rename(from, to) = op else { continue };
        let (before, after) = (&rec.states[i], &rec.states[i + 1]);
        if !rec.states[0].names.contains_key(from.as_str()) && !rec.states[0].names.contains_key(to.as_str())
        {
            continue;
        }
        let touched =
            |p: &str| ops.iter().enumerate().any(|(j, other)| j != i && other.to_string().contains(p));
        if touched(from) || touched(to) {
            continue;
        }
        let Some((_, moved)) = before.node_at(from) else { continue };
        let old_target = before.node_at(to).map(|(_, n)| n.ino);
        let new_target = after.node_at(to).map(|(_, n)| n.ino);
        let found_to = seen.namespace.get(to.as_str()).map(|&(_, ino)| ino);
        let found_from = seen.namespace.get(from.as_str()).map(|&(_, ino)| ino);
        if old_target.is_some() && found_to.is_none() {
            return Err(format!(
                "{op} not atomic: {to} names nothing; expected the old inode #{} or the new #{}",
                old_target.unwrap_or(0),
                new_target.unwrap_or(0)
            ));
        }
        if found_to.is_some() && found_to != old_target && found_to != new_target {
            return Err(format!(
                "{op} not atomic: {to} names #{}, expected {old_target:?} or {new_target:?}",
                found_to.unwrap_or(0)
            ));
        }
        if found_from != Some(moved.ino) && found_to != Some(moved.ino) {
            return Err(format!(
                "{op} not atomic: inode #{} lost both names ({from} names {found_from:?}, {to} names {found_to:?})",
                moved.ino
            ));
        }
    }
    Ok(())
}

/// Item 3: the namespace is the one after some prefix of the operations,
/// not older than the latest acknowledged persistence point.
fn check_namespace(rec: &Recorded, cut: usize, seen: &Observed) -> Result<(), String> {
    let floor = rec.points.iter().filter(|p| p.events <= cut).map(|p| p.state).max().unwrap_or(0);
    let found = &seen.namespace;
    if rec.states[floor..].iter().any(|s| &s.namespace() == found) {
        return Ok(());
    }
    let older = rec.states[..floor].iter().position(|s| &s.namespace() == found);
    let mut msg = match older {
        Some(k) => format!(
            "namespace went back to the state after op {k}, older than the acknowledged state after op {floor}:"
        ),
        None => format!("namespace is not the one after any prefix of the ops (at least op {floor}):"),
    };
    for (k, s) in rec.states.iter().enumerate().skip(floor) {
        msg.push_str(&format!("\n    expected after op {k}: {}", namespace_text(&s.namespace())));
    }
    msg.push_str(&format!("\n    found: {}", namespace_text(found)));
    Err(msg)
}

/// Items 4 and 5: contents of every file found, against the model.
fn check_contents(rec: &Recorded, cut: usize, seen: &Observed) -> Result<(), String> {
    // Which model node each inode is: the namespace matched some state; a
    // freed inode number may be reused, so several states (with different
    // nodes at one path) can match, and any of them may explain the file.
    let matching: Vec<&Tree> = rec.states.iter().filter(|s| s.namespace() == seen.namespace).collect();
    if matching.is_empty() {
        return Ok(()); // reported by check_namespace
    }
    for (path, &(kd, ino)) in &seen.namespace {
        let Some(s) = seen.inodes.get(&ino) else { continue };
        let mut first_error = None;
        let mut explained = false;
        let mut ids = BTreeSet::new();
        for state in matching.iter().rev() {
            let Some((id, node)) = state.node_at(path) else { continue };
            if !ids.insert(id) {
                continue;
            }
            let result = match (&node.body, kd) {
                (Body::Symlink(target), kind::LNK) if &s.data != target => Err(format!(
                    "symlink /{path} points at {:?}, made pointing at {:?}",
                    String::from_utf8_lossy(&s.data),
                    String::from_utf8_lossy(target)
                )),
                (Body::File(_), kind::REG) => check_file(rec, cut, path, id, &s.data),
                _ => Ok(()),
            };
            match result {
                Ok(()) => {
                    explained = true;
                    break;
                }
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        if !explained {
            if let Some(e) = first_error {
                return Err(e);
            }
        }
    }
    Ok(())
}

/// The contents node `id` had in each state where it lived, by state index.
fn versions(rec: &Recorded, id: NodeId) -> Vec<(usize, &[u8])> {
    rec.states
        .iter()
        .enumerate()
        .filter_map(|(k, s)| match s.nodes.get(&id) {
            Some(Node { body: Body::File(d), .. }) => Some((k, d.as_slice())),
            _ => None,
        })
        .collect()
}

fn describe(data: &[u8]) -> String {
    let mut runs: Vec<String> = Vec::new();
    let mut i = 0;
    while i < data.len() && runs.len() < 8 {
        let zero = data[i] == 0;
        let start = i;
        while i < data.len() && (data[i] == 0) == zero {
            i += 1;
        }
        runs.push(format!("{}..{} {}", start, i, if zero { "zeros" } else { "data" }));
    }
    if i < data.len() {
        runs.push("…".into());
    }
    format!("{} bytes [{}]", data.len(), runs.join(", "))
}

fn check_file(rec: &Recorded, cut: usize, path: &str, id: NodeId, data: &[u8]) -> Result<(), String> {
    let all = versions(rec, id);
    // Item 5: sizes and bytes it was given.
    if !all.iter().any(|(_, v)| v.len() == data.len()) {
        let sizes: BTreeSet<usize> = all.iter().map(|(_, v)| v.len()).collect();
        return Err(format!("/{path} has size {} but only ever had sizes {sizes:?}", data.len()));
    }
    for (o, &b) in data.iter().enumerate() {
        if b != 0 && !all.iter().any(|(_, v)| v.get(o) == Some(&b)) {
            return Err(format!(
                "/{path} shows byte {b:#04x} at offset {o} that no write put there (data it was not given); \
                 found {}",
                describe(data)
            ));
        }
    }
    // Item 4: the newest acknowledged point that covers this file.
    let covering = rec
        .points
        .iter()
        .filter(|p| p.events <= cut)
        .filter(|p| p.persist == Persist::Sync || p.node == Some(id))
        .map(|p| (p.state, p))
        .max_by_key(|(s, _)| *s);
    let Some((from, point)) = covering else { return Ok(()) };
    let later: Vec<&(usize, &[u8])> = all.iter().filter(|(k, _)| *k >= from).collect();
    if later.len() != rec.states.len() - from {
        return Ok(()); // freed at some later step: the name checks cover it
    }
    if later.iter().any(|(_, v)| *v == data) {
        return Ok(());
    }
    let mut msg = format!(
        "/{path} lost data made durable by {} (after op {from}); found {}",
        if point.step.is_none() { "the setup sync".to_string() } else { point.persist.to_string() },
        describe(data)
    );
    for (k, v) in later {
        let first = v.iter().zip(data).position(|(a, b)| a != b).unwrap_or(v.len().min(data.len()));
        msg.push_str(&format!("\n    allowed (after op {k}): {}, first difference at {first}", describe(v)));
    }
    Err(msg)
}

/// Item 6: fsck on the image after recovery and a clean unmount.
fn check_fsck(dev: &dyn BlockDevice) -> Result<(), String> {
    crate::subject::fsck_clean(dev, false).map_err(|e| format!("after recovery and a clean unmount, {e}"))
}
