//! Where a new consumer starts, from its deliver policy and the stream (nats-server
//! `selectStartingSeqNo`).

use super::settings::DeliverPolicy;

use super::sequence::StreamSeq;
use super::settings::Settings;
use super::stream_view::StreamView;

/// The resolved start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StartPosition {
    /// First stream sequence to consider for new messages.
    pub next_seq: StreamSeq,
    /// `last_per_subject`: these are delivered first, then `next_seq` onwards.
    pub last_per_subject: Vec<StreamSeq>,
    /// The initial ack floor and delivered stream sequence (above the stream's last
    /// sequence only for a `by_start_sequence` start past the end).
    pub floor: StreamSeq,
}

impl StartPosition {
    pub fn resolve(settings: &Settings, stream: &dyn StreamView) -> StartPosition {
        let first = stream.first_seq().max(StreamSeq(1));
        let after_last = stream.last_seq().next();
        let next_seq = match settings.deliver_policy {
            DeliverPolicy::All => first,
            DeliverPolicy::New => after_last,
            DeliverPolicy::Last if settings.filters.is_all() => stream.last_seq().max(first).min(after_last),
            DeliverPolicy::Last => {
                let last_matching = stream.last_per_subject(&settings.filters).into_iter().max();
                last_matching.unwrap_or(after_last)
            }
            DeliverPolicy::ByStartSequence => StreamSeq(settings.opt_start_seq).max(first),
            DeliverPolicy::ByStartTime => {
                settings.opt_start_time_nanos.and_then(|nanos| stream.seq_for_time(nanos)).unwrap_or(after_last)
            }
            DeliverPolicy::LastPerSubject => {
                let mut seqs = stream.last_per_subject(&settings.filters);
                seqs.sort_unstable();
                seqs.dedup();
                let floor = seqs.first().map_or(stream.last_seq(), |seq| seq.previous());
                return StartPosition { next_seq: after_last, last_per_subject: seqs, floor };
            }
        };
        // `by_start_sequence` reports the position before its start even when that is
        // past the stream's end, as nats-server does (`opt_start_seq` 10^18 shows
        // delivered and ack floor 10^18 - 1); nothing was delivered, so the consumer
        // sequence stays 0. Other policies never start past the end + 1.
        let floor = match settings.deliver_policy {
            DeliverPolicy::ByStartSequence => next_seq.previous(),
            _ => next_seq.previous().min(stream.last_seq()),
        };
        StartPosition { next_seq, last_per_subject: Vec::new(), floor }
    }
}
