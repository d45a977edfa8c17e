//! Subject validity, matching, collision and subset: tables from nats-server's rules,
//! then collide/subset checked against their definitions over every small subject.

use jetcore::subject::{
    collide, is_literal, is_subset, is_valid_literal_subject, is_valid_publish_subject, is_valid_subject, matches,
};

#[test]
fn subscription_subject_validity() {
    let valid: &[&[u8]] = &[
        b"foo",
        b"foo.bar",
        b"*",
        b">",
        b"foo.*",
        b"foo.>",
        b"*.*.>",
        b"foo.*bar",
        b"foo.b>r",
        b"$JS.API.>",
        b"_INBOX.abc.*",
        b"a.\xff",
    ];
    let invalid: &[&[u8]] = &[
        b"",
        b".",
        b"foo.",
        b".foo",
        b"foo..bar",
        b"foo bar",
        b"foo\tbar",
        b"foo.\r",
        b"a.\x0c",
        b"foo.>.bar",
        b">.foo",
        b"> ",
        b"foo\n",
    ];
    for subject in valid {
        assert!(is_valid_subject(subject), "{:?}", String::from_utf8_lossy(subject));
    }
    for subject in invalid {
        assert!(!is_valid_subject(subject), "{:?}", String::from_utf8_lossy(subject));
    }
}

#[test]
fn publish_subject_validity_accepts_wildcard_tokens_as_plain() {
    let valid: &[&[u8]] = &[b"foo", b"$JS.API.CONSUMER.CREATE.S.c.orders.*", b"a.>.b", b">"];
    let invalid: &[&[u8]] = &[b"", b"a..b", b"a.", b"a b", b"a\tb"];
    for subject in valid {
        assert!(is_valid_publish_subject(subject), "{:?}", String::from_utf8_lossy(subject));
    }
    for subject in invalid {
        assert!(!is_valid_publish_subject(subject), "{:?}", String::from_utf8_lossy(subject));
    }
    assert!(is_valid_literal_subject(b"foo.bar"));
    assert!(!is_valid_literal_subject(b"foo.*"));
    assert!(!is_valid_literal_subject(b"foo.>"));
}

#[test]
fn literal_means_no_whole_wildcard_token() {
    assert!(is_literal(b"foo.bar"));
    assert!(is_literal(b"foo.*bar.b>"));
    assert!(!is_literal(b"*"));
    assert!(!is_literal(b"foo.*.bar"));
    assert!(!is_literal(b"foo.>"));
}

#[test]
fn match_table() {
    let cases: &[(&[u8], &[u8], bool)] = &[
        (b"foo", b"foo", true),
        (b"foo", b"bar", false),
        (b"foo", b"foo.bar", false),
        (b"foo.*", b"foo.bar", true),
        (b"foo.*", b"foo", false),
        (b"foo.*", b"foo.bar.baz", false),
        (b"foo.>", b"foo.bar.baz", true),
        (b"foo.>", b"foo", false),
        (b">", b"foo", true),
        (b">", b"foo.bar", true),
        (b"*.bar", b"foo.bar", true),
        (b"*.*", b"a.b", true),
        (b"foo.*bar", b"foo.xbar", false),
        (b"foo.*bar", b"foo.*bar", true),
        // Wildcard tokens in a publish subject are plain tokens.
        (b"foo.*", b"foo.*", true),
        (b"foo.bar", b"foo.*", false),
        (b"Foo", b"foo", false),
        (b">", b"", false),
        (b">", b"a..b", false),
        (b"*", b".", false),
    ];
    for &(pattern, subject, expected) in cases {
        let shown = (String::from_utf8_lossy(pattern), String::from_utf8_lossy(subject));
        assert_eq!(matches(pattern, subject), expected, "{shown:?}");
    }
}

