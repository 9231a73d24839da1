//! `fslab dump IMAGE`: the library's report of an image of either layout,
//! read-only. Its times (the fields in nanoseconds since the epoch, labelled
//! `(ns)`) are shown as dates too, in UTC and ISO 8601, after the number.

use clap::Args;
use disk::{BlockDevice, FileDisk};
use fslab::Layout;
use std::path::PathBuf;
use std::sync::Arc;

/// Examples in `fslab dump --help`.
pub const EXAMPLES: &str = "Examples:
  fslab dump fs.img                               superblock, checkpoint, segment usage
  fslab dump fs.img | less";

/// Arguments of `fslab dump`.
#[derive(Args)]
pub struct DumpArgs {
    /// The image file or block device to read.
    image: PathBuf,
    /// FFS: the journal's log device, if not at the path mkfs recorded.
    #[arg(long)]
    journal_device: Option<PathBuf>,
}

/// Prints the report; the image is opened read-only.
pub fn run(args: &DumpArgs) -> Result<(), String> {
    let name = args.image.display();
    let disk: Arc<dyn BlockDevice> =
        Arc::new(FileDisk::open_read_only(&args.image).map_err(|e| format!("{name}: {e}"))?);
    let report = match Layout::probe(disk.as_ref()) {
        Some(Layout::Ffs) => {
            let access = crate::log_device::Access::ReadOnly;
            let (dev, _log_lock) =
                crate::log_device::attach(&args.image, disk, args.journal_device.as_deref(), access)?;
            fslab::ffs::dump(dev.as_ref())
        }
        // Not FFS: LFS's dump names what it finds (or why it is not LFS).
        _ => fslab::lfs::dump(disk),
    }
    .map_err(|e| format!("{name}: {e}"))?;
    let report = with_dates(&report);
    out!("{report}")?;
    if !report.ends_with('\n') {
        outln!()?;
    }
    Ok(())
}

/// `report` with each time field (`LABEL (ns)   NUMBER`) followed by its
/// date: `created (ns)   1795851537849980190 (2026-11-28T07:38:57.849980190Z)`.
fn with_dates(report: &str) -> String {
    let mut out = String::with_capacity(report.len() + 256);
    for line in report.split_inclusive('\n') {
        let (text, end) = line.strip_suffix('\n').map_or((line, ""), |t| (t, "\n"));
        out.push_str(text);
        let number = text.split_once(" (ns)").map(|(_, rest)| rest.trim());
        if let Some(ns) = number.and_then(|n| n.parse::<u64>().ok()) {
            out.push_str(&format!(" ({})", iso8601(ns)));
        }
        out.push_str(end);
    }
    out
}

/// Nanoseconds since 1970-01-01 UTC as an ISO 8601 date and time in UTC.
fn iso8601(ns: u64) -> String {
    let (seconds, nanos) = (ns / 1_000_000_000, ns % 1_000_000_000);
    let (days, of_day) = (seconds / 86_400, seconds % 86_400);
    let (year, month, day) = civil_date(days);
    let (hour, minute, second) = (of_day / 3600, of_day % 3600 / 60, of_day % 60);
    format!("{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}.{nanos:09}Z")
}

/// The proleptic Gregorian date `days` after 1970-01-01: days counted in
/// 400-year eras from 0000-03-01, whose leap day ends each year.
fn civil_date(days: u64) -> (u64, u64, u64) {
    let shifted = days + 719_468;
    let era = shifted / 146_097;
    let day_of_era = shifted % 146_097;
    let year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_from_march = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_from_march + 2) / 5 + 1;
    let month = if month_from_march < 10 { month_from_march + 3 } else { month_from_march - 9 };
    let year = year_of_era + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_utc_iso_8601() {
        assert_eq!(iso8601(0), "1970-01-01T00:00:00.000000000Z");
        assert_eq!(iso8601(951_782_400_000_000_001), "2000-02-29T00:00:00.000000001Z", "a leap day");
        assert_eq!(iso8601(1_795_851_537_849_980_190), "2026-11-28T07:38:57.849980190Z");
        assert_eq!(
            iso8601(4_107_542_399_000_000_000),
            "2100-02-28T23:59:59.000000000Z",
            "no leap day in 2100"
        );
    }

    #[test]
    fn time_fields_get_their_date_and_keep_their_number() {
        let report = "checkpoint\n  time (ns)         0\n  serial            2\n  created (ns)      x\n";
        assert_eq!(
            with_dates(report),
            "checkpoint\n  time (ns)         0 (1970-01-01T00:00:00.000000000Z)\n  serial            2\n  created (ns)      x\n"
        );
    }
}
