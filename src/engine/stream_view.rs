//! The consumer's read-only view of a stream ([`StreamView`]) over the engine's
//! in-memory message table: no I/O. The embedded consumers and the server's use it. It
//! never shows a message beyond `visible_last`, the last sequence known to be durable, so
//! a consumer never delivers a message that a crash could still take back.

use crate::consumer::{Filters, MessageMeta, StreamSeq, StreamView};
use crate::stream::{MessageSummary, Stream};

pub struct EngineStreamView<'a> {
    pub stream: &'a Stream,
    /// Highest durable sequence (publishes stored but not yet synced are hidden).
    pub visible_last: u64,
}

impl EngineStreamView<'_> {
    pub(crate) fn meta(summary: MessageSummary) -> MessageMeta {
        MessageMeta {
            seq: StreamSeq(summary.seq),
            timestamp_nanos: summary.timestamp_ns,
            subject_bytes: summary.subject_bytes,
            // The table keeps the stored size only; headers count as payload here.
            header_bytes: 0,
            payload_bytes: summary.content_bytes,
        }
    }
}

impl StreamView for EngineStreamView<'_> {
    fn first_seq(&self) -> StreamSeq {
        let first = self.stream.state_first_seq();
        StreamSeq(first.min(self.visible_last + 1))
    }

    fn last_seq(&self) -> StreamSeq {
        StreamSeq(self.visible_last)
    }

    fn message(&self, seq: StreamSeq) -> Option<MessageMeta> {
        if seq.get() > self.visible_last {
            return None;
        }
        self.stream.message_summary(seq.get()).map(Self::meta)
    }

    fn next_matching(&self, from: StreamSeq, filters: &Filters) -> Option<MessageMeta> {
        self.stream.next_matching(from.get(), self.visible_last, filters.subjects()).map(Self::meta)
    }

    fn seq_for_time(&self, unix_nanos: i64) -> Option<StreamSeq> {
        let seq = self.stream.seq_at_time(unix_nanos);
        (seq <= self.visible_last).then_some(StreamSeq(seq))
    }

    fn last_per_subject(&self, filters: &Filters) -> Vec<StreamSeq> {
        self.stream.last_per_subject(self.visible_last, filters.subjects()).into_iter().map(StreamSeq).collect()
    }

    fn num_pending(&self, from: StreamSeq, filters: &Filters) -> u64 {
        self.stream.count_matching(from.get(), self.visible_last, filters.subjects())
    }
}
