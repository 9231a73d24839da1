//! Mount options: fslab's own, and the generic ones `mount(8)` and
//! `/etc/fstab` use for every file system.
//!
//! Every option is in one of three groups, in this order of preference:
//!
//! 1. honoured: fslab's own (`allow_other`, `cache=`, `checkpoint=`,
//!    `cleaner=` (LFS), `integrity=` (FFS), `realloc=` and `cluster_push=` (FFS), `log=`, `dirhash=`,
//!    `dirhash_maxmem=`, `dirhash_minsize=`, `dirhash_check`), the
//!    kernel flags FUSE can set (`exec`,
//!    `noexec`, `suid`, `nosuid`, `dev`, `nodev`) and the access-time
//!    options (`relatime`, the default, `noatime`, `strictatime`, `atime`,
//!    `nostrictatime`, `nodiratime`, `diratime`), and `ro` / `rw`;
//! 2. accepted, changing nothing: what is already true of every fslab
//!    mount (`async`, `lazytime`, ...) and what only
//!    `mount(8)`, `umount(8)` or systemd read (`defaults`, `auto`,
//!    `noauto`, `nofail`, `_netdev`, `user`, `users`, `x-*`, ...);
//! 3. refused, with the reason: what fslab cannot honour (`sync`,
//!    `dirsync`, `mand`, `remount`, ...).
//!
//! Anything else is an unknown option: an error, or with `mount -s`
//! (sloppy) a warning.

use crate::size::parse_size;
use fslab::ffs::Integrity;
use fslab::ufs::{AtimeOptions, AtimePolicy, DirhashOptions};
use fslab::Layout;
use fslab_cleaner::policy;
use std::path::PathBuf;
use std::time::Duration;

/// Everything the options say.
#[derive(Debug, PartialEq)]
pub(super) struct Options {
    pub allow_other: bool,
    /// `cache=`: memory for the buffer cache and, unless `dirhash_maxmem=`
    /// is given, the directory hashes' share past 2 MiB
    /// ([`Options::dirhash`]).
    pub cache_bytes: u64,
    /// Time between automatic checkpoints (LFS) or syncs (FFS).
    pub interval: Duration,
    /// The cleaner's policy (one of `policy::NAMES`), or `None`: no cleaner.
    pub cleaner: Option<&'static str>,
    /// Whether `cleaner=` was given (only LFS has a cleaner to choose).
    pub cleaner_given: bool,
    /// FFS's metadata-integrity mode, if `integrity=` was given.
    pub integrity: Option<Integrity>,
    /// Kernel flags: programs may run, set-user-ID works, devices open.
    pub exec: bool,
    pub suid: bool,
    pub dev: bool,
    /// Where a background mount's messages go instead of the system log.
    pub log: Option<PathBuf>,
    /// Directory hashing (2002 paper §3); its memory is
    /// [`Options::dirhash`]'s, which follows the cache unless
    /// `dirhash_maxmem=` was given.
    dirhash: DirhashOptions,
    /// Whether `dirhash_maxmem=` was given.
    dirhash_maxmem_given: bool,
    /// When reads update access times.
    pub atime: AtimeOptions,
    /// A read-only mount: nothing reaches the image, and the kernel
    /// refuses every change (EROFS).
    pub read_only: bool,
    /// Requests that wait for durability share flushes (`group_commit=on`).
    pub group_commit: bool,
    /// FFS: the journal's log device, if not where the superblock says.
    pub journal_device: Option<PathBuf>,
    /// FFS: operations a journal may gather into one transaction.
    pub journal_batch: u32,
    /// FFS: what a journal orders of file data (`journal_data=`).
    pub journal_data: fslab::ffs::JournalData,
    /// Threads serving kernel requests (`threads=N`).
    pub threads: usize,
    /// How kernel requests arrive (`transport=auto|device|ring`).
    pub transport: fslab_fuse::Transport,
    /// Inodes the kernel may hold looked up before it is asked to let go
    /// of unused ones (`kernel_inodes=N|off`).
    pub kernel_inodes: Option<usize>,
    /// FFS: `realloc=on|off`, overriding what mkfs recorded.
    pub realloc: Option<bool>,
    /// LFS: memory for the inode map's blocks (`imap_cache=SIZE`), if given.
    pub imap_cache: Option<u64>,
    /// Clean inodes the daemon keeps (`inode_cache=N`), if given; else as
    /// many as the cache's size calls for (`fslab::cache::clean_inodes_for_cache`).
    pub inode_cache: Option<usize>,
    /// FFS: `cluster_push=every|sequential`, which runs a write breaks go
    /// to the disk at once.
    pub run_push: Option<fslab::ffs::RunPush>,
}

