//! Cross-shard deliveries travel in batches: while a shard routes the publishes of one
//! read (or one burst), messages for each other shard are appended to one buffer, and the
//! whole batch crosses the mesh as a single envelope. One allocation and one ring slot
//! carry many messages, and the receiving shard frees one buffer, not one per message
//! (measured: per-message envelopes left the sending shard in the allocator and the
//! cross-core wake path).
//!
//! A batch also carries client publishes for streams the receiver owns (items with a
//! `stream`): in the same batch as the deliveries, so the receiver sees one shard's
//! deliveries and stores in the order they were routed.

use std::ops::Range;

use bytes::{Bytes, BytesMut};

use super::account::AccountId;
use super::router::Publish;
use crate::jetstream::service::OwnerKey;
use crate::limits;
use crate::shard::ShardId;

/// Where one message's parts sit in a batch's buffer.
#[derive(Debug)]
struct Item {
    subject: Range<u32>,
    reply: Option<Range<u32>>,
    headers: Option<Range<u32>>,
    payload: Range<u32>,
    /// Deliver to the receiver's plain subscribers.
    plain: bool,
    /// Queue groups for which the receiver picks one member (rare: usually empty).
    queues: Vec<Bytes>,
    /// The subject subscribers match when it differs from `subject` (JetStream
    /// deliveries carry the stored subject to a deliver subject or pull inbox).
    matched: Option<Range<u32>>,
    /// For a message to store rather than deliver: the receiver's stream it goes to.
    stream: Option<Range<u32>>,
    /// That stream's owner on the receiver (`OwnerKey::NONE` for a delivery).
    owner_key: OwnerKey,
    /// That stream's account (`$G` for a delivery).
    account: AccountId,
}

/// A sealed batch, ready to cross the mesh.
#[derive(Debug)]
pub struct DeliveryBatch {
    data: Bytes,
    items: Vec<Item>,
}

/// One message of a batch, borrowing the batch's buffer.
pub struct DeliveryRef<'a> {
    pub subject: &'a [u8],
    pub reply: Option<&'a [u8]>,
    pub headers: Option<&'a [u8]>,
    pub payload: &'a [u8],
    pub plain: bool,
    pub queues: &'a [Bytes],
    pub matched: Option<&'a [u8]>,
    /// Set when the message is for this stream of the receiver, not for subscribers.
    pub stream: Option<&'a [u8]>,
    /// The stream's owner on the receiver, from the sender's catalog entry.
    pub owner_key: OwnerKey,
    /// The stream's account.
    pub account: AccountId,
}

impl DeliveryBatch {
    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = DeliveryRef<'_>> {
        let slice = |range: &Range<u32>| &self.data[range.start as usize..range.end as usize];
        self.items.iter().map(move |item| DeliveryRef {
            subject: slice(&item.subject),
            reply: item.reply.as_ref().map(slice),
            headers: item.headers.as_ref().map(slice),
            payload: slice(&item.payload),
            plain: item.plain,
            queues: &item.queues,
            matched: item.matched.as_ref().map(slice),
            stream: item.stream.as_ref().map(slice),
            owner_key: item.owner_key,
            account: item.account,
        })
    }
}

/// The stream a client publish goes to on the receiver: its account, name and owner key.
#[derive(Clone, Copy, Debug)]
pub struct StoreTarget<'a> {
    pub account: AccountId,
    pub stream: &'a str,
    pub owner_key: OwnerKey,
}

/// Open batches, one per peer shard.
pub struct OutgoingBatches {
    open: Vec<Option<(BytesMut, Vec<Item>)>>,
}

impl OutgoingBatches {
    pub fn new(shard_count: u16) -> OutgoingBatches {
        OutgoingBatches { open: (0..shard_count).map(|_| None).collect() }
    }

    /// Appends a message for `peer`. Returns true when that batch should be sent now.
    pub fn push(&mut self, peer: ShardId, publish: &Publish<'_>, plain: bool, queues: Vec<Bytes>) -> bool {
        self.push_to(peer, None, publish, plain, queues)
    }

    /// As `push`, for subscribers of `matched` rather than of the message's subject.
    pub fn push_to(
        &mut self,
        peer: ShardId,
        matched: Option<&[u8]>,
        publish: &Publish<'_>,
        plain: bool,
        queues: Vec<Bytes>,
    ) -> bool {
        self.append(peer, matched, None, publish, plain, queues)
    }

    /// Appends a client publish for `stream`, which `peer` owns. Returns true when that
    /// batch should be sent now.
    pub fn push_store(&mut self, peer: ShardId, target: StoreTarget<'_>, publish: &Publish<'_>) -> bool {
        self.append(peer, None, Some(target), publish, false, Vec::new())
    }

