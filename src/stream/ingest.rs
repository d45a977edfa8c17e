//! Where a message comes from, and what `Stream::append` is given for it
//! ([`PublishRequest`]). Messages that come from another stream rather than a client:
//! a mirror stores its origin's messages under the origin's sequences and timestamps
//! (gaps included); a source appends them under new sequences. Neither is held to the
//! client-side publish expectations of the original publish (`Nats-Expected-*` were
//! checked by the origin when it stored the message).

use super::config::StreamConfig;
use super::headers::PublishExpectations;
use super::stream::Keep;

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

/// One message on its way into a stream ([`Stream::append`]), borrowed from the caller.
#[derive(Clone, Copy, Debug)]
pub struct PublishRequest<'a> {
    pub origin: Origin,
    /// The subject the stream captured it on. A copy from a mirror's or source's origin
    /// need not be captured by this stream (a mirror captures none).
    pub captured: &'a str,
    /// The subject stored: `captured` after the stream's subject transform (applied by
    /// the caller), or a source's mapped subject.
    pub subject: &'a str,
    /// NATS header block (may be empty); `Nats-Msg-Id` and `Nats-Expected-*` are honoured
    /// as `origin` allows.
    pub headers: &'a [u8],
    pub payload: &'a [u8],
    pub keep: Keep,
    /// When it was published, if the caller read the clock for it (a window of publishes
    /// may share one reading: `Engine::publish_many`); `None`: the stream reads it.
    pub at_ns: Option<i64>,
}

impl<'a> PublishRequest<'a> {
    /// A client's message stored under the subject it was published to.
    pub fn client(subject: &'a str, headers: &'a [u8], payload: &'a [u8]) -> PublishRequest<'a> {
        PublishRequest {
            origin: Origin::Client,
            captured: subject,
            subject,
            headers,
            payload,
            keep: Keep::Store,
            at_ns: None,
        }
    }
}
