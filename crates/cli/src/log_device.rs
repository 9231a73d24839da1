//! Finding an FFS journal's log device for a command that opens an image
//! (mount, fsck, dump): the path its superblock recorded at mkfs, or the
//! one the user gives, opened and locked like the image, and paired with
//! it once its header shows it is this file system's log.

use crate::image_lock::ImageLock;
use disk::{BlockDevice, FileDisk, ReadOnlyOverlay};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// How a command opens the log device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Access {
    /// Read and write.
    Write,
    /// Opened for reading only: `disk` already is, and nothing may reach
    /// either device.
    ReadOnly,
    /// Opened for reading only, writes kept in memory over it (a
    /// read-only mount, `fsck -n`): what the image's `disk` is too.
    Overlay,
}

/// `disk` (the image `image`), paired with its journal's log device if it
/// has one: at `given`, or else where mkfs recorded it. Returns the device
/// to open the file system on and the log device's lock (held while it
/// is). An image without a log device is returned as it is, unless a log
/// device is given for it.
pub(crate) fn attach(
    image: &Path,
    disk: Arc<dyn BlockDevice>,
    given: Option<&Path>,
    access: Access,
) -> Result<(Arc<dyn BlockDevice>, Option<ImageLock>), String> {
    let name = image.display();
    let recorded = fslab::ffs::log_device::log_device_of(disk.as_ref());
    let path: PathBuf = match (given, &recorded) {
        (Some(path), _) => path.to_path_buf(),
        (None, Some(device)) => PathBuf::from(device.path()),
        (None, None) => return Ok((disk, None)),
    };
    let log_name = path.display();
    let opened =
        if access == Access::Write { FileDisk::open(&path) } else { FileDisk::open_read_only(&path) };
    let log = opened.map_err(|e| {
        let hint = if given.is_none() {
            ": say where it is now (mount -o journal_device=PATH; fsck and dump --journal-device PATH)"
        } else {
            ""
        };
        format!("{name}: its journal's log device {log_name} cannot be opened ({e}){hint}")
    })?;
    let lock = crate::image_lock::lock(&path).map_err(|e| format!("{log_name}: {e}"))?;
    let log: Arc<dyn BlockDevice> = match access {
        Access::Overlay => Arc::new(ReadOnlyOverlay::new(Arc::new(log))),
        Access::Write | Access::ReadOnly => Arc::new(log),
    };
    let pair = fslab::ffs::log_device::attach(disk, Some(log))
        .map_err(|e| format!("{name} with {log_name}: {e}"))?;
    Ok((pair, Some(lock)))
}