impl Default for Options {
    fn default() -> Options {
        let lfs = fslab::lfs::MountOptions::default();
        Options {
            allow_other: false,
            cache_bytes: lfs.cache_bytes,
            interval: lfs.checkpoint_interval,
            cleaner: Some(policy::DEFAULT),
            cleaner_given: false,
            integrity: None,
            exec: true,
            suid: false,
            dev: false,
            log: None,
            dirhash: DirhashOptions::default(),
            dirhash_maxmem_given: false,
            atime: AtimeOptions::RELATIME,
            read_only: false,
            group_commit: true,
            journal_device: None,
            journal_batch: fslab::ffs::DEFAULT_JOURNAL_BATCH,
            journal_data: fslab::ffs::JournalData::Ordered,
            threads: fslab_fuse::MountConfig::default().threads,
            transport: fslab_fuse::MountConfig::default().transport,
            kernel_inodes: fslab_fuse::MountConfig::default().max_kernel_inodes,
            realloc: None,
            imap_cache: None,
            inode_cache: None,
            run_push: None,
        }
    }
}

/// Options true of every fslab mount, or read only by programs other than
/// the file system: accepted, and nothing changes.
const ACCEPTED: &[&str] = &[
    "defaults",
    "async",
    "auto",
    "noauto",
    "nofail",
    "_netdev",
    "user",
    "nouser",
    "owner",
    "group",
    // Linux's default stays relatime without it, as here.
    "norelatime",
    // Every inode change, an access time's too, is written lazily.
    "lazytime",
    "nolazytime",
    "nomand",
    "silent",
    "loud",
    "default_permissions",
];

/// Options fslab cannot honour, with the reason given to the user.
const REFUSED: &[(&str, &str)] = &[
    ("sync", "fslab writes asynchronously; use fsync(2) or 'fslab sync DIR' for durability"),
    ("dirsync", "fslab writes directory changes asynchronously; use fsync(2) on the directory"),
    ("mand", "mandatory locks are not supported"),
    ("users", "a FUSE mount is unmounted by the user who made it or by root, not by every user; use 'user'"),
    ("remount", "a mounted fslab cannot change its options; unmount it and mount again"),
    ("bind", "bind mounts are made by mount(8) itself, not by fslab"),
    ("rbind", "bind mounts are made by mount(8) itself, not by fslab"),
    ("move", "moving a mount is done by mount(8) itself, not by fslab"),
    ("loop", "fslab reads its image file itself and needs no loop device"),
    ("nosymfollow", "nosymfollow is not supported"),
];

