//! Fixed-rate scheduling: message `i` of a paced sender is due at `start + i / rate`.
//! Latency is measured from that intended time, so a sender that fell behind (a stall in the
//! server or the client) is charged for the whole delay of every message it held back.

use std::time::{Duration, Instant};

pub struct Pacer {
    start: Instant,
    nanos_per_message: f64,
}

impl Pacer {
    /// A schedule of `rate` messages/s starting at `start`. Call it on the sending thread:
    /// it also shrinks that thread's timer slack so sleeps end when asked (the default 50 µs
    /// slack would otherwise show up as latency).
    pub fn new(rate: u64, start: Instant) -> Self {
        assert!(rate > 0, "a paced rate must be positive");
        shrink_timer_slack();
        Self { start, nanos_per_message: 1e9 / rate as f64 }
    }

    /// When message `index` is meant to be sent.
    pub fn intended_time(&self, index: u64) -> Instant {
        self.start + Duration::from_nanos((index as f64 * self.nanos_per_message) as u64)
    }

    /// Sleeps until message `index` is due (returns at once when it is overdue).
    pub fn sleep_until_due(&self, index: u64) {
        let due = self.intended_time(index);
        let now = Instant::now();
        if due > now {
            std::thread::sleep(due - now);
        }
    }
}

/// Timer slack of paced threads, in nanoseconds.
const PACED_TIMER_SLACK_NANOS: libc::c_ulong = 1_000;

fn shrink_timer_slack() {
    // SAFETY: PR_SET_TIMERSLACK takes one integer argument and only affects this thread.
    // Failure just leaves the default slack, so the result is not checked.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, PACED_TIMER_SLACK_NANOS);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_spaced_by_the_rate() {
        let start = Instant::now();
        let pacer = Pacer::new(1_000, start);
        assert_eq!(pacer.intended_time(0), start);
        assert_eq!(pacer.intended_time(500) - start, Duration::from_millis(500));
    }
}
