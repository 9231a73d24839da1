//! The `fslab` binary as mount(8)'s helpers, installed as links named
//! `/sbin/mount.fslab`, `/sbin/mount.fuse.fslab` and
//! `/sbin/umount.fuse.fslab` (`scripts/install`).
//!
//! `mount -t fslab IMAGE DIR -o OPTIONS`, or an `/etc/fstab` line of type
//! `fslab`, makes mount(8) run `mount.fslab IMAGE DIR [-sfnv] [-o OPTIONS]`
//! (type `fuse.fslab`: `mount.fuse.fslab`, found before `mount.fuse`).
//! `-f` here is mount's *fake* (check everything, mount nothing), `-s`
//! *sloppy* (unknown options are warnings), `-n` and `-v` as mount's. The
//! mount is a background `fslab mount`: it returns once the mount is
//! usable.
//!
//! Every fslab mount has the type `fuse.fslab`, so `umount DIR` (as root)
//! runs `umount.fuse.fslab DIR [-flnrv]`. The kernel ends the FUSE session
//! at once, but the daemon writes its final checkpoint afterwards; the
//! helper waits for that (the image's lock, released after the checkpoint)
//! before it returns, so that after `umount` the image is complete and
//! free, as after unmounting any other file system. A mount whose source
//! is not its image (a name with a comma shows as `fslab`) is waited for
//! through its serving process instead, found before the unmount by its
//! control socket. With `-l` (lazy) the checkpoint comes after the last
//! open file is closed, and the helper does not wait.
//!
//! Exit statuses follow mount(8): 0 done, 1 wrong usage, 32 failed.

use super::options;
use rustix::mount::UnmountFlags;
use rustix::process::Pid;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The FUSE file system a mount shows, as the kernel knows it, noted
/// before the mount is unmounted: its device number, the inode of its
/// connection's directory (`/sys/fs/fuse/connections/N`, where that is
/// mounted) and its source. A device number is reused as soon as it is
/// free, so the inode (new for each connection) tells this file system's
/// connection from a later mount's.
struct KernelMount {
    device: (u32, u32),
    connection: Option<u64>,
    source: String,
}

impl KernelMount {
    /// The mount in effect on `dir` in the mount table `mountinfo`.
    fn of(mountinfo: &str, dir: &Path) -> Option<KernelMount> {
        let entries = fslab_fuse::mountinfo::parse(mountinfo);
        let entry = fslab_fuse::mountinfo::topmost(&entries, dir)?;
        let connection = connection_dir(entry.device).and_then(|d| std::fs::metadata(d).ok()).map(|m| {
            use std::os::unix::fs::MetadataExt;
            m.ino()
        });
        Some(KernelMount { device: entry.device, connection, source: entry.source.clone() })
    }

    /// Whether the file system is still mounted, just after one of its
    /// mounts was unmounted: the kernel keeps its connection until the
    /// last mount goes, wherever it is. Without the connections' directory,
    /// a mount of the same device and source in this namespace's table.
    fn still_mounted(&self) -> bool {
        use std::os::unix::fs::MetadataExt;
        if let Some(inode) = self.connection {
            let now = connection_dir(self.device).and_then(|d| std::fs::metadata(d).ok());
            return now.is_some_and(|m| m.ino() == inode);
        }
        fslab_fuse::mountinfo::read().is_ok_and(|entries| {
            entries.iter().any(|e| {
                e.device == self.device
                    && e.source == self.source
                    && fslab_fuse::is_fslab_mount(&e.kind, &e.source)
            })
        })
    }
}

/// The directory of the FUSE connection of device `(major, minor)`, if the
/// connections' file system is mounted: the kernel names it by the device
/// number, which for FUSE's anonymous devices (major 0) is the minor.
fn connection_dir((major, minor): (u32, u32)) -> Option<PathBuf> {
    let dir = Path::new("/sys/fs/fuse/connections").join(minor.to_string());
    (major == 0 && dir.exists()).then_some(dir)
}

/// Wrong usage (mount(8)'s status 1).
const USAGE: u8 = 1;
/// The mount or unmount failed (mount(8)'s status 32).
const FAILED: u8 = 32;

