//! Heap buffers aligned for direct I/O.

use std::alloc::Layout;
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

/// Alignment of direct I/O buffers, offsets and lengths: a buffer at such an
/// address whose length is a multiple of it can go to an `O_DIRECT`
/// descriptor as it is.
pub const DIRECT_ALIGN: usize = 4096;

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
        let layout = Self::layout(bytes.len());
        // SAFETY: the layout's size is not zero.
        let ptr = unsafe { std::alloc::alloc(layout) };
        let Some(ptr) = NonNull::new(ptr) else { std::alloc::handle_alloc_error(layout) };
        // SAFETY: `ptr` is a fresh allocation of `bytes.len()` bytes, which
        // cannot overlap `bytes`; every byte is written before it is read.
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

    #[test]
    fn all_aligned_wants_aligned_addresses_and_lengths() {
        let a = AlignedBytes::zeroed(8192);
        assert!(all_aligned(&[&a[..4096], &a[4096..]]));
        assert!(!all_aligned(&[&a[..4095]]));
        assert!(!all_aligned(&[&a[1..4097]]));
        assert!(all_aligned(&[]));
    }
}
