//! `fslab mkfs IMAGE [--layout lfs|ffs] [--size SIZE] [--block-size N] [options] [--force]`.
//!
//! LFS takes `--segment-size`; FFS takes `--frag-size`, `--cg-size`,
//! `--bytes-per-inode`, `--maxcontig`, `--rotdelay`, `--maxbpg`,
//! `--minfree`, `--optim`, the disk geometry a rotdelay in milliseconds
//! needs (`--sectors-per-track`, `--rps`), the journal's options and the
//! directory placement (`--dirpref`, `--avgfilesize`, `--avgfpdir`) and
//! `--realloc`. An
//! option of the other layout is refused.
//!
//! Refuses, unless `--force`, to write over anything that looks like it holds
//! data, checked in this order (the first match names what was found):
//!
//! 1. another file system's or container's signature at its start (ext2/3/4,
//!    XFS, btrfs, FAT, exFAT, NTFS, LUKS, LVM, GPT, ISO 9660, swap:
//!    `fslab::format::foreign`);
//! 2. an fslab superblock of either layout (`fslab::Layout::probe`);
//! 3. an fslab journal's log device;
//! 4. any non-zero byte in the first 64 KiB.
//!
//! `--journal-device` (FFS) is checked the same way, and created if absent.

use crate::size::{human, parse_size};
use clap::Args;
use disk::{BlockDevice, FileDisk};
use fslab::ffs::{DirPref, JournalKind, Optim, RotDelay};
use fslab::lfs::MkfsOptions;
use fslab::Layout;
use std::io;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Examples in `fslab mkfs --help`.
pub const EXAMPLES: &str = "Examples:
  fslab mkfs fs.img --size 4G                     a new LFS image file of 4 GiB
  fslab mkfs ffs.img --size 1G --layout ffs       an FFS image
  fslab mkfs /dev/sdb1                            the whole block device (its size)
  fslab mkfs fs.img --size 4G --force             over an image that holds a file system
  fslab mkfs ffs.img --size 1G --layout ffs --journal-device log.img --journal-size 128M
                                                  an FFS whose journal is on a device of its own";

/// Arguments of `fslab mkfs`.
#[derive(Args)]
pub struct MkfsArgs {
    /// The image file (created if absent, sparse) or block device.
    image: PathBuf,
    /// The layout: lfs (log-structured) or ffs (the Fast File System).
    #[arg(long, default_value = "lfs", value_parser = ["lfs", "ffs"])]
    layout: String,
    /// Size of the file system, e.g. 64M or 1G [default: the size of an existing file or device].
    #[arg(long, value_parser = parse_size)]
    size: Option<u64>,
    /// Bytes per block: a power of two from 4K to 64K [default: 4K for lfs, 8K for ffs].
    #[arg(long, value_parser = parse_size)]
    block_size: Option<u64>,
    /// LFS: bytes per segment: a power of two, at least 16 blocks, at most 1/8 of the device [default: 1M, less on small devices].
    #[arg(long, value_parser = parse_size)]
    segment_size: Option<u64>,
    #[command(flatten)]
    ffs: FfsArgs,
    /// Overwrite an existing file system or data.
    #[arg(long)]
    force: bool,
}