/// Parses `-o` lists. `sloppy` (`mount -s`) turns an unknown option into
/// a warning (returned) instead of an error.
pub(super) fn parse(lists: &[String], sloppy: bool) -> Result<(Options, Vec<String>), String> {
    let mut options = Options::default();
    let mut journal_sync: Option<bool> = None;
    let mut journal_batch: Option<u32> = None;
    let mut journal_data: Option<fslab::ffs::JournalData> = None;
    let mut warnings = Vec::new();
    for option in lists.iter().flat_map(|list| list.split(',')).filter(|o| !o.is_empty()) {
        let (key, value) = match option.split_once('=') {
            Some((key, value)) => (key, Some(value)),
            None => (option, None),
        };
        if let Some((_, why)) = REFUSED.iter().find(|(name, _)| *name == key) {
            return Err(format!("option {key}: {why}"));
        }
        match (key, value) {
            ("allow_other", None) => options.allow_other = true,
            ("ro", None) => options.read_only = true,
            ("rw", None) => options.read_only = false,
            ("exec", None) => options.exec = true,
            ("noexec", None) => options.exec = false,
            ("suid", None) => options.suid = true,
            ("nosuid", None) => options.suid = false,
            ("dev", None) => options.dev = true,
            ("nodev", None) => options.dev = false,
            // As Linux's do_mount: `atime` only undoes `noatime`, and
            // `nostrictatime` only undoes `strictatime`.
            ("noatime", None) => options.atime.policy = AtimePolicy::Never,
            ("relatime", None) => options.atime.policy = AtimePolicy::Relative,
            ("strictatime", None) => options.atime.policy = AtimePolicy::Always,
            ("atime", None) if options.atime.policy == AtimePolicy::Never => {
                options.atime.policy = AtimePolicy::Relative
            }
            ("nostrictatime", None) if options.atime.policy == AtimePolicy::Always => {
                options.atime.policy = AtimePolicy::Relative
            }
            ("atime" | "nostrictatime", None) => {}
            ("nodiratime", None) => options.atime.directories = false,
            ("diratime", None) => options.atime.directories = true,
            (name, None) if ACCEPTED.contains(&name) => {}
            // mount(8) records who mounted; systemd and others keep their
            // own settings in x-* and comment=.
            ("user" | "comment" | "helper" | "uhelper", Some(_)) => {}
            (name, _) if name.starts_with("x-") => {}
            ("cache", Some(size)) => {
                options.cache_bytes = parse_size(size).map_err(|e| format!("option cache: {e}"))?
            }
            ("imap_cache", Some(size)) => {
                options.imap_cache = Some(parse_size(size).map_err(|e| format!("option imap_cache: {e}"))?)
            }
            ("checkpoint", Some(seconds)) => {
                let seconds: u64 = seconds.parse().ok().filter(|&s| s > 0).ok_or_else(|| {
                    format!("option checkpoint: '{seconds}' is not a positive number of seconds")
                })?;
                options.interval = Duration::from_secs(seconds);
            }
            ("cleaner", Some("off")) => {
                options.cleaner = None;
                options.cleaner_given = true;
            }
            ("cleaner", Some(name)) => {
                options.cleaner_given = true;
                options.cleaner =
                    Some(policy::NAMES.iter().copied().find(|&n| n == name).ok_or_else(|| {
                        format!(
                            "option cleaner: unknown policy '{name}' (use {} or off)",
                            policy::NAMES.join(", ")
                        )
                    })?)
            }
            ("integrity", Some(name)) => {
                options.integrity = Some(Integrity::from_name(name).ok_or_else(|| {
                    format!("option integrity: '{name}' is not one of sync, async, softdep, journal")
                })?)
            }
            ("realloc", Some("on")) => options.realloc = Some(true),
            ("realloc", Some("off")) => options.realloc = Some(false),
            ("realloc", Some(other)) => return Err(format!("option realloc: '{other}' is not on or off")),
            ("cluster_push", Some("every")) => options.run_push = Some(fslab::ffs::RunPush::Every),
            ("cluster_push", Some("sequential")) => options.run_push = Some(fslab::ffs::RunPush::Sequential),
            ("cluster_push", Some(other)) => {
                return Err(format!("option cluster_push: '{other}' is not every or sequential"))
            }
            ("group_commit", Some("on")) => options.group_commit = true,
            ("group_commit", Some("off")) => options.group_commit = false,
            ("group_commit", Some(other)) => {
                return Err(format!("option group_commit: '{other}' is not on or off"))
            }
            ("journal", Some("sync")) => journal_sync = Some(true),
            ("journal", Some("async")) => journal_sync = Some(false),
            ("journal", Some(other)) => {
                return Err(format!("option journal: '{other}' is not sync or async"))
            }
            ("journal_data", Some("ordered")) => journal_data = Some(fslab::ffs::JournalData::Ordered),
            ("journal_data", Some("writeback")) => journal_data = Some(fslab::ffs::JournalData::Writeback),
            ("journal_data", Some(other)) => {
                return Err(format!("option journal_data: '{other}' is not ordered or writeback"))
            }
            ("transport", Some(name)) => {
                use fslab_fuse::Transport;
                options.transport = [Transport::Auto, Transport::Device, Transport::Ring]
                    .into_iter()
                    .find(|t| t.name() == name)
                    .ok_or_else(|| format!("option transport: '{name}' is not auto, device or ring"))?
            }
            ("inode_cache", Some(n)) => {
                options.inode_cache = Some(n.parse().ok().filter(|&n| n >= 64).ok_or_else(|| {
                    format!("option inode_cache: '{n}' is not a number of inodes from 64 on")
                })?)
            }
            ("kernel_inodes", Some("off")) => options.kernel_inodes = None,
            ("kernel_inodes", Some(n)) => {
                options.kernel_inodes = Some(n.parse().ok().filter(|&n| n >= 64).ok_or_else(|| {
                    format!("option kernel_inodes: '{n}' is not off or a number of inodes from 64 on")
                })?)
            }
            ("threads", Some(n)) => {
                options.threads =
                    n.parse().ok().filter(|&n| (1..=64).contains(&n)).ok_or_else(|| {
                        format!("option threads: '{n}' is not a number of threads from 1 to 64")
                    })?
            }
            ("journal_batch", Some(n)) => {
                journal_batch =
                    Some(n.parse().ok().filter(|&n| (1..=4096).contains(&n)).ok_or_else(|| {
                        format!("option journal_batch: '{n}' is not a number of operations from 1 to 4096")
                    })?)
            }
            ("journal_device", Some("")) => {
                return Err("option journal_device: needs a path (journal_device=PATH)".to_string())
            }
            ("journal_device", Some(path)) => {
                let path =
                    std::path::absolute(path).map_err(|e| format!("option journal_device: {path}: {e}"))?;
                options.journal_device = Some(path)
            }
            ("log", Some("")) => return Err("option log: needs a file name (log=FILE)".to_string()),
            // Relative to where the command runs, not to where the
            // background process goes (it changes directory to "/").
            ("log", Some(file)) => {
                let path = std::path::absolute(file).map_err(|e| format!("option log: {file}: {e}"))?;
                options.log = Some(path)
            }
            ("dirhash", Some("on")) => options.dirhash.enabled = true,
            ("dirhash", Some("off")) => options.dirhash.enabled = false,
            ("dirhash", Some(other)) => return Err(format!("option dirhash: '{other}' is not on or off")),
            ("dirhash_maxmem", Some(size)) => {
                options.dirhash_maxmem_given = true;
                options.dirhash.max_memory =
                    parse_size(size).map_err(|e| format!("option dirhash_maxmem: {e}"))?
            }
            ("dirhash_minsize", Some(size)) => {
                options.dirhash.min_dir_size =
                    parse_size(size).map_err(|e| format!("option dirhash_minsize: {e}"))?
            }
            ("dirhash_check", None) => options.dirhash.check = true,
            (
                "cache" | "checkpoint" | "cleaner" | "integrity" | "journal" | "journal_device"
                | "group_commit" | "journal_batch" | "journal_data" | "threads" | "transport" | "log"
                | "dirhash" | "dirhash_maxmem" | "dirhash_minsize" | "realloc" | "cluster_push"
                | "imap_cache" | "inode_cache",
                None,
            ) => return Err(format!("option {key} needs a value ({key}=...)")),
            (name, Some(_)) if ACCEPTED.contains(&name) || is_flag(name) => {
                return Err(format!("option {key} takes no value"))
            }
            _ if sloppy => warnings.push(format!("ignoring unknown mount option '{option}'")),
            _ => return Err(format!("unknown mount option '{option}'")),
        }
    }
    if let Some(sync) = journal_sync {
        options.integrity = match options.integrity {
            Some(Integrity::Journal | Integrity::JournalSync) if sync => Some(Integrity::JournalSync),
            Some(Integrity::Journal | Integrity::JournalSync) => Some(Integrity::Journal),
            _ => return Err("option journal: goes with integrity=journal".into()),
        };
    }
    if let Some(batch) = journal_batch {
        if !matches!(options.integrity, Some(Integrity::Journal | Integrity::JournalSync)) {
            return Err("option journal_batch: goes with integrity=journal".into());
        }
        options.journal_batch = batch;
    }
    if let Some(data) = journal_data {
        if !matches!(options.integrity, Some(Integrity::Journal | Integrity::JournalSync)) {
            return Err("option journal_data: goes with integrity=journal".into());
        }
        options.journal_data = data;
    }
    Ok((options, warnings))
}

