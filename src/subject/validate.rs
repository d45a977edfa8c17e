//! Subject validity, as nats-server's `sublist.go` defines it: no empty tokens, no
//! whitespace (space, tab, CR, LF, form feed), and for patterns `>` only as the last token.

use super::{tokens, SINGLE_WILDCARD, TAIL_WILDCARD};

/// A valid subscription pattern (wildcards allowed as whole tokens, `>` only last).
pub fn is_valid_subject(subject: &[u8]) -> bool {
    if subject.is_empty() {
        return false;
    }
    let mut after_tail_wildcard = false;
    for token in tokens(subject) {
        if token.is_empty() || after_tail_wildcard || token.iter().any(|&byte| is_whitespace(byte)) {
            return false;
        }
        after_tail_wildcard = token == TAIL_WILDCARD;
    }
    true
}

/// A valid publish subject: non-empty tokens without whitespace. `*` and `>` tokens are
/// accepted as plain tokens (nats-server outside pedantic mode).
pub fn is_valid_publish_subject(subject: &[u8]) -> bool {
    !subject.is_empty()
        && tokens(subject).all(|token| !token.is_empty() && !token.iter().any(|&byte| is_whitespace(byte)))
}

/// A valid subject with no wildcard token: what pedantic mode requires of a publish
/// (else `-ERR 'Invalid Publish Subject'`).
pub fn is_valid_literal_subject(subject: &[u8]) -> bool {
    is_valid_subject(subject) && is_literal(subject)
}

/// No token is exactly `*` or `>`. Says nothing about validity.
pub fn is_literal(subject: &[u8]) -> bool {
    tokens(subject).all(|token| token != SINGLE_WILDCARD && token != TAIL_WILDCARD)
}

fn is_whitespace(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\r' | b'\n' | b'\x0c')
}
