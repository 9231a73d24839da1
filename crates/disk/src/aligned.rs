//! Heap buffers aligned for direct I/O.

use std::alloc::Layout;
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;
use std::sync::{Mutex, PoisonError};

/// Alignment of direct I/O buffers, offsets and lengths: a buffer at such an
/// address whose length is a multiple of it can go to an `O_DIRECT`
/// descriptor as it is.
pub const DIRECT_ALIGN: usize = 4096;

/// Lengths up to this many bytes, multiples of [`DIRECT_ALIGN`], are kept
/// when freed for the next buffer of the same length (the sizes of blocks).
const POOLED_MAX: usize = 64 << 10;

/// Bytes of freed buffers kept for each pooled length.
const POOL_BYTES: usize = 2 << 20;

/// A freed buffer waiting in the pool.
struct Parked(NonNull<u8>);

// SAFETY: a parked buffer is plain memory no one else refers to; it moves
// between threads only through the pool's lock.
unsafe impl Send for Parked {}

/// Freed buffers by length: `POOL[n]` holds those of `(n + 1) * 4 KiB`.
///
/// Why: a block is made by the thread that serves the request, and freed
/// by whichever thread evicts it or finishes writing it. The allocator
/// keeps a freed block in a page of the thread that made it, so a full
/// cache, whose every insert follows an eviction, left pages of blocks
/// part used in the heaps of all the serving threads (about 4 MiB at a
/// 256 MiB cache). A block freed here is the next one made, whichever
/// thread makes it, and the allocator sees the cache's blocks stay put.
static POOL: [Mutex<Vec<Parked>>; POOLED_MAX / DIRECT_ALIGN] =
    [const { Mutex::new(Vec::new()) }; POOLED_MAX / DIRECT_ALIGN];

/// The pool of buffers of `len` bytes, if that length is pooled.
fn pool(len: usize) -> Option<&'static Mutex<Vec<Parked>>> {
    if len == 0 || len > POOLED_MAX || !len.is_multiple_of(DIRECT_ALIGN) {
        return None;
    }
    POOL.get(len / DIRECT_ALIGN - 1)
}

/// A freed buffer of `len` bytes from the pool, if one waits.
fn reuse(len: usize) -> Option<NonNull<u8>> {
    let parked = pool(len)?.lock().unwrap_or_else(PoisonError::into_inner).pop()?;
    Some(parked.0)
}

/// A fixed-length byte buffer on the heap whose first byte is aligned to
/// [`DIRECT_ALIGN`]. File-system blocks live in these, so that a segment
/// write reaches the device without being copied into a bounce buffer.
pub struct AlignedBytes {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: the buffer is plain memory owned by this value alone; shared
// access only reads it.
unsafe impl Send for AlignedBytes {}
// SAFETY: as above; `&AlignedBytes` gives only `&[u8]`.
unsafe impl Sync for AlignedBytes {}

impl AlignedBytes {
    fn layout(len: usize) -> Layout {
        match Layout::from_size_align(len, DIRECT_ALIGN) {
            Ok(layout) => layout,
            // Only a length within DIRECT_ALIGN of usize::MAX fails, and no
            // allocation that large could succeed either.
            Err(_) => std::alloc::handle_alloc_error(Layout::new::<[u8; DIRECT_ALIGN]>()),
        }
    }

    /// `len` zero bytes.
    pub fn zeroed(len: usize) -> AlignedBytes {
        if len == 0 {
            return AlignedBytes { ptr: NonNull::dangling(), len };
        }
        if let Some(ptr) = reuse(len) {
            // SAFETY: a pooled buffer of `len` bytes, owned by no one else.
            unsafe { std::ptr::write_bytes(ptr.as_ptr(), 0, len) };
            return AlignedBytes { ptr, len };
        }
        let layout = Self::layout(len);
        // SAFETY: the layout's size is not zero.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        match NonNull::new(ptr) {
            Some(ptr) => AlignedBytes { ptr, len },
            None => std::alloc::handle_alloc_error(layout),
        }
    }

