//! The `fslab` binary as `fsck.fslab`, the checker fsck(8) runs for a file
//! system of type `fslab` (`fsck -t fslab IMAGE`, and at boot for an fstab
//! line whose sixth field is not 0): `fsck.fslab [-panyfv] [-C FD] DEVICE`,
//! with e2fsck's options and exit statuses.
//!
//! * `-p`, `-a` — preen: repair leaks without asking (what a crash leaves:
//!   space or inodes held that nothing uses, link counts too high, counts
//!   that disagree; see `fslab_check::Severity`), and say nothing unless
//!   problems are left. Any damage (a link count too low, something in use
//!   marked free, a structure that does not decode, a wrong name) or a
//!   problem that cannot be repaired stops it before anything changes:
//!   status 4, naming the damage, and a person runs the repair (`-y`, or
//!   `fslab fsck --repair`).
//! * `-y` — repair, saying what was found and done.
//! * `-n` — change nothing: open the image read-only and report.
//! * `-f` — check even a clean file system: fslab always checks fully, so
//!   this is accepted and changes nothing.
//! * `-v` — counts and progress; `-C FD` (fsck's progress bar) is accepted
//!   and ignored.
//!
//! Without `-p`, `-a`, `-y` or `-n` it only reports (there is no
//! interactive mode). Statuses (e2fsck's): 0 clean, 1 errors corrected,
//! 4 errors left uncorrected, 8 operational error (could not run; the
//! image is mounted, say), 16 usage error. 2 ("corrected, reboot") never
//! happens: a mounted image is refused, never repaired.

use crate::fsck::{check_image, How, OPERATIONAL_ERROR};
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// e2fsck's status for wrong usage.
const USAGE: u8 = 16;

/// The usage line.
const SYNOPSIS: &str = "usage: fsck.fslab [-panyfv] [-C FD] DEVICE   (run by fsck -t fslab)";

/// Whether the program name (`argv[0]`) is the checker's.
pub fn is_program_name(argv0: &OsStr) -> bool {
    Path::new(argv0).file_name().is_some_and(|name| name == "fsck.fslab")
}

/// What the command line asks for.
#[derive(Debug, PartialEq, Eq)]
struct Request {
    image: PathBuf,
    how: How,
}

/// Parses the arguments after the program name.
fn parse(args: &[OsString]) -> Result<Request, String> {
    let (mut preen, mut yes, mut no, mut verbose) = (false, false, false, false);
    let mut image = None;
    let mut words = args.iter();
    while let Some(word) = words.next() {
        let text = word.to_string_lossy();
        let Some(letters) = text.strip_prefix('-').filter(|l| !l.is_empty()) else {
            if image.replace(PathBuf::from(word)).is_some() {
                return Err("one device at a time".to_string());
            }
            continue;
        };
        let mut letters = letters.chars();
        while let Some(letter) = letters.next() {
            match letter {
                'p' | 'a' => preen = true,
                'y' => yes = true,
                'n' => no = true,
                'v' => verbose = true,
                'f' => {}
                'C' => {
                    // The descriptor follows, joined or as the next word.
                    if letters.as_str().is_empty() {
                        words.next();
                    }
                    break;
                }
                other => return Err(format!("unknown option -{other}")),
            }
        }
    }
    if [preen, yes, no].iter().filter(|&&set| set).count() > 1 {
        return Err("only one of -p/-a, -n and -y may be given".to_string());
    }
    let image = image.ok_or_else(|| "no device given".to_string())?;
    Ok(Request { image, how: How { repair: preen || yes, verbose, preen } })
}

/// Runs the checker with `args` (after the program name).
pub fn main(args: &[OsString]) -> ExitCode {
    let request = match parse(args) {
        Ok(request) => request,
        Err(why) => {
            say!("fsck.fslab: {why}");
            say!("{SYNOPSIS}");
            return ExitCode::from(USAGE);
        }
    };
    match check_image(&request.image, None, request.how) {
        Ok(status) => ExitCode::from(status),
        Err(message) => {
            say!("fsck.fslab: {message}");
            ExitCode::from(OPERATIONAL_ERROR)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(words: &[&str]) -> Result<Request, String> {
        parse(&words.iter().map(OsString::from).collect::<Vec<_>>())
    }

    #[test]
    fn fsck_8_options_map_to_checks() {
        let how = |words: &[&str]| parsed(words).expect("parses").how;
        assert_eq!(how(&["-p", "/img"]), How { repair: true, verbose: false, preen: true });
        assert_eq!(how(&["-a", "/img"]), how(&["-p", "/img"]));
        assert_eq!(how(&["-fy", "/img"]), How { repair: true, verbose: false, preen: false });
        assert_eq!(how(&["-n", "-v", "/img"]), How { repair: false, verbose: true, preen: false });
        assert_eq!(how(&["-C", "0", "-p", "/img"]), how(&["-p", "/img"]));
        assert_eq!(how(&["-pC0", "/img"]), how(&["-p", "/img"]));
        assert_eq!(parsed(&["-p", "/img"]).expect("parses").image, PathBuf::from("/img"));
    }

    #[test]
    fn contradictions_and_unknowns_are_usage_errors() {
        assert!(parsed(&["-n", "-y", "/img"]).is_err());
        assert!(parsed(&["-p", "-n", "/img"]).is_err());
        assert!(parsed(&["-x", "/img"]).is_err());
        assert!(parsed(&["-p"]).is_err(), "no device");
        assert!(parsed(&["/a", "/b"]).is_err(), "two devices");
    }
}
