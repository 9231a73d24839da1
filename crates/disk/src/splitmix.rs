//! SplitMix64 (Steele, Lea and Flood 2014), the one hand-written generator
//! of the lab and the test tools, kept beside `rand` on purpose: what it
//! draws must never change, and `rand`'s generators do not promise to keep
//! their sequences from one version to the next. The aging streams draw
//! from it (the aged experiments' committed results, `docs/lab/results.json`,
//! depend on its exact sequence), a simulated disk's rotational phase is
//! its first draw for the run's seed, the crash explorer's seeds name the
//! crash states it chooses by it, and the command's tests fill files from
//! it, so that the contents of their images stay the same. Change nothing
//! here without running the lab again.

/// A SplitMix64 stream: small, fast, and fixed.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// The stream that `seed` starts.
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64(seed)
    }

    /// The next 64 bits of the stream.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        mix(self.0)
    }

    /// Uniform in `0..n` (`n > 0`; 0 counts as 1), by multiplying rather
    /// than by a remainder, which favours small values.
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n.max(1))) >> 64) as u64
    }
}

/// SplitMix64's output function: spreads a number's bits over all 64, so
/// that nearby inputs give unrelated outputs.
pub fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference values of the published algorithm for seed 1234567:
    /// the stream must never drift from them.
    #[test]
    fn the_stream_is_splitmix64s() {
        let mut rng = SplitMix64::new(1_234_567);
        let first: Vec<u64> = (0..3).map(|_| rng.next_u64()).collect();
        assert_eq!(first, [6_457_827_717_110_365_317, 3_203_168_211_198_807_973, 9_817_491_932_198_370_423]);
    }
}
