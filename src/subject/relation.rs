//! Relations between patterns and subjects, each one pass over the tokens, no allocation.
//! Arguments are assumed valid (see `validate`); a subject with an empty token matches
//! nothing.

use super::{has_empty_token, tokens, SINGLE_WILDCARD, TAIL_WILDCARD};

/// Whether the literal `subject` matches the subscription `pattern`. `*`/`>` tokens in
/// `subject` are plain tokens; they match a `*`/`>` in `pattern` only as wildcards do.
pub fn matches(pattern: &[u8], subject: &[u8]) -> bool {
    if has_empty_token(subject) {
        return false;
    }
    let mut pattern_tokens = tokens(pattern);
    let mut subject_tokens = tokens(subject);
    loop {
        match (pattern_tokens.next(), subject_tokens.next()) {
            (None, None) => return true,
            (Some(TAIL_WILDCARD), Some(_)) => return true,
            (Some(pattern_token), Some(subject_token)) => {
                if pattern_token != SINGLE_WILDCARD && pattern_token != subject_token {
                    return false;
                }
            }
            _ => return false,
        }
    }
}

/// Whether some literal subject matches both patterns (e.g. two streams' subjects
/// overlap).
pub fn collide(first: &[u8], second: &[u8]) -> bool {
    let mut first_tokens = tokens(first);
    let mut second_tokens = tokens(second);
    loop {
        match (first_tokens.next(), second_tokens.next()) {
            (None, None) => return true,
            (Some(TAIL_WILDCARD), Some(_)) | (Some(_), Some(TAIL_WILDCARD)) => return true,
            (Some(first_token), Some(second_token)) => {
                let either_single = first_token == SINGLE_WILDCARD || second_token == SINGLE_WILDCARD;
                if !either_single && first_token != second_token {
                    return false;
                }
            }
            _ => return false,
        }
    }
}

/// Whether every literal subject matching `subset` also matches `superset`.
pub fn is_subset(subset: &[u8], superset: &[u8]) -> bool {
    let mut subset_tokens = tokens(subset);
    let mut superset_tokens = tokens(superset);
    loop {
        match (subset_tokens.next(), superset_tokens.next()) {
            (None, None) => return true,
            (Some(_), Some(TAIL_WILDCARD)) => return true,
            // `>` covers subjects of any length; only a `>` covers it.
            (Some(TAIL_WILDCARD), Some(_)) => return false,
            (Some(subset_token), Some(superset_token)) => {
                if superset_token != SINGLE_WILDCARD
                    && (subset_token == SINGLE_WILDCARD || subset_token != superset_token)
                {
                    return false;
                }
            }
            _ => return false,
        }
    }
}