#[test]
fn collide_table() {
    let cases: &[(&[u8], &[u8], bool)] = &[
        (b"foo.*", b"foo.bar", true),
        (b"foo.*", b"*.bar", true),
        (b"foo.>", b"*.bar.baz", true),
        (b"foo.*", b"foo.bar.baz", false),
        (b"foo.>", b"foo", false),
        (b"*", b">", true),
        (b"a.*.c", b"a.b.>", true),
        (b"a.*.c", b"b.*.c", false),
        (b"orders.*", b"orders.>", true),
        (b"a", b"a", true),
        (b"a", b"b", false),
    ];
    for &(first, second, expected) in cases {
        assert_eq!(collide(first, second), expected, "{first:?} {second:?}");
        assert_eq!(collide(second, first), expected, "{second:?} {first:?}");
    }
}

#[test]
fn subset_table() {
    let cases: &[(&[u8], &[u8], bool)] = &[
        (b"foo.bar", b"foo.*", true),
        (b"foo.*", b"foo.>", true),
        (b"foo.>", b"foo.*", false),
        (b"foo.*", b"foo.bar", false),
        (b"foo.>", b">", true),
        (b">", b"foo.>", false),
        (b"*.*", b">", true),
        (b"$JS.EVENT.ADVISORY.x", b"$JS.EVENT.>", true),
        (b"a.*", b"*.*", true),
        (b"*.*", b"a.*", false),
        (b"a.b", b"a.b", true),
        (b"a.b.c", b"a.*", false),
    ];
    for &(subset, superset, expected) in cases {
        assert_eq!(is_subset(subset, superset), expected, "{subset:?} {superset:?}");
    }
}

/// All patterns of 1 to 4 tokens over {a, b, *, >} with `>` only last.
fn small_patterns() -> Vec<Vec<u8>> {
    let mut patterns = Vec::new();
    let mut frontier: Vec<Vec<u8>> = vec![Vec::new()];
    for _ in 0..4 {
        let mut next = Vec::new();
        for prefix in &frontier {
            for token in [&b"a"[..], b"b", b"*", b">"] {
                let mut pattern = prefix.clone();
                if !pattern.is_empty() {
                    pattern.push(b'.');
                }
                pattern.extend_from_slice(token);
                patterns.push(pattern.clone());
                if token != b">" {
                    next.push(pattern);
                }
            }
        }
        frontier = next;
    }
    patterns
}

/// All literal subjects of 1 to 5 tokens over {a, b, c}: long enough to witness any
/// overlap or difference between two 4-token patterns (c stands for "anything else").
fn small_subjects() -> Vec<Vec<u8>> {
    let mut subjects = Vec::new();
    let mut frontier: Vec<Vec<u8>> = vec![Vec::new()];
    for _ in 0..5 {
        let mut next = Vec::new();
        for prefix in &frontier {
            for token in [b'a', b'b', b'c'] {
                let mut subject = prefix.clone();
                if !subject.is_empty() {
                    subject.push(b'.');
                }
                subject.push(token);
                next.push(subject);
            }
        }
        subjects.extend(next.iter().cloned());
        frontier = next;
    }
    subjects
}

#[test]
fn collide_and_subset_agree_with_their_definitions() {
    let patterns = small_patterns();
    let subjects = small_subjects();
    let matched: Vec<Vec<bool>> =
        patterns.iter().map(|pattern| subjects.iter().map(|subject| matches(pattern, subject)).collect()).collect();
    for (first_index, first) in patterns.iter().enumerate() {
        for (second_index, second) in patterns.iter().enumerate() {
            let (first_set, second_set) = (&matched[first_index], &matched[second_index]);
            let overlap = first_set.iter().zip(second_set).any(|(x, y)| *x && *y);
            let contained = first_set.iter().zip(second_set).all(|(x, y)| !*x || *y);
            let shown = (String::from_utf8_lossy(first), String::from_utf8_lossy(second));
            assert_eq!(collide(first, second), overlap, "collide {shown:?}");
            assert_eq!(is_subset(first, second), contained, "subset {shown:?}");
        }
    }
}
