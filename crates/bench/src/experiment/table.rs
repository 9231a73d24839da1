//! [`EXPERIMENTS`]: every table and figure the lab reproduces, one entry
//! each (paper, disk, machine, systems, workload, plots, published
//! numbers), and [`BUILDWORLD_LATTICE`], the systems of the buildworld
//! factorial. The helpers and texts here serve the table alone.

use super::{Experiment, PlotSpec, Published, Workload, OF_EMPTY};
use crate::cpu::{
    HP9000_380, PENTIUM3_500, PENTIUM3_500_512MB, PENTIUM4_1600, PENTIUM4_1600_256MB, PENTIUM_120,
    SPARCSTATION_1, SPARCSTATION_2,
};
use crate::factorial::{Lattice, COEFFICIENT, OF_BASE};

const KB: f64 = 1024.0;

/// A plot of `metric` in `phase` against file size on a log scale.
const fn by_size(
    name: &'static str,
    title: &'static str,
    phase: &'static [&'static str],
    metric: &'static str,
    x_label: &'static str,
    y_label: &'static str,
) -> PlotSpec {
    PlotSpec { name, title, phases: phase, metric, x_label, y_label, log_x: true, x_unit: KB }
}

const fn published(
    system: &'static str,
    phase: &'static str,
    x: f64,
    metric: &'static str,
    value: f64,
    source: &'static str,
) -> Published {
    Published { system, phase, x, metric, value, source }
}

/// What both PostMark experiments run, after the number of files.
macro_rules! postmark_settings {
    () => {
        "transactions 20,000, read and write 512, bias read 5 and create 5, subdirectories 0 (every file in \
         one directory), buffering on (stdio's 8 KB calls); each transaction a whole-file read or an append of \
         1..(16384 - size) bytes, then a create or a delete; the pool's creation and deletion timed as their \
         own phases; no fsync; the lab's seeded generator in place of 1.13's. One run each (the paper \
         averaged 5). Cheetah 9LP, the whole drive, dirhash off: a create scans the whole directory and a \
         lookup half of it on average, charged by the Pentium III's CPU model. The paper plotted throughput \
         relative to FFS-async: here FFS-async's time over the system's per phase (transactions: the same as \
         the ratio of TPS)."
    };
}

