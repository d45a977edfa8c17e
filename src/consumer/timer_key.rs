//! What a timer on the shard's wheel is for: which consumer, and which of its deadlines.

use super::sequence::{ConsumerId, RequestId, StreamSeq};
use super::timer_wheel::TimerWheel;

/// The key every consumer timer carries; the shard routes an expired key to
/// `Consumer::on_timer` of `consumer`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TimerKey {
    pub consumer: ConsumerId,
    pub kind: TimerKind,
}

/// Which deadline of a consumer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TimerKind {
    /// A delivered message was not acknowledged within `ack_wait` (or its backoff step).
    AckDeadline(StreamSeq),
    /// A `-NAK` with a delay (or a backoff step) is over: redeliver the message.
    BackoffRetry(StreamSeq),
    /// A pull request's `expires` is over: answer `408 Request Timeout`.
    PullExpiry(RequestId),
    /// A pull request asked for idle heartbeats and one is due.
    PullHeartbeat(RequestId),
    /// A push consumer's idle heartbeat is due.
    Heartbeat,
    /// An ephemeral consumer has been without interest for `inactive_threshold`.
    InactiveThreshold,
    /// Replay `original`: the gap before the next message is over.
    ReplayWait,
    /// `pause_until` has come: delivery resumes.
    PauseEnd,
    /// `prioritized` pull requests came in: serve the waiting queue, ranked.
    ServeWaiting,
    /// `pinned_client`: the pinned client has not pulled for `priority_timeout`.
    PinnedTtl,
}

/// The one wheel of a shard, shared by all its consumers.
pub type ShardTimers = TimerWheel<TimerKey>;
