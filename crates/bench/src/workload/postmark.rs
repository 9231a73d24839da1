//! PostMark 1.13 (Katcher 1997), as the 2000 paper ran it (§7.3.4, §8.2.4,
//! Fig. 5): a pool of small files with sizes uniform over a range, created,
//! then subjected to transactions, then deleted.
//!
//! Every setting is stated here rather than left to PostMark's compiled-in
//! defaults, which differ between versions (1.51's are `size 500 10000`,
//! `number 500`, `transactions 500`):
//!
//! | setting | value | source |
//! |---|---|---|
//! | `set size` | 512 16384 | §7.3.4: "512 bytes to 16 KB" |
//! | `set number` | 10,000 (150,000 for the large set) | §7.3.4 |
//! | `set transactions` | 20,000 | §7.3.4 |
//! | `set read` / `set write` | 512 | §7.3.4: "a transaction block size of 512 bytes" |
//! | `set bias read` / `set bias create` | 5 / 5 | §7.3.4: "no bias toward any particular transaction type" |
//! | `set subdirectories` | 0: every file in one directory | not stated; PostMark's default |
//! | `set buffering` | true | not stated; PostMark's default |
//!
//! With buffering on, PostMark reads and writes through stdio, so the
//! 512-byte blocks reach the file system as calls of stdio's buffer, which
//! FreeBSD sizes to the file system's block (8 KB here): that is the
//! call size used. Each transaction is a pair (§7.3.4): first a read of a
//! whole file or an append to one (each half the time), the file chosen
//! uniformly among those that exist; then the creation of a new file or
//! the deletion of an existing one (each half the time). An append writes
//! a random 1..(max - size) bytes at the file's end, nothing when it is
//! already at the maximum. PostMark never calls fsync.
//!
//! The creation of the pool before the transactions and its deletion after
//! them are timed as their own phases, as PostMark reports them; nothing
//! syncs between them. 1.13's random generator is the C library's and
//! cannot be replayed here (1.5 replaced it too): the choices come from
//! the lab's seeded generator, so runs repeat exactly for a seed.
//!
//! Records at x = the pool's size in files: `create` and `delete` (seconds
//! `s`, `files/s`), `transactions` (`s`, transactions per second `TPS`, and
//! the counts of each kind: `reads`, `appends`, `creates`, `deletes`),
//! `total` (`s`).

use super::{contents, per_second, Record};
use crate::target::{Fd, Target};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::io;

/// The parameters (PostMark's `set` commands).
#[derive(Debug, Clone, PartialEq)]
pub struct Spec {
    /// `set size LOW HIGH`: the smallest file, in bytes.
    pub size_low: u64,
    /// The largest file, in bytes.
    pub size_high: u64,
    /// `set number`: files in the pool.
    pub files: u64,
    /// `set transactions`.
    pub transactions: u64,
    /// `set read`: bytes per read block.
    pub read_block: u64,
    /// `set write`: bytes per write block.
    pub write_block: u64,
    /// `set bias read`: out of 10, how often a transaction reads rather
    /// than appends.
    pub bias_read: u32,
    /// `set bias create`: out of 10, how often a transaction creates
    /// rather than deletes.
    pub bias_create: u32,
    /// `set subdirectories`: 0 puts every file in one directory.
    pub subdirectories: u64,
    /// `set buffering`: through stdio, whose buffer then sizes the calls.
    pub buffering: bool,
    /// stdio's buffer: FreeBSD's is the file system's block size.
    pub stdio_buffer: u64,
    /// Seeds the sizes and choices.
    pub seed: u64,
}

impl Spec {
    /// The paper's default set: 10,000 files of 512 B to 16 KB, 20,000
    /// transactions (§7.3.4).
    pub fn paper(seed: u64) -> Spec {
        Spec {
            size_low: 512,
            size_high: 16384,
            files: 10_000,
            transactions: 20_000,
            read_block: 512,
            write_block: 512,
            bias_read: 5,
            bias_create: 5,
            subdirectories: 0,
            buffering: true,
            stdio_buffer: 8192,
            seed,
        }
    }

    /// The paper's large set: 150,000 files, "approximately 1.1 GB"
    /// (§7.3.4), the rest as [`Spec::paper`].
    pub fn large(seed: u64) -> Spec {
        Spec { files: 150_000, ..Spec::paper(seed) }
    }

    /// A small configuration.
    pub fn quick(seed: u64) -> Spec {
        Spec { files: 400, transactions: 800, ..Spec::paper(seed) }
    }

