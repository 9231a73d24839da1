//! The simulated disk's contents, held sparsely: only chunks that have been
//! written take memory, so a 9 GB drive costs what was written to it.

use std::collections::HashMap;

/// Bytes per chunk of the store.
const CHUNK: u64 = 64 * 1024;

/// A byte array of a fixed size whose unwritten bytes read as zero.
///
/// Invariant: every key `k` of `chunks` satisfies `k * CHUNK < size`; each
/// chunk is `CHUNK` bytes (the last may extend past `size`, unused).
#[derive(Debug, Default)]
pub(crate) struct SparseStore {
    chunks: HashMap<u64, Box<[u8]>>,
}

impl SparseStore {
    /// Copies the bytes at `offset` into `buf`. The caller has checked the
    /// bounds.
    pub fn read(&self, offset: u64, buf: &mut [u8]) {
        let mut done = 0usize;
        while done < buf.len() {
            let at = offset + done as u64;
            let within = (at % CHUNK) as usize;
            let n = (CHUNK as usize - within).min(buf.len() - done);
            let out = &mut buf[done..done + n];
            match self.chunks.get(&(at / CHUNK)) {
                Some(chunk) => out.copy_from_slice(&chunk[within..within + n]),
                None => out.fill(0),
            }
            done += n;
        }
    }

    /// Stores `buf` at `offset`. The caller has checked the bounds.
    pub fn write(&mut self, offset: u64, buf: &[u8]) {
        let mut done = 0usize;
        while done < buf.len() {
            let at = offset + done as u64;
            let within = (at % CHUNK) as usize;
            let n = (CHUNK as usize - within).min(buf.len() - done);
            let chunk =
                self.chunks.entry(at / CHUNK).or_insert_with(|| vec![0; CHUNK as usize].into_boxed_slice());
            chunk[within..within + n].copy_from_slice(&buf[done..done + n]);
            done += n;
        }
    }

    /// Bytes of memory the contents take.
    pub fn resident_bytes(&self) -> u64 {
        self.chunks.len() as u64 * CHUNK
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unwritten_bytes_read_as_zero_and_writes_cross_chunks() {
        let mut store = SparseStore::default();
        let mut buf = vec![1u8; 10];
        store.read(5 * CHUNK, &mut buf);
        assert!(buf.iter().all(|&b| b == 0));
        let data: Vec<u8> = (0..200u8).collect();
        store.write(CHUNK - 100, &data);
        let mut back = vec![0u8; 200];
        store.read(CHUNK - 100, &mut back);
        assert_eq!(back, data);
        assert_eq!(store.resident_bytes(), 2 * CHUNK);
    }
}
