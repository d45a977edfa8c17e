//! `$JS.API.*` subjects → a typed request, borrowing the subject's tokens.
//!
//! Matching follows nats-server's subscriptions (`$JS.API.STREAM.INFO.*` etc.): the token
//! count must be exact, so `$JS.API.STREAM.INFO` and `$JS.API.STREAM.INFO.A.B` are
//! `Unknown`. Two forms have a variable tail: `DIRECT.GET.<s>.<subject...>` and
//! `CONSUMER.CREATE.<s>.<c>.<filter...>`.
//!
//! Unknown subjects: nats-server 2.15.1 in its default (single-account) configuration
//! does not answer at all (recorded: the requester times out), because its "bad
//! request" reply is only sent to requests arriving straight from a client connection
//! in the system account. The dispatcher should therefore stay silent on `Unknown`;
//! `ResponseType::System` + `ApiError::bad_request()` is the answer nats-server gives
//! in the other case, should we ever want it.
//!
//! `DirectGet` and `ConsumerNext` are not served by the API dispatcher in nats-server:
//! they are per-stream / per-consumer subscriptions, so a missing stream (or one without
//! `allow_direct`) or a missing consumer yields the core 503 no-responders status.

use super::responses::ResponseType;

const API_PREFIX: &str = "$JS.API.";

/// A parsed `$JS.API` request subject. Names borrow from the subject.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ApiRequest<'a> {
    AccountInfo,
    StreamCreate {
        stream: &'a str,
    },
    StreamUpdate {
        stream: &'a str,
    },
    StreamInfo {
        stream: &'a str,
    },
    StreamDelete {
        stream: &'a str,
    },
    StreamPurge {
        stream: &'a str,
    },
    StreamNames,
    StreamList,
    /// `STREAM.SNAPSHOT.<s>`: a backup sent in chunks to the request's deliver subject.
    StreamSnapshot {
        stream: &'a str,
    },
    /// `STREAM.RESTORE.<s>`: answered with the subject the backup is uploaded to.
    StreamRestore {
        stream: &'a str,
    },
    StreamMsgGet {
        stream: &'a str,
    },
    StreamMsgDelete {
        stream: &'a str,
    },
    /// `DIRECT.GET.<s>` (JSON body) or `DIRECT.GET.<s>.<subject>` (last message on that
    /// subject, empty body); the reply is a raw message, not JSON.
    DirectGet {
        stream: &'a str,
        last_by_subject: Option<&'a str>,
    },
    /// `CONSUMER.CREATE.<s>` (legacy ephemeral: `consumer` and `filter` are `None`),
    /// `CONSUMER.CREATE.<s>.<c>`, or `CONSUMER.CREATE.<s>.<c>.<filter tokens...>`.
    ConsumerCreate {
        stream: &'a str,
        consumer: Option<&'a str>,
        filter: Option<&'a str>,
    },
    /// `CONSUMER.DURABLE.CREATE.<s>.<c>` (legacy durable create).
    ConsumerDurableCreate {
        stream: &'a str,
        consumer: &'a str,
    },
    ConsumerInfo {
        stream: &'a str,
        consumer: &'a str,
    },
    ConsumerDelete {
        stream: &'a str,
        consumer: &'a str,
    },
    ConsumerNames {
        stream: &'a str,
    },
    ConsumerList {
        stream: &'a str,
    },
    /// `CONSUMER.PAUSE.<s>.<c>`: pause until a time, or resume (2.11).
    ConsumerPause {
        stream: &'a str,
        consumer: &'a str,
    },
    /// `CONSUMER.RESET.<s>.<c>`: restart delivery at a sequence or the ack floor (2.14).
    ConsumerReset {
        stream: &'a str,
        consumer: &'a str,
    },
    /// `CONSUMER.UNPIN.<s>.<c>`: release a `pinned_client` group's pin (2.11).
    ConsumerUnpin {
        stream: &'a str,
        consumer: &'a str,
    },
    /// `CONSUMER.MSG.NEXT.<s>.<c>`: a pull request; replies are messages and statuses.
    ConsumerNext {
        stream: &'a str,
        consumer: &'a str,
    },
    /// Anything else under `$JS.API.` (or not under it at all).
    Unknown,
}

