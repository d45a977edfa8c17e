//! The copy a stream republishes once a message is durable (its `republish` rule,
//! `stream::RepublishRule`), with nats-server's headers.

use super::StreamService;
use crate::jetstream::Timestamp;
use crate::protocol::headers::{parse_header_block, HeaderBlockBuilder};
use crate::stream::{RepublishRule, StreamOwner};

/// What `republish` needs of one stored message.
pub(super) struct Stored<'a> {
    pub stream: &'a StreamOwner,
    pub subject: &'a str,
    pub seq: u64,
    /// The subject's sequence before this message (0: none).
    pub previous_seq: u64,
    pub headers: &'a [u8],
    pub payload: &'a [u8],
}

impl StreamService {
    /// Publishes the copy `republish` asks for, if the stored subject matches its source;
    /// resolves once a stream that captures the copy has stored it. Call only once the
    /// message is durable.
    pub(super) async fn republish(&self, republish: &RepublishRule, stored: &Stored<'_>) {
        let Some(destination) = republish.transform.apply(stored.subject) else { return };
        let Some(outlet) = self.consumers.outlet() else { return };
        let timestamp_ns = stored
            .stream
            .stream()
            .message_summary(stored.seq)
            .map_or_else(super::now_ns, |summary| summary.timestamp_ns);
        let headers = republish_headers(stored, timestamp_ns, republish.headers_only);
        let payload = if republish.headers_only { &[][..] } else { stored.payload };
        outlet.republish(&destination, &headers, payload).await;
    }
}

/// The message's own headers, then nats-server's republish headers, in its order.
fn republish_headers(stored: &Stored<'_>, timestamp_ns: i64, headers_only: bool) -> Vec<u8> {
    let mut headers = Vec::with_capacity(stored.headers.len() + 192);
    let own = parse_header_block(stored.headers).ok();
    let mut builder = HeaderBlockBuilder::new(&mut headers);
    for (name, value) in own.iter().flat_map(|block| block.iter()) {
        builder.header(name, value);
    }
    builder
        .header(b"Nats-Stream", stored.stream.name().as_bytes())
        .header(b"Nats-Subject", stored.subject.as_bytes())
        .header(b"Nats-Sequence", stored.seq.to_string().as_bytes())
        .header(b"Nats-Time-Stamp", Timestamp::from_unix_nanos(timestamp_ns).to_string().as_bytes())
        .header(b"Nats-Last-Sequence", stored.previous_seq.to_string().as_bytes());
    if headers_only {
        builder.header(b"Nats-Msg-Size", stored.payload.len().to_string().as_bytes());
    }
    builder.finish();
    headers
}