/// The options only FFS takes.
#[derive(Args, Default)]
pub struct FfsArgs {
    /// FFS: bytes per fragment: the block size divided by 1, 2, 4 or 8 [default: 1K].
    #[arg(long, value_parser = parse_size)]
    frag_size: Option<u64>,
    /// FFS: bytes per cylinder group [default: 32M].
    #[arg(long, value_parser = parse_size)]
    cg_size: Option<u64>,
    /// FFS: bytes of disk per inode [default: 8K].
    #[arg(long, value_parser = parse_size)]
    bytes_per_inode: Option<u64>,
    /// FFS: blocks written contiguously before a rotdelay gap, and the longest cluster [default: 1M worth; the papers' FFS: 64K worth].
    #[arg(long)]
    maxcontig: Option<u32>,
    /// FFS: the gap after maxcontig blocks: milliseconds (4ms) or blocks (2) [default: 0, none].
    #[arg(long)]
    rotdelay: Option<String>,
    /// FFS: blocks a file takes from one cylinder group before moving on [default: an indirect block's pointers].
    #[arg(long)]
    maxbpg: Option<u32>,
    /// FFS: percent of the data area kept from file data [default: 10].
    #[arg(long)]
    minfree: Option<u32>,
    /// FFS: what a growing fragment run prefers when it moves: time or space [default: time, space below 10% minfree].
    #[arg(long, value_parser = ["time", "space"])]
    optim: Option<String>,
    /// FFS: 512-byte sectors per track, for a rotdelay in milliseconds [default: 72, the 1993 paper's HP 97560].
    #[arg(long)]
    sectors_per_track: Option<u32>,
    /// FFS: revolutions per second, for a rotdelay in milliseconds [default: 66].
    #[arg(long)]
    rps: Option<u32>,
    /// FFS: a journal, for `-o integrity=journal`: file (a log inside the file system, written 64K at a time) or wafs (a log region after it, written 4K at a time); needs fragments of at most 4K [default: none].
    #[arg(long, value_parser = ["none", "file", "wafs"])]
    journal: Option<String>,
    /// FFS: bytes of the journal's log [default: 1% of the device, from 1M to 64M; with --journal-device, all of that device].
    #[arg(long, value_parser = parse_size)]
    journal_size: Option<u64>,
    /// FFS: the journal's log on a device of its own (a wafs log on a second disk): a block device or an image file, created if absent (of --journal-size, 64M if not given); the superblock records its path and identity.
    #[arg(long)]
    journal_device: Option<PathBuf>,
    /// FFS: where new directories go: new (near their parent while its cylinder group has room, FreeBSD's since 2001) or old (4.4BSD's: spread over the groups) [default: new].
    #[arg(long, value_parser = ["old", "new"])]
    dirpref: Option<String>,
    /// FFS: the expected average file size, for --dirpref new (FreeBSD newfs -g) [default: 16K].
    #[arg(long, value_parser = parse_size)]
    avgfilesize: Option<u64>,
    /// FFS: the expected files per directory, for --dirpref new (FreeBSD newfs -h) [default: 64].
    #[arg(long)]
    avgfpdir: Option<u32>,
    /// FFS: move a file's blocks not yet written to a contiguous free run when its next block lands elsewhere (McKusick's ffs_reallocblks; a mount's -o realloc= overrides it) [default: on].
    #[arg(long, value_parser = ["on", "off"])]
    realloc: Option<String>,
}

impl FfsArgs {
    /// The options given, by name, for refusing them on LFS.
    fn given(&self) -> Vec<&'static str> {
        let mut given = Vec::new();
        let mut note = |set: bool, name| {
            if set {
                given.push(name)
            }
        };
        note(self.frag_size.is_some(), "--frag-size");
        note(self.cg_size.is_some(), "--cg-size");
        note(self.bytes_per_inode.is_some(), "--bytes-per-inode");
        note(self.maxcontig.is_some(), "--maxcontig");
        note(self.rotdelay.is_some(), "--rotdelay");
        note(self.maxbpg.is_some(), "--maxbpg");
        note(self.minfree.is_some(), "--minfree");
        note(self.optim.is_some(), "--optim");
        note(self.sectors_per_track.is_some(), "--sectors-per-track");
        note(self.rps.is_some(), "--rps");
        note(self.journal.is_some(), "--journal");
        note(self.journal_size.is_some(), "--journal-size");
        note(self.journal_device.is_some(), "--journal-device");
        note(self.dirpref.is_some(), "--dirpref");
        note(self.avgfilesize.is_some(), "--avgfilesize");
        note(self.avgfpdir.is_some(), "--avgfpdir");
        note(self.realloc.is_some(), "--realloc");
        given
    }

    /// The FFS mkfs options these arguments give with `block_size`.
    fn options(&self, block_size: Option<u64>) -> Result<fslab::ffs::MkfsOptions, String> {
        let small = |what: &str, v: u64| u32::try_from(v).map_err(|_| format!("{what} {v} is too large"));
        let mut o = match block_size {
            Some(bs) => fslab::ffs::MkfsOptions::with_block_size(small("block size", bs)?),
            None => fslab::ffs::MkfsOptions::default(),
        };
        if let Some(f) = self.frag_size {
            o.fragment_size = small("fragment size", f)?;
        }
        if let Some(g) = self.cg_size {
            o.group_size = g;
        }
        if let Some(b) = self.bytes_per_inode {
            o.bytes_per_inode = small("bytes per inode", b)?;
        }
        o.maxcontig = self.maxcontig.or(o.maxcontig);
        o.maxbpg = self.maxbpg.or(o.maxbpg);
        if let Some(m) = self.minfree {
            o.minfree = m;
        }
        if let Some(r) = &self.rotdelay {
            o.rotdelay = parse_rotdelay(r)?;
        }
        o.optim = match self.optim.as_deref() {
            Some("time") => Some(Optim::Time),
            Some("space") => Some(Optim::Space),
            _ => o.optim,
        };
        if let Some(n) = self.sectors_per_track {
            o.sectors_per_track = n;
        }
        if let Some(n) = self.rps {
            o.revolutions_per_second = n;
        }
        o.journal = match (self.journal.as_deref(), &self.journal_device) {
            (Some("wafs") | None, Some(_)) => JournalKind::Device,
            (Some(other), Some(_)) => {
                return Err(format!("a journal on --journal-device is a wafs log, not {other}"))
            }
            (Some("file"), None) => JournalKind::File,
            (Some("wafs"), None) => JournalKind::Wafs,
            _ => JournalKind::None,
        };
        o.journal_bytes = self.journal_size;
        if self.dirpref.as_deref() == Some("old") {
            o.dirpref = DirPref::Old;
        }
        if let Some(size) = self.avgfilesize {
            o.avgfilesize = small("average file size", size)?;
        }
        if let Some(n) = self.avgfpdir {
            o.avgfpdir = n;
        }
        if let Some(r) = &self.realloc {
            o.realloc = r == "on";
        }
        Ok(o)
    }
}

