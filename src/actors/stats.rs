//! Statistics: the one shape of an actor's plain counters (`counters!`),
//! and what the workers keep without allocating: a log-linear latency
//! histogram and counts by status.

use crate::wire::status::NrtStatus;

/// A struct of named `u64` counters, each documented: `Clone`, `Copy`,
/// `Debug`, `Default`, `PartialEq`, and `merge`, which adds another's
/// counters field by field (one core's into a run's total). The shape every
/// actor's plain statistics take.
macro_rules! counters {
    ($(#[$m:meta])* pub struct $name:ident { $($(#[$fm:meta])* pub $f:ident,)* }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        pub struct $name {
            $($(#[$fm])* pub $f: u64,)*
        }

        impl $name {
            /// Add another's counters, field by field.
            pub fn merge(&mut self, o: &$name) {
                $(self.$f += o.$f;)*
            }
        }
    };
}
pub(crate) use counters;

/// Sub-buckets per power of two (relative error of a quantile <= 1/32).
const SUB: usize = 32;
const SUB_BITS: u32 = 5;
/// Powers of two covered (values up to 2^48 ns, about 3 days).
const MAJORS: usize = 48;

/// A latency histogram over nanoseconds: 32 linear sub-buckets per power of
/// two, so a quantile is reported within 1/32 (3.1%) of the true value;
/// `max` is exact. Preallocated; `record` never allocates.
#[derive(Clone)]
pub struct LatencyHist {
    buckets: Box<[u64]>,
    count: u64,
    max: u64,
    sum: u128,
}

debug_fields!([] LatencyHist, |s| count = s.count, max = s.max);

/// An empty histogram.
impl Default for LatencyHist {
    fn default() -> Self {
        LatencyHist {
            buckets: vec![0; (MAJORS + 1) * SUB].into_boxed_slice(),
            count: 0,
            max: 0,
            sum: 0,
        }
    }
}

impl LatencyHist {
    fn bucket(v: u64) -> usize {
        if v < SUB as u64 {
            return v as usize;
        }
        let major = 63 - v.leading_zeros(); // >= SUB_BITS
        let shift = major - SUB_BITS;
        let sub = ((v >> shift) as usize) & (SUB - 1);
        let idx = (major - SUB_BITS + 1) as usize * SUB + sub;
        idx.min(self::MAJORS * SUB + SUB - 1)
    }

    /// The largest value that falls in bucket `i`.
    fn upper(i: usize) -> u64 {
        if i < SUB {
            return i as u64;
        }
        let major = (i / SUB) as u32 + SUB_BITS - 1;
        let sub = (i % SUB) as u64;
        let shift = major - SUB_BITS;
        ((SUB as u64 + sub + 1) << shift) - 1
    }

    /// Record one value.
    #[inline]
    pub fn record(&mut self, v: u64) {
        self.buckets[Self::bucket(v)] += 1;
        self.count += 1;
        self.max = self.max.max(v);
        self.sum += u128::from(v);
    }

    /// Values recorded.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The largest value (exact).
    pub fn max(&self) -> u64 {
        self.max
    }

    /// The sum of every value (exact).
    pub fn sum(&self) -> u128 {
        self.sum
    }

    /// The `q`-quantile (0.0..=1.0): the upper bound of the bucket holding
    /// it, capped by the exact maximum. 0 when empty.
    pub fn quantile(&self, q: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        let rank = ((q.clamp(0.0, 1.0) * self.count as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (i, &n) in self.buckets.iter().enumerate() {
            seen += n;
            if seen >= rank {
                return Self::upper(i).min(self.max);
            }
        }
        self.max
    }

    /// Add another histogram's counts.
    pub fn merge(&mut self, o: &LatencyHist) {
        for (a, b) in self.buckets.iter_mut().zip(o.buckets.iter()) {
            *a += b;
        }
        self.count += o.count;
        self.max = self.max.max(o.max);
        self.sum += o.sum;
    }
}

/// Counts by `NRT_STATUS`, in first-seen order (at most 32 distinct
/// statuses; more are lumped under the last entry's neighbour `FAILURE`).
#[derive(Clone, Debug, Default)]
pub struct StatusCounts {
    entries: heapless::Vec<(NrtStatus, u64), 32>,
}

impl StatusCounts {
    /// Count one `s`.
    pub fn add(&mut self, s: NrtStatus, n: u64) {
        if let Some(e) = self.entries.iter_mut().find(|e| e.0 == s) {
            e.1 += n;
        } else if self.entries.push((s, n)).is_err() {
            if let Some(e) = self.entries.last_mut() {
                e.1 += n;
            }
        }
    }

    /// The count of `s`.
    pub fn get(&self, s: NrtStatus) -> u64 {
        self.entries.iter().find(|e| e.0 == s).map_or(0, |e| e.1)
    }

    /// Every count, whatever its status.
    pub fn total(&self) -> u64 {
        self.entries.iter().map(|e| e.1).sum()
    }

    /// Every (status, count), sorted by code.
    pub fn sorted(&self) -> Vec<(NrtStatus, u64)> {
        let mut v: Vec<_> = self.entries.iter().copied().collect();
        v.sort_by_key(|e| e.0.code());
        v
    }

    /// Add another set of counts.
    pub fn merge(&mut self, o: &StatusCounts) {
        for &(s, n) in &o.entries {
            self.add(s, n);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_monotone_and_tight() {
        let mut last = 0;
        for v in (0..100_000u64).chain([1 << 20, (1 << 40) + 12345, u64::MAX >> 16]) {
            let b = LatencyHist::bucket(v);
            assert!(b >= last || v > 100_000);
            last = b;
            let up = LatencyHist::upper(b);
            assert!(up >= v, "{v} -> bucket {b} upper {up}");
            assert!(up - v <= v / 32 + 1, "{v} -> {up}");
        }
    }

    #[test]
    fn quantiles_are_within_the_bucket_error() {
        let mut h = LatencyHist::default();
        for v in 1..=10_000u64 {
            h.record(v * 100);
        }
        let p50 = h.quantile(0.5);
        assert!((500_000..=500_000 + 500_000 / 32).contains(&p50), "{p50}");
        let p99 = h.quantile(0.99);
        assert!((990_000..=990_000 + 990_000 / 32).contains(&p99), "{p99}");
        assert_eq!(h.quantile(1.0), 1_000_000);
        assert_eq!(h.max(), 1_000_000);
        assert_eq!(h.sum() / u128::from(h.count()), 500_050, "the mean");
        let mut g = LatencyHist::default();
        g.merge(&h);
        assert_eq!(g.count(), 10_000);
        assert_eq!(LatencyHist::default().quantile(0.5), 0);
    }

    #[test]
    fn status_counts() {
        let mut c = StatusCounts::default();
        c.add(NrtStatus::TIMEOUT, 2);
        c.add(NrtStatus::SUCCESS, 5);
        c.add(NrtStatus::TIMEOUT, 1);
        assert_eq!(c.get(NrtStatus::TIMEOUT), 3);
        assert_eq!(
            c.sorted(),
            vec![(NrtStatus::SUCCESS, 5), (NrtStatus::TIMEOUT, 3)]
        );
        assert_eq!(c.total(), 8);
    }
}
