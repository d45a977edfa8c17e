//! The JetStream API level jetcore implements (ADR-44), and the `Nats-Required-Api-Level`
//! header with which a client asks any `$JS.API` request to be refused by a server below
//! a level.
//!
//! The level is that of the features jetcore honours, not nats-server's (2.15.1 reports
//! 5): level 1 (2.11: per-message TTLs, subject delete markers, consumer pause, priority
//! groups under all three policies (`overflow`, `pinned_client` with `CONSUMER.UNPIN`, and
//! 2.12's `prioritized`), this header). Level 2 (ADR-44: the 2.12 features)
//! is the 2.12 set, all built: atomic batches, counters (summed through sources as
//! nats-server's are, `stream/counting.rs`), message schedules (cron in IANA time zones
//! with DST as nats-server computes it, `stream/time_zone.rs`) and `persist_mode: async`
//! (acks before the fdatasync, `service/convert.rs`). So jetcore reports 2, and INFO's
//! version says 2.12.0 (`server::info::NATS_COMPATIBLE_VERSION`), the release of that set.
//! The `OUT_OF_STORAGE` advisory is sent (once per full-disk episode of a stream), though
//! jetcore serves on where nats-server disables JetStream.
//! Fast batches (`allow_batched`, level 4) are honoured too (`jetstream/service/fast_batch.rs`),
//! and a stream that uses them asks for level 4 (`_nats.req.level`) as nats-server's does.
//! A feature it does not build is refused at create, never accepted and ignored;
//! `tests/jetstream_differences.rs` holds the list.

use crate::protocol::headers::parse_header_block;

/// Reported in `$JS.API.INFO`, `/jsz` and each config's `_nats.level`.
pub const API_LEVEL: u32 = 2;

pub const REQUIRED_API_LEVEL_HEADER: &[u8] = b"Nats-Required-Api-Level";

/// Whether a request carrying `headers` must be refused: its required level is above
/// ours, or is not an integer (nats-server refuses what `strconv.Atoi` cannot read). No
/// header, or an empty value, requires nothing.
pub fn refuses(headers: Option<&[u8]>) -> bool {
    let Some(block) = headers.and_then(|block| parse_header_block(block).ok()) else {
        return false;
    };
    match block.get(REQUIRED_API_LEVEL_HEADER) {
        None | Some(b"") => false,
        Some(value) => std::str::from_utf8(value)
            .ok()
            .and_then(|text| text.parse::<i64>().ok())
            .is_none_or(|level| level > i64::from(API_LEVEL)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(value: &str) -> Vec<u8> {
        format!("NATS/1.0\r\nNats-Required-Api-Level: {value}\r\n\r\n").into_bytes()
    }

    #[test]
    fn levels_as_nats_server_reads_them() {
        assert!(!refuses(None));
        for accepted in ["", "0", "-1", "1", "+1", " 1", "2"] {
            assert!(!refuses(Some(&block(accepted))), "{accepted:?}");
        }
        for refused in ["3", "abc", "1.0", "99999999999999999999"] {
            assert!(refuses(Some(&block(refused))), "{refused:?}");
        }
        assert!(!refuses(Some(b"NATS/1.0\r\nOther: 9\r\n\r\n")));
    }
}
