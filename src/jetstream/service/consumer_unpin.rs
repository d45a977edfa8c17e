//! `CONSUMER.UNPIN.<s>.<c>` (nats-server 2.11, ADR-42): release the pin a `pinned_client`
//! group holds, so the next message pins the next waiting request. Errors and their
//! order are nats-server's (recorded from 2.15.1): the body first (`UnpinRequest`), then
//! stream (10059) and consumer (10014), then whether the consumer has that group
//! (10160). Any consumer with the group is answered, whatever its policy, and an
//! `UNPINNED` advisory (reason `admin`) goes out even when nothing was pinned.

use super::StreamService;
use crate::jetstream::consumer_api::UnpinRequest;
use crate::jetstream::errors::ApiError;

/// The (empty) body of a successful unpin: only the response `type` is sent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct UnpinBody {}

impl StreamService {
    /// Releases the pin of the group the request names.
    pub(super) fn unpin_consumer(&self, stream_name: &str, name: &str, body: &[u8]) -> Result<UnpinBody, ApiError> {
        let request = UnpinRequest::decode(body)?;
        let stream = self.stream_handle(stream_name)?;
        let id = self.consumers.find(stream_name, name).ok_or_else(ApiError::consumer_not_found)?;
        let mut outcome = Ok(UnpinBody {});
        self.consumers.call(&stream, id, |entry, cx| {
            if entry.config.priority_groups.contains(&request.group) {
                entry.consumer.unpin(&request.group, cx);
            } else {
                outcome = Err(ApiError::consumer_invalid_priority_group());
            }
        });
        outcome
    }
}