/// Which helper the binary was started as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Helper {
    /// `mount.fslab`, `mount.fuse.fslab`.
    Mount,
    /// `umount.fslab`, `umount.fuse.fslab`.
    Umount,
}

/// The helper a program name (`argv[0]`) asks for, if any.
pub fn by_program_name(argv0: &OsStr) -> Option<Helper> {
    match Path::new(argv0).file_name()?.to_str()? {
        "mount.fslab" | "mount.fuse.fslab" => Some(Helper::Mount),
        "umount.fslab" | "umount.fuse.fslab" => Some(Helper::Umount),
        _ => None,
    }
}

/// What a helper's command line says.
#[derive(Debug, Default, PartialEq)]
struct HelperArgs {
    /// SPEC and DIR for mount, DIR for umount.
    positional: Vec<PathBuf>,
    options: Vec<String>,
    /// The single-letter flags given (`s`, `f`, `n`, `v`, `l`, `r`).
    flags: String,
    kind: Option<String>,
}

/// Parses `args` (after the program name) as mount(8) passes them:
/// positionals, flags from `flags` (alone or grouped), and `-o X`, `-t X`,
/// `-N X` (or `-oX`). `-N` (another mount namespace) is refused.
fn parse(args: &[OsString], flags: &str) -> Result<HelperArgs, String> {
    let mut parsed = HelperArgs::default();
    let mut i = 0;
    let mut only_positional = false;
    while i < args.len() {
        let arg = args[i].to_string_lossy().into_owned();
        i += 1;
        if only_positional || !arg.starts_with('-') || arg == "-" {
            parsed.positional.push(PathBuf::from(&args[i - 1]));
            continue;
        }
        if arg == "--" {
            only_positional = true;
            continue;
        }
        let mut letters = arg[1..].chars();
        while let Some(letter) = letters.next() {
            match letter {
                'o' | 't' | 'N' => {
                    let rest: String = letters.by_ref().collect();
                    let value = if rest.is_empty() {
                        i += 1;
                        args.get(i - 1).map(|v| v.to_string_lossy().into_owned())
                    } else {
                        Some(rest)
                    };
                    let value = value.ok_or_else(|| format!("option -{letter} needs a value"))?;
                    match letter {
                        'o' => parsed.options.push(value),
                        't' => parsed.kind = Some(value),
                        _ => return Err("mounting in another namespace (-N) is not supported".to_string()),
                    }
                }
                l if flags.contains(l) => parsed.flags.push(l),
                l => return Err(format!("unknown option -{l}")),
            }
        }
    }
    if let Some(kind) = &parsed.kind {
        if kind != "fslab" && kind != "fuse.fslab" {
            return Err(format!("this helper mounts type fslab, not {kind}"));
        }
    }
    Ok(parsed)
}

/// Runs `helper` with `args` (after the program name).
pub fn main(helper: Helper, args: &[OsString]) -> ExitCode {
    let (name, result) = match helper {
        Helper::Mount => ("mount", mount(args)),
        Helper::Umount => ("umount", umount(args)),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err((status, message)) => {
            say!("fslab: {name}: {message}");
            ExitCode::from(status)
        }
    }
}

fn mount(args: &[OsString]) -> Result<(), (u8, String)> {
    let usage = |e: String| (USAGE, e);
    let parsed = parse(args, "sfnvh").map_err(usage)?;
    if parsed.flags.contains('h') {
        outln!("usage: mount.fslab IMAGE DIR [-sfnv] [-o OPTIONS]   (run by mount -t fslab)")
            .map_err(|e| (FAILED, e))?;
        return Ok(());
    }
    let [image, dir] = parsed.positional.as_slice() else {
        return Err(usage("usage: mount.fslab IMAGE DIR [-sfnv] [-o OPTIONS]".to_string()));
    };
    // mount(8) keeps `dev` and `suid` to itself: they come back first, so
    // that what it did pass on (an explicit `nodev`) still wins.
    let kept = super::kept_flags::recover(image, dir);
    let given: Vec<String> =
        std::iter::once(kept).filter(|k| !k.is_empty()).chain(parsed.options.clone()).collect();
    // mount(8) itself calls a bad option a failed mount (32), not wrong usage.
    let (opts, warnings) = options::parse(&given, parsed.flags.contains('s')).map_err(|e| (FAILED, e))?;
    for warning in warnings {
        say!("fslab: mount: {warning}");
    }
    if parsed.flags.contains('f') {
        // Fake: everything but the mount itself.
        image.canonicalize().map_err(|e| (FAILED, format!("{}: {e}", image.display())))?;
        if !dir.is_dir() {
            return Err((FAILED, format!("mount point {} is not a directory", dir.display())));
        }
        return Ok(());
    }
    if parsed.flags.contains('v') {
        outln!("fslab: mounting {} on {}", image.display(), dir.display()).map_err(|e| (FAILED, e))?;
    }
    super::start(image, dir, &opts, false).map_err(|e| (FAILED, e))
}

