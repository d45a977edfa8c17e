//! Following a mirror or source whose origin is another JetStream (`external.api`, the
//! hub's domain across a leaf link), as nats-server's `setupMirrorConsumer` /
//! `setSourceConsumer` do: subscribe a deliver subject and a reply inbox
//! (`source_external_inbox`), ask the origin for a push consumer starting after what is
//! stored (`source_external_protocol`), store each delivery at its origin sequence
//! through the service (as local links do), answer flow control, and start over from
//! the last stored sequence when a consumer sequence is skipped, a heartbeat says a
//! delivery was lost, or the origin goes quiet (its leader moved, the link dropped).
//! One task per link, on the shard that owns the following stream.

use std::hash::{Hash, Hasher};
use std::rc::Rc;
use std::time::Duration;

use super::account::AccountId;
use super::node::Node;
use super::source_external_inbox::{Inbox, InboxMessage};
use super::source_external_protocol::{self as protocol, Control, CreateRequest, Start};
use crate::jetstream::errors::ApiError;
use crate::jetstream::service::StreamService;
use crate::jetstream::service::{OriginBatch, OriginMessage, OriginStart};
use crate::protocol::headers::parse_header_block;

/// How long the origin may stay silent (no delivery, no heartbeat) before the consumer
/// is created again: three missed heartbeats.
const SILENCE_MAX: Duration = Duration::from_secs(3);
/// How long a consumer-create request waits for its answer.
const CREATE_WAIT: Duration = Duration::from_secs(5);
/// Pause before the next attempt after a failed one.
const RETRY_PAUSE: Duration = Duration::from_secs(1);

/// Deliveries stored together at most.
const DELIVERY_BATCH_MAX: usize = 256;
/// Deliveries held while the origin's answer to the create request has not come (they can
/// overtake it on another subject): past this many, the session starts over.
const UNANSWERED_DELIVERIES_MAX: usize = 16 * DELIVERY_BATCH_MAX;

const DELIVER_SID: &str = "d";
const REPLY_SID: &str = "r";

/// One external link of a stream: which stream, which config generation, which link.
pub struct ExternalLink {
    pub node: Rc<Node>,
    pub account: AccountId,
    pub service: Rc<StreamService>,
    pub stream: String,
    pub generation: u64,
    pub index: usize,
}

/// Why a session with the origin's consumer ended.
enum Ended {
    /// The link is gone (stream deleted or config changed): stop following.
    LinkGone,
    /// Start over with a new consumer, after a pause when `pause`.
    Restart { pause: bool },
}

impl ExternalLink {
    /// Follows until the link goes away.
    pub async fn run(self) {
        loop {
            match self.session().await {
                Ended::LinkGone => return,
                Ended::Restart { pause: true } => glommio::timer::sleep(RETRY_PAUSE).await,
                Ended::Restart { pause: false } => {}
            }
        }
    }

    /// One consumer on the origin: created, then followed until something is missed.
    async fn session(&self) -> Ended {
        let (stream, generation, index) = (self.stream.as_str(), self.generation, self.index);
        let Some((config, mirror)) = self.service.link_source(stream, generation, index) else {
            return Ended::LinkGone;
        };
        let Some(request) = self.service.origin_request(stream, generation, index) else { return Ended::LinkGone };
        let Some(external) = config.external.clone() else { return Ended::LinkGone };
        let start = match request.start {
            OriginStart::Seq(seq) => Start::Seq(seq),
            OriginStart::Time(_) => match config.opt_start_time.as_ref().map(serde_json::to_value) {
                Some(Ok(serde_json::Value::String(time))) => Start::Time(time),
                _ => Start::Seq(1),
            },
        };
        let first_seq = match start {
            Start::Seq(seq) => seq,
            Start::Time(_) => 1,
        };
        let (kind, deliver_kind) = if mirror { ("JS_MIRROR_", "M") } else { ("JS_SRC_", "S") };
        let consumer_name = format!("{kind}{}", stable_token(&(stream, config.index_name())));
        let deliver_subject = match external.deliver.as_str() {
            "" => format!("$JS.{deliver_kind}.{}", random_token()),
            prefix => format!("{prefix}.{deliver_kind}.{}", random_token()).replace("..", "."),
        };
        let reply_subject = format!("$JSC.R.{}", random_token());
        let mut inbox =
            Inbox::open(&self.node, self.account, &[(DELIVER_SID, &deliver_subject), (REPLY_SID, &reply_subject)]);
        let domain = self.service.domain();
        let create = CreateRequest {
            mirror,
            api: &external.api,
            origin: &config.name,
            follower: stream,
            account: self.service.account_name(),
            domain: (!domain.is_empty()).then_some(domain.as_str()),
            consumer_name: &consumer_name,
            deliver_subject: &deliver_subject,
            start,
            filters: &request.filters,
        };
        let subject = create.subject();
        let (headers, body) = (create.headers(), create.body());
        self.node.publish_internal_in(
            self.account,
            subject.as_bytes(),
            subject.as_bytes(),
            Some(reply_subject.as_bytes()),
            Some(&headers),
            body.as_bytes(),
        );
        self.follow(&mut inbox, first_seq).await
    }