/// Every experiment, in the order `bench list` shows and `all` runs them.
pub const EXPERIMENTS: &[Experiment] = &[
    Experiment {
        id: "s93-bandwidth",
        title: "Raw file-system bandwidth against transfer size",
        source: "1993 Fig. 9 and 12",
        about: "A file of size S written (write + fsync) and read (after a remount) 50 times; the raw device \
                writes and reads in synchronous 64 KB transfers with the copy between them. HP 97560, HP 9000/380. \
                MB = 10^6 bytes.",
        disk: "hp97560",
        machine: HP9000_380,
        systems: &["raw", "lfs", "ffs", "efs"],
        workload: Workload::Bandwidth,
        plots: &[
            by_size("s93-bandwidth-write", "Write bandwidth (1993 Fig. 9)", &["write"], "MB/s", "I/O size (KB, log scale)", "Throughput (MB/s)"),
            by_size("s93-bandwidth-read", "Read bandwidth (1993 Fig. 12)", &["read"], "MB/s", "I/O size (KB, log scale)", "Throughput (MB/s)"),
        ],
        published: &[
            published("ffs", "write", f64::INFINITY, "MB/s", 0.5, "1993 §5.2.1: 0.5 of the possible 1.6 MB/s"),
            published("raw", "read", f64::INFINITY, "MB/s", 1.6, "1993 Table 5: the bus limit"),
        ],
    },
    Experiment {
        id: "s95-small-files",
        title: "Rosenblum's small-file test: 10,000 files of 1 KB",
        source: "1995 Fig. 1",
        about: "Create (with sync), read in creation order after a remount, delete (with sync); 100 files a \
                directory. DSP 3105, SparcStation II. LFS has 4 KB blocks and no fragments, so a 1 KB file takes a \
                4 KB block (the paper's 4.4BSD-Lite LFS had fragments).",
        disk: "dsp3105",
        machine: SPARCSTATION_2,
        systems: &["lfs", "ffs-m1r2", "ffs-m8r2"],
        workload: Workload::SmallFiles,
        plots: &[PlotSpec {
            name: "s95-small-files",
            title: "Small-file test (1995 Fig. 1)",
            phases: &["create", "read", "delete"],
            metric: "files/s",
            x_label: "phase",
            y_label: "Files per second",
            log_x: false,
            x_unit: 1.0,
        }],
        published: &[
            published("lfs", "create", 0.0, "cpu%", 64.0, "1995 §2: LFS uses 64% of the CPU for creates"),
            published("lfs", "delete", 0.0, "cpu%", 73.0, "1995 §2: and 73% for deletes"),
        ],
    },
    Experiment {
        id: "s95-large-file",
        title: "Rosenblum's large-file test: a 100 MB file in 8 KB units",
        source: "1995 Fig. 2",
        about: "Sequential write (with fsync), sequential read, 100 KB of random 8 KB writes (with fsync), 100 KB \
                of random reads, sequential re-read; caches dropped before each read. DSP 3105, SparcStation II. \
                MB = 2^20 bytes.",
        disk: "dsp3105",
        machine: SPARCSTATION_2,
        systems: &["lfs", "ffs-m1r2", "ffs-m8r2"],
        workload: Workload::LargeFile,
        plots: &[PlotSpec {
            name: "s95-large-file",
            title: "Large-file test (1995 Fig. 2)",
            phases: &["seq-write", "seq-read", "rand-write", "rand-read", "seq-reread"],
            metric: "MB/s",
            x_label: "phase",
            y_label: "Throughput (MB/s)",
            log_x: false,
            x_unit: 1.0,
        }],
        published: &[],
    },
    Experiment {
        id: "s95-sequential",
        title: "Create, read, overwrite and delete 32 MB as files of 1 KB to 64 MB",
        source: "1995 Fig. 3-6",
        about: "32 MB per file size (at least ten files), at most 100 files a directory, a fresh file system per \
                size, writes ending in sync, caches dropped before the reads and before the deletes. DSP 3105, \
                SparcStation II, no cleaner needed. The paper's LFS had 8 KB blocks here (§3, §4) and 1 KB \
                fragments (§2); fslab's LFS has no fragments, so the lab runs it with 8 KB blocks (lfs-8k, the \
                paper's layout from 8 KB files up) and 4 KB blocks (lfs, the nearer for files of 1-4 KB, which the \
                paper's wrote as fragments). Each size is run again with every file's inode loaded (opened and \
                closed, untimed) after the drop before the deletes, recorded as delete (inodes loaded): the \
                alternative claim 2's setup choices show. MB = 2^20 bytes.",
        disk: "dsp3105",
        machine: SPARCSTATION_2,
        systems: &["lfs", "lfs-8k", "ffs-m8r0", "ffs-m8r2"],
        workload: Workload::Sequential,
        plots: &[
            by_size("s95-create", "Create (1995 Fig. 3)", &["create"], "MB/s", "File size (KB, log scale)", "Throughput (MB/s)"),
            by_size("s95-read", "Read (1995 Fig. 4)", &["read"], "MB/s", "File size (KB, log scale)", "Throughput (MB/s)"),
            by_size("s95-overwrite", "Overwrite (1995 Fig. 5)", &["overwrite"], "MB/s", "File size (KB, log scale)", "Throughput (MB/s)"),
            by_size("s95-delete", "Delete (1995 Fig. 6)", &["delete"], "files/s", "File size (KB, log scale)", "Files deleted per second"),
        ],
        published: &[
            published("lfs-8k", "create", f64::INFINITY, "MB/s", 0.67 * 2.5, "1995 §3.1: about 67% of the 2.5 MB/s disk"),
            published("ffs-m8r2", "create", f64::INFINITY, "MB/s", 0.75 * 2.5, "1995 §3.1: about 75%"),
            published("lfs-8k", "read", f64::INFINITY, "MB/s", 2.3, "1995 §3.2: large files approach the 2.3 MB/s bus"),
        ],
    },
    Experiment {
        id: "s95-aged",
        title: "FFS on an aged free-space map against an empty FFS: create and read 8 KB, 64 KB, 1 MB files",
        source: "1995 §5, Fig. 8",
        about: "The paper rebuilt Harvard file systems from their snapshots' free-space bitmaps; those are not \
                public, so an image aged by the lab's 1997 stream (docs/lab/aging.md) stands in: ffs-m7r0 (8 KB \
                blocks, 1 KB fragments, maxcontig 7, rotdelay 0, 12 MB groups as Table 4's 1520 blocks) made on \
                a memory disk, aged (seed as --seed, 300 days writing 100 x the file system; --quick: 30 days, \
                10 x), and its free-space map, only that, imposed on a new ffs-m7r0 on the simulated disk \
                (ffs-aged; §5.3). The partition: 372 MB, 31 groups (Table 4's staff: 353 MB, 31 groups; \
                --quick: 48 MB, 4 groups). Then the create and read phases of the sequential benchmark, 25 files \
                a directory, 32 MB per size (--quick: 4 MB), each size on a new copy, against the same on an \
                empty ffs-m7r0; caches dropped before the reads. One aged map, where the paper had six file \
                systems on four dates. Fujitsu M2694EXA, SparcStation I (estimated). The result is x empty: the \
                aged system's MB/s over the empty one's. MB = 2^20 bytes.",
        disk: "m2694",
        machine: SPARCSTATION_1,
        systems: &["ffs-m7r0", "ffs-aged"],
        workload: Workload::AgedSequential,
        plots: &[
            by_size("s95-aged", "Aged FFS as a share of empty (1995 Fig. 8)", &["create", "read"], OF_EMPTY, "File size (KB, log scale)", "Aged / empty throughput"),
            by_size("s95-aged-throughput", "Create and read on aged and empty FFS", &["create", "read"], "MB/s", "File size (KB, log scale)", "Throughput (MB/s)"),
        ],
        published: &[
            published("ffs-aged", "create", 65536.0, OF_EMPTY, 0.71, "1995 §5.4: the worst case, cnews, 64 KB write, January"),
        ],
    },
    Experiment {
        id: "ss97-realloc",
        title: "Realloc on an aged FFS: layout by day, hot files read and rewritten, sequential I/O",
        source: "1997 Fig. 2, Table 2, Fig. 4-5",
        about: "The paper's file system (Table 1): 502 MB, 8 KB blocks, 1 KB fragments, maxcontig 7, rotdelay 0, \
                27 groups; ffs97 with the original allocator, ffs97-realloc with realloc. Each is made on a \
                memory disk and aged by the 1997 stream from the same seed (--seed; 300 days writing 100 x \
                the file system, `fslab age`'s defaults; asynchronous, on a virtual clock moved to each \
                operation's time, no CPU model: the image docs/lab/aging.md measured), its layout score \
                recorded every tenth day and on the last (Fig. 2). The aged image is then copied onto the \
                start of a simulated ST32430N and mounted with synchronous metadata (BSD/OS 2.0.1's) on \
                virtual time with the Pentium 120's CPU model (estimated). Hot files (§5.2): the files \
                modified (created, written or truncated) in the last 30 days, sorted by directory, read whole \
                and then overwritten in place ending in sync, 4 MB I/Os, caches dropped before each (Table 2); \
                their layout score too. The stream's last month modifies nearly every file, so the same \
                benchmark also runs on the most recently modified 10.6% of the files (recent: the paper's \
                929 of 8774), each set on its own copy of the image. Sequential (§5.1): 32 MB as files of 16 KB to 32 MB, 25 files a \
                directory, created (one write up to 4 MB, 4 MB writes above, ending in sync) and read in \
                creation order after the caches are dropped, each size on a new copy of the aged image; the \
                layout score of the files created (Fig. 5). --quick: 48 MB (3 groups) aged 30 days at 10 x, \
                hot files of the last 3 days, 4 MB per size at four sizes. One run each; the paper ran ten. \
                MB = 2^20 bytes.",
        disk: "st32430n",
        machine: PENTIUM_120,
        systems: &["ffs97", "ffs97-realloc"],
        workload: Workload::AgedRealloc,
        plots: &[
            PlotSpec {
                name: "ss97-aging",
                title: "Aggregate layout score while aging (1997 Fig. 2)",
                phases: &["aging"],
                metric: "score",
                x_label: "Simulated day",
                y_label: "Layout score (data+tail)",
                log_x: false,
                x_unit: 1.0,
            },
            PlotSpec {
                name: "ss97-hot",
                title: "Hot files on the aged FFS (1997 Table 2)",
                phases: &["hot-read", "hot-write", "recent-read", "recent-write"],
                metric: "MB/s",
                x_label: "phase",
                y_label: "Throughput (MB/s)",
                log_x: false,
                x_unit: 1.0,
            },
            by_size("ss97-seq-read", "Sequential read on the aged FFS (1997 Fig. 4, top)", &["read"], "MB/s", "File size (KB, log scale)", "Throughput (MB/s)"),
            by_size("ss97-seq-write", "Sequential create on the aged FFS (1997 Fig. 4, bottom)", &["create"], "MB/s", "File size (KB, log scale)", "Throughput (MB/s)"),
            by_size("ss97-seq-layout", "Layout score of the sequential benchmark's files (1997 Fig. 5)", &["seq-layout"], "score", "File size (KB, log scale)", "Layout score (data+tail)"),
        ],
        published: &[
            published("ffs97", "aging", f64::INFINITY, "score", 0.766, "1997 §4, Fig. 2: FFS at the end of 300 days"),
            published("ffs97-realloc", "aging", f64::INFINITY, "score", 0.899, "1997 §4, Fig. 2: FFS + realloc at the end"),
            published("ffs97", "hot", 0.0, "score", 0.80, "1997 Table 2: FFS, layout of the hot files"),
            published("ffs97-realloc", "hot", 0.0, "score", 0.96, "1997 Table 2: FFS + realloc"),
            published("ffs97", "hot", 0.0, "files", 929.0, "1997 §5.2: 929 of 8774 files"),
            published("ffs97", "hot", 0.0, "MB", 59.5, "1997 §5.2: 59.5 MB, 19% of the allocated space"),
            published("ffs97", "hot-read", 0.0, "MB/s", 1.65, "1997 Table 2: FFS"),
            published("ffs97-realloc", "hot-read", 0.0, "MB/s", 2.18, "1997 Table 2: FFS + realloc (+32%)"),
            published("ffs97", "hot-write", 0.0, "MB/s", 1.04, "1997 Table 2: FFS"),
            published("ffs97-realloc", "hot-write", 0.0, "MB/s", 1.25, "1997 Table 2: FFS + realloc (+20%)"),
        ],
    },
    Experiment {
        id: "s95-tpcb",
        title: "TPC-B throughput against file-system utilization",
        source: "1995 Fig. 7",
        about: "The 10-TPS database (237 MB of accounts) on a partition it fills to 48%, the paper's lowest \
                utilization; other data, written after it, brings the partition to each higher one. The \
                application's 4 MB cache; throughput before the cleaner runs (no-cleaning) and once it cleans \
                (cleaning). DSP 3105, SparcStation II, 4 KB blocks, segment writes at 115 dirty blocks. Each \
                utilization above 48% is run again on a partition the database alone fills to it, each phase \
                named with (partition sized): the alternative claim 3's setup choices show.",
        disk: "dsp3105",
        machine: SPARCSTATION_2,
        systems: &["lfs", "lfs-greedy", "lfs-hot-cold", "ffs-4k"],
        workload: Workload::TpcbByUtilization,
        plots: &[PlotSpec {
            name: "s95-tpcb",
            title: "TPC-B (1995 Fig. 7)",
            phases: &["no-cleaning", "cleaning"],
            metric: "TPS",
            x_label: "File-system utilization (%)",
            y_label: "Transactions per second",
            log_x: false,
            x_unit: 1.0,
        }],
        published: &[
            published("lfs", "no-cleaning", 48.0, "TPS", 44.0, "1995 §4: the model's 44 TPS (measured within 7%)"),
            published("lfs", "cleaning", 48.0, "TPS", 30.0, "1995 §4: steady-state model, 30.0 TPS"),
            published("ffs-4k", "no-cleaning", 48.0, "TPS", 28.6, "1995 §4: the FFS model, 28.6 TPS"),
        ],
    },
    Experiment {
        id: "s93-tpcb",
        title: "TPC-B at 80% utilization, 1 MB and 256 KB segments",
        source: "1993 Table 7",
        about: "The same database and partition (the database alone 48%), other data bringing it to 80%, on \
                the HP 97560 and HP 9000/380; before and once the cleaner runs. Run again on a partition the \
                database alone fills to 80%, each phase named with (partition sized): the alternative claim \
                10's setup choices show.",
        disk: "hp97560",
        machine: HP9000_380,
        systems: &["lfs-nocleaner", "lfs", "lfs-256k", "ffs", "efs"],
        workload: Workload::TpcbAt80,
        plots: &[PlotSpec {
            name: "s93-tpcb",
            title: "TPC-B at 80% (1993 Table 7)",
            phases: &["no-cleaning", "cleaning"],
            metric: "TPS",
            x_label: "phase",
            y_label: "Transactions per second",
            log_x: false,
            x_unit: 1.0,
        }],
        published: &[
            published("lfs", "no-cleaning", 80.0, "TPS", 19.3, "1993 Table 7: LFS (no cleaner)"),
            published("lfs", "cleaning", 80.0, "TPS", 11.6, "1993 Table 7: LFS (cleaner, 1M)"),
            published("lfs-256k", "cleaning", 80.0, "TPS", 12.4, "1993 Table 7: LFS (cleaner, 256 K)"),
            published("ffs", "no-cleaning", 80.0, "TPS", 14.2, "1993 Table 7: FFS"),
            published("efs", "no-cleaning", 80.0, "TPS", 16.8, "1993 Table 7: EFS"),
        ],
    },
    Experiment {
        id: "s93-andrew",
        title: "The Andrew benchmark, single user",
        source: "1993 Table 6",
        about: "A synthetic tree of the paper's shape (20 directories, 100 files, about 750 KB); each phase \
                charged the CPU the paper's LFS spent in it (so LFS's absolute times are calibrated and the \
                differences are the results); a 256 MB partition filled to 80%; 10 runs, 100 with the cleaner \
                (lfs = the paper's LFSC, lfs-nocleaner = its LFS). HP 97560, HP 9000/380.",
        disk: "hp97560",
        machine: HP9000_380,
        systems: &["lfs-nocleaner", "lfs", "ffs", "efs"],
        workload: Workload::Andrew,
        plots: &[],
        published: &[
            published("lfs-nocleaner", "mkdir", 0.0, "s", 0.33, "1993 Table 6: LFS"),
            published("lfs-nocleaner", "copy", 0.0, "s", 5.00, "1993 Table 6: LFS"),
            published("lfs-nocleaner", "compile", 0.0, "s", 42.90, "1993 Table 6: LFS"),
            published("lfs-nocleaner", "total", 0.0, "s", 63.8, "1993 Table 6: LFS"),
            published("lfs", "total", 0.0, "s", 63.6, "1993 Table 6: LFSC"),
            published("ffs", "total", 0.0, "s", 70.1, "1993 Table 6: FFS"),
            published("efs", "total", 0.0, "s", 70.2, "1993 Table 6: EFS"),
        ],
    },
    Experiment {
        id: "dm02-dirops",
        title: "Cost per operation against directory size",
        source: "2002 Fig. 2-6",
        about: "Files created one by one into one directory up to 10,000; at each size, creates, stats in \
                creation order, in random order and of absent names, then removes. On a memory disk: these \
                costs are CPU, timed as the running thread's CPU time (the file system works on it), each \
                50 operations the fastest of 5 trials. Each group of creates is followed at once by a group of creates in a \
                reference directory of 1,000 entries; the checks read the ratio of the two (create-relative), \
                which the machine's other work weighs on alike. lfs and lfs-dirhash keep dirhash's name index \
                (on by default); lfs-linear mounts with dirhash=off and scans directories linearly.",
        disk: "mem",
        machine: SPARCSTATION_2,
        systems: &["lfs", "lfs-dirhash", "lfs-linear"],
        workload: Workload::DirOps,
        plots: &[
            PlotSpec {
                name: "dm02-create",
                title: "Create (2002 Fig. 2)",
                phases: &["create"],
                metric: "us/op",
                x_label: "Directory entries",
                y_label: "Microseconds per create",
                log_x: false,
                x_unit: 1.0,
            },
            PlotSpec {
                name: "dm02-create-relative",
                title: "Create against the 1,000-entry reference, timed beside it",
                phases: &["create-relative"],
                metric: "x",
                x_label: "Directory entries",
                y_label: "Create cost / reference create cost",
                log_x: false,
                x_unit: 1.0,
            },
            PlotSpec {
                name: "dm02-stat",
                title: "Stat (2002 Fig. 4-6)",
                phases: &["stat-seq", "stat-random", "stat-missing"],
                metric: "us/op",
                x_label: "Directory entries",
                y_label: "Microseconds per stat",
                log_x: false,
                x_unit: 1.0,
            },
        ],
        published: &[],
    },
    Experiment {
        id: "dm02-mh-folder",
        title: "The MH folder: soft updates x dirhash",
        source: "2002 §4.1, §4.4, Table 3, Fig. 10",
        about: "Create the folder's numerically named, empty files in one directory in a seeded random order (the \
                paper's 12-year-old mailbox is not public: its numbers here are sparse, gaps of 1-3), `folder \
                -pack` renames them to 1..N in numerical order, then `rm -r`; phases back to back without a sync, \
                as the paper ran the commands. The 2x2 of soft updates (ffs-m8r0: synchronous, ffs-softdep) and \
                dirhash (ffs-linear and ffs-softdep-linear: off, the paper's maxmem 0; on with 2 MB). The paper's \
                platform (Pentium 4 1.6 GHz, a 20 GB IDE disk of unnamed model) is not in the catalogue: the \
                Cheetah 9LP, the newest and fastest drive the lab has (10,000 RPM, 1999), stands for the disk, and \
                the Pentium 4's CPU model is calibrated to the paper's 50 us create with dirhash (Fig. 2), and \
                without dirhash charges each directory block scanned. A 2 GB partition at the drive's start. The \
                paper's speedups are factors in time: published here as the SU and dirhash factors on files/s.",
        disk: "cheetah9lp",
        machine: PENTIUM4_1600,
        systems: &["ffs-m8r0", "ffs-linear", "ffs-softdep", "ffs-softdep-linear"],
        workload: Workload::MhFolder,
        plots: &[PlotSpec {
            name: "dm02-mh-folder",
            title: "MH folder (2002 Fig. 10)",
            phases: &["create", "pack", "remove"],
            metric: "files/s",
            x_label: "phase",
            y_label: "Files per second",
            log_x: false,
            x_unit: 1.0,
        }],
        published: &[
            published("ffs-softdep-linear", "create", f64::INFINITY, "x SU", 29.0, "2002 §4.4: soft updates x29 on create"),
            published("ffs-softdep-linear", "pack", f64::INFINITY, "x SU", 13.0, "2002 §4.4: x13 on pack"),
            published("ffs-softdep-linear", "remove", f64::INFINITY, "x SU", 77.0, "2002 §4.4: x77 on remove (Table 3: SU -98.67%)"),
            published("ffs-softdep", "create", f64::INFINITY, "x DH", 12.0, "2002 §4.4: dirhash adds x12 on create"),
            published("ffs-softdep", "pack", f64::INFINITY, "x DH", 38.0, "2002 §4.4: x38 on pack"),
            published("ffs-softdep", "remove", f64::INFINITY, "x DH", 3.0, "2002 §4.4: x3 on remove (1.3% -> 0.3% of the time)"),
        ],
    },
    Experiment {
        id: "dm02-buildworld",
        title: "Buildworld: soft updates x dirpref x dirhash, and the linear model",
        source: "2002 §4.1-4.4, Tables 1-2, Fig. 10",
        about: BUILDWORLD_ABOUT,
        disk: "cheetah9lp",
        machine: PENTIUM4_1600_256MB,
        systems: BUILDWORLD_LATTICE.systems,
        workload: Workload::Buildworld,
        plots: &[
            PlotSpec {
                name: "dm02-buildworld-seconds",
                title: "Buildworld, seconds per phase (2002 Fig. 10's phases)",
                phases: BUILDWORLD_PHASES,
                metric: "s",
                x_label: "phase",
                y_label: "Seconds",
                log_x: false,
                x_unit: 1.0,
            },
            PlotSpec {
                name: "dm02-buildworld",
                title: "Buildworld, time as a share of no optimisation (2002 Table 1)",
                phases: BUILDWORLD_PHASES,
                metric: OF_BASE,
                x_label: "phase",
                y_label: "% of the time with none on",
                log_x: false,
                x_unit: 1.0,
            },
            PlotSpec {
                name: "dm02-buildworld-model",
                title: "Buildworld, the linear model's coefficients (2002 Table 2)",
                phases: BUILDWORLD_PHASES,
                metric: COEFFICIENT,
                x_label: "phase",
                y_label: "% of the time with none on",
                log_x: false,
                x_unit: 1.0,
            },
        ],
        published: &[
            published("ffs-linear", "build", 0.0, OF_BASE, 100.0, "2002 Table 1: none (4,345.38 s)"),
            published("ffs-m8r0", "build", 0.0, OF_BASE, 100.07, "2002 Table 1: DH"),
            published("ffs-dirpref-linear", "build", 0.0, OF_BASE, 85.72, "2002 Table 1: DP"),
            published("ffs-dirpref", "build", 0.0, OF_BASE, 86.30, "2002 Table 1: DP DH (row read by Table 2's model)"),
            published("ffs-softdep-linear", "build", 0.0, OF_BASE, 57.29, "2002 Table 1: SU"),
            published("ffs-softdep", "build", 0.0, OF_BASE, 57.07, "2002 Table 1: SU DH"),
            published("ffs-softdep-dirpref-linear", "build", 0.0, OF_BASE, 47.57, "2002 Table 1: SU DP"),
            published("ffs-softdep-dirpref", "build", 0.0, OF_BASE, 48.76, "2002 Table 1: SU DP DH (row read by Table 2's model; with VM too, 46.78)"),
            published("SU", "build", 0.0, COEFFICIENT, -42.71, "2002 Table 2"),
            published("DP", "build", 0.0, COEFFICIENT, -14.28, "2002 Table 2"),
            published("DP:SU", "build", 0.0, COEFFICIENT, 4.57, "2002 Table 2"),
            published("DH", "build", 0.0, COEFFICIENT, 0.07, "2002 Table 1 (DH alone 100.07%); not significant in Table 2"),
        ],
    },
    Experiment {
        id: "s00-micro",
        title: "Metadata microbenchmarks: create, read, delete by file size; create/delete of empty files",
        source: "2000 §7.2, §8.1, Fig. 1-3",
        about: "For each file size, 128 MB of files or 512 files, whichever are more, 50 a directory: created, read \
                and deleted in the same order, caches dropped (and synced) before each phase, untimed; each size \
                on a fresh file system. Then 50,000 empty files, each removed before the next is created. Creates \
                end with a sync (§8.1's asynchronous systems reach the disk's throughput: their data reached the \
                disk); deletes and create/delete end with their last call (soft updates' background frees and \
                FFS-async's cache are not in them). \
                Sizes 4 KB-1 MB (the paper went to 4 MB: 2 GB of files at 512 of them). Cheetah 9LP (the paper's \
                9 GB 10,000 RPM Cheetah; a 2 GB partition at its start where the paper had 9 GB), the Pentium III \
                Xeon's CPU model (estimated). FFS is ffs-m8r0, synchronous, with the same 8 KB/1 KB blocks and \
                64 KB clusters as ffs-async and ffs-softdep. The journals (2000 §5, Table 1) are lffs-file \
                (asynchronous, a 20 MB log file, 64 KB log writes), wafs-1sync and wafs-1async (a 128 MB log \
                after the groups of the same partition, 4 KB log writes), wafs-2sync and wafs-2async (a 128 MB \
                log on a second Cheetah on the same clock), on the same FFS. The paper plotted only; \
                its text's features are claim 8's checks: create, soft updates near FFS-async and well above \
                FFS, asynchronous journaling (wafs-2async among them) near FFS-async; delete, soft updates \
                fastest; create/delete, \
                FFS-async best and soft updates close, synchronous journaling as FFS. Fig. 3 also puts \
                asynchronous WAFS under half of FFS-async and LFFS-file above it (not checked). \
                MB = 2^20 bytes.",
        disk: "cheetah9lp",
        machine: PENTIUM3_500,
        systems: &["ffs-m8r0", "ffs-async", "ffs-softdep", "lffs-file", "wafs-1sync", "wafs-1async", "wafs-2sync", "wafs-2async"],
        workload: Workload::Microbench,
        plots: &[
            by_size("s00-create", "Create (2000 Fig. 1)", &["create"], "MB/s", "File size (KB, log scale)", "Throughput (MB/s)"),
            by_size("s00-delete", "Delete (2000 Fig. 2)", &["delete"], "files/s", "File size (KB, log scale)", "Files deleted per second"),
        ],
        published: &[],
    },
    Experiment {
        id: "s00-ssh",
        title: "ssh: unpack, configure and build ssh-1.2.26, a proxy",
        source: "2000 §7.3.1, §8.2.1, Table 4",
        about: "A synthetic tree shaped after ssh-1.2.26's distribution (ssh with GNU MP 2.0.2 and zlib 1.0.4 \
                bundled: about 650 files in 28 directories, 6 MB, five files over 64 KB; counts and sizes are \
                approximations, the tarball's manifest is not in the paper): the tarball, in the cache, unpacked; \
                240 configure tests, each writing conftest.c and preprocessing, compiling or compiling, linking \
                and running it, then config.status writing every Makefile; make compiling each source with the \
                tree's headers, archiving GNU MP and zlib, linking six programs. Phases back to back, warm cache, \
                one run (virtual time repeats exactly; the paper averaged 5). The tools' own CPU is charged as \
                the Andrew benchmark's is, calibrated so that the build runs at about 90% CPU on FFS (§7.3.1) and \
                FFS-async's phases come near Table 4's 1.02, 10.38 and 42.60 s on the Pentium III model: the \
                absolute times are calibrated, the ratios are the results. The compiler's temporary files are \
                on the system disk (Table 3), not here. Cheetah 9LP, the whole drive (the paper's 9 GB test \
                partition; WAFS's 128 MB log after it), dirhash off (the paper's FreeBSD had none). Relative \
                numbers are FFS-async's time over the system's, as Table 4 gives them (above 1 is faster).",
        disk: "cheetah9lp",
        machine: PENTIUM3_500_512MB,
        systems: S00_SYSTEMS,
        workload: Workload::SshBuild,
        plots: &[PlotSpec {
            name: "s00-ssh",
            title: "ssh relative to FFS-async (2000 Table 4)",
            phases: &["unpack", "config", "build", "total"],
            metric: "x async",
            x_label: "phase",
            y_label: "FFS-async time / time",
            log_x: false,
            x_unit: 1.0,
        }],
        published: &[
            published("ffs-async", "unpack", 0.0, "s", 1.02, "2000 Table 4: FFS-async"),
            published("ffs-async", "config", 0.0, "s", 10.38, "2000 Table 4: FFS-async"),
            published("ffs-async", "build", 0.0, "s", 42.60, "2000 Table 4: FFS-async"),
            published("ffs-async", "total", 0.0, "s", 53.99, "2000 Table 4: FFS-async"),
            published("ffs-m8r0", "unpack", 0.0, "x async", 0.14, "2000 Table 4: FFS"),
            published("ffs-m8r0", "config", 0.0, "x async", 0.66, "2000 Table 4: FFS"),
            published("ffs-m8r0", "build", 0.0, "x async", 0.85, "2000 Table 4: FFS"),
            published("ffs-m8r0", "total", 0.0, "x async", 0.73, "2000 Table 4: FFS"),
            published("ffs-m8r0", "build", 0.0, "cpu%", 90.0, "2000 §7.3.1: 90% CPU on FFS"),
            published("ffs-softdep", "unpack", 0.0, "x async", 0.99, "2000 Table 4: Soft Updates"),
            published("ffs-softdep", "config", 0.0, "x async", 0.98, "2000 Table 4: Soft Updates"),
            published("ffs-softdep", "build", 0.0, "x async", 1.01, "2000 Table 4: Soft Updates"),
            published("ffs-softdep", "total", 0.0, "x async", 1.01, "2000 Table 4: Soft Updates"),
            published("lffs-file", "unpack", 0.0, "x async", 0.72, "2000 Table 4: LFFS-file"),
            published("lffs-file", "config", 0.0, "x async", 1.08, "2000 Table 4: LFFS-file"),
            published("lffs-file", "build", 0.0, "x async", 0.95, "2000 Table 4: LFFS-file"),
            published("lffs-file", "total", 0.0, "x async", 0.96, "2000 Table 4: LFFS-file"),
            published("wafs-1sync", "unpack", 0.0, "x async", 0.15, "2000 Table 4: LFFS-wafs-1sync"),
            published("wafs-1sync", "config", 0.0, "x async", 1.01, "2000 Table 4: LFFS-wafs-1sync"),
            published("wafs-1sync", "build", 0.0, "x async", 0.88, "2000 Table 4: LFFS-wafs-1sync"),
            published("wafs-1sync", "total", 0.0, "x async", 0.82, "2000 Table 4: LFFS-wafs-1sync"),
            published("wafs-1async", "unpack", 0.0, "x async", 0.90, "2000 Table 4: LFFS-wafs-1async"),
            published("wafs-1async", "config", 0.0, "x async", 0.94, "2000 Table 4: LFFS-wafs-1async"),
            published("wafs-1async", "build", 0.0, "x async", 1.00, "2000 Table 4: LFFS-wafs-1async"),
            published("wafs-1async", "total", 0.0, "x async", 0.99, "2000 Table 4: LFFS-wafs-1async"),
        ],
    },
    Experiment {
        id: "s00-netnews",
        title: "Netnews: unbatch and expire on a pre-filled spool",
        source: "2000 §7.3.2, §8.2.2, Table 5",
        about: NETNEWS_ABOUT,
        disk: "cheetah9lp",
        machine: PENTIUM3_500_512MB,
        systems: S00_SYSTEMS,
        workload: Workload::Netnews,
        plots: &[PlotSpec {
            name: "s00-netnews",
            title: "Netnews relative to FFS-async (2000 Table 5)",
            phases: &["unbatch", "expire", "total"],
            metric: "x async",
            x_label: "phase",
            y_label: "FFS-async time / time",
            log_x: false,
            x_unit: 1.0,
        }],
        published: &[
            published("ffs-async", "unbatch", 0.0, "s", 1282.0, "2000 Table 5: FFS-async (full spool)"),
            published("ffs-async", "expire", 0.0, "s", 640.0, "2000 Table 5: FFS-async (full spool)"),
            published("ffs-async", "total", 0.0, "s", 1922.0, "2000 Table 5: FFS-async (full spool)"),
            published("ffs-m8r0", "unbatch", 0.0, "x async", 0.63, "2000 Table 5: FFS"),
            published("ffs-m8r0", "expire", 0.0, "x async", 0.40, "2000 Table 5: FFS"),
            published("ffs-m8r0", "total", 0.0, "x async", 0.53, "2000 Table 5: FFS"),
            published("ffs-softdep", "unbatch", 0.0, "x async", 0.86, "2000 Table 5: Soft Updates"),
            published("ffs-softdep", "expire", 0.0, "x async", 0.89, "2000 Table 5: Soft Updates"),
            published("ffs-softdep", "total", 0.0, "x async", 0.87, "2000 Table 5: Soft Updates"),
            published("lffs-file", "unbatch", 0.0, "x async", 0.95, "2000 Table 5: LFFS-file"),
            published("lffs-file", "expire", 0.0, "x async", 0.95, "2000 Table 5: LFFS-file"),
            published("lffs-file", "total", 0.0, "x async", 0.95, "2000 Table 5: LFFS-file"),
            published("wafs-1sync", "unbatch", 0.0, "x async", 0.67, "2000 Table 5: LFFS-wafs-1sync"),
            published("wafs-1sync", "expire", 0.0, "x async", 0.48, "2000 Table 5: LFFS-wafs-1sync"),
            published("wafs-1sync", "total", 0.0, "x async", 0.59, "2000 Table 5: LFFS-wafs-1sync"),
            published("wafs-1async", "unbatch", 0.0, "x async", 0.98, "2000 Table 5: LFFS-wafs-1async"),
            published("wafs-1async", "expire", 0.0, "x async", 0.92, "2000 Table 5: LFFS-wafs-1async"),
            published("wafs-1async", "total", 0.0, "x async", 0.96, "2000 Table 5: LFFS-wafs-1async"),
        ],
    },
    Experiment {
        id: "s00-sdet",
        title: "A multi-user software-development mix (fslab's substitute for SDET)",
        source: "2000 §7.3.3, §8.2.3, Fig. 4",
        about: "Not SDET: SPEC's SDM 057.sdet is retired and licensed and its command mix is not in the paper, so \
                the lab generates its own mix of the same kind (workload/sdet.rs): per user a home tree (sources, \
                documents, binaries, three of them over 64 KB) and a script that is a seeded permutation of 26 \
                subtasks (edit, compile, cp, diff, grep, ls, mkdir, nroff, rm), with estimated CPU charges. 1, \
                2, 4 and 8 users, each level on a fresh file system; the lab has one virtual clock and one \
                thread, so concurrent users are interleaved a subtask at a time, deterministically, and one \
                user's synchronous write stops them all. Scripts per hour, as SDET reports; comparable between \
                the systems here, not with the paper's figure, which gives only features: the synchronous \
                systems fall as concurrency rises, soft updates best (its deletes in the background), \
                LFFS-file slow creating files over 64 KB. Cheetah 9LP, the whole drive, dirhash off.",
        disk: "cheetah9lp",
        machine: PENTIUM3_500_512MB,
        systems: S00_SYSTEMS,
        workload: Workload::Sdet,
        plots: &[
            PlotSpec {
                name: "s00-sdet",
                title: "Scripts per hour against concurrency (2000 Fig. 4, fslab's mix)",
                phases: &["scripts"],
                metric: "scripts/h",
                x_label: "Concurrent users",
                y_label: "Scripts per hour",
                log_x: false,
                x_unit: 1.0,
            },
            PlotSpec {
                name: "s00-sdet-relative",
                title: "Scripts per hour relative to FFS-async",
                phases: &["scripts"],
                metric: "x async",
                x_label: "Concurrent users",
                y_label: "FFS-async time / time",
                log_x: false,
                x_unit: 1.0,
            },
        ],
        published: &[],
    },
    Experiment {
        id: "s00-postmark",
        title: "PostMark 1.13: the default set, 10,000 files",
        source: "2000 §7.3.4, §8.2.4, Fig. 5",
        about: concat!(
            "Every setting explicit (workload/postmark.rs): size 512-16384, number 10,000, ",
            postmark_settings!()
        ),
        disk: "cheetah9lp",
        machine: PENTIUM3_500_512MB,
        systems: S00_SYSTEMS,
        workload: Workload::PostMark,
        plots: &[PlotSpec {
            name: "s00-postmark",
            title: "PostMark transactions relative to FFS-async (2000 Fig. 5)",
            phases: &["create", "transactions", "delete", "total"],
            metric: "x async",
            x_label: "phase",
            y_label: "FFS-async time / time",
            log_x: false,
            x_unit: 1.0,
        }],
        published: &[
            published("ffs-async", "total", 10_000.0, "s", 21.0, "2000 §8.2.4: 21 s for FFS-async, small set"),
        ],
    },
    Experiment {
        id: "s00-postmark-large",
        title: "PostMark 1.13: the large set, 150,000 files",
        source: "2000 §7.3.4, §8.2.4, Fig. 5",
        about: concat!(
            "Every setting explicit (workload/postmark.rs): size 512-16384, number 150,000 (about 1.1 GB; without \
             dirhash, as in the paper's FreeBSD, each create scans the whole directory: a few minutes of host time \
             a system), ",
            postmark_settings!()
        ),
        disk: "cheetah9lp",
        machine: PENTIUM3_500_512MB,
        systems: S00_SYSTEMS,
        workload: Workload::PostMarkLarge,
        plots: &[PlotSpec {
            name: "s00-postmark-large",
            title: "PostMark, large set, relative to FFS-async (2000 Fig. 5)",
            phases: &["create", "transactions", "delete", "total"],
            metric: "x async",
            x_label: "phase",
            y_label: "FFS-async time / time",
            log_x: false,
            x_unit: 1.0,
        }],
        published: &[
            published("ffs-async", "total", 150_000.0, "s", 1572.0, "2000 §8.2.4: 1572 s for FFS-async"),
        ],
    },
];

