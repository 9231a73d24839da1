//! The CPU cost model: what the papers' machines spent above the disk, charged
//! to the virtual clock so that a run on a simulated disk counts CPU time too
//! (the 1995 paper's LFS is CPU-bound on creates, 64% CPU; 1993 §5.2.1
//! explains raw writes' 5 ms gaps by the copy into the kernel).
//!
//! Four charges, each deterministic:
//!
//! | charge | per | cost |
//! |---|---|---|
//! | system call | each call a workload makes | [`SYSCALL_INSTRUCTIONS`] at the machine's MIPS |
//! | name lookup | each path component | [`LOOKUP_INSTRUCTIONS`] |
//! | inode change | each create, remove, mkdir, rmdir | [`INODE_CHANGE_INSTRUCTIONS`] |
//! | copy | each byte between user and kernel | the machine's copy rate |
//! | checksum | each block the layout checksums | one pass over the block at the copy rate (`paper`: what the paper's system summed) |
//! | directory scan | each directory block a lookup or change reads (2000/2002 machines only) | one pass over the block at the copy rate |
//!
//! Where the figures come from:
//!
//! * **HP 9000/380** (1993 Table 5): 25 MHz 68040, "10–12 MIPS" (11 used),
//!   memory bandwidth 12.0 MB/s, used as its copy rate: a 64 KB copy then
//!   takes 5.3 ms, the "approximately five milliseconds" between raw writes
//!   that §5.2.1 attributes to the copy.
//! * **SparcStation II** (1995 Table 1): the copy rate follows from §4,
//!   "these two copies [of a 4 KB page] take approximately 1.8 ms": 0.9 ms
//!   per 4096 bytes, 4.55 MB/s. Its speed is the Sun 4/260's 10 MIPS (vendor
//!   rating, an estimate) times the paper's CPU scale factor 2.5 (Table 2:
//!   SPECint92 21.8 against 8.7): 25 MIPS.
//! * **Buffer cache**: a number of buffers, four times the write threshold
//!   each paper states (fslab starts a segment write at a quarter of its
//!   cache): about 800 KB of 4 KB blocks on the HP (1993 §5.2.1), 115
//!   blocks on the SparcStation (1995 §4). 4.4BSD's LFS counted its
//!   threshold in buffers, one block each, so a file system of 8 KB blocks
//!   gets twice the bytes of one of 4 KB ([`Machine::cache_bytes`]).
//! * **Instruction counts** per call, lookup and inode change are estimates
//!   of 4.4BSD's path lengths (trap, argument copy-in, vnode dispatch; namei
//!   through the name cache; `ufs_makeinode` or `ufs_remove` with the
//!   layout's inode allocation). The papers state none; the report prints
//!   the CPU share each phase measured beside the 1995 paper's 64% (LFS
//!   creates), 73% (LFS deletes) and 5–6% (FFS), so their effect is visible.
//!
//! * **SparcStation I** (1995 Table 5, §5's fragmentation study): the
//!   SparcStation II's speed and copy rate scaled by the clock, 20 MHz
//!   against 40: 12.5 MIPS, 2.3 MB/s (estimates).
//! * **Pentium, 120 MHz** (1997 Table 1, the aging study's): SPECint92
//!   about 120 (estimate) against the Sun 4/260's 8.7, so 10 × 120 / 8.7
//!   ≈ 138 MIPS on the SparcStation II's scale; copy rate 40 MB/s (a PCI
//!   machine of 1995 with page-mode memory; estimate); 800 buffers of 8
//!   KB, 6.4 MB, a tenth of its 64 MB, as 4.4BSD-derived kernels sized a
//!   fixed buffer cache (estimate; §5.2 says only that the 59.5 MB of hot
//!   files "cannot all fit in the buffer cache").
//! * **Pentium 4, 1.6 GHz** (2002 §4.2): its speed is calibrated so that
//!   a create costs the 50 µs that 2002 Fig. 2 measured with dirhash (the
//!   call, two path components and the inode change, 11,000 instructions:
//!   220 MIPS). Its copy rate, 1 GB/s, and its buffer cache, 2,048 buffers
//!   (16 MB of 8 KB blocks, of 256 MB of memory), are estimates. For
//!   buildworld, whose files FreeBSD's VM cached in most of the 256 MB,
//!   the same machine with 192 MB of buffers (`pentium4-1600-256m`).
//! * **Pentium III Xeon, 500 MHz** (2000 Table 3): the Pentium 4's
//!   calibration scaled by the clock, 69 MIPS; copy rate 300 MB/s (PC100
//!   memory) and 4,096 buffers (32 MB of 512 MB) are estimates.
//! * **Directory scans** are what dirhash saves (2002 §3): a lookup or a
//!   change without a hash reads the directory's blocks, one comparison
//!   per entry. On a system with dirhash off, the machines of the 2000 and
//!   2002 papers charge each block read (fslab's dirhash counter,
//!   `DirhashStats::blocks_read`) as one pass over it at the copy rate; at
//!   10,000 entries a linear create then costs a few hundred µs, as in 2002
//!   Fig. 2. With dirhash on nothing more is charged: the 50 µs the
//!   Pentium 4 is calibrated to were measured with dirhash, and a hashed
//!   lookup's reads depend on its table's random key (§3.5), which would
//!   make runs differ. The 1993 and 1995 machines charge no scans: their
//!   results were calibrated without them, and those papers' directories
//!   held at most 100 files.
//!
//! Checksums are charged at the copy rate because a checksum reads every
//! byte once, as a copy does. fslab checksums whole blocks (CRC32C over
//! every byte of a partial segment; FFS over its metadata blocks). The
//! papers' systems did far less: 4.4BSD's LFS computed "a checksum across
//! four bytes of each block in the partial segment" (1993 §3.3), and
//! 4.4BSD's FFS none. So under [`Charges::On`] (`--cpu-model on`, the
//! default) the checksum charge is fslab's work at the paper machine's
//! rates, not the paper's.
//!
//! [`Charges::Paper`] (`--cpu-model paper`) charges what the papers'
//! systems did instead, each layout as its ancestor
//! ([`PaperChecksum`]), and everything else as `on`. For LFS that is, per
//! partial segment, one word of each block after the summary and the
//! summary's own 508 bytes (4.4BSD `lfs_writeseg`: it copies each block's
//! first word into an array, sums the array into `ss_datasum`, then sums
//! `LFS_SUMMARY_SIZE`, 512 bytes, less the sum's own word). The word is
//! charged as four bytes at the copy rate rather than as one add at the
//! machine's MIPS, because what 4.4BSD did with it was a copy (into the
//! array) and then a read, the kind of memory work this model charges at
//! the copy rate: 0.33 µs a block on the HP, 0.9 µs on the SparcStation
//! II, a few instructions' worth at their MIPS. Either choice is under
//! 1 µs a block, against 0.34 ms (HP, 4 KB) or 0.9 ms (SparcStation, 4
//! KB) for the whole-block charge it replaces, so the choice cannot move
//! a result; the whole-block charge can. `--cpu-model off` charges
//! nothing and shows the disk alone.

