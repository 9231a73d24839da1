//! The 2000 paper's Netnews benchmark (§7.3.2, §8.2.2, Table 5), "a
//! simplified version of Karl Swartz's Netnews benchmark": a news spool
//! pre-filled with 2 GB in about 520,000 articles spread over almost 7,000
//! newsgroup directories, then two timed phases:
//!
//! * **unbatch** — 78,000 new articles, 270 MB, each created in its
//!   newsgroup's directory;
//! * **expire** — the 91,000 oldest articles, 250 MB, removed.
//!
//! The trace the paper replayed is not public; this is a generator of the
//! same shape. Newsgroups are directories two levels deep (`news/hH/gG`,
//! a hundred groups per hierarchy) made before the articles, so FFS places
//! them in different cylinder groups. Each article goes to a group drawn
//! by the group's weight (a seeded 1 to 8: some groups busier than
//! others), so successive operations "seldom occur in the same directory"
//! (§7.3.2): with 7,000 groups, about one in 5,000. Articles are numbered
//! per group, as a spool numbers them. Expire removes in arrival order,
//! as expire walks the history file, oldest first: scattered over the
//! groups too.
//!
//! Article sizes are exponential with the mean each cohort's figures give
//! (the trace's distribution is not public): the expired articles (the
//! oldest 91,000) 250 MB / 91,000 = 2.8 KB, the other pre-filled ones the
//! rest of the 2 GB, 4.3 KB, the unbatched 270 MB / 78,000 = 3.5 KB; each
//! between 256 bytes and 64 KB. The history file, overview and
//! cross-posting links (DM02's variant links) are not modelled: the
//! benchmark as the paper describes it creates and removes articles.
//!
//! Pre-fill is untimed and ends with a sync and the caches dropped; unbatch
//! and expire follow each other without a sync, as a news server's would.
//! The spool (2 GB) is many times the buffer cache, so "cache evictions
//! occur much more rapidly" than soft updates' 15-30 s of aggregation
//! (§8.2.2). The full size writes 2.3 GB on each system; [`Spec::scaled`]
//! keeps the shape (files per directory, sizes, the unbatch and expire
//! shares of the spool) at a fraction, still larger than the cache.
//!
//! Records `unbatch` and `expire` (seconds `s`, `files/s`, the simulated
//! disk's `writes` and `reads`), `total` (`s`), and the pre-fill's `files`,
//! `MB` and `directories` (MB = 2^20 bytes).

use super::{contents, per_second, Record};
use crate::target::{Phase, Target};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::VecDeque;
use std::io;

const MB: u64 = 1 << 20;

/// The parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct Spec {
    /// Newsgroup directories.
    pub groups: u64,
    /// Articles pre-filled.
    pub prefill_files: u64,
    /// Their bytes.
    pub prefill_bytes: u64,
    /// Articles unbatch creates.
    pub unbatch_files: u64,
    /// Their bytes.
    pub unbatch_bytes: u64,
    /// Articles expire removes (the oldest pre-filled).
    pub expire_files: u64,
    /// Their bytes.
    pub expire_bytes: u64,
    /// Seeds the groups' weights, the articles' groups and sizes.
    pub seed: u64,
}

impl Spec {
    /// The paper's: 2 GB in 520,000 files in 7,000 directories; unbatch
    /// 78,000 files and 270 MB; expire 91,000 files and 250 MB (§7.3.2).
    pub fn paper(seed: u64) -> Spec {
        Spec {
            groups: 7_000,
            prefill_files: 520_000,
            prefill_bytes: 2048 * MB,
            unbatch_files: 78_000,
            unbatch_bytes: 270 * MB,
            expire_files: 91_000,
            expire_bytes: 250 * MB,
            seed,
        }
    }

    /// The paper's spool scaled by `fraction` in every count and size
    /// (at least one group).
    pub fn scaled(seed: u64, fraction: f64) -> Spec {
        let p = Spec::paper(seed);
        let s = |n: u64| ((n as f64 * fraction).round() as u64).max(1);
        Spec {
            groups: s(p.groups),
            prefill_files: s(p.prefill_files),
            prefill_bytes: s(p.prefill_bytes),
            unbatch_files: s(p.unbatch_files),
            unbatch_bytes: s(p.unbatch_bytes),
            expire_files: s(p.expire_files).min(s(p.prefill_files)),
            expire_bytes: s(p.expire_bytes),
            seed,
        }
    }

