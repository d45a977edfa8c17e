//! The literal children of a trie node: a short vector scanned by comparison while there
//! are few (most nodes: comparing a few short tokens beats hashing one), a hash map keyed
//! by token once there are many (e.g. one child per sensor id). In the map, children are
//! boxed: a node is ~110 bytes, and with a million children (one client's million SUBs)
//! each rehash moved them all, stalling the shard for seconds (measured: 0.5, 1.1, 1.7,
//! 2.9 s at successive doublings); boxed, a rehash moves 24-byte entries. The map is a
//! [`SplitMap`], so past a few ten thousand children it also grows in small steps.

use super::split_map::SplitMap;
use super::token_hash::TokenHashBuilder;

/// Above this many children a node switches to a hash map (and never switches back).
pub(crate) const FEW_CHILDREN_MAX: usize = 8;

pub(crate) enum Children<N> {
    Few(Vec<(Box<[u8]>, N)>),
    Many(SplitMap<Box<[u8]>, Box<N>, TokenHashBuilder>),
}

impl<N> Children<N> {
    pub(crate) fn new() -> Self {
        Children::Few(Vec::new())
    }

    pub(crate) fn is_empty(&self) -> bool {
        match self {
            Children::Few(children) => children.is_empty(),
            Children::Many(children) => children.is_empty(),
        }
    }

    pub(crate) fn get(&self, token: &[u8]) -> Option<&N> {
        match self {
            Children::Few(children) => {
                children.iter().find(|(candidate, _)| **candidate == *token).map(|(_, child)| child)
            }
            Children::Many(children) => children.get(token).map(|child| &**child),
        }
    }

    pub(crate) fn get_mut(&mut self, token: &[u8]) -> Option<&mut N> {
        match self {
            Children::Few(children) => {
                children.iter_mut().find(|(candidate, _)| **candidate == *token).map(|(_, child)| child)
            }
            Children::Many(children) => children.get_mut(token).map(|child| &mut **child),
        }
    }

    /// The child for `token`, created by `create` if absent.
    pub(crate) fn get_or_insert(
        &mut self,
        token: &[u8],
        hash_builder: TokenHashBuilder,
        create: impl FnOnce() -> N,
    ) -> &mut N {
        if let Children::Few(children) = self {
            if children.len() >= FEW_CHILDREN_MAX && !children.iter().any(|(candidate, _)| **candidate == *token) {
                let mut many = SplitMap::with_capacity_and_hasher(children.len() + 1, hash_builder);
                for (token, child) in children.drain(..) {
                    many.insert(token, Box::new(child));
                }
                *self = Children::Many(many);
            }
        }
        match self {
            Children::Few(children) => {
                let index = match children.iter().position(|(candidate, _)| **candidate == *token) {
                    Some(index) => index,
                    None => {
                        children.push((token.into(), create()));
                        children.len() - 1
                    }
                };
                &mut children[index].1
            }
            Children::Many(children) => {
                if !children.contains_key(token) {
                    children.insert(token.into(), Box::new(create()));
                }
                children.get_mut(token).expect("child was just ensured")
            }
        }
    }

    pub(crate) fn remove(&mut self, token: &[u8]) {
        match self {
            Children::Few(children) => children.retain(|(candidate, _)| **candidate != *token),
            Children::Many(children) => {
                children.remove(token);
            }
        }
    }
}
