//! TPC-B at the 10-TPS scale, as the 1995 paper ran it (§4, Table 3) and
//! the 1993 paper before it (§5.2.3): a 237 MB account relation of
//! 1,000,000 records, 10 branches, 100 tellers, and a history file that
//! grows by 50 bytes per transaction; single user, no think time, the log
//! on another disk (not modelled: the papers' throughput models leave it
//! out too).
//!
//! The application keeps its own 4 MB cache of 4 KB pages (least recently
//! used replaced). Branch and teller pages stay in it; an account page
//! that misses is read from the file at its offset, after the least
//! recently used page is evicted — written back if dirty. So each
//! transaction is one random read and, once the cache is full of dirty
//! pages, one random write of a 4 KB block (1995 §4). The B-tree's inner
//! pages are taken as resident: record i lives in page i × pages / records.
//!
//! The database's own CPU work (the B-tree descent, the three balance
//! updates, the history record, the log record) is not charged: the
//! 1995 paper's throughput models (§4) have only the disk and the two
//! page copies, and the lab's FFS and LFS come within 2% and 8% of them.
//! Andrew, by contrast, charges each phase its calibrated application CPU
//! (`andrew.rs`). `Spec::txn_instructions` charges a database's CPU per
//! transaction where a run wants one (`docs/lab/analysis.md` measures
//! the effect).
//!
//! Measurement follows the papers: transactions are counted once the
//! application's cache is full. A window of `measure` transactions
//! measures throughput before the cleaner does any work (`no-cleaning`); on a system
//! with a cleaner the run then goes on until the cleaner has cleaned, lets
//! it settle for another window, and measures a window while it cleans
//! (`cleaning`). A window that the cleaner enters early ends there. Records
//! at x = the utilization asked for: `TPS` per phase (with the settling
//! window's, `settling`, and each quarter of the measured one's,
//! `cleaning 1/4` to `cleaning 4/4`, so that the reader sees whether the
//! cleaner had reached a steady state), the measured
//! utilization (`utilization%`), and for `cleaning` the segments cleaned
//! per 1000 transactions, the cleaner's share of the blocks written and
//! the write cost.

use super::{contents, fill, per_second, write_new_file, Record};
use crate::target::{between, is_no_space, print_phase, Fd, Phase, Target};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::{BTreeMap, HashMap};
use std::io;

/// What the lab appends to each phase's name on a partition sized so that
/// the database alone fills it to the utilization (no other data): the
/// alternative to one partition the database fills to 48%, raised by
/// other data, that the report's setup choices show.
pub const PARTITION_SIZED: &str = " (partition sized)";

/// The parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct Spec {
    /// Account records.
    pub accounts: u64,
    /// The account file's size (records in B-tree leaves, 4 KB pages).
    pub account_bytes: u64,
    /// The branch and teller files' sizes.
    pub branch_bytes: u64,
    /// See `branch_bytes`.
    pub teller_bytes: u64,
    /// Tellers (10 per branch).
    pub tellers: u64,
    /// The page size of the application's cache.
    pub page: usize,
    /// Pages the application's cache holds.
    pub cache_pages: usize,
    /// Bytes appended to the history file per transaction.
    pub history_record: u64,
    /// Transactions per measured window.
    pub measure: u64,
    /// Give up waiting for the cleaner after this many transactions.
    pub max_transactions: u64,
    /// Whether the system cleans (then the `cleaning` window is measured).
    pub cleaner: bool,
    /// Seeds the accounts chosen.
    pub seed: u64,
    /// Other data written after the database, up to this utilization (a
    /// fraction of what `statfs` offers), if the database alone leaves
    /// the file system emptier.
    pub fill_to: Option<f64>,
    /// The database's CPU per transaction, in instructions at the
    /// machine's MIPS (`Target::compute_instructions`); 0 in the papers'
    /// configurations, whose models leave it out.
    pub txn_instructions: f64,
}

impl Spec {
    /// The 10-TPS scale of the papers (1995 Table 3).
    pub fn paper(seed: u64) -> Spec {
        Spec {
            accounts: 1_000_000,
            account_bytes: 237 << 20,
            branch_bytes: 44 << 10,
            teller_bytes: 44 << 10,
            tellers: 100,
            page: 4096,
            cache_pages: 1024,
            history_record: 50,
            measure: 10_000,
            max_transactions: 2_000_000,
            cleaner: true,
            seed,
            fill_to: None,
            txn_instructions: 0.0,
        }
    }

    /// A small configuration: a fifth of the database (LFS's reserves of
    /// a few segments must stay small beside it at 80%).
    pub fn quick(seed: u64) -> Spec {
        Spec {
            accounts: 200_000,
            account_bytes: 48 << 20,
            branch_bytes: 8 << 10,
            teller_bytes: 8 << 10,
            tellers: 100,
            page: 4096,
            cache_pages: 256,
            history_record: 50,
            measure: 500,
            max_transactions: 100_000,
            cleaner: true,
            seed,
            fill_to: None,
            txn_instructions: 0.0,
        }
    }

