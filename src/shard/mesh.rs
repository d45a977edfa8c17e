//! The cross-shard mesh: one SPSC ring per ordered pair of shards, and each shard's endpoint.
//!
//! CONTRACT (what a shard sees through `ShardContext`):
//! - `try_send(to, envelope)` never blocks and never drops: `Err(envelope)` when the ring to
//!   `to` is full (backpressure) or `to` has shut down (see `peer_closed`).
//! - `send(to, envelope).await` waits, without blocking the thread, until the ring has room.
//! - `recv().await` / `try_recv()` take envelopes from all peers, one per peer in turn
//!   (round robin), so a chatty peer cannot starve a quiet one. Envelopes from one sender
//!   arrive in send order, each exactly once. One task per shard receives at a time.
//! - Sending to one's own shard is a bug (handle it inline) and panics.
//!
//! Waking: a receiver that finds nothing parks (see `wake.rs`) and is woken by the first
//! sender that pushes afterwards, through the receiving shard's doorbell; while it is busy,
//! a send costs one push and one fence.
//! A sender waiting for room is woken by the receiver: promptly if the receiver's relaxed
//! look at the ring's `room` flag sees it, and at the latest when the receiver next finds
//! that ring empty (it fences and re-checks then), which it does before it ever parks.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::io;
use std::marker::PhantomData;
use std::os::fd::{FromRawFd, IntoRawFd};
use std::os::unix::net::UnixStream;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use super::ring::{self, Consumer, Producer};
use super::wake::{Doorbell, ForeignSignal, Parking};
use super::ShardId;

/// State shared by the two ends of one ring, beside the ring itself.
struct Link {
    /// The sender's parking spot while it waits for room.
    room: Parking,
    /// Set once the receiving shard's context is dropped; later sends fail fast.
    receiver_gone: AtomicBool,
}

struct Outgoing<E> {
    producer: RefCell<Producer<E>>,
    link: Arc<Link>,
    /// The receiving shard's inbox parking spot, to wake it after a push.
    peer_inbox: Arc<Parking>,
}

struct Incoming<E> {
    from: ShardId,
    consumer: RefCell<Consumer<E>>,
    link: Arc<Link>,
}

/// One shard's share of the mesh, built on the starting thread and moved to the shard.
pub struct MeshEndpoint<E> {
    id: ShardId,
    shard_count: u16,
    outgoing: Vec<Option<Outgoing<E>>>,
    incoming: Vec<Incoming<E>>,
    inbox: Arc<Parking>,
    /// Read end of this shard's doorbell (see `wake.rs`); taken by `ShardContext::new`.
    doorbell_reader: Option<UnixStream>,
    /// This shard's doorbell, for signals from plain threads (`foreign_signal`).
    doorbell: Arc<Doorbell>,
}

/// Builds the full mesh for `shard_count` shards; element `i` belongs to shard `i`.
/// Fails only if the doorbell sockets cannot be created (e.g. out of file descriptors).
pub fn build<E: Send + 'static>(shard_count: u16, ring_capacity: usize) -> io::Result<Vec<MeshEndpoint<E>>> {
    assert!(shard_count > 0, "a runtime has at least one shard");
    let count = usize::from(shard_count);
    let mut doorbells = Vec::with_capacity(count);
    let mut readers = Vec::with_capacity(count);
    for _ in 0..count {
        let (doorbell, reader) = Doorbell::pair()?;
        doorbells.push(doorbell);
        readers.push(reader);
    }
    let inboxes: Vec<Arc<Parking>> =
        doorbells.iter().map(|doorbell| Arc::new(Parking::new(doorbell.clone()))).collect();
    let mut endpoints: Vec<MeshEndpoint<E>> = readers
        .into_iter()
        .enumerate()
        .map(|(index, doorbell_reader)| MeshEndpoint {
            doorbell: doorbells[index].clone(),
            id: ShardId(index as u16),
            shard_count,
            outgoing: (0..count).map(|_| None).collect(),
            incoming: Vec::with_capacity(count - 1),
            inbox: inboxes[index].clone(),
            doorbell_reader: Some(doorbell_reader),
        })
        .collect();
    for from in 0..count {
        for to in (0..count).filter(|&to| to != from) {
            let (producer, consumer) = ring::channel(ring_capacity);
            let link = Arc::new(Link {
                // The sender waits for room, so the sender's doorbell wakes it.
                room: Parking::new(doorbells[from].clone()),
                receiver_gone: AtomicBool::new(false),
            });
            endpoints[from].outgoing[to] = Some(Outgoing {
                producer: RefCell::new(producer),
                link: link.clone(),
                peer_inbox: inboxes[to].clone(),
            });
            endpoints[to].incoming.push(Incoming {
                from: ShardId(from as u16),
                consumer: RefCell::new(consumer),
                link,
            });
        }
    }
    Ok(endpoints)
}

