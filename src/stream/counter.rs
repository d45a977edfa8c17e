//! Counter streams (`allow_msg_counter`, ADR-49): a client's message carries
//! `Nats-Incr: <signed decimal>` and no body, and is stored with the body
//! `{"val":"<total>"}`, the total being the subject's last stored total plus the increment.
//! Totals are integers of any size, as nats-server's `big.Int`.
//!
//! A counter stream that sources other counter streams sums them (ADR-49): a sourced
//! message carries its origin's total, and the stream adds the difference from that
//! origin's previous total on the subject, so each source's contribution counts once.
//! Each origin's last total is kept in the stored message's `Nats-Counter-Sources`
//! header (`{"<stream>":{"<origin subject>":"<total>"}}`), and the sourced `Nats-Incr` is
//! replaced by the difference applied, as nats-server stores them.
//!
//! The total of a subject (and its sources) is its last stored message, so recovery
//! needs nothing: the stream keeps the totals it has read or written, keyed by the
//! sequence they were read at, and reads a subject's last message again when that is no
//! longer the one it knows (a delete, a purge, a restart).

use std::collections::{BTreeMap, HashMap};
use std::fmt;

use super::error::Error;
use super::headers::{
    header_value, COUNTER_SOURCES, EXPECTED_LAST_MSG_ID, EXPECTED_LAST_SEQUENCE, EXPECTED_LAST_SUBJECT_SEQUENCE,
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

    /// The total of a counter message's body (`{"val":"N"}`), read as Go's
    /// `json.Unmarshal` into nats-server's `CounterValue`: `None` (a broken counter) for
    /// a body that is no JSON object or whose `val` is not a string; zero for one without
    /// a `val` or with one that is no integer (nats-server counts from zero then).
    pub fn from_body(body: &[u8]) -> Option<Total> {
        let value: serde_json::Value = serde_json::from_slice(body).ok()?;
        let object = match &value {
            serde_json::Value::Object(object) => object,
            serde_json::Value::Null => return Some(Total::default()),
            _ => return None,
        };
        // Go matches a field name exactly first, then case-insensitively.
        let field = object
            .get("val")
            .or_else(|| object.iter().find(|(key, _)| key.eq_ignore_ascii_case("val")).map(|(_, v)| v));
        match field {
            None | Some(serde_json::Value::Null) => Some(Total::default()),
            Some(serde_json::Value::String(text)) => Some(Total::parse(text).unwrap_or_default()),
            Some(_) => None,
        }
    }

    pub fn negated(&self) -> Total {
        Total { negative: !self.negative && !self.digits.is_empty(), digits: self.digits.clone() }
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

/// Each source's last total, by origin stream and origin subject: the JSON of
/// `Nats-Counter-Sources`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CounterSources {
    by_stream: BTreeMap<String, BTreeMap<String, String>>,
}

impl CounterSources {
    /// A `Nats-Counter-Sources` value; `None` (a broken counter) for anything but an
    /// object of objects of strings.
    pub fn parse(value: &str) -> Option<CounterSources> {
        let by_stream: Option<BTreeMap<String, Option<BTreeMap<String, String>>>> = serde_json::from_str(value).ok()?;
        let by_stream = by_stream.unwrap_or_default().into_iter().map(|(stream, s)| (stream, s.unwrap_or_default()));
        Some(CounterSources { by_stream: by_stream.collect() })
    }

    pub fn is_empty(&self) -> bool {
        self.by_stream.is_empty()
    }

    /// Records `total` as origin `stream`'s last on `subject`; returns the one before
    /// (zero: none).
    pub fn replace(&mut self, stream: &str, subject: &str, total: &Total) -> Total {
        let subjects = self.by_stream.entry(stream.to_string()).or_default();
        let previous = subjects.insert(subject.to_string(), total.to_string());
        previous.and_then(|text| Total::parse(&text)).unwrap_or_default()
    }

    /// The header's value, as Go's `json.Marshal` writes the map: keys sorted, `<`, `>`
    /// and `&` escaped.
    pub fn header_value(&self) -> String {
        let mut out = String::from("{");
        for (index, (stream, subjects)) in self.by_stream.iter().enumerate() {
            if index > 0 {
                out.push(',');
            }
            push_go_json_string(&mut out, stream);
            out.push_str(":{");
            for (index, (subject, total)) in subjects.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                push_go_json_string(&mut out, subject);
                out.push(':');
                push_go_json_string(&mut out, total);
            }
            out.push('}');
        }
        out.push('}');
        out
    }
}

