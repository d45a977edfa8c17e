//! Reply mappings of service requests, one table per shard: a request that crosses into
//! an exporting account gets a new reply there, `_R_.<prefix>.<token>` (nats-server's
//! `newServiceReply` shape: a per-account prefix, then a token), whose responses are
//! carried back to the requester's own reply in the importing account.
//!
//! The shard that routed the request keeps its mapping; a response may be published on
//! any shard, so the token's first two characters name the owning shard
//! ([`owner_of`]) and the response crosses the mesh to it. A `single` mapping is
//! removed by its first response (a second is dropped); `stream` and `chunked` ones live
//! until their threshold passes without a response. Expired mappings are dropped lazily,
//! when the table is next used; time is the caller's (`now`), so tests drive it.

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

use bytes::Bytes;

use super::account::{AccountId, ResponseType};
use crate::limits;
use crate::shard::ShardId;

/// The start of every reply mapping's subject.
pub const REPLY_PREFIX: &[u8] = b"_R_.";
const ACCOUNT_PREFIX_LEN: usize = 6;
const TOKEN_LEN: usize = 8;
const SHARD_CHARS: usize = 2;
/// `_R_.` + prefix + `.` + token.
const REPLY_LEN: usize = REPLY_PREFIX.len() + ACCOUNT_PREFIX_LEN + 1 + TOKEN_LEN;
const DIGITS: &[u8; 62] = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
const _: () = assert!(DIGITS.len() * DIGITS.len() == limits::SERVICE_REPLY_SHARDS_MAX);

/// Where a response goes: the requester's reply in the importing account.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answer {
    pub importer: AccountId,
    pub reply: Bytes,
}

#[derive(Debug)]
struct Mapping {
    answer: Answer,
    response_type: ResponseType,
    threshold: Duration,
    deadline: Instant,
}

type Key = (AccountId, [u8; TOKEN_LEN]);

/// One shard's reply mappings.
pub struct ResponseMappings {
    shard: ShardId,
    /// Per-server seed of the account prefixes (the same on every shard).
    seed: u64,
    random: u64,
    mappings: HashMap<Key, Mapping>,
    /// Keys in the order their deadlines were set; a key whose mapping moved its
    /// deadline (or went) is skipped when it comes up.
    deadlines: VecDeque<(Instant, Key)>,
}

impl ResponseMappings {
    /// `seed` is shared by the server's shards (so an account's prefix is the same on
    /// all); `shard` is this table's owner.
    pub fn new(shard: ShardId, seed: u64) -> ResponseMappings {
        assert!(usize::from(shard.0) < limits::SERVICE_REPLY_SHARDS_MAX);
        let random = (seed ^ 0x9E37_79B9_7F4A_7C15).rotate_left(u32::from(shard.0) % 64) | 1;
        ResponseMappings { shard, seed, random, mappings: HashMap::new(), deadlines: VecDeque::new() }
    }

    /// Opens a mapping in `exporter` for a request whose reply is `answer.reply`;
    /// returns the reply the exporter's responders see.
    pub fn open(
        &mut self,
        exporter: AccountId,
        answer: Answer,
        response_type: ResponseType,
        threshold: Duration,
        now: Instant,
    ) -> Vec<u8> {
        self.expire(now);
        if self.mappings.len() >= limits::SERVICE_RESPONSE_MAPPINGS_MAX {
            self.drop_oldest();
        }
        let token = loop {
            let token = self.new_token();
            if !self.mappings.contains_key(&(exporter, token)) {
                break token;
            }
        };
        let deadline = now + threshold;
        self.mappings.insert((exporter, token), Mapping { answer, response_type, threshold, deadline });
        self.deadlines.push_back((deadline, (exporter, token)));
        let mut reply = Vec::with_capacity(REPLY_LEN);
        reply.extend_from_slice(REPLY_PREFIX);
        reply.extend_from_slice(&self.account_prefix(exporter));
        reply.push(b'.');
        reply.extend_from_slice(&token);
        reply
    }

    /// The answer for a response published in `exporter` on `subject`, or `None` when no
    /// live mapping has it. A `single` mapping is gone after this; others live on for
    /// their threshold from now.
    pub fn respond(&mut self, exporter: AccountId, subject: &[u8], now: Instant) -> Option<Answer> {
        self.expire(now);
        let key = (exporter, self.token_of(exporter, subject)?);
        let mapping = self.mappings.get_mut(&key)?;
        if mapping.response_type == ResponseType::Single {
            return self.mappings.remove(&key).map(|mapping| mapping.answer);
        }
        mapping.deadline = now + mapping.threshold;
        let answer = mapping.answer.clone();
        self.deadlines.push_back((now + mapping.threshold, key));
        Some(answer)
    }

    /// The answer a response on `subject` would get now, leaving the mapping as it is.
    pub fn peek(&self, exporter: AccountId, subject: &[u8], now: Instant) -> Option<&Answer> {
        let key = (exporter, self.token_of(exporter, subject)?);
        self.mappings.get(&key).filter(|mapping| mapping.deadline > now).map(|mapping| &mapping.answer)
    }

    /// Drops the mapping behind `reply` (its request reached nobody).
    pub fn close(&mut self, exporter: AccountId, reply: &[u8]) {
        if let Some(token) = self.token_of(exporter, reply) {
            self.mappings.remove(&(exporter, token));
        }
    }

    pub fn len(&self) -> usize {
        self.mappings.len()
    }

    pub fn is_empty(&self) -> bool {
        self.mappings.is_empty()
    }

