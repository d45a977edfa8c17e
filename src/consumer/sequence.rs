//! The numbers a consumer counts with, as distinct types so a stream sequence can never be
//! passed where a consumer sequence or a tick is meant (STYLE habit 3).

use std::fmt;

use crate::limits::CONSUMER_TICK_NANOS;

macro_rules! counter {
    ($(#[$meta:meta])* $name:ident($inner:ty)) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(pub $inner);

        impl $name {
            pub const ZERO: $name = $name(0);

            pub fn get(self) -> $inner {
                self.0
            }

            /// The next value; overflowing a 64-bit counter is a bug.
            pub fn next(self) -> $name {
                $name(self.0.checked_add(1).expect(concat!(stringify!($name), " overflow")))
            }

            /// The previous value, saturating at zero.
            pub fn previous(self) -> $name {
                $name(self.0.saturating_sub(1))
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(&self.0, formatter)
            }
        }
    };
}

counter!(
    /// A message's sequence in its stream (1-based; 0 means "before the first").
    StreamSeq(u64)
);
counter!(
    /// A delivery's sequence in its consumer: +1 on every delivery, redeliveries included.
    ConsumerSeq(u64)
);
counter!(
    /// One unit of the shard's timer clock (`limits::CONSUMER_TICK_NANOS` long). The
    /// consumer never reads a clock: the server passes the current tick in.
    Tick(u64)
);
counter!(
    /// Identifies a consumer among all consumers of one shard (the timer wheel's keys).
    ConsumerId(u64)
);
counter!(
    /// Identifies one waiting pull request of one consumer.
    RequestId(u64)
);

impl Tick {
    /// The tick `nanos` after this one, rounding the duration up to whole ticks so a
    /// deadline never fires early.
    pub fn after_nanos(self, nanos: i64) -> Tick {
        Tick(self.0.saturating_add(ticks_from_nanos(nanos)))
    }

    /// Ticks elapsed from `earlier` to `self` (0 if `earlier` is later).
    pub fn since(self, earlier: Tick) -> u64 {
        self.0.saturating_sub(earlier.0)
    }
}

/// A non-negative duration in nanoseconds as whole ticks, rounded up.
pub fn ticks_from_nanos(nanos: i64) -> u64 {
    let nanos = u64::try_from(nanos.max(0)).unwrap_or(0);
    nanos.div_ceil(CONSUMER_TICK_NANOS)
}

/// Times a message has been delivered: 1 on the first delivery.
pub type DeliveryCount = u64;