/// A rotdelay: `0` (none), `4ms` (milliseconds, 4.4BSD's form) or `2`
/// (blocks, the 1995 paper's "rotdelay 2").
fn parse_rotdelay(text: &str) -> Result<RotDelay, String> {
    let bad = || format!("rotdelay '{text}' is not a number of blocks (2) or of milliseconds (4ms)");
    match text.strip_suffix("ms") {
        Some(ms) => match ms.parse::<u32>().map_err(|_| bad())? {
            0 => Ok(RotDelay::Off),
            ms => Ok(RotDelay::Millis(ms)),
        },
        None => match text.parse::<u32>().map_err(|_| bad())? {
            0 => Ok(RotDelay::Off),
            blocks => Ok(RotDelay::Blocks(blocks)),
        },
    }
}

/// Makes the file system and prints a one-line summary.
pub fn run(args: &MkfsArgs) -> Result<(), String> {
    let path = args.image.as_path();
    let name = path.display();
    let existing = match std::fs::metadata(path) {
        Ok(meta) => Some(meta),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(format!("{name}: {e}")),
    };
    // The lock (held until the end) keeps a mounted image from being made over.
    let (size, _lock) = match &existing {
        Some(meta) => {
            let (lock, disk) = claim_existing(path, meta, args.force)?;
            let size = match args.size {
                Some(size) if meta.file_type().is_block_device() && size != disk.size() => {
                    return Err(format!(
                        "{name} is a block device of {}; --size cannot change it",
                        human(disk.size())
                    ))
                }
                // Making the file system cuts a longer file to its size:
                // what lies past it is gone, and only the first 64 KiB were
                // looked at for data.
                Some(size) if size < disk.size() && !args.force => {
                    return Err(format!(
                        "{name} is {}; --size {} would cut off what lies past it (use --force to cut it)",
                        human(disk.size()),
                        human(size)
                    ))
                }
                Some(size) => size,
                None => disk.size(),
            };
            (size, Some(lock))
        }
        None => (args.size.ok_or_else(|| format!("{name} does not exist; give --size to create it"))?, None),
    };
    let layout = Layout::by_name(&args.layout).ok_or_else(|| format!("unknown layout '{}'", args.layout))?;
    let plan = match layout {
        Layout::Lfs => {
            if let Some(option) = args.ffs.given().first() {
                return Err(format!("{option} is an FFS option; add --layout ffs"));
            }
            Plan::Lfs(MkfsOptions::for_device(
                size,
                args.block_size.unwrap_or(MkfsOptions::default().block_size.into()),
                args.segment_size,
            )?)
        }
        Layout::Ffs => {
            if args.segment_size.is_some() {
                return Err("--segment-size is an LFS option (FFS has cylinder groups: --cg-size)".into());
            }
            let options = args.ffs.options(args.block_size)?;
            // Checked before anything is created or written.
            let log = match &args.ffs.journal_device {
                Some(log_path) => Some(LogDevice::open(log_path, path, &options, args.force)?),
                None => None,
            };
            let sb = fslab::ffs::plan_with_log(size, log.as_ref().map(|l| l.size), &options)
                .map_err(|e| e.to_string())?;
            Plan::Ffs(options, Box::new(sb), log)
        }
    };

    let created = existing.is_none();
    let made = make(path, size, &plan);
    if made.is_err() {
        // Leave nothing half-made behind.
        if created {
            let _ = std::fs::remove_file(path);
        }
        if let Plan::Ffs(_, _, Some(log)) = &plan {
            if log.created {
                let _ = std::fs::remove_file(&log.path);
            }
        }
    }
    made.map_err(|e| format!("{name}: {e}"))?;
    match plan {
        Plan::Lfs(options) => outln!(
            "fslab: made an LFS on {name}: {}, {}-byte blocks, {} segments of {}",
            human(size),
            options.block_size,
            size / u64::from(options.segment_size),
            human(options.segment_size.into())
        )?,
        Plan::Ffs(_, sb, log) => {
            let g = sb.geometry;
            outln!(
                "fslab: made an FFS on {name}: {}, {}-byte blocks of {}-byte fragments, {} cylinder groups of {}, \
                 {} inodes, maxcontig {}",
                human(size),
                g.block_size,
                g.frag_size,
                g.ncg,
                human(g.fpg as u64 * g.frag_size as u64),
                g.ninodes(),
                g.maxcontig
            )?;
            let j = sb.journal;
            if let Some(log) = log {
                outln!(
                    "fslab: with a journal of {} on the log device {}, written {} at a time",
                    human(j.bytes),
                    log.path.display(),
                    human(u64::from(j.unit))
                )?;
            } else if j.present() {
                outln!(
                    "fslab: with a {} journal of {} at fragment {}, written {} at a time",
                    j.kind.name(),
                    human(j.bytes),
                    j.start,
                    human(u64::from(j.unit))
                )?;
            }
        }
    }
    Ok(())
}

