//! The systems the lab compares, by name: every layout and mode fslab has,
//! and those the papers compare that it does not have yet.
//!
//! Adding a variant is one entry in [`SYSTEMS`]; a layout is one `impl
//! Layout` (LFS's and FFS's are below) and one arm in [`open_library`]. A
//! system fslab does not have is listed all the same and says *not yet*
//! ([`System::not_yet`]) in every report instead of disappearing.

use crate::cpu::PaperChecksum;
use crate::target::library::{Layout, Library, MountEnv};
use crate::target::Backend;
use disk::{BlockDevice, SimDisk};
use fslab::ffs::{
    DirPref, Ffs, Integrity as FfsIntegrity, JournalKind, MkfsOptions as FfsMkfs, MountOptions as FfsMount,
    RotDelay,
};
use fslab::lfs::clean::CleanerCounters;
use fslab::lfs::{Lfs, MkfsOptions, MountOptions, SegmentWrites};
use fslab_cleaner::{policy, Cleaner, SegmentReads};
use std::io;
use std::sync::Arc;

/// Parameters of an LFS.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LfsParams {
    /// Bytes per block.
    pub block_size: u32,
    /// Bytes per segment.
    pub segment_size: u32,
    /// The cleaner policy (run in-line, by the writers, when clean
    /// segments run low), or none.
    pub cleaner: Option<&'static str>,
    /// Whether the namespace keeps dirhash's name index for large
    /// directories (mount option `dirhash=`), or scans them linearly.
    pub dirhash: bool,
}

/// FFS's metadata integrity mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Integrity {
    /// Metadata written synchronously, in 4.4BSD's order.
    Sync,
    /// Metadata written when the cache pleases.
    Async,
    /// Soft updates: metadata written behind, in an order that keeps the
    /// image recoverable, frees deferred until what pointed at them is on
    /// the disk (2000 §4).
    Softdep,
    /// A write-ahead log of metadata, committed asynchronously: flushed by
    /// fsync, sync and once a second (2000 §5, LFFS).
    Journal(Log),
    /// The same log, committed before each namespace operation returns
    /// (2000 §5.2, Table 1: LFFS-wafs-[12]sync).
    JournalSync(Log),
}

/// Where a journal's log lives and how large it is (mkfs `--journal
/// --journal-size`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Log {
    /// Inside the file system or after its last cylinder group.
    pub place: LogPlace,
    /// Bytes of the log.
    pub bytes: u64,
}

/// Where a journal's log lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogPlace {
    /// A preallocated file in the middle cylinder group, written 64 KB at
    /// a time (2000 §5.1, LFFS-file).
    File,
    /// A region after the last cylinder group of the same disk, written
    /// 4 KB at a time (2000 §5.2, LFFS-wafs-1).
    Wafs,
    /// A second disk of the same model, written 4 KB at a time (2000 §5.2,
    /// LFFS-wafs-2): the log's writes never seek away from the data.
    Device,
}

/// LFFS-file's log: 20 MB, about 1% of the 2 GB partition the 2000
/// paper's microbenchmarks run on here (§5.1: "about 1% of the file system
/// size"). A file log must fit inside one cylinder group (32 MB, of which
/// about 31 MB is data room), which 20 MB does on that partition and on
/// the 256 MB one of `--quick` alike. mkfs's default (1% of the device,
/// up to 64 MB) would pass a group's room on any partition over about
/// 3 GB, so the size is fixed here rather than left to follow the
/// partition.
const LFFS_FILE_LOG: Log = Log { place: LogPlace::File, bytes: 20 << 20 };

/// LFFS-wafs-1's log: the paper's 128 MB log partition (Table 3, after its
/// 9 GB test partition on the same disk). Here it takes the end of the
/// 2 GB partition, leaving the file system 1.875 GB (none of the
/// microbenchmarks' 128 MB of files comes near that), and of the 256 MB
/// one of `--quick`, leaving 128 MB. The seek between the first groups and
/// the log is thus about 2 GB long, where the paper's crossed its 9 GB.
const WAFS_1_LOG: Log = Log { place: LogPlace::Wafs, bytes: 128 << 20 };

/// LFFS-wafs-2's log: the paper's 128 MB log partition on its third disk
/// (Table 3), here the first 128 MB of a second simulated drive of the
/// data disk's model on the same clock; the journal takes it all but the
/// log device's 4 KB header.
const WAFS_2_LOG: Log = Log { place: LogPlace::Device, bytes: 128 << 20 };

