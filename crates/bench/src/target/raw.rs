//! The device itself, no file system: the 1993 paper's "RAW partition"
//! (§5.2.1). Each file is an extent of its own (a fixed-size slot of the
//! device); every transfer goes to the device synchronously, in requests of
//! at most [`MAX_REQUEST`] bytes, each waited for before the next, with the
//! copy between user and kernel charged between them — the "approximately
//! five milliseconds" gap the paper measured.

use super::{Backend, Fd, Usage};
use crate::cpu::CpuModel;
use disk::sim::Stats as DiskStats;
use disk::{BlockDevice, SimDisk, VirtualClock};
use std::collections::HashMap;
use std::io;
use std::sync::Arc;

/// The largest single transfer (MAXPHYS, and the papers' controllers'
/// limit).
pub const MAX_REQUEST: usize = 64 << 10;

/// The raw device.
pub struct Raw {
    dev: Arc<dyn BlockDevice>,
    sim: Option<Arc<SimDisk>>,
    /// The clock and the CPU model the copies are charged to (virtual time).
    charge: Option<(Arc<VirtualClock>, CpuModel)>,
    slot_bytes: u64,
    /// Files by path: slot number and size.
    files: HashMap<String, (u64, u64)>,
    open: HashMap<Fd, String>,
    next_fd: Fd,
    next_slot: u64,
}

impl Raw {
    /// The device `dev`, cut into `slots` equal extents, one per file.
    pub fn new(
        dev: Arc<dyn BlockDevice>,
        sim: Option<Arc<SimDisk>>,
        charge: Option<(Arc<VirtualClock>, CpuModel)>,
        slots: u64,
    ) -> Raw {
        let slot_bytes = (dev.size() / slots.max(1)) / 4096 * 4096;
        Raw {
            dev,
            sim,
            charge,
            slot_bytes,
            files: HashMap::new(),
            open: HashMap::new(),
            next_fd: 1,
            next_slot: 0,
        }
    }

    fn copy(&self, bytes: usize) {
        if let Some((clock, cpu)) = &self.charge {
            clock.advance(cpu.copy_ns(bytes as u64));
        }
    }

    fn extent(&self, fd: Fd, offset: u64, len: usize) -> io::Result<(u64, &str)> {
        let path = self.open.get(&fd).ok_or_else(|| io::Error::from_raw_os_error(libc::EBADF))?;
        let (slot, _) = self.files.get(path).ok_or_else(|| io::Error::from_raw_os_error(libc::ENOENT))?;
        if offset + len as u64 > self.slot_bytes {
            return Err(io::Error::from_raw_os_error(libc::EFBIG));
        }
        Ok((slot * self.slot_bytes + offset, path))
    }

    fn new_fd(&mut self, path: &str) -> Fd {
        let fd = self.next_fd;
        self.next_fd += 1;
        self.open.insert(fd, path.to_string());
        fd
    }
}

impl Backend for Raw {
    fn copies_itself(&self) -> bool {
        true
    }

    fn mkdir(&mut self, _path: &str) -> io::Result<()> {
        Ok(())
    }

    fn rmdir(&mut self, _path: &str) -> io::Result<()> {
        Ok(())
    }

    fn create(&mut self, path: &str) -> io::Result<Fd> {
        if !self.files.contains_key(path) {
            if self.next_slot * self.slot_bytes + self.slot_bytes > self.dev.size() || self.slot_bytes == 0 {
                return Err(io::Error::from_raw_os_error(libc::ENOSPC));
            }
            self.files.insert(path.to_string(), (self.next_slot, 0));
            self.next_slot += 1;
        }
        Ok(self.new_fd(path))
    }

    fn open(&mut self, path: &str) -> io::Result<Fd> {
        if !self.files.contains_key(path) {
            return Err(io::Error::from_raw_os_error(libc::ENOENT));
        }
        Ok(self.new_fd(path))
    }

    fn close(&mut self, fd: Fd) -> io::Result<()> {
        self.open.remove(&fd).map(|_| ()).ok_or_else(|| io::Error::from_raw_os_error(libc::EBADF))
    }

    fn write(&mut self, fd: Fd, offset: u64, data: &[u8]) -> io::Result<()> {
        let (at, path) = self.extent(fd, offset, data.len())?;
        let path = path.to_string();
        for (i, chunk) in data.chunks(MAX_REQUEST).enumerate() {
            self.copy(chunk.len());
            self.dev.write_at(at + (i * MAX_REQUEST) as u64, chunk)?;
            self.dev.flush()?;
        }
        if let Some(file) = self.files.get_mut(&path) {
            file.1 = file.1.max(offset + data.len() as u64);
        }
        Ok(())
    }

    fn read(&mut self, fd: Fd, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        let (at, _) = self.extent(fd, offset, buf.len())?;
        for (i, chunk) in buf.chunks_mut(MAX_REQUEST).enumerate() {
            self.dev.read_at(at + (i * MAX_REQUEST) as u64, chunk)?;
            self.copy(chunk.len());
        }
        Ok(())
    }

    fn fsync(&mut self, _fd: Fd) -> io::Result<()> {
        self.dev.flush()
    }

    fn unlink(&mut self, path: &str) -> io::Result<()> {
        self.files.remove(path).map(|_| ()).ok_or_else(|| io::Error::from_raw_os_error(libc::ENOENT))
    }

    fn rename(&mut self, from: &str, to: &str) -> io::Result<()> {
        let file = self.files.remove(from).ok_or_else(|| io::Error::from_raw_os_error(libc::ENOENT))?;
        self.files.insert(to.to_string(), file);
        Ok(())
    }

    fn stat(&mut self, path: &str) -> io::Result<Option<u64>> {
        Ok(self.files.get(path).map(|&(_, size)| size))
    }

    fn sync(&mut self) -> io::Result<()> {
        self.dev.flush()
    }

    fn drop_caches(&mut self) -> io::Result<bool> {
        // Nothing is cached above the device.
        Ok(true)
    }

    fn usage(&mut self) -> io::Result<Usage> {
        let used: u64 = self.next_slot * self.slot_bytes;
        Ok(Usage { total: self.dev.size(), free: self.dev.size().saturating_sub(used) })
    }

    fn disk_stats(&mut self) -> Option<DiskStats> {
        self.sim.as_ref().map(|d| d.stats())
    }

    fn finish(&mut self) -> io::Result<()> {
        self.dev.flush()
    }
}
