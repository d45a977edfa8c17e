//! Pull consumers: the queue of waiting `CONSUMER.MSG.NEXT` requests and the status
//! replies nats-server sends on their inboxes (`processNextMsgRequest`, `nextWaiting`,
//! `processWaiting`), with its exact texts:
//!
//! | when | status |
//! |---|---|
//! | push consumer | `409 Consumer is push based` |
//! | bad body, `2*idle_heartbeat > expires` | `400 Bad Request - <detail>` |
//! | over the consumer's caps | `409 Exceeded MaxRequestBatch of <n>`, `409 Exceeded MaxRequestExpires of <Go duration>`, `409 Exceeded MaxRequestMaxBytes of <n>` |
//! | a JSON request's priority-group fields do not fit the consumer | `400 Bad Request - <detail>` (below) |
//! | `pinned_client`, a pin held, the request names another `id` | `423 Nats-Pin-Id mismatch` |
//! | no_wait, nothing pending, no expires | `404 No Messages` |
//! | negative expires, or one under 30 µs (over on arrival) | `408 Request Timeout` + pending headers |
//! | no_wait, earlier requests already cover what is pending | `408 Requests Pending` |
//! | queue full (not sent when the request asked for heartbeats) | `409 Exceeded MaxWaiting` |
//! | no_wait ran dry after delivering some, or with no expires | `404 No Messages` |
//! | expired | `408 Request Timeout` + pending headers |
//! | next message larger than the bytes left | `409 Message Size Exceeds MaxBytes` + pending headers |
//! | `pinned_client`: offered a message, its `id` is not the pin | `423 Nats-Wrong-Pin-Id` + pending headers |
//! | batch done with bytes left | `409 Batch Completed` + pending headers |
//! | heartbeat while idle | `100 Idle Heartbeat` + last sequences |
//! | consumer deleted | `409 Consumer Deleted` |
//! | server shutting down | `409 Server Shutdown` + pending headers |
//!
//! A batch completed by count alone gets no status. Requests whose inbox lost interest
//! are dropped silently. Requests are served round-robin: the request that just got a
//! message moves behind the others (nats-server's `waitQueue.pop`).
//!
//! Priority groups (2.11+) change which request a message is offered to. `overflow`: a
//! request that set `min_pending` and/or `min_ack_pending` waits until the consumer has
//! at least that many messages pending or acks outstanding (either suffices); others are
//! served as usual. `prioritized` (2.12): the request with the lowest `priority` (0-9)
//! gets it, round-robin among equals. `pinned_client`: one request's client is pinned
//! and served alone (see `pinning`). A JSON request is checked first, in nats-server's
//! order: `min_pending`/`min_ack_pending` need `overflow` (`Not a Overflow Priority
//! consumer`), an `id` needs `pinned_client` (`Not a Pinned Client Priority consumer`),
//! `priority` is 0-9 (`Priority must be between 0 and 9`); with a policy set, `group`
//! is required (`Priority Group missing`) and must be one of the consumer's (`Invalid
//! Priority Group`).

use std::collections::VecDeque;
use std::rc::Rc;

use super::pull_request::PullRequest;
use super::settings::PriorityPolicy;

use super::consumer::{Consumer, Dry};
use super::effect::{Context, StatusReply};
use super::sequence::{ticks_from_nanos, RequestId, Tick};
use super::timer_key::TimerKind;
use super::timer_wheel::TimerId;
use crate::limits::PULL_EXPIRES_SERVABLE_MIN_NANOS;
use crate::protocol::go_duration::format_go_duration;