use serde::{Deserialize, Serialize};

/// Instructions of a system call's fixed path: trap, copy-in of the
/// arguments, file-descriptor lookup, vnode dispatch, return (estimate).
pub const SYSCALL_INSTRUCTIONS: f64 = 2_000.0;
/// Instructions to look up one path component (estimate).
pub const LOOKUP_INSTRUCTIONS: f64 = 1_500.0;
/// Instructions to create or remove an inode and its directory entry,
/// beyond the call and the lookup (estimate).
pub const INODE_CHANGE_INSTRUCTIONS: f64 = 6_000.0;

/// A machine of the papers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Machine {
    /// Short name, as in `--cpu-model` output and the report.
    pub name: &'static str,
    /// Millions of instructions per second.
    pub mips: f64,
    /// Bytes per second a user–kernel copy moves.
    pub copy_bytes_per_s: f64,
    /// Buffers of the buffer cache, one block each: four times the write
    /// threshold the paper states, since fslab starts a segment write at a
    /// quarter of its cache.
    pub buffers: u64,
    /// Whether directory blocks read by lookups and changes are charged
    /// (see the module's notes).
    pub charges_directory_scans: bool,
    /// Where the figures come from.
    pub source: &'static str,
}

/// The HP 9000/380 of the 1993 paper.
pub const HP9000_380: Machine = Machine {
    name: "hp9000-380",
    mips: 11.0,
    copy_bytes_per_s: 12.0e6,
    buffers: 800,
    charges_directory_scans: false,
    source: "1993 Table 5: 10-12 MIPS, memory bandwidth 12.0 MB/s; §5.2.1: writes start at about 800 KB",
};

