//! What shards say to each other over the mesh (DESIGN §2). Payloads are `Bytes`, so a
//! message fanned out to several shards is copied once, when it leaves its connection's
//! read buffer.

use bytes::Bytes;

use super::account::AccountId;
use super::batch::DeliveryBatch;
use super::catalog::CatalogChange;
use super::monitor::snapshot::{ShardSnapshot, SnapshotQuery};
use super::restore_routing::{AdoptRestore, OpenRestore};
use crate::jetstream::service::{OriginReply, OriginRequest, OwnerKey, Usage};
use crate::jetstream::stream_config::StreamConfig as WireConfig;
use crate::jetstream::stream_info::StreamInfo;

#[derive(Debug)]
pub enum Envelope {
    /// Messages for the receiving shard's subscribers: for each, every plain subscription
    /// that matches, and one member of each queue group the item names; and client
    /// publishes for streams the receiver owns, in the order they were routed.
    Deliver(Box<DeliveryBatch>),
    /// The sender gained its first (`added`) or lost its last subscription on `pattern`
    /// in `queue` (or plain when `None`). `epoch` orders the sender's interest changes.
    Interest {
        pattern: Bytes,
        queue: Option<Bytes>,
        added: bool,
        epoch: u64,
    },
    /// The sender has applied every interest change of the receiver up to `epoch`.
    InterestApplied {
        epoch: u64,
    },
    /// Subscribers here fed by the receiver's deliveries became congested (`true`), or
    /// all of them drained or closed (`false`): the receiver's publishers to this shard
    /// wait while it is `true` (`congestion.rs`).
    SubscribersCongested {
        congested: bool,
    },
    /// A stream appeared, changed or went away.
    Catalog(CatalogChange),
    /// A `$JS.API` request for the receiver to answer (it owns the stream, or it is the
    /// coordinator of stream creation and deletion).
    Api(Box<ApiForward>),
    /// A request whose answer the sender awaits (`Return` with the same id).
    Call {
        id: u64,
        call: Box<ShardCall>,
    },
    Return {
        id: u64,
        value: Box<ShardReturn>,
    },
    /// A response published on the sender to a service reply mapping the receiver owns
    /// (`service_responses.rs`), for the receiver to carry back to its requester.
    ServiceResponse(Box<ServiceResponse>),
    /// A step of moving a client connection between shards (`handoff.rs`).
    Handoff(super::handoff::Step),
}

#[derive(Debug)]
pub struct ServiceResponse {
    /// The exporting account the response was published in.
    pub exporter: AccountId,
    /// The reply mapping's subject.
    pub to: Bytes,
    /// The subject the message carries when it is not `to` (a JetStream delivery's).
    pub subject: Option<Bytes>,
    pub reply: Option<Bytes>,
    pub headers: Option<Bytes>,
    pub payload: Bytes,
}

#[derive(Debug)]
pub struct StoreRequest {
    /// The account whose stream it is.
    pub account: AccountId,
    pub stream: String,
    /// The stream's owner on the receiving shard (its catalog entry's key).
    pub owner_key: OwnerKey,
    pub subject: Bytes,
    pub reply: Option<Bytes>,
    pub headers: Option<Bytes>,
    pub payload: Bytes,
}

#[derive(Debug)]
pub struct ApiForward {
    /// The requester's account: the request is about its streams, the reply goes to it.
    pub account: AccountId,
    pub subject: String,
    pub reply: Option<Bytes>,
    pub body: Bytes,
}

#[derive(Debug)]
pub enum ShardCall {
    /// Stream operations and figures are an account's: they reach that account's
    /// service on the callee.
    CreateStream(AccountId, Box<WireConfig>),
    UpdateStream(AccountId, Box<WireConfig>),
    DeleteStream(AccountId, String),
    Usage(AccountId),
    StreamInfos(AccountId),
    /// Answered at once: the caller knows everything the callee sent before is applied.
    Barrier,
    /// This shard's part of a monitoring answer.
    Snapshot(SnapshotQuery),
    /// Stores a message (a stream's republished copy); returns once it is stored.
    Store(Box<StoreRequest>),
    /// The next messages of an origin stream the callee owns, for a mirror or source
    /// followed by the caller (answered when there are some, or after a wait).
    ReadOrigin(AccountId, Box<OriginRequest>),
    /// `STREAM.RESTORE` (`restore_routing`): opens an upload on its owner-to-be; asks the
    /// coordinator to adopt a stored upload; adopts it on its owner.
    OpenRestore(AccountId, Box<OpenRestore>),
    AdoptRestore(AccountId, Box<AdoptRestore>),
    AdoptRestored(AccountId, String),
}

#[derive(Debug)]
pub enum ShardReturn {
    /// A reply to send, and the catalog change to broadcast if the operation succeeded.
    Reply {
        reply: Vec<u8>,
        change: Option<CatalogChange>,
    },
    Usage(Usage),
    StreamInfos(Vec<StreamInfo>),
    Done,
    Snapshot(Box<ShardSnapshot>),
    Origin(Box<OriginReply>),
}
