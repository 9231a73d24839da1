//! Where a background mount's messages go once nobody reads its standard
//! error (a cleaner that stopped, a periodic checkpoint that failed, damage
//! met while serving), in this order of preference:
//!
//! 1. the file `-o log=FILE` names;
//! 2. the system log, as `fslab` (`journalctl -t fslab`), when one listens
//!    on `/dev/log` (journald and every syslog daemon do);
//! 3. otherwise — a minimal container has no system log, and syslog(3)
//!    drops what it cannot deliver — a file of the mount's own:
//!    `/var/log/fslab/NAME.log` for root, `$XDG_STATE_HOME/fslab/NAME.log`
//!    (`~/.local/state/fslab/`) for a user, `$TMPDIR/fslab-UID/NAME.log` if
//!    neither can be made; NAME is the mount point as systemd names mount
//!    units (`/mnt/data` → `mnt-data`). The mount says which at mount time.
//!
//! Either way standard error becomes a pipe that a thread reads line by
//! line; a file gets each line with the time and the process id.

use nix::syslog::{Facility, LogFlags, Severity};
use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// Where messages go.
pub(super) enum Sink {
    Syslog,
    File(File),
}

/// The file `-o log=FILE` names, opened for appending.
pub(super) fn named(path: &Path) -> Result<Sink, String> {
    open_log(path).map(Sink::File).map_err(|e| format!("option log: {}: {e}", path.display()))
}

/// The sink of a background mount on `dir` that named no file, and what
/// to tell the user about it (`None`: the system log, which needs no
/// word). Called once the mount stands, so that a failed mount leaves no
/// empty log file behind.
pub(super) fn default_sink(dir: &Path) -> (Sink, Option<String>) {
    if syslog_listens() {
        return (Sink::Syslog, None);
    }
    let mut failures = Vec::new();
    for path in default_files(dir) {
        match path.parent().map_or(Ok(()), make_log_dir).and_then(|()| open_log(&path)) {
            Ok(file) => {
                let notice = format!("no system log here; this mount's messages go to {}", path.display());
                return (Sink::File(file), Some(notice));
            }
            Err(e) => failures.push(format!("{}: {e}", path.display())),
        }
    }
    let notice = format!(
        "no system log here and no log file could be made ({}); this mount's messages are lost",
        failures.join("; ")
    );
    (Sink::Syslog, Some(notice))
}

/// Whether a system log listens on `/dev/log`, where syslog(3) sends.
fn syslog_listens() -> bool {
    use std::os::unix::net::{UnixDatagram, UnixStream};
    let datagram = UnixDatagram::unbound().and_then(|s| s.connect("/dev/log")).is_ok();
    datagram || UnixStream::connect("/dev/log").is_ok()
}

fn open_log(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new().append(true).create(true).mode(0o640).open(path)
}

/// Makes a log directory: readable by all under /var/log (as the system's
/// logs are), private to its user anywhere else.
fn make_log_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    if dir.starts_with("/var/log") {
        return std::fs::DirBuilder::new().recursive(true).mode(0o755).create(dir);
    }
    if let Some(parent) = dir.parent() {
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(parent)?;
    }
    fslab_control::private_dir(dir)
}

/// The log files a mount on `dir` may use when there is no system log,
/// best first.
fn default_files(dir: &Path) -> Vec<PathBuf> {
    let name = format!("{}.log", unit_name(dir));
    let uid = rustix::process::geteuid().as_raw();
    let mut dirs = Vec::new();
    if uid == 0 {
        dirs.push(PathBuf::from("/var/log/fslab"));
    } else if let Some(state) = std::env::var_os("XDG_STATE_HOME").filter(|s| Path::new(s).is_absolute()) {
        dirs.push(Path::new(&state).join("fslab"));
    } else if let Some(home) = std::env::var_os("HOME").filter(|h| Path::new(h).is_absolute()) {
        dirs.push(Path::new(&home).join(".local/state/fslab"));
    }
    dirs.push(std::env::temp_dir().join(format!("fslab-{uid}")));
    dirs.into_iter().map(|d| d.join(&name)).collect()
}

/// A mount point as systemd names its mount unit (`systemd-escape
/// --path`): `/` → `-`, `/mnt/my-data` → `mnt-my\x2ddata`.
pub(super) fn unit_name(dir: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let bytes = dir.as_os_str().as_bytes();
    let trimmed: Vec<&[u8]> = bytes.split(|&b| b == b'/').filter(|part| !part.is_empty()).collect();
    if trimmed.is_empty() {
        return "-".to_string();
    }
    let mut out = String::new();
    for (i, part) in trimmed.iter().enumerate() {
        if i > 0 {
            out.push('-');
        }
        for (j, &b) in part.iter().enumerate() {
            let plain =
                b.is_ascii_alphanumeric() || b == b'_' || b == b':' || (b == b'.' && !(i == 0 && j == 0));
            if plain {
                out.push(b as char);
            } else {
                out.push_str(&format!("\\x{b:02x}"));
            }
        }
    }
    out
}

