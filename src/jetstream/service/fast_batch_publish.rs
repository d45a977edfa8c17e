//! A fast batch's way into its stream (`fast_batch.rs` keeps the batches): a message is
//! checked against its batch when it comes, then taken like any publish (`publish.rs`),
//! appended at once and queued for its group commit; when its outcome is known, in
//! publish order and only once it is durable, the batch's flow control decides what its
//! publisher hears. Nothing of a fast batch is held back, unlike an atomic batch
//! (`batch_publish.rs`).

use std::time::Instant;

use super::fast_batch::{self, Answer};
use super::{convert, StreamService};
use crate::jetstream::errors::ApiError;
use crate::jetstream::pub_ack::encode_pub_ack_error;
use crate::stream;

impl StreamService {
    /// A message of stream `name` (`size`: its headers and payload) whose reply (`reply`,
    /// see [`fast_batch::is_fast_reply`]) asks for fast batch handling; `allowed`: the
    /// stream has `allow_batched`. A message over the stream's `max_msg_size` is refused
    /// before its batch sees it, so it counts as missing (as in nats-server). Sends what
    /// goes out at once (start ack, gap notes, errors, a final pub ack); true when the
    /// message is to be stored, its answer then following from
    /// [`StreamService::fast_batch_settled`].
    pub(super) fn fast_batch_arrives(
        &self,
        name: &str,
        allowed: bool,
        reply: &str,
        size: usize,
        started: Instant,
    ) -> bool {
        let max_msg_size = self.records.borrow().get(name).map_or(-1, |record| record.config.max_msg_size);
        let arrival = match allowed {
            false => Err(ApiError::batch_publish_disabled()),
            true if max_msg_size >= 0 && size as u64 > max_msg_size as u64 => Err(ApiError::message_exceeds_maximum()),
            true => fast_batch::parse(reply)
                .map(|fast| self.fast_batches.borrow_mut().arrive(name, &self.domain(), reply, &fast)),
        };
        let (store, replies) = match arrival {
            Ok(arrival) => (arrival.store, arrival.replies),
            Err(error) => (false, vec![encode_pub_ack_error(name, &error)]),
        };
        if store {
            self.engine.wake_maintenance(); // an open batch is dropped when idle too long
        }
        let Some(outlet) = self.consumers.outlet() else { return store };
        for payload in replies {
            outlet.publish(reply, reply.as_bytes(), None, None, &payload);
        }
        if !store {
            outlet.stored(false, started.elapsed());
        }
        store
    }

    /// A stored fast batch message's outcome (`Ok((stream sequence, duplicate))` or the
    /// refusal), known once it is durable: what its batch's flow control answers.
    pub(super) fn fast_batch_settled(
        &self,
        name: &str,
        reply: &str,
        outcome: &Result<(u64, bool), stream::Error>,
    ) -> Vec<Answer> {
        // Parsed when it came (else it was not stored).
        let Ok(fast) = fast_batch::parse(reply) else { return Vec::new() };
        let outcome = outcome.as_ref().map(|(seq, _)| *seq).map_err(convert::api_error);
        self.fast_batches.borrow_mut().settle(name, &self.domain(), reply, &fast, outcome)
    }
}
