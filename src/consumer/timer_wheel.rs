//! One hashed, hierarchical timing wheel per shard for every consumer's deadlines.
//!
//! Six levels of 64 slots: level `L` slots are `64^L` ticks wide. A timer goes to the
//! level of the highest 6-bit group in which its deadline differs from the wheel's
//! current tick, so every timer in a level-`L` slot lies inside that slot's span, and
//! slots are never revisited before they are due. When a slot above level 0 comes due its
//! timers move down (cascade) until they reach level 0, where a slot is a single tick.
//! Deadlines more than `2^36` ticks away wait in an overflow list that is re-examined when
//! the wheel crosses into the next top-level span.
//!
//! Costs: `schedule` and `cancel` are O(1) (a slab plus intrusive doubly-linked slot
//! lists); `advance` is O(slots visited + timers expired + cascades), and each timer
//! cascades at most `TIMER_WHEEL_LEVELS` times. The wheel never reads a clock: the shard
//! passes the current tick to [`TimerWheel::advance`].

use crate::limits::{TIMER_WHEEL_LEVELS, TIMER_WHEEL_LEVEL_BITS, TIMER_WHEEL_TIMERS_MAX};

use super::sequence::Tick;

const SLOTS_PER_LEVEL: usize = 1 << TIMER_WHEEL_LEVEL_BITS;
const SLOT_MASK: u64 = SLOTS_PER_LEVEL as u64 - 1;
const LEVEL_LISTS: usize = SLOTS_PER_LEVEL * TIMER_WHEEL_LEVELS;
/// Index of the overflow list, after the level slots.
const OVERFLOW_LIST: u32 = LEVEL_LISTS as u32;
/// List index of a slab entry that holds no timer.
const FREE_LIST: u32 = u32::MAX;
/// "No entry" link.
const NIL: u32 = u32::MAX;
/// Ticks spanned by the whole wheel; deadlines further away overflow.
const WHEEL_SPAN_TICKS: u64 = 1 << (TIMER_WHEEL_LEVEL_BITS as usize * TIMER_WHEEL_LEVELS);

/// Handle of a scheduled timer. Stale handles (fired or cancelled) are recognised by their
/// generation and ignored, so cancelling twice is harmless.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TimerId {
    index: u32,
    generation: u32,
}

/// A timer that came due: its deadline and the key it was scheduled with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Expired<K> {
    pub deadline: Tick,
    pub key: K,
}

struct Entry<K> {
    deadline: u64,
    key: Option<K>,
    generation: u32,
    list: u32,
    previous: u32,
    next: u32,
}

/// The wheel. `K` identifies what a timer is for (see `timer_key::TimerKey`).
pub struct TimerWheel<K> {
    entries: Vec<Entry<K>>,
    free_head: u32,
    heads: Vec<u32>,
    tails: Vec<u32>,
    occupied: [u64; TIMER_WHEEL_LEVELS],
    elapsed: u64,
    len: usize,
}

impl<K: Copy> TimerWheel<K> {
    /// An empty wheel whose current tick is `now`.
    pub fn new(now: Tick) -> TimerWheel<K> {
        TimerWheel {
            entries: Vec::new(),
            free_head: NIL,
            heads: vec![NIL; LEVEL_LISTS + 1],
            tails: vec![NIL; LEVEL_LISTS + 1],
            occupied: [0; TIMER_WHEEL_LEVELS],
            elapsed: now.get(),
            len: 0,
        }
    }

    /// The tick the wheel has advanced to.
    pub fn now(&self) -> Tick {
        Tick(self.elapsed)
    }

    /// Timers scheduled and not yet fired or cancelled.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Schedules `key` to expire at `deadline`. A deadline at or before the current tick
    /// expires on the next `advance`.
    pub fn schedule(&mut self, deadline: Tick, key: K) -> TimerId {
        assert!(self.len < TIMER_WHEEL_TIMERS_MAX, "timer wheel full");
        let index = match self.free_head {
            NIL => {
                self.entries.push(Entry {
                    deadline: 0,
                    key: None,
                    generation: 0,
                    list: FREE_LIST,
                    previous: NIL,
                    next: NIL,
                });
                (self.entries.len() - 1) as u32
            }
            index => {
                self.free_head = self.entries[index as usize].next;
                index
            }
        };
        let entry = &mut self.entries[index as usize];
        entry.deadline = deadline.get();
        entry.key = Some(key);
        let generation = entry.generation;
        self.link(index);
        self.len += 1;
        TimerId { index, generation }
    }

