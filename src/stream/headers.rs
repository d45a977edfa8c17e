//! Reading JetStream control headers (`Nats-Msg-Id`, `Nats-Expected-*`, `Nats-Rollup`,
//! `Nats-TTL`) from a raw NATS
//! header block (`NATS/1.0\r\nKey: Value\r\n...\r\n`). Private to `stream` until
//! `protocol/` provides the shared parser. Malformed lines are ignored, never a panic.

pub const MSG_ID: &str = "Nats-Msg-Id";
pub const EXPECTED_STREAM: &str = "Nats-Expected-Stream";
pub const EXPECTED_LAST_SEQUENCE: &str = "Nats-Expected-Last-Sequence";
pub const EXPECTED_LAST_SUBJECT_SEQUENCE: &str = "Nats-Expected-Last-Subject-Sequence";
pub const EXPECTED_LAST_SUBJECT_SEQUENCE_SUBJECT: &str = "Nats-Expected-Last-Subject-Sequence-Subject";
pub const EXPECTED_LAST_MSG_ID: &str = "Nats-Expected-Last-Msg-Id";
pub const ROLLUP: &str = "Nats-Rollup";
pub const MESSAGE_TTL: &str = "Nats-TTL";
pub const MESSAGE_INCREMENT: &str = "Nats-Incr";
/// A counter's last total from each source, on a counter stream that sources others.
pub const COUNTER_SOURCES: &str = "Nats-Counter-Sources";
/// Stamped by a source on each copy: `<stream> <seq> <filter> <dest> <subject> <ident>`.
pub const STREAM_SOURCE: &str = "Nats-Stream-Source";
pub const MESSAGE_SCHEDULE: &str = "Nats-Schedule";
pub const MARKER_REASON: &str = "Nats-Marker-Reason";
pub const KV_OPERATION: &str = "KV-Operation";
pub const BATCH_ID: &str = "Nats-Batch-Id";
pub const BATCH_COMMIT: &str = "Nats-Batch-Commit";

/// The value of the first header named `name` (case-insensitive), trimmed.
pub fn header_value<'a>(block: &'a [u8], name: &str) -> Option<&'a str> {
    header_value_untrimmed_end(block, name).map(str::trim_end)
}

/// As [`header_value`], with only the leading whitespace trimmed, as nats-server's
/// `sliceHeader` reads a value: where trailing spaces make the value a different name.
pub fn header_value_untrimmed_end<'a>(block: &'a [u8], name: &str) -> Option<&'a str> {
    if block.is_empty() {
        return None; // most publishes have no headers: no searcher to build
    }
    let text = std::str::from_utf8(block).ok()?;
    text.split("\r\n").skip(1).find_map(|line| {
        let (key, value) = line.split_once(':')?;
        key.trim().eq_ignore_ascii_case(name).then(|| value.trim_start())
    })
}

/// `block` with the first header named `name` (case-insensitive) set to `value` where it
/// stands, or added last when there is none, as nats-server's `setHeader` does.
pub fn with_header_value(block: &[u8], name: &str, value: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(block.len() + name.len() + value.len() + 16);
    let mut lines = block.split(|byte| *byte == b'\n').map(|line| line.strip_suffix(b"\r").unwrap_or(line));
    match lines.next().filter(|first| first.starts_with(b"NATS/1.0")) {
        Some(first) => out.extend_from_slice(first),
        None => out.extend_from_slice(b"NATS/1.0"),
    }
    out.extend_from_slice(b"\r\n");
    let mut set = false;
    for line in lines.filter(|line| !line.is_empty()) {
        let named = |key: &[u8]| std::str::from_utf8(key).is_ok_and(|key| key.trim().eq_ignore_ascii_case(name));
        match line.iter().position(|byte| *byte == b':') {
            Some(colon) if !set && named(&line[..colon]) => {
                out.extend_from_slice(&line[..colon]);
                out.extend_from_slice(format!(": {value}").as_bytes());
                set = true;
            }
            _ => out.extend_from_slice(line),
        }
        out.extend_from_slice(b"\r\n");
    }
    if !set {
        out.extend_from_slice(format!("{name}: {value}\r\n").as_bytes());
    }
    out.extend_from_slice(b"\r\n");
    out
}

