//! Push consumers: delivery to `deliver_subject` only while it has interest, flow
//! control, and idle heartbeats (nats-server `sendFlowControl`, `processFlowControl`,
//! `sendIdleHeartbeat`; ADR-9).
//!
//! Flow control (when `flow_control` is set) keeps a window of bytes delivered but not
//! yet confirmed. Past half the window a `100 FlowControl Request` goes to the deliver
//! subject with the reply `$JS.FC.<stream>.<consumer>.<4 chars>`; delivery pauses while
//! more than a window is unconfirmed, until the client publishes to that reply. Each
//! answer doubles the window up to `FLOW_CONTROL_WINDOW_BYTES_MAX` (slow start).
//!
//! Idle heartbeats: after `idle_heartbeat` without a delivery, `100 Idle Heartbeat` with
//! `Nats-Last-Consumer` and `Nats-Last-Stream` (and `Nats-Consumer-Stalled: <fc reply>`
//! while waiting for a flow control answer), no reply subject. Ordered consumers check
//! `Nats-Last-Consumer` against their own count.

use std::rc::Rc;

use crate::limits::{FLOW_CONTROL_WINDOW_BYTES_INITIAL, FLOW_CONTROL_WINDOW_BYTES_MAX};

use super::consumer::Consumer;
use super::effect::{Context, StatusReply, CONSUMER_STALLED_HEADER, LAST_CONSUMER_HEADER, LAST_STREAM_HEADER};
use super::sequence::{ticks_from_nanos, ConsumerSeq, StreamSeq, Tick};
use super::settings::PushSettings;
use super::timer_key::TimerKind;
use super::timer_wheel::TimerId;

/// Characters of the random-looking last token of a flow control reply.
const FC_TOKEN_ALPHABET: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const FC_TOKEN_CHARS: usize = 4;

/// `100 Idle Heartbeat` for `to`.
pub fn idle_heartbeat(
    to: Rc<str>,
    last_consumer: ConsumerSeq,
    last_stream: StreamSeq,
    stalled_on: Option<&str>,
) -> StatusReply {
    let mut status = StatusReply::new(to, 100, "Idle Heartbeat");
    status.headers.push((LAST_CONSUMER_HEADER, last_consumer.to_string()));
    status.headers.push((LAST_STREAM_HEADER, last_stream.to_string()));
    if let Some(reply) = stalled_on {
        status.headers.push((CONSUMER_STALLED_HEADER, reply.to_string()));
    }
    status
}

#[derive(Clone, Debug)]
struct FlowControl {
    unconfirmed_bytes: u64,
    window_bytes: u64,
    /// The outstanding request's reply subject and the unconfirmed bytes it covers.
    outstanding: Option<(String, u64)>,
    requests_sent: u64,
}

impl FlowControl {
    fn new() -> FlowControl {
        FlowControl {
            unconfirmed_bytes: 0,
            window_bytes: FLOW_CONTROL_WINDOW_BYTES_INITIAL,
            outstanding: None,
            requests_sent: 0,
        }
    }
}

/// Push-side state of a consumer.
#[derive(Clone, Debug)]
pub struct PushState {
    settings: PushSettings,
    active: bool,
    flow: Option<FlowControl>,
    fc_prefix: String,
    heartbeat_timer: Option<TimerId>,
    last_activity: Tick,
}

impl PushState {
    /// Starts without interest: the shard reports the deliver subject's interest with
    /// `Consumer::on_interest_change`, also right after creating the consumer.
    pub fn new(settings: PushSettings, stream: &str, consumer: &str) -> PushState {
        let flow = settings.flow_control.then(FlowControl::new);
        PushState {
            settings,
            active: false,
            flow,
            fc_prefix: format!("$JS.FC.{stream}.{consumer}."),
            heartbeat_timer: None,
            last_activity: Tick::ZERO,
        }
    }

    /// Takes new push settings; flow control starts or stops with its flag.
    pub fn update_settings(&mut self, settings: PushSettings) {
        match (settings.flow_control, self.flow.is_some()) {
            (true, false) => self.flow = Some(FlowControl::new()),
            (false, true) => self.flow = None,
            _ => {}
        }
        self.settings = settings;
    }

    pub fn has_heartbeat(&self) -> bool {
        self.heartbeat_timer.is_some()
    }

    pub fn is_active(&self) -> bool {
        self.active
    }

    pub fn deliver_subject(&self) -> Rc<str> {
        self.settings.deliver_subject.clone()
    }

    pub fn deliver_group(&self) -> Option<&str> {
        self.settings.deliver_group.as_deref()
    }

    /// The reply subject of the unanswered flow control request, if any.
    pub fn stalled_on(&self) -> Option<&str> {
        self.flow.as_ref()?.outstanding.as_ref().map(|(reply, _)| reply.as_str())
    }

