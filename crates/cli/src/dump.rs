//! `fslab dump IMAGE`: the library's report of an image of either layout,
//! read-only.

use clap::Args;
use disk::FileDisk;
use fslab::Layout;
use std::path::PathBuf;
use std::sync::Arc;

/// Arguments of `fslab dump`.
#[derive(Args)]
pub struct DumpArgs {
    /// The image file or block device to read.
    image: PathBuf,
}

/// Prints the report; the image is opened read-only.
pub fn run(args: &DumpArgs) -> Result<(), String> {
    let name = args.image.display();
    let disk = FileDisk::open_read_only(&args.image).map_err(|e| format!("{name}: {e}"))?;
    let report = match Layout::probe(&disk) {
        Some(Layout::Ffs) => fslab::ffs::dump(&disk),
        // Not FFS: LFS's dump names what it finds (or why it is not LFS).
        _ => fslab::lfs::dump(Arc::new(disk)),
    }
    .map_err(|e| format!("{name}: {e}"))?;
    out!("{report}")?;
    if !report.ends_with('\n') {
        outln!()?;
    }
    Ok(())
}
