//! The publish-time KV headers: `Nats-Rollup` (a message that replaces earlier ones on its
//! subject, or in the whole stream) and the `Nats-TTL` admission check. A rollup is
//! logged as a purge record right after its message, so recovery replays the same
//! removals.

use super::config::StreamConfig;
use super::edit::{purge_table, PurgeRequest};
use super::error::Error;
use super::headers::{PublishExpectations, Rollup};
use super::replay::encode_purge;
use super::stream::Stream;
use super::table::MessageTable;
use super::ttl::{parse_ttl, MessageTtl};
use crate::store::RecordKind;

impl Stream {
    /// Removes what a rollup message at `seq` replaces and logs it as a purge record, which
    /// replays to the same removals. Precondition: room was ensured for the record.
    pub(super) fn roll_up(
        &self,
        table: &mut MessageTable,
        rollup: Rollup,
        subject: &str,
        seq: u64,
        now: i64,
    ) -> Result<(), Error> {
        let request = PurgeRequest {
            filter: (rollup == Rollup::Subject).then(|| subject.to_string()),
            up_to_seq: Some(seq),
            keep: None,
        };
        let (filter, payload) = encode_purge(&request);
        self.append_op(RecordKind::Purge, seq, now, &filter, &payload)?;
        purge_table(table, &request);
        Ok(())
    }
}

/// The message's TTL, if it carries a valid one the stream allows.
pub(super) fn check_ttl(
    expected: &PublishExpectations<'_>,
    config: &StreamConfig,
) -> Result<Option<MessageTtl>, Error> {
    let Some(value) = expected.ttl else {
        return Ok(None);
    };
    if !config.allow_msg_ttl {
        return Err(Error::MessageTtlDisabled);
    }
    parse_ttl(value).map(Some).ok_or(Error::MessageTtlInvalid)
}

/// The message's rollup, if it asks for one the stream allows.
pub(super) fn check_rollup(expected: &PublishExpectations<'_>, config: &StreamConfig) -> Result<Option<Rollup>, Error> {
    let Some(value) = expected.rollup else {
        return Ok(None);
    };
    if !config.allow_rollup {
        return Err(Error::RollupNotPermitted);
    }
    Rollup::parse(value).map(Some).ok_or_else(|| Error::RollupInvalid { value: value.to_string() })
}
