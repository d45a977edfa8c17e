//! Requests and responses across service imports, on the shard's [`Node`].
//!
//! A request published in an importing account on an import's subject is routed in the
//! exporting account, on the exported subject, to its subscribers and its JetStream
//! (`$JS.API.>` exported is how another account reaches a JetStream), with two changes
//! nats-server makes too: its reply becomes a reply mapping this shard keeps
//! (`service_responses.rs`), and a `Nats-Request-Info` header names the requesting
//! account (`{"acc":"B","rtt":N}`, `rtt` being the requester's round trip in
//! nanoseconds, estimated at its CONNECT and refreshed by PINGs). A response published
//! in the exporting account on such a reply, by a client or by the server (a JetStream
//! reply), goes to the shard the reply names and from there to the requester's own reply
//! in the importing account.
//!
//! Imports chain: the exporter's own imports that take the exported subject carry the
//! request on (with its reply mapped again, so the answer walks the chain back), and
//! the header then also names the account it passed through last (`"svc":"B"`), as
//! nats-server's does. An import already on the chain is not taken again, and a chain
//! stops after [`limits::SERVICE_IMPORT_HOPS_MAX`] imports.

use std::rc::Rc;
use std::time::{Duration, Instant};

use bytes::Bytes;

use super::account::{routing_key, AccountId};
use super::envelope::{Envelope, ServiceResponse};
use super::interest::ConnId;
use super::node::Node;
use super::router::Publish;
use super::service_imports::{AccountServices, ServiceImport};
use super::service_responses::{owner_of, Answer, REPLY_PREFIX};
use crate::limits;
use crate::protocol::headers::HeaderBlockBuilder;

/// The header nats-server adds to a request that crosses a service import.
const REQUEST_INFO_HEADER: &[u8] = b"Nats-Request-Info";

/// Who asked, carried along a chain of imports: the requesting client's account and
/// round trip, and the imports taken so far (the first is the requester's own), by
/// address: only compared, to tell an import met again.
struct Requester {
    account: AccountId,
    rtt: Duration,
    chain: Vec<*const ServiceImport>,
}

impl Node {
    /// The service side of a publish in `account` (whose services are not empty) to the
    /// subscribers of `to`: a response to a reply mapping goes back to its requester, a
    /// request on an import goes to the exporter. `conn`: the publishing client (`None`
    /// for the server's own messages, which cross no import). True when it reached
    /// anyone.
    pub(super) fn route_services(
        self: &Rc<Self>,
        account: AccountId,
        services: &AccountServices,
        to: &[u8],
        publish: &Publish<'_>,
        conn: Option<ConnId>,
    ) -> bool {
        let mut reached = false;
        if services.answers_imports && to.starts_with(REPLY_PREFIX) {
            reached |= self.route_response(account, to, publish);
        }
        if let Some(conn) = conn {
            for import in services.imports.iter().filter(|import| import.takes(to)) {
                let mut requester = Requester { account, rtt: self.ops.rtt_of(conn), chain: Vec::new() };
                reached |= self.route_request(account, import, publish, &mut requester);
            }
        }
        reached
    }

