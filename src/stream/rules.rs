//! What a stream's config decides for the writes that reach its owner, in the stream's own
//! terms: sealed and deny flags, retention, atomic batches, acks, and the subject
//! transforms of what it stores and republishes. The API layer converts its wire config
//! into these at the edge (`jetstream/service/convert.rs`) and keeps the wire config only
//! to answer info requests.

use std::borrow::Cow;

use super::error::Error;
use crate::subject::SubjectTransform;

/// How long a stream keeps a message (nats-server's retention policies).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Retention {
    /// Until the stream's limits remove it.
    #[default]
    Limits,
    /// While some consumer still needs it: a message no consumer takes is not stored.
    Interest,
    /// Until its one consumer settles it.
    WorkQueue,
}

/// A compiled `republish`: once a message is durable, a copy goes to the mapping of its
/// stored subject, if that matches the rule's source.
#[derive(Clone, Debug)]
pub struct RepublishRule {
    pub transform: SubjectTransform,
    /// The copy carries the headers and the payload's size, not the payload.
    pub headers_only: bool,
}

/// A stream's rules for writes. Replaced whole when the stream's config changes.
#[derive(Clone, Debug, Default)]
pub struct StreamRules {
    /// Refuses publishes, purges and deletes.
    pub sealed: bool,
    pub deny_delete: bool,
    pub deny_purge: bool,
    /// A publish may replace earlier messages (per-subject limit or rollups): consumers'
    /// pending deliveries go out before it is appended.
    pub may_replace: bool,
    pub retention: Retention,
    pub allow_atomic: bool,
    /// Takes fast batches (nats-server 2.14 `allow_batched`): their messages are stored as
    /// they come, answered by the service's flow control (`jetstream/service/fast_batch.rs`).
    pub allow_batched: bool,
    /// Publishes get no pub ack.
    pub no_ack: bool,
    /// Maps captured subjects to the subjects stored.
    pub ingest: Option<SubjectTransform>,
    pub republish: Option<RepublishRule>,
}

impl StreamRules {
    /// The subject a message captured on `captured` is stored under.
    pub fn stored_subject<'a>(&self, captured: &'a str) -> Cow<'a, str> {
        match self.ingest.as_ref().and_then(|transform| transform.apply(captured)) {
            Some(mapped) => Cow::Owned(mapped),
            None => Cow::Borrowed(captured),
        }
    }

    /// Whether a publish may be stored.
    pub fn check_publish(&self) -> Result<(), Error> {
        if self.sealed {
            return Err(Error::Sealed);
        }
        Ok(())
    }

    /// Whether the stream may be purged.
    pub fn check_purge(&self) -> Result<(), Error> {
        if self.sealed {
            return Err(Error::Sealed);
        }
        if self.deny_purge {
            return Err(Error::PurgeNotPermitted);
        }
        Ok(())
    }

    /// Whether a client may delete one of the stream's messages.
    pub fn check_delete(&self) -> Result<(), Error> {
        if self.sealed {
            return Err(Error::Sealed);
        }
        if self.deny_delete {
            return Err(Error::DeleteNotPermitted);
        }
        Ok(())
    }
}