impl Options {
    /// Refuses an option the layout found on the image has no use for.
    pub fn check_layout(&self, layout: Layout) -> Result<(), String> {
        match layout {
            Layout::Lfs if self.integrity.is_some() => {
                Err("option integrity is for FFS; LFS writes every operation atomically to its log".into())
            }
            Layout::Ffs if self.cleaner_given => Err("option cleaner is for LFS; FFS has no cleaner".into()),
            Layout::Ffs if self.imap_cache.is_some() => {
                Err("option imap_cache is for LFS; FFS keeps its inodes in cylinder groups, not a map".into())
            }
            Layout::Lfs if self.realloc.is_some() => {
                Err("option realloc is for FFS; LFS writes every block where its log is, contiguous already"
                    .into())
            }
            Layout::Lfs if self.run_push.is_some() => {
                Err("option cluster_push is for FFS; LFS writes every block into its log's segments".into())
            }
            Layout::Lfs if self.journal_device.is_some() => {
                Err("option journal_device is for FFS with a journal on a log device; LFS is its own log"
                    .into())
            }
            _ => Ok(()),
        }
    }

    /// What the options mean for an LFS mount.
    pub fn lfs(&self) -> fslab::lfs::MountOptions {
        fslab::lfs::MountOptions {
            cache_bytes: self.block_cache_bytes(),
            checkpoint_interval: self.interval,
            // Nothing a read-only mount writes reaches the image.
            allow_damaged: self.read_only,
            imap_resident_bytes: self.imap_cache.unwrap_or(fslab::lfs::ifile::IMAP_RESIDENT_BYTES),
            clean_inodes: self.clean_inodes(),
            ..fslab::lfs::MountOptions::default()
        }
    }

