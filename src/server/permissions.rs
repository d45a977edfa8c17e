//! What a user may publish and subscribe to (nats-server's per-user `permissions`).
//! Pure rules over subjects: no connection state here (that is `guard.rs`).
//!
//! The semantics follow nats-server's sublist-based checks, verified against nats-server
//! 2.15 over the wire:
//!
//! - An allow list, when present, must match; a deny list, when it matches, wins.
//!   No allow list means everything not denied is allowed.
//! - A subscription's subject is matched as nats-server's sublist matches it: its tokens
//!   are taken literally, so `*` in an allow pattern covers a `>` token (allow `baz.*`
//!   admits `SUB baz.>`, as nats-server does), while allow `foo.>` does not admit `SUB >`.
//! - A subscribe rule `"subject queue"` is a queue rule. For a queue subscription, when a
//!   queue rule's subject matches, the queue name decides (allow: it must match one;
//!   deny: it must match none); otherwise the plain rules decide.
//! - `allow_responses` lets a user publish to a reply subject of a message it received,
//!   at most `max` times within `expires`; when it is set and no publish allow list is,
//!   the publish allow list is empty (only responses may be published).

use std::time::Duration;

use crate::protocol::go_quote;
use crate::subject;

/// nats-server's `DEFAULT_ALLOW_RESPONSE_MAX_MSGS`.
pub const RESPONSE_MESSAGES_DEFAULT: u32 = 1;
/// nats-server's `DEFAULT_ALLOW_RESPONSE_EXPIRATION`.
pub const RESPONSE_EXPIRY_DEFAULT: Duration = Duration::from_secs(2 * 60);

/// One entry of an allow or deny list: a subject pattern, and for subscribe rules an
/// optional queue-group pattern.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    pub subject: String,
    pub queue: Option<String>,
}

impl Rule {
    /// Parses `"subject"` or `"subject queue"` (nats-server splits on whitespace).
    pub fn parse(text: &str) -> Result<Rule, String> {
        let mut words = text.split_whitespace();
        let subject = words.next().ok_or_else(|| "empty subject in permissions".to_string())?;
        let queue = words.next().map(str::to_string);
        if words.next().is_some() || !subject::is_valid_subject(subject.as_bytes()) {
            return Err(format!("invalid subject {text:?} in permissions"));
        }
        Ok(Rule { subject: subject.to_string(), queue })
    }
}

/// Allow and deny lists for one direction (publish or subscribe).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SubjectRules {
    /// `None`: no allow list (everything not denied). `Some(empty)`: nothing allowed.
    pub allow: Option<Vec<Rule>>,
    pub deny: Vec<Rule>,
}

/// `allow_responses`: replies to received requests may be published.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResponsePermission {
    pub messages_max: u32,
    pub expires: Duration,
}

impl Default for ResponsePermission {
    fn default() -> Self {
        ResponsePermission { messages_max: RESPONSE_MESSAGES_DEFAULT, expires: RESPONSE_EXPIRY_DEFAULT }
    }
}

/// A user's permissions as configured.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Permissions {
    pub publish: SubjectRules,
    pub subscribe: SubjectRules,
    pub responses: Option<ResponsePermission>,
}

impl Permissions {
    /// Settles what nats-server settles at load: responses without a publish allow list
    /// mean an empty allow list.
    pub fn settled(mut self) -> Permissions {
        if self.responses.is_some() && self.publish.allow.is_none() {
            self.publish.allow = Some(Vec::new());
        }
        self
    }

    /// Whether publishing to the literal `subject` is allowed (responses aside).
    pub fn may_publish(&self, subject: &[u8]) -> bool {
        let plain = |rule: &Rule| subject::matches(rule.subject.as_bytes(), subject);
        let allowed = self.publish.allow.as_ref().is_none_or(|allow| allow.iter().any(plain));
        allowed && !self.publish.deny.iter().any(plain)
    }

    /// Whether `SUB subject [queue]` is allowed.
    pub fn may_subscribe(&self, subject: &[u8], queue: Option<&[u8]>) -> bool {
        let rules = &self.subscribe;
        let allowed = rules.allow.as_ref().is_none_or(|allow| decide(allow, subject, queue));
        allowed && !decide(&rules.deny, subject, queue)
    }

    /// Whether a message on the literal `subject` may be delivered to a wildcard
    /// subscription (which passed `may_subscribe` but may cover denied subjects).
    pub fn may_receive(&self, subject: &[u8]) -> bool {
        !self
            .subscribe
            .deny
            .iter()
            .any(|rule| rule.queue.is_none() && subject::matches(rule.subject.as_bytes(), subject))
    }

    /// Whether delivery needs `may_receive` at all for a subscription on `pattern`.
    pub fn filters_deliveries_to(&self, pattern: &[u8]) -> bool {
        !subject::is_literal(pattern) && !self.subscribe.deny.is_empty()
    }
}

/// Whether `rules` cover the subscription (an allow list admits it, a deny list refuses
/// it). nats-server: plain rules decide unless a queue rule's subject matches a queue
/// subscription, in which case the queue name decides.
fn decide(rules: &[Rule], subject: &[u8], queue: Option<&[u8]>) -> bool {
    let plain = rules.iter().any(|rule| rule.queue.is_none() && subject::matches(rule.subject.as_bytes(), subject));
    let Some(queue) = queue else { return plain };
    let mut queue_rules = rules
        .iter()
        .filter(|rule| rule.queue.is_some() && subject::matches(rule.subject.as_bytes(), subject))
        .peekable();
    if queue_rules.peek().is_none() {
        return plain;
    }
    queue_rules.any(|rule| queue_name_matches(rule.queue.as_deref().unwrap_or(""), queue))
}