impl<'a> ApiRequest<'a> {
    /// Parses a request subject. Never fails: unrecognised subjects are `Unknown`.
    pub fn parse(subject: &'a str) -> ApiRequest<'a> {
        let Some(rest) = subject.strip_prefix(API_PREFIX) else {
            return ApiRequest::Unknown;
        };
        if rest == "INFO" {
            return ApiRequest::AccountInfo;
        }
        if let Some(rest) = rest.strip_prefix("STREAM.") {
            return parse_stream(rest);
        }
        if let Some(rest) = rest.strip_prefix("CONSUMER.") {
            return parse_consumer(rest);
        }
        if let Some(rest) = rest.strip_prefix("DIRECT.GET.") {
            return match rest.split_once('.') {
                None if is_token(rest) => ApiRequest::DirectGet { stream: rest, last_by_subject: None },
                Some((stream, tail)) if is_token(stream) && is_tail(tail) => {
                    ApiRequest::DirectGet { stream, last_by_subject: Some(tail) }
                }
                _ => ApiRequest::Unknown,
            };
        }
        ApiRequest::Unknown
    }

    /// The response `type` of the JSON reply, or `None` for requests that are not
    /// answered with a JSON envelope (`DirectGet`, `ConsumerNext`, `Unknown`).
    pub fn response_type(&self) -> Option<ResponseType> {
        Some(match self {
            ApiRequest::AccountInfo => ResponseType::AccountInfo,
            ApiRequest::StreamCreate { .. } => ResponseType::StreamCreate,
            ApiRequest::StreamUpdate { .. } => ResponseType::StreamUpdate,
            ApiRequest::StreamInfo { .. } => ResponseType::StreamInfo,
            ApiRequest::StreamDelete { .. } => ResponseType::StreamDelete,
            ApiRequest::StreamPurge { .. } => ResponseType::StreamPurge,
            ApiRequest::StreamNames => ResponseType::StreamNames,
            ApiRequest::StreamList => ResponseType::StreamList,
            ApiRequest::StreamSnapshot { .. } => ResponseType::StreamSnapshot,
            ApiRequest::StreamRestore { .. } => ResponseType::StreamRestore,
            ApiRequest::StreamMsgGet { .. } => ResponseType::StreamMsgGet,
            ApiRequest::StreamMsgDelete { .. } => ResponseType::StreamMsgDelete,
            ApiRequest::ConsumerCreate { .. } | ApiRequest::ConsumerDurableCreate { .. } => {
                ResponseType::ConsumerCreate
            }
            ApiRequest::ConsumerInfo { .. } => ResponseType::ConsumerInfo,
            ApiRequest::ConsumerDelete { .. } => ResponseType::ConsumerDelete,
            ApiRequest::ConsumerNames { .. } => ResponseType::ConsumerNames,
            ApiRequest::ConsumerList { .. } => ResponseType::ConsumerList,
            ApiRequest::ConsumerPause { .. } => ResponseType::ConsumerPause,
            ApiRequest::ConsumerReset { .. } => ResponseType::ConsumerReset,
            ApiRequest::ConsumerUnpin { .. } => ResponseType::ConsumerUnpin,
            ApiRequest::DirectGet { .. } | ApiRequest::ConsumerNext { .. } | ApiRequest::Unknown => return None,
        })
    }
}

fn parse_stream(rest: &str) -> ApiRequest<'_> {
    match rest {
        "NAMES" => return ApiRequest::StreamNames,
        "LIST" => return ApiRequest::StreamList,
        _ => {}
    }
    if let Some(stream) = rest.strip_prefix("MSG.GET.").filter(|s| is_token(s)) {
        return ApiRequest::StreamMsgGet { stream };
    }
    if let Some(stream) = rest.strip_prefix("MSG.DELETE.").filter(|s| is_token(s)) {
        return ApiRequest::StreamMsgDelete { stream };
    }
    let Some((verb, stream)) = rest.split_once('.') else {
        return ApiRequest::Unknown;
    };
    if !is_token(stream) {
        return ApiRequest::Unknown;
    }
    match verb {
        "CREATE" => ApiRequest::StreamCreate { stream },
        "UPDATE" => ApiRequest::StreamUpdate { stream },
        "INFO" => ApiRequest::StreamInfo { stream },
        "DELETE" => ApiRequest::StreamDelete { stream },
        "PURGE" => ApiRequest::StreamPurge { stream },
        "SNAPSHOT" => ApiRequest::StreamSnapshot { stream },
        "RESTORE" => ApiRequest::StreamRestore { stream },
        _ => ApiRequest::Unknown,
    }
}

