//! Messages from the server's plain threads (signals, monitoring) to its shards. A shard
//! owns its state alone (DESIGN §2), so a thread that wants something done or seen posts
//! a message to that shard's mailbox; the shard's control task carries it out on the
//! shard and answers over a std channel. The mailbox's lock guards only the mailbox,
//! never shard state.

use std::collections::VecDeque;
use std::rc::Rc;
use std::sync::mpsc;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use super::monitor::snapshot::{ShardSnapshot, SnapshotQuery};
use super::node::Node;
use super::options::Options;
use crate::shard::{ForeignSignal, ShardId};

/// The steps of a graceful shutdown, run on every shard in turn; each starts only after
/// every shard finished the one before (see `shutdown.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShutdownStep {
    /// Stop accepting connections and stop reading from clients.
    StopIntake,
    /// Let every store already handed to a stream reach disk and send its pub ack.
    SettleStores,
    /// Persist consumer state and checkpoint streams, then close every connection after
    /// its queued bytes are written.
    PersistAndClose,
}

pub enum ControlMessage {
    Shutdown {
        step: ShutdownStep,
        done: mpsc::Sender<ShardId>,
    },
    /// Lame duck: refuse new connections and tell clients (`INFO {"ldm":true}`).
    LameDuck,
    /// Close this shard's connections one by one, spread over `over`.
    CloseConnections {
        over: Duration,
    },
    /// A reloaded configuration: adopt what can change live.
    Reload(Arc<Options>),
    /// Monitoring (sent to one shard, which gathers every shard's part over the mesh).
    Gather {
        query: SnapshotQuery,
        reply: mpsc::Sender<Vec<ShardSnapshot>>,
    },
}

#[derive(Default)]
struct Mailbox {
    messages: Mutex<VecDeque<ControlMessage>>,
    /// Wakes the shard's control task through the shard's doorbell; set when the task
    /// starts (messages posted before then wait in `messages` for its first look).
    signal: OnceLock<Arc<ForeignSignal>>,
}

/// Every shard's mailbox; shared by the shards and the plain threads.
pub struct Control {
    mailboxes: Vec<Mailbox>,
}

impl Control {
    pub fn new(shard_count: u16) -> Arc<Control> {
        Arc::new(Control { mailboxes: (0..shard_count).map(|_| Mailbox::default()).collect() })
    }

    pub fn shard_count(&self) -> u16 {
        self.mailboxes.len() as u16
    }

    /// Posts `message` to `shard` and wakes its control task.
    pub fn post(&self, shard: ShardId, message: ControlMessage) {
        let mailbox = &self.mailboxes[usize::from(shard.0)];
        lock(&mailbox.messages).push_back(message);
        // After the push (see `ForeignSignal`'s contract): a task parking now either sees
        // the message on its second look or is woken here.
        if let Some(signal) = mailbox.signal.get() {
            signal.notify();
        }
    }

    /// Posts one message per shard, built by `message`.
    pub fn post_all(&self, message: impl Fn() -> ControlMessage) {
        for shard in 0..self.shard_count() {
            self.post(ShardId(shard), message());
        }
    }

    /// The shard's next message; sleeps, without a timer, until one is posted.
    async fn next(&self, shard: ShardId, signal: &ForeignSignal) -> ControlMessage {
        let mailbox = &self.mailboxes[usize::from(shard.0)];
        signal.wait_for(|| lock(&mailbox.messages).pop_front()).await
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panic elsewhere while holding a mailbox lock leaves a plain queue: still usable.
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The shard's control task: carries out what the plain threads post, for the shard's life.
/// `signal` is this shard's (`ShardContext::foreign_signal`); the mailbox keeps it.
pub async fn serve(node: Rc<Node>, control: Arc<Control>, signal: Arc<ForeignSignal>) {
    let mailbox = &control.mailboxes[usize::from(node.shard.0)];
    assert!(mailbox.signal.set(signal.clone()).is_ok(), "one control task per shard");
    loop {
        let message = control.next(node.shard, &signal).await;
        match message {
            ControlMessage::Shutdown { step, done } => {
                let node = node.clone();
                glommio::spawn_local(async move {
                    super::shutdown::run_step(&node, step).await;
                    let _ = done.send(node.shard);
                })
                .detach();
            }
            ControlMessage::LameDuck => super::shutdown::enter_lame_duck(&node),
            ControlMessage::CloseConnections { over } => {
                glommio::spawn_local(super::shutdown::close_spread(node.clone(), over)).detach();
            }
            ControlMessage::Reload(options) => super::reload::apply_on_shard(&node, options),
            ControlMessage::Gather { query, reply } => {
                let node = node.clone();
                glommio::spawn_local(async move {
                    let snapshots = super::monitor::snapshot::gather_all(&node, query).await;
                    let _ = reply.send(snapshots);
                })
                .detach();
            }
        }
    }
}
