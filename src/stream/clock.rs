//! Wall-clock time for message timestamps and age limits, injected so tests control it.

use std::cell::Cell;

/// Nanoseconds since the Unix epoch.
pub trait Clock {
    fn now_ns(&self) -> i64;
}

/// The system clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ns(&self) -> i64 {
        let since_epoch = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        since_epoch.as_nanos() as i64
    }
}

/// A clock tests set by hand.
#[derive(Debug, Default)]
pub struct ManualClock {
    now_ns: Cell<i64>,
}

impl ManualClock {
    pub fn new(now_ns: i64) -> ManualClock {
        ManualClock { now_ns: Cell::new(now_ns) }
    }
    pub fn advance(&self, nanos: i64) {
        self.now_ns.set(self.now_ns.get() + nanos);
    }
}

impl Clock for ManualClock {
    fn now_ns(&self) -> i64 {
        self.now_ns.get()
    }
}
