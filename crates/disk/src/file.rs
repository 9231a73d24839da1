//! A device backed by an image file or a block device.

use crate::{check_bounds, BlockDevice};
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, FileTypeExt};
use std::path::Path;

/// An image file or a block device. Reads and writes are `pread`/`pwrite`;
/// [`flush`](BlockDevice::flush) is `fdatasync`, which on Linux also flushes
/// the device's volatile write cache.
pub struct FileDisk {
    file: File,
    size: u64,
}

impl FileDisk {
    /// Opens an existing image file or block device for reading and writing.
    pub fn open(path: &Path) -> io::Result<FileDisk> {
        let file = OpenOptions::new().read(true).write(true).open(path)?;
        Self::from_file(file)
    }

    /// Opens an existing image file or block device for reading only; every
    /// write fails.
    pub fn open_read_only(path: &Path) -> io::Result<FileDisk> {
        let file = OpenOptions::new().read(true).open(path)?;
        Self::from_file(file)
    }

    /// Creates (or extends) an image file of `size` bytes. The file is sparse:
    /// it takes no space until written. An existing block device is opened as
    /// it is; its size cannot change.
    pub fn create(path: &Path, size: u64) -> io::Result<FileDisk> {
        let file = OpenOptions::new().read(true).write(true).create(true).truncate(false).open(path)?;
        let kind = file.metadata()?.file_type();
        if kind.is_file() && file.metadata()?.len() != size {
            file.set_len(size)?;
        }
        Self::from_file(file)
    }

    fn from_file(file: File) -> io::Result<FileDisk> {
        let meta = file.metadata()?;
        let size = if meta.file_type().is_block_device() {
            block_device_size(&file)?
        } else if meta.file_type().is_file() {
            meta.len()
        } else {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "not an image file or a block device"));
        };
        Ok(FileDisk { file, size })
    }
}

fn block_device_size(file: &File) -> io::Result<u64> {
    use std::os::unix::io::AsRawFd;
    // BLKGETSIZE64 = _IOR(0x12, 114, size_t)
    const BLKGETSIZE64: libc::c_ulong = 0x8008_1272;
    let mut size: u64 = 0;
    // SAFETY: the ioctl writes one u64 into `size`, which outlives the call.
    let rc = unsafe { libc::ioctl(file.as_raw_fd(), BLKGETSIZE64, &mut size as *mut u64) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(size)
}

impl BlockDevice for FileDisk {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        check_bounds(offset, buf.len(), self.size)?;
        self.file.read_exact_at(buf, offset)
    }

    fn write_at(&self, offset: u64, buf: &[u8]) -> io::Result<()> {
        check_bounds(offset, buf.len(), self.size)?;
        self.file.write_all_at(buf, offset)
    }

    fn flush(&self) -> io::Result<()> {
        self.file.sync_data()
    }

    fn size(&self) -> u64 {
        self.size
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_file_round_trip_survives_reopen() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("disk.img");
        {
            let disk = FileDisk::create(&path, 1 << 20).expect("create");
            assert_eq!(disk.size(), 1 << 20);
            disk.write_at(4096, b"durable").expect("write");
            disk.flush().expect("flush");
        }
        let disk = FileDisk::open(&path).expect("open");
        let mut buf = [0u8; 7];
        disk.read_at(4096, &mut buf).expect("read");
        assert_eq!(&buf, b"durable");
        assert!(disk.write_at((1 << 20) - 3, b"four").is_err(), "writes never extend the device");
    }
}