/// FFS's rotational delay between clusters, as the papers give it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rotdelay {
    /// In blocks of the file system (the 1995 paper's "rotdelay of two blocks").
    Blocks(u32),
    /// In milliseconds (4.4BSD's `tunefs -d`; the 1993 paper's 4 ms).
    Millis(u32),
}

/// Parameters of an FFS (mkfs `--block-size --frag-size --maxcontig
/// --rotdelay`, mount `integrity=` and `dirhash=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FfsParams {
    /// Bytes per block.
    pub block_size: u32,
    /// Bytes per fragment.
    pub fragment_size: u32,
    /// Blocks laid out contiguously before a rotational gap.
    pub maxcontig: u32,
    /// The gap.
    pub rotdelay: Rotdelay,
    /// Metadata integrity.
    pub integrity: Integrity,
    /// Whether the namespace keeps dirhash's name index for large
    /// directories, or scans them linearly (the 2002 paper's "dirhash
    /// maxmem 0").
    pub dirhash: bool,
    /// Bytes per cylinder group (mkfs `--cg-size`), or mkfs's default.
    pub group_bytes: Option<u64>,
    /// Whether the allocator moves a file's growing cluster of delayed
    /// blocks to contiguous free space before it is written (mkfs
    /// `--realloc`; McKusick's `ffs_reallocblks`, the 1997 paper's
    /// "realloc algorithm", §2).
    pub realloc: bool,
    /// Where new directories go (mkfs `--dirpref`): 4.4BSD's policy,
    /// which spreads them over the groups, or Orlov's of 2001, which keeps
    /// a directory near its parent (2002 §2.2). Every paper the lab reruns
    /// measured an FFS with the old one, and the 2002 paper §4 switches
    /// between the two.
    pub dirpref: DirPref,
}

/// What a system is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The device itself.
    Raw,
    /// fslab's LFS.
    Lfs(LfsParams),
    /// fslab's FFS.
    Ffs(FfsParams),
}

/// A named system.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct System {
    /// Its name in commands, results and plots.
    pub name: &'static str,
    /// What it is.
    pub kind: Kind,
    /// One line for `fslab bench list` and the report.
    pub about: &'static str,
}

const fn lfs(block_size: u32, segment_size: u32, cleaner: Option<&'static str>) -> Kind {
    Kind::Lfs(LfsParams { block_size, segment_size, cleaner, dirhash: true })
}

const fn ffs(block_size: u32, maxcontig: u32, rotdelay: Rotdelay, integrity: Integrity) -> Kind {
    Kind::Ffs(FfsParams {
        block_size,
        fragment_size: 1024,
        maxcontig,
        rotdelay,
        integrity,
        dirhash: true,
        group_bytes: None,
        realloc: false,
        dirpref: DirPref::Old,
    })
}

/// The FFS of the 2000 and 2002 papers' FreeBSD: 8 KB blocks, 1 KB
/// fragments, I/O clustered in 64 KB (2000 §8.1), no rotational gap.
const fn freebsd_ffs(integrity: Integrity, dirhash: bool) -> Kind {
    Kind::Ffs(FfsParams {
        block_size: 8192,
        fragment_size: 1024,
        maxcontig: 8,
        rotdelay: Rotdelay::Blocks(0),
        integrity,
        dirhash,
        group_bytes: None,
        realloc: false,
        dirpref: DirPref::Old,
    })
}

/// `kind` with Orlov's directory placement (2002 §2.2; FreeBSD 4.5's
/// default) in place of 4.4BSD's.
const fn with_new_dirpref(kind: Kind) -> Kind {
    match kind {
        Kind::Ffs(p) => Kind::Ffs(FfsParams { dirpref: DirPref::New, ..p }),
        other => other,
    }
}

/// The FFS of the 1995 paper's fragmentation study (§5, Table 4): 8 KB
/// blocks, 1 KB fragments, maxcontig 7, rotdelay 0; groups of 12 MB, the
/// 1520 blocks of most of Table 4's file systems. Synchronous metadata, as
/// 4.4BSD-Lite's.
const FFS_1995_FIG8: Kind = Kind::Ffs(FfsParams {
    block_size: 8192,
    fragment_size: 1024,
    maxcontig: 7,
    rotdelay: Rotdelay::Blocks(0),
    integrity: Integrity::Sync,
    dirhash: true,
    group_bytes: Some(12 << 20),
    realloc: false,
    dirpref: DirPref::Old,
});

