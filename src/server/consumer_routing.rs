//! Consumer traffic on the mesh: consumer API requests and pull requests go to the
//! stream's owning shard, and so do publishes to `$JS.ACK.<stream>.>` and
//! `$JS.FC.<stream>.>` (as `Envelope::Api` forwards), where the stream's consumers live.

use std::rc::Rc;

use bytes::Bytes;

use super::account::AccountId;
use super::envelope::{ApiForward, Envelope};
use super::node::Node;
use super::router::Publish;
use crate::jetstream::service::{AckSubject, ApiReply};
use crate::jetstream::ApiRequest;
use crate::shard::ShardId;

const ACK_PREFIX: &[u8] = b"$JS.ACK.";
const FLOW_CONTROL_PREFIX: &[u8] = b"$JS.FC.";
/// What a requester gets when nobody answers (clients treat it as no responders).
const NO_RESPONDERS_STATUS: &[u8] = b"NATS/1.0 503\r\n\r\n";

/// True for subjects whose publishes consumers receive (acks and flow-control replies).
pub fn is_consumer_reply_subject(subject: &[u8]) -> bool {
    subject.starts_with(ACK_PREFIX) || subject.starts_with(FLOW_CONTROL_PREFIX)
}

/// The stream a consumer API request is about.
pub fn consumer_request_stream<'a>(request: &ApiRequest<'a>) -> Option<&'a str> {
    match *request {
        ApiRequest::ConsumerCreate { stream, .. }
        | ApiRequest::ConsumerDurableCreate { stream, .. }
        | ApiRequest::ConsumerInfo { stream, .. }
        | ApiRequest::ConsumerDelete { stream, .. }
        | ApiRequest::ConsumerNames { stream }
        | ApiRequest::ConsumerList { stream }
        | ApiRequest::ConsumerPause { stream, .. }
        | ApiRequest::ConsumerReset { stream, .. }
        | ApiRequest::ConsumerUnpin { stream, .. }
        | ApiRequest::ConsumerNext { stream, .. } => Some(stream),
        _ => None,
    }
}

impl Node {
    /// The owner of `account`'s stream `stream`, if it exists.
    pub(super) fn stream_owner(&self, account: AccountId, stream: &str) -> Option<ShardId> {
        self.catalog.borrow().get(account, stream).map(|entry| entry.owner)
    }

    /// Routes an ack or flow-control reply to the owner of the stream in `account`. False
    /// (no responders) when the stream does not exist.
    pub(super) fn route_consumer_reply(self: &Rc<Self>, account: AccountId, publish: &Publish<'_>) -> bool {
        let Ok(subject) = std::str::from_utf8(publish.subject) else { return false };
        // v1 and v2 ack subjects put the stream in different places; the parser knows.
        let stream = match AckSubject::parse(subject) {
            Ok(ack) => ack.stream,
            Err(_) if subject.as_bytes().starts_with(ACK_PREFIX) => return false,
            Err(_) => match subject.split('.').nth(2) {
                Some(stream) => stream,
                None => return false,
            },
        };
        let Some(owner) = self.stream_owner(account, stream) else { return false };
        // An ack counts towards moving the consumer's connection to the stream's shard.
        self.stream_shard.set(Some(owner));
        let forward = ApiForward {
            account,
            subject: subject.to_string(),
            reply: publish.reply.map(Bytes::copy_from_slice),
            body: Bytes::copy_from_slice(publish.payload),
        };
        if owner == self.shard {
            self.consumer_reply_here(&forward);
        } else {
            self.send(owner, Envelope::Api(Box::new(forward)));
        }
        true
    }

    /// Hands an ack or flow-control reply to the consumer on this shard.
    pub(super) fn consumer_reply_here(&self, forward: &ApiForward) {
        let Some(service) = self.jetstream.get(forward.account) else { return };
        if forward.subject.as_bytes().starts_with(ACK_PREFIX) {
            let reply = forward.reply.as_deref().and_then(|r| std::str::from_utf8(r).ok());
            service.consumer_ack(&forward.subject, &forward.body, reply);
        } else {
            service.consumer_flow_control(&forward.subject);
        }
    }

    /// Answers a consumer API request or pull request on the stream's owner.
    pub(super) async fn answer_consumer_request(
        self: &Rc<Self>,
        request: ApiRequest<'_>,
        forward: &ApiForward,
    ) -> ApiReply {
        let Some(service) = self.jetstream.get(forward.account).cloned() else { return ApiReply::Silent };
        if let ApiRequest::ConsumerNext { stream, consumer } = request {
            let Some(reply) = forward.reply.as_deref().and_then(|r| std::str::from_utf8(r).ok()) else {
                return ApiReply::Silent;
            };
            if !service.consumer_pull(stream, consumer, reply, &forward.body) {
                self.publish_internal(forward.account, reply.as_bytes(), Some(NO_RESPONDERS_STATUS), b"");
            }
            return ApiReply::Silent;
        }
        ApiReply::Json(service.consumer_reply(request, &forward.body).await)
    }
}