/// A shard's handle on the runtime: its identity and its end of the mesh.
///
/// Lives on its shard's thread (`!Send`); share it between that shard's tasks with `Rc`.
/// No `RefCell` borrow inside is held across an `.await`.
pub struct ShardContext<E> {
    endpoint: MeshEndpoint<E>,
    /// Index into `incoming` where the next receive starts looking (round robin).
    next_incoming: Cell<usize>,
    /// True while a `Recv` future exists; a second concurrent receiver is a bug.
    receiving: Cell<bool>,
    /// The task that answers this shard's doorbell; cancelled when the context drops.
    doorbell_task: Option<glommio::task::JoinHandle<()>>,
    /// Signals from plain threads, answered by the doorbell task too.
    foreign_signals: Rc<RefCell<Vec<Arc<ForeignSignal>>>>,
    _pinned_to_shard: PhantomData<*const ()>,
}

impl<E: Send + 'static> ShardContext<E> {
    /// Called on the shard's own thread, inside its glommio executor: spawns the task that
    /// answers the shard's doorbell.
    pub fn new(mut endpoint: MeshEndpoint<E>) -> Self {
        let reader = endpoint.doorbell_reader.take().expect("endpoint used once");
        let fd = reader.into_raw_fd();
        // SAFETY: `into_raw_fd` hands over sole ownership of an open, non-blocking socket fd.
        let reader = unsafe { glommio::net::UnixStream::from_raw_fd(fd) };
        let links = endpoint.outgoing.iter().flatten().map(|outgoing| outgoing.link.clone()).collect();
        let foreign_signals = Rc::new(RefCell::new(Vec::new()));
        let doorbell = answer_doorbell((reader, fd), endpoint.inbox.clone(), links, foreign_signals.clone());
        let doorbell_task = glommio::spawn_local(doorbell).detach();
        Self {
            endpoint,
            next_incoming: Cell::new(0),
            receiving: Cell::new(false),
            doorbell_task: Some(doorbell_task),
            foreign_signals,
            _pinned_to_shard: PhantomData,
        }
    }

    /// This shard.
    pub fn id(&self) -> ShardId {
        self.endpoint.id
    }

    /// A signal plain threads may raise to wake one task of this shard (see
    /// `ForeignSignal`): it rings this shard's doorbell, so a parked shard sleeps without a
    /// timer and still wakes at once.
    pub fn foreign_signal(&self) -> Arc<ForeignSignal> {
        let signal = Arc::new(ForeignSignal::new(self.endpoint.doorbell.clone()));
        self.foreign_signals.borrow_mut().push(signal.clone());
        signal
    }

    /// Number of shards in the runtime; ids are `0..shard_count`.
    pub fn shard_count(&self) -> u16 {
        self.endpoint.shard_count
    }

    fn outgoing(&self, to: ShardId) -> &Outgoing<E> {
        assert!(to.0 < self.shard_count(), "{to} out of range ({} shards)", self.shard_count());
        match &self.endpoint.outgoing[usize::from(to.0)] {
            Some(outgoing) => outgoing,
            None => panic!("{} sent to itself over the mesh: handle it inline", self.id()),
        }
    }

    /// Pushes `envelope` to shard `to` without waiting. `Err(envelope)` when the ring is full
    /// or `to` has shut down; nothing is dropped. On `Ok`, `to` will receive it.
    pub fn try_send(&self, to: ShardId, envelope: E) -> Result<(), E> {
        let outgoing = self.outgoing(to);
        if outgoing.link.receiver_gone.load(Ordering::Relaxed) {
            return Err(envelope);
        }
        outgoing.producer.borrow_mut().push(envelope)?;
        outgoing.peer_inbox.notify();
        Ok(())
    }

    /// Sends `envelope` to `to`, waiting for room when the ring is full.
    /// `Err(envelope)` only if `to` has shut down.
    pub fn send(&self, to: ShardId, envelope: E) -> SendFuture<'_, E> {
        let _ = self.outgoing(to); // Fail fast on a bad target, not on first poll.
        SendFuture { context: self, to, envelope: Some(envelope) }
    }

    /// True once shard `to` has dropped its context (it receives nothing more).
    pub fn peer_closed(&self, to: ShardId) -> bool {
        self.outgoing(to).link.receiver_gone.load(Ordering::SeqCst)
    }

    /// Envelopes in this shard's ring to each peer (its fill level; 0 for this shard),
    /// for monitoring. Reads the receiver's `head` atomically: no lock, no effect on
    /// either end.
    pub fn ring_depths(&self) -> Vec<usize> {
        let depth = |outgoing: &Option<Outgoing<E>>| outgoing.as_ref().map_or(0, |o| o.producer.borrow().len());
        self.endpoint.outgoing.iter().map(depth).collect()
    }

    /// Envelopes each ring holds at most.
    pub fn ring_capacity(&self) -> usize {
        let capacity = |outgoing: &Outgoing<E>| outgoing.producer.borrow().capacity();
        self.endpoint.outgoing.iter().flatten().map(capacity).next().unwrap_or(0)
    }

    /// Indices and flags of this shard's rings and parking spots, for diagnosing a stall.
    pub fn debug_state(&self) -> String {
        let mut state = format!("{} inbox[{}]", self.id(), self.endpoint.inbox.debug_state());
        for peer in &self.endpoint.incoming {
            state += &format!(" from {}: {}", peer.from.0, peer.consumer.borrow().debug_state());
        }
        for (to, outgoing) in self.endpoint.outgoing.iter().enumerate() {
            if let Some(outgoing) = outgoing {
                state += &format!(
                    " to {to}: {} room[{}]",
                    outgoing.producer.borrow().debug_state(),
                    outgoing.link.room.debug_state()
                );
            }
        }
        state
    }

    /// Takes the next envelope if any peer has one, fairly across peers.
    pub fn try_recv(&self) -> Option<(ShardId, E)> {
        let incoming = &self.endpoint.incoming;
        let start = self.next_incoming.get();
        for offset in 0..incoming.len() {
            let index = (start + offset) % incoming.len();
            let peer = &incoming[index];
            let popped = peer.consumer.borrow_mut().pop();
            match popped {
                Some(envelope) => {
                    self.next_incoming.set(index + 1);
                    peer.link.room.notify_if_flagged();
                    return Some((peer.from, envelope));
                }
                // Empty: a sender parked on this ring must not wait any longer (see module doc).
                None => {
                    peer.link.room.notify();
                }
            }
        }
        None
    }

    /// Waits for the next envelope from any peer. Parks the task (and, if nothing else is
    /// runnable, the executor) until a sender wakes it.
    pub fn recv(&self) -> RecvFuture<'_, E> {
        assert!(!self.receiving.replace(true), "{}: two tasks receive concurrently", self.id());
        RecvFuture { context: self }
    }
}