/// Points standard error at a pipe whose lines a thread hands to `sink`.
pub(super) fn install(sink: Sink) -> Option<std::thread::JoinHandle<()>> {
    let Ok((read, write)) = super::stdio::pipe() else { return None };
    if let Sink::Syslog = sink {
        // openlog keeps the pointer, hence a 'static identity.
        let _ = nix::syslog::openlog(Some(c"fslab"), LogFlags::LOG_PID, Facility::LOG_DAEMON);
    }
    let _ = rustix::stdio::dup2_stderr(&write);
    drop(write);
    let forwarding = std::thread::Builder::new().name("fslab-log".into()).spawn(move || match sink {
        Sink::Syslog => forward_lines(read, |line| {
            // No facility: openlog's applies. nix passes the line through "%s".
            let _ = nix::syslog::syslog(Severity::LOG_WARNING, line);
        }),
        Sink::File(mut file) => {
            let pid = std::process::id();
            forward_lines(read, |line| {
                let _ = writeln!(file, "{} fslab[{pid}]: {line}", timestamp());
            })
        }
    });
    if forwarding.is_err() {
        // No reader: a write to the pipe would fail, and eprintln! panic.
        super::stdio::detach_stdio();
    }
    forwarding.ok()
}

/// The local time as `2025-01-31T13:45:07+0100`.
fn timestamp() -> String {
    // SAFETY: time and localtime_r write only the values passed; strftime
    // writes at most `buf.len()` bytes and returns how many. Neither rustix
    // nor nix wraps the C library's time zone conversion, and std has none.
    unsafe {
        let now = libc::time(std::ptr::null_mut());
        let mut tm: libc::tm = std::mem::zeroed();
        if libc::localtime_r(&now, &mut tm).is_null() {
            return now.to_string();
        }
        let mut buf = [0u8; 64];
        let n = libc::strftime(buf.as_mut_ptr().cast(), buf.len(), c"%Y-%m-%dT%H:%M:%S%z".as_ptr(), &tm);
        String::from_utf8_lossy(&buf[..n]).into_owned()
    }
}

/// Hands each line `from` yields to `sink`, without its newline or the
/// "fslab: " that every message starts with (the log names the program),
/// until end of file. It must not stop earlier: with the pipe's reader gone
/// a write to standard error fails, and `eprintln!` panics.
pub(super) fn forward_lines(from: impl Read, mut sink: impl FnMut(&str)) {
    use std::io::BufRead;
    let mut reader = std::io::BufReader::new(from);
    let mut line = Vec::new();
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line) {
            Ok(0) => return,
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return,
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim_end_matches('\n');
        let text = text.strip_prefix("fslab: ").unwrap_or(text);
        if !text.is_empty() {
            sink(text);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_line_of_standard_error_becomes_one_log_message() {
        let said =
            b"fslab: cleaner (greedy): segment 7 holds a block that cannot be read\n\nbad \xff byte\nlast";
        let mut logged = Vec::new();
        forward_lines(&said[..], |line| logged.push(line.to_string()));
        assert_eq!(
            logged,
            ["cleaner (greedy): segment 7 holds a block that cannot be read", "bad \u{fffd} byte", "last"],
            "a line that is not UTF-8 does not end the forwarding"
        );
    }

    #[test]
    fn log_files_are_named_as_systemd_names_mount_units() {
        assert_eq!(unit_name(Path::new("/")), "-");
        assert_eq!(unit_name(Path::new("/mnt/data")), "mnt-data");
        assert_eq!(unit_name(Path::new("/mnt/my-data/")), "mnt-my\\x2ddata");
        assert_eq!(unit_name(Path::new("/srv/a b/.x")), "srv-a\\x20b-.x");
        assert_eq!(unit_name(Path::new("/.hidden")), "\\x2ehidden");
    }

    #[test]
    fn a_log_file_is_named_after_the_mount_point() {
        let files = default_files(Path::new("/mnt/data"));
        assert!(files.iter().all(|f| f.file_name() == Some("mnt-data.log".as_ref())), "{files:?}");
        assert_eq!(
            files.last().and_then(|f| f.parent()),
            Some(
                std::env::temp_dir().join(format!("fslab-{}", rustix::process::geteuid().as_raw())).as_path()
            )
        );
    }

    #[test]
    fn a_named_log_file_that_cannot_be_opened_is_an_error() {
        let e = named(Path::new("/nonexistent-dir/x.log")).err();
        assert!(e.is_some_and(|e| e.starts_with("option log: /nonexistent-dir/x.log:")));
    }
}