    /// What the options mean for an FFS mount (`integrity` defaults to sync).
    pub fn ffs(&self) -> fslab::ffs::MountOptions {
        fslab::ffs::MountOptions {
            cache_bytes: self.block_cache_bytes(),
            integrity: self.integrity.unwrap_or(Integrity::Sync),
            sync_interval: self.interval,
            allow_unclean: self.read_only,
            journal_batch: self.journal_batch,
            journal_data: self.journal_data,
            realloc: self.realloc,
            run_push: self.run_push.unwrap_or(fslab::ffs::MountOptions::default().run_push),
            clean_inodes: self.clean_inodes(),
            ..fslab::ffs::MountOptions::default()
        }
    }

    /// The directory hashes' settings. Unless `dirhash_maxmem=` says
    /// otherwise, the hashes may hold a 32nd of the cache, at least the
    /// 2002 paper's 2 MiB: with 2 MiB whatever the cache, a directory of
    /// a quarter of a million names outgrew it and every lookup in it
    /// became a scan (FFS-async creates fell from 9,000 a second to 233).
    pub fn dirhash(&self) -> DirhashOptions {
        let mut dirhash = self.dirhash;
        if !self.dirhash_maxmem_given {
            dirhash.max_memory = dirhash_share(self.cache_bytes);
        }
        dirhash
    }

    /// The buffer cache's memory: the cache, less what the hashes were
    /// given of it past the 2 MiB they always had beside it, so that the
    /// mount's memory stays what it was (a given `dirhash_maxmem` is
    /// memory beside the cache, as before).
    fn block_cache_bytes(&self) -> u64 {
        if self.dirhash_maxmem_given || !self.dirhash.enabled {
            return self.cache_bytes;
        }
        let beside = DirhashOptions::default().max_memory;
        self.cache_bytes - (dirhash_share(self.cache_bytes) - beside).min(self.cache_bytes / 2)
    }

    /// Clean inodes kept: as given, or as many as the cache calls for, so
    /// that a long-lived mount's memory follows its cache.
    fn clean_inodes(&self) -> usize {
        self.inode_cache.unwrap_or_else(|| fslab::cache::clean_inodes_for_cache(self.cache_bytes))
    }
}

/// The directory hashes' memory for a cache of `cache_bytes`, when
/// `dirhash_maxmem=` is not given: a 32nd of it, at least 2 MiB.
fn dirhash_share(cache_bytes: u64) -> u64 {
    (cache_bytes / 32).max(DirhashOptions::default().max_memory)
}

