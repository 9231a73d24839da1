//! A device backed by an image file or a block device.

use crate::aligned::{all_aligned, AlignedBytes, DIRECT_ALIGN};
use crate::{check_bounds, BlockDevice};
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, FileTypeExt};
use std::path::Path;

/// An image file or a block device. Reads and writes are `pread`/`pwrite`;
/// [`flush`](BlockDevice::flush) is `fdatasync`, which on Linux also flushes
/// the device's volatile write cache.
///
/// Large aligned vectored writes (whole partial segments) go through a second
/// descriptor opened with `O_DIRECT`: straight from the caller's buffers when
/// they are all aligned ([`AlignedBytes`]), else copied once into an aligned
/// bounce buffer. That skips the page cache, whose copy and later writeback
/// cost more CPU than even the bounce copy. Large aligned reads (a clustered
/// file read, a whole segment for the cleaner; at least [`DIRECT_READ_MIN`])
/// go through the same descriptor, into the caller's buffer when it is
/// aligned: filling the page cache and copying out of it cost more than the
/// read. Linux keeps the two kinds coherent: a buffered read sees direct
/// writes (they drop the cached pages in their range), and a direct read
/// sees buffered writes (it writes back dirty pages in its range first).
/// Where `O_DIRECT` is refused (tmpfs, say) everything is buffered, and a
/// direct read that fails (the unaligned end of an image, say) is done again
/// buffered.
pub struct FileDisk {
    file: File,
    direct: Option<DirectIo>,
    size: u64,
}

/// Reads at least this large (and aligned) bypass the page cache.
pub const DIRECT_READ_MIN: usize = 64 * 1024;

/// The `O_DIRECT` descriptor and its bounce buffers: one for writes whose
/// buffers are not all aligned, one for reads into an unaligned buffer
/// (kept, so that a read neither allocates nor zeroes a megabyte).
struct DirectIo {
    file: File,
    bounce: std::sync::Mutex<AlignedBytes>,
    read_bounce: std::sync::Mutex<AlignedBytes>,
}

impl DirectIo {
    fn open(path: &Path) -> Option<DirectIo> {
        use std::os::unix::fs::OpenOptionsExt;
        let file = OpenOptions::new().read(true).write(true).custom_flags(libc::O_DIRECT).open(path).ok()?;
        Some(DirectIo {
            file,
            bounce: std::sync::Mutex::new(AlignedBytes::zeroed(0)),
            read_bounce: std::sync::Mutex::new(AlignedBytes::zeroed(0)),
        })
    }

    /// Reads `buf.len()` bytes at `offset` (both aligned) past the page
    /// cache; false if the device refused, for the caller to read buffered.
    fn read(&self, offset: u64, buf: &mut [u8]) -> bool {
        if (buf.as_ptr() as usize).is_multiple_of(DIRECT_ALIGN) {
            return self.file.read_exact_at(buf, offset).is_ok();
        }
        let mut bounce = self.read_bounce.lock().unwrap_or_else(|e| e.into_inner());
        if bounce.len() < buf.len() {
            *bounce = AlignedBytes::zeroed(buf.len());
        }
        let part = &mut bounce[..buf.len()];
        if self.file.read_exact_at(part, offset).is_err() {
            return false;
        }
        buf.copy_from_slice(part);
        true
    }

    fn write(&self, offset: u64, bufs: &[&[u8]], total: usize) -> io::Result<()> {
        let mut bounce = self.bounce.lock().unwrap_or_else(|e| e.into_inner());
        if bounce.len() < total {
            *bounce = AlignedBytes::zeroed(total);
        }
        let buf = &mut bounce[..total];
        let mut at = 0;
        for b in bufs {
            buf[at..at + b.len()].copy_from_slice(b);
            at += b.len();
        }
        self.file.write_all_at(buf, offset)
    }
}

impl FileDisk {
    /// Opens an existing image file or block device for reading and writing.
    pub fn open(path: &Path) -> io::Result<FileDisk> {
        let file = OpenOptions::new().read(true).write(true).open(path)?;
        let mut disk = Self::from_file(file)?;
        disk.direct = DirectIo::open(path);
        Ok(disk)
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
        let mut disk = Self::from_file(file)?;
        disk.direct = DirectIo::open(path);
        Ok(disk)
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
        Ok(FileDisk { file, direct: None, size })
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
        if let Some(direct) = &self.direct {
            let aligned =
                offset.is_multiple_of(DIRECT_ALIGN as u64) && buf.len().is_multiple_of(DIRECT_ALIGN);
            if aligned && buf.len() >= DIRECT_READ_MIN && direct.read(offset, buf) {
                return Ok(());
            }
        }
        self.file.read_exact_at(buf, offset)
    }

    fn write_at(&self, offset: u64, buf: &[u8]) -> io::Result<()> {
        check_bounds(offset, buf.len(), self.size)?;
        self.file.write_all_at(buf, offset)
    }

