//! Park/wake handshake between a task that waits on rings and the threads that fill them.
//!
//! CONTRACT: one waiting task per `Parking` at a time, on the shard that owns the `Parking`
//! (its "owner"); any number of notifying threads. The waiter never misses a notification
//! that follows a value it could not see:
//!
//! ```text
//!   waiter (owner shard)                      notifier (any other shard)
//!   1. look at the rings: nothing             a. push into a ring (Release)
//!   2. register(waker)                        b. notify(): fence(SeqCst)
//!   3. park(): parked = true; fence(SeqCst)   c.   if parked.swap(false):
//!   4. look at the rings again: if something,        notified = true; ring owner's doorbell
//!      unpark() and run; else return Pending  d. owner's doorbell task: deliver() wakes
//! ```
//!
//! The two SeqCst fences order (3, 4) against (a, b, c) as in Dekker's algorithm: either the
//! waiter's re-check in 4 sees the push from a, or the notifier's load in c sees `parked`, or
//! both. So a value is never left in a ring while its receiver sleeps. A notifier that finds
//! `parked` false pays one fence and one load: the hot path when the receiver is busy.
//!
//! Why a doorbell and not `Waker::wake` from the notifier's thread: glommio 0.9 does support
//! foreign wakes (it queues the waker on the owner's channel and writes the owner's eventfd,
//! whose read sits in the latency ring, which a sleeping executor watches through a poll on
//! that ring's fd). Under the mesh stress test they are lost: with a 1 ms preempt timer the
//! test hangs, both executors asleep in io_uring_enter with the waker queued; with the
//! default 100 ms it stalls up to 100 ms at a time (until the preempt timer fires), and a
//! timer on the owner releases every stall (glommio's shared channels hang the same way,
//! perf/mesh.md). The doorbell is a plain socket poll on the main ring, the ring the
//! executor sleeps on, and runs the same test without a stall. So the owner's waker never leaves its thread:
//! a notifier writes one byte to the owner's doorbell (a Unix socket pair), and a task on the
//! owner (`answer_doorbell`) reads it through glommio's ordinary socket path (an io_uring recv
//! on the main ring, the same path as client TCP reads) and wakes the waiter locally.

use std::cell::UnsafeCell;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{fence, AtomicBool, Ordering};
use std::sync::Arc;
use std::task::Waker;

use crossbeam_utils::{Backoff, CachePadded};

/// The write end of a shard's doorbell; any thread may ring it.
pub struct Doorbell {
    writer: UnixStream,
}

impl Doorbell {
    /// A new doorbell and the read end its owner shard listens on.
    pub fn pair() -> io::Result<(Arc<Doorbell>, UnixStream)> {
        let (writer, reader) = UnixStream::pair()?;
        writer.set_nonblocking(true)?;
        reader.set_nonblocking(true)?;
        Ok((Arc::new(Doorbell { writer }), reader))
    }

    /// Writes one byte. A full socket buffer means wake-ups are already pending: enough.
    /// A closed reader means the owner shard is gone: nobody left to wake.
    fn ring(&self) {
        let byte = 1u8;
        loop {
            // SAFETY: the fd is open for the life of `self.writer`; the buffer is one valid byte.
            // MSG_NOSIGNAL: a closed reader must not raise SIGPIPE in an embedding program.
            let sent = unsafe {
                libc::send(
                    self.writer.as_raw_fd(),
                    (&byte as *const u8).cast(),
                    1,
                    libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
                )
            };
            if sent == 1 {
                return;
            }
            let error = io::Error::last_os_error();
            match error.kind() {
                io::ErrorKind::Interrupted => continue,
                io::ErrorKind::WouldBlock | io::ErrorKind::BrokenPipe => return,
                _ => panic!("shard doorbell write failed: {error}"),
            }
        }
    }
}

/// One waiter's parked flag and waker.
pub struct Parking {
    /// True while the waiter is (about to be) asleep and wants a wake-up.
    parked: CachePadded<AtomicBool>,
    /// Set by the notifier that took the wake-up; the owner's doorbell task delivers it.
    notified: AtomicBool,
    /// Touched only on the owner's thread.
    slot: WakerSlot,
    /// The owner shard's doorbell.
    doorbell: Arc<Doorbell>,
}

impl Parking {
    pub fn new(doorbell: Arc<Doorbell>) -> Self {
        Self {
            parked: CachePadded::new(AtomicBool::new(false)),
            notified: AtomicBool::new(false),
            slot: WakerSlot::new(),
            doorbell,
        }
    }

    /// Step 2: remembers who to wake. Owner thread, before `park`.
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
    /// Returns whether it rang the owner's doorbell.
    pub fn notify(&self) -> bool {
        fence(Ordering::SeqCst);
        if !self.parked.load(Ordering::Relaxed) {
            return false;
        }
        if !self.parked.swap(false, Ordering::AcqRel) {
            return false; // Another notifier took this wake-up.
        }
        self.notified.store(true, Ordering::SeqCst);
        self.doorbell.ring(); // A syscall: the store above is visible to the reader after it.
        true
    }

    /// Cheap variant of `notify` for a hot path: a relaxed look at the flag, no fence. It may
    /// miss a waiter that parked just now; callers pair it with a later full `notify`.
    pub fn notify_if_flagged(&self) -> bool {
        self.parked.load(Ordering::Relaxed) && self.notify()
    }

    /// Step d, on the owner's thread after its doorbell rang: wakes the waiter if a notifier
    /// asked for it. Returns whether it woke one.
    pub fn deliver(&self) -> bool {
        if !self.notified.swap(false, Ordering::AcqRel) {
            return false;
        }
        match self.slot.take() {
            Some(waker) => {
                waker.wake();
                true
            }
            None => false,
        }
    }