/// One waiting pull request.
#[derive(Clone, Debug)]
pub struct WaitingRequest {
    pub id: RequestId,
    pub reply: Rc<str>,
    /// Messages still wanted.
    pub batch_remaining: u64,
    /// Bytes still allowed when `max_bytes` was set.
    pub bytes_remaining: Option<u64>,
    /// Messages delivered to it so far.
    pub delivered: u64,
    pub no_wait: bool,
    pub expires_at: Option<Tick>,
    pub heartbeat_nanos: Option<i64>,
    /// Overflow priority groups: offered messages only once the consumer has this many
    /// pending (`min_pending`) or unacknowledged (`min_ack_pending`).
    pub min_pending: Option<u64>,
    pub min_ack_pending: Option<u64>,
    /// Prioritized priority groups: lower is served first.
    pub priority: i64,
    /// `pinned_client`: the pin id the request carries (given one when it is pinned).
    pub pin_id: Option<Rc<str>>,
    /// `pinned_client`: the request named a group, so it may be pinned (a bare batch
    /// size is served while nothing is pinned, without taking the pin).
    pub group: Option<Rc<str>>,
    /// Last delivery or heartbeat to it (idle heartbeats count from here).
    pub last_activity: Tick,
    /// The tick its inbox was last seen subscribed: checked again once per tick, not
    /// per message (a subscription lookup each showed in pull-consume profiles).
    interest_seen: Option<Tick>,
    expiry_timer: Option<TimerId>,
    heartbeat_timer: Option<TimerId>,
}

impl WaitingRequest {
    /// Whether an overflow request may take a message now.
    fn overflow_allows(&self, pending: u64, ack_pending: u64) -> bool {
        match (self.min_pending, self.min_ack_pending) {
            (None, None) => true,
            (min_pending, min_ack_pending) => {
                min_pending.is_some_and(|min| pending >= min) || min_ack_pending.is_some_and(|min| ack_pending >= min)
            }
        }
    }

    pub fn timers(&self) -> impl Iterator<Item = TimerId> {
        self.expiry_timer.into_iter().chain(self.heartbeat_timer)
    }

    /// `Nats-Pending-Bytes` value: bytes left, 0 when unlimited (as nats-server).
    fn pending_bytes(&self) -> u64 {
        self.bytes_remaining.unwrap_or(0)
    }

    fn status_with_pending(&self, code: u16, description: &str) -> StatusReply {
        StatusReply::new(self.reply.clone(), code, description).with_pending(self.batch_remaining, self.pending_bytes())
    }
}

/// Where a message goes: the request's inbox, a status to send right after it (`409
/// Batch Completed`), and the `Nats-Pin-Id` to add (`pinned_client` only).
pub(super) struct Taken {
    pub to: Rc<str>,
    pub trailer: Option<StatusReply>,
    pub pin_id: Option<Rc<str>>,
}

/// The waiting requests of one pull consumer, at most `max_waiting`.
#[derive(Clone, Debug)]
pub struct WaitQueue {
    requests: VecDeque<WaitingRequest>,
    max_waiting: usize,
    next_id: RequestId,
    /// `prioritized`: the queue is served from this timer, due now, rather than as each
    /// request arrives (see `on_pull_request`).
    serve_timer: Option<TimerId>,
}

impl WaitQueue {
    pub fn new(max_waiting: usize) -> WaitQueue {
        WaitQueue { requests: VecDeque::new(), max_waiting, next_id: RequestId::ZERO, serve_timer: None }
    }

    pub fn len(&self) -> usize {
        self.requests.len()
    }

    /// A lower limit only refuses new requests; waiting ones stay.
    pub fn set_max_waiting(&mut self, max_waiting: usize) {
        self.max_waiting = max_waiting;
    }

    pub fn is_empty(&self) -> bool {
        self.requests.is_empty()
    }

    pub fn is_full(&self) -> bool {
        self.requests.len() >= self.max_waiting
    }

    pub fn iter(&self) -> impl Iterator<Item = &WaitingRequest> {
        self.requests.iter()
    }

    /// Messages the waiting requests still want.
    pub fn batch_pending(&self) -> u64 {
        self.requests.iter().map(|request| request.batch_remaining).sum()
    }

    pub fn take_serve_timer(&mut self) -> Option<TimerId> {
        self.serve_timer.take()
    }