    /// Bytes each read or write call moves.
    pub fn call_bytes(&self, reading: bool) -> u64 {
        match (self.buffering, reading) {
            (true, _) => self.stdio_buffer.max(1),
            (false, true) => self.read_block.max(1),
            (false, false) => self.write_block.max(1),
        }
    }

    /// The directory file `number` lives in.
    fn dir(&self, number: u64) -> String {
        if self.subdirectories == 0 {
            "pm".into()
        } else {
            format!("pm/s{}", number % self.subdirectories)
        }
    }

    /// The path of file `number`.
    pub fn path(&self, number: u64) -> String {
        format!("{}/{number}", self.dir(number))
    }
}

/// A file of the pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct File {
    number: u64,
    size: u64,
}

/// What a run did, for its records and tests.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counts {
    /// Whole-file reads.
    pub reads: u64,
    /// Appends.
    pub appends: u64,
    /// Files created by transactions.
    pub creates: u64,
    /// Files deleted by transactions.
    pub deletes: u64,
    /// Bytes appended.
    pub appended: u64,
    /// Files left when the transactions ended (the delete phase's).
    pub left: u64,
}

/// The pool, the generator and the buffers of a run.
struct Pool<'a> {
    spec: &'a Spec,
    rng: SmallRng,
    files: Vec<File>,
    next: u64,
    data: Vec<u8>,
    buf: Vec<u8>,
    counts: Counts,
}

impl Pool<'_> {
    fn size(&mut self) -> u64 {
        self.rng.gen_range(self.spec.size_low..=self.spec.size_high.max(self.spec.size_low))
    }

    /// Writes `len` bytes at `at` in calls of the spec's size.
    fn write(&mut self, t: &mut Target, fd: Fd, mut at: u64, len: u64) -> io::Result<()> {
        let call = self.spec.call_bytes(false);
        let end = at + len;
        while at < end {
            let n = (end - at).min(call) as usize;
            let start = (at % self.data.len().max(1) as u64) as usize;
            let n = n.min(self.data.len() - start);
            t.write(fd, at, &self.data[start..start + n])?;
            at += n as u64;
        }
        Ok(())
    }

    fn create(&mut self, t: &mut Target) -> io::Result<()> {
        let file = File { number: self.next, size: self.size() };
        self.next += 1;
        let fd = t.create(&self.spec.path(file.number))?;
        self.write(t, fd, 0, file.size)?;
        t.close(fd)?;
        self.files.push(file);
        Ok(())
    }

    fn pick(&mut self) -> Option<usize> {
        (!self.files.is_empty()).then(|| self.rng.gen_range(0..self.files.len()))
    }

    fn read(&mut self, t: &mut Target, i: usize) -> io::Result<()> {
        let file = self.files[i];
        let call = self.spec.call_bytes(true);
        let fd = t.open(&self.spec.path(file.number))?;
        let mut at = 0;
        while at < file.size {
            let n = (file.size - at).min(call) as usize;
            t.read(fd, at, &mut self.buf[..n])?;
            at += n as u64;
        }
        self.counts.reads += 1;
        t.close(fd)
    }

    fn append(&mut self, t: &mut Target, i: usize) -> io::Result<()> {
        let file = self.files[i];
        let room = self.spec.size_high.saturating_sub(file.size);
        let fd = t.open(&self.spec.path(file.number))?;
        if room > 0 {
            let len = self.rng.gen_range(1..=room);
            self.write(t, fd, file.size, len)?;
            self.files[i].size += len;
            self.counts.appended += len;
        }
        self.counts.appends += 1;
        t.close(fd)
    }

    fn delete(&mut self, t: &mut Target, i: usize) -> io::Result<()> {
        let file = self.files.swap_remove(i);
        t.unlink(&self.spec.path(file.number))
    }

    fn transaction(&mut self, t: &mut Target) -> io::Result<()> {
        if let Some(i) = self.pick() {
            if self.rng.gen_range(0..10) < self.spec.bias_read {
                self.read(t, i)?;
            } else {
                self.append(t, i)?;
            }
        }
        if self.rng.gen_range(0..10) < self.spec.bias_create {
            self.create(t)?;
            self.counts.creates += 1;
        } else if let Some(i) = self.pick() {
            self.delete(t, i)?;
            self.counts.deletes += 1;
        }
        Ok(())
    }
}