/// The SparcStation II of the 1995 paper.
pub const SPARCSTATION_2: Machine = Machine {
    name: "sparcstation2",
    mips: 25.0,
    copy_bytes_per_s: 4096.0 / 0.9e-3,
    buffers: 4 * 115,
    charges_directory_scans: false,
    source: "1995 §4: a 4 KB copy takes 0.9 ms, LFS writes at 115 dirty blocks; 25 MIPS = 10 (Sun 4/260) x 2.5 (Table 2)",
};

/// The SparcStation I of the 1995 paper's fragmentation study (§5.3,
/// Table 5: 20 MHz, 32 MB). Its speed and copy rate are the SparcStation
/// II's scaled by the clock (20 against 40 MHz); its buffer cache the
/// SparcStation II's (the paper states none for it). Estimates.
pub const SPARCSTATION_1: Machine = Machine {
    name: "sparcstation1",
    mips: 25.0 * 20.0 / 40.0,
    copy_bytes_per_s: 4096.0 / 0.9e-3 * 20.0 / 40.0,
    buffers: 4 * 115,
    charges_directory_scans: false,
    source:
        "1995 Table 5: SparcStation I, 20 MHz; the SparcStation II's figures scaled by the clock (estimate)",
};

/// The Pentium 120 of the 1997 aging paper (Table 1: Intel Pentium, 120
/// MHz, 64 MB, PCI). Estimates, as the module's notes say.
pub const PENTIUM_120: Machine = Machine {
    name: "pentium-120",
    mips: 10.0 * 120.0 / 8.7,
    copy_bytes_per_s: 40.0e6,
    buffers: 800,
    charges_directory_scans: false,
    source: "1997 Table 1: Pentium 120 MHz, 64 MB; SPECint92 ~120 on the SparcStation II's scale, 40 MB/s \
             copies and a 6.4 MB buffer cache (estimates)",
};

/// The Pentium 4 of the 2002 paper.
pub const PENTIUM4_1600: Machine = Machine {
    name: "pentium4-1600",
    mips: 220.0,
    copy_bytes_per_s: 1.0e9,
    buffers: 2048,
    charges_directory_scans: true,
    source:
        "2002 §4.2: Pentium 4 1.6 GHz, 256 MB; Fig. 2: 50 us a create with dirhash = 220 MIPS; copy rate and \
             cache are estimates",
};

/// The Pentium 4 of the 2002 paper with its 256 MB as the cache (the
/// buildworld benchmark), as [`PENTIUM3_500_512MB`] is the 2000 paper's
/// machine for its macrobenchmarks: 24,576 buffers of 8 KB, 192 MB, three
/// quarters of the memory (an estimate). FreeBSD 4's VM kept file pages,
/// and with vmiodir directories too (2002 §2.3), in what the kernel and
/// programs left; a source tree and its objects, about 600 MB, do not fit.
pub const PENTIUM4_1600_256MB: Machine = Machine {
    name: "pentium4-1600-256m",
    buffers: 24_576,
    source:
        "2002 §4.2: 256 MB; three quarters of it as the cache of file pages and metadata (estimate); the \
             rest as pentium4-1600",
    ..PENTIUM4_1600
};

/// The Pentium III Xeon of the 2000 paper.
pub const PENTIUM3_500: Machine = Machine {
    name: "pentium3-500",
    mips: 220.0 * 500.0 / 1600.0,
    copy_bytes_per_s: 300.0e6,
    buffers: 4096,
    charges_directory_scans: true,
    source: "2000 Table 3: 500 MHz Pentium III Xeon, 512 MB; the Pentium 4's calibration scaled by the clock; copy \
             rate and cache are estimates",
};

/// The Pentium III Xeon of the 2000 paper with its 512 MB as the cache
/// (the macrobenchmarks): FreeBSD's unified buffer cache (VMIO) kept file
/// pages in all the memory the kernel and programs left, where the
/// microbenchmarks' 4,096 buffers count the buffer cache proper. 49,152
/// buffers of 8 KB, 384 MB, three quarters of the memory (an estimate):
/// PostMark's default set (84 MB) then fits, as its 21 s on FFS-async
/// (§8.2.4) says it did, and Netnews's 2 GB spool does not (§8.2.2).
pub const PENTIUM3_500_512MB: Machine = Machine {
    name: "pentium3-500-512m",
    buffers: 49_152,
    source:
        "2000 Table 3: 512 MB; three quarters of it as the cache of file pages and metadata (estimate); the \
             rest as pentium3-500",
    ..PENTIUM3_500
};