    /// Routes a request `importer` published (or received through the imports on
    /// `requester.chain`) on a subject `import` takes, in the exporter; then on through
    /// the exporter's own imports that take the exported subject.
    fn route_request(
        self: &Rc<Self>,
        importer: AccountId,
        import: &ServiceImport,
        publish: &Publish<'_>,
        requester: &mut Requester,
    ) -> bool {
        let Some(remote) = import.remote_subject(publish.subject) else { return false };
        let accounts = &self.options.accounts;
        // The account the request passed through last, once it has crossed an import.
        let via = (!requester.chain.is_empty()).then(|| accounts.name_of(importer));
        let headers = with_request_info(publish.headers, accounts.name_of(requester.account), via, requester.rtt);
        let exporter = import.exporter;
        let reply = publish.reply.map(|reply| {
            let answer = Answer { importer, reply: Bytes::copy_from_slice(reply) };
            let (response_type, threshold) = (import.response_type, import.response_threshold);
            self.responses.borrow_mut().open(exporter, answer, response_type, threshold, Instant::now())
        });
        let request =
            Publish { subject: &remote, reply: reply.as_deref(), headers: Some(&headers), payload: publish.payload };
        let key = routing_key(exporter, &remote);
        let routed = self.route(&key, &request, None);
        let mut reached = routed.reached_anyone();
        let _ = self.finish_routing(routed);
        if self.options.jetstream && self.jetstream.get(exporter).is_some() {
            reached |= self.route_jetstream(exporter, &key, &request);
        }
        requester.chain.push(import as *const ServiceImport);
        if requester.chain.len() < limits::SERVICE_IMPORT_HOPS_MAX {
            let services = self.services.borrow();
            let onward = services.of(exporter).imports.iter().filter(|next| next.takes(&remote));
            for next in onward {
                if requester.chain.contains(&(next as *const ServiceImport)) {
                    continue;
                }
                reached |= self.route_request(exporter, next, &request, requester);
            }
        }
        requester.chain.pop();
        if let (false, Some(reply)) = (reached, &reply) {
            self.responses.borrow_mut().close(exporter, reply);
        }
        reached
    }

    /// A message published in `exporter` to the reply mapping `to`: answered here when
    /// this shard owns the mapping, else sent to the shard that does. True when it may
    /// reach the requester.
    fn route_response(self: &Rc<Self>, exporter: AccountId, to: &[u8], publish: &Publish<'_>) -> bool {
        let Some(owner) = owner_of(to).filter(|owner| owner.0 < self.shard_count()) else { return false };
        if owner == self.shard {
            return self.answer_response(exporter, to, publish);
        }
        let response = ServiceResponse {
            exporter,
            to: Bytes::copy_from_slice(to),
            subject: (publish.subject != to).then(|| Bytes::copy_from_slice(publish.subject)),
            reply: publish.reply.map(Bytes::copy_from_slice),
            headers: publish.headers.map(Bytes::copy_from_slice),
            payload: Bytes::copy_from_slice(publish.payload),
        };
        self.send(owner, Envelope::ServiceResponse(Box::new(response)));
        true
    }

    /// A response for a reply mapping this shard owns (from here or from a peer):
    /// delivered to the requester's reply in the importing account, with the subject it
    /// came on unless that was the mapping's own (a JetStream delivery keeps its stored
    /// subject). False when no live mapping has it (a second response to a `single`
    /// export, or one after the threshold): dropped, as nats-server drops it.
    pub(super) fn answer_response(self: &Rc<Self>, exporter: AccountId, to: &[u8], publish: &Publish<'_>) -> bool {
        let answer = self.responses.borrow_mut().respond(exporter, to, Instant::now());
        let Some(answer) = answer else { return false };
        let subject = if publish.subject == to { &answer.reply[..] } else { publish.subject };
        self.publish_internal_in(
            answer.importer,
            &answer.reply,
            subject,
            publish.reply,
            publish.headers,
            publish.payload,
        );
        true
    }

    /// A peer's [`ServiceResponse`].
    pub(super) fn answer_peer_response(self: &Rc<Self>, response: &ServiceResponse) {
        let publish = Publish {
            subject: response.subject.as_deref().unwrap_or(&response.to),
            reply: response.reply.as_deref(),
            headers: response.headers.as_deref(),
            payload: &response.payload,
        };
        self.answer_response(response.exporter, &response.to, &publish);
    }

    /// Whether `subject` in `account` (whose services are not empty) has interest through
    /// a service: a reply mapping whose requester still listens (assumed when a peer
    /// owns the mapping), or an import whose exporter has subscribers. `None`: no service
    /// is involved.
    pub(super) fn service_interest(
        &self,
        account: AccountId,
        services: &AccountServices,
        subject: &[u8],
        hops: usize,
    ) -> Option<bool> {
        if services.answers_imports && subject.starts_with(REPLY_PREFIX) {
            let owner = owner_of(subject)?;
            if owner != self.shard {
                return Some(true);
            }
            let answer = self.responses.borrow().peek(account, subject, Instant::now()).cloned();
            return Some(answer.is_some_and(|answer| self.has_interest(answer.importer, &answer.reply)));
        }
        if hops >= limits::SERVICE_IMPORT_HOPS_MAX {
            return None;
        }
        let mut imports = services.imports.iter().filter(|import| import.takes(subject));
        let interested = imports.any(|import| {
            import
                .remote_subject(subject)
                .is_some_and(|remote| self.has_interest_within(import.exporter, &remote, hops + 1))
        });
        interested.then_some(true)
    }
}

