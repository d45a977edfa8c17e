//! Ack reply subjects and ack bodies.
//!
//! Subjects (ADR-15). jetcore writes the 9-token v1 form, as nats-server does by default
//! (nats-py's ordered consumer reads its tokens by position):
//! `$JS.ACK.<stream>.<consumer>.<delivered>.<stream seq>.<consumer seq>.<ts ns>.<pending>`.
//! It also accepts the v2 form, which inserts `<domain>` (`_` = none) and `<account
//! hash>` after `$JS.ACK` and appends a random token and possibly more (11+ tokens;
//! clients ignore extras after the pending count).
//!
//! Bodies (nats-server `processAck`): empty, `+ACK` or `+OK` ack; `-NAK` redelivers,
//! optionally after ` {"delay": ns}` or ` <Go duration>` (a bad delay is a plain NAK);
//! `+WPI` (exactly) resets the ack deadline; `+NXT[ <pull request>]` acks and asks for
//! more; `+TERM[ <reason>]` stops redelivery. Anything else is [`AckKind::Unknown`], which
//! changes nothing but, like nats-server, still answers a double ack.

use std::rc::Rc;

use crate::protocol::{decimal_width, push_decimal};

use super::sequence::{ConsumerSeq, DeliveryCount, StreamSeq};
use crate::protocol::go_duration::parse_go_duration;

const ACK_PREFIX: &str = "$JS.ACK.";
const V1_TOKENS: usize = 9;
const V2_TOKENS_MIN: usize = 11;

/// A parsed ack reply subject, borrowing the subject's text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AckSubject<'a> {
    /// v2 only; `None` for v1 and for the `_` placeholder.
    pub domain: Option<&'a str>,
    /// v2 only.
    pub account_hash: Option<&'a str>,
    pub stream: &'a str,
    pub consumer: &'a str,
    pub delivery_count: DeliveryCount,
    pub stream_seq: StreamSeq,
    pub consumer_seq: ConsumerSeq,
    pub timestamp_nanos: i64,
    pub pending: u64,
}

/// Why a subject is not an ack reply subject.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AckSubjectError {
    /// Does not start with `$JS.ACK.`.
    NotAckSubject,
    /// Neither 9 tokens (v1) nor at least 11 (v2).
    TokenCount { tokens: usize },
    /// A token is empty.
    EmptyToken { index: usize },
    /// A numeric token (0-based index in the whole subject) is not a number.
    NotANumber { index: usize },
}

impl std::fmt::Display for AckSubjectError {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AckSubjectError::NotAckSubject => write!(formatter, "not a $JS.ACK subject"),
            AckSubjectError::TokenCount { tokens } => {
                write!(formatter, "ack subject has {tokens} tokens, want 9 or at least 11")
            }
            AckSubjectError::EmptyToken { index } => {
                write!(formatter, "ack subject token {index} is empty")
            }
            AckSubjectError::NotANumber { index } => {
                write!(formatter, "ack subject token {index} is not a number")
            }
        }
    }
}

impl std::error::Error for AckSubjectError {}

impl<'a> AckSubject<'a> {
    /// Parses a v1 or v2 ack subject.
    pub fn parse(subject: &'a str) -> Result<AckSubject<'a>, AckSubjectError> {
        if !subject.starts_with(ACK_PREFIX) {
            return Err(AckSubjectError::NotAckSubject);
        }
        let mut tokens = [""; V2_TOKENS_MIN];
        let mut count = 0;
        for token in subject.split('.') {
            if token.is_empty() {
                return Err(AckSubjectError::EmptyToken { index: count });
            }
            if count < V2_TOKENS_MIN {
                tokens[count] = token;
            }
            count += 1;
        }
        let (domain, account_hash, first) = match count {
            V1_TOKENS => (None, None, 2),
            tokens_count if tokens_count >= V2_TOKENS_MIN => {
                let domain = Some(tokens[2]).filter(|domain| *domain != "_");
                (domain, Some(tokens[3]), 4)
            }
            tokens => return Err(AckSubjectError::TokenCount { tokens }),
        };
        let number = |offset: usize| -> Result<u64, AckSubjectError> {
            let index = first + offset;
            tokens[index].parse().map_err(|_| AckSubjectError::NotANumber { index })
        };
        let timestamp_index = first + 5;
        Ok(AckSubject {
            domain,
            account_hash,
            stream: tokens[first],
            consumer: tokens[first + 1],
            delivery_count: number(2)?,
            stream_seq: StreamSeq(number(3)?),
            consumer_seq: ConsumerSeq(number(4)?),
            timestamp_nanos: tokens[timestamp_index]
                .parse()
                .map_err(|_| AckSubjectError::NotANumber { index: timestamp_index })?,
            pending: number(6)?,
        })
    }
}

/// The numbers of one delivery's v1 ack subject, after its consumer's prefix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AckNumbers {
    pub delivery_count: DeliveryCount,
    pub stream_seq: StreamSeq,
    pub consumer_seq: ConsumerSeq,
    pub timestamp_nanos: i64,
    /// Matching messages not yet delivered after this one.
    pub pending: u64,
}