/// The FFS of the 1997 aging paper (Table 1): 502 MB, 8 KB blocks, 1 KB
/// fragments, maximum cluster 56 KB (maxcontig 7), rotational gap 0, 27
/// cylinder groups (19 MB groups on 502 MB), with the original allocator
/// or with realloc (§2, §4). Synchronous metadata, as BSD/OS 2.0.1's
/// (§5.1 puts small-file creates down to "the synchronous metadata
/// updates that FFS performs").
const fn ffs_1997(realloc: bool) -> Kind {
    Kind::Ffs(FfsParams {
        block_size: 8192,
        fragment_size: 1024,
        maxcontig: 7,
        rotdelay: Rotdelay::Blocks(0),
        integrity: Integrity::Sync,
        dirhash: true,
        group_bytes: Some(19 << 20),
        realloc,
        dirpref: DirPref::Old,
    })
}

/// The systems that run on a file system rebuilt from an aged one's
/// free-space map (1995 §5.3) rather than on an empty one: the runner ages
/// an image of the same system and carries its map over
/// (`crate::aging::rebuild`).
pub const AGED: &[&str] = &["ffs-aged"];

/// Whether `name` runs on an aged free-space map (see [`AGED`]).
pub fn is_aged(name: &str) -> bool {
    AGED.contains(&name)
}