fn umount(args: &[OsString]) -> Result<(), (u8, String)> {
    let parsed = parse(args, "flnrvh").map_err(|e| (USAGE, e))?;
    if parsed.flags.contains('h') {
        outln!("usage: umount.fuse.fslab DIR [-flnrv]   (run by umount)").map_err(|e| (FAILED, e))?;
        return Ok(());
    }
    let [dir] = parsed.positional.as_slice() else {
        return Err((USAGE, "usage: umount.fuse.fslab DIR [-flnrv]".to_string()));
    };
    // A mount whose daemon died cannot be canonicalized (ENOTCONN): the
    // path as given is what the mount table shows, if it is absolute.
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.clone());
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo")
        .map_err(|e| (FAILED, format!("cannot read /proc/self/mountinfo: {e}")))?;
    let source = crate::sync::fslab_source(&mountinfo, &dir)
        .ok_or_else(|| (FAILED, format!("{}: not the mount point of an fslab file system", dir.display())))?;
    let lazy = parsed.flags.contains('l');
    let mounted = KernelMount::of(&mountinfo, &dir);
    let image = PathBuf::from(&source);
    let named = image.is_absolute() && image.exists();
    // A mount that does not show its image (a name with a comma) is waited
    // for through its server, found while it still serves.
    let server = if named || lazy { None } else { serving_process(&dir) };
    // What an earlier mount on this directory left is not this one's.
    let _ = super::take_unmount_failure(&dir);
    unmount(&dir, lazy, parsed.flags.contains('f'))
        .map_err(|e| (FAILED, format!("{}: {e}", dir.display())))?;
    if lazy {
        return Ok(());
    }
    if mounted.is_some_and(|m| m.still_mounted()) {
        // As a kernel file system's umount: this mount point is gone, and
        // the file system lives on where it is still mounted (its daemon
        // goes on serving and holding the image, so a wait for the image
        // would never end).
        say!(
            "fslab: umount: {} unmounted; {} is still mounted elsewhere (a bind mount, or another mount \
             namespace): its final checkpoint comes when that goes",
            dir.display(),
            image.display()
        );
        return Ok(());
    }
    if named {
        crate::image_lock::wait_released(&image)
            .map_err(|e| (FAILED, format!("{}: {e}", image.display())))?;
    } else if let Some(pid) = server {
        wait_for_exit(pid);
    } else {
        say!(
            "fslab: umount: {}: neither the mount nor a server names its image; not waiting for its final checkpoint",
            dir.display()
        );
        return Ok(());
    }
    if let Some(why) = super::take_unmount_failure(&dir) {
        return Err((
            FAILED,
            format!("{}: unmounted, but the file system's end failed: {why}", dir.display()),
        ));
    }
    if parsed.flags.contains('v') {
        outln!("fslab: {} unmounted; final checkpoint of {} written", dir.display(), image.display())
            .map_err(|e| (FAILED, e))?;
    }
    Ok(())
}

/// The process serving the fslab mount on `dir` (canonical): the peer of
/// its control socket (`SO_PEERCRED`), which the serving process made.
fn serving_process(dir: &Path) -> Option<Pid> {
    let path = fslab_control::socket_path_candidates(dir).into_iter().find(|p| p.exists())?;
    let stream = std::os::unix::net::UnixStream::connect(path).ok()?;
    // nix, not rustix: a peer in another PID namespace shows as pid 0,
    // which rustix's `UCred` (a non-zero `Pid`) cannot hold.
    let credentials =
        nix::sys::socket::getsockopt(&stream, nix::sys::socket::sockopt::PeerCredentials).ok()?;
    Pid::from_raw(credentials.pid()).filter(|_| credentials.pid() > 0)
}

