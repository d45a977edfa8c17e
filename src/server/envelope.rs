//! What shards say to each other over the mesh (DESIGN §2). Payloads are `Bytes`, so a
//! message fanned out to several shards is copied once, when it leaves its connection's
//! read buffer.

use bytes::Bytes;

use crate::shard::ShardId;

#[derive(Debug)]
pub enum Envelope {
    /// A message for the receiving shard's subscribers: every plain subscription that
    /// matches, and one member of each queue group named in `queues`.
    Deliver(Box<Delivery>),
    /// The sender gained its first (`added`) or lost its last subscription on `pattern`
    /// in `queue` (or plain when `None`). `epoch` orders the sender's interest changes.
    Interest { pattern: Bytes, queue: Option<Bytes>, added: bool, epoch: u64 },
    /// The sender has applied every interest change of the receiver up to `epoch`.
    InterestApplied { epoch: u64 },
}

#[derive(Debug)]
pub struct Delivery {
    pub subject: Bytes,
    pub reply: Option<Bytes>,
    pub headers: Option<Bytes>,
    pub payload: Bytes,
    pub plain: bool,
    pub queues: Vec<Bytes>,
    pub from: ShardId,
}