    pub fn drain(&mut self) -> impl Iterator<Item = WaitingRequest> + '_ {
        self.requests.drain(..)
    }

    fn position(&self, id: RequestId) -> Option<usize> {
        self.requests.iter().position(|request| request.id == id)
    }

    /// Charges request `index` with a message of `size` bytes: it moves behind the others
    /// (round robin) while it wants more, or leaves the queue, with `409 Batch
    /// Completed` to follow when bytes were left. Returns its inbox and that status.
    fn serve(&mut self, index: usize, size: u64, cx: &mut Context<'_>) -> (Rc<str>, Option<StatusReply>) {
        let request = &mut self.requests[index];
        request.delivered += 1;
        request.batch_remaining -= 1;
        if let Some(bytes) = request.bytes_remaining.as_mut() {
            *bytes -= size;
            if *bytes == 0 {
                request.batch_remaining = 0;
            }
        }
        request.last_activity = cx.now;
        let to = request.reply.clone();
        if request.batch_remaining > 0 {
            // Round robin between requests; a lone request stays where it is (moving
            // it out and back showed in pull-consume profiles).
            if self.requests.len() > 1 {
                let request = self.requests.remove(index).expect("served request exists");
                self.requests.push_back(request);
            }
            return (to, None);
        }
        let request = self.requests.remove(index).expect("served request exists");
        cx.timers_cancel(request.timers());
        let trailer = request
            .bytes_remaining
            .filter(|bytes| *bytes > 0)
            .map(|_| request.status_with_pending(409, "Batch Completed"));
        (to, trailer)
    }

    /// Removes the requests `remove` picks, in order.
    fn extract(&mut self, mut remove: impl FnMut(&WaitingRequest) -> bool) -> Vec<WaitingRequest> {
        let (removed, kept): (VecDeque<_>, VecDeque<_>) = self.requests.drain(..).partition(|r| remove(r));
        self.requests = kept;
        removed.into()
    }
}

impl Consumer {
    /// A pull request (`CONSUMER.MSG.NEXT` body, or the rest of a `+NXT` ack) whose
    /// replies go to `reply`.
    pub fn on_pull_request(&mut self, reply: &str, body: &[u8], cx: &mut Context<'_>) {
        if self.deleted {
            return;
        }
        let to: Rc<str> = Rc::from(reply);
        if self.waiting.is_none() {
            cx.status(StatusReply::new(to, 409, "Consumer is push based"));
            return;
        }
        let request = match PullRequest::decode(body) {
            Ok(request) => request,
            Err(bad) => return cx.status(StatusReply::new(to, 400, bad.status_description())),
        };
        if let Some(refusal) = self.check_request_caps(&request) {
            return cx.status(StatusReply::new(to, 409, refusal));
        }
        if let Some((code, description)) = self.check_priority_fields(&request, cx) {
            return cx.status(StatusReply::new(to, code, description));
        }
        let Some(queue) = self.waiting.as_ref() else { return };
        self.inactivity.touch(cx.now);
        if request.no_wait {
            let messages_pending = self.num_pending + self.pending.redelivery_queue_len() as u64;
            if messages_pending == 0 && request.expires == 0 {
                return cx.status(StatusReply::new(to, 404, "No Messages"));
            }
            if messages_pending > 0 && messages_pending < queue.batch_pending() {
                return cx.status(StatusReply::new(to, 408, "Requests Pending"));
            }
        }
        if queue.is_full() {
            if request.idle_heartbeat <= 0 {
                cx.status(StatusReply::new(to, 409, "Exceeded MaxWaiting"));
            }
            return;
        }
        self.enqueue(to, &request, cx);
        if self.settings.priority_policy == PriorityPolicy::Prioritized {
            // Requests that arrived together are ranked together, as nats-server ranks
            // its queue only when its delivery loop next runs: the shard serves the
            // queue once it has taken in everything it read.
            self.serve_waiting_soon(cx);
            return;
        }
        self.pump(cx);
        self.finish(cx);
    }

    fn serve_waiting_soon(&mut self, cx: &mut Context<'_>) {
        let key = self.timer_key(TimerKind::ServeWaiting);
        let queue = self.waiting.as_mut().expect("pull consumer");
        if queue.serve_timer.is_none() {
            queue.serve_timer = Some(cx.timers.schedule(cx.now, key));
        }
    }