    /// A copy of `bytes`.
    pub fn copy_of(bytes: &[u8]) -> AlignedBytes {
        if bytes.is_empty() {
            return AlignedBytes { ptr: NonNull::dangling(), len: 0 };
        }
        let ptr = reuse(bytes.len()).unwrap_or_else(|| {
            let layout = Self::layout(bytes.len());
            // SAFETY: the layout's size is not zero.
            let ptr = unsafe { std::alloc::alloc(layout) };
            NonNull::new(ptr).unwrap_or_else(|| std::alloc::handle_alloc_error(layout))
        });
        // SAFETY: `ptr` is an allocation of `bytes.len()` bytes no one else
        // holds, which cannot overlap `bytes`; every byte is written before
        // it is read.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), ptr.as_ptr(), bytes.len()) };
        AlignedBytes { ptr, len: bytes.len() }
    }
}

impl Deref for AlignedBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: `ptr` holds `len` initialized bytes owned by this value
        // (or is dangling with `len` 0, which a slice allows).
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl DerefMut for AlignedBytes {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `deref`, and `&mut self` makes the access unique.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl Clone for AlignedBytes {
    fn clone(&self) -> AlignedBytes {
        AlignedBytes::copy_of(self)
    }
}

impl Drop for AlignedBytes {
    fn drop(&mut self) {
        if let Some(pool) = pool(self.len) {
            let mut free = pool.lock().unwrap_or_else(PoisonError::into_inner);
            if free.len() < POOL_BYTES / self.len {
                free.push(Parked(self.ptr));
                return;
            }
        }
        if self.len > 0 {
            // SAFETY: `ptr` was allocated with exactly this layout.
            unsafe { std::alloc::dealloc(self.ptr.as_ptr(), Self::layout(self.len)) };
        }
    }
}

impl std::fmt::Debug for AlignedBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "AlignedBytes({} bytes)", self.len)
    }
}

/// Whether every buffer starts at an aligned address and has an aligned
/// length: such a list can be written with `O_DIRECT` as it is.
pub fn all_aligned(bufs: &[&[u8]]) -> bool {
    bufs.iter()
        .all(|b| (b.as_ptr() as usize).is_multiple_of(DIRECT_ALIGN) && b.len().is_multiple_of(DIRECT_ALIGN))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_aligned_and_hold_what_was_given() {
        let sizes = [1usize, 512, 4096, 8192, 65536];
        let blocks: Vec<AlignedBytes> = sizes.iter().map(|&n| AlignedBytes::copy_of(&vec![7u8; n])).collect();
        for (b, &n) in blocks.iter().zip(&sizes) {
            assert_eq!(b.as_ptr() as usize % DIRECT_ALIGN, 0);
            assert_eq!(b.len(), n);
            assert!(b.iter().all(|&x| x == 7));
        }
        let mut z = AlignedBytes::zeroed(4096);
        assert!(z.iter().all(|&x| x == 0));
        z[100] = 3;
        let c = z.clone();
        z[100] = 4;
        assert_eq!((c[100], z[100]), (3, 4), "a clone is a copy");
        assert!(AlignedBytes::copy_of(&[]).is_empty());
    }

    /// A freed block is the next one made (the pool), and comes back with
    /// what it is asked to hold, not what it held.
    #[test]
    fn a_freed_block_is_made_again_with_new_contents() {
        // A length no other test uses, so the pool's order is this test's.
        let len = 13 * DIRECT_ALIGN;
        let first = AlignedBytes::copy_of(&vec![9u8; len]);
        let at = first.as_ptr();
        drop(first);
        let zero = AlignedBytes::zeroed(len);
        assert_eq!(zero.as_ptr(), at, "the freed buffer was not reused");
        assert!(zero.iter().all(|&b| b == 0));
        drop(zero);
        let copy = AlignedBytes::copy_of(&vec![5u8; len]);
        assert_eq!((copy.as_ptr(), copy.len()), (at, len));
        assert!(copy.iter().all(|&b| b == 5));
        let other = AlignedBytes::copy_of(&[1u8; 100]);
        assert_eq!(other.len(), 100, "an odd length is not pooled, and still made");
    }

    #[test]
    fn all_aligned_wants_aligned_addresses_and_lengths() {
        let a = AlignedBytes::zeroed(8192);
        assert!(all_aligned(&[&a[..4096], &a[4096..]]));
        assert!(!all_aligned(&[&a[..4095]]));
        assert!(!all_aligned(&[&a[1..4097]]));
        assert!(all_aligned(&[]));
    }
}
