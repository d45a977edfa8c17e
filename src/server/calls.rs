//! Request/response between shards over the mesh: a shard sends `Envelope::Call` with an
//! id and awaits the matching `Envelope::Return`. Used where one shard needs another's
//! answer (creating a stream on its owner, gathering stream and account state).

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::future::poll_fn;
use std::task::{Poll, Waker};

/// Outstanding calls of one shard, keyed by id.
pub struct Calls<R> {
    next_id: Cell<u64>,
    pending: RefCell<HashMap<u64, Slot<R>>>,
}

struct Slot<R> {
    result: Option<R>,
    waker: Option<Waker>,
}

impl<R> Default for Calls<R> {
    fn default() -> Self {
        Calls { next_id: Cell::new(0), pending: RefCell::new(HashMap::new()) }
    }
}

impl<R> Calls<R> {
    /// Registers a call; send the envelope with this id, then `wait` for it.
    pub fn open(&self) -> u64 {
        let id = self.next_id.get() + 1;
        self.next_id.set(id);
        self.pending.borrow_mut().insert(id, Slot { result: None, waker: None });
        id
    }

    /// Delivers a result (from the mesh loop). Unknown ids are ignored.
    pub fn complete(&self, id: u64, result: R) {
        let mut pending = self.pending.borrow_mut();
        if let Some(slot) = pending.get_mut(&id) {
            slot.result = Some(result);
            if let Some(waker) = slot.waker.take() {
                waker.wake();
            }
        }
    }

    pub async fn wait(&self, id: u64) -> R {
        poll_fn(|cx| {
            let mut pending = self.pending.borrow_mut();
            let Some(slot) = pending.get_mut(&id) else {
                unreachable!("call {id} waited on twice or never opened");
            };
            match slot.result.take() {
                Some(result) => {
                    pending.remove(&id);
                    Poll::Ready(result)
                }
                None => {
                    slot.waker = Some(cx.waker().clone());
                    Poll::Pending
                }
            }
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_completed_call_returns_its_result() {
        let calls: Calls<&str> = Calls::default();
        let first = calls.open();
        let second = calls.open();
        assert_ne!(first, second);
        calls.complete(second, "two");
        calls.complete(first, "one");
        calls.complete(99, "nobody");
        assert_eq!(futures_lite::future::block_on(calls.wait(first)), "one");
        assert_eq!(futures_lite::future::block_on(calls.wait(second)), "two");
    }
}