/// What mkfs will make.
enum Plan {
    Lfs(MkfsOptions),
    Ffs(fslab::ffs::MkfsOptions, Box<fslab::ffs::Superblock>, Option<LogDevice>),
}

/// The device `--journal-device` names, checked (and locked) before
/// anything is written.
struct LogDevice {
    /// Its absolute path: what the superblock records.
    path: PathBuf,
    /// Its size, or the size it will be made.
    size: u64,
    /// Whether mkfs creates it (and removes it if mkfs fails).
    created: bool,
    _lock: Option<crate::image_lock::ImageLock>,
}

impl LogDevice {
    /// Checks the log device at `path` as the image is checked: a regular
    /// file or block device that holds nothing, unless `force`; not the
    /// image itself. One that does not exist will be an image file of the
    /// journal's size after its header.
    fn open(
        path: &Path,
        image: &Path,
        options: &fslab::ffs::MkfsOptions,
        force: bool,
    ) -> Result<LogDevice, String> {
        let name = path.display();
        let same =
            |a: &Path, b: &Path| a.canonicalize().ok().is_some_and(|a| b.canonicalize().ok() == Some(a));
        if same(path, image) {
            return Err(format!("{name}: the journal's device cannot be the file system's own"));
        }
        match std::fs::metadata(path) {
            Ok(meta) => {
                let (lock, disk) = claim_existing(path, &meta, force)?;
                let path = path.canonicalize().map_err(|e| format!("{name}: {e}"))?;
                Ok(LogDevice { path, size: disk.size(), created: false, _lock: Some(lock) })
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                let size = options.log_device_bytes();
                let parent = match path.parent() {
                    Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
                    _ => PathBuf::from("."),
                };
                let dir = parent.canonicalize().map_err(|e| format!("{}: {e}", parent.display()))?;
                let file = path.file_name().ok_or_else(|| format!("{name} names no file"))?;
                Ok(LogDevice { path: dir.join(file), size, created: true, _lock: None })
            }
            Err(e) => Err(format!("{name}: {e}")),
        }
    }
}

/// An image or device that exists at `path` (`meta`), claimed for mkfs:
/// a regular file or a block device, locked (so that a mounted one is
/// never made over, and the lock is held until mkfs ends), and holding
/// nothing (see the module comment) unless `force`.
fn claim_existing(
    path: &Path,
    meta: &std::fs::Metadata,
    force: bool,
) -> Result<(crate::image_lock::ImageLock, FileDisk), String> {
    let name = path.display();
    let kind = meta.file_type();
    if !kind.is_file() && !kind.is_block_device() {
        return Err(format!("{name} is not a regular file or a block device"));
    }
    let lock = crate::image_lock::lock(path).map_err(|e| format!("{name}: {e}"))?;
    let disk = FileDisk::open_read_only(path).map_err(|e| format!("{name}: {e}"))?;
    if !force {
        if let Some(what) = existing_contents(&disk).map_err(|e| format!("{name}: {e}"))? {
            return Err(format!("{name} already holds {what}; use --force to overwrite it"));
        }
    }
    Ok((lock, disk))
}

