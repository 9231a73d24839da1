//! A device held in memory, for tests and for the model.

use crate::{check_bounds, BlockDevice};
use std::io;
use std::sync::RwLock;

/// A device whose bytes live in a vector. Flush does nothing: memory never
/// loses a write, so every write is as durable as it will ever be.
pub struct MemDisk {
    bytes: RwLock<Vec<u8>>,
}

impl MemDisk {
    /// A zero-filled device of `size` bytes.
    pub fn new(size: u64) -> MemDisk {
        MemDisk { bytes: RwLock::new(vec![0; size as usize]) }
    }

    /// A device holding a copy of `bytes`.
    pub fn from_bytes(bytes: Vec<u8>) -> MemDisk {
        MemDisk { bytes: RwLock::new(bytes) }
    }

    /// A copy of every byte on the device.
    pub fn snapshot(&self) -> Vec<u8> {
        self.bytes.read().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl BlockDevice for MemDisk {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        let bytes = self.bytes.read().unwrap_or_else(|e| e.into_inner());
        check_bounds(offset, buf.len(), bytes.len() as u64)?;
        let start = offset as usize;
        buf.copy_from_slice(&bytes[start..start + buf.len()]);
        Ok(())
    }

    fn write_at(&self, offset: u64, buf: &[u8]) -> io::Result<()> {
        let mut bytes = self.bytes.write().unwrap_or_else(|e| e.into_inner());
        check_bounds(offset, buf.len(), bytes.len() as u64)?;
        let start = offset as usize;
        bytes[start..start + buf.len()].copy_from_slice(buf);
        Ok(())
    }

    fn flush(&self) -> io::Result<()> {
        Ok(())
    }

    fn size(&self) -> u64 {
        self.bytes.read().unwrap_or_else(|e| e.into_inner()).len() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_back_what_was_written() {
        let disk = MemDisk::new(4096);
        disk.write_at(100, b"hello").expect("write");
        let mut buf = [0u8; 5];
        disk.read_at(100, &mut buf).expect("read");
        assert_eq!(&buf, b"hello");
    }

    #[test]
    fn refuses_access_past_the_end() {
        let disk = MemDisk::new(4096);
        assert!(disk.write_at(4095, b"ab").is_err());
        let mut buf = [0u8; 2];
        assert!(disk.read_at(u64::MAX, &mut buf).is_err());
    }
}