impl Machine {
    /// The buffer cache's bytes for a file system of `block_size` bytes
    /// a block (the mount's `cache_bytes`).
    pub fn cache_bytes(&self, block_size: u32) -> u64 {
        self.buffers * u64::from(block_size)
    }
}

/// Every machine, by name.
pub const MACHINES: &[Machine] = &[
    HP9000_380,
    SPARCSTATION_2,
    SPARCSTATION_1,
    PENTIUM_120,
    PENTIUM3_500,
    PENTIUM3_500_512MB,
    PENTIUM4_1600,
    PENTIUM4_1600_256MB,
];

/// The machine called `name`.
pub fn machine(name: &str) -> Option<Machine> {
    MACHINES.iter().copied().find(|m| m.name == name)
}

/// Which work `--cpu-model` charges to the clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Charges {
    /// fslab's work at the paper machine's rates, its whole-block
    /// checksums included.
    #[default]
    On,
    /// Nothing: the disk alone.
    Off,
    /// As `On`, but each layout's checksums as its ancestor in the papers
    /// computed them ([`PaperChecksum`]): what the paper's system spent.
    Paper,
}

impl Charges {
    /// The name `--cpu-model` takes and `results.json` records.
    pub fn name(self) -> &'static str {
        match self {
            Charges::On => "on",
            Charges::Off => "off",
            Charges::Paper => "paper",
        }
    }
}

/// The checksum that a layout's ancestor in the papers computed over the
/// blocks fslab's layout checksums whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PaperChecksum {
    /// None: 4.4BSD's FFS checksummed nothing, and a backend without a
    /// layout checksums nothing either.
    #[default]
    None,
    /// 4.4BSD's LFS (1993 §3.3): one word of each block of a partial
    /// segment, and the summary's [`PAPER_LFS_SUMMARY_BYTES`].
    LfsWordPerBlock,
}

/// Bytes of a block that 4.4BSD's LFS summed into its summary's data
/// checksum: one word (both papers' machines were 32-bit).
pub const PAPER_LFS_WORD_BYTES: u64 = 4;

/// Bytes of a segment summary that 4.4BSD's LFS summed into the summary's
/// own checksum: `LFS_SUMMARY_SIZE` (512) less the checksum's word.
pub const PAPER_LFS_SUMMARY_BYTES: u64 = 512 - 4;

/// The checksums a layout computed, as counts since it was mounted (or,
/// from [`Checksummed::since`], over an interval).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Checksummed {
    /// Blocks checksummed whole, summaries included.
    pub blocks: u64,
    /// Of those, partial segments' summaries (LFS; 0 for other layouts).
    pub summaries: u64,
    /// The blocks' size in bytes.
    pub block_size: u32,
    /// What the layout's ancestor computed over the same blocks.
    pub paper: PaperChecksum,
}

impl Checksummed {
    /// The checksums computed since `earlier`, an earlier count of the same
    /// layout (a count that went backwards, as across a remount that
    /// lost it, gives nothing).
    pub fn since(&self, earlier: &Checksummed) -> Checksummed {
        Checksummed {
            blocks: self.blocks.saturating_sub(earlier.blocks),
            summaries: self.summaries.saturating_sub(earlier.summaries),
            ..*self
        }
    }
}

/// The charges of one machine, or none (`off`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CpuModel {
    machine: Option<Machine>,
    /// Whether checksums are charged as the papers' systems computed
    /// them rather than as fslab does.
    paper_checksums: bool,
}

impl CpuModel {
    /// Charges for `machine` (`--cpu-model on`).
    pub fn of(machine: Machine) -> CpuModel {
        CpuModel { machine: Some(machine), paper_checksums: false }
    }

    /// Charges for `machine` with the papers' checksums (`--cpu-model
    /// paper`).
    pub fn paper(machine: Machine) -> CpuModel {
        CpuModel { machine: Some(machine), paper_checksums: true }
    }

    /// No charges: the disk alone.
    pub fn off() -> CpuModel {
        CpuModel { machine: None, paper_checksums: false }
    }

    /// The model `charges` selects for `machine`.
    pub fn with(charges: Charges, machine: Machine) -> CpuModel {
        match charges {
            Charges::On => CpuModel::of(machine),
            Charges::Off => CpuModel::off(),
            Charges::Paper => CpuModel::paper(machine),
        }
    }

