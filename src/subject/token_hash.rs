//! A fast keyed hash for short keys: subject tokens (the trie's literal children), whole
//! subjects (the routing match cache), stream names (per-publish lookups) and the record
//! cache's (stream, sequence) pairs.
//!
//! std's SipHash costs more than the rest of a trie lookup for short tokens. This hash
//! folds 8 bytes per multiply (as foldhash/FxHash do) and is keyed with a per-process
//! random seed so a client cannot choose tokens that collide. Only lookups use it;
//! nothing depends on the iteration order it gives.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};

const MULTIPLIER: u64 = 0x9e37_79b9_7f4a_7c15;
const FINISH_MULTIPLIER: u64 = 0xff51_afd7_ed55_8ccd;
const WORD_BYTES: usize = 8;

/// Builds [`TokenHasher`]s sharing one random seed.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TokenHashBuilder {
    seed: u64,
}

impl TokenHashBuilder {
    pub(crate) fn new() -> Self {
        TokenHashBuilder { seed: RandomState::new().hash_one(0x006a_6574_636f_7265_u64) | 1 }
    }
}

impl Default for TokenHashBuilder {
    fn default() -> Self {
        TokenHashBuilder::new()
    }
}

impl BuildHasher for TokenHashBuilder {
    type Hasher = TokenHasher;

    fn build_hasher(&self) -> TokenHasher {
        TokenHasher { state: self.seed }
    }
}

pub(crate) struct TokenHasher {
    state: u64,
}

impl TokenHasher {
    fn mix(&mut self, word: u64) {
        self.state = folded_multiply(self.state ^ word, MULTIPLIER);
    }
}

impl Hasher for TokenHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(WORD_BYTES);
        for chunk in &mut chunks {
            let word = u64::from_le_bytes(chunk.try_into().expect("chunk is 8 bytes"));
            self.mix(word);
        }
        let remainder = chunks.remainder();
        if !remainder.is_empty() {
            let mut word = [0u8; WORD_BYTES];
            word[..remainder.len()].copy_from_slice(remainder);
            self.mix(u64::from_le_bytes(word));
        }
    }

    fn write_usize(&mut self, value: usize) {
        self.mix(value as u64);
    }

    fn write_u64(&mut self, value: u64) {
        self.mix(value);
    }

    fn finish(&self) -> u64 {
        folded_multiply(self.state, FINISH_MULTIPLIER)
    }
}

fn folded_multiply(left: u64, right: u64) -> u64 {
    let product = u128::from(left) * u128::from(right);
    (product as u64) ^ ((product >> 64) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_tokens_hash_equal_and_lengths_separate_padding() {
        let builder = TokenHashBuilder::new();
        let hash = |bytes: &[u8]| builder.hash_one(bytes);
        assert_eq!(hash(b"orders"), hash(b"orders"));
        assert_ne!(hash(b"a"), hash(b"a\0"));
        assert_ne!(hash(b"orders.1"), hash(b"orders.2"));
    }
}
