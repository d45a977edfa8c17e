//! Stream backups on the mesh: `STREAM.SNAPSHOT` is answered by the stream's owner, which
//! then sends the archive to the request's deliver subject in chunks with flow control;
//! the client's acks (`$JS.SNAPSHOT.ACK.<stream>.<id>...`) are routed to that owner.
//!
//! A transfer in flight is known only to its owning shard: a thread-local table from
//! transfer id to the channel that wakes its sender (one shard, one writer; no lock).

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;
use std::time::Duration;

use bytes::Bytes;
use glommio::channels::local_channel::{self, LocalSender};

use super::account::AccountId;
use super::envelope::{ApiForward, Envelope};
use super::node::Node;
use super::router::Publish;
use crate::jetstream::backup_api::{transfer_stream, SNAPSHOT_ACK_PREFIX};
use crate::jetstream::service::Snapshot;

/// How long a sender waits for an ack that opens room before giving up (nats-server: 5 s).
const FLOW_RESPONSE_TIMEOUT: Duration = Duration::from_secs(5);
/// How long the first chunk waits for a subscription on the deliver subject (nats-server
/// 2.15 allows about two seconds, then ends the transfer with `408 No Interest`).
const INTEREST_WAIT: Duration = Duration::from_secs(2);
const INTEREST_POLL: Duration = Duration::from_millis(5);
const NO_INTEREST: &[u8] = b"NATS/1.0 408 No Interest\r\n\r\n";

thread_local! {
    /// Snapshot transfers this shard is sending, by transfer id.
    static TRANSFERS: RefCell<HashMap<String, LocalSender<()>>> = RefCell::new(HashMap::new());
    static TRANSFER_COUNT: Cell<u64> = const { Cell::new(0) };
}

/// True for a snapshot chunk's ack subject.
pub fn is_snapshot_ack_subject(subject: &[u8]) -> bool {
    subject.starts_with(SNAPSHOT_ACK_PREFIX.as_bytes())
}

impl Node {
    /// Routes a snapshot ack to the stream's owner. False (no responders) when there is no
    /// such stream.
    pub(super) fn route_snapshot_ack(self: &Rc<Self>, account: AccountId, publish: &Publish<'_>) -> bool {
        let Ok(subject) = std::str::from_utf8(publish.subject) else { return false };
        let Some(stream) = transfer_stream(subject, SNAPSHOT_ACK_PREFIX) else { return false };
        let Some(owner) = self.stream_owner(account, stream) else { return false };
        if owner == self.shard {
            snapshot_acked(subject);
        } else {
            let forward = ApiForward { account, subject: subject.to_string(), reply: None, body: Bytes::new() };
            self.send(owner, Envelope::Api(Box::new(forward)));
        }
        true
    }

    /// Answers `STREAM.SNAPSHOT` on the owner: the response, then the chunks.
    pub(super) async fn answer_snapshot(self: &Rc<Self>, forward: &ApiForward, stream: &str) -> Vec<u8> {
        let Some(service) = self.jetstream.get(forward.account).cloned() else { return Vec::new() };
        let (reply, snapshot) = service.snapshot(stream, &forward.body).await;
        if let Some(snapshot) = snapshot {
            let node = self.clone();
            let account = forward.account;
            let stream = stream.to_string();
            // After the response: the spawned task runs once this one has published it.
            glommio::spawn_local(async move { node.send_snapshot(account, &stream, snapshot).await }).detach();
        }
        reply
    }

    /// Sends the archive in chunks of the requested size, each with an ack subject, at
    /// most the window's worth unacknowledged; then the empty end-of-transfer message.
    async fn send_snapshot(self: &Rc<Self>, account: AccountId, stream: &str, snapshot: Snapshot) {
        let mut snapshot = snapshot;
        let account_name = self.options.accounts.name_of(account).to_string();
        tracing::info!("Starting snapshot for stream '{account_name} > {stream}'");
        let started = std::time::Instant::now();
        let mut bytes = 0usize;
        let request = snapshot.request.clone();
        let chunk_bytes = request.chunk_bytes();
        let in_flight_max = request.chunks_in_flight_max() as u64;
        let id = transfer_id(self.shard.0);
        let (sender, receiver) = local_channel::new_unbounded();
        TRANSFERS.with(|transfers| transfers.borrow_mut().insert(id.clone(), sender));
        let deliver = request.deliver_subject.as_bytes();
        let (mut sent, mut acked, mut full_chunk_sent) = (0u64, 0u64, false);
        let mut status: Option<&[u8]> = None;
        if !self.await_interest(account, deliver).await {
            status = Some(NO_INTEREST);
        }
        while status.is_none() {
            let Some(chunk) = snapshot.next_chunk(chunk_bytes).await else { break };
            if !self.has_interest(account, deliver) {
                // The receiver went away mid-transfer.
                status = Some(NO_INTEREST);
                break;
            }
            while sent - acked >= in_flight_max {
                let ack = futures_lite::future::or(receiver.recv(), async {
                    glommio::timer::sleep(FLOW_RESPONSE_TIMEOUT).await;
                    None
                });
                match ack.await {
                    Some(()) => acked += 1,
                    None => {
                        status = Some(b"NATS/1.0 408 No Flow Response\r\n\r\n");
                        break;
                    }
                }
            }
            if status.is_some() {
                break;
            }
            sent += 1;
            let reply = format!("{SNAPSHOT_ACK_PREFIX}{stream}.{id}.{chunk_bytes}.{sent}");
            self.publish_internal_in(account, deliver, deliver, Some(reply.as_bytes()), None, &chunk);
            full_chunk_sent |= chunk.len() == chunk_bytes;
            bytes += chunk.len();
        }
        TRANSFERS.with(|transfers| transfers.borrow_mut().remove(&id));
        let status = status.or(full_chunk_sent.then_some(b"NATS/1.0 204\r\n\r\n".as_slice()));
        self.publish_internal_in(account, deliver, deliver, None, status, &[]);
        // As nats-server logs it (its sizes in MB of 10^6 bytes).
        let megabytes = bytes as f64 / 1e6;
        let elapsed = started.elapsed();
        tracing::info!("Completed snapshot of {megabytes:.2} MB for stream '{account_name} > {stream}' in {elapsed:?}");
    }

    /// Whether the deliver subject has a subscriber, waiting up to [`INTEREST_WAIT`] for
    /// one: a client may subscribe only once it has the snapshot response.
    async fn await_interest(&self, account: AccountId, deliver: &[u8]) -> bool {
        let deadline = std::time::Instant::now() + INTEREST_WAIT;
        while !self.has_interest(account, deliver) {
            if std::time::Instant::now() >= deadline {
                return false;
            }
            glommio::timer::sleep(INTEREST_POLL).await;
        }
        true
    }
}

/// Counts an ack for the transfer its subject names, if this shard still sends it.
pub(super) fn snapshot_acked(subject: &str) {
    let Some(rest) = subject.strip_prefix(SNAPSHOT_ACK_PREFIX) else { return };
    let Some(id) = rest.split('.').nth(1) else { return };
    TRANSFERS.with(|transfers| {
        if let Some(sender) = transfers.borrow().get(id) {
            let _ = sender.try_send(());
        }
    });
}

/// A transfer id unique on this shard and unlikely to repeat across restarts.
fn transfer_id(shard: u16) -> String {
    let count = TRANSFER_COUNT.with(|count| {
        count.set(count.get() + 1);
        count.get()
    });
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    format!("{shard}x{count}x{nanos:x}")
}