/// The options that take no value.
fn is_flag(name: &str) -> bool {
    matches!(
        name,
        "allow_other"
            | "ro"
            | "rw"
            | "exec"
            | "noexec"
            | "suid"
            | "nosuid"
            | "dev"
            | "nodev"
            | "dirhash_check"
            | "noatime"
            | "relatime"
            | "strictatime"
            | "atime"
            | "nostrictatime"
            | "nodiratime"
            | "diratime"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(option: &str) -> Result<Options, String> {
        parse(&[option.to_string()], false).map(|(o, _)| o)
    }

    #[test]
    fn the_directory_hashes_memory_follows_the_cache_and_comes_out_of_it() {
        let with =
            |o: &str| one(o).map(|o| (o.dirhash().max_memory, o.ffs().cache_bytes, o.lfs().cache_bytes));
        const MIB: u64 = 1 << 20;
        // 256 MiB: hashes 8 MiB, 6 of them from the blocks; the mount's
        // memory as it was with 2 MiB beside the cache.
        assert_eq!(with("cache=256M"), Ok((8 * MIB, 250 * MIB, 250 * MIB)));
        assert_eq!(Options::default().dirhash().max_memory, 8 * MIB, "the default cache is 256 MiB");
        // A small cache keeps the paper's 2 MiB beside it, as before.
        assert_eq!(with("cache=16M"), Ok((2 * MIB, 16 * MIB, 16 * MIB)));
        assert_eq!(with("cache=1G"), Ok((32 * MIB, 994 * MIB, 994 * MIB)));
        // Given, or hashing off: nothing is taken from the blocks.
        assert_eq!(with("cache=256M,dirhash_maxmem=1M"), Ok((MIB, 256 * MIB, 256 * MIB)));
        assert_eq!(with("cache=256M,dirhash=off").map(|w| w.1), Ok(256 * MIB));
    }

    #[test]
    fn fslab_options_parse_and_unknown_ones_are_refused() {
        let parsed = parse(&["allow_other,cache=64M".to_string(), "checkpoint=5".to_string()], false);
        let expected = Options {
            allow_other: true,
            cache_bytes: 64 << 20,
            interval: Duration::from_secs(5),
            ..Options::default()
        };
        assert_eq!(parsed, Ok((expected, Vec::new())));
        assert_eq!(parse(&[], false).map(|(o, _)| o), Ok(Options::default()));
        assert_eq!(one("cleaner=off").map(|o| o.cleaner), Ok(None));
        assert_eq!(one("integrity=async").map(|o| o.integrity), Ok(Some(Integrity::Async)));
        assert_eq!(one("integrity=sync").map(|o| o.ffs().integrity), Ok(Integrity::Sync));
        assert_eq!(Options::default().ffs().integrity, Integrity::Sync, "sync by default");
        for name in policy::NAMES {
            assert_eq!(one(&format!("cleaner={name}")).map(|o| o.cleaner), Ok(Some(*name)));
        }
        assert_eq!(one("log=/var/log/x.log").map(|o| o.log), Ok(Some(PathBuf::from("/var/log/x.log"))));
        let here = std::env::current_dir().expect("current directory");
        assert_eq!(one("log=rel.log").map(|o| o.log), Ok(Some(here.join("rel.log"))), "relative to here");
        let dirhash =
            one("dirhash=off,dirhash_maxmem=64M,dirhash_minsize=16K,dirhash_check").map(|o| o.dirhash);
        let want =
            DirhashOptions { enabled: false, max_memory: 64 << 20, min_dir_size: 16 << 10, check: true };
        assert_eq!(dirhash, Ok(want));
        assert_eq!(one("dirhash=on").map(|o| o.dirhash.enabled), Ok(true));
        for bad in [
            "dirhash",
            "dirhash=maybe",
            "dirhash_maxmem=lots",
            "dirhash_minsize",
            "dirhash_check=1",
            "bogus",
            "cache",
            "cache=lots",
            "checkpoint=0",
            "checkpoint=-1",
            "allow_other=1",
            "noexec=yes",
            "rw=1",
            "cleaner",
            "cleaner=nonsense",
            "log",
            "log=",
            "integrity",
            "integrity=jbd2",
            "journal=sync",
            "integrity=softdep,journal=async",
            "integrity=journal,journal=later",
        ] {
            assert!(one(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn integrity_softdep_parses_and_reaches_the_ffs_mount() {
        assert_eq!(one("integrity=softdep").map(|o| o.integrity), Ok(Some(Integrity::Softdep)));
        assert_eq!(one("integrity=softdep").map(|o| o.ffs().integrity), Ok(Integrity::Softdep));
        assert_eq!(
            one("integrity=async,integrity=softdep").map(|o| o.integrity),
            Ok(Some(Integrity::Softdep))
        );
        for mode in Integrity::ALL {
            let option = format!("integrity={}", mode.name());
            assert_eq!(one(&option).map(|o| o.ffs().integrity), Ok(mode), "{option}");
        }
    }

    #[test]
    fn journal_batch_goes_with_a_journal_and_a_sensible_count() {
        assert_eq!(
            one("integrity=journal").map(|o| o.ffs().journal_batch),
            Ok(fslab::ffs::DEFAULT_JOURNAL_BATCH)
        );
        assert_eq!(one("integrity=journal,journal_batch=1").map(|o| o.ffs().journal_batch), Ok(1));
        assert_eq!(one("journal_batch=8,integrity=journal").map(|o| o.ffs().journal_batch), Ok(8));
        assert!(one("integrity=softdep,journal_batch=8").is_err());
        assert!(one("integrity=journal,journal_batch=0").is_err());
        use fslab::ffs::JournalData;
        assert_eq!(one("integrity=journal").map(|o| o.ffs().journal_data), Ok(JournalData::Ordered));
        let writeback = one("integrity=journal,journal=sync,journal_data=writeback");
        assert_eq!(writeback.map(|o| o.ffs().journal_data), Ok(JournalData::Writeback));
        assert!(one("integrity=softdep,journal_data=ordered").is_err());
        assert!(one("integrity=journal,journal_data=maybe").is_err());
        assert!(one("integrity=journal,journal_batch=many").is_err());
        assert!(one("integrity=journal,journal_batch").is_err());
    }

    #[test]
    fn the_inodes_kept_follow_the_cache_unless_given() {
        assert_eq!(Options::default().lfs().clean_inodes, 16_384);
        assert_eq!(one("cache=128M").map(|o| o.ffs().clean_inodes), Ok(8_192));
        assert_eq!(
            one("inode_cache=500000").map(|o| (o.lfs().clean_inodes, o.ffs().clean_inodes)),
            Ok((500_000, 500_000))
        );
        for bad in ["inode_cache=10", "inode_cache=many", "inode_cache=", "inode_cache"] {
            assert!(one(bad).is_err(), "{bad} accepted");
        }
    }

    #[test]
    fn kernel_inodes_are_bounded_unless_turned_off() {
        assert_eq!(Options::default().kernel_inodes, Some(fslab_fuse::MAX_KERNEL_INODES));
        assert_eq!(one("kernel_inodes=5000").map(|o| o.kernel_inodes), Ok(Some(5000)));
        assert_eq!(one("kernel_inodes=off").map(|o| o.kernel_inodes), Ok(None));
        for bad in ["kernel_inodes=10", "kernel_inodes=many", "kernel_inodes=", "kernel_inodes"] {
            assert!(one(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn transport_is_auto_unless_named() {
        use fslab_fuse::Transport;
        assert_eq!(Options::default().transport, Transport::Auto);
        assert_eq!(one("transport=ring").map(|o| o.transport), Ok(Transport::Ring));
        assert_eq!(one("transport=device").map(|o| o.transport), Ok(Transport::Device));
        assert_eq!(one("transport=device,transport=auto").map(|o| o.transport), Ok(Transport::Auto));
        for bad in ["transport=uring", "transport=", "transport"] {
            assert!(one(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn threads_are_a_count_from_1_to_64() {
        assert_eq!(one("threads=1").map(|o| o.threads), Ok(1));
        assert_eq!(one("threads=64").map(|o| o.threads), Ok(64));
        assert_eq!(Options::default().threads, fslab_fuse::MountConfig::default().threads);
        for bad in ["threads=0", "threads=65", "threads=four", "threads"] {
            assert!(one(bad).is_err(), "{bad} accepted");
        }
    }

    #[test]
    fn realloc_overrides_the_superblock_on_ffs_and_is_refused_on_lfs() {
        assert_eq!(Options::default().ffs().realloc, None, "the superblock decides");
        assert_eq!(one("realloc=on").map(|o| o.ffs().realloc), Ok(Some(true)));
        assert_eq!(one("realloc=off").map(|o| o.ffs().realloc), Ok(Some(false)));
        assert!(one("realloc=maybe").is_err());
        assert!(one("realloc").is_err());
        let on = one("realloc=on").expect("parse");
        assert!(on.check_layout(Layout::Ffs).is_ok());
        assert!(on.check_layout(Layout::Lfs).is_err());
    }

    #[test]
    fn imap_cache_sizes_the_lfs_inode_map_and_is_refused_on_ffs() {
        let default = fslab::lfs::ifile::IMAP_RESIDENT_BYTES;
        assert_eq!(Options::default().lfs().imap_resident_bytes, default);
        assert_eq!(one("imap_cache=160M").map(|o| o.lfs().imap_resident_bytes), Ok(160 << 20));
        for bad in ["imap_cache=lots", "imap_cache"] {
            assert!(one(bad).is_err(), "{bad} accepted");
        }
        let given = one("imap_cache=1M").expect("parse");
        assert!(given.check_layout(Layout::Lfs).is_ok());
        assert!(given.check_layout(Layout::Ffs).is_err());
    }

    #[test]
    fn cluster_push_chooses_the_rule_on_ffs_and_is_refused_on_lfs() {
        assert_eq!(Options::default().ffs().run_push, fslab::ffs::RunPush::Sequential);
        assert_eq!(one("cluster_push=every").map(|o| o.ffs().run_push), Ok(fslab::ffs::RunPush::Every));
        assert_eq!(
            one("cluster_push=sequential").map(|o| o.ffs().run_push),
            Ok(fslab::ffs::RunPush::Sequential)
        );
        assert!(one("cluster_push=some").is_err());
        assert!(one("cluster_push").is_err());
        let every = one("cluster_push=every").expect("parse");
        assert!(every.check_layout(Layout::Ffs).is_ok());
        assert!(every.check_layout(Layout::Lfs).is_err());
    }

    #[test]
    fn group_commit_is_on_unless_turned_off() {
        assert!(Options::default().group_commit);
        assert!(!one("group_commit=off").expect("off").group_commit);
        assert!(one("group_commit=off,group_commit=on").expect("on").group_commit);
        assert!(one("group_commit=maybe").is_err());
        assert!(one("group_commit").is_err());
    }

    #[test]
    fn integrity_journal_takes_its_commit_from_the_journal_option() {
        assert_eq!(one("integrity=journal").map(|o| o.ffs().integrity), Ok(Integrity::Journal));
        assert_eq!(
            one("integrity=journal,journal=sync").map(|o| o.ffs().integrity),
            Ok(Integrity::JournalSync)
        );
        assert_eq!(
            one("journal=async,integrity=journal-sync").map(|o| o.ffs().integrity),
            Ok(Integrity::Journal),
            "journal= decides, wherever it stands"
        );
    }

    #[test]
    fn an_unknown_integrity_mode_is_refused_naming_every_mode() {
        for bad in ["wapbl", "Softdep", "soft", ""] {
            assert_eq!(
                one(&format!("integrity={bad}")).map(|o| o.integrity),
                Err(format!("option integrity: '{bad}' is not one of sync, async, softdep, journal")),
                "integrity={bad}"
            );
        }
    }

    #[test]
    fn generic_options_of_fstab_lines_are_accepted() {
        let fstab = "defaults,rw,auto,noauto,nofail,_netdev,user,nouser,owner,group,user=alice,\
                     norelatime,lazytime,async,nomand,x-systemd.automount,\
                     x-systemd.device-timeout=10,comment=backup";
        assert_eq!(parse(&[fstab.to_string()], false), Ok((Options::default(), Vec::new())));
    }

    #[test]
    fn access_time_options_choose_the_policy_as_linux_does() {
        let policy = |list: &str| one(list).map(|o| o.atime.policy);
        assert_eq!(Options::default().atime, AtimeOptions::RELATIME, "relatime by default");
        assert_eq!(policy("noatime"), Ok(AtimePolicy::Never));
        assert_eq!(policy("strictatime"), Ok(AtimePolicy::Always));
        assert_eq!(policy("noatime,relatime"), Ok(AtimePolicy::Relative));
        assert_eq!(policy("noatime,atime"), Ok(AtimePolicy::Relative), "atime undoes noatime");
        assert_eq!(policy("strictatime,atime"), Ok(AtimePolicy::Always), "and nothing else");
        assert_eq!(policy("strictatime,nostrictatime"), Ok(AtimePolicy::Relative));
        assert_eq!(policy("noatime,nostrictatime"), Ok(AtimePolicy::Never));
        assert_eq!(one("nodiratime").map(|o| o.atime.directories), Ok(false));
        assert_eq!(one("nodiratime,diratime").map(|o| o.atime.directories), Ok(true));
        assert!(one("noatime=1").is_err());
    }

    #[test]
    fn an_option_of_the_other_layout_is_refused() {
        let ffs_only = one("integrity=async").expect("parses");
        assert!(ffs_only.check_layout(Layout::Ffs).is_ok());
        assert!(ffs_only.check_layout(Layout::Lfs).expect_err("lfs").contains("FFS"));
        let lfs_only = one("cleaner=greedy").expect("parses");
        assert!(lfs_only.check_layout(Layout::Lfs).is_ok());
        assert!(lfs_only.check_layout(Layout::Ffs).expect_err("ffs").contains("LFS"));
        assert!(Options::default().check_layout(Layout::Ffs).is_ok(), "the default cleaner is not a choice");
    }

    #[test]
    fn kernel_flags_are_honoured_last_one_winning() {
        let o = one("noexec,suid,dev").expect("parses");
        assert_eq!((o.exec, o.suid, o.dev), (false, true, true));
        let o = one("suid,nosuid,noexec,exec").expect("parses");
        assert_eq!((o.exec, o.suid, o.dev), (true, false, false));
    }

    #[test]
    fn what_fslab_cannot_honour_is_refused_with_the_reason() {
        for (name, why) in REFUSED {
            let e = one(name).expect_err(name);
            assert_eq!(e, format!("option {name}: {why}"));
        }
        assert!(one("defaults,ro").expect("ro").read_only);
        assert!(!one("ro,rw").expect("ro then rw").read_only);
    }

    #[test]
    fn sloppy_turns_unknown_options_into_warnings_but_still_refuses_the_impossible() {
        let (o, warnings) = parse(&["bogus,cache=1M".to_string()], true).expect("sloppy");
        assert_eq!(o.cache_bytes, 1 << 20);
        assert_eq!(warnings, ["ignoring unknown mount option 'bogus'"]);
        assert!(parse(&["sync".to_string()], true).is_err());
    }
}
