//! A bounded single-producer single-consumer lock-free ring: one per ordered pair of shards.
//!
//! CONTRACT: `ring::channel(capacity)` returns a `(Producer, Consumer)` pair. Exactly one thread
//! owns each end (the types are `Send` but not `Clone`, and every operation takes `&mut self`).
//! `Producer::push` never blocks and never drops: a full ring hands the value back. Values come
//! out of `Consumer::pop` in push order, each exactly once. Values still in the ring when both
//! ends are gone are dropped with it.
//!
//! Layout: `tail` (written by the producer) and `head` (written by the consumer) live on
//! separate cache lines (`CachePadded`), so the two cores do not false-share. Each end also
//! keeps a private copy of the other end's index and reloads the shared atomic only when its
//! copy says "full" / "empty": in steady state a push or pop touches one shared line.
//! Indices run freely (wrapping `usize`); the slot is `index & mask`.
//!
//! Memory ordering: the producer writes the slot, then publishes it with a `Release` store of
//! `tail`; the consumer's `Acquire` load of `tail` makes the slot's contents visible. Symmetric
//! for `head`, which returns slots to the producer.

use std::cell::UnsafeCell;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crossbeam_utils::CachePadded;

/// The storage shared by both ends.
struct Ring<T> {
    /// Next index the consumer will read. Written only by the consumer.
    head: CachePadded<AtomicUsize>,
    /// Next index the producer will write. Written only by the producer.
    tail: CachePadded<AtomicUsize>,
    /// `capacity - 1`; capacity is a power of two.
    mask: usize,
    slots: Box<[UnsafeCell<MaybeUninit<T>>]>,
}

// SAFETY: a slot is accessed by at most one side at a time: the producer only writes slots in
// [tail, head + capacity) and the consumer only reads slots in [head, tail); the Release/Acquire
// pairs on `head` and `tail` hand each slot over. Values of `T` cross threads, hence `T: Send`.
unsafe impl<T: Send> Sync for Ring<T> {}
// SAFETY: as above; the ring owns `T`s and may drop them on whichever thread drops it last.
unsafe impl<T: Send> Send for Ring<T> {}

impl<T> Ring<T> {
    fn capacity(&self) -> usize {
        self.mask + 1
    }
}

impl<T> Drop for Ring<T> {
    fn drop(&mut self) {
        // `&mut self`: both ends are gone, so no other thread touches the indices.
        let head = *self.head.get_mut();
        let tail = *self.tail.get_mut();
        let mut index = head;
        while index != tail {
            let slot = &mut self.slots[index & self.mask];
            // SAFETY: slots in [head, tail) were written by push and not yet read by pop.
            unsafe { slot.get_mut().assume_init_drop() };
            index = index.wrapping_add(1);
        }
    }
}

/// The sending end. Owned by one thread.
pub struct Producer<T> {
    ring: Arc<Ring<T>>,
    /// Private copy of `tail` (only this end writes it).
    tail: usize,
    /// Last `head` seen; the ring has at least `head_cached + capacity - tail` free slots.
    head_cached: usize,
}

/// The receiving end. Owned by one thread.
pub struct Consumer<T> {
    ring: Arc<Ring<T>>,
    /// Private copy of `head` (only this end writes it).
    head: usize,
    /// Last `tail` seen; at least `tail_cached - head` values are ready.
    tail_cached: usize,
}

/// Creates a ring holding up to `capacity` values.
///
/// Panics if `capacity` is zero or not a power of two (a bug in the caller's limits).
pub fn channel<T>(capacity: usize) -> (Producer<T>, Consumer<T>) {
    assert!(capacity.is_power_of_two(), "ring capacity {capacity} must be a power of two");
    let slots = (0..capacity).map(|_| UnsafeCell::new(MaybeUninit::uninit())).collect();
    let ring = Arc::new(Ring {
        head: CachePadded::new(AtomicUsize::new(0)),
        tail: CachePadded::new(AtomicUsize::new(0)),
        mask: capacity - 1,
        slots,
    });
    let producer = Producer { ring: ring.clone(), tail: 0, head_cached: 0 };
    let consumer = Consumer { ring, head: 0, tail_cached: 0 };
    (producer, consumer)
}

