//! `inactive_threshold`: a push consumer without interest, or a pull consumer without
//! requests, acks or deliveries, for that long asks to be deleted (ephemerals default
//! to 5 s; a durable only if it set a threshold). nats-server `deleteNotActive`.

use super::consumer::Consumer;
use super::effect::{Context, DeleteReason, Effect};
use super::sequence::{ticks_from_nanos, Tick};
use super::timer_key::TimerKind;
use super::timer_wheel::TimerId;

#[derive(Clone, Copy, Debug)]
pub struct Inactivity {
    timer: Option<TimerId>,
    last_activity: Tick,
}

impl Inactivity {
    pub fn new(now: Tick) -> Inactivity {
        Inactivity { timer: None, last_activity: now }
    }

    /// A request, ack or delivery happened.
    pub fn touch(&mut self, now: Tick) {
        self.last_activity = self.last_activity.max(now);
    }

    pub(super) fn cancel(&mut self, cx: &mut Context<'_>) {
        if let Some(timer) = self.timer.take() {
            cx.timers.cancel(timer);
        }
    }
}

impl Consumer {
    /// The countdown starts again from now (its owner held back a deletion it asked
    /// for, e.g. while the create request was still unanswered).
    pub fn restart_inactivity(&mut self, cx: &mut Context<'_>) {
        self.inactivity.touch(cx.now);
        self.arm_inactivity(cx);
    }

    /// Starts the countdown if the consumer has a threshold and none is running.
    pub(super) fn arm_inactivity(&mut self, cx: &mut Context<'_>) {
        let Some(threshold) = self.settings.inactive_threshold_nanos else {
            return;
        };
        if self.inactivity.timer.is_some() || self.push.as_ref().is_some_and(|push| push.is_active()) {
            return;
        }
        let from = if self.push.is_some() { cx.now } else { self.inactivity.last_activity.max(cx.now) };
        let key = self.timer_key(TimerKind::InactiveThreshold);
        self.inactivity.timer = Some(cx.timers.schedule(from.after_nanos(threshold), key));
    }

    pub(super) fn on_inactivity_timer(&mut self, cx: &mut Context<'_>) {
        self.inactivity.timer = None;
        let Some(threshold) = self.settings.inactive_threshold_nanos else {
            return;
        };
        let inactive = match (&self.push, &self.waiting) {
            (Some(push), _) => !push.is_active(),
            (None, Some(queue)) => {
                queue.is_empty() && cx.now.since(self.inactivity.last_activity) >= ticks_from_nanos(threshold)
            }
            (None, None) => false,
        };
        if inactive {
            cx.emit(Effect::Delete(DeleteReason::InactiveThreshold));
            return;
        }
        if self.push.is_none() {
            let from = if self.waiting.as_ref().is_some_and(|queue| !queue.is_empty()) {
                cx.now
            } else {
                self.inactivity.last_activity
            };
            let key = self.timer_key(TimerKind::InactiveThreshold);
            self.inactivity.timer = Some(cx.timers.schedule(from.after_nanos(threshold), key));
        }
    }
}
