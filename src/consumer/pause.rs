//! Pausing a consumer (nats-server 2.11's `pause_until` and `CONSUMER.PAUSE`): while
//! paused nothing is delivered; pull requests still queue, expire and get their idle
//! heartbeats, acks are still processed. When the pause ends, delivery resumes where it
//! stopped. Ticks only: the shard turns the wall-clock `pause_until` into a tick.

use super::consumer::Consumer;
use super::effect::{Advisory, Context, Effect};
use super::sequence::Tick;
use super::timer_key::TimerKind;

impl Consumer {
    /// Pauses delivery until `until`; `None`, or a tick not after now, resumes at once.
    pub fn pause(&mut self, until: Option<Tick>, cx: &mut Context<'_>) {
        if let Some(timer) = self.pause_timer.take() {
            cx.timers.cancel(timer);
        }
        self.paused_until = until.filter(|at| *at > cx.now);
        if let Some(at) = self.paused_until {
            let key = self.timer_key(TimerKind::PauseEnd);
            self.pause_timer = Some(cx.timers.schedule(at, key));
        }
        self.pump(cx);
        self.finish(cx);
    }

    /// `CONSUMER.PAUSE` (or a config update that changes `pause_until`): pauses or
    /// resumes as `pause` does and raises the PAUSE advisory nats-server sends for it.
    pub fn pause_advised(&mut self, until: Option<Tick>, cx: &mut Context<'_>) {
        self.pause(until, cx);
        cx.emit(Effect::Advisory(Advisory::Pause { paused: self.paused_until.is_some() }));
    }

    /// Whether delivery is paused at `now`.
    pub fn is_paused(&self, now: Tick) -> bool {
        self.paused_until.is_some_and(|at| now < at)
    }

    /// The pause timer fired (with the PAUSE advisory, `paused: false`); the caller
    /// pumps afterwards.
    pub(super) fn on_pause_end(&mut self, cx: &mut Context<'_>) {
        self.pause_timer = None;
        self.paused_until = None;
        cx.emit(Effect::Advisory(Advisory::Pause { paused: false }));
    }
}