/// The phases of the buildworld experiment, and its total.
const BUILDWORLD_PHASES: &[&str] = &["checkout", "build", "grep", "remove", "total"];

/// The 2002 paper's lattice as fslab can run it (§4.2): soft updates (SU:
/// `integrity=softdep`, else synchronous metadata), the new dirpref (DP,
/// at mkfs) and dirhash (DH: on with its default memory, or off, the
/// paper's maxmem 0). Factors in the paper's order of names (Table 2's
/// "DP:SU", Table 3's "DH:SU"); the base, every factor off, first.
pub const BUILDWORLD_LATTICE: Lattice = Lattice {
    factors: &["DH", "DP", "SU"],
    systems: &[
        "ffs-linear",
        "ffs-m8r0",
        "ffs-dirpref-linear",
        "ffs-dirpref",
        "ffs-softdep-linear",
        "ffs-softdep",
        "ffs-softdep-dirpref-linear",
        "ffs-softdep-dirpref",
    ],
};

/// How the buildworld experiment runs.
const BUILDWORLD_ABOUT: &str = "A proxy of FreeBSD 4.5's buildworld (workload/buildworld): a synthetic tree \
     shaped after /usr/src, about 30,000 files in 1,900 directories, 390 MB (programs a directory each, \
     libraries, third-party packages several levels deep built from reach-over directories, the kernel, \
     headers, manual pages and other data; counts and sizes are approximations, the paper gives no manifest; \
     --quick: a fiftieth of the directories), checked out directory by directory with cvs's CVS/ files (the \
     repository elsewhere, its reading charged as cvs's CPU); make buildworld's stages (cross tools, installed \
     headers, libraries with three objects a source, programs, share's files) into a separate object tree, \
     about 28,000 files, 600 MB; find and grep over the kernel's sources; rm -r of the object tree; phases back \
     to back without a sync, as the paper ran them. The tools' CPU is charged as the ssh proxy's: the \
     compiler's is Table 1's build with every optimisation on (2,032.85 s), on the premise that such a build \
     is CPU-bound; cvs's and grep's are estimates. One run (virtual time repeats exactly; the paper averaged \
     4). The 2^3 of soft updates (SU), the new dirpref (DP, chosen at mkfs) and dirhash (DH: on, or off as the \
     paper's maxmem 0): 8 systems, ffs-linear (none on) the base. The paper's 16 also switched vmiodir, which \
     has no meaning here: fslab keeps directory blocks in its one buffer cache like any other block, as \
     FreeBSD did only with vmiodir on (§2.3), so there is no off to compare and the paper's VM term (-1.91%) \
     is not fitted. The paper's linear model with every interaction (§4.3) is fitted to each phase exactly (8 \
     cells, 8 coefficients): coefficients as % of the base's time (coef %, Table 2), each system's time as % \
     of the base's (% base, Table 1). Tables 1 and 2 are taken as the build phase's (§4.3: Fig. 8 \"again \
     shows the results of the build phase\"). The paper's platform (Pentium 4 1.6 GHz, 256 MB, a 20 GB IDE \
     disk of unnamed model) is not in the catalogue: the Cheetah 9LP, the whole drive (9.1 GB, 32 MB groups), \
     and the Pentium 4's CPU model with three quarters of its 256 MB as the cache (192 MB, which holds a third \
     of the source and object trees).";

