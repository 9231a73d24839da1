//! Writing the log, and waiting for it: the journal's commits as a
//! barrier its waiters share (group commit, decision 0007 item 10).

use super::{advance_durable, State, BLOCK};
use crate::cache::{BlockData, Seq, WriteQueue};
use crate::durable::Barrier;
use crate::format::Daddr;
use crate::Result;
use disk::AlignedBytes;
use std::sync::{Arc, Mutex, MutexGuard};

/// Issues the log's bytes not yet issued, up to the first transaction
/// whose ordered data is not durable yet ([`issuable_end`]): all of them
/// (the last block padded), for a caller that waits for them next, or only
/// whole write units. Returns the last write's number (0: nothing
/// written). Called with the file system's lock held or, by a caller
/// waiting for a commit ([`Commits`]), without it: the journal's own lock
/// orders the two.
pub(super) fn issue_log(st: &mut State, queue: &WriteQueue, whole_units_only: bool) -> Result<Seq> {
    let unit = u64::from(st.info.unit);
    let from = st.issued / BLOCK * BLOCK;
    let limit = issuable_end(st, queue.durable());
    let to = if whole_units_only { limit / unit * unit } else { limit.next_multiple_of(BLOCK) };
    if to <= st.issued || limit <= st.issued {
        return Ok(0);
    }
    let end = to.min(limit);
    let mut bytes = st.buf[(from - st.buf_start) as usize..(end - st.buf_start) as usize].to_vec();
    bytes.resize((to - from) as usize, 0);
    // Transactions below `through` are wholly in what is written: all
    // of them but the last begun before `end`, if that one runs past.
    let through = match st.starts.iter().rev().find(|&(_, &pos)| pos < end) {
        None => st.next_seq,
        Some((&last, _)) => {
            let last_end = st.starts.range(last + 1..).next().map_or(st.head, |(_, &pos)| pos);
            if last_end <= end {
                last + 1
            } else {
                last
            }
        }
    };
    let mut last = 0;
    let size = st.info.bytes;
    let mut at = from;
    let mut rest = &bytes[..];
    while !rest.is_empty() {
        let off = at % size;
        let take = ((size - off) as usize).min(rest.len());
        let start = Daddr::new(st.info.start + off / st.frag_size);
        let buffer: BlockData = Arc::new(AlignedBytes::copy_of(&rest[..take]));
        let job = crate::cache::WriteJob::of(start, st.frag_size, vec![buffer], vec![take]);
        // The whole log is written for a caller about to wait for it:
        // on this thread, if nothing is in flight, which saves that wait
        // two thread switches. Whole units go behind.
        last = if whole_units_only { queue.submit(job)? } else { queue.write_now(job)? };
        st.stats.log_writes += 1;
        st.uncounted.0 += 1;
        st.uncounted.1 += take as u64;
        at += take as u64;
        rest = &rest[take..];
    }
    st.issued = end;
    st.in_flight.push((last, through));
    let keep_from = end / BLOCK * BLOCK;
    if keep_from > st.buf_start {
        st.buf.drain(..(keep_from - st.buf_start) as usize);
        st.buf_start = keep_from;
    }
    Ok(last)
}

/// The log position before the first transaction whose ordered data
/// (`State::data_marks`) the write queue's durable point `durable` does not
/// cover: no byte from there on may be issued yet.
pub(super) fn issuable_end(st: &State, durable: Seq) -> u64 {
    match st.data_marks.iter().find(|&(_, &needed)| needed > durable) {
        Some((seq, _)) => st.starts.get(seq).copied().unwrap_or(st.head),
        None => st.head,
    }
}

/// The ordered data the transactions below `through` need durable before
/// their log is issued (0: none).
pub(super) fn data_needed_below(st: &State, through: u64) -> Seq {
    st.data_marks.range(..through).next_back().map_or(0, |(_, &needed)| needed)
}

/// The journal's commits as a [`Barrier`], numbered by transaction: the
/// ticket of transaction `n` is `n + 1` ("every transaction below it
/// durable"). Its waiters write the log themselves, outside the file
/// system's lock, the first of them for all (group commit: one log write
/// and one flush for every operation that committed meanwhile). A waiter
/// that finds a flush running waits for it to end first, since a write
/// issued now would not be covered by it: meanwhile more operations
/// commit, and their records go out in the same write.
pub(super) struct Commits {
    pub(super) state: Arc<Mutex<Option<State>>>,
    pub(super) queue: Arc<WriteQueue>,
}

impl Commits {
    fn lock(&self) -> MutexGuard<'_, Option<State>> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Barrier for Commits {
    fn wait_durable(&self, through: u64) -> Result<()> {
        loop {
            let write = {
                let mut guard = self.lock();
                let Some(st) = guard.as_mut() else { return Ok(()) };
                advance_durable(st, self.queue.durable());
                if st.durable_seq >= through {
                    return Ok(());
                }
                match st.in_flight.iter().find(|&&(_, covers)| covers >= through) {
                    Some(&(write, _)) => write,
                    None if self.queue.is_flushing() => {
                        drop(guard);
                        self.queue.wait_flush_done();
                        continue;
                    }
                    None if self.queue.durable() < data_needed_below(st, through) => {
                        // Ordered data first: its flush, shared with
                        // whoever else waits, then the log. Only the data
                        // of the transactions waited for: another file's
                        // streaming writes, ordered behind later ones, do
                        // not hold this waiter back.
                        let needed = data_needed_below(st, through);
                        drop(guard);
                        self.queue.ticket(needed).wait()?;
                        continue;
                    }
                    None => {
                        match issue_log(st, &self.queue, false)? {
                            // Nothing left to write: the transaction is not
                            // committed (a ticket is made only for one that is).
                            0 => return Ok(()),
                            write => write,
                        }
                    }
                }
            };
            self.queue.ticket(write).wait()?;
        }
    }

    fn is_durable(&self, through: u64) -> bool {
        let mut guard = self.lock();
        let Some(st) = guard.as_mut() else { return true };
        advance_durable(st, self.queue.durable());
        st.durable_seq >= through
    }
}
