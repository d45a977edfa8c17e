//! Replay policy `original`: messages that were in the stream when the consumer was
//! created are delivered with the gaps between their timestamps (gaps of at most
//! `REPLAY_GAP_NANOS_MIN` are not waited for); later ones go out at once.
//! The consumer waits on a `ReplayWait` timer instead of sleeping.

use crate::limits::REPLAY_GAP_NANOS_MIN;

use super::effect::Context;
use super::sequence::{ConsumerId, StreamSeq, Tick};
use super::stream_view::MessageMeta;
use super::timer_key::{TimerKey, TimerKind};
use super::timer_wheel::TimerId;

#[derive(Clone, Debug)]
pub struct ReplayPacer {
    enabled: bool,
    /// The stream's last sequence at creation: replay ends past it.
    until: StreamSeq,
    last_timestamp_nanos: Option<i64>,
    ready_at: Option<Tick>,
    timer: Option<TimerId>,
}

impl ReplayPacer {
    pub fn new(enabled: bool, until: StreamSeq) -> ReplayPacer {
        ReplayPacer { enabled, until, last_timestamp_nanos: None, ready_at: None, timer: None }
    }

    /// May `meta` (a new message) go out now? If not, a `ReplayWait` timer is armed.
    pub fn allows(&mut self, meta: &MessageMeta, consumer: ConsumerId, cx: &mut Context<'_>) -> bool {
        if !self.enabled || meta.seq > self.until {
            return true;
        }
        let Some(last) = self.last_timestamp_nanos else {
            return true;
        };
        let gap = meta.timestamp_nanos.saturating_sub(last);
        if gap <= REPLAY_GAP_NANOS_MIN {
            return true;
        }
        match self.ready_at {
            Some(at) => cx.now >= at,
            None => {
                let at = cx.now.after_nanos(gap);
                self.ready_at = Some(at);
                let key = TimerKey { consumer, kind: TimerKind::ReplayWait };
                self.timer = Some(cx.timers.schedule(at, key));
                false
            }
        }
    }

    /// A new message was delivered.
    pub fn delivered(&mut self, meta: &MessageMeta) {
        self.last_timestamp_nanos = Some(meta.timestamp_nanos);
        self.ready_at = None;
    }

    pub fn timer_fired(&mut self) {
        self.timer = None;
    }

    pub(super) fn cancel(&mut self, cx: &mut Context<'_>) {
        if let Some(timer) = self.timer.take() {
            cx.timers.cancel(timer);
        }
    }
}