    fn append(
        &mut self,
        peer: ShardId,
        matched: Option<&[u8]>,
        stream: Option<StoreTarget<'_>>,
        publish: &Publish<'_>,
        plain: bool,
        queues: Vec<Bytes>,
    ) -> bool {
        let (data, items) = self.open[usize::from(peer.0)]
            .get_or_insert_with(|| (BytesMut::with_capacity(limits::MESH_BATCH_BYTES_INITIAL), Vec::new()));
        let mut append = |bytes: &[u8]| {
            let start = data.len() as u32;
            data.extend_from_slice(bytes);
            start..data.len() as u32
        };
        let item = Item {
            subject: append(publish.subject),
            reply: publish.reply.map(&mut append),
            headers: publish.headers.map(&mut append),
            payload: append(publish.payload),
            plain,
            queues,
            matched: matched.map(&mut append),
            stream: stream.map(|target| append(target.stream.as_bytes())),
            owner_key: stream.map_or(OwnerKey::NONE, |target| target.owner_key),
            account: stream.map_or(AccountId::GLOBAL, |target| target.account),
        };
        items.push(item);
        data.len() >= limits::MESH_BATCH_BYTES_MAX || items.len() >= limits::MESH_BATCH_MESSAGES_MAX
    }

    /// Seals and removes `peer`'s open batch, if any.
    pub fn take(&mut self, peer: ShardId) -> Option<DeliveryBatch> {
        self.open[usize::from(peer.0)].take().map(|(data, items)| DeliveryBatch { data: data.freeze(), items })
    }

    /// Peers with an open batch.
    pub fn open_peers(&self) -> impl Iterator<Item = ShardId> + '_ {
        self.open.iter().enumerate().filter(|(_, batch)| batch.is_some()).map(|(peer, _)| ShardId(peer as u16))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_returns_every_message_intact_and_in_order() {
        let mut batches = OutgoingBatches::new(2);
        let first = Publish { subject: b"a.b", reply: Some(b"_INBOX.1"), headers: None, payload: b"one" };
        let second = Publish { subject: b"c", reply: None, headers: Some(b"NATS/1.0\r\n\r\n"), payload: b"" };
        assert!(!batches.push(ShardId(1), &first, true, Vec::new()));
        assert!(!batches.push(ShardId(1), &second, false, vec![Bytes::from_static(b"q")]));
        assert_eq!(batches.open_peers().collect::<Vec<_>>(), [ShardId(1)]);
        let batch = batches.take(ShardId(1)).unwrap();
        assert!(batches.take(ShardId(1)).is_none());
        let items: Vec<DeliveryRef<'_>> = batch.iter().collect();
        assert_eq!(items.len(), 2);
        assert_eq!(
            (items[0].subject, items[0].reply, items[0].payload),
            (&b"a.b"[..], Some(&b"_INBOX.1"[..]), &b"one"[..])
        );
        assert!(items[0].plain && items[0].headers.is_none());
        assert_eq!(items[1].headers, Some(&b"NATS/1.0\r\n\r\n"[..]));
        assert_eq!(items[1].queues, [Bytes::from_static(b"q")]);
        assert!(!items[1].plain);
    }

    #[test]
    fn stores_and_deliveries_keep_their_order_in_one_batch() {
        let mut batches = OutgoingBatches::new(2);
        let publish = Publish { subject: b"orders.1", reply: Some(b"_INBOX.a"), headers: None, payload: b"x" };
        assert!(!batches.push(ShardId(1), &publish, true, Vec::new()));
        let target = StoreTarget { account: AccountId::GLOBAL, stream: "ORDERS", owner_key: OwnerKey::NONE };
        assert!(!batches.push_store(ShardId(1), target, &publish));
        let batch = batches.take(ShardId(1)).unwrap();
        let items: Vec<DeliveryRef<'_>> = batch.iter().collect();
        assert_eq!((items[0].stream, items[1].stream), (None, Some(&b"ORDERS"[..])));
        let store = (items[1].subject, items[1].reply, items[1].payload);
        assert_eq!(store, (&b"orders.1"[..], Some(&b"_INBOX.a"[..]), &b"x"[..]));
    }

    #[test]
    fn a_full_batch_asks_to_be_sent() {
        let mut batches = OutgoingBatches::new(2);
        let payload = vec![0u8; 1024];
        let publish = Publish { subject: b"s", reply: None, headers: None, payload: &payload };
        let mut pushes = 0;
        while !batches.push(ShardId(0), &publish, true, Vec::new()) {
            pushes += 1;
            assert!(pushes < 100_000, "batch never filled");
        }
        assert!(batches.take(ShardId(0)).unwrap().len() > 1);
    }
}
