//! Counter streams (`allow_msg_counter`, ADR-49): a client's message carries
//! `Nats-Incr: <signed decimal>` and no body, and is stored with the body
//! `{"val":"<total>"}`, the total being the subject's last stored total plus the increment.
//! Totals are integers of any size, as nats-server's `big.Int`.
//!
//! The total of a subject is its last stored message, so recovery needs nothing: the
//! stream keeps the totals it has read or written, keyed by the sequence they were read
//! at, and reads a subject's last message again when that is no longer the one it knows
//! (a delete, a purge, a restart).

use std::collections::HashMap;
use std::fmt;

use super::error::Error;
use super::headers::{
    header_value, EXPECTED_LAST_MSG_ID, EXPECTED_LAST_SEQUENCE, EXPECTED_LAST_SUBJECT_SEQUENCE,
    EXPECTED_LAST_SUBJECT_SEQUENCE_SUBJECT, EXPECTED_STREAM, MESSAGE_INCREMENT, ROLLUP,
};

/// Headers nats-server refuses beside `Nats-Incr` (as an invalid increment): a counter's
/// message must apply whatever came before it.
const HEADERS_REFUSED_WITH_INCREMENT: [&str; 6] = [
    EXPECTED_STREAM,
    EXPECTED_LAST_SEQUENCE,
    EXPECTED_LAST_SUBJECT_SEQUENCE,
    EXPECTED_LAST_SUBJECT_SEQUENCE_SUBJECT,
    EXPECTED_LAST_MSG_ID,
    ROLLUP,
];

/// A signed integer of any size: a sign and decimal digits without leading zeros (zero
/// has no digits and is never negative).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Total {
    negative: bool,
    digits: Vec<u8>,
}

impl Total {
    /// `[+-]?[0-9]+`, as Go's `big.Int.SetString(text, 10)` reads it.
    pub fn parse(text: &str) -> Option<Total> {
        let (negative, digits) = match text.as_bytes().first() {
            Some(b'-') => (true, &text[1..]),
            Some(b'+') => (false, &text[1..]),
            _ => (false, text),
        };
        if digits.is_empty() || !digits.bytes().all(|byte| byte.is_ascii_digit()) {
            return None;
        }
        let digits = digits.trim_start_matches('0').as_bytes().to_vec();
        Some(Total { negative: negative && !digits.is_empty(), digits })
    }

    /// The total of a stored counter message's body (`{"val":"N"}`); zero for a body
    /// that holds none (nats-server counts from zero then).
    pub fn from_body(body: &[u8]) -> Total {
        let value: Option<serde_json::Value> = serde_json::from_slice(body).ok();
        let text = value.as_ref().and_then(|value| value.get("val")).and_then(|value| value.as_str());
        text.and_then(Total::parse).unwrap_or_default()
    }

    pub fn plus(&self, other: &Total) -> Total {
        if self.negative == other.negative {
            return Total { negative: self.negative, digits: add_digits(&self.digits, &other.digits) };
        }
        let (larger, smaller) = match compare_digits(&self.digits, &other.digits) {
            std::cmp::Ordering::Equal => return Total::default(),
            std::cmp::Ordering::Greater => (self, other),
            std::cmp::Ordering::Less => (other, self),
        };
        Total { negative: larger.negative, digits: subtract_digits(&larger.digits, &smaller.digits) }
    }

    /// The stored body: `{"val":"<total>"}`.
    pub fn body(&self) -> Vec<u8> {
        format!("{{\"val\":\"{self}\"}}").into_bytes()
    }
}

impl fmt::Display for Total {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.digits.is_empty() {
            return f.write_str("0");
        }
        if self.negative {
            f.write_str("-")?;
        }
        // Only ASCII digits are ever stored.
        f.write_str(std::str::from_utf8(&self.digits).unwrap_or("0"))
    }
}

fn compare_digits(first: &[u8], second: &[u8]) -> std::cmp::Ordering {
    first.len().cmp(&second.len()).then_with(|| first.cmp(second))
}

fn add_digits(first: &[u8], second: &[u8]) -> Vec<u8> {
    let mut sum = Vec::with_capacity(first.len().max(second.len()) + 1);
    let (mut left, mut right, mut carry) = (first.iter().rev(), second.iter().rev(), 0u8);
    loop {
        let (a, b) = (left.next(), right.next());
        if a.is_none() && b.is_none() {
            break;
        }
        let digit = a.map_or(0, |a| a - b'0') + b.map_or(0, |b| b - b'0') + carry;
        sum.push(b'0' + digit % 10);
        carry = digit / 10;
    }
    if carry > 0 {
        sum.push(b'0' + carry);
    }
    sum.reverse();
    sum
}