    /// Bytes of the database once loaded (what the utilization counts).
    pub fn database_bytes(&self) -> u64 {
        self.account_bytes + self.branch_bytes + self.teller_bytes
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum File {
    Account,
    History,
}

/// The application's page cache: least recently used replaced.
struct AppCache {
    capacity: usize,
    /// Page → (dirty, last use).
    pages: HashMap<(File, u64), (bool, u64)>,
    /// Last use → page.
    order: BTreeMap<u64, (File, u64)>,
    uses: u64,
}

impl AppCache {
    fn touch(&mut self, key: (File, u64), dirty: bool) -> bool {
        self.uses += 1;
        let hit = match self.pages.get_mut(&key) {
            Some(entry) => {
                self.order.remove(&entry.1);
                entry.0 |= dirty;
                entry.1 = self.uses;
                true
            }
            None => {
                self.pages.insert(key, (dirty, self.uses));
                false
            }
        };
        self.order.insert(self.uses, key);
        hit
    }

    /// Removes the least recently used page if over capacity: its key and
    /// whether it was dirty.
    fn evict(&mut self) -> Option<((File, u64), bool)> {
        if self.pages.len() <= self.capacity {
            return None;
        }
        let (_, key) = self.order.pop_first()?;
        let (dirty, _) = self.pages.remove(&key)?;
        Some((key, dirty))
    }

    fn full(&self) -> bool {
        self.pages.len() >= self.capacity
    }
}

/// The database open on a target.
struct Bank<'a> {
    spec: &'a Spec,
    account: Fd,
    history: Fd,
    history_bytes: u64,
    cache: AppCache,
    rng: SmallRng,
    page: Vec<u8>,
    pages_in_accounts: u64,
}

impl Bank<'_> {
    fn fd(&self, file: File) -> Fd {
        match file {
            File::Account => self.account,
            File::History => self.history,
        }
    }

    /// Brings `key` into the cache (dirty), evicting as needed.
    fn use_page(&mut self, t: &mut Target, key: (File, u64), read: bool) -> io::Result<()> {
        if self.cache.touch(key, true) {
            return Ok(());
        }
        if let Some((old, dirty)) = self.cache.evict() {
            if dirty {
                t.write(self.fd(old.0), old.1 * self.spec.page as u64, &self.page)?;
            }
        }
        if read {
            t.read(self.fd(key.0), key.1 * self.spec.page as u64, &mut self.page)?;
        }
        Ok(())
    }

    /// One transaction: update an account, its teller and branch (always
    /// cached), append history.
    fn transaction(&mut self, t: &mut Target) -> io::Result<()> {
        let account = self.rng.gen_range(0..self.spec.accounts);
        let _teller = self.rng.gen_range(0..self.spec.tellers);
        let page = account * self.pages_in_accounts / self.spec.accounts;
        self.use_page(t, (File::Account, page), true)?;
        let history_page = self.history_bytes / self.spec.page as u64;
        // A history page past the end of the file is new: nothing to read.
        self.use_page(t, (File::History, history_page), false)?;
        self.history_bytes += self.spec.history_record;
        if self.spec.txn_instructions > 0.0 {
            t.compute_instructions(self.spec.txn_instructions);
        }
        Ok(())
    }

    /// Runs `n` transactions.
    fn run(&mut self, t: &mut Target, n: u64) -> io::Result<u64> {
        for _ in 0..n {
            self.transaction(t)?;
        }
        Ok(n)
    }
}

/// Loads the database: the account file in 1 MB writes, branches,
/// tellers, an empty history; other data up to `spec.fill_to`; then `sync`
/// and a cache drop.
fn load(t: &mut Target, spec: &Spec) -> io::Result<(Fd, Fd)> {
    let chunk = contents(1 << 20, 3);
    for (name, bytes) in
        [("branch", spec.branch_bytes), ("teller", spec.teller_bytes), ("account", spec.account_bytes)]
    {
        write_new_file(t, name, bytes, &chunk)?;
    }
    let history = t.create("history")?;
    t.close(history)?;
    if let Some(u) = spec.fill_to {
        fill(t, u)?;
    }
    t.sync()?;
    t.drop_caches()?;
    Ok((t.open("account")?, t.open("history")?))
}

/// The disk's reads and writes per transaction, on a simulated disk.
fn record_disk(rec: &mut dyn Record, name: &str, x: f64, done: u64, phase: &Phase) {
    if let Some(d) = &phase.disk {
        rec.record(name, x, "disk-reads/txn", d.reads as f64 / done.max(1) as f64);
        rec.record(name, x, "disk-writes/txn", d.writes as f64 / done.max(1) as f64);
    }
}

