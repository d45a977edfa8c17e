//! An atomic batch's way into its stream: each message is staged (`batch.rs`) in the
//! order it came; the commit stores the whole batch, all or nothing, and resolves with
//! one pub ack once it is durable. Single messages take `publish.rs`.

use std::collections::HashMap;

use super::{batch, convert, republish, StreamService};
use crate::jetstream::errors::ApiError;
use crate::jetstream::pub_ack::PubAck as WirePubAck;
use crate::stream::{self, StreamOwner};

impl StreamService {
    /// Stages a message of an atomic batch of stream `name`; at the batch's commit,
    /// stores it and resolves with its pub ack. `None`: a message before the commit
    /// (answered with an empty reply).
    pub async fn store_batch_message(
        &self,
        name: &str,
        subject: &str,
        headers: &[u8],
        payload: &[u8],
    ) -> Result<Option<WirePubAck>, ApiError> {
        let owner = self.owner(name).ok_or_else(ApiError::stream_not_found)?;
        let rules = owner.rules();
        rules.check_publish().map_err(|e| convert::api_error(&e))?;
        let Some(id) = batch::batch_id(headers) else { return Err(ApiError::bad_request()) };
        if !rules.allow_atomic {
            return Err(ApiError::atomic_publish_disabled());
        }
        // Staged before any await: a batch's messages are taken in the order they came.
        let staged = self.batches.borrow_mut().stage(name, id, subject, headers, payload);
        let staged = staged.inspect_err(|error| {
            if let Some(reason) = batch::abandon_reason(error) {
                self.advise_batch_abandoned(name, id, reason);
            }
        })?;
        self.engine.wake_maintenance(); // an open batch is abandoned when idle too long
        match staged {
            batch::Staged::More => Ok(None),
            batch::Staged::Commit { id, messages } => self.commit_batch(&owner, id, messages).await.map(Some),
        }
    }

    /// Stores a complete atomic batch, all or nothing; one pub ack for it.
    async fn commit_batch(
        &self,
        owner: &StreamOwner,
        id: String,
        mut messages: Vec<stream::BatchMessage>,
    ) -> Result<WirePubAck, ApiError> {
        let rules = owner.rules();
        if rules.may_replace {
            self.consumers.effects_carried_out().await;
        }
        // As for a single publish: the stream's subject transform decides the subject
        // stored, and republish copies each message once the batch is durable.
        if rules.ingest.is_some() {
            for message in &mut messages {
                let stored = rules.stored_subject(&message.subject).into_owned();
                if stored != message.subject {
                    message.captured = Some(std::mem::replace(&mut message.subject, stored));
                }
            }
        }
        let republish = rules.republish.as_ref();
        let stream = owner.stream();
        let mut last_of_subject: HashMap<String, u64> = HashMap::new();
        if republish.is_some() {
            for message in &messages {
                if !last_of_subject.contains_key(&message.subject) {
                    let last = owner.last_seq_on(&message.subject);
                    last_of_subject.insert(message.subject.clone(), last);
                }
            }
        }
        let last = stream.publish_batch(&messages).await.map_err(|e| convert::api_error(&e))?;
        let first = last + 1 - messages.len() as u64;
        for (seq, message) in (first..=last).zip(&messages) {
            let (headers, payload) = (message.headers.len(), message.payload.len());
            self.consumers.stream_appended(stream, seq, &message.subject, headers, payload);
        }
        self.origin_appended();
        if let Some(republish) = republish {
            for (seq, message) in (first..=last).zip(&messages) {
                let previous = last_of_subject.insert(message.subject.clone(), seq).unwrap_or(0);
                let stored = republish::Stored {
                    stream: owner,
                    subject: &message.subject,
                    seq,
                    previous_seq: previous,
                    headers: &message.headers,
                    payload: &message.payload,
                };
                self.republish(republish, &stored).await;
            }
        }
        let count = messages.len() as u64;
        Ok(WirePubAck {
            stream: owner.name().to_string(),
            seq: last,
            domain: self.domain(),
            duplicate: false,
            batch: Some((id, count)),
            counter_total: None,
        })
    }
}