    /// Cancels a timer; returns its key, or `None` if it already fired or was cancelled.
    pub fn cancel(&mut self, id: TimerId) -> Option<K> {
        let entry = self.entries.get(id.index as usize)?;
        if entry.generation != id.generation || entry.list == FREE_LIST {
            return None;
        }
        self.unlink(id.index);
        Some(self.release(id.index))
    }

    /// The deadline of a live timer.
    pub fn deadline(&self, id: TimerId) -> Option<Tick> {
        let entry = self.entries.get(id.index as usize)?;
        (entry.generation == id.generation && entry.list != FREE_LIST).then_some(Tick(entry.deadline))
    }

    /// The earliest tick at which `advance` may have work (a slot or the overflow list
    /// comes due); a lower bound on the next deadline, for sleeping until then.
    pub fn next_wake(&self) -> Option<Tick> {
        self.next_due_list().map(|(tick, _)| Tick(tick))
    }

    /// Moves the wheel to `to` and appends every timer with `deadline <= to` to `expired`,
    /// in deadline order. Ticks never go backwards: an earlier `to` is a no-op.
    pub fn advance(&mut self, to: Tick, expired: &mut Vec<Expired<K>>) {
        let to = to.get();
        while let Some((due, list)) = self.next_due_list() {
            if due > to {
                break;
            }
            self.process_list(due, list, expired);
        }
        self.elapsed = self.elapsed.max(to);
    }

    /// The list that comes due first and when; `None` when the wheel is empty.
    fn next_due_list(&self) -> Option<(u64, u32)> {
        let mut best: Option<(u64, u32)> = None;
        for level in 0..TIMER_WHEEL_LEVELS {
            let occupied = self.occupied[level];
            if occupied == 0 {
                continue;
            }
            let shift = level as u32 * TIMER_WHEEL_LEVEL_BITS;
            let slot_span = 1u64 << shift;
            let level_span = slot_span << TIMER_WHEEL_LEVEL_BITS;
            let current_slot = (self.elapsed >> shift) & SLOT_MASK;
            let offset = u64::from(occupied.rotate_right(current_slot as u32).trailing_zeros());
            let slot = (current_slot + offset) & SLOT_MASK;
            // Timers of a level never lie behind its current slot (see module docs).
            debug_assert!(slot >= current_slot, "timer wheel slot behind the clock");
            let due = (self.elapsed & !(level_span - 1)) + slot * slot_span;
            let list = (level * SLOTS_PER_LEVEL) as u32 + slot as u32;
            if best.is_none_or(|(best_due, _)| due < best_due) {
                best = Some((due.max(self.elapsed), list));
            }
        }
        if self.heads[OVERFLOW_LIST as usize] != NIL {
            let due = (self.elapsed & !(WHEEL_SPAN_TICKS - 1)).saturating_add(WHEEL_SPAN_TICKS);
            if best.is_none_or(|(best_due, _)| due < best_due) {
                best = Some((due, OVERFLOW_LIST));
            }
        }
        best
    }

    /// Sets the clock to `due`, expires the list's due timers and re-files the others
    /// (they move to lower levels, or stay in overflow).
    fn process_list(&mut self, due: u64, list: u32, expired: &mut Vec<Expired<K>>) {
        assert!(due >= self.elapsed, "timer wheel went backwards");
        self.elapsed = due;
        let mut cursor = self.heads[list as usize];
        self.heads[list as usize] = NIL;
        self.tails[list as usize] = NIL;
        if list != OVERFLOW_LIST {
            let level = list as usize / SLOTS_PER_LEVEL;
            self.occupied[level] &= !(1u64 << (list as usize % SLOTS_PER_LEVEL));
        }
        let first_expired = expired.len();
        while cursor != NIL {
            let index = cursor;
            let entry = &mut self.entries[index as usize];
            cursor = entry.next;
            entry.list = FREE_LIST;
            if entry.deadline <= self.elapsed {
                let deadline = Tick(entry.deadline);
                let key = self.release(index);
                expired.push(Expired { deadline, key });
            } else {
                self.link(index);
            }
        }
        // Timers scheduled in the past share the current slot; keep deadline order
        // (a stable sort, so equal deadlines stay in schedule order).
        expired[first_expired..].sort_by_key(|timer| timer.deadline);
    }

