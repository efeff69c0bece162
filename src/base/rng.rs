//! A small seeded generator (SplitMix64): same seed, same workload, on every machine.

#[derive(Debug, Clone)]
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub(crate) fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Exponential with the given mean.
    pub(crate) fn exp(&mut self, mean: f64) -> f64 {
        -mean * (1.0 - self.unit()).ln()
    }
}

/// `n` seeds from `base`, one for each repeat of a case: the first is `base` itself (a
/// repeat of one is the plain run), the others drawn from a generator seeded with it.
pub(crate) fn seeds(base: u64, n: u32) -> Vec<u64> {
    let mut rng = Rng::new(base);
    std::iter::once(base).chain((1..n).map(|_| rng.next_u64())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_and_in_range() {
        let mut a = Rng::new(7);
        let mut b = Rng::new(7);
        for _ in 0..1000 {
            let x = a.unit();
            assert_eq!(x, b.unit());
            assert!((0.0..1.0).contains(&x));
        }
        let mut r = Rng::new(1);
        let mean: f64 = (0..100_000).map(|_| r.exp(2.0)).sum::<f64>() / 100_000.0;
        assert!((mean - 2.0).abs() < 0.05, "mean {mean}");
    }

    #[test]
    fn seeds_start_with_the_base_and_differ() {
        let s = seeds(7, 5);
        assert_eq!(s[0], 7);
        assert_eq!(s, seeds(7, 5));
        let distinct: std::collections::BTreeSet<_> = s.iter().collect();
        assert_eq!(distinct.len(), 5);
        assert_eq!(seeds(7, 1), [7]);
    }
}