/// `larger - smaller`; precondition: `larger` ≥ `smaller`.
fn subtract_digits(larger: &[u8], smaller: &[u8]) -> Vec<u8> {
    let mut difference = Vec::with_capacity(larger.len());
    let (mut right, mut borrow) = (smaller.iter().rev(), 0i8);
    for a in larger.iter().rev() {
        let b = right.next().map_or(0, |b| (b - b'0') as i8);
        let mut digit = (a - b'0') as i8 - b - borrow;
        borrow = i8::from(digit < 0);
        if digit < 0 {
            digit += 10;
        }
        difference.push(b'0' + digit as u8);
    }
    while difference.last() == Some(&b'0') {
        difference.pop();
    }
    difference.reverse();
    difference
}

/// A client's `Nats-Incr`, checked in nats-server's order: the value, whether the stream
/// counts, the empty body, then the headers a counter refuses. `None`: no increment.
pub(super) fn check_increment(headers: &[u8], payload: &[u8], counts: bool) -> Result<Option<Total>, Error> {
    let Some(value) = header_value(headers, MESSAGE_INCREMENT).filter(|value| !value.is_empty()) else {
        return Ok(None);
    };
    let increment = Total::parse(value).ok_or(Error::MessageCounterIncrementInvalid)?;
    if !counts {
        return Err(Error::MessageCountersDisabled);
    }
    if !payload.is_empty() {
        return Err(Error::MessageCounterHasPayload);
    }
    let refused = |name: &&str| header_value(headers, name).is_some_and(|value| !value.is_empty());
    if HEADERS_REFUSED_WITH_INCREMENT.iter().any(refused) {
        return Err(Error::MessageCounterIncrementInvalid);
    }
    Ok(Some(increment))
}

/// The totals a counter stream knows, by subject, each with the sequence of the message
/// that holds it.
#[derive(Default)]
pub(super) struct KnownTotals {
    by_subject: HashMap<Box<str>, (u64, Total)>,
}

impl KnownTotals {
    /// The total stored at `seq` on `subject`, if known.
    pub fn at(&self, subject: &str, seq: u64) -> Option<&Total> {
        self.by_subject.get(subject).filter(|(known_seq, _)| *known_seq == seq).map(|(_, total)| total)
    }

    pub fn record(&mut self, subject: &str, seq: u64, total: Total) {
        match self.by_subject.get_mut(subject) {
            Some(entry) => *entry = (seq, total),
            None => {
                self.by_subject.insert(subject.into(), (seq, total));
            }
        }
    }

    /// Keeps only the subjects `is_live` still has, once they outnumber them by far.
    pub fn prune(&mut self, live_subjects: usize, is_live: impl Fn(&str, u64) -> bool) {
        if self.by_subject.len() > 2 * live_subjects + crate::limits::TTL_INDEX_STALE_ENTRIES_MAX as usize {
            self.by_subject.retain(|subject, (seq, _)| is_live(subject, *seq));
        }
    }

    pub fn clear(&mut self) {
        self.by_subject.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sum(first: &str, second: &str) -> String {
        Total::parse(first).unwrap().plus(&Total::parse(second).unwrap()).to_string()
    }

    #[test]
    fn adds_and_subtracts_integers_of_any_size() {
        assert_eq!(sum("1", "+5"), "6");
        assert_eq!(sum("6", "-10"), "-4");
        assert_eq!(sum("-4", "4"), "0");
        assert_eq!(sum("-0", "0"), "0");
        assert_eq!(sum("007", "3"), "10");
        assert_eq!(sum("99999999999999999999999999999", "1"), "100000000000000000000000000000");
        assert_eq!(sum("-100000000000000000000000000000", "1"), "-99999999999999999999999999999");
        assert_eq!(sum("1000", "-1"), "999");
    }

    #[test]
    fn refuses_what_big_int_refuses() {
        for text in ["", "+", "-", "+-1", "1_000", "0x10", "1.5", "1e3", " 3", "１"] {
            assert_eq!(Total::parse(text), None, "{text:?}");
        }
    }

    #[test]
    fn reads_its_own_body() {
        let total = Total::parse("-42").unwrap();
        assert_eq!(total.body(), br#"{"val":"-42"}"#);
        assert_eq!(Total::from_body(&total.body()), total);
        assert_eq!(Total::from_body(b"junk"), Total::default());
    }
}