/// A queue rule's name matches literally, or as a wildcard pattern when it has one.
fn queue_name_matches(rule: &str, queue: &[u8]) -> bool {
    rule.as_bytes() == queue || (!subject::is_literal(rule.as_bytes()) && subject::is_subset(queue, rule.as_bytes()))
}

/// nats-server's `-ERR` text for a refused publish.
pub fn publish_violation(subject: &[u8]) -> String {
    format!("Permissions Violation for Publish to {}", go_quote(subject))
}

/// nats-server's `-ERR` text for a refused subscription (with its queue, if any).
pub fn subscribe_violation(subject: &[u8], queue: Option<&[u8]>) -> String {
    match queue {
        Some(queue) => {
            format!("Permissions Violation for Subscription to {} using queue {}", go_quote(subject), go_quote(queue))
        }
        None => format!("Permissions Violation for Subscription to {}", go_quote(subject)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(allow: Option<&[&str]>, deny: &[&str]) -> SubjectRules {
        let parse = |list: &[&str]| list.iter().map(|text| Rule::parse(text).unwrap()).collect::<Vec<_>>();
        SubjectRules { allow: allow.map(parse), deny: parse(deny) }
    }

    #[test]
    fn publish_allow_and_deny() {
        let permissions =
            Permissions { publish: rules(Some(&["foo.*", "$JS.API.>"]), &["foo.secret"]), ..Default::default() };
        assert!(permissions.may_publish(b"foo.x"));
        assert!(!permissions.may_publish(b"foo.secret"));
        assert!(!permissions.may_publish(b"bar"));
        assert!(permissions.may_publish(b"$JS.API.STREAM.CREATE.X"));
        let deny_only = Permissions { publish: rules(None, &[">"]), ..Default::default() };
        assert!(!deny_only.may_publish(b"anything"));
    }

    #[test]
    fn subscribe_matches_like_the_sublist() {
        let permissions = Permissions { subscribe: rules(Some(&["bar", "baz.*", "foo.>"]), &[]), ..Default::default() };
        assert!(permissions.may_subscribe(b"baz.*", None));
        assert!(permissions.may_subscribe(b"baz.>", None), "nats-server admits baz.> under baz.*");
        assert!(!permissions.may_subscribe(b"*", None));
        assert!(!permissions.may_subscribe(b">", None));
        assert!(permissions.may_subscribe(b"foo.>", None));
    }

    #[test]
    fn queue_rules_decide_queue_subscriptions() {
        let permissions =
            Permissions { subscribe: rules(Some(&["foo.>", "q.* grp"]), &["foo.secret"]), ..Default::default() };
        assert!(permissions.may_subscribe(b"q.x", Some(b"grp")));
        assert!(!permissions.may_subscribe(b"q.x", Some(b"other")));
        assert!(!permissions.may_subscribe(b"q.x", None), "a queue rule does not admit a plain SUB");
        assert!(permissions.may_subscribe(b"foo.a", Some(b"any")));
        assert!(!permissions.may_subscribe(b"foo.secret", Some(b"any")));
        let deny_queue = Permissions { subscribe: rules(None, &["jobs.* bad.*"]), ..Default::default() };
        assert!(!deny_queue.may_subscribe(b"jobs.1", Some(b"bad.one")));
        assert!(deny_queue.may_subscribe(b"jobs.1", Some(b"good")));
        assert!(deny_queue.may_subscribe(b"jobs.1", None));
    }

    #[test]
    fn wildcard_subscriptions_filter_denied_deliveries() {
        let permissions = Permissions { subscribe: rules(Some(&[">"]), &["secret.>"]), ..Default::default() };
        assert!(permissions.may_subscribe(b">", None));
        assert!(!permissions.may_subscribe(b"secret.*", None));
        assert!(permissions.filters_deliveries_to(b"*.x"));
        assert!(!permissions.filters_deliveries_to(b"ok.x"));
        assert!(!permissions.may_receive(b"secret.x"));
        assert!(permissions.may_receive(b"ok.x"));
    }

    #[test]
    fn violation_texts_quote_like_go() {
        assert_eq!(publish_violation(b"foo.secret"), "Permissions Violation for Publish to \"foo.secret\"");
        assert_eq!(
            subscribe_violation(b"q.x", Some(b"other")),
            "Permissions Violation for Subscription to \"q.x\" using queue \"other\""
        );
        assert_eq!(
            publish_violation(b"a\"b\\\x01\xff"),
            "Permissions Violation for Publish to \"a\\\"b\\\\\\x01\\xff\""
        );
    }

    #[test]
    fn responses_alone_allow_no_publish() {
        let permissions =
            Permissions { responses: Some(ResponsePermission::default()), ..Default::default() }.settled();
        assert!(!permissions.may_publish(b"x"));
        assert!(Rule::parse("a b c").is_err());
        assert!(Rule::parse("a..b").is_err());
    }
}