/// `n` transactions as four successive windows (the first ones a
/// transaction longer where `n` does not divide by four; none empty unless
/// `n` is under four).
fn quarters(n: u64) -> Vec<u64> {
    (0..4).map(|i| n / 4 + u64::from(i < n % 4)).filter(|&q| q > 0).collect()
}

fn tps(done: u64, phase: &Phase) -> f64 {
    per_second(done, phase.seconds())
}

/// Runs TPC-B on `t` (a fresh file system sized for utilization `x`).
pub fn run(t: &mut Target, spec: &Spec, x: f64, rec: &mut dyn Record) -> io::Result<()> {
    let (account, history) = load(t, spec)?;
    rec.record("load", x, "utilization%", 100.0 * t.usage()?.utilization());
    let mut bank = Bank {
        spec,
        account,
        history,
        history_bytes: 0,
        cache: AppCache {
            capacity: spec.cache_pages,
            pages: HashMap::new(),
            order: BTreeMap::new(),
            uses: 0,
        },
        rng: SmallRng::seed_from_u64(spec.seed),
        page: contents(spec.page, 4),
        pages_in_accounts: (spec.account_bytes / spec.page as u64).max(1),
    };
    // Warm up: count only once the application's cache is full.
    let mut warm = 0;
    while !bank.cache.full() && warm < spec.max_transactions {
        bank.transaction(t)?;
        warm += 1;
    }

    // Before cleaning: a window the cleaner must not enter (not even to
    // read segments it then finds not worth cleaning). The in-line cleaner
    // runs inside the transaction that needs it, so the window ends before
    // that transaction.
    let cleaned_before = t.segments_cleaned();
    let work_before = t.cleaner_work();
    let start = t.counters();
    let mut end = start.clone();
    let mut done = 0;
    let mut full = false;
    while done < spec.measure {
        match bank.transaction(t) {
            Ok(()) => {}
            Err(e) if is_no_space(&e) => {
                rec.note(format!("at {x}% the disk filled after {done} transactions"));
                full = true;
                break;
            }
            Err(e) => return Err(e),
        }
        if t.cleaner_work() > work_before {
            break;
        }
        done += 1;
        end = t.counters();
    }
    let phase = between(&start, &end);
    print_phase(&phase);
    if done * 10 >= spec.measure {
        rec.record("no-cleaning", x, "TPS", tps(done, &phase));
        record_disk(rec, "no-cleaning", x, done, &phase);
    } else {
        rec.note(format!(
            "at {x}%: the cleaner started after {done} transactions; no window before cleaning"
        ));
    }
    if !spec.cleaner || full {
        return Ok(());
    }

    // Run until the cleaner has cleaned, then one window to settle, then
    // the measured one.
    let mut extra = 0;
    while t.segments_cleaned() == cleaned_before && extra < spec.max_transactions {
        bank.transaction(t)?;
        extra += 1;
    }
    if t.segments_cleaned() == cleaned_before {
        rec.note(format!("at {x}%: the cleaner never ran in {extra} transactions"));
        return Ok(());
    }
    let (settled, settling) = t.phase(|t| bank.run(t, spec.measure))?;
    rec.record("settling", x, "TPS", tps(settled, &settling));
    // The measured window in quarters as well, each recorded on its own,
    // so that a reader sees whether cleaning had reached a steady state:
    // the window as a whole is timed as before.
    let quarters = quarters(spec.measure);
    let (done, phase) = t.phase(|t| {
        let mut done = 0;
        for (i, &n) in quarters.iter().enumerate() {
            let (part, timed) = t.phase(|t| bank.run(t, n))?;
            rec.record(&format!("cleaning {}/{}", i + 1, quarters.len()), x, "TPS", tps(part, &timed));
            done += part;
        }
        Ok(done)
    })?;
    rec.record("cleaning", x, "TPS", tps(done, &phase));
    record_disk(rec, "cleaning", x, done, &phase);
    if let Some(c) = phase.cleaner {
        rec.record(
            "cleaning",
            x,
            "segments/1000txn",
            c.segments_cleaned as f64 * 1000.0 / done.max(1) as f64,
        );
        let written = c.user_bytes_written + c.cleaner_bytes_written;
        if written > 0 {
            rec.record(
                "cleaning",
                x,
                "cleaner-writes%",
                100.0 * c.cleaner_bytes_written as f64 / written as f64,
            );
        }
        if let Some(cost) = c.write_cost() {
            rec.record("cleaning", x, "write-cost", cost);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::quarters;

    #[test]
    fn the_measured_window_splits_into_four_that_add_up_to_it() {
        for n in [0, 1, 3, 4, 5, 7, 1000, 1003] {
            let q = quarters(n);
            assert_eq!(q.iter().sum::<u64>(), n, "{n}: {q:?}");
            assert!(q.len() == 4 || n < 4, "{n}: {q:?}");
            assert!(q.windows(2).all(|w| w[0] >= w[1] && w[0] - w[1] <= 1), "{n}: {q:?}");
        }
    }
}
