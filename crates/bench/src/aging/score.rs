//! The layout score (1997 paper §3.3): the fraction of a file's blocks,
//! after its first, that lie physically contiguous with the file's
//! previous block; aggregated over files as optimally placed blocks over
//! counted blocks. One-block files have no score and count nothing.
//!
//! The paper does not say how an indirect block or a fragment tail is
//! counted (`integrity_and_aging.md` §3.2), so each of the four choices is
//! a [`Variant`]; [`Variant::PRIMARY`] leaves indirect blocks out and
//! counts the tail as one more block (contiguous when it starts where the
//! previous block ends). A hole is passed over: the block after it is
//! judged against the block before it. Only regular files are scored: the paper scores
//! the files of a home-directory file system, and a directory's blocks
//! follow the namespace's growth, not a writer's.

use fslab::ffs::{FilePlacement, PlacedBlock};

/// Which blocks of a file are in the sequence whose contiguity is scored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Variant {
    /// Indirect blocks are in the sequence, where a sequential reader
    /// meets them (each before the data it maps): the seek to one is then
    /// a non-optimal block, and so is the seek back.
    pub indirect: bool,
    /// A fragment tail (a last block of fewer fragments than a block) is
    /// in the sequence; left out, a file of one block and a tail has no
    /// score.
    pub tail: bool,
}

impl Variant {
    /// Data blocks and the tail, no indirect blocks.
    pub const PRIMARY: Variant = Variant { indirect: false, tail: true };
    /// All four, the primary first.
    pub const ALL: [Variant; 4] = [
        Variant::PRIMARY,
        Variant { indirect: true, tail: true },
        Variant { indirect: false, tail: false },
        Variant { indirect: true, tail: false },
    ];

    /// A short name for columns: `data+tail`, `data+tail+ind`, `data`,
    /// `data+ind`.
    pub fn name(self) -> &'static str {
        match (self.indirect, self.tail) {
            (false, true) => "data+tail",
            (true, true) => "data+tail+ind",
            (false, false) => "data",
            (true, false) => "data+ind",
        }
    }
}

/// Optimally placed blocks out of counted ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Tally {
    /// Files with a score (two or more blocks in the sequence).
    pub files: u64,
    /// Blocks contiguous with the previous one.
    pub optimal: u64,
    /// Blocks counted (every block of a scored file but its first).
    pub counted: u64,
}

impl Tally {
    /// `optimal / counted`, or `None` with nothing counted.
    pub fn score(&self) -> Option<f64> {
        (self.counted > 0).then(|| self.optimal as f64 / self.counted as f64)
    }

    fn add(&mut self, other: Tally) {
        self.files += other.files;
        self.optimal += other.optimal;
        self.counted += other.counted;
    }
}

/// Upper bounds (bytes, inclusive) of the size buckets: the 1997 paper's
/// Fig. 3 axis, 16 KB to 16 MB; the last bucket holds everything larger.
pub const BUCKET_BOUNDS: [u64; 11] = [
    16 << 10,
    32 << 10,
    64 << 10,
    96 << 10,
    128 << 10,
    256 << 10,
    512 << 10,
    1 << 20,
    4 << 20,
    16 << 20,
    u64::MAX,
];

/// The aggregate layout score of a file system.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LayoutScore {
    /// Regular files seen, scored or not.
    pub regular_files: u64,
    /// One tally per [`Variant::ALL`], in that order.
    pub variants: [Tally; 4],
    /// The primary variant's tally per size bucket ([`BUCKET_BOUNDS`]).
    pub buckets: [Tally; 11],
}

impl LayoutScore {
    /// The primary variant's tally.
    pub fn primary(&self) -> Tally {
        self.variants[0]
    }

    /// The tally of `variant`.
    pub fn of(&self, variant: Variant) -> Tally {
        let i = Variant::ALL.iter().position(|&v| v == variant).unwrap_or(0);
        self.variants[i]
    }
}

/// One file's tally under `variant`; `frags_per_block` tells a tail from
/// a block.
pub fn file_tally(file: &FilePlacement, frags_per_block: u32, variant: Variant) -> Tally {
    let in_sequence = |b: &&PlacedBlock| {
        let is_tail = b.lbn >= 0 && b.frags < frags_per_block;
        (b.lbn >= 0 || variant.indirect) && (!is_tail || variant.tail)
    };
    let sequence: Vec<&PlacedBlock> = file.blocks.iter().filter(in_sequence).collect();
    if sequence.len() < 2 {
        return Tally::default();
    }
    let optimal =
        sequence.windows(2).filter(|w| w[1].addr == w[0].addr + u64::from(w[0].frags)).count() as u64;
    Tally { files: 1, optimal, counted: sequence.len() as u64 - 1 }
}

/// The aggregate score of `files` (all the files of one file system).
pub fn score(files: &[FilePlacement], frags_per_block: u32) -> LayoutScore {
    let mut out =
        LayoutScore { regular_files: 0, variants: [Tally::default(); 4], buckets: [Tally::default(); 11] };
    for file in files.iter().filter(|f| f.is_regular()) {
        out.regular_files += 1;
        for (tally, variant) in out.variants.iter_mut().zip(Variant::ALL) {
            tally.add(file_tally(file, frags_per_block, variant));
        }
        let bucket = BUCKET_BOUNDS.iter().position(|&b| file.size <= b).unwrap_or(BUCKET_BOUNDS.len() - 1);
        out.buckets[bucket].add(file_tally(file, frags_per_block, Variant::PRIMARY));
    }
    out
}