/// Waits until process `pid` has exited (its final checkpoint written),
/// saying so after a second.
fn wait_for_exit(pid: Pid) {
    let started = std::time::Instant::now();
    let mut told = false;
    while rustix::process::test_kill_process(pid).is_ok() && !is_zombie(pid) {
        if !told && started.elapsed() >= std::time::Duration::from_secs(1) {
            say!("fslab: umount: waiting for the final checkpoint (process {pid})");
            told = true;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// Whether `pid` has exited and waits only to be reaped by its parent.
fn is_zombie(pid: Pid) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit_once(')').map(|(_, rest)| rest.trim_start().starts_with('Z')))
        .unwrap_or(true)
}

/// Unmounts `dir`: as root directly, otherwise through fusermount3.
fn unmount(dir: &Path, lazy: bool, force: bool) -> Result<(), String> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(dir.as_os_str().as_bytes()).map_err(|_| "path holds a NUL byte")?;
    let mut flags = UnmountFlags::empty();
    if lazy {
        flags |= UnmountFlags::DETACH;
    }
    if force {
        flags |= UnmountFlags::FORCE;
    }
    let Err(e) = rustix::mount::unmount(path.as_c_str(), flags) else { return Ok(()) };
    let e = std::io::Error::from(e);
    match e.raw_os_error() {
        Some(libc::EBUSY) => Err("target is busy (files are open on it; -l unmounts lazily)".to_string()),
        Some(libc::EPERM) => {
            let mut command = std::process::Command::new("fusermount3");
            command.arg("-u");
            if lazy {
                command.arg("-z");
            }
            let status = command.arg("--").arg(dir).status().map_err(|e| format!("fusermount3: {e}"))?;
            if status.success() {
                Ok(())
            } else {
                Err("fusermount3 -u failed".to_string())
            }
        }
        _ => Err(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(words: &[&str]) -> Vec<OsString> {
        words.iter().map(OsString::from).collect()
    }

    #[test]
    fn the_program_name_picks_the_helper() {
        assert_eq!(by_program_name(OsStr::new("/sbin/mount.fslab")), Some(Helper::Mount));
        assert_eq!(by_program_name(OsStr::new("mount.fuse.fslab")), Some(Helper::Mount));
        assert_eq!(by_program_name(OsStr::new("/usr/sbin/umount.fuse.fslab")), Some(Helper::Umount));
        assert_eq!(by_program_name(OsStr::new("/usr/local/bin/fslab")), None);
        assert_eq!(by_program_name(OsStr::new("mount.fslabx")), None);
    }

    #[test]
    fn mount_passes_spec_dir_flags_and_options_in_any_order() {
        let parsed =
            parse(&args(&["/img", "/mnt", "-sv", "-o", "rw,cleaner=greedy", "-n"]), "sfnv").expect("ok");
        assert_eq!(parsed.positional, [PathBuf::from("/img"), PathBuf::from("/mnt")]);
        assert_eq!(parsed.options, ["rw,cleaner=greedy"]);
        assert_eq!(parsed.flags, "svn");
        let parsed = parse(&args(&["-orw", "-t", "fuse.fslab", "/img", "/mnt"]), "sfnv").expect("ok");
        assert_eq!(
            (parsed.options.as_slice(), parsed.kind.as_deref()),
            (["rw".to_string()].as_slice(), Some("fuse.fslab"))
        );
    }

    #[test]
    fn wrong_usage_is_refused() {
        assert!(parse(&args(&["/img", "/mnt", "-x"]), "sfnv").is_err(), "unknown flag");
        assert!(parse(&args(&["/img", "/mnt", "-o"]), "sfnv").is_err(), "-o without a value");
        assert!(parse(&args(&["/img", "/mnt", "-t", "ext4"]), "sfnv").is_err(), "another type");
        let e = parse(&args(&["/img", "/mnt", "-N", "/proc/1/ns/mnt"]), "sfnv").expect_err("-N");
        assert!(e.contains("namespace"), "{e}");
    }
}
