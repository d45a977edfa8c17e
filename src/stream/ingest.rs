//! Messages that come from another stream rather than a client: a mirror stores its
//! origin's messages under the origin's sequences and timestamps (gaps included); a
//! source appends them under new sequences. Neither is held to the client-side
//! publish expectations of the original publish (`Nats-Expected-*` were checked by
//! the origin when it stored the message).

use super::config::StreamConfig;
use super::error::Error;
use super::headers::PublishExpectations;
use super::stream::{Keep, PubAck, Stream};

/// Where a stored message comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// A client publish: every header is honoured.
    Client,
    /// A source's origin: deduplicated by `Nats-Msg-Id`; a rollup or TTL is honoured
    /// when this stream allows it, else the header is kept as data (a copy is never
    /// refused for a header the origin accepted, which would stall the source).
    Source,
    /// A mirror's origin: stored as it is, at the origin's sequence and time. A
    /// sequence at or below the mirror's last is already there (a duplicate).
    Mirror { seq: u64, timestamp_ns: i64 },
}

impl Origin {
    /// The publish expectations of a message from this origin.
    pub(super) fn expectations<'h>(self, headers: &'h [u8], config: &StreamConfig) -> PublishExpectations<'h> {
        match self {
            Origin::Client => PublishExpectations::from_headers(headers),
            Origin::Source => {
                let all = PublishExpectations::from_headers(headers);
                PublishExpectations {
                    msg_id: all.msg_id,
                    rollup: all.rollup.filter(|_| config.allow_rollup),
                    ttl: all.ttl.filter(|_| config.allow_msg_ttl),
                    ..Default::default()
                }
            }
            Origin::Mirror { .. } => PublishExpectations::default(),
        }
    }
}

impl Stream {
    /// Stores a message copied from another stream; resolves once durable. The subject
    /// need not be captured by this stream (a mirror captures none).
    pub async fn ingest(&self, origin: Origin, subject: &str, headers: &[u8], payload: &[u8]) -> Result<PubAck, Error> {
        assert!(origin != Origin::Client, "client publishes go through publish_as");
        self.publish_from(origin, subject, subject, headers, payload, Keep::Store).await
    }
}