fn make(path: &Path, size: u64, plan: &Plan) -> Result<(), String> {
    let disk = FileDisk::create(path, size).map_err(|e| e.to_string())?;
    let creds = fslab::ufs::Creds {
        uid: rustix::process::geteuid().as_raw(),
        gid: rustix::process::getegid().as_raw(),
    };
    match plan {
        Plan::Lfs(options) => fslab::mkfs_lfs(Arc::new(disk), options, creds),
        Plan::Ffs(options, _, None) => fslab::mkfs_ffs(Arc::new(disk), options, creds),
        Plan::Ffs(options, _, Some(log)) => {
            let log_disk = FileDisk::create(&log.path, log.size)
                .map_err(|e| format!("the log device {}: {e}", log.path.display()))?;
            let recorded = log.path.to_str().ok_or_else(|| {
                format!(
                    "the log device's path {} is not UTF-8, which the superblock keeps",
                    log.path.display()
                )
            })?;
            fslab::mkfs_ffs_with_log(Arc::new(disk), Arc::new(log_disk), recorded, options, creds).map(|_| ())
        }
    }
    .map_err(|e| e.to_string())
}

/// What the device already holds, if anything (see the module comment).
fn existing_contents(disk: &FileDisk) -> io::Result<Option<&'static str>> {
    let magic = |buf: &[u8], at: usize, bytes: &[u8]| buf.get(at..at + bytes.len()) == Some(bytes);
    let len = disk.size().min(fslab::format::foreign::SIGNATURE_BYTES as u64) as usize;
    let mut head = vec![0u8; len];
    disk.read_at(0, &mut head)?;
    if let Some(other) = fslab::format::foreign::other_file_system(&head) {
        return Ok(Some(other));
    }
    if let Some(layout) = Layout::probe(disk) {
        return Ok(Some(match layout {
            Layout::Lfs => "an fslab file system (LFS)",
            Layout::Ffs => "an fslab file system (FFS)",
        }));
    }
    if magic(&head, 0, fslab::ffs::log_device::LOG_DEVICE_MAGIC) {
        return Ok(Some("an fslab journal's log device"));
    }
    if head.iter().take(64 << 10).any(|&b| b != 0) {
        return Ok(Some("data (non-zero bytes in its first 64 KiB)"));
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotdelay_is_milliseconds_or_blocks() {
        assert_eq!(parse_rotdelay("4ms"), Ok(RotDelay::Millis(4)));
        assert_eq!(parse_rotdelay("2"), Ok(RotDelay::Blocks(2)));
        assert_eq!(parse_rotdelay("0"), Ok(RotDelay::Off));
        assert_eq!(parse_rotdelay("0ms"), Ok(RotDelay::Off));
        for bad in ["", "ms", "4s", "-1", "two"] {
            assert!(parse_rotdelay(bad).is_err(), "{bad}");
        }
        let args = FfsArgs { rotdelay: Some("4ms".into()), maxcontig: Some(1), ..FfsArgs::default() };
        let o = args.options(Some(4096)).expect("options");
        assert_eq!((o.block_size, o.fragment_size, o.maxcontig), (4096, 1024, Some(1)));
        assert_eq!(args.given(), ["--maxcontig", "--rotdelay"]);
    }

    #[test]
    fn dirpref_and_its_parameters_reach_the_mkfs_options() {
        let o = FfsArgs::default().options(None).expect("options");
        assert_eq!((o.dirpref, o.avgfilesize, o.avgfpdir), (DirPref::New, 16384, 64));
        let args = FfsArgs {
            dirpref: Some("old".into()),
            avgfilesize: Some(4096),
            avgfpdir: Some(8),
            ..FfsArgs::default()
        };
        let o = args.options(None).expect("options");
        assert_eq!((o.dirpref, o.avgfilesize, o.avgfpdir), (DirPref::Old, 4096, 8));
        assert_eq!(args.given(), ["--dirpref", "--avgfilesize", "--avgfpdir"]);
        let huge = FfsArgs { avgfilesize: Some(1 << 40), ..FfsArgs::default() };
        assert!(huge.options(None).is_err());
    }

    #[test]
    fn realloc_reaches_the_mkfs_options_and_is_an_ffs_option() {
        let default = FfsArgs::default().options(None).expect("options");
        assert_eq!(default.realloc, fslab::ffs::mkfs::DEFAULT_REALLOC);
        for (given, want) in [("on", true), ("off", false)] {
            let args = FfsArgs { realloc: Some(given.into()), ..FfsArgs::default() };
            assert_eq!(args.options(None).expect("options").realloc, want, "--realloc {given}");
            assert_eq!(args.given(), ["--realloc"]);
        }
    }
}