    /// The `ServeWaiting` timer fired: the caller pumps next.
    pub(super) fn on_serve_waiting(&mut self) {
        if let Some(queue) = self.waiting.as_mut() {
            queue.serve_timer = None;
        }
    }

    /// The 409 text for a request over the consumer's `max_batch` / `max_expires` /
    /// `max_bytes` caps.
    fn check_request_caps(&self, request: &PullRequest) -> Option<String> {
        let settings = &self.settings;
        if let Some(max) = settings.max_request_batch.filter(|max| request.batch as u64 > *max) {
            return Some(format!("Exceeded MaxRequestBatch of {max}"));
        }
        if let Some(max) = settings.max_request_expires_nanos.filter(|max| request.expires > *max) {
            return Some(format!("Exceeded MaxRequestExpires of {}", format_go_duration(max)));
        }
        if let Some(max) =
            settings.max_request_bytes.filter(|max| request.max_bytes > 0 && request.max_bytes as u64 > *max)
        {
            return Some(format!("Exceeded MaxRequestMaxBytes of {max}"));
        }
        None
    }

    /// nats-server's checks of a JSON request's priority-group fields (module docs), and
    /// of its pin `id` against the pin held; `Some`: the status to refuse it with.
    fn check_priority_fields(&mut self, request: &PullRequest, cx: &mut Context<'_>) -> Option<(u16, &'static str)> {
        if !request.json {
            return None;
        }
        let policy = self.settings.priority_policy;
        if (request.min_pending != 0 || request.min_ack_pending != 0) && policy != PriorityPolicy::Overflow {
            return Some((400, "Bad Request - Not a Overflow Priority consumer"));
        }
        if !request.id.is_empty() && policy != PriorityPolicy::PinnedClient {
            return Some((400, "Bad Request - Not a Pinned Client Priority consumer"));
        }
        if !(0..=9).contains(&request.priority) {
            return Some((400, "Bad Request - Priority must be between 0 and 9"));
        }
        if policy == PriorityPolicy::None {
            return None;
        }
        if request.group.is_empty() {
            return Some((400, "Bad Request - Priority Group missing"));
        }
        if !self.settings.priority_groups.contains(&request.group) {
            return Some((400, "Bad Request - Invalid Priority Group"));
        }
        self.admit_pin_id(&request.id, cx).err().map(|()| (423, "Nats-Pin-Id mismatch"))
    }

    fn enqueue(&mut self, reply: Rc<str>, request: &PullRequest, cx: &mut Context<'_>) {
        let overflow = self.settings.priority_policy == PriorityPolicy::Overflow;
        let queue = self.waiting.as_mut().expect("pull consumer");
        let id = queue.next_id.next();
        queue.next_id = id;
        let key = |kind| super::timer_key::TimerKey { consumer: self.id, kind };
        // Negative `expires` is already over (Go adds it to now), and so is one too short
        // to outlast the request's way to the consumer: 408 at the first chance.
        let over_on_arrival = request.expires < PULL_EXPIRES_SERVABLE_MIN_NANOS;
        let expires_at =
            (request.expires != 0).then(|| if over_on_arrival { cx.now } else { cx.now.after_nanos(request.expires) });
        let heartbeat_nanos = Some(request.idle_heartbeat).filter(|nanos| *nanos > 0);
        let expiry_timer = expires_at.map(|at| cx.timers.schedule(at, key(TimerKind::PullExpiry(id))));
        let heartbeat_timer = heartbeat_nanos
            .map(|nanos| cx.timers.schedule(cx.now.after_nanos(nanos), key(TimerKind::PullHeartbeat(id))));
        queue.requests.push_back(WaitingRequest {
            id,
            reply,
            batch_remaining: request.batch.max(1) as u64,
            bytes_remaining: (request.max_bytes > 0).then_some(request.max_bytes as u64),
            delivered: 0,
            no_wait: request.no_wait,
            expires_at,
            heartbeat_nanos,
            min_pending: overflow.then(|| u64::try_from(request.min_pending).ok().filter(|n| *n > 0)).flatten(),
            min_ack_pending: overflow.then(|| u64::try_from(request.min_ack_pending).ok().filter(|n| *n > 0)).flatten(),
            priority: request.priority,
            pin_id: Some(request.id.as_str()).filter(|id| !id.is_empty()).map(Rc::from),
            group: (request.json && !request.group.is_empty()).then(|| Rc::from(request.group.as_str())),
            last_activity: cx.now,
            interest_seen: None,
            expiry_timer,
            heartbeat_timer,
        });
    }