/// `text` as a JSON string the way Go's `encoding/json` escapes it (HTML-safe).
fn push_go_json_string(out: &mut String, text: &str) {
    use std::fmt::Write;
    out.push('"');
    for character in text.chars() {
        match character {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                let _ = write!(out, "\\u{:04x}", u32::from(character));
            }
            control if u32::from(control) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", u32::from(control));
            }
            other => out.push(other),
        }
    }
    out.push('"');
}

/// The origin (stream, subject) of a sourced message from its `Nats-Stream-Source`
/// value: the first field and the fifth (the subject the origin stored it under; the
/// message's own `subject` when the value has fewer fields).
pub fn source_origin<'a>(value: &'a str, subject: &'a str) -> (&'a str, &'a str) {
    let mut fields = value.split(' ');
    let stream = fields.next().unwrap_or("");
    (stream, fields.nth(3).unwrap_or(subject))
}

/// What a counter stream knows of a subject: its total and the sources' shares in it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KnownTotal {
    pub total: Total,
    pub sources: CounterSources,
}

impl KnownTotal {
    /// What a stored counter message holds; `None` for a broken one (nats-server's
    /// `message counter is broken`).
    pub fn of_message(headers: &[u8], body: &[u8]) -> Option<KnownTotal> {
        let total = Total::from_body(body)?;
        let sources = match header_value(headers, COUNTER_SOURCES).filter(|value| !value.is_empty()) {
            Some(value) => CounterSources::parse(value)?,
            None => CounterSources::default(),
        };
        Some(KnownTotal { total, sources })
    }
}

/// The totals a counter stream knows, by subject, each with the sequence of the message
/// that holds it.
#[derive(Default)]
pub(super) struct KnownTotals {
    by_subject: HashMap<Box<str>, (u64, KnownTotal)>,
}

impl KnownTotals {
    /// What is stored at `seq` on `subject`, if known.
    pub fn at(&self, subject: &str, seq: u64) -> Option<&KnownTotal> {
        self.by_subject.get(subject).filter(|(known_seq, _)| *known_seq == seq).map(|(_, known)| known)
    }

    pub fn record(&mut self, subject: &str, seq: u64, known: KnownTotal) {
        match self.by_subject.get_mut(subject) {
            Some(entry) => *entry = (seq, known),
            None => {
                self.by_subject.insert(subject.into(), (seq, known));
            }
        }
    }

    pub fn forget(&mut self, subject: &str) {
        self.by_subject.remove(subject);
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
        assert_eq!(Total::from_body(&total.body()), Some(total));
        assert_eq!(Total::from_body(b"{}"), Some(Total::default()));
        assert_eq!(Total::from_body(br#"{"VAL":"7"}"#), Total::parse("7"));
        assert_eq!(Total::from_body(br#"{"val":"x"}"#), Some(Total::default()));
        for broken in [&b"junk"[..], b"", b"[1]", br#"{"val":7}"#] {
            assert_eq!(Total::from_body(broken), None, "{broken:?}");
        }
    }

    #[test]
    fn sources_read_and_write_as_nats_server_stores_them() {
        let mut sources = CounterSources::default();
        assert_eq!(sources.replace("B", "b.hits", &Total::parse("3").unwrap()), Total::default());
        assert_eq!(sources.replace("A", "a.hits", &Total::parse("5").unwrap()), Total::default());
        assert_eq!(sources.replace("A", "a.hits", &Total::parse("3").unwrap()), Total::parse("5").unwrap());
        let value = sources.header_value();
        assert_eq!(value, r#"{"A":{"a.hits":"3"},"B":{"b.hits":"3"}}"#);
        assert_eq!(CounterSources::parse(&value), Some(sources));
        for broken in ["", "[]", r#"{"A":"3"}"#, r#"{"A":{"a":3}}"#] {
            assert_eq!(CounterSources::parse(broken), None, "{broken:?}");
        }
        let mut odd = CounterSources::default();
        odd.replace("S", "a<b>&\"c\"", &Total::default());
        assert_eq!(odd.header_value(), r#"{"S":{"a\u003cb\u003e\u0026\"c\"":"0"}}"#);
    }

    #[test]
    fn a_source_header_names_the_origin_stream_and_subject() {
        assert_eq!(source_origin("A 2 a.hits all.hits a.hits hOUQzu7m", "all.hits"), ("A", "a.hits"));
        assert_eq!(source_origin("A 2 > >", "all.hits"), ("A", "all.hits"));
        assert_eq!(Total::parse("5").unwrap().negated().to_string(), "-5");
        assert_eq!(Total::default().negated().to_string(), "0");
    }
}
