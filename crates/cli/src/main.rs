//! The `fslab` command: one module per subcommand.
//!
//! * `mkfs` — writes a new file system to an image file or block device.
//! * `mount` — mounts an image through FUSE (in the background unless `-f`);
//!   started as `mount.fslab` or `umount.fuse.fslab`, mount(8)'s helpers.
//! * `dump` — prints the superblock, checkpoint and segment usage.
//! * `fsck` — checks an unmounted image and repairs it (own exit statuses);
//!   `fsck_helper` is the same as `fsck.fslab`, fsck(8)'s checker.
//! * `clean` — runs cleaning passes on an LFS mount from this process,
//!   through the mount's control socket (an FFS mount has no cleaner).
//! * `stat` — prints a mount's counters, of either layout: space, device
//!   work, directory hashes; on LFS the cleaner's report (write cost,
//!   segments cleaned).
//! * `sync` — makes everything written to a mount durable (a checkpoint).
//! * `bench` — the lab: runs the papers' experiments, writes results,
//!   plots and a report (the work is the `fslab-bench` crate's).
//! * `age` — ages a file system (an FFS image in-process, or any mounted
//!   directory) with a seeded stream or a trace (1997 paper §3).
//! * `layout` — the layout score of an FFS image (1997 paper §3.3).
//! * `size` — sizes such as "64M" on the command line.
//! * `out` — output whose write errors end a command with its own status.
//! * `image_lock` — an image in use by one fslab process at a time, and
//!   whether a mount of it is serving or only finishing.
//! * `mount_point` — the fslab mount a path is in, and dead mounts named
//!   as such.
//! * `storage_id` — which storage an image path names (a hard link, a loop
//!   device and the file behind it are one).
//!
//! Every failure is one line on stderr, `fslab: COMMAND: what went wrong`,
//! and a non-zero exit status. No file-system logic lives here.

#[macro_use]
mod out;

mod age;
mod bench;
mod clean;
mod dump;
mod fsck;
mod fsck_helper;
mod image_lock;
mod layout;
mod log_device;
mod mkfs;
mod mount;
mod mount_point;
mod size;
mod stat;
mod storage_id;
mod sync;

use clap::{CommandFactory, Parser, Subcommand};
use std::process::ExitCode;

// Blocks are allocated by the FUSE worker threads and freed by the segment
// writer thread; glibc's per-thread arenas turn that into heap growth and
// trimming on every segment (mprotect and page faults dominated a profile).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc's `mi_option_purge_delay` (the same position in its v2 and v3
/// option lists).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// The purge delay's default in mimalloc v2 and in v3, in milliseconds.
const MI_DEFAULT_PURGE_DELAYS: [std::ffi::c_long; 2] = [10, 1000];

/// How long freed memory is kept before it goes back to the kernel, in
/// milliseconds ([`MI_OPTION_PURGE_DELAY`]).
const PURGE_DELAY_MS: std::ffi::c_long = 100;

/// Keeps freed memory for a tenth of a second before returning it to the
/// kernel. Block buffers are freed and allocated again at a steady rate,
/// and handing their pages back at once (mimalloc v2's 10 ms) made the
/// kernel zero fresh pages for every segment; never handing them back
/// (the setting this replaces) kept whatever every worker thread's heap
/// had once held: creating 200,000 small files left 122 MiB resident where
/// the file system's structures held 43 MiB, against 87 MiB at 100 ms, and
/// 1 GiB sequential writes ran as fast with either.
fn keep_freed_memory() {
    // SAFETY: reading and setting an allocator option has no memory effects;
    // a known default confirms the position names the purge delay.
    // The mimalloc crate wraps no option calls: only its C bindings have them.
    unsafe {
        if MI_DEFAULT_PURGE_DELAYS.contains(&libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY)) {
            libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, PURGE_DELAY_MS);
        }
    }
}

/// Turns transparent huge pages off for this process and its children.
/// The allocator asks for them (`MADV_HUGEPAGE`), and where the kernel
/// compacts memory for such a fault (the common `defrag=madvise` setting)
/// every 2 MiB the daemon grew into stalled it: creating 10,000 small files
/// ran a quarter faster without them, and sequential writes lost nothing.
/// Failing is harmless (an old kernel): the pages stay as they were.
fn no_huge_pages() {
    // The flag belongs to the process and its children, whatever the name.
    let _ = rustix::thread::disable_transparent_huge_pages(true);
}

