//! `$JS.EVENT.ADVISORY.API`: the audit advisory nats-server publishes in the requester's
//! account for every JetStream API request its API dispatcher answers (info, names and
//! lists included; not message gets, direct gets or pull requests), carrying the request
//! and the response as text. Built only when someone in the account listens.

use std::rc::Rc;

use super::account::AccountId;
use super::envelope::ApiForward;
use super::node::Node;
use crate::jetstream::service::advisory_id;
use crate::jetstream::{ApiRequest, Timestamp};

const AUDIT_SUBJECT: &[u8] = b"$JS.EVENT.ADVISORY.API";
const AUDIT_TYPE: &str = "io.nats.jetstream.advisory.v1.api_audit";

/// Whether nats-server audits this request (its message get answers outside the audit).
pub(super) fn audited(request: &ApiRequest<'_>) -> bool {
    !matches!(
        request,
        ApiRequest::Unknown
            | ApiRequest::DirectGet { .. }
            | ApiRequest::ConsumerNext { .. }
            | ApiRequest::StreamMsgGet { .. }
    )
}

impl Node {
    /// Publishes the audit of `forward` answered with the JSON `response`. The client is
    /// named by its account only: the requesting connection's details stay on its shard.
    pub(super) fn audit_api(self: &Rc<Self>, account: AccountId, forward: &ApiForward, response: &[u8]) {
        if !self.has_interest(account, AUDIT_SUBJECT) {
            return;
        }
        let mut body = serde_json::json!({
            "type": AUDIT_TYPE,
            "id": advisory_id(),
            "timestamp": Timestamp::from_unix_nanos(crate::jetstream::service::now_ns()),
            "server": self.identity.server_id,
            "client": {
                "acc": self.options.accounts.name_of(account),
                "server": self.identity.server_id,
            },
            "subject": forward.subject,
            "response": String::from_utf8_lossy(response),
        });
        if !forward.body.is_empty() {
            body["request"] = serde_json::Value::String(String::from_utf8_lossy(&forward.body).into_owned());
        }
        if let Some(domain) = self.options.jetstream_domain.as_deref().filter(|domain| !domain.is_empty()) {
            body["domain"] = serde_json::Value::String(domain.to_string());
        }
        let payload = serde_json::to_vec(&body).expect("audit serializes");
        self.publish_internal(account, AUDIT_SUBJECT, None, &payload);
    }
}
