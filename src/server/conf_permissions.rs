//! The `permissions` block of a configured user, and `default_permissions`, in
//! nats-server's syntax:
//!
//! ```text
//! permissions: {
//!   publish: "orders.*"                           # one subject, or
//!   publish: ["orders.*", "$JS.API.>"]            # a list (an allow list), or
//!   publish: { allow: ["orders.>"], deny: "orders.secret" }
//!   subscribe: { allow: ["_INBOX.>", "jobs.* workers"] }   # "subject queue"
//!   allow_responses: true                          # or { max: 2, expires: "1m" }
//! }
//! ```
//!
//! `pub`/`sub`/`import`/`export` and `publish_allow_responses` are accepted as
//! nats-server accepts them; any other key is refused with its line.

use super::conf::{parse_duration, ConfError};
use super::conf_syntax::{ConfEntry, ConfValue};
use super::permissions::{Permissions, ResponsePermission, Rule, SubjectRules};

/// Parses a `permissions` (or `default_permissions`) entry.
pub fn permissions(entry: &ConfEntry) -> Result<Permissions, ConfError> {
    let ConfValue::Map(children) = &entry.value else {
        return Err(ConfError::at(entry, "expected permissions to be a map/struct"));
    };
    let mut permissions = Permissions::default();
    for child in children {
        match child.key.to_ascii_lowercase().as_str() {
            "pub" | "publish" | "import" => permissions.publish = subject_rules(child)?,
            "sub" | "subscribe" | "export" => permissions.subscribe = subject_rules(child)?,
            "allow_responses" | "publish_allow_responses" => permissions.responses = responses(child)?,
            _ => return Err(ConfError::at(child, "unknown field parsing permissions")),
        }
    }
    Ok(permissions.settled())
}

/// A subject, a list of subjects (both: an allow list), or `{allow, deny}`.
fn subject_rules(entry: &ConfEntry) -> Result<SubjectRules, ConfError> {
    match &entry.value {
        ConfValue::Map(children) => {
            let mut rules = SubjectRules::default();
            for child in children {
                match child.key.to_ascii_lowercase().as_str() {
                    "allow" => rules.allow = Some(rule_list(child, &child.value)?),
                    "deny" => rules.deny = rule_list(child, &child.value)?,
                    _ => return Err(ConfError::at(child, "expected `allow` or `deny`")),
                }
            }
            Ok(rules)
        }
        value => Ok(SubjectRules { allow: Some(rule_list(entry, value)?), deny: Vec::new() }),
    }
}

fn rule_list(entry: &ConfEntry, value: &ConfValue) -> Result<Vec<Rule>, ConfError> {
    let parse = |text: &str| Rule::parse(text).map_err(|message| ConfError::at(entry, message));
    match value {
        ConfValue::String(text) => Ok(vec![parse(text)?]),
        ConfValue::Array(items) => items
            .iter()
            .map(|item| match item {
                ConfValue::String(text) => parse(text),
                _ => Err(ConfError::at(entry, "subject in permissions array cannot be cast to string")),
            })
            .collect(),
        _ => Err(ConfError::at(entry, "expected a subject or a list of subjects")),
    }
}

/// `true`/`false`, or `{max: N, expires: "2m"}`.
fn responses(entry: &ConfEntry) -> Result<Option<ResponsePermission>, ConfError> {
    let children = match &entry.value {
        ConfValue::Bool(true) => return Ok(Some(ResponsePermission::default())),
        ConfValue::Bool(false) => return Ok(None),
        ConfValue::Map(children) => children,
        _ => return Err(ConfError::at(entry, "expected true, false or {max, expires}")),
    };
    let mut permission = ResponsePermission::default();
    for child in children {
        match (child.key.to_ascii_lowercase().as_str(), &child.value) {
            ("max" | "max_msgs" | "max_messages" | "max_responses", ConfValue::Integer(max)) if *max > 0 => {
                permission.messages_max = u32::try_from(*max).unwrap_or(u32::MAX)
            }
            ("expires" | "expiration" | "ttl", ConfValue::String(text)) => {
                permission.expires = parse_duration(text).map_err(|message| ConfError::at(child, message))?
            }
            _ => return Err(ConfError::at(child, "expected `max` (a positive number) or `expires` (a duration)")),
        }
    }
    Ok(Some(permission))
}

#[cfg(test)]
mod tests {
    use super::super::conf::apply;
    use super::super::options::Options;

    #[test]
    fn user_and_default_permissions_apply() {
        let text = "authorization {\n default_permissions = { publish = \"pub.>\" }\n users = [\n\
                    {user: alice, password: a, permissions: { publish: {allow: [\"foo.*\"], deny: \"foo.secret\"},\
                     subscribe: [\"foo.>\", \"q.* grp\"] }}\n\
                    {user: bob, password: b, permissions: { sub: {deny: \">\"}, allow_responses: {max: 2, expires: \"1m\"} }}\n\
                    {user: carol, password: c}\n ]\n}\n";
        let mut options = Options::default();
        apply(text, &mut options).unwrap();
        let alice = options.users[0].permissions.as_ref().unwrap();
        assert!(alice.may_publish(b"foo.x") && !alice.may_publish(b"foo.secret"));
        assert!(alice.may_subscribe(b"q.x", Some(b"grp")) && !alice.may_subscribe(b"q.x", None));
        let bob = options.users[1].permissions.as_ref().unwrap();
        assert_eq!(bob.responses.unwrap().messages_max, 2);
        assert!(!bob.may_publish(b"x"), "responses alone allow no publish");
        assert!(options.users[2].permissions.is_none());
        assert!(options.default_permissions.as_ref().unwrap().may_publish(b"pub.x"));
    }

    #[test]
    fn bad_permissions_are_refused_with_their_line() {
        let bad = [
            ("authorization { users = [ {user: a, password: b, permissions: { publish: {alow: x} }} ] }\n", "alow"),
            ("authorization { users = [ {user: a, password: b, permissions: { bogus: x }} ] }\n", "unknown field"),
            ("authorization { users = [ {user: a, password: b, permissions: { publish: [1] }} ] }\n", "cast to string"),
            (
                "authorization { users = [ {user: a, password: b, permissions: { sub: \"a..b\" }} ] }\n",
                "invalid subject",
            ),
        ];
        for (text, expected) in bad {
            let error = apply(text, &mut Options::default()).unwrap_err();
            assert!(error.to_string().contains(expected), "{error}");
        }
    }
}