/// `headers` (a whole header block, or none) with `Nats-Request-Info` set to the
/// requester's account, the account a chained request passed through last (`via`) and
/// the requester's round trip, as nats-server sets it (replacing one the requester sent).
pub fn with_request_info(headers: Option<&[u8]>, account: &str, via: Option<&str>, rtt: Duration) -> Vec<u8> {
    let mut info = format!("{{\"acc\":{}", serde_json::to_string(account).unwrap_or_default());
    if let Some(via) = via {
        info.push_str(&format!(",\"svc\":{}", serde_json::to_string(via).unwrap_or_default()));
    }
    if !rtt.is_zero() {
        info.push_str(&format!(",\"rtt\":{}", rtt.as_nanos()));
    }
    info.push('}');
    let mut out: Vec<u8> = Vec::with_capacity(headers.map_or(0, <[u8]>::len) + info.len() + 40);
    let Some(block) = headers.filter(|block| block.ends_with(b"\r\n\r\n")) else {
        let mut builder = HeaderBlockBuilder::new(&mut out);
        builder.header(REQUEST_INFO_HEADER, info.as_bytes());
        builder.finish();
        return out;
    };
    let mut lines = block[..block.len() - 2].split_inclusive(|&byte| byte == b'\n');
    out.extend_from_slice(lines.next().unwrap_or(b"NATS/1.0\r\n"));
    for line in lines {
        let is_info = line.len() > REQUEST_INFO_HEADER.len()
            && line[..REQUEST_INFO_HEADER.len()].eq_ignore_ascii_case(REQUEST_INFO_HEADER)
            && line[REQUEST_INFO_HEADER.len()] == b':';
        if !is_info {
            out.extend_from_slice(line);
        }
    }
    out.extend_from_slice(REQUEST_INFO_HEADER);
    out.extend_from_slice(b": ");
    out.extend_from_slice(info.as_bytes());
    out.extend_from_slice(b"\r\n\r\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_info_is_added_as_nats_server_adds_it() {
        let rtt = Duration::from_nanos(296_893);
        // Recorded from nats-server 2.15.1: a request from account B through a service import.
        let expected = b"NATS/1.0\r\nNats-Request-Info: {\"acc\":\"B\",\"rtt\":296893}\r\n\r\n";
        assert_eq!(with_request_info(None, "B", None, rtt), expected);
        let expected = b"NATS/1.0\r\nX: 1\r\nNats-Request-Info: {\"acc\":\"B\",\"rtt\":296893}\r\n\r\n";
        assert_eq!(with_request_info(Some(b"NATS/1.0\r\nX: 1\r\n\r\n"), "B", None, rtt), expected);
        let sent = b"NATS/1.0\r\nnats-request-info: {\"acc\":\"forged\"}\r\nX: 1\r\n\r\n";
        assert_eq!(with_request_info(Some(sent), "B", None, rtt), expected, "a forged one is replaced");
        assert_eq!(
            with_request_info(None, "B", None, Duration::ZERO),
            b"NATS/1.0\r\nNats-Request-Info: {\"acc\":\"B\"}\r\n\r\n"
        );
        // Recorded from nats-server 2.15.1: A's request through B's import from C, at C.
        let chained = b"NATS/1.0\r\nNats-Request-Info: {\"acc\":\"A\",\"svc\":\"B\",\"rtt\":615718}\r\n\r\n";
        assert_eq!(with_request_info(None, "A", Some("B"), Duration::from_nanos(615_718)), chained);
    }
}
