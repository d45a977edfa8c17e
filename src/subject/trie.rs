//! `SubjectTrie<T>`: subscription patterns → values, matched against literal subjects.
//!
//! One node per token position; each node has literal children (few: scanned; many:
//! hashed by token, see `children`), one
//! `*` child, the values of patterns that end at it, and the values of patterns that end
//! with `>` right after it (`tail`). A lookup walks the subject's tokens once, following
//! the literal and `*` children and reporting `tail` values on the way; it allocates
//! nothing. Reported order: deterministic, but unspecified.

use std::fmt;

use super::children::Children;
use super::token_hash::TokenHashBuilder;
use super::{has_empty_token, is_valid_subject, SEPARATOR, SINGLE_WILDCARD, TAIL_WILDCARD};

/// `insert` refused a pattern that is not a valid subscription subject.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InvalidSubject;

impl fmt::Display for InvalidSubject {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "invalid subject")
    }
}

impl std::error::Error for InvalidSubject {}

pub struct SubjectTrie<T> {
    root: Node<T>,
    len: usize,
    hash_builder: TokenHashBuilder,
}

struct Node<T> {
    literal: Children<Node<T>>,
    single: Option<Box<Node<T>>>,
    /// Patterns ending at this node.
    values: Vec<T>,
    /// Patterns ending with `>` after this node.
    tail: Vec<T>,
}

impl<T> Default for SubjectTrie<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> SubjectTrie<T> {
    pub fn new() -> Self {
        let hash_builder = TokenHashBuilder::new();
        SubjectTrie { root: Node::new(), len: 0, hash_builder }
    }

    /// Number of (pattern, value) entries.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Add `value` under `pattern`. The same pattern may hold many values.
    pub fn insert(&mut self, pattern: &[u8], value: T) -> Result<(), InvalidSubject> {
        if !is_valid_subject(pattern) {
            return Err(InvalidSubject);
        }
        let hash_builder = self.hash_builder;
        let mut node = &mut self.root;
        let mut rest = pattern;
        loop {
            let (token, after) = split_first_token(rest);
            if token == TAIL_WILDCARD {
                node.tail.push(value);
                break;
            }
            node = node.child_or_insert(token, hash_builder);
            match after {
                Some(after) => rest = after,
                None => {
                    node.values.push(value);
                    break;
                }
            }
        }
        self.len += 1;
        Ok(())
    }

    /// Remove the values under exactly `pattern` for which `predicate` holds; returns how
    /// many were removed. Nodes left empty are freed.
    pub fn remove(&mut self, pattern: &[u8], mut predicate: impl FnMut(&T) -> bool) -> usize {
        if !is_valid_subject(pattern) {
            return 0;
        }
        let removed = self.root.remove(pattern, &mut predicate);
        self.len -= removed;
        removed
    }

    /// Whether a value stored under exactly `pattern` satisfies `predicate` (no wildcard
    /// matching: `a.*` looks only at what was inserted as `a.*`). Stops at the first.
    pub fn any_exact(&self, pattern: &[u8], predicate: impl Fn(&T) -> bool) -> bool {
        if !is_valid_subject(pattern) {
            return false;
        }
        let mut node = &self.root;
        let mut rest = pattern;
        loop {
            let (token, after) = split_first_token(rest);
            if token == TAIL_WILDCARD {
                return node.tail.iter().any(predicate);
            }
            let child = if token == SINGLE_WILDCARD { node.single.as_deref() } else { node.literal.get(token) };
            let Some(child) = child else { return false };
            node = child;
            match after {
                Some(after) => rest = after,
                None => return node.values.iter().any(predicate),
            }
        }
    }

    /// Call `visit` with every value whose pattern matches the literal `subject`.
    /// A subject with an empty token matches nothing.
    pub fn for_each_match(&self, subject: &[u8], mut visit: impl FnMut(&T)) {
        if has_empty_token(subject) {
            return;
        }
        self.root.visit_matches(subject, &mut visit);
    }