impl<T> Producer<T> {
    /// Appends `value`, or returns it when the ring is full (backpressure, not loss).
    /// After `Ok`, the value is visible to the consumer's next `pop`.
    pub fn push(&mut self, value: T) -> Result<(), T> {
        let capacity = self.ring.capacity();
        if self.tail.wrapping_sub(self.head_cached) == capacity {
            self.head_cached = self.ring.head.load(Ordering::Acquire);
            if self.tail.wrapping_sub(self.head_cached) == capacity {
                return Err(value);
            }
        }
        let slot = &self.ring.slots[self.tail & self.ring.mask];
        // SAFETY: tail - head < capacity, so this slot is free: the consumer has finished with
        // it (its Release store of `head` past it was Acquire-loaded above or earlier) and will
        // not read it until the Release store of `tail` below.
        unsafe { (*slot.get()).write(value) };
        self.tail = self.tail.wrapping_add(1);
        self.ring.tail.store(self.tail, Ordering::Release);
        Ok(())
    }

    /// True when a `push` now would fail. May be stale by the time the caller acts on it
    /// (the consumer can free room at any moment), never in the unsafe direction for `false`.
    pub fn is_full(&mut self) -> bool {
        self.head_cached = self.ring.head.load(Ordering::Acquire);
        self.tail.wrapping_sub(self.head_cached) == self.ring.capacity()
    }

    /// Number of values the ring holds at most.
    pub fn capacity(&self) -> usize {
        self.ring.capacity()
    }

    /// Values in the ring now (its fill level), for monitoring. One atomic load of `head`,
    /// no lock and no write: the consumer may take more at any moment, so this may count
    /// values already gone, never miss one this end pushed.
    pub fn len(&self) -> usize {
        self.tail.wrapping_sub(self.ring.head.load(Ordering::Acquire))
    }

    /// True when `len` is 0.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<T> Consumer<T> {
    /// Removes the oldest value, or `None` when the ring is empty.
    pub fn pop(&mut self) -> Option<T> {
        if self.head == self.tail_cached {
            self.tail_cached = self.ring.tail.load(Ordering::Acquire);
            if self.head == self.tail_cached {
                return None;
            }
        }
        let slot = &self.ring.slots[self.head & self.ring.mask];
        // SAFETY: head < tail: the producer wrote this slot before its Release store of `tail`,
        // which we Acquire-loaded; it will not touch the slot again until we advance `head`.
        let value = unsafe { (*slot.get()).assume_init_read() };
        self.head = self.head.wrapping_add(1);
        self.ring.head.store(self.head, Ordering::Release);
        Some(value)
    }

    /// True when the ring holds no value the consumer can see right now.
    pub fn is_empty(&mut self) -> bool {
        if self.head != self.tail_cached {
            return false;
        }
        self.tail_cached = self.ring.tail.load(Ordering::Acquire);
        self.head == self.tail_cached
    }
}

impl<T> Producer<T> {
    /// Shared indices, for diagnostics.
    pub fn debug_state(&self) -> String {
        debug_indices(&self.ring)
    }
}

impl<T> Consumer<T> {
    /// Shared indices, for diagnostics.
    pub fn debug_state(&self) -> String {
        debug_indices(&self.ring)
    }
}

fn debug_indices<T>(ring: &Ring<T>) -> String {
    format!("head={} tail={}", ring.head.load(Ordering::SeqCst), ring.tail.load(Ordering::SeqCst))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::rc::Rc;

    #[test]
    fn full_ring_returns_value_and_preserves_order() {
        let (mut producer, mut consumer) = channel::<u32>(4);
        for value in 0..4 {
            producer.push(value).unwrap();
        }
        assert_eq!(producer.push(99), Err(99));
        assert!(producer.is_full());
        assert_eq!(producer.len(), 4);
        assert_eq!(consumer.pop(), Some(0));
        producer.push(4).unwrap();
        assert_eq!(producer.len(), 4);
        let drained: Vec<u32> = std::iter::from_fn(|| consumer.pop()).collect();
        assert_eq!(drained, vec![1, 2, 3, 4]);
        assert_eq!(producer.len(), 0);
        assert!(consumer.is_empty());
    }

    #[test]
    fn indices_wrap_past_capacity_many_times() {
        let (mut producer, mut consumer) = channel::<usize>(2);
        for value in 0..10_000 {
            producer.push(value).unwrap();
            assert_eq!(producer.len(), 1);
            assert_eq!(consumer.pop(), Some(value));
            assert!(producer.is_empty());
        }
        assert_eq!(consumer.pop(), None);
    }

    #[test]
    fn values_left_in_ring_are_dropped_once() {
        let counter = Rc::new(());
        {
            let (mut producer, mut consumer) = channel::<Rc<()>>(8);
            for _ in 0..5 {
                producer.push(counter.clone()).unwrap();
            }
            drop(consumer.pop());
            assert_eq!(Rc::strong_count(&counter), 5);
        }
        assert_eq!(Rc::strong_count(&counter), 1);
    }

    #[test]
    #[should_panic(expected = "power of two")]
    fn capacity_must_be_power_of_two() {
        let _ = channel::<u8>(3);
    }
}
