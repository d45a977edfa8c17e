//! The `pinned_client` priority policy (ADR-42, nats-server 2.11+): one client of the
//! consumer's priority group is pinned and gets every message; the others wait as
//! standbys until the pin is released.
//!
//! As nats-server (consumer.go `processNextMsgRequest`, `nextWaiting`):
//! - No pin held: the next message goes to the first waiting request. A request without
//!   an `id` is pinned: it gets a fresh pin id, every message it receives carries it in
//!   `Nats-Pin-Id`, and a `PINNED` advisory names it. A request carrying an `id` (an old
//!   pin) is answered `423 Nats-Wrong-Pin-Id` with its pending counts and removed.
//! - Pin held: only requests carrying its id are served; requests without an id wait
//!   (skipped ones move behind the others, nats-server's `cycle`). A request arriving with
//!   another id is refused at once with `423 Nats-Pin-Id mismatch`.
//! - Every request arriving with the pin's id restarts its timer; when `priority_timeout`
//!   passes without one, the pin is released (`UNPINNED`, reason `timeout`) and the next
//!   message pins the next waiting request. `CONSUMER.UNPIN` releases it at once
//!   (reason `admin`).
//!
//! The pin lives in memory only: nats-server drops it whenever a consumer (re)starts
//! (`setLeader` → `unassignPinId`), so a restart leaves the group unpinned here too.
//! Pin ids are random (like nats-server's NUIDs), so an id from before a restart never
//! matches a pin given after it.

use std::cell::Cell;
use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::rc::Rc;

use super::consumer::Consumer;
use super::effect::{Advisory, Context, Effect, UnpinReason};
use super::sequence::Tick;
use super::settings::PriorityPolicy;
use super::timer_key::TimerKind;
use super::timer_wheel::TimerId;

/// Length of a pin id: as a NUID, 22 base-62 characters (about 131 bits).
const PIN_ID_CHARS: usize = 22;
const BASE62: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// The pin a group holds.
#[derive(Clone, Debug)]
pub struct Pin {
    pub id: Rc<str>,
    pub group: Rc<str>,
    /// When it was given (the shard reports it as `pinned_ts`).
    pub pinned_at: Tick,
    ttl_timer: Option<TimerId>,
}

thread_local! {
    /// SplitMix64 state, seeded once per thread from the process's random hash keys.
    static PIN_ID_STATE: Cell<u64> = Cell::new(RandomState::new().hash_one(0x5049_4e5fu64));
}

fn next_random() -> u64 {
    PIN_ID_STATE.with(|state| {
        let next = state.get().wrapping_add(0x9E37_79B9_7F4A_7C15);
        state.set(next);
        let mut z = next;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    })
}

/// A fresh, unpredictable pin id (22 base-62 characters).
pub fn fresh_pin_id() -> Rc<str> {
    let mut value = (u128::from(next_random()) << 64) | u128::from(next_random());
    let mut id = String::with_capacity(PIN_ID_CHARS);
    for _ in 0..PIN_ID_CHARS {
        id.push(char::from(BASE62[(value % 62) as usize]));
        value /= 62;
    }
    Rc::from(id)
}

impl Consumer {
    /// The group's current pin, if any (for consumer info).
    pub fn pin(&self) -> Option<&Pin> {
        self.pin.as_ref()
    }

    /// `CONSUMER.UNPIN` of `group` (the API layer checked the group is the consumer's):
    /// the pin, if any, is released and an `UNPINNED` advisory (reason `admin`) is sent
    /// even when nothing was pinned, as nats-server does; the next message pins the
    /// next waiting request.
    pub fn unpin(&mut self, group: &str, cx: &mut Context<'_>) {
        if self.deleted {
            return;
        }
        self.release_pin(cx);
        cx.emit(Effect::Advisory(Advisory::Unpinned { group: Rc::from(group), reason: UnpinReason::Admin }));
        self.pump(cx);
        self.finish(cx);
    }

    /// A pull request for this pinned consumer arrived naming `id` (empty: none). With a
    /// pin held, its own id restarts the pin's timer and any other id is refused (`Err`:
    /// nats-server's immediate `423 Nats-Pin-Id mismatch`).
    pub(super) fn admit_pin_id(&mut self, id: &str, cx: &mut Context<'_>) -> Result<(), ()> {
        let Some(pin) = self.pin.as_ref() else { return Ok(()) };
        if id.is_empty() {
            return Ok(());
        }
        if *pin.id != *id {
            return Err(());
        }
        self.arm_pin_ttl(cx);
        Ok(())
    }

    /// Pins `group` to a request being served now; returns the new id.
    pub(super) fn assign_pin(&mut self, group: Rc<str>, cx: &mut Context<'_>) -> Rc<str> {
        let id = fresh_pin_id();
        self.release_pin(cx);
        self.pin = Some(Pin { id: id.clone(), group: group.clone(), pinned_at: cx.now, ttl_timer: None });
        self.arm_pin_ttl(cx);
        cx.emit(Effect::Advisory(Advisory::Pinned { group, pin_id: id.clone() }));
        id
    }

    /// Drops the pin (and its timer) without an advisory.
    pub(super) fn release_pin(&mut self, cx: &mut Context<'_>) {
        if let Some(timer) = self.pin.take().and_then(|pin| pin.ttl_timer) {
            cx.timers.cancel(timer);
        }
    }

    /// The pin's timer fired: the pinned client stopped pulling. The caller pumps next,
    /// which pins the next waiting request.
    pub(super) fn on_pin_ttl(&mut self, cx: &mut Context<'_>) {
        let Some(pin) = self.pin.take() else { return };
        cx.emit(Effect::Advisory(Advisory::Unpinned { group: pin.group, reason: UnpinReason::Timeout }));
    }

    /// A new config: a consumer no longer `pinned_client` keeps no pin.
    pub(super) fn settle_pin_policy(&mut self, cx: &mut Context<'_>) {
        if self.settings.priority_policy != PriorityPolicy::PinnedClient {
            self.release_pin(cx);
        }
    }

    /// (Re)starts the pin's timer at a full `priority_timeout`.
    fn arm_pin_ttl(&mut self, cx: &mut Context<'_>) {
        let key = self.timer_key(TimerKind::PinnedTtl);
        let due = cx.now.after_nanos(self.settings.pinned_ttl_nanos.max(0));
        let Some(pin) = self.pin.as_mut() else { return };
        if let Some(timer) = pin.ttl_timer.take() {
            cx.timers.cancel(timer);
        }
        pin.ttl_timer = Some(cx.timers.schedule(due, key));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pin_ids_are_22_base62_characters_and_differ() {
        let first = fresh_pin_id();
        let second = fresh_pin_id();
        assert_eq!(first.len(), PIN_ID_CHARS);
        assert!(first.bytes().all(|byte| byte.is_ascii_alphanumeric()));
        assert_ne!(first, second);
    }
}