/// Runs PostMark on `t` and returns what it did. The pool's directories
/// are made first, untimed; the last phase leaves them empty.
pub fn run(t: &mut Target, spec: &Spec, rec: &mut dyn Record) -> io::Result<Counts> {
    let mut pool = Pool {
        spec,
        rng: SmallRng::seed_from_u64(spec.seed),
        files: Vec::with_capacity(spec.files as usize),
        next: 0,
        data: contents(spec.size_high.max(spec.stdio_buffer) as usize, spec.seed),
        buf: vec![0; spec.call_bytes(true) as usize],
        counts: Counts::default(),
    };
    t.mkdir("pm")?;
    for s in 0..spec.subdirectories {
        t.mkdir(&format!("pm/s{s}"))?;
    }
    t.sync()?;
    let x = spec.files as f64;
    let (_, create) = t.phase(|t| {
        for _ in 0..spec.files {
            pool.create(t)?;
        }
        Ok(())
    })?;
    let (_, transactions) = t.phase(|t| {
        for _ in 0..spec.transactions {
            pool.transaction(t)?;
        }
        Ok(())
    })?;
    pool.counts.left = pool.files.len() as u64;
    let (_, delete) = t.phase(|t| {
        while let Some(file) = pool.files.pop() {
            t.unlink(&spec.path(file.number))?;
        }
        Ok(())
    })?;
    let c = &pool.counts;
    rec.record("create", x, "s", create.seconds());
    rec.record("create", x, "files/s", per_second(spec.files, create.seconds()));
    rec.record("transactions", x, "s", transactions.seconds());
    rec.record("transactions", x, "TPS", per_second(spec.transactions, transactions.seconds()));
    rec.record("transactions", x, "cpu%", 100.0 * transactions.cpu_share());
    rec.record("delete", x, "s", delete.seconds());
    rec.record("delete", x, "files/s", per_second(c.left, delete.seconds()));
    rec.record("total", x, "s", create.seconds() + transactions.seconds() + delete.seconds());
    for (name, n) in
        [("reads", c.reads), ("appends", c.appends), ("creates", c.creates), ("deletes", c.deletes)]
    {
        rec.record("transactions", x, name, n as f64);
    }
    Ok(pool.counts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::{test_target, Collected};

    #[test]
    fn the_papers_settings_are_set_explicitly() {
        let s = Spec::paper(1);
        assert_eq!((s.size_low, s.size_high, s.files, s.transactions), (512, 16384, 10_000, 20_000));
        assert_eq!((s.read_block, s.write_block, s.bias_read, s.bias_create), (512, 512, 5, 5));
        assert_eq!(s.subdirectories, 0);
        assert_eq!(Spec::large(1).files, 150_000);
        assert_eq!(
            (s.call_bytes(true), Spec { buffering: false, ..s.clone() }.call_bytes(false)),
            (8192, 512)
        );
    }

    #[test]
    fn a_small_run_does_every_transaction_and_leaves_nothing() {
        let spec = Spec { files: 120, transactions: 300, ..Spec::paper(7) };
        let mut t = test_target("ffs-async", 256 << 20);
        let mut rec = Collected::default();
        let c = run(&mut t, &spec, &mut rec).expect("postmark");
        assert_eq!(c.reads + c.appends, spec.transactions, "a read or an append in every transaction");
        assert_eq!(c.creates + c.deletes, spec.transactions, "a create or a delete in every one");
        assert!(c.reads > 100 && c.appends > 100 && c.creates > 100 && c.deletes > 100, "{c:?}: about 50/50");
        assert_eq!(c.left, spec.files + c.creates - c.deletes);
        for n in 0..spec.files + c.creates {
            assert_eq!(t.stat(&spec.path(n)).expect("stat"), None, "file {n} deleted");
        }
        assert_eq!(rec.get("transactions", 120.0, "creates"), Some(c.creates as f64));
        let tps = rec.get("transactions", 120.0, "TPS").expect("TPS");
        assert!(tps > 0.0 && rec.get("total", 120.0, "s").expect("total") > 0.0);

        // The same seed, the same choices and the same virtual times.
        let mut again = Collected::default();
        let mut t2 = test_target("ffs-async", 256 << 20);
        assert_eq!(run(&mut t2, &spec, &mut again).expect("postmark"), c);
        assert_eq!(again.points, rec.points);
        let other = run(
            &mut test_target("ffs-async", 256 << 20),
            &Spec { seed: 8, ..spec },
            &mut Collected::default(),
        );
        assert_ne!(other.expect("postmark"), c, "another seed, other choices");
    }

    #[test]
    fn appends_stop_at_the_largest_size() {
        let spec = Spec { files: 20, transactions: 400, bias_read: 0, bias_create: 10, ..Spec::paper(3) };
        let mut t = test_target("ffs-async", 256 << 20);
        let c = run(&mut t, &spec, &mut Collected::default()).expect("postmark");
        assert_eq!(c.appends, 400);
        assert_eq!(c.deletes, 0);
        assert!(c.appended <= (spec.files + c.creates) * spec.size_high, "{c:?}");
    }
}
