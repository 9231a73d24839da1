//! Writing a command's output without panicking: `println!` and
//! `eprintln!` panic when the write fails (stdout on a full disk,
//! `/dev/full`, a closed pipe), which would end the command with Rust's
//! status 101 instead of its own. Output goes through [`stdout`], whose
//! failure the command reports with its documented status; messages go
//! through `say!`, which drops what cannot be written (there
//! is nowhere left to say it).

use std::io::Write;

/// Writes `text` to standard output and flushes it; a failure is the
/// message the command ends with.
pub(crate) fn stdout(text: &str) -> Result<(), String> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|e| format!("cannot write to standard output: {e}"))
}

/// `n` and the noun, singular for one: "1 problem", "3 problems".
pub(crate) fn count(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Writes one line to standard error, ignoring a failure.
pub(crate) fn stderr_line(line: std::fmt::Arguments) {
    let mut err = std::io::stderr().lock();
    let _ = err.write_fmt(line).and_then(|()| err.write_all(b"\n"));
}

/// `eprintln!` that never panics: a line on standard error, or nothing if
/// it cannot be written.
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::out::stderr_line(format_args!($($arg)*))
    };
}

/// `print!` whose failure returns from the function (with `?`): the
/// text on standard output, or the message the command ends with.
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::out::stdout(&format!($($arg)*))
    };
}

/// `println!` as [`out!`] is `print!`.
macro_rules! outln {
    () => {
        $crate::out::stdout("\n")
    };
    ($($arg:tt)*) => {
        $crate::out::stdout(&format!("{}\n", format_args!($($arg)*)))
    };
}

#[cfg(test)]
mod tests {
    #[test]
    fn one_is_singular_and_every_other_count_plural() {
        assert_eq!(super::count(1, "problem", "problems"), "1 problem");
        assert_eq!(super::count(0, "problem", "problems"), "0 problems");
        assert_eq!(super::count(2, "directory", "directories"), "2 directories");
    }
}