fn parse_consumer(rest: &str) -> ApiRequest<'_> {
    if let Some(tail) = rest.strip_prefix("CREATE.") {
        return parse_consumer_create(tail);
    }
    if let Some((stream, consumer)) = rest.strip_prefix("DURABLE.CREATE.").and_then(two_tokens) {
        return ApiRequest::ConsumerDurableCreate { stream, consumer };
    }
    if let Some((stream, consumer)) = rest.strip_prefix("MSG.NEXT.").and_then(two_tokens) {
        return ApiRequest::ConsumerNext { stream, consumer };
    }
    let Some((verb, tail)) = rest.split_once('.') else {
        return ApiRequest::Unknown;
    };
    match verb {
        "NAMES" if is_token(tail) => ApiRequest::ConsumerNames { stream: tail },
        "LIST" if is_token(tail) => ApiRequest::ConsumerList { stream: tail },
        "PAUSE" => match two_tokens(tail) {
            Some((stream, consumer)) => ApiRequest::ConsumerPause { stream, consumer },
            None => ApiRequest::Unknown,
        },
        "RESET" => match two_tokens(tail) {
            Some((stream, consumer)) => ApiRequest::ConsumerReset { stream, consumer },
            None => ApiRequest::Unknown,
        },
        "UNPIN" => match two_tokens(tail) {
            Some((stream, consumer)) => ApiRequest::ConsumerUnpin { stream, consumer },
            None => ApiRequest::Unknown,
        },
        "INFO" | "DELETE" => match two_tokens(tail) {
            Some((stream, consumer)) if verb == "INFO" => ApiRequest::ConsumerInfo { stream, consumer },
            Some((stream, consumer)) => ApiRequest::ConsumerDelete { stream, consumer },
            None => ApiRequest::Unknown,
        },
        _ => ApiRequest::Unknown,
    }
}

fn parse_consumer_create(tail: &str) -> ApiRequest<'_> {
    let mut parts = tail.splitn(3, '.');
    let (Some(stream), consumer, filter) = (parts.next(), parts.next(), parts.next()) else {
        return ApiRequest::Unknown;
    };
    let valid = is_token(stream) && consumer.is_none_or(is_token) && filter.is_none_or(is_tail);
    if !valid {
        return ApiRequest::Unknown;
    }
    ApiRequest::ConsumerCreate { stream, consumer, filter }
}

fn two_tokens(tail: &str) -> Option<(&str, &str)> {
    let (first, second) = tail.split_once('.')?;
    (is_token(first) && is_token(second)).then_some((first, second))
}

/// One non-empty subject token.
fn is_token(text: &str) -> bool {
    !text.is_empty() && !text.contains('.')
}