    /// Picks the request that gets the next message (`size` wire bytes) and charges it;
    /// `None` when no request is left. Expired, uninterested and too-small requests met on
    /// the way are answered and removed, and so are, under `pinned_client`, requests
    /// holding a pin that is not the group's (`423 Nats-Wrong-Pin-Id`); a request served
    /// while no pin is held is pinned (see `pinning`).
    pub(super) fn choose_request(&mut self, size: u64, cx: &mut Context<'_>) -> Option<Taken> {
        let pinned = self.settings.priority_policy == PriorityPolicy::PinnedClient;
        loop {
            let mut index = self.offered_request()?;
            let pin_held = self.pin.as_ref().map(|pin| pin.id.clone());
            let queue = self.waiting.as_mut()?;
            if pin_held.is_some() && index > 0 {
                // The requests without an id passed over go behind the others, as
                // nats-server's `cycle` moves them.
                queue.requests.rotate_left(index);
                index = 0;
            }
            let request = &mut queue.requests[index];
            let interested = request.interest_seen == Some(cx.now) || cx.interest.has_interest(&request.reply);
            if interested {
                request.interest_seen = Some(cx.now);
            }
            let refusal = if request.expires_at.is_some_and(|at| at <= cx.now) {
                Some(Some(request.status_with_pending(408, "Request Timeout")))
            } else if pinned && request.pin_id.is_some() && request.pin_id != pin_held {
                Some(Some(request.status_with_pending(423, "Nats-Wrong-Pin-Id")))
            } else if !interested {
                Some(None)
            } else if request.bytes_remaining.is_some_and(|bytes| size > bytes) {
                Some(Some(request.status_with_pending(409, "Message Size Exceeds MaxBytes")))
            } else {
                None
            };
            if let Some(status) = refusal {
                let request = queue.requests.remove(index).expect("offered request exists");
                cx.timers_cancel(request.timers());
                if let Some(status) = status {
                    cx.status(status);
                }
                continue;
            }
            let pin_id = match (pinned, pin_held) {
                (false, _) => None,
                (true, Some(id)) => Some(id),
                (true, None) => match request.group.clone() {
                    Some(group) => {
                        let id = self.assign_pin(group, cx);
                        self.waiting.as_mut()?.requests[index].pin_id = Some(id.clone());
                        Some(id)
                    }
                    // A request that named no group is served without taking the pin.
                    None => Some(Rc::from("")),
                },
            };
            let (to, trailer) = self.waiting.as_mut()?.serve(index, size, cx);
            return Some(Taken { to, trailer, pin_id });
        }
    }

    /// The waiting request the next message is offered to (its index in the queue): the
    /// front, unless a priority policy says otherwise (see the module docs).
    pub(super) fn offered_request(&self) -> Option<usize> {
        let requests = &self.waiting.as_ref()?.requests;
        match self.settings.priority_policy {
            PriorityPolicy::Overflow => {
                let ack_pending = self.pending.len() as u64;
                requests.iter().position(|request| request.overflow_allows(self.num_pending, ack_pending))
            }
            PriorityPolicy::Prioritized => {
                let highest = requests.iter().map(|request| request.priority).min()?;
                requests.iter().position(|request| request.priority == highest)
            }
            // A pin held: only requests naming an id (the pin's, or one to refuse).
            PriorityPolicy::PinnedClient if self.pin.is_some() => {
                requests.iter().position(|request| request.pin_id.is_some())
            }
            PriorityPolicy::None | PriorityPolicy::PinnedClient => (!requests.is_empty()).then_some(0),
        }
    }

