//! A connection's outbound queue: every task on the shard appends protocol bytes to it; one
//! writer task per connection drains it to the socket. Appends never wait: a connection
//! whose queue passes `max_pending` bytes is a slow consumer and is closed, as in
//! nats-server. The shard thread is the only user, so interior mutability is a `RefCell`
//! whose borrows never cross an `.await`.
//!
//! The queue is a list of chunks of about `OUTBOUND_CHUNK_BYTES`, written one by one and
//! freed (or kept for reuse) as soon as written. A backlog therefore costs the bytes
//! queued and nothing more: a single growing buffer cost up to twice `max_pending` while
//! it reallocated, on top of the batch being written.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::future::poll_fn;
use std::rc::Rc;
use std::task::{Poll, Waker};

use super::guard::Guard;
use super::handoff::{DeliveryStreak, Gate};
use crate::limits::OUTBOUND_CHUNK_BYTES;
use crate::shard::ShardId;

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
    /// The connection's timer tasks, waiting for the close (`closing`).
    close_waiters: RefCell<Vec<Waker>>,
    /// The connection's permissions, when its user has any. Kept here because every
    /// subscription of the connection holds its outbound: deliveries consult it.
    guard: RefCell<Option<Rc<Guard>>>,
    /// Messages handed to this connection and their header and payload bytes (what
    /// nats-server reports as the connection's `out_msgs` / `out_bytes`: protocol lines
    /// not counted). Kept here because every delivery reaches the connection through it.
    messages_out: std::cell::Cell<u64>,
    message_bytes_out: std::cell::Cell<u64>,
    /// Which shards' deliveries are this connection's while it moves between shards.
    gate: RefCell<Option<Gate>>,
    /// Deliveries in a row from one other shard: a receiving connection's reason to move.
    delivery_streak: DeliveryStreak,
}

struct State {
    /// Bytes not yet taken by the writer, oldest first; appends go to the last chunk.
    chunks: VecDeque<Vec<u8>>,
    /// Sum of the chunks' lengths.
    queued_bytes: usize,
    /// A written chunk kept for the next one (the writer and producers take turns with it,
    /// so a steady stream allocates nothing).
    reusable: Option<Vec<u8>>,
    /// Bytes taken by the writer and not yet written.
    in_flight_bytes: usize,
    /// Chunks the writer has taken so far.
    chunks_taken: u64,
    writer: Option<Waker>,
    closed: Option<CloseReason>,
    /// The connection is being handed to another shard (`handoff.rs`): the writer stops
    /// taking, and what is queued travels with the connection.
    suspended: bool,
}

impl State {
    /// The chunk to append about `len_hint` bytes to: the last one while it has room (or
    /// is short of a chunk's worth), else a new one, sized for the message when larger
    /// than a chunk so that one large message is one allocation of its size.
    fn tail(&mut self, len_hint: usize) -> &mut Vec<u8> {
        let fits = self.chunks.back().is_some_and(|tail| {
            tail.capacity() - tail.len() >= len_hint || tail.len() + len_hint <= OUTBOUND_CHUNK_BYTES
        });
        if !fits {
            let chunk = match self.reusable.take() {
                Some(chunk) if chunk.capacity() >= len_hint => chunk,
                // A connection's first bytes after being idle start small (most
                // connections are sent a few lines); a backlog gets whole chunks.
                _ if self.chunks.is_empty() => Vec::with_capacity(len_hint),
                _ => Vec::with_capacity(len_hint.max(OUTBOUND_CHUNK_BYTES)),
            };
            self.chunks.push_back(chunk);
        }
        let tail = self.chunks.back_mut().expect("a chunk was just ensured");
        if tail.capacity() - tail.len() < len_hint {
            // Doubling, as `Vec` grows, but not past a chunk unless one message needs it.
            let doubled = (tail.capacity() * 2).min(OUTBOUND_CHUNK_BYTES);
            let target = (tail.len() + len_hint).max(doubled);
            tail.reserve_exact(target - tail.len());
        }
        tail
    }

    fn append(&mut self, len_hint: usize, encode: impl FnOnce(&mut Vec<u8>)) {
        let tail = self.tail(len_hint);
        let before = tail.len();
        encode(tail);
        let added = tail.len() - before;
        self.queued_bytes += added;
    }