/// Every system, by name.
pub const SYSTEMS: &[System] = &[
    System {
        name: "raw",
        kind: Kind::Raw,
        about: "the device itself: synchronous 64 KB transfers (1993 RAW)",
    },
    System {
        name: "lfs",
        kind: lfs(4096, 1 << 20, Some("cost-benefit")),
        about: "LFS, 4 KB blocks, 1 MB segments, cost-benefit cleaner (the papers' BSD-LFS)",
    },
    System {
        name: "lfs-nocleaner",
        kind: lfs(4096, 1 << 20, None),
        about: "LFS, 4 KB blocks, 1 MB segments, no cleaner",
    },
    System {
        name: "lfs-8k",
        kind: lfs(8192, 1 << 20, None),
        about: "LFS, 8 KB blocks, 1 MB segments, no cleaner (the 1995 paper's §3 block size)",
    },
    System {
        name: "lfs-256k",
        kind: lfs(4096, 256 << 10, Some("cost-benefit")),
        about: "LFS, 256 KB segments, cost-benefit cleaner (1993 Table 7)",
    },
    System {
        name: "lfs-dirhash",
        kind: lfs(4096, 1 << 20, None),
        about: "LFS with dirhash on (the default; 2002 §3), no cleaner",
    },
    System {
        name: "lfs-linear",
        kind: Kind::Lfs(LfsParams { block_size: 4096, segment_size: 1 << 20, cleaner: None, dirhash: false }),
        about: "LFS with dirhash off: directories scanned linearly, as before dirhash (2002 §3)",
    },
    System { name: "lfs-greedy", kind: lfs(4096, 1 << 20, Some("greedy")), about: "LFS, greedy cleaner" },
    System {
        name: "lfs-hot-cold",
        kind: lfs(4096, 1 << 20, Some("hot-cold")),
        about: "LFS, hot-cold cleaner (fslab's default)",
    },
    System {
        name: "ffs",
        kind: ffs(4096, 1, Rotdelay::Millis(4), Integrity::Sync),
        about: "1993 FFS: 4 KB/1 KB, no clustering, rot_delay 4 ms, synchronous metadata",
    },
    System {
        name: "efs",
        kind: ffs(4096, 16, Rotdelay::Millis(4), Integrity::Sync),
        about: "1993 EFS: FFS with 64 KB clusters (maxcontig 16), rot_delay 4 ms",
    },
    System {
        name: "ffs-m1r2",
        kind: ffs(8192, 1, Rotdelay::Blocks(2), Integrity::Sync),
        about: "1995 FFS, 8 KB/1 KB, maxcontig 1, rotdelay 2 blocks",
    },
    System {
        name: "ffs-m8r0",
        kind: ffs(8192, 8, Rotdelay::Blocks(0), Integrity::Sync),
        about: "1995 FFS, 8 KB/1 KB, maxcontig 8 (64 KB), rotdelay 0",
    },
    System {
        name: "ffs-m8r2",
        kind: ffs(8192, 8, Rotdelay::Blocks(2), Integrity::Sync),
        about: "1995 FFS, 8 KB/1 KB, maxcontig 8 (64 KB), rotdelay 2 blocks",
    },
    System {
        name: "ffs-m7r0",
        kind: FFS_1995_FIG8,
        about: "1995 §5 FFS: 8 KB/1 KB, maxcontig 7, rotdelay 0, 12 MB groups (Table 4), empty",
    },
    System {
        name: "ffs-aged",
        kind: FFS_1995_FIG8,
        about: "ffs-m7r0 rebuilt from the free-space map of an image aged by the 1997 stream (1995 §5.3)",
    },
    System {
        name: "ffs97",
        kind: ffs_1997(false),
        about: "1997 FFS (Table 1): 8 KB/1 KB, maxcontig 7, rotdelay 0, 19 MB groups, the original allocator",
    },
    System {
        name: "ffs97-realloc",
        kind: ffs_1997(true),
        about: "ffs97 with realloc: delayed blocks moved to a contiguous free run before they are written",
    },
    System {
        name: "ffs-4k",
        kind: ffs(4096, 16, Rotdelay::Blocks(0), Integrity::Sync),
        about: "1995 TPC-B FFS: 4 KB blocks, 64 KB clusters",
    },
    System {
        name: "ffs-async",
        kind: ffs(8192, 8, Rotdelay::Blocks(0), Integrity::Async),
        about: "FFS, 8 KB/1 KB, 64 KB clusters, asynchronous metadata",
    },
    System {
        name: "ffs-softdep",
        kind: freebsd_ffs(Integrity::Softdep, true),
        about: "FFS, 8 KB/1 KB, 64 KB clusters, soft updates (2000 §4; 2002's \"softupdates\")",
    },
    System {
        name: "lffs-file",
        kind: freebsd_ffs(Integrity::Journal(LFFS_FILE_LOG), true),
        about: "FFS, 8 KB/1 KB, 64 KB clusters, asynchronous journal in a 20 MB file, 64 KB log writes \
                (2000 §5.1, LFFS-file)",
    },
    System {
        name: "wafs-1sync",
        kind: freebsd_ffs(Integrity::JournalSync(WAFS_1_LOG), true),
        about: "FFS, 8 KB/1 KB, 64 KB clusters, synchronous journal in 128 MB after the groups on the same \
                disk, 4 KB log writes (2000 §5.2, LFFS-wafs-1sync)",
    },
    System {
        name: "wafs-1async",
        kind: freebsd_ffs(Integrity::Journal(WAFS_1_LOG), true),
        about: "FFS, 8 KB/1 KB, 64 KB clusters, asynchronous journal in 128 MB after the groups on the same \
                disk, 4 KB log writes (2000 §5.2, LFFS-wafs-1async)",
    },
    System {
        name: "wafs-2sync",
        kind: freebsd_ffs(Integrity::JournalSync(WAFS_2_LOG), true),
        about: "FFS, 8 KB/1 KB, 64 KB clusters, synchronous journal on 128 MB of a second disk, 4 KB log \
                writes (2000 §5.2, LFFS-wafs-2sync)",
    },
    System {
        name: "wafs-2async",
        kind: freebsd_ffs(Integrity::Journal(WAFS_2_LOG), true),
        about: "FFS, 8 KB/1 KB, 64 KB clusters, asynchronous journal on 128 MB of a second disk, 4 KB log \
                writes (2000 §5.2, LFFS-wafs-2async)",
    },
    System {
        name: "ffs-linear",
        kind: freebsd_ffs(Integrity::Sync, false),
        about: "ffs-m8r0 with dirhash off: synchronous metadata, directories scanned linearly (2002 §4.2)",
    },
    System {
        name: "ffs-softdep-linear",
        kind: freebsd_ffs(Integrity::Softdep, false),
        about: "ffs-softdep with dirhash off: directories scanned linearly (2002 §4.2)",
    },
    System {
        name: "ffs-dirpref",
        kind: with_new_dirpref(freebsd_ffs(Integrity::Sync, true)),
        about: "ffs-m8r0 made with the new dirpref: a directory near its parent (2002 §2.2)",
    },
    System {
        name: "ffs-dirpref-linear",
        kind: with_new_dirpref(freebsd_ffs(Integrity::Sync, false)),
        about: "ffs-linear made with the new dirpref (2002 §2.2)",
    },
    System {
        name: "ffs-softdep-dirpref",
        kind: with_new_dirpref(freebsd_ffs(Integrity::Softdep, true)),
        about: "ffs-softdep made with the new dirpref (2002 §2.2): soft updates, dirpref and dirhash all on",
    },
    System {
        name: "ffs-softdep-dirpref-linear",
        kind: with_new_dirpref(freebsd_ffs(Integrity::Softdep, false)),
        about: "ffs-softdep-linear made with the new dirpref (2002 §2.2)",
    },
];

