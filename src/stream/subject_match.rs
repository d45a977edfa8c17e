//! Subject validation and wildcard matching, private to `stream` until `subject/` lands.
//! `*` matches exactly one token; `>` matches one or more trailing tokens.

/// Whether `subject` is a valid literal subject (no wildcards).
pub fn is_valid_subject(subject: &str) -> bool {
    is_valid_pattern(subject) && !subject.contains(['*', '>'])
}

/// Whether `pattern` is a valid subject or wildcard filter. Runs on every publish, so it
/// walks the tokens without allocating.
pub fn is_valid_pattern(pattern: &str) -> bool {
    if pattern.is_empty() || pattern.chars().any(char::is_whitespace) {
        return false;
    }
    let mut tokens = pattern.split('.').peekable();
    while let Some(token) = tokens.next() {
        let wildcard_inside = token.len() > 1 && token.contains(['*', '>']);
        let full_wildcard_not_last = token == ">" && tokens.peek().is_some();
        if token.is_empty() || wildcard_inside || full_wildcard_not_last {
            return false;
        }
    }
    true
}

/// Whether literal `subject` matches `pattern`.
pub fn matches(pattern: &str, subject: &str) -> bool {
    let mut subject_tokens = subject.split('.');
    for token in pattern.split('.') {
        match (token, subject_tokens.next()) {
            (">", Some(_)) => return true,
            ("*", Some(_)) => {}
            (literal, Some(actual)) if literal == actual => {}
            _ => return false,
        }
    }
    subject_tokens.next().is_none()
}

/// Whether some literal subject matches both patterns.
pub fn patterns_overlap(left: &str, right: &str) -> bool {
    let (mut left, mut right) = (left.split('.'), right.split('.'));
    loop {
        match (left.next(), right.next()) {
            (None, None) => return true,
            (Some(">"), Some(_)) | (Some(_), Some(">")) => return true,
            (Some(a), Some(b)) if a == "*" || b == "*" || a == b => {}
            _ => return false,
        }
    }
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
        assert!(!is_valid_pattern("a.b*"));
        assert!(!is_valid_subject("a.*"));
    }
}