    fn write_vectored_at(&self, offset: u64, bufs: &[&[u8]]) -> io::Result<()> {
        let total: usize = bufs.iter().map(|b| b.len()).sum();
        check_bounds(offset, total, self.size)?;
        if let Some(direct) = &self.direct {
            let aligned = offset.is_multiple_of(DIRECT_ALIGN as u64) && total.is_multiple_of(DIRECT_ALIGN);
            if aligned && total >= 64 * 1024 {
                // A short direct write leaves the rest unaligned, which the
                // kernel refuses: the bounced write then does it all again.
                if all_aligned(bufs) && pwritev_all(&direct.file, offset, bufs, total).is_ok() {
                    return Ok(());
                }
                return direct.write(offset, bufs, total);
            }
        }
        pwritev_all(&self.file, offset, bufs, total)
    }

    fn flush(&self) -> io::Result<()> {
        self.file.sync_data()
    }

    fn size(&self) -> u64 {
        self.size
    }
}

/// Writes `bufs` (`total` bytes) one after another at `offset` of `file`.
fn pwritev_all(file: &File, offset: u64, bufs: &[&[u8]], total: usize) -> io::Result<()> {
    use std::os::unix::io::AsRawFd;
    // pwritev takes at most IOV_MAX buffers and may write short: go on
    // from wherever it stopped.
    const IOV_MAX: usize = 1024;
    let mut done = 0usize;
    while done < total {
        let mut skip = done;
        let mut iov: Vec<libc::iovec> = Vec::with_capacity(bufs.len().min(IOV_MAX));
        for buf in bufs {
            if skip >= buf.len() {
                skip -= buf.len();
                continue;
            }
            let rest = &buf[skip..];
            skip = 0;
            iov.push(libc::iovec { iov_base: rest.as_ptr() as *mut libc::c_void, iov_len: rest.len() });
            if iov.len() == IOV_MAX {
                break;
            }
        }
        // SAFETY: every iovec points into a live buffer borrowed for this
        // call, with its true length; pwritev only reads them.
        let n = unsafe {
            libc::pwritev(
                file.as_raw_fd(),
                iov.as_ptr(),
                iov.len() as libc::c_int,
                (offset + done as u64) as libc::off_t,
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if n == 0 {
            return Err(io::Error::new(io::ErrorKind::WriteZero, "device accepted no bytes"));
        }
        done += n as usize;
    }
    Ok(())
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
        let parts: Vec<Vec<u8>> = (0..1500u32).map(|i| vec![(i % 251) as u8; 100]).collect();
        let refs: Vec<&[u8]> = parts.iter().map(|p| &p[..]).collect();
        disk.write_vectored_at(1000, &refs).expect("vectored write of more than IOV_MAX buffers");
        let mut back = vec![0u8; 150_000];
        disk.read_at(1000, &mut back).expect("read");
        assert_eq!(back, parts.concat());
    }

    #[test]
    fn direct_segment_writes_are_seen_by_buffered_reads() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("disk.img");
        let disk = FileDisk::create(&path, 4 << 20).expect("create");
        let mut before = vec![0u8; 256 * 1024];
        disk.read_at(1 << 20, &mut before).expect("read fills the page cache");
        let parts: Vec<Vec<u8>> = (0..64u8).map(|i| vec![i.wrapping_mul(3) | 1; 4096]).collect();
        let refs: Vec<&[u8]> = parts.iter().map(|p| &p[..]).collect();
        disk.write_vectored_at(1 << 20, &refs).expect("aligned vectored write");
        let mut after = vec![0u8; 256 * 1024];
        disk.read_at(1 << 20, &mut after).expect("read");
        assert_eq!(after, parts.concat(), "no stale cached page may be read back");

        // Aligned buffers go to the device as they are, with the same result.
        let aligned: Vec<AlignedBytes> = parts.iter().rev().map(|p| AlignedBytes::copy_of(p)).collect();
        let refs: Vec<&[u8]> = aligned.iter().map(|p| &p[..]).collect();
        assert!(all_aligned(&refs));
        disk.write_vectored_at(1 << 20, &refs).expect("aligned vectored write without a bounce copy");
        disk.read_at(1 << 20, &mut after).expect("read");
        assert_eq!(after, refs.concat(), "no stale cached page may be read back");
    }

    #[test]
    fn large_direct_reads_see_buffered_writes_and_small_reads_see_direct_ones() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("disk.img");
        let disk = FileDisk::create(&path, 4 << 20).expect("create");
        // A superblock-sized buffered write, still dirty in the page cache.
        disk.write_at((1 << 20) + 4096, &[7u8; 4096]).expect("buffered write");
        let mut run = AlignedBytes::zeroed(256 * 1024);
        disk.read_at(1 << 20, &mut run).expect("direct read into an aligned buffer");
        assert!(run[4096..8192].iter().all(|&b| b == 7), "a direct read sees the buffered write");
        let mut unaligned = vec![0u8; 256 * 1024 + 1];
        disk.read_at(1 << 20, &mut unaligned[1..]).expect("direct read through a bounce buffer");
        assert!(unaligned[1 + 4096..1 + 8192].iter().all(|&b| b == 7));

        let parts: Vec<AlignedBytes> = (0..16u8).map(|i| AlignedBytes::copy_of(&[i | 0x80; 4096])).collect();
        let refs: Vec<&[u8]> = parts.iter().map(|p| &p[..]).collect();
        disk.write_vectored_at(2 << 20, &refs).expect("direct write");
        let mut small = [0u8; 100];
        disk.read_at((2 << 20) + 5 * 4096, &mut small).expect("buffered read");
        assert!(small.iter().all(|&b| b == 0x85), "a buffered read sees the direct write");
    }
}