/// The identity every FFS made on virtual time gets (mkfs's `id`): it
/// seeds where the new dirpref starts looking for a group for a directory
/// under the root, which would otherwise differ from run to run.
const LAB_FS_ID: u64 = 0x2002_0001;

/// The system called `name`.
pub fn by_name(name: &str) -> Option<&'static System> {
    SYSTEMS.iter().find(|s| s.name == name)
}

impl System {
    /// Why it cannot run yet, if it cannot (every kind runs now; a
    /// variant needing a feature fslab lacks would say so here).
    pub fn not_yet(&self) -> Option<&'static str> {
        match self.kind {
            Kind::Raw | Kind::Lfs(_) | Kind::Ffs(_) => None,
        }
    }

    /// Bytes of the second disk the system's journal is on, if it is on
    /// one (LFFS-wafs-2).
    pub fn log_device_bytes(&self) -> Option<u64> {
        match self.kind {
            Kind::Ffs(FfsParams {
                integrity: Integrity::Journal(log) | Integrity::JournalSync(log), ..
            }) if log.place == LogPlace::Device => Some(log.bytes),
            _ => None,
        }
    }

    /// The same system mounted with dirhash off (`dirhash=off`):
    /// directories scanned linearly, as before dirhash (2002 §3).
    pub fn without_dirhash(&self) -> System {
        let kind = match self.kind {
            Kind::Lfs(p) => Kind::Lfs(LfsParams { dirhash: false, ..p }),
            Kind::Ffs(p) => Kind::Ffs(FfsParams { dirhash: false, ..p }),
            Kind::Raw => Kind::Raw,
        };
        System { kind, ..*self }
    }

    /// The file system's block size (the raw device's transfer unit).
    pub fn block_size(&self) -> u32 {
        match self.kind {
            Kind::Raw => 4096,
            Kind::Lfs(p) => p.block_size,
            Kind::Ffs(p) => p.block_size,
        }
    }
}

/// LFS as the lab runs it: on virtual time with inline segment writes and
/// the mount's clock; its cleaner, if any, installed in-line (a writer
/// short of clean segments runs it), never as a thread.
impl Layout for Lfs {
    type Params = LfsParams;

    const PAPER_CHECKSUM: PaperChecksum = PaperChecksum::LfsWordPerBlock;

    fn dirhash(params: &LfsParams) -> bool {
        params.dirhash
    }

    fn mkfs(
        dev: Arc<dyn BlockDevice>,
        _log: Option<Arc<dyn BlockDevice>>,
        p: &LfsParams,
        env: &MountEnv,
    ) -> fslab::Result<Arc<dyn BlockDevice>> {
        fslab::lfs::mkfs_at(
            dev.clone(),
            &MkfsOptions { block_size: p.block_size, segment_size: p.segment_size },
            &env.clock,
        )?;
        Ok(dev)
    }

    fn mount(dev: Arc<dyn BlockDevice>, p: &LfsParams, env: &MountEnv) -> fslab::Result<Lfs> {
        let options = MountOptions {
            cache_bytes: env.cache_bytes,
            segment_writes: if env.deterministic { SegmentWrites::Inline } else { SegmentWrites::Thread },
            clock: env.clock.clone(),
            // The papers' LFS wrote when its cache filled and at checkpoints.
            max_dirty_inodes: None,
            ..MountOptions::default()
        };
        let mut lfs = Lfs::mount(dev, options)?;
        if let Some(name) = p.cleaner {
            let policy =
                policy::by_name(name).ok_or(fslab::Error::Errno(libc::EINVAL, "unknown cleaner policy"))?;
            // The papers' cleaner: whole segments read, moved one at a time.
            Cleaner::new(policy).with_reads(SegmentReads::WholeSegments).install(&mut lfs);
        }
        Ok(lfs)
    }