/// One or more non-empty tokens (a subject tail such as a filter or a KV key subject).
fn is_tail(text: &str) -> bool {
    !text.is_empty() && text.split('.').all(|token| !token.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_endpoints() {
        assert_eq!(ApiRequest::parse("$JS.API.INFO"), ApiRequest::AccountInfo);
        assert_eq!(ApiRequest::parse("$JS.API.STREAM.CREATE.ORDERS"), ApiRequest::StreamCreate { stream: "ORDERS" });
        assert_eq!(ApiRequest::parse("$JS.API.STREAM.PURGE.S"), ApiRequest::StreamPurge { stream: "S" });
        assert_eq!(ApiRequest::parse("$JS.API.STREAM.NAMES"), ApiRequest::StreamNames);
        assert_eq!(ApiRequest::parse("$JS.API.STREAM.MSG.GET.S"), ApiRequest::StreamMsgGet { stream: "S" });
        assert_eq!(ApiRequest::parse("$JS.API.STREAM.MSG.DELETE.S"), ApiRequest::StreamMsgDelete { stream: "S" });
    }

    #[test]
    fn stream_named_like_a_verb_is_still_a_stream() {
        assert_eq!(ApiRequest::parse("$JS.API.STREAM.INFO.NAMES"), ApiRequest::StreamInfo { stream: "NAMES" });
        assert_eq!(ApiRequest::parse("$JS.API.STREAM.INFO.MSG"), ApiRequest::StreamInfo { stream: "MSG" });
    }

    #[test]
    fn direct_get_both_forms() {
        assert_eq!(
            ApiRequest::parse("$JS.API.DIRECT.GET.KV_B"),
            ApiRequest::DirectGet { stream: "KV_B", last_by_subject: None }
        );
        assert_eq!(
            ApiRequest::parse("$JS.API.DIRECT.GET.KV_B.$KV.B.k1"),
            ApiRequest::DirectGet { stream: "KV_B", last_by_subject: Some("$KV.B.k1") }
        );
    }

    #[test]
    fn consumer_create_forms() {
        assert_eq!(
            ApiRequest::parse("$JS.API.CONSUMER.CREATE.S"),
            ApiRequest::ConsumerCreate { stream: "S", consumer: None, filter: None }
        );
        assert_eq!(
            ApiRequest::parse("$JS.API.CONSUMER.CREATE.S.C"),
            ApiRequest::ConsumerCreate { stream: "S", consumer: Some("C"), filter: None }
        );
        assert_eq!(
            ApiRequest::parse("$JS.API.CONSUMER.CREATE.S.C.orders.*.>"),
            ApiRequest::ConsumerCreate { stream: "S", consumer: Some("C"), filter: Some("orders.*.>") }
        );
        assert_eq!(
            ApiRequest::parse("$JS.API.CONSUMER.DURABLE.CREATE.S.D"),
            ApiRequest::ConsumerDurableCreate { stream: "S", consumer: "D" }
        );
    }

    #[test]
    fn consumer_endpoints() {
        assert_eq!(
            ApiRequest::parse("$JS.API.CONSUMER.INFO.S.C"),
            ApiRequest::ConsumerInfo { stream: "S", consumer: "C" }
        );
        assert_eq!(
            ApiRequest::parse("$JS.API.CONSUMER.DELETE.S.C"),
            ApiRequest::ConsumerDelete { stream: "S", consumer: "C" }
        );
        assert_eq!(ApiRequest::parse("$JS.API.CONSUMER.NAMES.S"), ApiRequest::ConsumerNames { stream: "S" });
        assert_eq!(ApiRequest::parse("$JS.API.CONSUMER.LIST.S"), ApiRequest::ConsumerList { stream: "S" });
        assert_eq!(
            ApiRequest::parse("$JS.API.CONSUMER.PAUSE.S.C"),
            ApiRequest::ConsumerPause { stream: "S", consumer: "C" }
        );
        assert_eq!(
            ApiRequest::parse("$JS.API.CONSUMER.MSG.NEXT.S.C"),
            ApiRequest::ConsumerNext { stream: "S", consumer: "C" }
        );
    }

    #[test]
    fn wrong_token_counts_are_unknown() {
        for subject in [
            "$JS.API.STREAM.INFO",
            "$JS.API.STREAM.INFO.A.B",
            "$JS.API.FOO.BAR",
            "$JS.API.STREAM.FROB.S",
            "$JS.API.CONSUMER.INFO.S",
            "$JS.API.CONSUMER.INFO.S.C.D",
            "$JS.API.CONSUMER.NAMES.S.X",
            "$JS.API.CONSUMER.MSG.NEXT.S",
            "$JS.API.CONSUMER.DURABLE.CREATE.S",
            "$JS.API.CONSUMER.CREATE.S..x",
            "$JS.API.DIRECT.GET.",
            "$JS.API.INFO.X",
            "$JS.APIX.INFO",
            "foo",
            "",
        ] {
            assert_eq!(ApiRequest::parse(subject), ApiRequest::Unknown, "{subject}");
        }
        assert_eq!(ApiRequest::parse("$JS.API.FOO").response_type(), None);
    }
}
