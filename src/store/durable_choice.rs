//! How a small group is made durable under sync `always`: one O_DSYNC write, or a write
//! and then an fdatasync — whichever this shard has measured to be faster lately.
//!
//! Neither wins everywhere. On one machine of this project's (perf/latency.md, "One
//! durable operation per group") the O_DSYNC write took 2.8 ms under load where the pair
//! took 113 µs: the cache flush of an O_DSYNC write runs in a block-layer kernel worker
//! that a busy CPU served late. On another, quiet, the O_DSYNC write took 306 µs per
//! publish end to end against the pair's 379 µs, and half the server CPU per message (one
//! io_uring operation, no io-wq worker, no second return to the shard). A fixed choice
//! loses by 20 % on one machine or 20× on the other, so each shard keeps a running
//! estimate of both and uses the faster, trying the other one now and then
//! ([`EXPLORE_AFTER`], [`EXPLORE_GROUPS_MIN`]) so that a change of load or disk is seen.
//!
//! Both ways are equally durable; only the latency and the CPU differ. The choice is per
//! shard (one thread, one estimate for all its streams, which share the store's disk).
//! `JETCORE_DURABLE_WRITE=dsync` or `=fdatasync` fixes it, for measurements. Whether the
//! one write may block the shard's thread is `store/blocking_write.rs`'s call.

use std::cell::RefCell;
use std::time::{Duration, Instant};

/// How long the way not chosen goes untried before a group tries it again.
pub const EXPLORE_AFTER: Duration = Duration::from_secs(5);
/// And how many groups, at least, the chosen way writes between two tries: at a high
/// group rate a try costs at most one group in this many.
pub const EXPLORE_GROUPS_MIN: u32 = 256;
/// Samples each way takes, alternating, before the faster is chosen: a single first
/// sample decided for [`EXPLORE_AFTER`] before, and a shard's first writes land on
/// fresh blocks (no zero-ahead yet) and on a cold path, so one slow first write of the
/// one-write way kept a one-in-flight publisher on the slower pair for the first 5 s in
/// about one server start of three (perf/latency.md, ninth session).
pub const WARM_UP_SAMPLES: u32 = 8;
/// A sample counts at most this many times the estimate. One slow write (behind a
/// zero-ahead or checkpoint write on the same disk) moved the chosen way's estimate by a
/// quarter of its size and swapped the choice until the next try, 5 s later; a disk that
/// really got slower still moves the estimate up by an eighth per group.
const OUTLIER_FACTOR: f64 = 1.5;
/// How much slower (time to durable) a blocking one write may be than the pair and still
/// be chosen. Measured here: the blocking write's ~75 µs against the pair's ~100 µs to
/// durable, but 34 µs apart at the client's p50 (172 against 206 µs, perf/latency.md
/// "Eighth session"): the pair's completion still has to come back through io_uring and
/// the reactor before the ack is written. Without the bias, the two estimates crossed
/// in noise and a KV put run spent 9 251 of 10 000 groups on the pair (3 694 against
/// ~4 700 puts/s; "Ninth session").
pub const BLOCKING_BIAS: f64 = 1.5;
/// Weight of a new sample in a running estimate (1/4: a few groups move it, one outlier
/// does not swap the choice for long).
const WEIGHT: f64 = 0.25;
/// Weight of a sample that follows [`EXPLORE_AFTER`] without one (a try of the way not
/// chosen): heavier, so a disk that got faster is believed after a few tries, not dozens.
const WEIGHT_STALE: f64 = 0.5;

/// One way of making a small group durable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DurableWay {
    /// One write through the O_DSYNC descriptor.
    OneWrite,
    /// A write, then an fdatasync.
    WriteThenSync,
}

/// What the environment asks for (`JETCORE_DURABLE_WRITE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Measure both, use the faster (the default).
    Measured,
    /// Always this way.
    Fixed(DurableWay),
}

impl Mode {
    /// `dsync` or `blocking` → one write, `fdatasync` → the pair, anything else (`uring`,
    /// unset) → measured.
    pub fn from_env() -> Mode {
        match std::env::var("JETCORE_DURABLE_WRITE").as_deref() {
            Ok("dsync") | Ok("blocking") => Mode::Fixed(DurableWay::OneWrite),
            Ok("fdatasync") => Mode::Fixed(DurableWay::WriteThenSync),
            _ => Mode::Measured,
        }
    }
}

/// A running estimate of one way's time per group.
#[derive(Debug, Clone, Copy, Default)]
struct Estimate {
    /// Microseconds per group; meaningless before the first sample.
    micros: f64,
    last: Option<Instant>,
    samples: u32,
}

