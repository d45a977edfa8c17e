//! The stream's view of subjects, on top of `crate::subject` (one implementation of
//! validation, matching and overlap for the whole server). `*` matches exactly one token;
//! `>` matches one or more trailing tokens.

use crate::subject;

/// Whether a stream stores a message published to `subject`: non-empty tokens without
/// whitespace. A `*` or `>` token is stored as a plain token, as nats-server stores it
/// (a KV put of key `x.>` without client-side checks is kept under `$KV.B.x.>`).
pub fn is_valid_subject(subject: &str) -> bool {
    subject::is_valid_publish_subject(subject.as_bytes())
}

/// Whether `pattern` is a valid subject or wildcard filter.
pub fn is_valid_pattern(pattern: &str) -> bool {
    subject::is_valid_subject(pattern.as_bytes())
}

/// Whether literal `subject` matches `pattern`.
pub fn matches(pattern: &str, subject: &str) -> bool {
    subject::matches(pattern.as_bytes(), subject.as_bytes())
}

/// Whether some literal subject matches both patterns.
pub fn patterns_overlap(left: &str, right: &str) -> bool {
    subject::collide(left.as_bytes(), right.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards_match_tokens() {
        assert!(matches("orders.*", "orders.eu"));
        assert!(!matches("orders.*", "orders.eu.paris"));
        assert!(matches("orders.>", "orders.eu.paris"));
        assert!(!matches("orders.>", "orders"));
        assert!(matches("a.b", "a.b"));
        assert!(!matches("a.b", "a.bc"));
        assert!(matches(">", "x"));
    }

    #[test]
    fn overlap() {
        assert!(patterns_overlap("orders.*", "orders.eu"));
        assert!(patterns_overlap("orders.>", "*.eu.paris"));
        assert!(!patterns_overlap("orders.*", "orders.eu.paris"));
        assert!(!patterns_overlap("a.b", "a.c"));
        assert!(!patterns_overlap("a.>", "a"));
    }

    #[test]
    fn validation() {
        assert!(is_valid_pattern("a.*.>"));
        assert!(!is_valid_pattern("a.>.b"));
        assert!(!is_valid_pattern("a..b"));
        assert!(!is_valid_pattern("a b"));
        // As in NATS, `*` or `>` inside a longer token is an ordinary character.
        assert!(is_valid_pattern("a.b*"));
        assert!(is_valid_subject("a.b*"));
        assert!(is_valid_subject("a.*"));
        assert!(is_valid_subject("a.>.b"));
        assert!(!is_valid_subject("a..b"));
    }
}
