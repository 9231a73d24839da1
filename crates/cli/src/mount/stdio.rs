//! The pipes and standard streams of a mount that leaves its terminal:
//! shared by the background mount (`background`) and the log's syslog
//! relay (`log`), which both hand their streams over.

use std::fs::File;

/// A pipe whose ends are closed on exec (no helper program inherits them).
pub(super) fn pipe() -> std::io::Result<(File, File)> {
    let (read, write) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?;
    Ok((File::from(read), File::from(write)))
}

/// Points standard input, output and error at /dev/null.
pub(super) fn detach_stdio() {
    if let Ok(null) = std::fs::OpenOptions::new().read(true).write(true).open("/dev/null") {
        let _ = rustix::stdio::dup2_stdin(&null);
        let _ = rustix::stdio::dup2_stdout(&null);
        let _ = rustix::stdio::dup2_stderr(&null);
    }
}