    /// Flags and whether a waker is registered, for diagnostics.
    pub fn debug_state(&self) -> String {
        let registered = self.slot.with_lock(|slot| slot.is_some());
        format!(
            "parked={} notified={} waker={registered}",
            self.parked.load(Ordering::SeqCst),
            self.notified.load(Ordering::SeqCst)
        )
    }

    /// Drops the registered waker. Owner thread, when it stops waiting for good.
    pub fn clear(&self) {
        self.parked.store(false, Ordering::Relaxed);
        drop(self.slot.take());
    }
}

/// Lets plain threads (signals, monitoring) wake one task on a shard without a timer poll:
/// the same park/notify handshake as the mesh rings (see the module doc), on the shard's
/// doorbell. Made by `ShardContext::foreign_signal`.
///
/// CONTRACT: a notifier first makes its work visible to the waiter's `look` (e.g. pushes it
/// under a mutex), then calls `notify`. One task on the owner shard awaits `wait_for(look)`,
/// which returns the first thing `look` finds. Ordering: the waiter's `park` (store, SeqCst
/// fence) precedes its second look; the notifier's push precedes its SeqCst fence and its
/// load of `parked`. So either that second look sees the push, or the notifier sees `parked`
/// and rings the doorbell: a notification racing the waiter's park is never lost.
pub struct ForeignSignal {
    parking: Parking,
}

impl ForeignSignal {
    pub(super) fn new(doorbell: Arc<Doorbell>) -> Self {
        Self { parking: Parking::new(doorbell) }
    }

    /// Any thread, after the work is visible: wakes the waiter if it is parked.
    pub fn notify(&self) {
        self.parking.notify();
    }

    /// The owner's doorbell task: hands over a pending wake-up.
    pub(super) fn deliver(&self) {
        self.parking.deliver();
    }

    /// Owner shard, one task at a time: resolves with what `look` finds, sleeping (no timer)
    /// while it finds nothing.
    pub async fn wait_for<T>(&self, mut look: impl FnMut() -> Option<T>) -> T {
        let parking = &self.parking;
        std::future::poll_fn(|task| {
            parking.unpark();
            if let Some(found) = look() {
                return std::task::Poll::Ready(found);
            }
            parking.register(task.waker());
            parking.park();
            match look() {
                Some(found) => {
                    parking.unpark();
                    std::task::Poll::Ready(found)
                }
                None => std::task::Poll::Pending,
            }
        })
        .await
    }
}

/// `Option<Waker>` behind a one-bit spin lock. Only the owner thread touches it, so the lock
/// is never contended; it exists so that `Parking` is `Sync` without `unsafe` reasoning about
/// which thread calls what.
struct WakerSlot {
    locked: AtomicBool,
    waker: UnsafeCell<Option<Waker>>,
}

// SAFETY: `waker` is only accessed while `locked` is held (Acquire on lock, Release on unlock),
// and `Waker` is `Send + Sync`.
unsafe impl Sync for WakerSlot {}

impl WakerSlot {
    fn new() -> Self {
        Self { locked: AtomicBool::new(false), waker: UnsafeCell::new(None) }
    }

    fn with_lock<R>(&self, body: impl FnOnce(&mut Option<Waker>) -> R) -> R {
        let backoff = Backoff::new();
        while self.locked.compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed).is_err() {
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
    use std::io::Read;
    use std::sync::atomic::AtomicUsize;
    use std::task::Wake;

    struct CountingWaker(AtomicUsize);
    impl Wake for CountingWaker {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn doorbell_bytes(reader: &mut UnixStream) -> usize {
        let mut buffer = [0u8; 16];
        reader.read(&mut buffer).unwrap_or(0)
    }

    #[test]
    fn notify_rings_only_for_a_parked_waiter_and_only_once() {
        let (doorbell, mut reader) = Doorbell::pair().unwrap();
        let counter = Arc::new(CountingWaker(AtomicUsize::new(0)));
        let parking = Parking::new(doorbell);
        parking.register(&Waker::from(counter.clone()));
        assert!(!parking.notify(), "not parked: no ring");
        assert_eq!(doorbell_bytes(&mut reader), 0);
        parking.park();
        assert!(parking.notify());
        assert!(!parking.notify(), "second notifier finds the flag already taken");
        assert_eq!(doorbell_bytes(&mut reader), 1);
        assert_eq!(counter.0.load(Ordering::SeqCst), 0, "the notifier never wakes directly");
        assert!(parking.deliver());
        assert!(!parking.deliver(), "one delivery per notification");
        assert_eq!(counter.0.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn unpark_and_clear_suppress_wakes() {
        let (doorbell, mut reader) = Doorbell::pair().unwrap();
        let counter = Arc::new(CountingWaker(AtomicUsize::new(0)));
        let parking = Parking::new(doorbell);
        parking.register(&Waker::from(counter.clone()));
        parking.park();
        parking.unpark();
        assert!(!parking.notify());
        parking.park();
        parking.clear();
        assert!(!parking.notify());
        assert!(!parking.deliver());
        assert_eq!(doorbell_bytes(&mut reader), 0);
        assert_eq!(counter.0.load(Ordering::SeqCst), 0);
        assert_eq!(Arc::strong_count(&counter), 1, "clear dropped the registered waker");
    }

    #[test]
    fn ringing_a_full_or_closed_doorbell_does_not_fail() {
        let (doorbell, reader) = Doorbell::pair().unwrap();
        for _ in 0..100_000 {
            doorbell.ring(); // Fills the socket buffer, then WouldBlock is ignored.
        }
        drop(reader);
        doorbell.ring(); // EPIPE is ignored, and MSG_NOSIGNAL keeps SIGPIPE away.
    }
}