    /// Every block of a partial segment goes into its summary's data CRC
    /// (and the summary is checksummed itself): the blocks written.
    /// Checksums verified on reads (indirect and inode blocks) are not
    /// counted.
    fn checksummed_blocks(&self) -> u64 {
        self.stats().blocks_written
    }

    /// One summary a partial segment.
    fn summaries_written(&self) -> u64 {
        self.stats().partial_segments
    }

    fn cleaner(&self) -> Option<CleanerCounters> {
        Some(self.cleaner_report().total)
    }

    /// The installed cleaner's round when cleaning is wanted, as the
    /// background thread of a mount would run it in a quiet moment.
    fn idle(&mut self) -> fslab::Result<()> {
        self.clean_while_idle().map(drop)
    }
}

/// The mkfs options of an FFS with parameters `p` (apart from the device,
/// all that decides its layout: the tests plan it without making it).
fn ffs_mkfs_options(p: &FfsParams) -> FfsMkfs {
    let rotdelay = match p.rotdelay {
        Rotdelay::Blocks(0) | Rotdelay::Millis(0) => RotDelay::Off,
        Rotdelay::Blocks(n) => RotDelay::Blocks(n),
        Rotdelay::Millis(n) => RotDelay::Millis(n),
    };
    let (journal, journal_bytes) = match p.integrity {
        Integrity::Journal(log) | Integrity::JournalSync(log) => {
            let kind = match log.place {
                LogPlace::File => JournalKind::File,
                LogPlace::Wafs => JournalKind::Wafs,
                // The log fills its device, whose size the system gives.
                LogPlace::Device => JournalKind::Device,
            };
            (kind, (log.place != LogPlace::Device).then_some(log.bytes))
        }
        Integrity::Sync | Integrity::Async | Integrity::Softdep => (JournalKind::None, None),
    };
    FfsMkfs {
        block_size: p.block_size,
        fragment_size: p.fragment_size,
        maxcontig: Some(p.maxcontig),
        rotdelay,
        journal,
        journal_bytes,
        dirpref: p.dirpref,
        group_size: p.group_bytes.unwrap_or(FfsMkfs::default().group_size),
        // Off in every system but the 1997 paper's realloc: the others
        // reproduce papers whose FFS predates it or whose results were
        // recorded without it.
        realloc: p.realloc,
        ..FfsMkfs::default()
    }
}

/// FFS as the lab runs it: on virtual time, writing back inline and
/// syncing by the mount's clock.
impl Layout for Ffs {
    type Params = FfsParams;

    /// 4.4BSD's FFS, and the FreeBSD FFS of the 2000 and 2002 papers,
    /// checksummed no metadata.
    const PAPER_CHECKSUM: PaperChecksum = PaperChecksum::None;

    fn dirhash(params: &FfsParams) -> bool {
        params.dirhash
    }

    fn mkfs(
        dev: Arc<dyn BlockDevice>,
        log: Option<Arc<dyn BlockDevice>>,
        p: &FfsParams,
        env: &MountEnv,
    ) -> fslab::Result<Arc<dyn BlockDevice>> {
        // FFS's mkfs takes no clock: its superblock's and groups' times
        // are the host's, which no measured time depends on.
        let options = FfsMkfs { id: env.deterministic.then_some(LAB_FS_ID), ..ffs_mkfs_options(p) };
        match log {
            Some(log) => {
                fslab::ffs::mkfs_with_log(dev.clone(), log.clone(), "second disk", &options)?;
                fslab::ffs::log_device::attach(dev, Some(log))
            }
            None => fslab::ffs::mkfs(dev.clone(), &options).map(|_| dev),
        }
    }

    fn mount(dev: Arc<dyn BlockDevice>, p: &FfsParams, env: &MountEnv) -> fslab::Result<Ffs> {
        let integrity = match p.integrity {
            Integrity::Sync => FfsIntegrity::Sync,
            Integrity::Async => FfsIntegrity::Async,
            Integrity::Softdep => FfsIntegrity::Softdep,
            Integrity::Journal(_) => FfsIntegrity::Journal,
            Integrity::JournalSync(_) => FfsIntegrity::JournalSync,
        };
        let writes =
            if env.deterministic { fslab::ffs::WriteMode::Inline } else { fslab::ffs::WriteMode::Thread };
        let options = FfsMount {
            cache_bytes: env.cache_bytes,
            integrity,
            writes,
            clock: env.clock.clone(),
            // The 2000 paper's journals logged each operation's records
            // on their own (§5); the bytes logged per operation decide
            // its results (§8.1).
            journal_batch: 1,
            // Nor did they order file data before the log (§6).
            journal_data: fslab::ffs::JournalData::Writeback,
            // 4.4BSD pushed every broken run (`cluster_write`), which the
            // papers' random writes measured.
            run_push: fslab::ffs::RunPush::Every,
            ..FfsMount::default()
        };
        Ffs::mount(dev, options)
    }