    /// For a subject `prefix.X` whose last token `X` no pattern names literally: calls
    /// `visit` with every value its patterns match, the same for every such `X` (a
    /// client's reply inbox `_INBOX.id.*`: each reply differs, its matches do not).
    /// Returns false when some pattern has a literal token at `X`'s place, where the
    /// matches depend on `X` and the values visited are not all of them; and for a
    /// `prefix` with an empty token, which matches nothing.
    pub fn for_each_match_any_last(&self, prefix: &[u8], mut visit: impl FnMut(&T)) -> bool {
        !has_empty_token(prefix) && self.root.visit_matches_any_last(prefix, &mut visit)
    }
}

impl<T> Node<T> {
    fn new() -> Self {
        Node { literal: Children::new(), single: None, values: Vec::new(), tail: Vec::new() }
    }

    fn is_empty(&self) -> bool {
        self.values.is_empty() && self.tail.is_empty() && self.single.is_none() && self.literal.is_empty()
    }

    fn child_or_insert(&mut self, token: &[u8], hash_builder: TokenHashBuilder) -> &mut Node<T> {
        if token == SINGLE_WILDCARD {
            return self.single.get_or_insert_with(|| Box::new(Node::new()));
        }
        self.literal.get_or_insert(token, hash_builder, Node::new)
    }

    /// `subject` is the non-empty rest of the subject, starting at this node's depth.
    fn visit_matches(&self, subject: &[u8], visit: &mut impl FnMut(&T)) {
        let (token, after) = split_first_token(subject);
        self.tail.iter().for_each(&mut *visit);
        if let Some(single) = &self.single {
            single.visit_after(after, visit);
        }
        if let Some(child) = self.literal.get(token) {
            child.visit_after(after, visit);
        }
    }

    /// `visit_matches` for `prefix.X`, `X` a token that names no literal child where it
    /// lands: false when some node there has literal children.
    fn visit_matches_any_last(&self, prefix: &[u8], visit: &mut impl FnMut(&T)) -> bool {
        let (token, after) = split_first_token(prefix);
        self.tail.iter().for_each(&mut *visit);
        let single = self.single.as_ref().is_none_or(|single| single.visit_any_last_after(after, visit));
        let literal = self.literal.get(token).is_none_or(|child| child.visit_any_last_after(after, visit));
        single && literal
    }

    /// After a node reached by the prefix's tokens so far; `None`: only `X` is left.
    fn visit_any_last_after(&self, after: Option<&[u8]>, visit: &mut impl FnMut(&T)) -> bool {
        match after {
            Some(rest) => self.visit_matches_any_last(rest, visit),
            None => {
                self.tail.iter().for_each(&mut *visit);
                if let Some(single) = &self.single {
                    single.values.iter().for_each(&mut *visit);
                }
                self.literal.is_empty()
            }
        }
    }

    fn visit_after(&self, after: Option<&[u8]>, visit: &mut impl FnMut(&T)) {
        match after {
            None => self.values.iter().for_each(visit),
            Some(rest) => self.visit_matches(rest, visit),
        }
    }

    fn remove(&mut self, pattern: &[u8], predicate: &mut impl FnMut(&T) -> bool) -> usize {
        let (token, after) = split_first_token(pattern);
        if token == TAIL_WILDCARD {
            return retain_counting(&mut self.tail, predicate);
        }
        let child = if token == SINGLE_WILDCARD { self.single.as_deref_mut() } else { self.literal.get_mut(token) };
        let Some(child) = child else {
            return 0;
        };
        let removed = match after {
            None => retain_counting(&mut child.values, predicate),
            Some(rest) => child.remove(rest, predicate),
        };
        if child.is_empty() {
            if token == SINGLE_WILDCARD {
                self.single = None;
            } else {
                self.literal.remove(token);
            }
        }
        removed
    }
}

/// Remove the values matching `predicate`; returns how many.
fn retain_counting<T>(values: &mut Vec<T>, predicate: &mut impl FnMut(&T) -> bool) -> usize {
    let before = values.len();
    values.retain(|value| !predicate(value));
    before - values.len()
}

/// First token and the rest after its separator (`None` when it was the last token).
fn split_first_token(subject: &[u8]) -> (&[u8], Option<&[u8]>) {
    match subject.iter().position(|&byte| byte == SEPARATOR) {
        Some(dot) => (&subject[..dot], Some(&subject[dot + 1..])),
        None => (subject, None),
    }
}
