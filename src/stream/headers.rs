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
pub const MESSAGE_SCHEDULE: &str = "Nats-Schedule";
pub const MARKER_REASON: &str = "Nats-Marker-Reason";
pub const KV_OPERATION: &str = "KV-Operation";
pub const BATCH_ID: &str = "Nats-Batch-Id";
pub const BATCH_COMMIT: &str = "Nats-Batch-Commit";

/// The value of the first header named `name` (case-insensitive), trimmed.
pub fn header_value<'a>(block: &'a [u8], name: &str) -> Option<&'a str> {
    let text = std::str::from_utf8(block).ok()?;
    text.split("\r\n").skip(1).find_map(|line| {
        let (key, value) = line.split_once(':')?;
        key.trim().eq_ignore_ascii_case(name).then(|| value.trim())
    })
}

/// As [`header_value`], with only the leading whitespace trimmed, as nats-server's
/// `sliceHeader` reads a value: where trailing spaces make the value a different name.
pub fn header_value_untrimmed_end<'a>(block: &'a [u8], name: &str) -> Option<&'a str> {
    let text = std::str::from_utf8(block).ok()?;
    text.split("\r\n").skip(1).find_map(|line| {
        let (key, value) = line.split_once(':')?;
        key.trim().eq_ignore_ascii_case(name).then(|| value.trim_start())
    })
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
}