    /// Nothing to deliver: drop requests whose inbox went away; at the end of the stream
    /// (not when stalled on `max_ack_pending`) answer one-shot (`no_wait`) requests.
    pub(super) fn on_dry(&mut self, dry: Dry, cx: &mut Context<'_>) {
        let Some(queue) = self.waiting.as_mut() else {
            return;
        };
        let (interest, now) = (cx.interest, cx.now);
        let mut answers = Vec::new();
        let removed = queue.extract(|request| {
            if request.expires_at.is_some_and(|at| at <= now) {
                answers.push(request.status_with_pending(408, "Request Timeout"));
                return true;
            }
            if !interest.has_interest(&request.reply) {
                return true;
            }
            let one_shot_done =
                dry == Dry::EndOfStream && request.no_wait && (request.expires_at.is_none() || request.delivered > 0);
            if one_shot_done {
                answers.push(StatusReply::new(request.reply.clone(), 404, "No Messages"));
            }
            one_shot_done
        });
        for request in removed {
            cx.timers_cancel(request.timers());
        }
        for answer in answers {
            cx.status(answer);
        }
    }

    pub(super) fn on_pull_expiry(&mut self, id: RequestId, cx: &mut Context<'_>) {
        let Some(queue) = self.waiting.as_mut() else {
            return;
        };
        let Some(index) = queue.position(id) else {
            return;
        };
        let request = queue.requests.remove(index).expect("index is in range");
        if let Some(timer) = request.heartbeat_timer {
            cx.timers.cancel(timer);
        }
        cx.status(request.status_with_pending(408, "Request Timeout"));
    }

    pub(super) fn on_pull_heartbeat(&mut self, id: RequestId, cx: &mut Context<'_>) {
        let (last_consumer, last_stream) = self.last_sequences();
        let consumer = self.id;
        let Some(queue) = self.waiting.as_mut() else {
            return;
        };
        let Some(index) = queue.position(id) else {
            return;
        };
        let request = &mut queue.requests[index];
        let Some(interval) = request.heartbeat_nanos else {
            return;
        };
        if cx.now.since(request.last_activity) >= ticks_from_nanos(interval) {
            let heartbeat = super::push::idle_heartbeat(request.reply.clone(), last_consumer, last_stream, None);
            cx.status(heartbeat);
            request.last_activity = cx.now;
        }
        let due = request.last_activity.after_nanos(interval);
        let key = super::timer_key::TimerKey { consumer, kind: TimerKind::PullHeartbeat(id) };
        request.heartbeat_timer = Some(cx.timers.schedule(due, key));
    }

    /// The shard saw the last subscription on `reply` go away: its requests are dropped
    /// without a reply.
    pub fn on_reply_interest_lost(&mut self, reply: &str, cx: &mut Context<'_>) {
        let Some(queue) = self.waiting.as_mut() else {
            return;
        };
        for request in queue.extract(|request| &*request.reply == reply) {
            cx.timers_cancel(request.timers());
        }
    }

    /// The server is shutting down: every waiting request gets `409 Server Shutdown`
    /// with what it still wanted (nats-server's shutdown of its consumers), so clients
    /// know to pull again once the server is back.
    pub fn on_server_shutdown(&mut self, cx: &mut Context<'_>) {
        let Some(queue) = self.waiting.as_mut() else {
            return;
        };
        cx.timers_cancel(queue.take_serve_timer());
        for request in queue.drain() {
            cx.timers_cancel(request.timers());
            cx.status(request.status_with_pending(409, "Server Shutdown"));
        }
    }

    /// The waiting requests, oldest first (for info and tests).
    pub fn waiting_requests(&self) -> impl Iterator<Item = &WaitingRequest> {
        self.waiting.iter().flat_map(WaitQueue::iter)
    }
}
