//! What group commit costs, counted where it happens: how long each group's write and
//! each fdatasync took, and how many records and bytes each group carried. For
//! `/metrics` (`jetcore_store_append_seconds`, `_fdatasync_seconds`,
//! `_group_commit_records`, `_group_commit_bytes`).
//!
//! One [`FlushStats`] per shard and storage kind, shared (`Rc`) by the logs of that
//! shard's streams, so the counters only ever grow (a deleted
//! stream takes nothing with it). Cells, not atomics: only the owning shard writes them,
//! and other threads see them only as a [`FlushCounts`] copy the shard makes when asked.
//!
//! Recording a sample costs a leading-zeros count and three cell updates: buckets are
//! fixed powers of two, nothing is allocated, and the clock is read by the caller once
//! around the write and once around the fdatasync.

use std::cell::Cell;
use std::time::Duration;

/// Buckets a histogram holds at most (plus one for values past the last bound).
pub const POW2_BUCKETS_MAX: usize = 32;

/// Latency buckets: 2^10 ns (≈1 µs) up to 2^33 ns (≈8.6 s).
const LATENCY_FIRST_EXPONENT: u32 = 10;
const LATENCY_BUCKETS: usize = 24;
/// Records per group: 1 up to 2^16.
const RECORDS_FIRST_EXPONENT: u32 = 0;
const RECORDS_BUCKETS: usize = 17;
/// Bytes per group: 512 B up to 2^24 B (16 MiB; a group holds at most
/// `GROUP_COMMIT_BYTES_MAX` plus one record).
const BYTES_FIRST_EXPONENT: u32 = 9;
const BYTES_BUCKETS: usize = 16;

const _: () = assert!(LATENCY_BUCKETS <= POW2_BUCKETS_MAX);
const _: () = assert!(RECORDS_BUCKETS <= POW2_BUCKETS_MAX);
const _: () = assert!(BYTES_BUCKETS <= POW2_BUCKETS_MAX);
const BYTES_LAST_BOUND: usize = 1 << (BYTES_FIRST_EXPONENT as usize + BYTES_BUCKETS - 1);
const _: () = assert!(BYTES_LAST_BOUND >= crate::limits::GROUP_COMMIT_BYTES_MAX);

/// A histogram over fixed power-of-two buckets: bucket `i` counts values `v` with
/// `2^(first + i - 1) < v <= 2^(first + i)` (bucket 0 everything up to `2^first`), the
/// last slot counts values past the last bound.
pub struct Pow2Histogram {
    first_exponent: u32,
    bucket_count: usize,
    counts: [Cell<u64>; POW2_BUCKETS_MAX + 1],
    sum: Cell<u64>,
}

impl Pow2Histogram {
    pub fn new(first_exponent: u32, bucket_count: usize) -> Pow2Histogram {
        assert!(bucket_count <= POW2_BUCKETS_MAX && first_exponent as usize + bucket_count < 64);
        Pow2Histogram { first_exponent, bucket_count, counts: std::array::from_fn(|_| Cell::new(0)), sum: Cell::new(0) }
    }

    pub fn record(&self, value: u64) {
        let exponent = if value <= 1 { 0 } else { u64::BITS - (value - 1).leading_zeros() };
        let index = (exponent.saturating_sub(self.first_exponent) as usize).min(self.bucket_count);
        let count = &self.counts[index];
        count.set(count.get() + 1);
        self.sum.set(self.sum.get().wrapping_add(value));
    }

    pub fn counts(&self) -> Pow2Counts {
        Pow2Counts {
            first_exponent: self.first_exponent,
            buckets: self.counts[..self.bucket_count].iter().map(Cell::get).collect(),
            overflow: self.counts[self.bucket_count].get(),
            sum: self.sum.get(),
        }
    }
}

/// A copy of a [`Pow2Histogram`], to send off the shard.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Pow2Counts {
    pub first_exponent: u32,
    /// Count per bucket (not cumulative); bucket `i`'s upper bound is `2^(first + i)`.
    pub buckets: Vec<u64>,
    /// Values past the last bound.
    pub overflow: u64,
    pub sum: u64,
}

impl Pow2Counts {
    /// The upper bound of bucket `index`.
    pub fn bound(&self, index: usize) -> u64 {
        1u64 << (self.first_exponent as usize + index)
    }

    pub fn count(&self) -> u64 {
        self.buckets.iter().sum::<u64>() + self.overflow
    }
}