/// Runs on the owner shard: each time its doorbell rings, delivers the wake-ups notifiers
/// asked for — to the receiving task (`inbox`) and to tasks waiting for room (`links`).
async fn answer_doorbell(
    (mut reader, fd): (glommio::net::UnixStream, std::os::fd::RawFd),
    inbox: Arc<Parking>,
    links: Vec<Arc<Link>>,
    foreign_signals: Rc<RefCell<Vec<Arc<ForeignSignal>>>>,
) {
    use futures_lite::AsyncReadExt;
    let mut rings = [0u8; DOORBELL_READ_BYTES];
    // A ring ends a client's blocking read wait on this shard (`socket_wait`).
    let _watched = super::socket_wait::Watched::new(fd);
    loop {
        match reader.read(&mut rings).await {
            Ok(0) => return, // Every writer is gone: nobody can notify us any more.
            Ok(_) => {}
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(error) => panic!("shard doorbell read failed: {error}"),
        }
        inbox.deliver();
        for link in &links {
            link.room.deliver();
        }
        for signal in foreign_signals.borrow().iter() {
            signal.deliver();
        }
    }
}

/// Doorbell bytes taken per read: several rings coalesce into one pass over the parkings.
const DOORBELL_READ_BYTES: usize = 64;

impl<E> Drop for ShardContext<E> {
    fn drop(&mut self) {
        if let Some(task) = self.doorbell_task.take() {
            task.cancel();
        }
        for peer in &self.endpoint.incoming {
            peer.link.receiver_gone.store(true, Ordering::SeqCst);
            peer.link.room.notify(); // Wake a sender waiting for room: it will see `gone`.
        }
        for outgoing in self.endpoint.outgoing.iter().flatten() {
            outgoing.link.room.clear();
        }
        self.endpoint.inbox.clear();
    }
}

