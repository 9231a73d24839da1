//! A fixed-length bitmap stored as it is on disk: bit `i` is bit `i % 8` of
//! byte `i / 8` (least significant first, as 4.4BSD's `setbit`/`isset`).

/// A bitmap of `len` bits. Bits at `len` and beyond (in the last byte) are
/// always zero.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bitmap {
    bytes: Vec<u8>,
    len: u32,
}

impl Bitmap {
    /// `len` clear bits.
    pub fn new(len: u32) -> Bitmap {
        Bitmap { bytes: vec![0; (len as usize).div_ceil(8)], len }
    }

    /// A bitmap of `len` bits read from `bytes`, or `None` when `bytes` is
    /// too short or sets a bit at `len` or beyond.
    pub fn from_bytes(bytes: &[u8], len: u32) -> Option<Bitmap> {
        let n = (len as usize).div_ceil(8);
        let bytes = bytes.get(..n)?.to_vec();
        let map = Bitmap { bytes, len };
        let tail = len % 8;
        if tail != 0 && map.bytes[n - 1] >> tail != 0 {
            return None;
        }
        Some(map)
    }

    /// The stored bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Bits in the map.
    pub fn len(&self) -> u32 {
        self.len
    }

    /// Whether the map has no bits.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether bit `i` is set; bits past the end read as clear.
    pub fn get(&self, i: u32) -> bool {
        i < self.len && self.bytes[(i / 8) as usize] & (1 << (i % 8)) != 0
    }

    /// Sets bit `i` (which must be inside the map).
    pub fn set(&mut self, i: u32) {
        debug_assert!(i < self.len);
        self.bytes[(i / 8) as usize] |= 1 << (i % 8);
    }

    /// Clears bit `i` (which must be inside the map).
    pub fn clear(&mut self, i: u32) {
        debug_assert!(i < self.len);
        self.bytes[(i / 8) as usize] &= !(1 << (i % 8));
    }

    /// Bits set.
    pub fn count_ones(&self) -> u32 {
        self.bytes.iter().map(|b| b.count_ones()).sum()
    }

    /// The first bit with value `value` at or after `start`, searching to
    /// the end and then from 0 (a rotor search).
    pub fn find_wrapping(&self, start: u32, value: bool) -> Option<u32> {
        let start = if start >= self.len { 0 } else { start };
        self.find_in(start, self.len, value).or_else(|| self.find_in(0, start, value))
    }

    /// The `n` bits (at most 16) from bit `start`, bit `start` least
    /// significant; bits past the end read as zero.
    pub fn bits(&self, start: u32, n: u32) -> u32 {
        debug_assert!(n <= 16);
        let first = (start / 8) as usize;
        let word = (0..3)
            .fold(0u32, |w, k| w | u32::from(self.bytes.get(first + k).copied().unwrap_or(0)) << (8 * k));
        (word >> (start % 8)) & ((1u32 << n) - 1)
    }

    /// The first bit with value `value` in `from..to`.
    pub fn find_in(&self, from: u32, to: u32, value: bool) -> Option<u32> {
        let skip = if value { 0x00 } else { 0xff };
        let mut i = from;
        while i < to.min(self.len) {
            // Whole words, then whole bytes, that cannot hold the value are
            // skipped at once: a nearly full group's map is searched for a
            // free fragment on every allocation.
            if i.is_multiple_of(64) {
                let at = (i / 8) as usize;
                if self.bytes.get(at..at + 8).is_some_and(|word| word.iter().all(|&b| b == skip)) {
                    i += 64;
                    continue;
                }
            }
            if i.is_multiple_of(8) && self.bytes[(i / 8) as usize] == skip {
                i += 8;
                continue;
            }
            if self.get(i) == value {
                return Some(i);
            }
            i += 1;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_round_trip_through_bytes() {
        let mut m = Bitmap::new(13);
        m.set(0);
        m.set(12);
        assert_eq!(m.as_bytes(), &[0x01, 0x10]);
        assert_eq!(Bitmap::from_bytes(m.as_bytes(), 13), Some(m.clone()));
        assert_eq!(m.count_ones(), 2);
        m.clear(0);
        assert!(!m.get(0) && m.get(12) && !m.get(200));
    }

    #[test]
    fn bits_past_the_end_are_refused() {
        assert_eq!(Bitmap::from_bytes(&[0x00, 0x20], 13), None);
        assert_eq!(Bitmap::from_bytes(&[0x00], 13), None);
    }

    #[test]
    fn search_wraps_around_from_the_start_point() {
        let mut m = Bitmap::new(40);
        m.set(3);
        m.set(30);
        assert_eq!(m.find_wrapping(4, true), Some(30));
        assert_eq!(m.find_wrapping(31, true), Some(3));
        assert_eq!(m.find_in(4, 30, true), None);
        assert_eq!(m.find_wrapping(3, false), Some(4));
    }

    #[test]
    fn a_search_past_whole_words_finds_the_first_bit_after_them() {
        let mut m = Bitmap::new(1000);
        for i in [5, 130, 999] {
            m.set(i);
        }
        assert_eq!(m.find_in(6, 1000, true), Some(130));
        assert_eq!(m.find_in(131, 1000, true), Some(999));
        assert_eq!(m.find_in(131, 999, true), None);
        let full = Bitmap::from_bytes(&[0xff; 125], 1000).expect("a whole map");
        assert_eq!(full.find_in(0, 1000, false), None);
        let mut one_clear = full.clone();
        one_clear.clear(700);
        assert_eq!(one_clear.find_in(3, 1000, false), Some(700));
    }

    #[test]
    fn bits_are_read_across_byte_boundaries() {
        let mut m = Bitmap::new(20);
        for i in [6, 7, 9, 19] {
            m.set(i);
        }
        assert_eq!(m.bits(6, 4), 0b1011);
        assert_eq!(m.bits(8, 8), 0b10);
        assert_eq!(m.bits(16, 8), 0b1000, "bits past the end read as zero");
        assert_eq!(m.bits(0, 6), 0);
    }
}