/// The systems of the 2000 paper's experiments: FFS (synchronous),
/// FFS-async, soft updates, LFFS-file, LFFS-wafs-1sync and -1async, and
/// LFFS-wafs-2sync and -2async (the log on a second disk).
const S00_SYSTEMS: &[&str] = &[
    "ffs-m8r0",
    "ffs-async",
    "ffs-softdep",
    "lffs-file",
    "wafs-1sync",
    "wafs-1async",
    "wafs-2sync",
    "wafs-2async",
];

/// How the Netnews experiment runs.
const NETNEWS_ABOUT: &str = "A news spool of 7,000 newsgroup directories (news/hH/gG) pre-filled, untimed, then \
     synced and its caches dropped; unbatch creates new articles, each in a group drawn by weight, so successive \
     operations seldom hit the same directory (§7.3.2), and expire removes the oldest articles in arrival order, \
     scattered too; the two phases back to back. The paper replayed a trace that is not public: this is a \
     generator of its shape, article sizes exponential with each cohort's mean; no history file, overview or \
     cross-post links. The paper's full spool: 2 GB in 520,000 files; unbatch 78,000 files, 270 MB; expire \
     91,000 files, 250 MB; the spool 64 times the lab's 32 MB buffer cache (the paper's was more than its 512 MB \
     of memory). Cheetah 9LP, the whole drive (the paper's 9 GB test partition, \
     WAFS's log after it), dirhash off. Relative numbers are FFS-async's time over the system's, as Table 5 \
     gives them.";
