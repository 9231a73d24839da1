//! `fslab fsck IMAGE [--repair] [-n] [-v]`: check an unmounted image of
//! either layout (LFS or FFS, told by the superblock's magic) and, with
//! `--repair`, repair what can be repaired safely (the `fslab-check` crate
//! does the work). On FFS a repair marks the image clean, so that it
//! mounts again, only when it ends clean.
//!
//! Without `--repair` the image is opened read-only. Refuses an image
//! another fslab process holds (a mount). Problems and repairs go to stdout,
//! one per line; progress goes to stderr every few seconds when stderr is a
//! terminal or with `--verbose`. Exit status as e2fsck: 0 clean, 1 errors
//! corrected, 4 errors left uncorrected, 8 operational error.

use crate::log_device;
use clap::Args;
use disk::FileDisk;
use fslab_check::{fsck, Layout, Options, Outcome};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

/// Exit status when fsck could not run (e2fsck's "operational error").
pub(crate) const OPERATIONAL_ERROR: u8 = 8;

/// Examples in `fslab fsck --help`.
pub const EXAMPLES: &str = "Examples:
  fslab fsck fs.img                               check; change nothing (status 0 when clean)
  fslab fsck --repair fs.img                      repair what can be repaired (status 1 when it did)
  fsck -t fslab fs.img                            the same through fsck(8) (fsck.fslab installed)";

/// Arguments of `fslab fsck`.
#[derive(Args)]
pub struct FsckArgs {
    /// The image file or block device to check (not mounted).
    image: PathBuf,
    /// Repair what can be repaired (without it, fsck only reports).
    #[arg(long, conflicts_with = "no_change")]
    repair: bool,
    /// Change nothing: open the image read-only and only report (the
    /// default; kept for e2fsck habits).
    #[arg(short = 'n', id = "no_change")]
    no_change: bool,
    /// Show the checkpoint checked, counts, and progress on stderr.
    #[arg(short = 'v', long)]
    verbose: bool,
    /// FFS: the journal's log device, if not at the path mkfs recorded.
    #[arg(long)]
    journal_device: Option<PathBuf>,
}

/// Runs fsck and returns its exit status; a failure to run is one line on
/// stderr and status 8.
pub fn run(args: &FsckArgs) -> ExitCode {
    match check(args) {
        Ok(code) => ExitCode::from(code),
        Err(message) => {
            say!("fslab: fsck: {message}");
            ExitCode::from(OPERATIONAL_ERROR)
        }
    }
}

fn check(args: &FsckArgs) -> Result<u8, String> {
    let how = How { repair: args.repair, verbose: args.verbose, preen: false };
    check_image(&args.image, args.journal_device.as_deref(), how)
}

/// How to run a check: repairing or not, and how much to say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct How {
    /// Repair what can be repaired (otherwise the image is opened read-only).
    pub(crate) repair: bool,
    /// Say what was checked, with counts and progress.
    pub(crate) verbose: bool,
    /// Preen (`fsck -p`): say nothing unless problems are left.
    pub(crate) preen: bool,
}

/// Checks (and repairs) `image`, printing what `how` asks for; returns the
/// exit status (e2fsck's 0, 1 or 4), or why it could not run (status 8).
pub(crate) fn check_image(image: &Path, journal_device: Option<&Path>, how: How) -> Result<u8, String> {
    let name = image.display().to_string();
    let _lock = crate::image_lock::lock(image).map_err(|e| format!("{name}: {e}"))?;
    let disk = if how.repair { FileDisk::open(image) } else { FileDisk::open_read_only(image) }
        .map_err(|e| format!("{name}: {e}"))?;
    let access = if how.repair { log_device::Access::Write } else { log_device::Access::ReadOnly };
    let (dev, _log_lock) = log_device::attach(image, Arc::new(disk), journal_device, access)?;
    let show_progress = how.verbose || (!how.preen && std::io::stderr().is_terminal());
    let mut progress = |line: &str| {
        if show_progress {
            say!("fslab: fsck: {name}: {line}");
        }
    };
    let options = Options { repair: how.repair, preen: how.preen, ..Options::default() };
    let outcome = fsck(dev, &options, &mut progress).map_err(|e| format!("{name}: {e}"))?;
    if !how.preen || outcome.exit_code() > 1 {
        print_outcome(&name, &outcome, how.verbose)?;
    }
    Ok(outcome.exit_code())
}

fn print_outcome(name: &str, outcome: &Outcome, verbose: bool) -> Result<(), String> {
    let first = &outcome.first;
    if verbose {
        let how = if first.clean_unmount { "unmounted cleanly" } else { "not unmounted cleanly" };
        match first.layout {
            Layout::Lfs => outln!("{name}: LFS, checkpoint {} ({how})", first.checkpoint_serial)?,
            Layout::Ffs => outln!("{name}: FFS ({how})")?,
        }
    }
    for p in &first.problems {
        outln!("{p}")?;
    }
    if first.omitted > 0 {
        outln!("... and {} more", crate::out::count(first.omitted, "problem", "problems"))?;
    }
    if !first.pending_reclaim.is_empty() {
        outln!(
            "pending reclaim: {} unlinked while open (inodes {:?}) on the orphan list; \
             the next mount frees them, as does --repair (not damage)",
            crate::out::count(first.pending_reclaim.len() as u64, "file", "files"),
            first.pending_reclaim
        )?;
    }
    for r in &outcome.repaired {
        outln!("repaired: {}", r.message)?;
    }
    for f in &outcome.failed {
        outln!("repair failed: {f}")?;
    }
    let last = &outcome.last;
    let c = last.counts;
    match outcome.exit_code() {
        0 => outln!(
            "{name}: clean: {}, {}, {}, {}",
            crate::out::count(c.inodes, "inode", "inodes"),
            crate::out::count(c.blocks, "block", "blocks"),
            crate::out::count(c.directories, "directory", "directories"),
            crate::out::count(c.entries, "entry", "entries")
        )?,
        1 => outln!(
            "{name}: {} found and corrected; now clean",
            crate::out::count(first.problems.len() as u64 + first.omitted, "problem", "problems")
        )?,
        _ => {
            if !std::ptr::eq(first, last) && !outcome.repaired.is_empty() {
                for p in &last.problems {
                    outln!("left: {p}")?;
                }
            }
            outln!(
                "{name}: {} left uncorrected{}",
                crate::out::count(last.problems.len() as u64 + last.omitted, "problem", "problems"),
                if outcome.first.problems.is_empty() || outcome.repaired.is_empty() {
                    ""
                } else {
                    " after repair"
                }
            )?;
        }
    }
    Ok(())
}
