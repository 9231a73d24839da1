//! Little-endian field access with bounds checks, and CRC32C.
//!
//! Every on-disk structure is read through [`Decoder`], whose getters fail
//! instead of panicking when a field would lie outside the buffer.

/// CRC32C (Castagnoli) of `bytes`.
pub fn crc32c(bytes: &[u8]) -> u32 {
    crc32c::crc32c(bytes)
}

/// CRC32C of `bytes` continuing from a previous value.
pub fn crc32c_append(crc: u32, bytes: &[u8]) -> u32 {
    crc32c::crc32c_append(crc, bytes)
}

/// Reads little-endian fields from a byte slice; every read is bounds-checked.
#[derive(Clone, Copy)]
pub struct Decoder<'a> {
    bytes: &'a [u8],
}

/// A field lay outside the buffer being decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutOfBounds {
    /// The offset of the field.
    pub offset: usize,
}

macro_rules! getter {
    ($name:ident, $ty:ty) => {
        /// Reads a little-endian value at `offset`.
        pub fn $name(&self, offset: usize) -> Result<$ty, OutOfBounds> {
            const N: usize = std::mem::size_of::<$ty>();
            let end = offset.checked_add(N).ok_or(OutOfBounds { offset })?;
            let slice = self.bytes.get(offset..end).ok_or(OutOfBounds { offset })?;
            let mut arr = [0u8; N];
            arr.copy_from_slice(slice);
            Ok(<$ty>::from_le_bytes(arr))
        }
    };
}

impl<'a> Decoder<'a> {
    /// A decoder over `bytes`.
    pub fn new(bytes: &'a [u8]) -> Decoder<'a> {
        Decoder { bytes }
    }
    getter!(u8, u8);
    getter!(u16, u16);
    getter!(u32, u32);
    getter!(u64, u64);
    getter!(i64, i64);

    /// The `len` bytes at `offset`.
    pub fn bytes(&self, offset: usize, len: usize) -> Result<&'a [u8], OutOfBounds> {
        let end = offset.checked_add(len).ok_or(OutOfBounds { offset })?;
        self.bytes.get(offset..end).ok_or(OutOfBounds { offset })
    }
}

/// Writes little-endian fields into a buffer the caller sized correctly:
/// encoding is never given untrusted lengths, so out-of-range offsets are a
/// programming error and panic.
pub struct Encoder<'a> {
    bytes: &'a mut [u8],
}

macro_rules! putter {
    ($name:ident, $ty:ty) => {
        /// Writes a little-endian value at `offset`.
        pub fn $name(&mut self, offset: usize, value: $ty) {
            let b = value.to_le_bytes();
            self.bytes[offset..offset + b.len()].copy_from_slice(&b);
        }
    };
}

impl<'a> Encoder<'a> {
    /// An encoder over `bytes`.
    pub fn new(bytes: &'a mut [u8]) -> Encoder<'a> {
        Encoder { bytes }
    }
    putter!(u8, u8);
    putter!(u16, u16);
    putter!(u32, u32);
    putter!(u64, u64);
    putter!(i64, i64);

    /// Copies `value` to `offset`.
    pub fn bytes(&mut self, offset: usize, value: &[u8]) {
        self.bytes[offset..offset + value.len()].copy_from_slice(value);
    }
}

/// CRC32C of `block` computed as if the four bytes at `field` were zero: how
/// a structure checksums itself while holding its own checksum.
pub fn crc32c_skipping(block: &[u8], field: usize) -> u32 {
    let head = &block[..field.min(block.len())];
    let tail_start = (field + 4).min(block.len());
    let crc = crc32c_append(0, head);
    let crc = crc32c_append(crc, &[0u8; 4][..(tail_start - head.len())]);
    crc32c_append(crc, &block[tail_start..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decoder_refuses_fields_past_the_end() {
        let bytes = [1u8, 0, 0, 0, 2];
        let d = Decoder::new(&bytes);
        assert_eq!(d.u32(0), Ok(1));
        assert_eq!(d.u32(2), Err(OutOfBounds { offset: 2 }));
        assert_eq!(d.u64(usize::MAX), Err(OutOfBounds { offset: usize::MAX }));
    }

    #[test]
    fn skipping_crc_equals_crc_with_zeroed_field() {
        let mut block = vec![7u8; 64];
        block[8..12].copy_from_slice(&[1, 2, 3, 4]);
        let skipped = crc32c_skipping(&block, 8);
        block[8..12].copy_from_slice(&[0; 4]);
        assert_eq!(skipped, crc32c(&block));
    }
}
