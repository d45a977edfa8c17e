//! The engine for a program that is not glommio (a tokio program, plain threads): an
//! [`EngineHandle`] owns a shard thread running one [`Engine`]; each call is a request
//! posted to that shard's mailbox, run there as a task of its own, and answered through a
//! [`Reply`], which a thread may block on ([`Reply::wait`]) or any runtime may `.await`.
//!
//! CONTRACT: the engine is only ever touched by its shard (one writer, no lock around its
//! state); the mailbox's lock guards only the mailbox. Requests run concurrently on the
//! shard, so many publishes in flight share fdatasyncs (group commit) as they do over the
//! wire; a reply resolves once the engine has answered (a publish: once durable). A handle
//! is `Send + Sync`: share it by reference or in an `Arc`. [`EngineHandle::close`] lets
//! the requests already posted finish, then closes the engine (checkpoints) and ends the
//! thread; dropping the handle does the same.

use std::collections::VecDeque;
use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::task::{Context, Poll, Waker};

use super::{ConsumedMessage, ConsumerConfig, ConsumerInfo, DeliveryInfo, Engine, Outgoing, Settle, StartPosition};
use crate::shard::{ForeignSignal, Runtime, RuntimeHandle, ShardContext};
use crate::stream::{Error, PubAck, ShardId, StoredMessage, StreamConfig, StreamState};

/// What a request does on the shard: given the engine, a task whose end is the answer.
type Request = Box<dyn FnOnce(Rc<Engine>) -> Pin<Box<dyn Future<Output = ()>>> + Send>;

enum Posted {
    Request(Request),
    Close,
}

/// The requests posted to the shard, and the doorbell that wakes it.
#[derive(Default)]
struct Mailbox {
    posted: Mutex<VecDeque<Posted>>,
    /// Set when the shard starts; requests posted before wait for its first look.
    signal: OnceLock<Arc<ForeignSignal>>,
}