    /// Which work the model charges.
    pub fn charges(&self) -> Charges {
        match (self.machine, self.paper_checksums) {
            (None, _) => Charges::Off,
            (Some(_), false) => Charges::On,
            (Some(_), true) => Charges::Paper,
        }
    }

    /// The machine charged for, if any.
    pub fn machine(&self) -> Option<Machine> {
        self.machine
    }

    /// The model's name for reports: the machine's, or `off`.
    pub fn name(&self) -> &'static str {
        self.machine.map_or("off", |m| m.name)
    }

    /// Running `instructions` instructions.
    pub fn instructions_ns(&self, instructions: f64) -> u64 {
        self.machine.map_or(0, |m| (instructions * 1_000.0 / m.mips).round() as u64)
    }

    /// One system call's fixed cost.
    pub fn syscall_ns(&self) -> u64 {
        self.instructions_ns(SYSCALL_INSTRUCTIONS)
    }

    /// Looking up `components` path components.
    pub fn lookup_ns(&self, components: usize) -> u64 {
        self.instructions_ns(LOOKUP_INSTRUCTIONS * components as f64)
    }

    /// Creating or removing one inode and its entry.
    pub fn inode_change_ns(&self) -> u64 {
        self.instructions_ns(INODE_CHANGE_INSTRUCTIONS)
    }

    /// Copying `bytes` between user and kernel.
    pub fn copy_ns(&self, bytes: u64) -> u64 {
        self.machine.map_or(0, |m| (bytes as f64 * 1e9 / m.copy_bytes_per_s).round() as u64)
    }

    /// The checksums `work` counts: every byte of every block, or under
    /// `paper` what the layout's ancestor summed of them.
    pub fn checksum_ns(&self, work: &Checksummed) -> u64 {
        let bytes = if !self.paper_checksums {
            work.blocks.saturating_mul(u64::from(work.block_size))
        } else {
            match work.paper {
                PaperChecksum::None => 0,
                PaperChecksum::LfsWordPerBlock => {
                    let data = work.blocks.saturating_sub(work.summaries);
                    data.saturating_mul(PAPER_LFS_WORD_BYTES)
                        .saturating_add(work.summaries.saturating_mul(PAPER_LFS_SUMMARY_BYTES))
                }
            }
        };
        self.copy_ns(bytes)
    }

    /// Scanning `blocks` directory blocks of `block_size` bytes: nothing
    /// on a machine calibrated without it.
    pub fn dir_scan_ns(&self, blocks: u64, block_size: u32) -> u64 {
        match self.machine {
            Some(m) if m.charges_directory_scans => self.copy_ns(blocks.saturating_mul(block_size as u64)),
            _ => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `blocks` LFS blocks of 4 KB written, `summaries` of them summaries.
    fn lfs_blocks(blocks: u64, summaries: u64) -> Checksummed {
        Checksummed { blocks, summaries, block_size: 4096, paper: PaperChecksum::LfsWordPerBlock }
    }

    #[test]
    fn paper_charges_lfs_one_word_a_block_and_its_summary() {
        // A partial segment of a summary and 99 blocks, on the HP.
        let work = lfs_blocks(100, 1);
        let on = CpuModel::of(HP9000_380).checksum_ns(&work);
        let paper = CpuModel::paper(HP9000_380).checksum_ns(&work);
        // on: 100 x 4096 bytes at 12 MB/s.
        assert_eq!(on, 34_133_333);
        // paper: 99 words and the summary's 508 bytes, 904 bytes at 12 MB/s.
        assert_eq!(paper, 75_333);
        assert_eq!(on - paper, 34_058_000, "what fslab's CRC adds to the paper's sum");
        // On the SparcStation II a block's word is 0.9 us, its whole 4 KB 0.9 ms.
        let ss2 = CpuModel::paper(SPARCSTATION_2);
        assert_eq!(ss2.checksum_ns(&lfs_blocks(2, 1)) - ss2.checksum_ns(&lfs_blocks(1, 1)), 879);
        assert_eq!(CpuModel::of(SPARCSTATION_2).checksum_ns(&lfs_blocks(1, 0)), 900_000);
        // Blocks of 8 KB cost the paper the same word each.
        let big = Checksummed { block_size: 8192, ..work };
        assert_eq!(CpuModel::paper(HP9000_380).checksum_ns(&big), paper);
        assert_eq!(CpuModel::of(HP9000_380).checksum_ns(&big), 68_266_667, "twice the bytes");
    }

    #[test]
    fn paper_charges_ffs_checksums_nothing_and_everything_else_as_on() {
        let ffs = Checksummed { blocks: 10, summaries: 0, block_size: 8192, paper: PaperChecksum::None };
        let (on, paper) = (CpuModel::of(SPARCSTATION_2), CpuModel::paper(SPARCSTATION_2));
        assert_eq!(paper.checksum_ns(&ffs), 0, "4.4BSD's FFS had no checksums");
        assert_eq!(on.checksum_ns(&ffs), on.copy_ns(10 * 8192));
        assert_eq!(
            (paper.syscall_ns(), paper.lookup_ns(2), paper.inode_change_ns(), paper.copy_ns(4096)),
            (on.syscall_ns(), on.lookup_ns(2), on.inode_change_ns(), on.copy_ns(4096))
        );
        assert_eq!(paper.machine(), Some(SPARCSTATION_2));
        assert_eq!((on.charges(), paper.charges()), (Charges::On, Charges::Paper));
        for charges in [Charges::On, Charges::Off, Charges::Paper] {
            assert_eq!(CpuModel::with(charges, SPARCSTATION_2).charges(), charges, "{}", charges.name());
        }
    }

    #[test]
    fn an_interval_counts_the_blocks_and_summaries_written_in_it() {
        let (before, after) = (lfs_blocks(10, 2), lfs_blocks(25, 3));
        assert_eq!(after.since(&before), lfs_blocks(15, 1));
        assert_eq!(before.since(&after), lfs_blocks(0, 0), "a count that went backwards gives nothing");
    }

    #[test]
    fn the_papers_figures_give_the_papers_copy_times() {
        let hp = CpuModel::of(HP9000_380);
        // 1993 §5.2.1: about 5 ms between raw 64 KB writes.
        let gap = hp.copy_ns(64 << 10) as f64 / 1e6;
        assert!((5.0..5.7).contains(&gap), "{gap} ms");
        let ss2 = CpuModel::of(SPARCSTATION_2);
        // 1995 §4: two 4 KB copies take about 1.8 ms.
        assert_eq!(ss2.copy_ns(2 * 4096), 1_800_000);
        assert_eq!(ss2.checksum_ns(&lfs_blocks(1, 0)), ss2.copy_ns(4096));
        assert_eq!(ss2.syscall_ns(), 80_000, "2,000 instructions at 25 MIPS");
    }

    #[test]
    fn the_write_threshold_is_the_papers_count_of_blocks() {
        // fslab starts a segment write at a quarter of its cache.
        assert_eq!(SPARCSTATION_2.cache_bytes(4096) / 4, 115 * 4096, "1995 §4: 115 blocks");
        assert_eq!(SPARCSTATION_2.cache_bytes(8192) / 4, 115 * 8192, "of 8 KB blocks, 115 of them too");
        let hp = HP9000_380.cache_bytes(4096) / 4;
        assert!((780_000..=830_000).contains(&hp), "1993 §5.2.1: about 800 KB, {hp}");
    }

    #[test]
    fn the_2002_machine_creates_in_the_papers_50_us() {
        let p4 = CpuModel::of(PENTIUM4_1600);
        // 2002 Fig. 2: about 50 us a create with dirhash: the call, two
        // components ("folder/123") and the inode change.
        let create = p4.syscall_ns() + p4.lookup_ns(2) + p4.inode_change_ns();
        assert_eq!(create, 50_000);
        assert!(p4.dir_scan_ns(1, 8192) > 0);
        assert_eq!(CpuModel::of(SPARCSTATION_2).dir_scan_ns(10, 4096), 0, "calibrated without it");
        assert_eq!(machine("pentium3-500"), Some(PENTIUM3_500));
    }

    #[test]
    fn off_charges_nothing() {
        let off = CpuModel::off();
        assert_eq!(
            off.syscall_ns() + off.lookup_ns(3) + off.copy_ns(1 << 20) + off.checksum_ns(&lfs_blocks(9, 1)),
            0
        );
        assert_eq!(off.charges(), Charges::Off);
        assert_eq!(off.name(), "off");
        assert_eq!(machine("hp9000-380"), Some(HP9000_380));
        assert_eq!(machine("vax"), None);
    }
}
