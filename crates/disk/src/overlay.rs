//! A device that never writes to the one beneath it: what a read-only
//! mount stands on. Writes land in memory, in pages laid over the device,
//! and reads see them; nothing ever reaches the device below. A file
//! system mounted over it can still do what a mount must do before it
//! serves — roll the log forward, free the orphans, write a checkpoint —
//! and all of it is forgotten when the overlay is dropped, as a read-only
//! mount of ext4 replays its journal in memory only.

use crate::{check_bounds, BlockDevice};
use std::collections::BTreeMap;
use std::io;
use std::sync::{Arc, Mutex};

/// Bytes a page of the overlay covers.
const PAGE: u64 = 4096;

/// A read-only view of `inner` that takes writes into memory (see the
/// module comment). Flush does nothing: the pages are not meant to last.
pub struct ReadOnlyOverlay {
    inner: Arc<dyn BlockDevice>,
    pages: Mutex<BTreeMap<u64, Box<[u8]>>>,
}

impl ReadOnlyOverlay {
    /// An overlay over `inner`, with nothing written yet.
    pub fn new(inner: Arc<dyn BlockDevice>) -> ReadOnlyOverlay {
        ReadOnlyOverlay { inner, pages: Mutex::new(BTreeMap::new()) }
    }

    /// Bytes the overlay holds in memory (whole pages).
    pub fn held_bytes(&self) -> u64 {
        self.pages.lock().unwrap_or_else(|e| e.into_inner()).len() as u64 * PAGE
    }

    /// The part `[from, to)` of page `page` of the device as it reads now.
    fn page_part(
        &self,
        pages: &BTreeMap<u64, Box<[u8]>>,
        page: u64,
        from: u64,
        to: u64,
    ) -> io::Result<Vec<u8>> {
        let mut buf = vec![0u8; (to - from) as usize];
        match pages.get(&page) {
            Some(bytes) => buf.copy_from_slice(&bytes[from as usize..to as usize]),
            None => self.inner.read_at(page * PAGE + from, &mut buf)?,
        }
        Ok(buf)
    }
}

impl BlockDevice for ReadOnlyOverlay {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        check_bounds(offset, buf.len(), self.size())?;
        let pages = self.pages.lock().unwrap_or_else(|e| e.into_inner());
        let end = offset + buf.len() as u64;
        // Only the pages written over need piecing together; the rest is
        // read from the device in one request.
        if pages.range(offset / PAGE..end.div_ceil(PAGE)).next().is_none() {
            drop(pages);
            return self.inner.read_at(offset, buf);
        }
        let mut at = offset;
        while at < end {
            let page = at / PAGE;
            let to = ((page + 1) * PAGE).min(end);
            let part = self.page_part(&pages, page, at % PAGE, to - page * PAGE)?;
            let start = (at - offset) as usize;
            buf[start..start + part.len()].copy_from_slice(&part);
            at = to;
        }
        Ok(())
    }

    fn write_at(&self, offset: u64, buf: &[u8]) -> io::Result<()> {
        check_bounds(offset, buf.len(), self.size())?;
        let mut pages = self.pages.lock().unwrap_or_else(|e| e.into_inner());
        let end = offset + buf.len() as u64;
        let mut at = offset;
        while at < end {
            let page = at / PAGE;
            let page_start = page * PAGE;
            let page_end = (page_start + PAGE).min(self.size());
            if !pages.contains_key(&page) {
                let whole = self.page_part(&pages, page, 0, page_end - page_start)?;
                pages.insert(page, whole.into_boxed_slice());
            }
            let to = (page_start + PAGE).min(end);
            let src = &buf[(at - offset) as usize..(to - offset) as usize];
            if let Some(bytes) = pages.get_mut(&page) {
                bytes[(at - page_start) as usize..(to - page_start) as usize].copy_from_slice(src);
            }
            at = to;
        }
        Ok(())
    }

    fn flush(&self) -> io::Result<()> {
        Ok(())
    }

    fn read_ahead(&self, offset: u64, len: usize) -> io::Result<()> {
        self.inner.read_ahead(offset, len)
    }

    fn takes_read_ahead(&self) -> bool {
        self.inner.takes_read_ahead()
    }

    fn joins_writes(&self) -> bool {
        self.inner.joins_writes()
    }

    fn size(&self) -> u64 {
        self.inner.size()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MemDisk;

    #[test]
    fn writes_are_seen_through_the_overlay_and_never_reach_the_device() {
        let below = Arc::new(MemDisk::from_bytes((0..20_000u32).map(|i| i as u8).collect()));
        let original = below.snapshot();
        let overlay = ReadOnlyOverlay::new(below.clone());
        // A write across a page boundary, not aligned at either end.
        overlay.write_at(4000, &[0xAA; 300]).expect("write");
        overlay.write_at(19_990, &[0xBB; 10]).expect("write at the end");
        overlay.flush().expect("flush");
        assert_eq!(below.snapshot(), original, "nothing reached the device");
        let mut seen = vec![0u8; 20_000];
        overlay.read_at(0, &mut seen).expect("read");
        let mut want = original.clone();
        want[4000..4300].fill(0xAA);
        want[19_990..].fill(0xBB);
        assert_eq!(seen, want);
        let mut part = [0u8; 8];
        overlay.read_at(4296, &mut part).expect("read across the written edge");
        assert_eq!(part, [0xAA, 0xAA, 0xAA, 0xAA, want[4300], want[4301], want[4302], want[4303]]);
        assert_eq!(overlay.held_bytes(), 3 * PAGE, "two pages for the first write, one for the second");
        assert!(overlay.write_at(19_999, &[0; 2]).is_err(), "past the end");
    }
}