/// Future of `ShardContext::recv`.
pub struct RecvFuture<'a, E> {
    context: &'a ShardContext<E>,
}

impl<E: Send + 'static> Future for RecvFuture<'_, E> {
    type Output = (ShardId, E);

    fn poll(self: Pin<&mut Self>, task: &mut Context<'_>) -> Poll<Self::Output> {
        let context = self.context;
        let inbox = &context.endpoint.inbox;
        inbox.unpark(); // We are running: senders need not wake us until we park again.
        if let Some(received) = context.try_recv() {
            return Poll::Ready(received);
        }
        inbox.register(task.waker());
        inbox.park();
        match context.try_recv() {
            Some(received) => {
                inbox.unpark();
                Poll::Ready(received)
            }
            None => Poll::Pending,
        }
    }
}

impl<E> Drop for RecvFuture<'_, E> {
    fn drop(&mut self) {
        self.context.receiving.set(false);
    }
}

/// Future of `ShardContext::send`.
pub struct SendFuture<'a, E> {
    context: &'a ShardContext<E>,
    to: ShardId,
    envelope: Option<E>,
}

impl<E: Send + 'static> Future for SendFuture<'_, E> {
    type Output = Result<(), E>;

    fn poll(self: Pin<&mut Self>, task: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let envelope = this.envelope.take().expect("SendFuture polled after completion");
        let envelope = match this.context.try_send(this.to, envelope) {
            Ok(()) => return Poll::Ready(Ok(())),
            Err(envelope) => envelope,
        };
        let link = &this.context.outgoing(this.to).link;
        link.room.register(task.waker());
        link.room.park();
        if link.receiver_gone.load(Ordering::SeqCst) {
            link.room.unpark();
            return Poll::Ready(Err(envelope));
        }
        match this.context.try_send(this.to, envelope) {
            Ok(()) => {
                link.room.unpark();
                Poll::Ready(Ok(()))
            }
            Err(envelope) => {
                this.envelope = Some(envelope);
                Poll::Pending
            }
        }
    }
}

// The future never pins its envelope in place: it only moves it in and out of an `Option`.
impl<E> Unpin for SendFuture<'_, E> {}
