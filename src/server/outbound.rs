//! A connection's outbound queue: every task on the shard appends protocol bytes to it; one
//! writer task per connection drains it to the socket. Appends never wait: a connection
//! whose queue passes `max_pending` bytes is a slow consumer and is closed, as in
//! nats-server. The shard thread is the only user, so interior mutability is a `RefCell`
//! whose borrows never cross an `.await`.

use std::cell::RefCell;
use std::future::poll_fn;
use std::rc::Rc;
use std::task::{Poll, Waker};

use super::guard::Guard;

/// Why a connection's output ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CloseReason {
    ClientClosed,
    SlowConsumer,
    /// A protocol error; the `-ERR` line was queued before closing.
    ProtocolError,
    StaleConnection,
    ServerShutdown,
    WriteError,
}

pub struct Outbound {
    state: RefCell<State>,
    pending_bytes_max: usize,
    /// Set once CONNECT passed authentication; the auth timeout checks it.
    authenticated: std::cell::Cell<bool>,
    /// Producers waiting for this queue to drain below the stall threshold.
    stalled: RefCell<Vec<Waker>>,
    /// The connection's permissions, when its user has any. Kept here because every
    /// subscription of the connection holds its outbound: deliveries consult it.
    guard: RefCell<Option<Rc<Guard>>>,
}

struct State {
    buffer: Vec<u8>,
    /// Bytes taken by the writer and not yet written.
    in_flight_bytes: usize,
    writer: Option<Waker>,
    closed: Option<CloseReason>,
}

impl Outbound {
    pub fn new(pending_bytes_max: usize) -> Outbound {
        Outbound {
            state: RefCell::new(State {
                buffer: Vec::new(),
                in_flight_bytes: 0,
                writer: None,
                closed: None,
            }),
            pending_bytes_max,
            authenticated: std::cell::Cell::new(false),
            stalled: RefCell::new(Vec::new()),
            guard: RefCell::new(None),
        }
    }

    /// The connection's permissions (`None`: everything allowed).
    pub fn guard(&self) -> Option<Rc<Guard>> {
        self.guard.borrow().clone()
    }

    /// Sets (at CONNECT, or on a reload) the connection's permissions.
    pub fn set_guard(&self, guard: Option<Rc<Guard>>) {
        *self.guard.borrow_mut() = guard;
    }

    /// Bytes queued beyond which producers should wait (nats-server stalls producers
    /// at half of max_pending; jetcore stalls earlier, which paces fast publishers
    /// without risking the slow-consumer disconnect).
    fn stall_threshold_bytes(&self) -> usize {
        (self.pending_bytes_max / 2).min(crate::limits::STALL_THRESHOLD_BYTES_MAX)
    }

    /// Whether a producer should wait before sending more here: the bytes queued behind
    /// the batch being written passed the threshold. (The batch in flight is not counted:
    /// it shrinks only when its write completes, and counting it would hold producers for
    /// a whole batch's write instead of until the writer takes the queue.)
    pub fn congested(&self) -> bool {
        let state = self.state.borrow();
        state.closed.is_none() && state.buffer.len() > self.stall_threshold_bytes()
    }

    /// Waits until the queue drained below the stall threshold (or closed). Callers bound
    /// the wait with a timer, as nats-server bounds its producer stalls.
    pub async fn drained(&self) {
        poll_fn(|cx| {
            if !self.congested() {
                return Poll::Ready(());
            }
            self.stalled.borrow_mut().push(cx.waker().clone());
            Poll::Pending
        })
        .await
    }

    fn wake_stalled(&self) {
        let wakers = std::mem::take(&mut *self.stalled.borrow_mut());
        for waker in wakers {
            waker.wake();
        }
    }

    pub fn set_authenticated(&self) {
        self.authenticated.set(true);
    }

    pub fn authenticated(&self) -> bool {
        self.authenticated.get()
    }

    /// Appends bytes through `encode`. Returns false when the connection is closed (or
    /// became a slow consumer by this append, in which case it is closed now).
    pub fn push(&self, encode: impl FnOnce(&mut Vec<u8>)) -> bool {
        let mut state = self.state.borrow_mut();
        if state.closed.is_some() {
            return false;
        }
        encode(&mut state.buffer);
        if state.buffer.len() + state.in_flight_bytes > self.pending_bytes_max {
            state.closed = Some(CloseReason::SlowConsumer);
            state.buffer.clear();
        }
        if let Some(writer) = state.writer.take() {
            writer.wake();
        }
        state.closed.is_none()
    }

    /// Queues `bytes` (e.g. a final `-ERR`) and closes for `reason` once they are written.
    pub fn close_after(&self, bytes: &[u8], reason: CloseReason) {
        let mut state = self.state.borrow_mut();
        if state.closed.is_none() {
            state.buffer.extend_from_slice(bytes);
            state.closed = Some(reason);
        }
        if let Some(writer) = state.writer.take() {
            writer.wake();
        }
    }

    /// Queues `-ERR 'text'` and closes for `reason` once it is written.
    pub fn close_with_error(&self, text: &str, reason: CloseReason) {
        let mut line = Vec::new();
        crate::protocol::encode_err(&mut line, text);
        self.close_after(&line, reason);
    }

    pub fn close(&self, reason: CloseReason) {
        self.close_after(&[], reason);
    }

    pub fn closed(&self) -> Option<CloseReason> {
        self.state.borrow().closed.clone()
    }

    pub fn pending_bytes(&self) -> usize {
        let state = self.state.borrow();
        state.buffer.len() + state.in_flight_bytes
    }

    /// Waits for bytes to write and swaps them out for `spare` (which must be empty).
    /// Returns `None` once the queue is closed and everything before the close is taken.
    /// Each call also means the previous batch is written, so stalled producers re-check.
    pub async fn take(&self, mut spare: Vec<u8>) -> Option<Vec<u8>> {
        debug_assert!(spare.is_empty());
        poll_fn(move |cx| {
            let taken = {
                let mut state = self.state.borrow_mut();
                if !state.buffer.is_empty() {
                    std::mem::swap(&mut state.buffer, &mut spare);
                    state.in_flight_bytes = spare.len();
                    Poll::Ready(Some(std::mem::take(&mut spare)))
                } else {
                    state.in_flight_bytes = 0;
                    if state.closed.is_some() {
                        // Nothing more is written: the queue's memory goes back now,
                        // even while subscriptions still hold this outbound.
                        state.buffer = Vec::new();
                        Poll::Ready(None)
                    } else {
                        state.writer = Some(cx.waker().clone());
                        Poll::Pending
                    }
                }
            };
            self.wake_stalled();
            taken
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slow_consumer_closes_at_the_limit() {
        let outbound = Outbound::new(10);
        assert!(outbound.push(|out| out.extend_from_slice(b"12345")));
        assert!(!outbound.push(|out| out.extend_from_slice(b"123456")));
        assert_eq!(outbound.closed(), Some(CloseReason::SlowConsumer));
        assert!(!outbound.push(|out| out.extend_from_slice(b"1")));
    }

    #[test]
    fn take_returns_queued_bytes_then_none_after_close() {
        let outbound = Outbound::new(1024);
        outbound.push(|out| out.extend_from_slice(b"PING\r\n"));
        outbound.close_after(b"-ERR 'x'\r\n", CloseReason::ProtocolError);
        let batch = futures_lite::future::block_on(outbound.take(Vec::new())).unwrap();
        assert_eq!(batch, b"PING\r\n-ERR 'x'\r\n");
        assert_eq!(futures_lite::future::block_on(outbound.take(Vec::new())), None);
    }
}