    /// Handles what the inbox receives until the session must end. Deliveries already
    /// queued are stored together (one durable append wait for the lot).
    async fn follow(&self, inbox: &mut Inbox, first_seq: u64) -> Ended {
        let mut session = Session {
            answered: false,
            consumer_seq: 0,
            next_stream_seq: first_seq,
            ident: String::new(),
            batch: Vec::new(),
            pending: 0,
        };
        loop {
            let wait = if session.answered { SILENCE_MAX } else { CREATE_WAIT };
            let Some(mut message) = inbox.next(wait).await else { return Ended::Restart { pause: !session.answered } };
            loop {
                if self.service.link_source(&self.stream, self.generation, self.index).is_none() {
                    return Ended::LinkGone;
                }
                let step = if message.sid.as_ref() == REPLY_SID.as_bytes() {
                    self.created(&mut session, &message)
                } else {
                    self.delivered(&mut session, message).await
                };
                if let Some(ended) = step {
                    let stored = self.store(&mut session).await;
                    return if stored { ended } else { Ended::Restart { pause: true } };
                }
                if !session.answered && session.batch.len() > UNANSWERED_DELIVERIES_MAX {
                    return Ended::Restart { pause: true };
                }
                let queued = match session.batch.len() < DELIVERY_BATCH_MAX {
                    true => inbox.next_ready().await,
                    false => None,
                };
                match queued {
                    Some(next) => message = next,
                    None => break,
                }
            }
            if !self.store(&mut session).await {
                return Ended::Restart { pause: true };
            }
        }
    }

    /// Stores the deliveries gathered so far; false when the store failed. Before the
    /// origin's answer they are held: each copy's source header names the origin's
    /// identity, which the answer carries, and a delivery can overtake the answer (it comes
    /// on another subject). Held deliveries a session ends with are dropped; the next
    /// session asks for them again from the link's progress.
    async fn store(&self, session: &mut Session) -> bool {
        if session.batch.is_empty() || !session.answered {
            return true;
        }
        let messages = std::mem::take(&mut session.batch);
        let next_seq = messages.last().map_or(0, |message| message.seq + 1);
        let batch = OriginBatch { messages, next_seq, pending: session.pending, ident: session.ident.clone() };
        self.service.ingest_origin(&self.stream, self.generation, self.index, batch).await.is_ok()
    }

    /// The origin's answer to the create request.
    fn created(&self, session: &mut Session, message: &InboxMessage) -> Option<Ended> {
        #[derive(serde::Deserialize)]
        struct Answer {
            error: Option<ApiError>,
        }
        let answer: Answer = match serde_json::from_slice(&message.payload) {
            Ok(answer) => answer,
            // A no-responders status (the hub's JetStream is not reachable yet).
            Err(_) => return Some(Ended::Restart { pause: true }),
        };
        if let Some(error) = answer.error {
            self.service.origin_failed(&self.stream, self.generation, self.index, error);
            return Some(Ended::Restart { pause: true });
        }
        session.answered = true;
        session.ident = parse_header_block(&message.headers)
            .ok()
            .and_then(|block| block.get_ignore_case(b"Nats-Stream-Identity").map(<[u8]>::to_vec))
            .and_then(|value| String::from_utf8(value).ok())
            .unwrap_or_default();
        self.service.origin_contact(&self.stream, self.generation, self.index, None);
        None
    }

    /// A delivery, a heartbeat or a flow-control request on the deliver subject.
    async fn delivered(&self, session: &mut Session, message: InboxMessage) -> Option<Ended> {
        if let Some(control) = protocol::parse_control(&message.headers) {
            self.service.origin_contact(&self.stream, self.generation, self.index, None);
            return match control {
                Control::FlowControl => {
                    // Answered once what came before it is stored: the origin waits for us.
                    if !self.store(session).await {
                        return Some(Ended::Restart { pause: true });
                    }
                    self.answer_flow_control(message.reply.as_deref());
                    None
                }
                Control::Heartbeat { last_consumer_seq, stalled_reply } => {
                    self.answer_flow_control(stalled_reply.as_deref().map(str::as_bytes));
                    (last_consumer_seq != session.consumer_seq).then_some(Ended::Restart { pause: false })
                }
            };
        }
        let delivered = message.reply.as_deref().and_then(protocol::parse_ack_reply)?;
        if delivered.consumer_seq != session.consumer_seq + 1 {
            return Some(Ended::Restart { pause: false });
        }
        session.consumer_seq = delivered.consumer_seq;
        if delivered.stream_seq < session.next_stream_seq {
            return None;
        }
        session.next_stream_seq = delivered.stream_seq + 1;
        session.pending = delivered.pending;
        session.batch.push(OriginMessage {
            seq: delivered.stream_seq,
            timestamp_ns: delivered.timestamp_ns,
            subject: message.subject,
            headers: message.headers,
            payload: message.payload,
        });
        None
    }

    fn answer_flow_control(&self, reply: Option<&[u8]>) {
        if let Some(reply) = reply.filter(|reply| !reply.is_empty()) {
            self.node.publish_internal_in(self.account, reply, reply, None, None, b"");
        }
    }
}

/// What one consumer delivered so far.
struct Session {
    answered: bool,
    /// The last consumer sequence received: the next must follow it.
    consumer_seq: u64,
    /// Origin sequences below this are already stored.
    next_stream_seq: u64,
    /// The origin incarnation its answer named (for the source header).
    ident: String,
    /// Deliveries received and not yet stored, and the origin's pending after the last.
    batch: Vec<OriginMessage>,
    pending: u64,
}

/// Eight alphanumerics that name `value` stably (the same link asks for the same
/// consumer name after a restart, as nats-server does).
fn stable_token(value: &impl Hash) -> String {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    value.hash(&mut hasher);
    alphanumeric(hasher.finish())
}

/// Eight random alphanumerics (subjects of one session).
fn random_token() -> String {
    let nonce = super::nkey::new_nonce();
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    nonce.hash(&mut hasher);
    alphanumeric(hasher.finish())
}

fn alphanumeric(mut value: u64) -> String {
    const DIGITS: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    (0..8)
        .map(|_| {
            let digit = DIGITS[(value % DIGITS.len() as u64) as usize] as char;
            value /= DIGITS.len() as u64;
            digit
        })
        .collect()
}
