//! Orphans left by a crash: inodes with no name that were still open. Each
//! layout keeps them on an on-disk list (chained through the inodes'
//! `next_orphan`, headed in the LFS checkpoint or the FFS superblock) and
//! frees them at mount with [`reclaim`], which emits the same hint as a
//! last close does, so the layout takes each off its list the way it does
//! at run time.

use super::{free_blocks_in_steps, transaction, Hint, StorageManager, TxKind, TxSpec};
use crate::format::Ino;
use crate::Result;

/// What mount did with the orphan list it found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OrphanReport {
    /// Orphans freed.
    pub reclaimed: u64,
    /// Why the walk of the list stopped early, if it did (a cycle, an inode
    /// that is not an orphan, a number out of range): the inodes past that
    /// point are left for `fslab fsck --repair`.
    pub damage: Option<String>,
}

/// Frees orphan `ino` — its blocks, its extended-attribute block, the
/// inode — in one `Reclaim` transaction (after steps, for a file with more
/// blocks than one may free: [`free_blocks_in_steps`]), as the namespace
/// does at a last close, and waits for it as the storage manager promises
/// it.
pub fn reclaim<S: StorageManager + ?Sized>(storage: &mut S, ino: Ino) -> Result<()> {
    free_blocks_in_steps(storage, ino)?.wait()?;
    let ((), ticket) = transaction(storage, TxSpec::new(TxKind::Reclaim), |s| {
        s.hint(Hint::Reclaimed { ino })?;
        s.free_file(ino)
    })?;
    ticket.wait()
}

/// Follows an orphan list from `head` through `next_of` (which reads an
/// inode's `(link count, next_orphan)`), checking that every inode on it
/// can be read, has no links and appears once. Returns the inodes in list
/// order, and why the walk stopped early if it did.
pub fn walk(head: Ino, mut next_of: impl FnMut(Ino) -> Result<(u32, Ino)>) -> (Vec<Ino>, Option<String>) {
    let mut chain = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut next = head;
    while next != 0 {
        if !seen.insert(next) {
            return (chain, Some(format!("the orphan list loops back to inode {next}")));
        }
        match next_of(next) {
            Err(e) => {
                return (
                    chain,
                    Some(format!("the orphan list names inode {next}, which cannot be read: {e}")),
                )
            }
            Ok((nlink, _)) if nlink != 0 => {
                return (chain, Some(format!("the orphan list names inode {next}, which has {nlink} links")))
            }
            Ok((_, after)) => {
                chain.push(next);
                next = after;
            }
        }
    }
    (chain, None)
}

#[cfg(test)]
mod tests {
    use super::walk;
    use crate::error::errno;

    /// A list given as `(ino, nlink, next)`; any other number is unreadable.
    fn walk_of(head: u64, list: &[(u64, u32, u64)]) -> (Vec<u64>, Option<String>) {
        walk(head, |ino| {
            list.iter()
                .find(|e| e.0 == ino)
                .map(|e| (e.1, e.2))
                .ok_or_else(|| errno(libc::ENOENT, "inode is not allocated"))
        })
    }

    #[test]
    fn a_sound_list_is_followed_to_its_end() {
        assert_eq!(walk_of(0, &[]), (vec![], None));
        assert_eq!(walk_of(5, &[(5, 0, 9), (9, 0, 0)]), (vec![5, 9], None));
    }

    #[test]
    fn a_damaged_list_stops_the_walk_with_the_reason() {
        let (chain, why) = walk_of(5, &[(5, 0, 9), (9, 0, 5)]);
        assert_eq!(chain, vec![5, 9]);
        assert!(why.expect("a cycle").contains("loops back to inode 5"));
        let (chain, why) = walk_of(5, &[(5, 0, 9), (9, 1, 0)]);
        assert_eq!(chain, vec![5]);
        assert!(why.expect("a linked inode").contains("inode 9, which has 1 links"));
        let (chain, why) = walk_of(5, &[(5, 0, 1 << 40)]);
        assert_eq!(chain, vec![5]);
        assert!(why.expect("out of range").contains("cannot be read"));
    }
}
