//! `fslab layout IMAGE`: the layout score of an FFS image (1997 paper
//! §3.3), each variant and by file size. Read-only: the image is mounted
//! over an overlay that keeps every write in memory. The score itself is
//! the lab's (`fslab_bench::aging::score`); where every block lies is
//! FFS's read-only walk (`Ffs::file_placements`).

use clap::Args;
use disk::{BlockDevice, FileDisk, ReadOnlyOverlay};
use fslab::ffs::{Ffs, MountOptions};
use fslab::time::TimeSource;
use fslab::Layout;
use fslab_bench::aging::score;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Examples in `fslab layout --help`.
pub const EXAMPLES: &str = "Examples:
  fslab layout ffs.img                            the aggregate score, each variant, by size";

/// Arguments of `fslab layout`.
#[derive(Args)]
pub struct LayoutArgs {
    /// The FFS image file or block device to read (unmounted).
    image: PathBuf,
    /// The journal's log device, if not at the path mkfs recorded.
    #[arg(long)]
    journal_device: Option<PathBuf>,
}

/// The message for an image the score is not defined on.
pub(crate) fn refuse_layout(layout: Option<Layout>) -> Option<&'static str> {
    match layout {
        Some(Layout::Ffs) => None,
        Some(Layout::Lfs) => Some(
            "an LFS image: the layout score is defined on FFS's placement (1997 paper §3.3: blocks \
             placed where the allocator chose, in place); an LFS writes every block at the end of its log",
        ),
        None => Some("not an fslab file system image"),
    }
}

/// Mounts the FFS on `image` in memory only (an overlay takes mount's
/// writes) and returns it.
pub(crate) fn mount_read_only(image: &Path, journal_device: Option<&Path>) -> Result<Ffs, String> {
    let name = image.display();
    let file = FileDisk::open_read_only(image).map_err(|e| format!("{name}: {e}"))?;
    let disk: Arc<dyn BlockDevice> = Arc::new(ReadOnlyOverlay::new(Arc::new(file)));
    if let Some(why) = refuse_layout(Layout::probe(disk.as_ref())) {
        return Err(format!("{name}: {why}"));
    }
    let (dev, _log_lock) =
        crate::log_device::attach(image, disk, journal_device, crate::log_device::Access::Overlay)?;
    Ffs::mount(dev, MountOptions::deterministic(TimeSource::wall())).map_err(|e| format!("{name}: {e}"))
}

/// Prints the report.
pub fn run(args: &LayoutArgs) -> Result<(), String> {
    let name = args.image.display();
    let _lock = crate::image_lock::lock(&args.image).map_err(|e| format!("{name}: {e}"))?;
    let mut ffs = mount_read_only(&args.image, args.journal_device.as_deref())?;
    let sb = ffs.superblock().geometry;
    let files = ffs.file_placements().map_err(|e| format!("{name}: {e}"))?;
    let fpb = sb.block_size / sb.frag_size;
    let report = score::score(&files, fpb);
    outln!("{name}: {} KiB blocks, {} KiB fragments", sb.block_size >> 10, sb.frag_size >> 10)?;
    out!("{}", score::render(&report))?;
    Ok(())
}
