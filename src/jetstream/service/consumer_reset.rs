//! `CONSUMER.RESET.<s>.<c>` (nats-server 2.14, ADR-60): restart a consumer's delivery at
//! a stream sequence (`seq`), or at its ack floor (`seq` 0 or no body). Only consumers
//! that deliver everything from a start point (`all`, `by_start_sequence`,
//! `by_start_time`) take a sequence, and never one below `opt_start_seq`; the errors are
//! nats-server's (10204). The reply is the consumer's info plus `reset_seq`, sent once a
//! durable consumer's new state is synced to its file.

use super::StreamService;
use crate::consumer::StreamSeq;
use crate::jetstream::consumer_api::{ResetBody, ResetRequest};
use crate::jetstream::errors::ApiError;
use crate::jetstream::policies::DeliverPolicy;
use crate::jetstream::request::decode_request;

impl StreamService {
    /// Resets a consumer; answers its info afterwards and the sequence it restarts at.
    pub(super) async fn reset_consumer(
        &self,
        stream_name: &str,
        name: &str,
        body: &[u8],
    ) -> Result<ResetBody, ApiError> {
        let request = decode_request::<ResetRequest>(body)?;
        let stream = self.stream_handle(stream_name)?;
        let id = self.consumers.find(stream_name, name).ok_or_else(ApiError::consumer_not_found)?;
        let mut outcome = Ok(0);
        self.consumers.call(&stream, id, |entry, cx| {
            outcome = allowed_start(&entry.config, request.seq)
                .map(|seq| seq.unwrap_or_else(|| entry.consumer.counters().ack_floor.stream.get() + 1));
            if let Ok(seq) = outcome {
                entry.consumer.reset(StreamSeq(seq), cx);
                entry.last_delivered_ns = None;
                entry.last_acked_ns = None;
            }
        });
        let reset_seq = outcome?;
        // Deliveries the reset started go out first, so the info matches the wire.
        self.consumers.effects_carried_out().await;
        // A durable's reset is on disk before it is answered (as a double ack is).
        if !self.persist_consumer(id, true).await {
            return Err(ApiError::consumer_create("consumer state could not be written"));
        }
        let info = self.consumer_info_named(stream_name, name)?;
        Ok(ResetBody { info, reset_seq })
    }
}

/// The sequence asked for (`None`: the ack floor), if the consumer's deliver policy
/// allows it.
fn allowed_start(
    config: &crate::jetstream::consumer_config::ConsumerConfig,
    seq: u64,
) -> Result<Option<u64>, ApiError> {
    if seq == 0 {
        return Ok(None);
    }
    match config.deliver_policy {
        DeliverPolicy::All | DeliverPolicy::ByStartTime => Ok(Some(seq)),
        DeliverPolicy::ByStartSequence if seq < config.opt_start_seq => {
            Err(ApiError::consumer_invalid_reset("below start seq"))
        }
        DeliverPolicy::ByStartSequence => Ok(Some(seq)),
        _ => Err(ApiError::consumer_invalid_reset("not allowed")),
    }
}