impl Mailbox {
    fn post(&self, posted: Posted) {
        lock(&self.posted).push_back(posted);
        // After the push: a shard parking now either sees it on its second look or is woken.
        if let Some(signal) = self.signal.get() {
            signal.notify();
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panic elsewhere while holding the lock leaves a plain queue or slot: still usable.
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// An [`Engine`] on a shard thread of its own, for callers on any thread; see the module
/// documentation.
///
/// ```
/// use jetcore::engine::{EngineHandle, StartPosition};
/// use jetcore::stream::StreamConfig;
///
/// let dir = tempfile::tempdir().unwrap();
/// let engine = EngineHandle::open(dir.path()).unwrap();
/// engine.create_stream(StreamConfig::new("TICKS", &["ticks.>"])).wait().unwrap();
/// // A plain thread blocks on the reply; async code would `.await` it instead.
/// let ack = engine.publish("TICKS", "ticks.eurusd", b"1.0842").wait().unwrap();
/// assert_eq!(ack.seq, 1);
/// let read = engine.read("TICKS", StartPosition::Sequence(1), 10).wait().unwrap();
/// assert_eq!(&read[0].payload[..], b"1.0842");
/// engine.close().unwrap();
/// ```
pub struct EngineHandle {
    mailbox: Arc<Mailbox>,
    /// `None` once closed.
    runtime: Option<RuntimeHandle<Result<(), Error>>>,
}

impl EngineHandle {
    /// Starts a shard thread and opens (or creates) an engine on `dir` there, with O_DIRECT
    /// files; blocks until it is open. Needs io_uring and enough locked memory, as the
    /// server does (see `shard::probe`).
    pub fn open(dir: impl AsRef<Path>) -> Result<EngineHandle, Error> {
        let dir = dir.as_ref().to_path_buf();
        let mailbox = Arc::new(Mailbox::default());
        let (opened, open_result) = mpsc::channel();
        let shard_mailbox = mailbox.clone();
        let runtime = Runtime::builder()
            .shards(1)
            .start(move |context: ShardContext<()>| {
                let (dir, mailbox, opened) = (dir.clone(), shard_mailbox.clone(), opened.clone());
                async move { serve(context, &dir, &mailbox, opened).await }
            })
            .map_err(|error| Error::Store(crate::store::Error::io("start shard", Path::new(""), &runtime_io(error))))?;
        let mut handle = EngineHandle { mailbox, runtime: Some(runtime) };
        match open_result.recv() {
            Ok(Ok(())) => Ok(handle),
            Ok(Err(error)) => {
                let _ = handle.join();
                Err(error)
            }
            Err(_) => Err(handle.join().err().unwrap_or_else(|| shard_gone())),
        }
    }

    /// Runs `request` on the engine's shard and answers with its result: anything
    /// [`Engine`] offers beyond the calls below. The future runs as a task of its own.
    pub fn call<T, F, Fut>(&self, request: F) -> Reply<T>
    where
        T: Send + 'static,
        F: FnOnce(Rc<Engine>) -> Fut + Send + 'static,
        Fut: Future<Output = Result<T, Error>> + 'static,
    {
        let (answer, reply) = Reply::pair();
        let request: Request = Box::new(move |engine| {
            Box::pin(async move {
                answer.fill(request(engine).await);
            })
        });
        self.mailbox.post(Posted::Request(request));
        reply
    }

    /// [`Engine::create_stream`] (on shard 0, the handle's only one).
    pub fn create_stream(&self, config: StreamConfig) -> Reply<StreamState> {
        self.call(move |engine| async move { engine.create_stream(config, ShardId(0)).await })
    }

    /// [`Engine::publish`] without headers: resolves once the message is durable.
    pub fn publish(&self, stream: &str, subject: &str, payload: &[u8]) -> Reply<PubAck> {
        self.publish_with_headers(stream, subject, &[], payload)
    }

    /// [`Engine::publish`]: `headers` is a raw NATS header block (may be empty).
    pub fn publish_with_headers(&self, stream: &str, subject: &str, headers: &[u8], payload: &[u8]) -> Reply<PubAck> {
        let (stream, subject) = (stream.to_string(), subject.to_string());
        let (headers, payload) = (headers.to_vec(), payload.to_vec());
        self.call(move |engine| async move { engine.publish(&stream, &subject, &headers, &payload).await })
    }

    /// [`Engine::publish_many`]: `(subject, payload)` pairs published in order in one
    /// request, one result per message once all are durable. One round trip to the shard
    /// for the whole window instead of one per message.
    ///
    /// ```
    /// use jetcore::engine::EngineHandle;
    /// use jetcore::stream::StreamConfig;
    ///
    /// let dir = tempfile::tempdir().unwrap();
    /// let engine = EngineHandle::open(dir.path()).unwrap();
    /// engine.create_stream(StreamConfig::new("TICKS", &["ticks.>"])).wait().unwrap();
    /// let window: Vec<_> = (0..256).map(|n| ("ticks.eurusd".to_string(), format!("{n}").into_bytes())).collect();
    /// let acks = engine.publish_many("TICKS", window).wait().unwrap();
    /// assert_eq!(acks.len(), 256);
    /// assert_eq!(acks[255].as_ref().unwrap().seq, 256);
    /// engine.close().unwrap();
    /// ```
    pub fn publish_many(&self, stream: &str, messages: Vec<(String, Vec<u8>)>) -> Reply<Vec<Result<PubAck, Error>>> {
        let stream = stream.to_string();
        self.call(move |engine| async move {
            let outgoing: Vec<Outgoing<'_>> =
                messages.iter().map(|(subject, payload)| Outgoing::new(subject, payload)).collect();
            engine.publish_many(&stream, &outgoing).await
        })
    }

    /// [`Engine::get`]: the message at `seq`.
    pub fn get(&self, stream: &str, seq: u64) -> Reply<StoredMessage> {
        let stream = stream.to_string();
        self.call(move |engine| async move { engine.get(&stream, seq).await })
    }

    /// [`Engine::state`].
    pub fn state(&self, stream: &str) -> Reply<StreamState> {
        let stream = stream.to_string();
        self.call(move |engine| async move { engine.state(&stream) })
    }

    /// Up to `max` messages from `start` on, in order; fewer (or none) at the end of the
    /// stream. Read the next batch from one past the last sequence returned.
    pub fn read(&self, stream: &str, start: StartPosition, max: usize) -> Reply<Vec<StoredMessage>> {
        let stream = stream.to_string();
        self.call(move |engine| async move {
            let mut cursor = engine.cursor(&stream, start, None)?;
            let mut messages = Vec::new();
            while messages.len() < max {
                match cursor.next().await {
                    Some(message) => messages.push(message?),
                    None => break,
                }
            }
            Ok(messages)
        })
    }

    /// The message at `seq`, or the first after it; waits, if there is none yet, until a
    /// publish through this handle stores one (a tail: call again with `seq + 1`). A tail
    /// still waiting when the handle closes is answered with an error.
    pub fn tail(&self, stream: &str, seq: u64) -> Reply<StoredMessage> {
        let stream = stream.to_string();
        self.call(move |engine| async move {
            let mut cursor = engine.cursor(&stream, StartPosition::Sequence(seq), None)?;
            cursor.wait_next().await
        })
    }

    /// [`Engine::create_consumer`]: creates durable consumer `config.name` on `stream`, or
    /// reopens it as it was left; answers with its position.
    ///
    /// ```
    /// use jetcore::engine::{ConsumerConfig, EngineHandle};
    /// use jetcore::stream::StreamConfig;
    ///
    /// let dir = tempfile::tempdir().unwrap();
    /// let engine = EngineHandle::open(dir.path()).unwrap();
    /// engine.create_stream(StreamConfig::new("JOBS", &["jobs.>"])).wait().unwrap();
    /// engine.publish("JOBS", "jobs.resize", b"photo-1").wait().unwrap();
    /// engine.create_consumer("JOBS", ConsumerConfig::new("workers")).wait().unwrap();
    /// let jobs = engine.fetch("JOBS", "workers", 10).wait().unwrap();
    /// assert_eq!(&jobs[0].message.payload[..], b"photo-1");
    /// engine.ack("JOBS", "workers", jobs[0].delivery).wait().unwrap(); // durable now
    /// assert_eq!(engine.consumer_info("JOBS", "workers").wait().unwrap().num_ack_pending, 0);
    /// engine.close().unwrap();
    /// ```
    pub fn create_consumer(&self, stream: &str, config: ConsumerConfig) -> Reply<ConsumerInfo> {
        let stream = stream.to_string();
        self.call(move |engine| async move { Ok(engine.create_consumer(&stream, config).await?.info()) })
    }

    /// [`DurableConsumer::fetch`](super::DurableConsumer::fetch) of consumer `consumer`:
    /// up to `batch` messages, redeliveries first, without waiting.
    pub fn fetch(&self, stream: &str, consumer: &str, batch: usize) -> Reply<Vec<ConsumedMessage>> {
        let (stream, consumer) = (stream.to_string(), consumer.to_string());
        self.call(move |engine| async move { engine.consumer(&stream, &consumer).await?.fetch(batch).await })
    }

    /// Acknowledges a delivery of consumer `consumer`; durable when the reply resolves.
    pub fn ack(&self, stream: &str, consumer: &str, delivery: DeliveryInfo) -> Reply<()> {
        self.settle(stream, consumer, delivery, Settle::Ack)
    }

    /// [`DurableConsumer::settle`](super::DurableConsumer::settle): NAK, term, in
    /// progress or ack a delivery of consumer `consumer`.
    pub fn settle(&self, stream: &str, consumer: &str, delivery: DeliveryInfo, settle: Settle) -> Reply<()> {
        let (stream, consumer) = (stream.to_string(), consumer.to_string());
        self.call(
            move |engine| async move { engine.consumer(&stream, &consumer).await?.settle(&delivery, settle).await },
        )
    }

    /// Consumer `consumer`'s position and counts.
    pub fn consumer_info(&self, stream: &str, consumer: &str) -> Reply<ConsumerInfo> {
        let (stream, consumer) = (stream.to_string(), consumer.to_string());
        self.call(move |engine| async move { Ok(engine.consumer(&stream, &consumer).await?.info()) })
    }

    /// Lets the requests already posted finish, closes the engine (flush and checkpoint
    /// every stream) and ends its thread. Blocks until done.
    pub fn close(mut self) -> Result<(), Error> {
        self.join()
    }

    fn join(&mut self) -> Result<(), Error> {
        let Some(runtime) = self.runtime.take() else { return Ok(()) };
        self.mailbox.post(Posted::Close);
        let results = runtime.join().map_err(|_| shard_gone())?;
        results.into_iter().collect::<Result<Vec<()>, Error>>()?;
        Ok(())
    }
}

impl Drop for EngineHandle {
    fn drop(&mut self) {
        if let Err(error) = self.join() {
            tracing::error!("closing the embedded engine: {error}");
        }
    }
}

fn runtime_io(error: crate::shard::RuntimeError) -> std::io::Error {
    std::io::Error::other(error.to_string())
}

fn shard_gone() -> Error {
    Error::Store(crate::store::Error::io("engine shard", Path::new(""), &std::io::Error::other("the shard stopped")))
}

/// The shard's life: open the engine, run what is posted, close on `Close`.
async fn serve(
    context: ShardContext<()>,
    dir: &Path,
    mailbox: &Mailbox,
    opened: mpsc::Sender<Result<(), Error>>,
) -> Result<(), Error> {
    let signal = context.foreign_signal();
    if mailbox.signal.set(signal.clone()).is_err() {
        unreachable!("one shard per handle");
    }
    let engine = match Engine::open(dir).await {
        Ok(engine) => Rc::new(engine),
        Err(error) => {
            let _ = opened.send(Err(error));
            return Ok(());
        }
    };
    let _ = opened.send(Ok(()));
    let maintenance = glommio::spawn_local(maintain(engine.clone()));
    loop {
        match signal.wait_for(|| lock(&mailbox.posted).pop_front()).await {
            Posted::Request(request) => {
                glommio::spawn_local(request(engine.clone())).detach();
            }
            Posted::Close => break,
        }
    }
    drop(maintenance);
    // Tails would wait for publishes that can no longer come.
    engine.appended.close();
    // Requests already running hold the engine; wait until they have answered.
    let mut engine = engine;
    let engine = loop {
        match Rc::try_unwrap(engine) {
            Ok(engine) => break engine,
            Err(shared) => {
                glommio::timer::sleep(crate::limits::ENGINE_HANDLE_CLOSE_POLL).await;
                engine = shared;
            }
        }
    };
    engine.close().await
}

/// The engine's timed work (interval syncs, expiry, checkpoints), as the server's streams
/// get it: sleeps until something is due or a stream was written.
async fn maintain(engine: Rc<Engine>) {
    loop {
        if let Err(error) = engine.tick().await {
            tracing::error!("embedded engine maintenance: {error}");
        }
        match engine.next_maintenance_ns() {
            None => engine.maintenance_wanted().await,
            Some(due_ns) => {
                let wait = std::time::Duration::from_nanos(due_ns.saturating_sub(engine.now_ns()).max(0) as u64);
                futures_lite::future::or(engine.maintenance_wanted(), glommio::timer::sleep(wait)).await;
            }
        }
    }
}

/// The answer to one request: `.await` it from any runtime, or [`Reply::wait`] on a thread.
/// An answer the shard never gave (it stopped) is an error, never a hang.
pub struct Reply<T> {
    slot: Arc<Slot<T>>,
}

struct Slot<T> {
    state: Mutex<SlotState<T>>,
    filled: Condvar,
}

struct SlotState<T> {
    answer: Option<Result<T, Error>>,
    /// The answering side is gone without an answer.
    abandoned: bool,
    waker: Option<Waker>,
}

/// The shard's side of a [`Reply`]; dropped unfilled, the reply reports the shard gone.
struct Answer<T> {
    slot: Arc<Slot<T>>,
    filled: bool,
}

impl<T> Reply<T> {
    fn pair() -> (Answer<T>, Reply<T>) {
        let state = SlotState { answer: None, abandoned: false, waker: None };
        let slot = Arc::new(Slot { state: Mutex::new(state), filled: Condvar::new() });
        (Answer { slot: slot.clone(), filled: false }, Reply { slot })
    }

    /// Blocks the calling thread until the answer comes. Not from inside an async task
    /// (it would block that task's thread): `.await` the reply there.
    pub fn wait(self) -> Result<T, Error> {
        let mut state = lock(&self.slot.state);
        loop {
            if let Some(answer) = state.answer.take() {
                return answer;
            }
            if state.abandoned {
                return Err(shard_gone());
            }
            state = self.slot.filled.wait(state).unwrap_or_else(|poisoned| poisoned.into_inner());
        }
    }
}

impl<T> Future for Reply<T> {
    type Output = Result<T, Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut state = lock(&self.slot.state);
        if let Some(answer) = state.answer.take() {
            return Poll::Ready(answer);
        }
        if state.abandoned {
            return Poll::Ready(Err(shard_gone()));
        }
        if !state.waker.as_ref().is_some_and(|waker| waker.will_wake(cx.waker())) {
            state.waker = Some(cx.waker().clone());
        }
        Poll::Pending
    }
}

impl<T> Answer<T> {
    fn fill(mut self, answer: Result<T, Error>) {
        self.filled = true;
        self.settle(|state| state.answer = Some(answer));
    }

    fn settle(&self, change: impl FnOnce(&mut SlotState<T>)) {
        let waker = {
            let mut state = lock(&self.slot.state);
            change(&mut state);
            state.waker.take()
        };
        self.slot.filled.notify_all();
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

impl<T> Drop for Answer<T> {
    fn drop(&mut self) {
        if !self.filled {
            self.settle(|state| state.abandoned = true);
        }
    }
}
