//! Subjects: validation, wildcard match, the subscription trie (DESIGN §6).
//!
//! CONTRACT: `is_valid_subject(&[u8])` (subscription patterns, wildcards allowed),
//! `is_valid_publish_subject(&[u8])` (literal; `*`/`>` tokens still accepted as plain tokens
//! unless pedantic), `matches(pattern, subject) -> bool`, `collide(a, b) -> bool`,
//! `is_subset(a, b) -> bool`, and `SubjectTrie<T>` with `insert(pattern, T)`,
//! `remove(pattern, predicate)`, `for_each_match(subject, |&T|)`.