    fn drop_queued(&mut self) {
        self.chunks = VecDeque::new();
        self.queued_bytes = 0;
        self.reusable = None;
    }
}

impl Outbound {
    pub fn new(pending_bytes_max: usize) -> Outbound {
        Outbound {
            state: RefCell::new(State {
                chunks: VecDeque::new(),
                queued_bytes: 0,
                reusable: None,
                in_flight_bytes: 0,
                chunks_taken: 0,
                writer: None,
                closed: None,
                suspended: false,
            }),
            pending_bytes_max,
            authenticated: std::cell::Cell::new(false),
            stalled: RefCell::new(Vec::new()),
            close_waiters: RefCell::new(Vec::new()),
            guard: RefCell::new(None),
            messages_out: std::cell::Cell::new(0),
            message_bytes_out: std::cell::Cell::new(0),
            gate: RefCell::new(None),
            delivery_streak: DeliveryStreak::default(),
        }
    }

    /// Carries the counters of the connection's previous shard (a handoff).
    pub fn carry_messages_out(&self, (messages, bytes): (u64, u64)) {
        self.messages_out.set(self.messages_out.get() + messages);
        self.message_bytes_out.set(self.message_bytes_out.get() + bytes);
    }

    /// Whether a delivery that came from `from` (`None`: this shard) is this
    /// connection's: always, except while a handoff moves it (`handoff::Gate`).
    pub fn admits_from(&self, from: Option<ShardId>) -> bool {
        self.gate.borrow().as_ref().is_none_or(|gate| gate.admits(from))
    }

    /// Deliveries in a row from one other shard (`handoff::DeliveryStreak`).
    pub fn delivery_streak(&self) -> &DeliveryStreak {
        &self.delivery_streak
    }