impl Estimate {
    fn note(&mut self, elapsed: Duration, now: Instant) {
        let sample = elapsed.as_secs_f64() * 1e6;
        let weight = if self.stale(now) { WEIGHT_STALE } else { WEIGHT };
        self.micros = match self.samples {
            0 => sample,
            _ => self.micros + weight * (sample.min(OUTLIER_FACTOR * self.micros) - self.micros),
        };
        self.last = Some(now);
        self.samples = self.samples.saturating_add(1);
    }

    /// The estimate, once there is a sample.
    fn micros(&self) -> Option<f64> {
        (self.samples > 0).then_some(self.micros)
    }

    fn stale(&self, now: Instant) -> bool {
        self.last.is_none_or(|last| now.duration_since(last) >= EXPLORE_AFTER)
    }
}

/// The chooser: both estimates and when the way not chosen was last tried.
#[derive(Debug)]
pub struct DurableChoice {
    mode: Mode,
    one_write: Estimate,
    write_then_sync: Estimate,
    groups_since_try: u32,
}

impl DurableChoice {
    pub fn new(mode: Mode) -> DurableChoice {
        DurableChoice {
            mode,
            one_write: Estimate::default(),
            write_then_sync: Estimate::default(),
            groups_since_try: 0,
        }
    }

    /// The way for the next small group. First each way in turn, the pair first, until
    /// both have [`WARM_UP_SAMPLES`]; then the faster, and the other when it has gone
    /// untried for [`EXPLORE_AFTER`] and [`EXPLORE_GROUPS_MIN`] groups.
    ///
    /// `blocking`: the one write would be a blocking call on the shard's thread
    /// (`store/blocking_write.rs`). Its estimate then only has to be within
    /// [`BLOCKING_BIAS`] of the pair's: what it saves is the return through the reactor
    /// after the write, which neither way's time to durable contains.
    pub fn next(&mut self, now: Instant, blocking: bool) -> DurableWay {
        if let Mode::Fixed(way) = self.mode {
            return way;
        }
        let (one_samples, pair_samples) = (self.one_write.samples, self.write_then_sync.samples);
        if one_samples.min(pair_samples) < WARM_UP_SAMPLES {
            return if pair_samples <= one_samples { DurableWay::WriteThenSync } else { DurableWay::OneWrite };
        }
        let (one, pair) = (self.one_write.micros, self.write_then_sync.micros);
        let bias = if blocking { BLOCKING_BIAS } else { 1.0 };
        let (best, other) = if one < pair * bias {
            (DurableWay::OneWrite, DurableWay::WriteThenSync)
        } else {
            (DurableWay::WriteThenSync, DurableWay::OneWrite)
        };
        self.groups_since_try = self.groups_since_try.saturating_add(1);
        if self.groups_since_try >= EXPLORE_GROUPS_MIN && self.estimate(other).stale(now) {
            self.groups_since_try = 0;
            return other;
        }
        best
    }

    /// Records how long a small group took, from its write's start to durable.
    pub fn note(&mut self, way: DurableWay, elapsed: Duration, now: Instant) {
        let estimate = match way {
            DurableWay::OneWrite => &mut self.one_write,
            DurableWay::WriteThenSync => &mut self.write_then_sync,
        };
        estimate.note(elapsed, now);
    }

    fn estimate(&self, way: DurableWay) -> &Estimate {
        match way {
            DurableWay::OneWrite => &self.one_write,
            DurableWay::WriteThenSync => &self.write_then_sync,
        }
    }

    /// The running estimates in µs (one write, the pair), for logs and tests.
    pub fn estimates(&self) -> (Option<f64>, Option<f64>) {
        (self.one_write.micros(), self.write_then_sync.micros())
    }
}

thread_local! {
    /// This shard's chooser.
    static CHOICE: RefCell<DurableChoice> = RefCell::new(DurableChoice::new(Mode::from_env()));
}

/// The way for this shard's next small group (see [`DurableChoice::next`]).
pub fn next_way(blocking: bool) -> DurableWay {
    CHOICE.with(|choice| choice.borrow_mut().next(Instant::now(), blocking))
}