    /// `subject`'s token when it is a reply mapping of `exporter` made by this shard.
    fn token_of(&self, exporter: AccountId, subject: &[u8]) -> Option<[u8; TOKEN_LEN]> {
        if owner_of(subject) != Some(self.shard) {
            return None;
        }
        let prefix = &subject[REPLY_PREFIX.len()..REPLY_PREFIX.len() + ACCOUNT_PREFIX_LEN];
        if prefix != self.account_prefix(exporter) {
            return None;
        }
        subject[REPLY_LEN - TOKEN_LEN..].try_into().ok()
    }

    fn account_prefix(&self, account: AccountId) -> [u8; ACCOUNT_PREFIX_LEN] {
        let mut value = mix(self.seed ^ u64::from(account.0).wrapping_mul(0xD6E8_FEB8_6659_FD93));
        let mut prefix = [0u8; ACCOUNT_PREFIX_LEN];
        for slot in &mut prefix {
            *slot = DIGITS[(value % 62) as usize];
            value /= 62;
        }
        prefix
    }

    fn new_token(&mut self) -> [u8; TOKEN_LEN] {
        let mut token = [0u8; TOKEN_LEN];
        let shard = usize::from(self.shard.0);
        token[0] = DIGITS[shard / 62];
        token[1] = DIGITS[shard % 62];
        // xorshift64: unpredictable enough that a responder cannot guess another's token
        // by counting, which is all nats-server's math/rand gives too.
        let mut x = self.random;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.random = x;
        let mut value = mix(x);
        for slot in &mut token[SHARD_CHARS..] {
            *slot = DIGITS[(value % 62) as usize];
            value /= 62;
        }
        token
    }

    fn expire(&mut self, now: Instant) {
        while let Some(&(deadline, key)) = self.deadlines.front() {
            if deadline > now {
                return;
            }
            self.deadlines.pop_front();
            if self.mappings.get(&key).is_some_and(|mapping| mapping.deadline <= now) {
                self.mappings.remove(&key);
            }
        }
    }

    fn drop_oldest(&mut self) {
        while let Some((_, key)) = self.deadlines.pop_front() {
            if self.mappings.remove(&key).is_some() {
                return;
            }
        }
    }
}

/// The shard that owns the reply mapping `subject` names, if it is one's shape.
pub fn owner_of(subject: &[u8]) -> Option<ShardId> {
    if subject.len() != REPLY_LEN || !subject.starts_with(REPLY_PREFIX) || subject[REPLY_LEN - TOKEN_LEN - 1] != b'.' {
        return None;
    }
    let token = &subject[REPLY_LEN - TOKEN_LEN..];
    let digit = |byte: u8| DIGITS.iter().position(|&candidate| candidate == byte);
    let shard = digit(token[0])? * 62 + digit(token[1])?;
    Some(ShardId(u16::try_from(shard).ok()?))
}

/// splitmix64's finaliser.
fn mix(mut value: u64) -> u64 {
    value = (value ^ (value >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    value = (value ^ (value >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    value ^ (value >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(reply: &str) -> Answer {
        Answer { importer: AccountId(2), reply: Bytes::copy_from_slice(reply.as_bytes()) }
    }

    #[test]
    fn a_single_mapping_answers_once_and_names_its_shard() {
        let now = Instant::now();
        let mut table = ResponseMappings::new(ShardId(65), 7);
        let exporter = AccountId(1);
        let reply = table.open(exporter, answer("_INBOX.a"), ResponseType::Single, Duration::from_secs(5), now);
        assert_eq!(reply.len(), REPLY_LEN);
        assert!(reply.starts_with(b"_R_.") && reply[10] == b'.');
        assert_eq!(owner_of(&reply), Some(ShardId(65)));
        assert_eq!(table.peek(exporter, &reply, now), Some(&answer("_INBOX.a")));
        assert_eq!(table.respond(AccountId(3), &reply, now), None, "another account's subject is not it");
        assert_eq!(table.respond(exporter, &reply, now), Some(answer("_INBOX.a")));
        assert_eq!(table.respond(exporter, &reply, now), None, "the second response is dropped");
        assert!(table.is_empty());
        let other = ResponseMappings::new(ShardId(0), 7);
        assert_eq!(other.account_prefix(exporter), table.account_prefix(exporter), "one prefix per server");
        assert_eq!(owner_of(b"_R_.abcdef.00xyz"), None);
        assert_eq!(owner_of(b"_INBOX.abcdefghijklmno"), None);
    }

    #[test]
    fn stream_mappings_live_until_their_threshold_passes_without_a_response() {
        let start = Instant::now();
        let threshold = Duration::from_secs(2);
        let mut table = ResponseMappings::new(ShardId(0), 1);
        let exporter = AccountId(1);
        let reply = table.open(exporter, answer("_INBOX.s"), ResponseType::Stream, threshold, start);
        let single = table.open(exporter, answer("_INBOX.t"), ResponseType::Single, threshold, start);
        assert_ne!(reply, single);
        for step in 1..=3 {
            let now = start + Duration::from_secs(step);
            assert_eq!(table.respond(exporter, &reply, now), Some(answer("_INBOX.s")), "step {step}");
        }
        assert_eq!(table.len(), 1, "the unanswered single one expired");
        assert_eq!(table.respond(exporter, &reply, start + Duration::from_secs(6)), None);
        assert!(table.is_empty());
        let closed = table.open(exporter, answer("_INBOX.u"), ResponseType::Single, threshold, start);
        table.close(exporter, &closed);
        assert!(table.is_empty());
    }
}