/// The 4.4BSD log-structured file system, in user space.
#[derive(Parser)]
#[command(name = "fslab", version, about, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Make a new file system on an image file or block device.
    #[command(after_help = mkfs::EXAMPLES)]
    Mkfs(mkfs::MkfsArgs),
    /// Mount a file system on a directory (through FUSE).
    #[command(after_help = mount::EXAMPLES)]
    Mount(mount::MountArgs),
    /// Print the superblock, latest checkpoint and segment usage of an image.
    #[command(after_help = dump::EXAMPLES)]
    Dump(dump::DumpArgs),
    /// Check an unmounted image (LFS or FFS); with --repair, repair what can be repaired.
    #[command(after_help = fsck::EXAMPLES)]
    Fsck(fsck::FsckArgs),
    /// Clean segments of a mounted LFS from this process (FFS has no cleaner).
    #[command(after_help = clean::EXAMPLES)]
    Clean(clean::CleanArgs),
    /// Print a mounted file system's counters: space, device work, directory hashes,
    /// and on LFS the cleaner's report (write cost, segments cleaned).
    #[command(after_help = stat::EXAMPLES)]
    Stat(stat::StatArgs),
    /// Make everything written to a mounted file system durable now (a checkpoint);
    /// sync(1) does not reach FUSE file systems.
    #[command(after_help = sync::EXAMPLES)]
    Sync(sync::SyncArgs),
    /// Age a file system: a seeded stream of creates, writes, overwrites and deletes over
    /// simulated days, with utilisation each day, and on an FFS image the layout score and
    /// free-space fragmentation, on an LFS image the cleaner's work (1997 paper §3).
    #[command(after_help = age::EXAMPLES)]
    Age(age::AgeArgs),
    /// Print the layout score of an FFS image: how much of each file lies in one run (1997 paper §3.3).
    #[command(after_help = layout::EXAMPLES)]
    Layout(layout::LayoutArgs),
    /// Run the papers' experiments on simulated disks or mounted directories; write a report.
    #[command(after_help = bench::EXAMPLES)]
    Bench(bench::BenchArgs),
}

fn main() -> ExitCode {
    keep_freed_memory();
    no_huge_pages();
    // A bug shows as one line too, not a backtrace (RUST_BACKTRACE still works).
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if std::env::var_os("RUST_BACKTRACE").is_some() {
            default_hook(info);
            return;
        }
        let location = info.location().map(|l| format!(" at {}:{}", l.file(), l.line())).unwrap_or_default();
        say!("fslab: internal error: {}{location}", panic_message(info.payload()));
    }));

    // Installed as mount(8)'s and fsck(8)'s helpers, the binary answers to
    // their names.
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if let Some(helper) = args.first().and_then(|argv0| mount::helper::by_program_name(argv0)) {
        return mount::helper::main(helper, &args[1..]);
    }
    if args.first().is_some_and(|argv0| fsck_helper::is_program_name(argv0)) {
        return fsck_helper::main(&args[1..]);
    }

    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // fsck's statuses are e2fsck's, where 2 means "errors
            // corrected, reboot" and a usage error is 16.
            let fsck = args.get(1).is_some_and(|a| a == "fsck");
            return usage_error(e, if fsck { 16 } else { 2 });
        }
    };
    let (name, result) = match cli.command {
        Command::Mkfs(args) => ("mkfs", mkfs::run(&args)),
        Command::Mount(args) => ("mount", mount::run(&args)),
        Command::Dump(args) => ("dump", dump::run(&args)),
        Command::Fsck(args) => return fsck::run(&args),
        Command::Clean(args) => ("clean", clean::run(&args)),
        Command::Stat(args) => ("stat", stat::run(&args)),
        Command::Sync(args) => ("sync", sync::run(&args)),
        Command::Bench(args) => ("bench", bench::run(&args)),
        Command::Age(args) => ("age", age::run(&args)),
        Command::Layout(args) => ("layout", layout::run(&args)),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            say!("fslab: {name}: {message}");
            ExitCode::FAILURE
        }
    }
}

/// Help and version go to stdout with status 0; a usage error is one line
/// on stderr (clap's own message, without its usage block) and `status`.
fn usage_error(e: clap::Error, status: u8) -> ExitCode {
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => match e.print() {
            Ok(()) => ExitCode::SUCCESS,
            Err(why) => {
                say!("fslab: cannot write to standard output: {why}");
                ExitCode::FAILURE
            }
        },
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand | ErrorKind::MissingSubcommand => {
            let commands: Vec<String> = Cli::command()
                .get_subcommands()
                .map(|c| c.get_name().to_string())
                .filter(|n| n != "help")
                .collect();
            say!("fslab: missing command ({}); try 'fslab --help'", commands.join(", "));
            ExitCode::from(status)
        }
        _ => {
            // clap's message is its first paragraph; the usage block follows.
            let text = e.render().to_string();
            let message: Vec<&str> = text
                .lines()
                .map(str::trim)
                .skip_while(|l| l.is_empty())
                .take_while(|l| !l.is_empty() && !l.starts_with("Usage:"))
                .collect();
            let message = message.join(" ");
            let message = message.strip_prefix("error: ").unwrap_or(&message);
            say!("fslab: {message}; try 'fslab --help'");
            ExitCode::from(status)
        }
    }
}

/// The text a panic was raised with.
fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every command's --help ends with examples of itself; mount's lists
    /// its -o options one to a line.
    #[test]
    fn every_help_has_examples_and_mount_lists_its_options() {
        let mut cli = Cli::command();
        for command in cli.get_subcommands_mut().filter(|c| c.get_name() != "help") {
            let name = command.get_name().to_string();
            let help = command.render_long_help().to_string();
            assert!(help.contains("Examples:"), "{name}: {help}");
            assert!(help.contains(&format!("fslab {name} ")), "{name}: {help}");
            if name == "mount" {
                for option in [
                    "cache=SIZE",
                    "cleaner=POLICY|off",
                    "integrity=sync|async|softdep",
                    "log=FILE",
                    "dirhash_check",
                ] {
                    assert!(help.lines().any(|l| l.trim_start().starts_with(option)), "{option}: {help}");
                }
            }
        }
    }
}
