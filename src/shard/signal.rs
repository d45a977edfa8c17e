//! A wake-up between two tasks of one shard, for a task that should sleep until there is
//! work instead of polling on a timer.
//!
//! CONTRACT: any task on the shard may `notify()`; one task at a time awaits `notified()`,
//! which resolves once `notify` was called since it last resolved (a notification that
//! comes before the wait is kept, never lost; several coalesce into one). So a waiter checks
//! for work, and if it finds none awaits `notified()`: work that arrives between the check
//! and the wait still wakes it. Not `Sync`: a signal from another thread goes through the
//! shard's doorbell (`ShardContext::foreign_signal`).

use std::cell::{Cell, RefCell};
use std::future::{poll_fn, Future};
use std::task::{Poll, Waker};

#[derive(Default)]
pub struct LocalSignal {
    notified: Cell<bool>,
    waker: RefCell<Option<Waker>>,
}

impl LocalSignal {
    /// Marks work as arrived and wakes the waiter, if one waits.
    pub fn notify(&self) {
        self.notified.set(true);
        if let Some(waker) = self.waker.borrow_mut().take() {
            waker.wake();
        }
    }

    /// Resolves once `notify` was called since the last time this resolved.
    pub fn notified(&self) -> impl Future<Output = ()> + '_ {
        poll_fn(move |cx| {
            if self.notified.replace(false) {
                return Poll::Ready(());
            }
            *self.waker.borrow_mut() = Some(cx.waker().clone());
            Poll::Pending
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_notification_before_the_wait_is_kept_and_several_coalesce() {
        let signal = LocalSignal::default();
        signal.notify();
        signal.notify();
        futures_lite::future::block_on(signal.notified());
        let mut waiting = Box::pin(signal.notified());
        let waker = futures_lite::future::block_on(poll_fn(|cx| Poll::Ready(cx.waker().clone())));
        let mut context = std::task::Context::from_waker(&waker);
        assert!(waiting.as_mut().poll(&mut context).is_pending(), "both coalesced into one");
        signal.notify();
        assert!(waiting.as_mut().poll(&mut context).is_ready());
    }
}
