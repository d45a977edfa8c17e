//! The subscriptions of one external follower: its deliver subject and its API reply
//! inbox, as internal subscriptions of the shard that owns the following stream. They
//! are ordinary subscriptions (announced to the other shards and, through shard 0, to
//! the hub as `LS+`), whose outbound queue is read here instead of by a socket writer:
//! what arrives is parsed back from `MSG`/`HMSG` frames. A delivery that crossed the
//! leaf shows the subject it was stored under (`leaf::forwarding`).

use std::rc::Rc;
use std::time::Duration;

use bytes::Bytes;

use super::account::{routing_key, AccountId};
use super::interest::Subscription;
use super::node::Node;
use super::outbound::Outbound;

/// The queue limit of an inbox: flow control keeps the origin far below it.
const INBOX_PENDING_BYTES_MAX: usize = 64 * 1024 * 1024;

/// One message that reached the inbox.
#[derive(Debug)]
pub struct InboxMessage {
    pub sid: Bytes,
    pub subject: String,
    pub reply: Option<Bytes>,
    pub headers: Bytes,
    pub payload: Bytes,
}

pub struct Inbox {
    node: Rc<Node>,
    outbound: Rc<Outbound>,
    subscriptions: Vec<Rc<Subscription>>,
    /// Bytes taken from the outbound and not yet parsed.
    buffer: Vec<u8>,
}

impl Inbox {
    /// Subscribes `account` to each (sid, subject).
    pub fn open(node: &Rc<Node>, account: AccountId, subjects: &[(&str, &str)]) -> Inbox {
        let outbound = Rc::new(Outbound::new(INBOX_PENDING_BYTES_MAX));
        let conn = node.next_client_id();
        let mut subscriptions = Vec::new();
        for (sid, subject) in subjects {
            let subject = Bytes::copy_from_slice(subject.as_bytes());
            let key = match account {
                AccountId::GLOBAL => subject.clone(),
                account => Bytes::from(routing_key(account, &subject)),
            };
            let subscription = Rc::new(Subscription {
                conn,
                sid: Bytes::copy_from_slice(sid.as_bytes()),
                subject,
                account,
                key,
                queue: None,
                outbound: outbound.clone(),
                delivered: Default::default(),
                max: Default::default(),
                leaf: false,
            });
            node.subscribe(subscription.clone());
            subscriptions.push(subscription);
        }
        Inbox { node: node.clone(), outbound, subscriptions, buffer: Vec::new() }
    }

    /// The next message, waiting at most `wait`; `None` when none came (or the inbox
    /// overflowed and closed: the follower starts over either way).
    pub async fn next(&mut self, wait: Duration) -> Option<InboxMessage> {
        loop {
            if let Some((message, used)) = parse_frame(&self.buffer) {
                self.buffer.drain(..used);
                return Some(message);
            }
            let take = async { self.outbound.take(None).await };
            let timeout = async {
                glommio::timer::sleep(wait).await;
                None
            };
            let chunk = futures_lite::future::or(take, timeout).await?;
            self.buffer.extend_from_slice(&chunk);
        }
    }

    /// The next message already queued, without waiting.
    pub async fn next_ready(&mut self) -> Option<InboxMessage> {
        loop {
            if let Some((message, used)) = parse_frame(&self.buffer) {
                self.buffer.drain(..used);
                return Some(message);
            }
            let chunk = futures_lite::future::poll_once(self.outbound.take(None)).await??;
            self.buffer.extend_from_slice(&chunk);
        }
    }
}

impl Drop for Inbox {
    fn drop(&mut self) {
        for subscription in &self.subscriptions {
            self.node.unsubscribe(subscription);
        }
        self.outbound.close(super::outbound::CloseReason::ClientClosed);
    }
}

/// One whole `MSG` or `HMSG` frame at the start of `buffer`, and its length.
fn parse_frame(buffer: &[u8]) -> Option<(InboxMessage, usize)> {
    let line_end = buffer.windows(2).position(|pair| pair == b"\r\n")?;
    let line = std::str::from_utf8(&buffer[..line_end]).ok()?;
    let mut tokens: Vec<&str> = line.split(' ').collect();
    let with_headers = match tokens.first() {
        Some(&"HMSG") => true,
        Some(&"MSG") => false,
        _ => return None,
    };
    let total: usize = tokens.pop()?.parse().ok()?;
    let header_len: usize = if with_headers { tokens.pop()?.parse().ok()? } else { 0 };
    let (subject, sid, reply) = match tokens[1..] {
        [subject, sid] => (subject, sid, None),
        [subject, sid, reply] => (subject, sid, Some(Bytes::copy_from_slice(reply.as_bytes()))),
        _ => return None,
    };
    let body_start = line_end + 2;
    let used = body_start + total + 2;
    if buffer.len() < used || header_len > total {
        return None;
    }
    let body = &buffer[body_start..body_start + total];
    let message = InboxMessage {
        sid: Bytes::copy_from_slice(sid.as_bytes()),
        subject: subject.to_string(),
        reply,
        headers: Bytes::copy_from_slice(&body[..header_len]),
        payload: Bytes::copy_from_slice(&body[header_len..]),
    };
    Some((message, used))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_parse_back_whole_or_not_at_all() {
        let mut out = Vec::new();
        crate::protocol::encode_hmsg(&mut out, b"orders.1", b"d", Some(b"$JS.ACK.x"), b"NATS/1.0\r\n\r\n", b"hi");
        crate::protocol::encode_msg(&mut out, b"r.1", b"r", None, b"{}");
        let (first, used) = parse_frame(&out).unwrap();
        assert_eq!((first.subject.as_str(), &first.payload[..]), ("orders.1", &b"hi"[..]));
        assert_eq!(first.reply.as_deref(), Some(&b"$JS.ACK.x"[..]));
        let (second, rest) = parse_frame(&out[used..]).unwrap();
        assert_eq!((&second.sid[..], &second.payload[..], used + rest), (&b"r"[..], &b"{}"[..], out.len()));
        assert!(parse_frame(&out[..used - 1]).is_none());
    }
}