    /// A small configuration: a 400th of the spool (5 MB, 1,300 articles,
    /// 18 groups).
    pub fn quick(seed: u64) -> Spec {
        Spec::scaled(seed, 1.0 / 400.0)
    }

    /// The directory of group `g`.
    pub fn group_dir(g: u64) -> String {
        format!("news/h{}/g{g}", g / 100)
    }
}

/// An article in the spool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Article {
    /// Its group.
    pub group: u64,
    /// Its number in the group.
    pub number: u64,
    /// Bytes.
    pub size: u64,
}

impl Article {
    /// Its path.
    pub fn path(&self) -> String {
        format!("{}/{}", Spec::group_dir(self.group), self.number)
    }
}

/// The articles' arrivals: groups drawn by weight, numbered per group,
/// sizes exponential about a cohort's mean.
pub struct Feed {
    rng: SmallRng,
    /// Cumulative weights of the groups.
    cumulative: Vec<u64>,
    next_number: Vec<u64>,
}

impl Feed {
    /// The feed of `spec`: the groups' weights drawn from its seed.
    pub fn new(spec: &Spec) -> Feed {
        let mut rng = SmallRng::seed_from_u64(spec.seed);
        let mut total = 0;
        let cumulative = (0..spec.groups)
            .map(|_| {
                total += rng.gen_range(1..=8u64);
                total
            })
            .collect();
        Feed { rng, cumulative, next_number: vec![1; spec.groups as usize] }
    }

    /// The next article, of about `mean` bytes.
    pub fn next(&mut self, mean: f64) -> Article {
        let total = self.cumulative.last().copied().unwrap_or(1);
        let pick = self.rng.gen_range(0..total);
        let group = self.cumulative.partition_point(|&c| c <= pick) as u64;
        let number = self.next_number[group as usize];
        self.next_number[group as usize] += 1;
        let u: f64 = self.rng.gen_range(f64::EPSILON..1.0);
        let size = ((-u.ln() * mean) as u64).clamp(256, 64 * 1024);
        Article { group, number, size }
    }
}

fn create(t: &mut Target, a: &Article, data: &[u8]) -> io::Result<()> {
    let fd = t.create(&a.path())?;
    t.write(fd, 0, &data[..a.size as usize])?;
    t.close(fd)
}

fn record(rec: &mut dyn Record, phase: &str, files: u64, p: &Phase) {
    rec.record(phase, 0.0, "s", p.seconds());
    rec.record(phase, 0.0, "files/s", per_second(files, p.seconds()));
    if let Some(d) = &p.disk {
        rec.record(phase, 0.0, "writes", d.writes as f64);
        rec.record(phase, 0.0, "reads", d.reads as f64);
    }
}

/// What a run did, for tests.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Done {
    /// Articles in the spool at the end, oldest first.
    pub spool: Vec<Article>,
    /// Articles expired, in the order removed.
    pub expired: Vec<Article>,
    /// Bytes pre-filled, unbatched and expired.
    pub bytes: [u64; 3],
}