/// Records a small group's time to durable on this shard.
pub fn note(way: DurableWay, elapsed: Duration) {
    CHOICE.with(|choice| choice.borrow_mut().note(way, elapsed, Instant::now()));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn micros(value: u64) -> Duration {
        Duration::from_micros(value)
    }

    /// A measured chooser past its warm-up, every sample of the pair `pair` µs and of the
    /// one write `one` µs, all at `now`.
    fn warmed_up(pair: u64, one: u64, now: Instant) -> DurableChoice {
        let mut choice = DurableChoice::new(Mode::Measured);
        for _ in 0..WARM_UP_SAMPLES {
            choice.note(DurableWay::WriteThenSync, micros(pair), now);
            choice.note(DurableWay::OneWrite, micros(one), now);
        }
        choice
    }

    #[test]
    fn tries_both_then_keeps_the_faster() {
        let mut choice = DurableChoice::new(Mode::Measured);
        let start = Instant::now();
        for _ in 0..WARM_UP_SAMPLES {
            assert_eq!(choice.next(start, false), DurableWay::WriteThenSync);
            choice.note(DurableWay::WriteThenSync, micros(300), start);
            assert_eq!(choice.next(start, false), DurableWay::OneWrite);
            choice.note(DurableWay::OneWrite, micros(120), start);
        }
        for _ in 0..1000 {
            assert_eq!(choice.next(start, false), DurableWay::OneWrite, "no try before EXPLORE_AFTER");
            choice.note(DurableWay::OneWrite, micros(120), start);
        }
    }

    #[test]
    fn tries_the_other_way_after_its_estimate_goes_stale_and_switches_if_it_got_faster() {
        let start = Instant::now();
        let mut choice = warmed_up(110, 2800, start);
        let later = start + EXPLORE_AFTER;
        let mut tries = 0;
        for _ in 0..EXPLORE_GROUPS_MIN * 3 {
            let way = choice.next(later, false);
            if way == DurableWay::OneWrite {
                tries += 1;
                choice.note(way, micros(100), later);
            } else {
                choice.note(way, micros(110), later);
            }
        }
        assert_eq!(tries, 1, "one try per stale period, however many groups");
        // The disk got quick for one write, but after one try the estimate is
        // 2800 + 0.5 × (100 − 2800) = 1450 µs: still slower.
        assert_eq!(choice.next(later, false), DurableWay::WriteThenSync);
        let (one, pair) = choice.estimates();
        assert!((one.unwrap() - 1450.0).abs() < 1.0 && (pair.unwrap() - 110.0).abs() < 1.0, "{one:?} {pair:?}");
        // Tries keep coming every EXPLORE_AFTER; enough fast ones (9 here) swap the choice.
        let mut now = later;
        for _ in 0..20 {
            now += EXPLORE_AFTER;
            for _ in 0..EXPLORE_GROUPS_MIN {
                let way = choice.next(now, false);
                let elapsed = if way == DurableWay::OneWrite { micros(100) } else { micros(110) };
                choice.note(way, elapsed, now);
            }
        }
        assert_eq!(choice.next(now, false), DurableWay::OneWrite);
    }

    #[test]
    fn one_slow_first_write_does_not_decide() {
        let mut choice = DurableChoice::new(Mode::Measured);
        let start = Instant::now();
        for sample in 0..WARM_UP_SAMPLES {
            assert_eq!(choice.next(start, false), DurableWay::WriteThenSync);
            choice.note(DurableWay::WriteThenSync, micros(200), start);
            assert_eq!(choice.next(start, false), DurableWay::OneWrite);
            // The first one-write lands on fresh blocks, the rest on zeroed ones.
            choice.note(DurableWay::OneWrite, micros(if sample == 0 { 600 } else { 100 }), start);
        }
        assert_eq!(choice.next(start, false), DurableWay::OneWrite);
    }

    #[test]
    fn one_slow_write_among_fast_ones_does_not_swap_the_choice() {
        let start = Instant::now();
        let mut choice = warmed_up(100, 75, start);
        assert_eq!(choice.next(start, false), DurableWay::OneWrite);
        choice.note(DurableWay::OneWrite, micros(600), start);
        assert_eq!(choice.next(start, false), DurableWay::OneWrite, "{:?}", choice.estimates());
        // A disk that stays slow for the one write is believed within a few groups.
        for _ in 0..4 {
            choice.note(DurableWay::OneWrite, micros(600), start);
        }
        assert_eq!(choice.next(start, false), DurableWay::WriteThenSync, "{:?}", choice.estimates());
    }

    #[test]
    fn a_blocking_one_write_is_kept_within_the_bias() {
        let start = Instant::now();
        let mut choice = warmed_up(100, 120, start);
        assert_eq!(choice.next(start, false), DurableWay::WriteThenSync);
        assert_eq!(choice.next(start, true), DurableWay::OneWrite, "120 µs is within 1.5 × 100");
        for _ in 0..20 {
            choice.note(DurableWay::OneWrite, micros(1000), start);
        }
        assert_eq!(choice.next(start, true), DurableWay::WriteThenSync, "{:?}", choice.estimates());
    }

    #[test]
    fn a_fixed_mode_never_measures_its_way_out() {
        for way in [DurableWay::OneWrite, DurableWay::WriteThenSync] {
            let mut choice = DurableChoice::new(Mode::Fixed(way));
            let now = Instant::now();
            for _ in 0..2000 {
                assert_eq!(choice.next(now + EXPLORE_AFTER * 2, false), way);
                choice.note(DurableWay::OneWrite, micros(10_000), now);
            }
        }
    }
}