impl AckNumbers {
    /// Appends `prefix` (an [`AckSubjectBuilder::prefix`]) and the numbers to `out`.
    /// Hot: one per delivered message, written where it is sent (no allocation of its
    /// own); digits directly, not through `fmt` (~6 % of a pull-consume profile).
    pub fn write(&self, prefix: &str, out: &mut Vec<u8>) {
        out.extend_from_slice(prefix.as_bytes());
        push_decimal(out, self.delivery_count as usize);
        out.push(b'.');
        push_decimal(out, self.stream_seq.get() as usize);
        out.push(b'.');
        push_decimal(out, self.consumer_seq.get() as usize);
        out.push(b'.');
        if self.timestamp_nanos < 0 {
            out.push(b'-');
        }
        push_decimal(out, self.timestamp_nanos.unsigned_abs() as usize);
        out.push(b'.');
        push_decimal(out, self.pending as usize);
    }

    /// Bytes [`Self::write`] appends after a prefix of `prefix_bytes`.
    pub fn subject_len(&self, prefix_bytes: usize) -> usize {
        let digits = |value: u64| decimal_width(value as usize);
        let sign = usize::from(self.timestamp_nanos < 0);
        prefix_bytes
            + digits(self.delivery_count)
            + digits(self.stream_seq.get())
            + digits(self.consumer_seq.get())
            + sign
            + digits(self.timestamp_nanos.unsigned_abs())
            + digits(self.pending)
            + 4
    }
}

/// Writes v1 ack subjects for one consumer; keeps `$JS.ACK.<stream>.<consumer>.` built.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AckSubjectBuilder {
    prefix: Rc<str>,
}

impl AckSubjectBuilder {
    pub fn new(stream: &str, consumer: &str) -> AckSubjectBuilder {
        AckSubjectBuilder { prefix: format!("{ACK_PREFIX}{stream}.{consumer}.").into() }
    }

    /// `$JS.ACK.<stream>.<consumer>.`, shared by every delivery of the consumer.
    pub fn prefix(&self) -> &Rc<str> {
        &self.prefix
    }

    /// The v1 ack subject of one delivery.
    pub fn build(&self, numbers: &AckNumbers) -> String {
        let mut subject = Vec::with_capacity(numbers.subject_len(self.prefix.len()));
        numbers.write(&self.prefix, &mut subject);
        String::from_utf8(subject).expect("prefix and digits are UTF-8")
    }
}

/// What an ack body asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AckKind<'a> {
    /// Empty body, `+ACK` or `+OK`.
    Ack,
    /// `-NAK`: redeliver, after `delay_nanos` if one was given and parsed.
    Nak { delay_nanos: Option<i64> },
    /// `+WPI`: still working, restart the ack wait.
    Progress,
    /// `+NXT`: ack, then treat the ack's reply subject as a pull request with this body
    /// (the bytes after `+NXT`, possibly empty).
    Next { request: &'a [u8] },
    /// `+TERM`: never redeliver; counts as settled.
    Term { reason: Option<&'a str> },
    /// Anything else: ignored.
    Unknown,
}

impl<'a> AckKind<'a> {
    /// Classifies an ack body (the payload after any headers).
    pub fn parse(body: &'a [u8]) -> AckKind<'a> {
        match body {
            b"" | b"+ACK" | b"+OK" => AckKind::Ack,
            b"+WPI" => AckKind::Progress,
            _ if body.starts_with(b"+NXT") => AckKind::Next { request: &body[4..] },
            _ if body.starts_with(b"-NAK") => AckKind::Nak { delay_nanos: nak_delay(&body[4..]) },
            _ if body.starts_with(b"+TERM") => {
                let reason = std::str::from_utf8(body[5..].trim_ascii()).ok().filter(|text| !text.is_empty());
                AckKind::Term { reason }
            }
            _ => AckKind::Unknown,
        }
    }
}

/// The delay after `-NAK`: `{"delay": ns}` or a Go duration; `None` when absent or
/// unparsable (nats-server then treats the NAK as a plain one).
fn nak_delay(argument: &[u8]) -> Option<i64> {
    let argument = argument.trim_ascii();
    if argument.is_empty() {
        return None;
    }
    if argument.first() == Some(&b'{') {
        #[derive(serde::Deserialize)]
        struct NakOptions {
            #[serde(default)]
            delay: i64,
        }
        let options: NakOptions = serde_json::from_slice(argument).ok()?;
        return Some(options.delay);
    }
    parse_go_duration(std::str::from_utf8(argument).ok()?)
}