    /// Interest, and room in the flow control window.
    pub fn can_deliver(&self) -> bool {
        self.active && self.flow.as_ref().is_none_or(|flow| flow.unconfirmed_bytes <= flow.window_bytes)
    }

    /// Accounts a delivery of `size` bytes; returns a flow control request to send after
    /// it when the window is half used and none is outstanding.
    pub fn delivered(&mut self, size: u64, now: Tick) -> Option<StatusReply> {
        self.last_activity = now;
        let flow = self.flow.as_mut()?;
        flow.unconfirmed_bytes += size;
        if flow.outstanding.is_some() || flow.unconfirmed_bytes <= flow.window_bytes / 2 {
            return None;
        }
        flow.requests_sent += 1;
        let reply = format!("{}{}", self.fc_prefix, fc_token(flow.requests_sent));
        flow.outstanding = Some((reply.clone(), flow.unconfirmed_bytes));
        let mut request = StatusReply::new(self.settings.deliver_subject.clone(), 100, "FlowControl Request");
        request.reply = Some(reply);
        Some(request)
    }

    /// A publish to a flow control reply subject; true if it answered the outstanding one.
    fn confirm(&mut self, subject: &str) -> bool {
        let Some(flow) = self.flow.as_mut() else {
            return false;
        };
        let Some((_, covered)) = flow.outstanding.take_if(|(reply, _)| reply == subject) else {
            return false;
        };
        flow.unconfirmed_bytes = flow.unconfirmed_bytes.saturating_sub(covered);
        flow.window_bytes = (flow.window_bytes * 2).min(FLOW_CONTROL_WINDOW_BYTES_MAX);
        true
    }

    pub(super) fn cancel_heartbeat(&mut self, cx: &mut Context<'_>) {
        if let Some(timer) = self.heartbeat_timer.take() {
            cx.timers.cancel(timer);
        }
    }
}

/// A deterministic, well-spread 4-character token for the n-th flow control request.
fn fc_token(counter: u64) -> String {
    let mut mixed = counter.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    mixed ^= mixed >> 29;
    (0..FC_TOKEN_CHARS)
        .map(|_| {
            let character = FC_TOKEN_ALPHABET[(mixed % 62) as usize] as char;
            mixed /= 62;
            character
        })
        .collect()
}

impl Consumer {
    /// The deliver subject gained (`true`) or lost all interest. Without interest nothing
    /// is delivered and an ephemeral consumer starts its `inactive_threshold` countdown.
    pub fn on_interest_change(&mut self, active: bool, cx: &mut Context<'_>) {
        let Some(push) = self.push.as_mut() else {
            return;
        };
        if self.deleted || push.active == active {
            return;
        }
        push.active = active;
        if active {
            self.inactivity.cancel(cx);
        } else {
            self.arm_inactivity(cx);
        }
        self.pump(cx);
        self.finish(cx);
    }

    /// A message on `$JS.FC.<stream>.<consumer>.>`: resumes delivery if it answers the
    /// outstanding flow control request; stale answers are ignored.
    pub fn on_flow_control_reply(&mut self, subject: &str, cx: &mut Context<'_>) {
        if self.push.as_mut().is_some_and(|push| push.confirm(subject)) {
            self.pump(cx);
            self.finish(cx);
        }
    }

    pub(super) fn arm_push_heartbeat(&mut self, cx: &mut Context<'_>) {
        let key = self.timer_key(TimerKind::Heartbeat);
        let Some(push) = self.push.as_mut() else {
            return;
        };
        let Some(interval) = push.settings.idle_heartbeat_nanos else {
            return;
        };
        let due = push.last_activity.max(cx.now).after_nanos(interval);
        if push.last_activity == Tick::ZERO {
            push.last_activity = cx.now;
        }
        push.heartbeat_timer = Some(cx.timers.schedule(due, key));
    }

    pub(super) fn on_push_heartbeat(&mut self, cx: &mut Context<'_>) {
        let (last_consumer, last_stream) = self.last_sequences();
        let key = self.timer_key(TimerKind::Heartbeat);
        let Some(push) = self.push.as_mut() else {
            return;
        };
        let Some(interval) = push.settings.idle_heartbeat_nanos else {
            return;
        };
        if cx.now.since(push.last_activity) >= ticks_from_nanos(interval) {
            if push.active {
                let to = push.deliver_subject();
                cx.status(idle_heartbeat(to, last_consumer, last_stream, push.stalled_on()));
            }
            push.last_activity = cx.now;
        }
        push.heartbeat_timer = Some(cx.timers.schedule(push.last_activity.after_nanos(interval), key));
    }

    /// Push state (deliver subject, group, interest, flow control), for the shard.
    pub fn push_state(&self) -> Option<&PushState> {
        self.push.as_ref()
    }
}
