//! A fast non-cryptographic hasher (the Fx hash of rustc, with a murmur3 finalizer) for the recorder's per-call maps,
//! which sit on the hot path of every event. Keys are call ids of this run's own writers.

use std::hash::{BuildHasherDefault, Hasher};

#[derive(Debug, Default, Clone, Copy)]
pub struct FxHasher(u64);

const K: u64 = 0x517c_c1b7_2722_0a95;

impl FxHasher {
    /// A hasher starting from `seed`: two seeds give two independent hashes of one key.
    pub fn seeded(seed: u64) -> FxHasher {
        FxHasher(seed)
    }

    #[inline]
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(K);
    }
}

impl Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.add(u64::from_le_bytes(c.try_into().expect("8 bytes")));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut buf = [0u8; 8];
            buf[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(buf));
        }
    }

    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(i as u64);
    }

    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.add(i as u64);
    }

    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }

    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }

    /// Fx alone leaves the low bits (which pick the bucket) depending only on the low input
    /// bits, so ids differing late in a chunk collide; the murmur3 finalizer spreads them.
    #[inline]
    fn finish(&self) -> u64 {
        let mut h = self.0;
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        h ^ (h >> 33)
    }
}

pub type FxBuild = BuildHasherDefault<FxHasher>;
pub type FxHashMap<K, V> = std::collections::HashMap<K, V, FxBuild>;
pub type FxHashSet<K> = std::collections::HashSet<K, FxBuild>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distinct_keys_stay_distinct() {
        let mut m: FxHashMap<(u32, String), u32> = FxHashMap::default();
        for i in 0..10_000u32 {
            m.insert((i % 7, format!("t{i}-c{}", i % 3)), i);
        }
        assert_eq!(m.len(), 10_000);
        assert_eq!(m[&(3, "t10-c1".to_string())], 10);
    }

    #[test]
    fn low_bits_spread_for_ids_that_differ_late() {
        use std::hash::BuildHasher;
        let b = FxBuild::default();
        let buckets: std::collections::HashSet<u64> =
            (0..4096).map(|i| b.hash_one(format!("t{i:07}-c0")) & 0xfff).collect();
        assert!(buckets.len() > 2000, "only {} of 4096 buckets used", buckets.len());
    }
}