    /// The list a deadline belongs in, relative to the current tick.
    fn list_for(&self, deadline: u64) -> u32 {
        if deadline <= self.elapsed {
            return (self.elapsed & SLOT_MASK) as u32;
        }
        let differing = (self.elapsed ^ deadline) | SLOT_MASK;
        let significant = 63 - differing.leading_zeros();
        let level = (significant / TIMER_WHEEL_LEVEL_BITS) as usize;
        if level >= TIMER_WHEEL_LEVELS {
            return OVERFLOW_LIST;
        }
        let slot = (deadline >> (level as u32 * TIMER_WHEEL_LEVEL_BITS)) & SLOT_MASK;
        (level * SLOTS_PER_LEVEL) as u32 + slot as u32
    }

    /// Appends the entry to the tail of its list, so timers with equal deadlines fire in
    /// the order they were scheduled (cascading keeps that order).
    fn link(&mut self, index: u32) {
        let list = self.list_for(self.entries[index as usize].deadline);
        let tail = self.tails[list as usize];
        if tail != NIL {
            self.entries[tail as usize].next = index;
        } else {
            self.heads[list as usize] = index;
        }
        self.tails[list as usize] = index;
        let entry = &mut self.entries[index as usize];
        entry.list = list;
        entry.previous = tail;
        entry.next = NIL;
        if list != OVERFLOW_LIST {
            let level = list as usize / SLOTS_PER_LEVEL;
            self.occupied[level] |= 1u64 << (list as usize % SLOTS_PER_LEVEL);
        }
    }

    fn unlink(&mut self, index: u32) {
        let Entry { list, previous, next, .. } = self.entries[index as usize];
        if previous != NIL {
            self.entries[previous as usize].next = next;
        } else {
            self.heads[list as usize] = next;
        }
        if next != NIL {
            self.entries[next as usize].previous = previous;
        } else {
            self.tails[list as usize] = previous;
        }
        if self.heads[list as usize] == NIL && list != OVERFLOW_LIST {
            let level = list as usize / SLOTS_PER_LEVEL;
            self.occupied[level] &= !(1u64 << (list as usize % SLOTS_PER_LEVEL));
        }
        self.entries[index as usize].list = FREE_LIST;
    }

    /// Returns an unlinked entry to the free list and hands back its key.
    fn release(&mut self, index: u32) -> K {
        let entry = &mut self.entries[index as usize];
        entry.list = FREE_LIST;
        entry.generation = entry.generation.wrapping_add(1);
        entry.previous = NIL;
        entry.next = self.free_head;
        self.free_head = index;
        self.len -= 1;
        entry.key.take().expect("live timer entry has a key")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fire(wheel: &mut TimerWheel<u32>, to: u64) -> Vec<(u64, u32)> {
        let mut expired = Vec::new();
        wheel.advance(Tick(to), &mut expired);
        expired.into_iter().map(|e| (e.deadline.get(), e.key)).collect()
    }

    #[test]
    fn fires_at_deadline_not_before() {
        let mut wheel = TimerWheel::new(Tick(0));
        wheel.schedule(Tick(5), 1);
        wheel.schedule(Tick(70), 2);
        wheel.schedule(Tick(5000), 3);
        assert_eq!(fire(&mut wheel, 4), vec![]);
        assert_eq!(fire(&mut wheel, 5), vec![(5, 1)]);
        assert_eq!(fire(&mut wheel, 69), vec![]);
        assert_eq!(fire(&mut wheel, 10_000), vec![(70, 2), (5000, 3)]);
        assert!(wheel.is_empty());
    }

    #[test]
    fn cancel_is_idempotent_and_past_deadlines_fire_next() {
        let mut wheel = TimerWheel::new(Tick(100));
        let id = wheel.schedule(Tick(200), 1);
        assert_eq!(wheel.cancel(id), Some(1));
        assert_eq!(wheel.cancel(id), None);
        wheel.schedule(Tick(50), 2);
        assert_eq!(fire(&mut wheel, 100), vec![(50, 2)]);
    }

    #[test]
    fn overflow_deadlines_fire() {
        let mut wheel = TimerWheel::new(Tick(3));
        let far = WHEEL_SPAN_TICKS * 3 + 17;
        wheel.schedule(Tick(far), 9);
        assert_eq!(fire(&mut wheel, far - 1), vec![]);
        assert_eq!(fire(&mut wheel, far), vec![(far, 9)]);
    }
}