/// Runs the benchmark on `t`.
pub fn run(t: &mut Target, spec: &Spec, rec: &mut dyn Record) -> io::Result<Done> {
    let data = contents(64 * 1024, spec.seed);
    let mut feed = Feed::new(spec);
    let mut done = Done::default();
    t.mkdir("news")?;
    for h in 0..spec.groups.div_ceil(100) {
        t.mkdir(&format!("news/h{h}"))?;
    }
    for g in 0..spec.groups {
        t.mkdir(&Spec::group_dir(g))?;
    }
    // Pre-fill: the oldest articles (to be expired) first, of their mean.
    let old_mean = spec.expire_bytes as f64 / spec.expire_files.max(1) as f64;
    let rest = spec.prefill_files.saturating_sub(spec.expire_files).max(1);
    let rest_mean = spec.prefill_bytes.saturating_sub(spec.expire_bytes) as f64 / rest as f64;
    let mut spool = VecDeque::with_capacity((spec.prefill_files + spec.unbatch_files) as usize);
    for i in 0..spec.prefill_files {
        let a = feed.next(if i < spec.expire_files { old_mean } else { rest_mean });
        create(t, &a, &data)?;
        done.bytes[0] += a.size;
        spool.push_back(a);
    }
    t.sync()?;
    t.drop_caches()?;
    rec.record("prefill", 0.0, "files", spec.prefill_files as f64);
    rec.record("prefill", 0.0, "MB", done.bytes[0] as f64 / MB as f64);
    rec.record("prefill", 0.0, "directories", spec.groups as f64);

    let new_mean = spec.unbatch_bytes as f64 / spec.unbatch_files.max(1) as f64;
    let (_, unbatch) = t.phase(|t| {
        for _ in 0..spec.unbatch_files {
            let a = feed.next(new_mean);
            create(t, &a, &data)?;
            done.bytes[1] += a.size;
            spool.push_back(a);
        }
        Ok(())
    })?;
    let (_, expire) = t.phase(|t| {
        for _ in 0..spec.expire_files {
            let Some(a) = spool.pop_front() else { break };
            t.unlink(&a.path())?;
            done.bytes[2] += a.size;
            done.expired.push(a);
        }
        Ok(())
    })?;
    record(rec, "unbatch", spec.unbatch_files, &unbatch);
    record(rec, "expire", done.expired.len() as u64, &expire);
    rec.record("unbatch", 0.0, "MB", done.bytes[1] as f64 / MB as f64);
    rec.record("expire", 0.0, "MB", done.bytes[2] as f64 / MB as f64);
    rec.record("total", 0.0, "s", unbatch.seconds() + expire.seconds());
    done.spool = spool.into_iter().collect();
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::{test_target, Collected};

    #[test]
    fn the_papers_spool_and_its_scaled_shape() {
        let p = Spec::paper(1);
        assert_eq!(
            (p.groups, p.prefill_files, p.unbatch_files, p.expire_files),
            (7_000, 520_000, 78_000, 91_000)
        );
        let q = Spec::scaled(1, 0.25);
        assert_eq!((q.groups, q.prefill_files, q.expire_files), (1_750, 130_000, 22_750));
        assert_eq!(q.prefill_bytes, 512 * MB);
        // Successive articles seldom go to the same group (§7.3.2).
        let mut feed = Feed::new(&p);
        let arrivals: Vec<Article> = (0..20_000).map(|_| feed.next(4096.0)).collect();
        let same = arrivals.windows(2).filter(|w| w[0].group == w[1].group).count();
        assert!(same < 20, "{same} of 20,000 successive articles in the same group");
        let mean = arrivals.iter().map(|a| a.size).sum::<u64>() as f64 / arrivals.len() as f64;
        assert!((3600.0..4600.0).contains(&mean), "mean {mean}");
    }

    #[test]
    fn a_small_spool_unbatches_and_expires_the_oldest() {
        let spec = Spec::quick(4);
        let mut t = test_target("ffs-async", 256 << 20);
        let mut rec = Collected::default();
        let done = run(&mut t, &spec, &mut rec).expect("netnews");
        assert_eq!(done.expired.len() as u64, spec.expire_files);
        assert_eq!(done.spool.len() as u64, spec.prefill_files + spec.unbatch_files - spec.expire_files);
        for a in &done.expired {
            assert_eq!(t.stat(&a.path()).expect("stat"), None, "{} expired", a.path());
        }
        for a in &done.spool {
            assert_eq!(t.stat(&a.path()).expect("stat"), Some(a.size), "{} in the spool", a.path());
        }
        // The cohorts' sizes come near the paper's shares.
        let ratio = |have: u64, want: u64| have as f64 / want as f64;
        assert!((0.8..1.2).contains(&ratio(done.bytes[0], spec.prefill_bytes)), "{:?}", done.bytes);
        assert!((0.8..1.2).contains(&ratio(done.bytes[2], spec.expire_bytes)), "{:?}", done.bytes);
        assert!(rec.get("unbatch", 0.0, "s").expect("unbatch") > 0.0);

        let mut again = Collected::default();
        let second = run(&mut test_target("ffs-async", 256 << 20), &spec, &mut again).expect("netnews");
        assert_eq!((second, again.points), (done, rec.points), "the same seed, the same run");
    }
}
