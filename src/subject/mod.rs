//! Subjects: validation, wildcard relations, and the subscription trie (DESIGN §6).
//!
//! A subject is tokens separated by `.`. In a subscription pattern a token that is
//! exactly `*` matches one token and a last token exactly `>` matches one or more;
//! `foo.*bar` is literal. Publish subjects are literal: a `*` or `>` token there is a
//! plain token (nats-server accepts them unless pedantic, and clients rely on it, e.g.
//! `$JS.API.CONSUMER.CREATE.S.c.orders.*`). Matching is case-sensitive and byte-exact.
//!
//! `SubjectTransform` maps subjects from a source pattern to a destination (nats subject
//! mapping, as stream transforms and republish use it).
//!
//! This module knows nothing of what is stored under a subject.

mod children;
mod relation;
pub(crate) mod split_map;
mod token_hash;
mod transform;
mod transform_function;
mod trie;
mod validate;

pub use relation::{collide, is_subset, matches};
pub(crate) use token_hash::TokenHashBuilder;
pub use transform::{DestinationFault, SubjectTransform, TransformError};
pub use trie::{InvalidSubject, SubjectTrie};
pub use validate::{is_literal, is_valid_literal_subject, is_valid_publish_subject, is_valid_subject};

/// Token separator.
pub(crate) const SEPARATOR: u8 = b'.';
/// Single-token wildcard.
pub(crate) const SINGLE_WILDCARD: &[u8] = b"*";
/// Trailing wildcard: one or more tokens.
pub(crate) const TAIL_WILDCARD: &[u8] = b">";

/// The tokens of a subject, in order (`a..b` yields an empty token).
pub(crate) fn tokens(subject: &[u8]) -> std::slice::Split<'_, u8, impl FnMut(&u8) -> bool> {
    subject.split(|&byte| byte == SEPARATOR)
}

/// Whether `subject` is empty or has an empty token (leading, trailing or double dot).
pub(crate) fn has_empty_token(subject: &[u8]) -> bool {
    subject.is_empty()
        || subject[0] == SEPARATOR
        || subject[subject.len() - 1] == SEPARATOR
        || subject.windows(2).any(|pair| pair == [SEPARATOR, SEPARATOR])
}