/// The bucket's label: `<=16K`, …, `>16M`.
pub fn bucket_label(i: usize) -> String {
    match BUCKET_BOUNDS.get(i) {
        Some(&u64::MAX) | None => ">16M".to_string(),
        Some(&b) if b >= 1 << 20 => format!("<={}M", b >> 20),
        Some(&b) => format!("<={}K", b >> 10),
    }
}

/// A report of `score`: each variant's aggregate, then the primary one by
/// size (what `fslab layout` prints).
pub fn render(score: &LayoutScore) -> String {
    let fmt = |t: Tally| t.score().map_or("-".to_string(), |s| format!("{s:.4}"));
    let mut out = format!("regular files   {}\n", score.regular_files);
    out.push_str("variant          score   optimal/counted  files scored\n");
    for (tally, variant) in score.variants.iter().zip(Variant::ALL) {
        out.push_str(&format!(
            "{:<15}  {:>6}  {:>15}  {}\n",
            variant.name(),
            fmt(*tally),
            format!("{}/{}", tally.optimal, tally.counted),
            tally.files
        ));
    }
    out.push_str("by size (data+tail)\n");
    for (i, tally) in score.buckets.iter().enumerate() {
        if tally.files > 0 {
            out.push_str(&format!(
                "  {:<8} {:>6}  {:>15}  {}\n",
                bucket_label(i),
                fmt(*tally),
                format!("{}/{}", tally.optimal, tally.counted),
                tally.files
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use fslab::format::inode::kind;

    fn block(lbn: i64, addr: u64, frags: u32) -> PlacedBlock {
        PlacedBlock { lbn, addr, frags }
    }

    fn file(size: u64, blocks: Vec<PlacedBlock>) -> FilePlacement {
        FilePlacement { ino: 3, kind: kind::REG, size, blocks }
    }

    /// Eight fragments a block. Data 0..2 contiguous, data 3 elsewhere,
    /// a tail of 3 fragments right after it; then variants differ only in
    /// the tail.
    #[test]
    fn a_file_s_tally_counts_blocks_after_the_first_that_follow_the_previous() {
        let f = file(
            4 * 8192 + 3000,
            vec![block(0, 800, 8), block(1, 808, 8), block(2, 816, 8), block(3, 1000, 8), block(4, 1008, 3)],
        );
        assert_eq!(file_tally(&f, 8, Variant::PRIMARY), Tally { files: 1, optimal: 3, counted: 4 });
        assert_eq!(
            file_tally(&f, 8, Variant { indirect: false, tail: false }),
            Tally { files: 1, optimal: 2, counted: 3 }
        );
        let one = file(8192, vec![block(0, 800, 8)]);
        assert_eq!(file_tally(&one, 8, Variant::PRIMARY), Tally::default(), "one block: no score");
        let block_and_tail = file(9000, vec![block(0, 800, 8), block(1, 900, 1)]);
        assert_eq!(
            file_tally(&block_and_tail, 8, Variant::PRIMARY),
            Tally { files: 1, optimal: 0, counted: 1 }
        );
        assert_eq!(
            file_tally(&block_and_tail, 8, Variant { indirect: false, tail: false }),
            Tally::default()
        );
    }

    /// Twelve direct blocks in a row, the indirect block elsewhere, the
    /// thirteenth right after the twelfth: without indirect blocks only
    /// contiguity counts (12/12); with them the seeks to and from the
    /// indirect block are two non-optimal blocks (11/13).
    #[test]
    fn the_indirect_block_is_in_the_sequence_only_in_its_variants() {
        let mut blocks: Vec<PlacedBlock> = (0..12).map(|i| block(i, 1000 + 8 * i as u64, 8)).collect();
        blocks.push(block(-12, 5000, 8));
        blocks.push(block(12, 1096, 8));
        let f = file(13 * 8192, blocks);
        assert_eq!(file_tally(&f, 8, Variant::PRIMARY), Tally { files: 1, optimal: 12, counted: 12 });
        assert_eq!(
            file_tally(&f, 8, Variant { indirect: true, tail: true }),
            Tally { files: 1, optimal: 11, counted: 13 }
        );
    }

    /// The aggregate is blocks over blocks, not a mean of files' scores;
    /// directories are not scored; buckets split by size.
    #[test]
    fn the_aggregate_sums_blocks_over_regular_files_and_buckets_by_size() {
        let a = file(3 * 8192, vec![block(0, 0, 8), block(1, 8, 8), block(2, 16, 8)]); // 2/2
        let b = file(
            100 << 10,
            (0..5).map(|i| block(i, 100 + 16 * i as u64, 8)).collect(), // 0/4
        );
        let mut dir = file(2 * 8192, vec![block(0, 0, 8), block(1, 50, 8)]);
        dir.kind = kind::DIR;
        let s = score(&[a, b, dir], 8);
        assert_eq!(s.regular_files, 2);
        assert_eq!(s.primary(), Tally { files: 2, optimal: 2, counted: 6 });
        assert_eq!(s.primary().score(), Some(2.0 / 6.0));
        assert_eq!(s.buckets[1], Tally { files: 1, optimal: 2, counted: 2 }, "24K: <=32K");
        assert_eq!(s.buckets[4], Tally { files: 1, optimal: 0, counted: 4 }, "100K: <=128K");
        assert_eq!(bucket_label(4), "<=128K");
        assert_eq!(bucket_label(10), ">16M");
        assert!(render(&s).contains("data+tail        0.3333"), "{}", render(&s));
    }
}