    /// FFS checksums its metadata only: the cylinder groups, inode and
    /// indirect blocks it writes.
    fn checksummed_blocks(&self) -> u64 {
        self.stats().checksummed_blocks
    }

    fn placements(&mut self) -> Option<fslab::Result<crate::target::Placements>> {
        let g = self.superblock().geometry;
        let frags_per_block = g.block_size / g.frag_size;
        Some(self.file_placements().map(|files| crate::target::Placements { files, frags_per_block }))
    }

    fn free_space(&self) -> Option<crate::target::FreeSpaceMap> {
        let g = self.superblock().geometry;
        Some(crate::target::FreeSpaceMap {
            groups: self.free_space_by_group(),
            frags_per_block: g.block_size / g.frag_size,
        })
    }

    fn cylinder_groups(&self) -> Option<crate::target::CylinderGroups> {
        let g = self.superblock().geometry;
        Some(crate::target::CylinderGroups { count: g.ncg, inodes_per_group: g.ipg })
    }
}

/// Makes `system`'s file system on `dev` and mounts it. Fails for the raw
/// device, which is not a file system.
pub fn open_library(
    system: &System,
    dev: Arc<dyn BlockDevice>,
    log: Option<Arc<dyn BlockDevice>>,
    sim: Option<Arc<SimDisk>>,
    env: MountEnv,
) -> io::Result<Box<dyn Backend>> {
    match system.kind {
        Kind::Lfs(p) => Ok(Box::new(Library::<Lfs>::make(dev, log, sim, p, env)?)),
        Kind::Ffs(p) => Ok(Box::new(Library::<Ffs>::make(dev, log, sim, p, env)?)),
        Kind::Raw => Err(io::Error::other("the raw device is not a file system")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique() {
        for (i, s) in SYSTEMS.iter().enumerate() {
            assert!(SYSTEMS[..i].iter().all(|t| t.name != s.name), "{} twice", s.name);
            assert_eq!(by_name(s.name), Some(s));
        }
        assert!(by_name("zfs").is_none());
    }

    /// The 2002 paper's switches, one at a time (§4.2): each new-dirpref
    /// system is its old-dirpref counterpart but for where directories go.
    #[test]
    fn the_dirpref_systems_differ_from_their_counterparts_in_dirpref_only() {
        let params = |name| match by_name(name).map(|s| s.kind) {
            Some(Kind::Ffs(p)) => p,
            other => panic!("{name}: {other:?}"),
        };
        for (new, old) in [
            ("ffs-dirpref", "ffs-m8r0"),
            ("ffs-dirpref-linear", "ffs-linear"),
            ("ffs-softdep-dirpref", "ffs-softdep"),
            ("ffs-softdep-dirpref-linear", "ffs-softdep-linear"),
        ] {
            assert_eq!(params(new).dirpref, DirPref::New, "{new}");
            assert_eq!(
                FfsParams { dirpref: DirPref::Old, ..params(new) },
                params(old),
                "{new} against {old}"
            );
        }
    }

    /// Every FFS, journaled ones included, can be made on the partitions
    /// the 2000 and 2002 papers' workloads run on (2 GB, and 256 MB with
    /// `--quick`): a file log must fit inside one cylinder group, and
    /// mkfs refuses one that does not.
    #[test]
    fn every_ffs_fits_the_microbenchmarks_partitions() {
        for s in SYSTEMS {
            if let Kind::Ffs(p) = s.kind {
                for bytes in [256u64 << 20, 2 << 30] {
                    let planned =
                        fslab::ffs::plan_with_log(bytes, s.log_device_bytes(), &ffs_mkfs_options(&p));
                    assert!(planned.is_ok(), "{} on {bytes} bytes: {:?}", s.name, planned.err());
                }
            }
        }
    }
}