    /// The handoff gate, while one is set.
    pub fn gate(&self) -> std::cell::RefMut<'_, Option<Gate>> {
        self.gate.borrow_mut()
    }

    /// Stops the writer after the chunk it is writing: everything still queued stays
    /// (`take_queued`), and the timer tasks end as on a close (`closing`).
    pub fn suspend(&self) {
        let mut state = self.state.borrow_mut();
        state.suspended = true;
        if let Some(writer) = state.writer.take() {
            writer.wake();
        }
        drop(state);
        self.wake_close_waiters();
    }

    /// Whether `suspend` stopped the writer.
    pub fn suspended(&self) -> bool {
        self.state.borrow().suspended
    }

    /// Lets a writer take again (a handed-over connection's new writer).
    pub fn resume(&self) {
        self.state.borrow_mut().suspended = false;
    }

    /// Takes every queued chunk, oldest first (a suspended connection's output, to travel
    /// with it).
    pub fn take_queued(&self) -> Vec<Vec<u8>> {
        let mut state = self.state.borrow_mut();
        state.queued_bytes = 0;
        std::mem::take(&mut state.chunks).into()
    }

    /// Puts `chunks` ahead of everything queued (the output a connection's previous
    /// shard queued before it moved here).
    pub fn prepend(&self, chunks: Vec<Vec<u8>>) {
        let mut state = self.state.borrow_mut();
        for chunk in chunks.into_iter().rev() {
            state.queued_bytes += chunk.len();
            state.chunks.push_front(chunk);
        }
        if let Some(writer) = state.writer.take() {
            writer.wake();
        }
    }

    /// Counts one message handed to this connection (`bytes`: headers and payload). As
    /// nats-server, counted when handed over, whether or not it then reaches the socket.
    pub fn count_message_out(&self, bytes: usize) {
        self.messages_out.set(self.messages_out.get() + 1);
        self.message_bytes_out.set(self.message_bytes_out.get() + bytes as u64);
    }

    /// `(messages, header and payload bytes)` handed to this connection so far.
    pub fn messages_out(&self) -> (u64, u64) {
        (self.messages_out.get(), self.message_bytes_out.get())
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
    /// the chunk being written passed the threshold. (The chunk in flight is not counted:
    /// it shrinks only when its write completes.)
    pub fn congested(&self) -> bool {
        let state = self.state.borrow();
        state.closed.is_none() && state.queued_bytes > self.stall_threshold_bytes()
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

    /// Waits until the queue is closed (or suspended for a handoff). The connection's timer tasks race their timer
    /// against this and end by themselves: cancelling a glommio task that sleeps on a
    /// timer (dropping its handle) never frees the task (about 120 bytes per connection,
    /// glommio 0.9), while a task that returns is freed.
    pub async fn closing(&self) {
        poll_fn(|cx| {
            let state = self.state.borrow();
            if state.closed.is_some() || state.suspended {
                return Poll::Ready(());
            }
            drop(state);
            self.close_waiters.borrow_mut().push(cx.waker().clone());
            Poll::Pending
        })
        .await
    }

    fn wake_close_waiters(&self) {
        let wakers = std::mem::take(&mut *self.close_waiters.borrow_mut());
        for waker in wakers {
            waker.wake();
        }
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
        self.push_sized(0, encode)
    }

    /// `push` for about `len_hint` bytes (an upper bound keeps a large message in one
    /// allocation of its size; a smaller one only costs a reallocation).
    pub fn push_sized(&self, len_hint: usize, encode: impl FnOnce(&mut Vec<u8>)) -> bool {
        let mut state = self.state.borrow_mut();
        if state.closed.is_some() {
            return false;
        }
        state.append(len_hint, encode);
        if state.queued_bytes + state.in_flight_bytes > self.pending_bytes_max {
            state.closed = Some(CloseReason::SlowConsumer);
            state.drop_queued();
        }
        if let Some(writer) = state.writer.take() {
            writer.wake();
        }
        let open = state.closed.is_none();
        drop(state);
        if !open {
            self.wake_close_waiters();
        }
        open
    }

    /// Queues `bytes` (e.g. a final `-ERR`) and closes for `reason` once they are written.
    pub fn close_after(&self, bytes: &[u8], reason: CloseReason) {
        let mut state = self.state.borrow_mut();
        if state.closed.is_none() {
            if !bytes.is_empty() {
                state.append(bytes.len(), |out| out.extend_from_slice(bytes));
            }
            state.closed = Some(reason);
        }
        if let Some(writer) = state.writer.take() {
            writer.wake();
        }
        drop(state);
        self.wake_close_waiters();
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

    /// Chunks the writer has taken so far: with [`pending_bytes`](Self::pending_bytes) at
    /// 0, everything up to this count is written.
    pub fn chunks_taken(&self) -> u64 {
        self.state.borrow().chunks_taken
    }

    pub fn pending_bytes(&self) -> usize {
        let state = self.state.borrow();
        state.queued_bytes + state.in_flight_bytes
    }

    /// Waits for bytes to write and hands the oldest chunk over; `written` is the chunk
    /// the previous call handed over, now written (kept for reuse when it is of chunk
    /// size). Returns `None` once the queue is closed and everything before the close is
    /// taken. Each call means the previous chunk is written, so stalled producers re-check.
    pub async fn take(&self, written: Option<Vec<u8>>) -> Option<Vec<u8>> {
        let mut written = written;
        poll_fn(move |cx| {
            let taken = {
                let mut state = self.state.borrow_mut();
                state.in_flight_bytes = 0;
                if let Some(mut chunk) = written.take() {
                    if state.closed.is_none() && chunk.capacity() <= OUTBOUND_CHUNK_BYTES {
                        chunk.clear();
                        state.reusable = Some(chunk);
                    }
                }
                if state.suspended {
                    Poll::Ready(None)
                } else if let Some(chunk) = state.chunks.pop_front() {
                    state.queued_bytes -= chunk.len();
                    state.in_flight_bytes = chunk.len();
                    state.chunks_taken += 1;
                    Poll::Ready(Some(chunk))
                } else if state.closed.is_some() {
                    // Nothing more is written: the queue's memory goes back now,
                    // even while subscriptions still hold this outbound.
                    state.drop_queued();
                    Poll::Ready(None)
                } else {
                    state.writer = Some(cx.waker().clone());
                    Poll::Pending
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
        let batch = futures_lite::future::block_on(outbound.take(None)).unwrap();
        assert_eq!(batch, b"PING\r\n-ERR 'x'\r\n");
        assert_eq!(futures_lite::future::block_on(outbound.take(Some(batch))), None);
    }
}
