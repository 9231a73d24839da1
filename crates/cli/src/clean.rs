//! `fslab clean DIR [--policy P] [--passes N | --until-high-water]`: a
//! cleaner in its own process, as the 1993 paper's cleaner is (§3.5). It
//! reaches the mount through its control socket (`fslab_control`)
//! and runs the same passes as the mount's own cleaner, which keeps running
//! meanwhile: several cleaners at once are safe, because the mechanism
//! re-checks every block it is asked to move. An FFS mount has no cleaner,
//! and the command says so before any pass.

use crate::out::count;
use clap::Args;
use fslab_cleaner::{policy, Cleaner, Mechanism};
use fslab_control::{Client, LayoutReport, FFS_HAS_NO_CLEANER};
use std::path::{Path, PathBuf};

/// Examples in `fslab clean --help`.
pub const EXAMPLES: &str = "Examples:
  fslab clean /mnt                                clean to the high-water mark
  fslab clean /mnt --passes 3 --policy greedy     exactly three greedy passes";

/// Arguments of `fslab clean`.
#[derive(Args)]
pub struct CleanArgs {
    /// The directory an fslab LFS is mounted on, or any path inside it.
    dir: PathBuf,
    /// The cleaning policy: greedy, cost-benefit or hot-cold.
    #[arg(long, value_name = "POLICY", default_value = policy::DEFAULT)]
    policy: String,
    /// Run exactly N passes (each may clean nothing).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    passes: Option<u64>,
    /// Clean until the clean segments reach the high-water mark, or a pass
    /// finds nothing worth cleaning (the default).
    #[arg(long, conflicts_with = "passes")]
    until_high_water: bool,
}

/// Connects to the control socket of the mount on `dir`, with errors a
/// user can act on.
/// `dir` may be any path inside the mount; the returned path is the
/// mount's root.
pub fn connect(dir: &Path) -> Result<(Client, PathBuf), String> {
    let name = dir.display();
    let root = crate::mount_point::fslab_root(dir)?;
    match Client::connect(&root) {
        Ok(client) => Ok((client, root)),
        // A socket we may not reach (another user's mount) would otherwise
        // hide that the directory is no mount at all.
        Err(e) if e.errno() == libc::ENOENT || !is_fuse(&root) => {
            Err(format!("{name} is not an fslab mount (no control socket serves it)"))
        }
        Err(e) => Err(format!("{name}: {e}")),
    }
}

/// Whether `dir` is the root of a FUSE mount (true when unknown).
fn is_fuse(dir: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    /// `FUSE_SUPER_MAGIC` of linux/magic.h.
    const FUSE_SUPER_MAGIC: u64 = 0x6573_5546;
    let Ok(path) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else { return true };
    let Ok(st) = rustix::fs::statfs(path.as_c_str()) else { return true };
    st.f_type as u64 == FUSE_SUPER_MAGIC
}

/// Runs the passes, one line each, then a summary.
pub fn run(args: &CleanArgs) -> Result<(), String> {
    let Some(chosen) = policy::by_name(&args.policy) else {
        return Err(format!("unknown policy '{}' (use {})", args.policy, policy::NAMES.join(", ")));
    };
    let (mut client, _) = connect(&args.dir)?;
    let mut cleaner = Cleaner::new(chosen);
    let name = args.dir.display();
    let failed = |e: fslab::Error| format!("{name}: {e}");
    // A mount older than the mount request answers EOPNOTSUPP: it is an
    // LFS mount (no other layout served a socket then).
    match client.mount_report() {
        Ok(mount) if matches!(mount.layout, LayoutReport::Ffs { .. }) => {
            return Err(format!("{name}: {FFS_HAS_NO_CLEANER}"));
        }
        Ok(_) => {}
        Err(e) if e.errno() == libc::EOPNOTSUPP => {}
        Err(e) => return Err(failed(e)),
    }
    let (mut passes, mut segments, mut moved) = (0u64, 0usize, 0u64);
    // The loop of `Cleaner::clean_to_high_water`, one pass at a time so
    // that each can be reported. The table is fetched once a pass: it
    // lists every segment, and it crosses the socket.
    let mut table = client.segment_table().map_err(failed)?;
    loop {
        match args.passes {
            Some(n) if passes >= n => break,
            Some(_) => {}
            None if table.clean_segments >= table.high_water => break,
            None => {}
        }
        let pass = cleaner.pass(&mut client).map_err(failed)?;
        passes += 1;
        segments += pass.cleaned.len();
        moved += pass.moved;
        outln!(
            "pass {passes}: cleaned {}, moved {} (read {})",
            count(pass.cleaned.len() as u64, "segment", "segments"),
            count(pass.moved, "block", "blocks"),
            count(pass.segments_read, "segment", "segments")
        )?;
        for seg in &pass.unreadable {
            say!(
                "fslab: clean: segment {seg} holds a block that cannot be read; it is left uncleaned \
                 (run fslab fsck on the unmounted image)"
            );
        }
        // Without a count, stop where `Cleaner::clean_to_high_water` does:
        // at a pass that cleaned nothing, or that left no more clean
        // segments than it found (on a disk nearly full of live data each
        // pass takes about what it frees, and the passes would go on for
        // ever).
        let before = table.clean_segments;
        table = client.segment_table().map_err(failed)?;
        if args.passes.is_none() && (pass.cleaned.is_empty() || table.clean_segments <= before) {
            break;
        }
    }
    outln!(
        "{}: cleaned {} and moved {} in {passes} pass{} ({}); clean segments now {} (high-water {})",
        name,
        count(segments as u64, "segment", "segments"),
        count(moved, "block", "blocks"),
        if passes == 1 { "" } else { "es" },
        cleaner.policy_name(),
        table.clean_segments,
        table.high_water
    )?;
    // Cleaning was wanted and nothing could be cleaned: say why. Below the
    // low-water mark, where writers need the cleaner, that is a failure
    // unless a count of passes was asked for and ran. Between the marks
    // it is an ordinary end: another cleaner (the mount's own) may have
    // just taken what was worth cleaning.
    if segments == 0 && table.clean_segments < table.high_water {
        let why = format!("{name}: {}", why_no_progress(&table));
        if args.passes.is_none() && table.clean_segments < table.low_water {
            return Err(why);
        }
        say!("fslab: clean: {why}");
    }
    Ok(())
}

/// Why passes that were wanted (clean segments below the high-water mark)
/// cleaned nothing, in words a user can act on.
fn why_no_progress(table: &fslab::lfs::clean::SegmentTable) -> String {
    let bs = u64::from(table.block_size);
    let capacity: u64 = table.segments.iter().map(|s| s.usable_blocks * bs).sum();
    let live: u64 = table.segments.iter().map(|s| s.live_bytes).sum();
    let percent = (live * 100).checked_div(capacity).unwrap_or(100);
    if table.budget_blocks == 0 {
        format!(
            "could not clean: no room to move live data ({}, reserve {}); \
             delete files and run `fslab sync` on the mount, which makes the space they held clean",
            count(table.clean_segments, "clean segment", "clean segments"),
            table.reserve_segments
        )
    } else {
        format!(
            "could not clean: no segment is worth cleaning ({percent}% of the log is live data, \
             {}); delete files to make room",
            count(table.clean_segments, "clean segment", "clean segments")
        )
    }
}