/// The JetStream publish expectations carried by a header block.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct PublishExpectations<'a> {
    pub msg_id: Option<&'a str>,
    pub stream: Option<&'a str>,
    pub last_seq: Option<u64>,
    pub last_subject_seq: Option<u64>,
    /// The subject (wildcards allowed) `last_subject_seq` is about, instead of the
    /// message's own.
    pub last_subject_seq_subject: Option<&'a str>,
    pub last_msg_id: Option<&'a str>,
    /// The raw `Nats-Rollup` value (`sub` or `all`; anything else is refused).
    pub rollup: Option<&'a str>,
    /// The raw `Nats-TTL` value (see `ttl::parse_ttl`).
    pub ttl: Option<&'a str>,
    /// A delete marker: `Nats-Marker-Reason` set, or a KV purge (`KV-Operation: PURGE`),
    /// as nats-server's `sdm.go` tells them. Removing one never leaves another marker.
    pub marker: bool,
}

/// What a `Nats-Rollup` message replaces once stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rollup {
    /// Every earlier message on the same subject.
    Subject,
    /// Every earlier message in the stream.
    All,
}

impl Rollup {
    /// `sub` / `all`, case-insensitive like nats-server.
    pub fn parse(value: &str) -> Option<Rollup> {
        if value.eq_ignore_ascii_case("sub") {
            Some(Rollup::Subject)
        } else if value.eq_ignore_ascii_case("all") {
            Some(Rollup::All)
        } else {
            None
        }
    }
}

impl<'a> PublishExpectations<'a> {
    pub fn from_headers(block: &'a [u8]) -> PublishExpectations<'a> {
        if block.is_empty() {
            return PublishExpectations::default();
        }
        // nats-server reads these with parseInt64, which gives -1 for anything but
        // digits: an unparseable value then never matches (10071), it is not ignored.
        let number =
            |name| header_value(block, name).filter(|v| !v.is_empty()).map(|v: &str| go_uint(v).unwrap_or(u64::MAX));
        // nats-server reads an empty value as no header at all.
        let text = |name| header_value(block, name).filter(|v: &&str| !v.is_empty());
        PublishExpectations {
            msg_id: text(MSG_ID),
            stream: text(EXPECTED_STREAM),
            last_seq: number(EXPECTED_LAST_SEQUENCE),
            last_subject_seq: number(EXPECTED_LAST_SUBJECT_SEQUENCE),
            last_subject_seq_subject: header_value(block, EXPECTED_LAST_SUBJECT_SEQUENCE_SUBJECT)
                .filter(|v| !v.is_empty()),
            // nats-server ignores an empty expected id rather than comparing it.
            last_msg_id: header_value(block, EXPECTED_LAST_MSG_ID).filter(|v| !v.is_empty()),
            rollup: text(ROLLUP),
            ttl: text(MESSAGE_TTL),
            marker: header_value(block, MARKER_REASON).is_some_and(|v| !v.is_empty())
                || header_value(block, KV_OPERATION) == Some("PURGE"),
        }
    }
}

/// Decimal digits only, as Go's `parseInt64` in nats-server accepts them.
fn go_uint(value: &str) -> Option<u64> {
    if value.is_empty() || !value.bytes().all(|byte| byte.is_ascii_digit()) {
        return None;
    }
    value.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_values_case_insensitively() {
        let block = b"NATS/1.0\r\nnats-msg-id: abc \r\nNats-Expected-Last-Sequence: 7\r\n\r\n";
        let expectations = PublishExpectations::from_headers(block);
        assert_eq!(expectations.msg_id, Some("abc"));
        assert_eq!(expectations.last_seq, Some(7));
        assert_eq!(expectations.last_msg_id, None);
    }

    #[test]
    fn a_header_is_set_where_it_stands_or_added_last() {
        let block = b"NATS/1.0\r\nNats-Incr: +5\r\nNats-Stream-Source: A 1 > > a x\r\n\r\n";
        let set = with_header_value(block, "Nats-Incr", "5");
        assert_eq!(set, b"NATS/1.0\r\nNats-Incr: 5\r\nNats-Stream-Source: A 1 > > a x\r\n\r\n");
        let added = with_header_value(&set, "Nats-Counter-Sources", r#"{"A":{"a":"5"}}"#);
        let expected = concat!(
            "NATS/1.0\r\nNats-Incr: 5\r\nNats-Stream-Source: A 1 > > a x\r\n",
            "Nats-Counter-Sources: {\"A\":{\"a\":\"5\"}}\r\n\r\n"
        );
        assert_eq!(String::from_utf8(added).unwrap(), expected);
        assert_eq!(with_header_value(b"", "K", "v"), b"NATS/1.0\r\nK: v\r\n\r\n");
    }
}
