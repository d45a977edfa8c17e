//! Park/wake handshake between a task that waits on rings and the threads that fill them.
//!
//! CONTRACT: one waiting task per `Parking` at a time; any number of notifying threads.
//! The waiter never misses a notification that follows a value it could not see:
//!
//! ```text
//!   waiter (owning shard)                     notifier (any other shard)
//!   1. look at the rings: nothing             a. push into a ring (Release)
//!   2. register(waker)                        b. notify(): fence(SeqCst)
//!   3. park(): parked = true; fence(SeqCst)   c.   if parked.swap(false): take waker, wake
//!   4. look at the rings again: if something, unpark() and run; else return Pending
//! ```
//!
//! The two SeqCst fences order (3, 4) against (a, b, c) as in Dekker's algorithm: either the
//! waiter's re-check in 4 sees the push from a, or the notifier's load in c sees `parked`, or
//! both. So a value is never left in a ring while its receiver sleeps. A notifier that finds
//! `parked` false pays one fence and one load: the hot path when the receiver is busy.
//!
//! The waker handed over is a glommio task waker. glommio 0.9 supports waking a task from a
//! foreign thread: `RawTask::do_wake` sees the caller is not the owning executor, queues a clone
//! of the waker on that executor's `SleepNotifier` channel and writes its eventfd if it is
//! asleep (`should_notify`, made visible by glommio's `membarrier::heavy()` before it sleeps);
//! dropping the waker on the foreign thread only decrements an atomic reference count.

use std::cell::UnsafeCell;
use std::sync::atomic::{fence, AtomicBool, Ordering};
use std::task::Waker;

use crossbeam_utils::{Backoff, CachePadded};

/// One waiter's parked flag and waker.
pub struct Parking {
    /// True while the waiter is (about to be) asleep and wants a wake-up.
    parked: CachePadded<AtomicBool>,
    slot: WakerSlot,
}

impl Parking {
    pub fn new() -> Self {
        Self {
            parked: CachePadded::new(AtomicBool::new(false)),
            slot: WakerSlot::new(),
        }
    }

    /// Step 2: remembers who to wake. Called by the waiter before `park`.
    pub fn register(&self, waker: &Waker) {
        self.slot.store(waker);
    }

    /// Step 3: announces the waiter is going to sleep. The caller must look at its rings again
    /// afterwards and call `unpark` if it found work.
    pub fn park(&self) {
        self.parked.store(true, Ordering::SeqCst);
        fence(Ordering::SeqCst);
    }

    /// The waiter found work after `park`; notifiers need not wake it.
    /// Its waker stays registered: a racing notifier may still wake it once (harmless).
    pub fn unpark(&self) {
        self.parked.store(false, Ordering::Relaxed);
    }

    /// Steps b-c: called by a notifier after it made a value (or free room) visible.
    /// Returns whether it woke the waiter.
    pub fn notify(&self) -> bool {
        fence(Ordering::SeqCst);
        if !self.parked.load(Ordering::Relaxed) {
            return false;
        }
        if !self.parked.swap(false, Ordering::AcqRel) {
            return false; // Another notifier took this wake-up.
        }
        match self.slot.take() {
            Some(waker) => {
                waker.wake();
                true
            }
            None => false,
        }
    }

    /// Cheap variant of `notify` for a hot path: a relaxed look at the flag, no fence. It may
    /// miss a waiter that parked just now; callers pair it with a later full `notify`.
    pub fn notify_if_flagged(&self) -> bool {
        self.parked.load(Ordering::Relaxed) && self.notify()
    }

    /// Drops the registered waker on the caller's thread. The waiter calls this when it stops
    /// waiting for good, so no foreign thread holds the last reference to its task.
    pub fn clear(&self) {
        self.parked.store(false, Ordering::Relaxed);
        drop(self.slot.take());
    }
}

impl Default for Parking {
    fn default() -> Self {
        Self::new()
    }
}

/// `Option<Waker>` behind a one-bit spin lock. The critical sections are a clone or a move of
/// a waker, and the lock is taken only on the parking path, never per message.
struct WakerSlot {
    locked: AtomicBool,
    waker: UnsafeCell<Option<Waker>>,
}

// SAFETY: `waker` is only accessed while `locked` is held (Acquire on lock, Release on unlock),
// and `Waker` is `Send + Sync`.
unsafe impl Sync for WakerSlot {}

impl WakerSlot {
    fn new() -> Self {
        Self {
            locked: AtomicBool::new(false),
            waker: UnsafeCell::new(None),
        }
    }

    fn with_lock<R>(&self, body: impl FnOnce(&mut Option<Waker>) -> R) -> R {
        let backoff = Backoff::new();
        while self
            .locked
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            backoff.snooze();
        }
        // SAFETY: we hold the lock, so no other reference to the slot's contents exists.
        let result = body(unsafe { &mut *self.waker.get() });
        self.locked.store(false, Ordering::Release);
        result
    }

    fn store(&self, waker: &Waker) {
        // Dropping a replaced waker inside the lock is fine: wakers of our own tasks.
        self.with_lock(|slot| match slot {
            Some(current) if current.will_wake(waker) => {}
            _ => *slot = Some(waker.clone()),
        });
    }

    fn take(&self) -> Option<Waker> {
        self.with_lock(Option::take)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::sync::Arc;
    use std::task::Wake;

    struct CountingWaker(AtomicUsize);
    impl Wake for CountingWaker {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn notify_wakes_only_a_parked_waiter_and_only_once() {
        let counter = Arc::new(CountingWaker(AtomicUsize::new(0)));
        let waker = Waker::from(counter.clone());
        let parking = Parking::new();
        parking.register(&waker);
        assert!(!parking.notify(), "not parked: no wake");
        parking.park();
        assert!(parking.notify());
        assert!(
            !parking.notify(),
            "second notifier finds the flag already taken"
        );
        assert_eq!(counter.0.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn unpark_and_clear_suppress_wakes() {
        let counter = Arc::new(CountingWaker(AtomicUsize::new(0)));
        let parking = Parking::new();
        parking.register(&Waker::from(counter.clone()));
        parking.park();
        parking.unpark();
        assert!(!parking.notify());
        parking.park();
        parking.clear();
        assert!(!parking.notify());
        assert_eq!(counter.0.load(Ordering::SeqCst), 0);
        assert_eq!(
            Arc::strong_count(&counter),
            1,
            "clear dropped the registered waker"
        );
    }
}
