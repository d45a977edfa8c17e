//! Many publishes to one stream in one call: a window without a future per message.
//!
//! `join_all` over 256 [`Engine::publish`] futures spends ~16 % of the shard's time in the
//! combinator itself (an `Arc` task, a waker and an ordered queue per future; profile in
//! perf/embedding.md, ninth session). [`Engine::publish_many`] appends the messages one
//! after the other, so they join the same group commit as a window of publishes would,
//! then waits once for the last group. Each message is stored or refused on its own: this
//! is not the all-or-nothing batch of `allow_atomic` streams (`Stream::publish_batch`).

use super::Engine;
use crate::stream::{Appended, Error, PubAck, PublishRequest};

/// One message for [`Engine::publish_many`].
#[derive(Debug, Clone, Copy)]
pub struct Outgoing<'a> {
    pub subject: &'a str,
    /// A raw NATS header block, or empty.
    pub headers: &'a [u8],
    pub payload: &'a [u8],
}

impl<'a> Outgoing<'a> {
    /// A message without headers.
    pub fn new(subject: &'a str, payload: &'a [u8]) -> Outgoing<'a> {
        Outgoing { subject, headers: &[], payload }
    }
}

impl Engine {
    /// Publishes `messages` to `stream` in order and resolves once every one stored is
    /// durable: one result per message, in order. A message refused (too big, a failed
    /// `Nats-Expected-*` header) fails alone and the others are stored; a duplicate
    /// `Nats-Msg-Id` answers with the original's sequence, as [`Engine::publish`] does.
    /// Fails as a whole only when `stream` does not exist.
    pub async fn publish_many(
        &self,
        stream: &str,
        messages: &[Outgoing<'_>],
    ) -> Result<Vec<Result<PubAck, Error>>, Error> {
        let target = self.stream(stream)?;
        // One clock reading for the window (a read per message was ~8 % of the shard's
        // time in the lockstep window's profile, perf/embedding.md).
        let at_ns = Some(target.now_ns());
        let mut appended = Vec::with_capacity(messages.len());
        for message in messages {
            let request =
                PublishRequest { at_ns, ..PublishRequest::client(message.subject, message.headers, message.payload) };
            // The synchronous append first: no future per message unless the log must roll.
            let outcome = match target.append_now(request) {
                Ok(Some(appended)) => Ok(appended),
                Ok(None) => target.append_unsettled(request).await,
                Err(error) => Err(error),
            };
            appended.push(outcome);
        }
        let mut acks = Vec::with_capacity(messages.len());
        let mut last_stored = None;
        for outcome in appended {
            acks.push(match outcome {
                Ok(Appended::Duplicate(seq)) => Ok(PubAck { seq, duplicate: true }),
                Ok(Appended::Pending(pending)) => target.settle(&pending).await.map(|()| {
                    last_stored = Some(pending.seq);
                    PubAck { seq: pending.seq, duplicate: false }
                }),
                Err(error) => Err(error),
            });
        }
        if let Some(seq) = last_stored {
            self.note_durable(stream, seq);
        }
        Ok(acks)
    }
}