/// Group-commit counters of one shard's logs of one storage kind.
pub struct FlushStats {
    /// Nanoseconds per group write (the group's aligned write).
    pub write_nanos: Pow2Histogram,
    /// Nanoseconds per fdatasync round (every file written since the last one).
    pub sync_nanos: Pow2Histogram,
    /// Records per group written.
    pub group_records: Pow2Histogram,
    /// Bytes per group written, padding to the block included.
    pub group_bytes: Pow2Histogram,
    /// Groups made durable by one blocking write on the shard's thread
    /// (`store/blocking_write.rs`).
    pub blocking_writes: Cell<u64>,
}

impl Default for FlushStats {
    fn default() -> Self {
        FlushStats {
            write_nanos: Pow2Histogram::new(LATENCY_FIRST_EXPONENT, LATENCY_BUCKETS),
            sync_nanos: Pow2Histogram::new(LATENCY_FIRST_EXPONENT, LATENCY_BUCKETS),
            group_records: Pow2Histogram::new(RECORDS_FIRST_EXPONENT, RECORDS_BUCKETS),
            group_bytes: Pow2Histogram::new(BYTES_FIRST_EXPONENT, BYTES_BUCKETS),
            blocking_writes: Cell::new(0),
        }
    }
}

impl FlushStats {
    /// A group of `records` records, `bytes` bytes, was written in `took`.
    pub fn note_write(&self, records: u32, bytes: usize, took: Duration) {
        self.write_nanos.record(nanos(took));
        self.group_records.record(u64::from(records));
        self.group_bytes.record(bytes as u64);
    }

    /// The group just noted was written by a blocking call.
    pub fn note_blocking(&self) {
        self.blocking_writes.set(self.blocking_writes.get() + 1);
    }

    /// An fdatasync round took `took`.
    pub fn note_sync(&self, took: Duration) {
        self.sync_nanos.record(nanos(took));
    }

    pub fn counts(&self) -> FlushCounts {
        FlushCounts {
            write_nanos: self.write_nanos.counts(),
            sync_nanos: self.sync_nanos.counts(),
            group_records: self.group_records.counts(),
            group_bytes: self.group_bytes.counts(),
            blocking_writes: self.blocking_writes.get(),
        }
    }
}

fn nanos(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}

/// A copy of a [`FlushStats`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FlushCounts {
    pub write_nanos: Pow2Counts,
    pub sync_nanos: Pow2Counts,
    pub group_records: Pow2Counts,
    pub group_bytes: Pow2Counts,
    pub blocking_writes: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_land_in_the_bucket_of_their_power_of_two() {
        let histogram = Pow2Histogram::new(0, 4); // bounds 1, 2, 4, 8
        for value in [0, 1, 2, 3, 4, 5, 8, 9, 1000] {
            histogram.record(value);
        }
        let counts = histogram.counts();
        assert_eq!(counts.buckets, vec![2, 1, 2, 2]);
        assert_eq!(counts.overflow, 2);
        assert_eq!(counts.sum, 1032);
        assert_eq!(counts.count(), 9);
        assert_eq!((counts.bound(0), counts.bound(3)), (1, 8));
    }

    #[test]
    fn first_bucket_takes_everything_up_to_its_bound() {
        let histogram = Pow2Histogram::new(10, 3); // bounds 1024, 2048, 4096
        for value in [1, 1024, 1025, 4096, 4097] {
            histogram.record(value);
        }
        let counts = histogram.counts();
        assert_eq!(counts.buckets, vec![2, 1, 1]);
        assert_eq!(counts.overflow, 1);
    }

    #[test]
    fn a_group_write_counts_its_records_bytes_and_time() {
        let stats = FlushStats::default();
        stats.note_write(3, 4096, Duration::from_micros(20));
        stats.note_write(5, 8192, Duration::from_micros(40));
        stats.note_sync(Duration::from_micros(200));
        let counts = stats.counts();
        assert_eq!((counts.group_records.sum, counts.group_records.count()), (8, 2));
        assert_eq!(counts.group_bytes.sum, 12_288);
        assert_eq!(counts.write_nanos.sum, 60_000);
        assert_eq!((counts.sync_nanos.count(), counts.sync_nanos.sum), (1, 200_000));
        // 200 µs = 200_000 ns lies in (2^17, 2^18]: bucket 18 - 10.
        assert_eq!(counts.sync_nanos.buckets[8], 1);
    }
}
