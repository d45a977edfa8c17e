//! Mirrors and sources as the origin sees them: followers. As in nats-server, where a
//! follower reads through a consumer of the origin, a follower counts as interest on an
//! interest stream (a message it will copy is stored and kept until it has copied it)
//! and takes the messages of a workqueue stream (what it copied goes). Each read names
//! the follower and the last origin sequence it stored durably (its ack). A follower
//! not heard from for `FOLLOWER_INACTIVE` (deleted, or its config changed) no longer
//! counts, as nats-server's source consumers go after their inactive threshold.

use std::cell::RefCell;
use std::collections::HashMap;
use std::time::{Duration, Instant};

use super::origin_reads::OriginRequest;
use super::StreamService;
use crate::jetstream::policies::RetentionPolicy;
use crate::stream::subject_match::matches;

/// A follower's reads come every `ORIGIN_WAIT` (2 s) at most; this is several of them.
const FOLLOWER_INACTIVE: Duration = Duration::from_secs(10);

struct Follower {
    filters: Vec<String>,
    acked: u64,
    seen: Instant,
}

impl Follower {
    fn active(&self, now: Instant) -> bool {
        now.duration_since(self.seen) < FOLLOWER_INACTIVE
    }

    fn takes(&self, subject: &str) -> bool {
        self.filters.is_empty() || self.filters.iter().any(|filter| matches(filter, subject))
    }
}

/// Followers of this shard's streams: origin stream → follower name → follower.
#[derive(Default)]
pub struct Followers {
    by_origin: RefCell<HashMap<String, HashMap<String, Follower>>>,
}

impl Followers {
    /// Records a read; returns the follower's previous ack (0 when new).
    fn heard(&self, request: &OriginRequest) -> u64 {
        let mut by_origin = self.by_origin.borrow_mut();
        let followers = by_origin.entry(request.stream.clone()).or_default();
        let now = Instant::now();
        followers.retain(|_, follower| follower.active(now));
        let follower = followers.entry(request.follower.clone()).or_insert(Follower {
            filters: request.filters.clone(),
            acked: request.acked,
            seen: now,
        });
        let previous = follower.acked;
        follower.filters = request.filters.clone();
        follower.acked = follower.acked.max(request.acked);
        follower.seen = now;
        previous
    }

    /// Active followers of `origin`.
    pub fn count(&self, origin: &str) -> usize {
        let now = Instant::now();
        self.by_origin.borrow().get(origin).map_or(0, |followers| followers.values().filter(|f| f.active(now)).count())
    }

    /// Whether an active follower of `origin` copies messages on `subject`.
    pub fn interested_in(&self, origin: &str, subject: &str) -> bool {
        let now = Instant::now();
        let by_origin = self.by_origin.borrow();
        by_origin.get(origin).is_some_and(|followers| followers.values().any(|f| f.active(now) && f.takes(subject)))
    }

    /// Whether an active follower of `origin` other than `except` has yet to copy
    /// message `seq` on `subject`.
    pub fn needs(&self, origin: &str, seq: u64, subject: &str, except: Option<&str>) -> bool {
        let now = Instant::now();
        let by_origin = self.by_origin.borrow();
        by_origin.get(origin).is_some_and(|followers| {
            followers
                .iter()
                .filter(|(name, _)| Some(name.as_str()) != except)
                .any(|(_, f)| f.active(now) && f.takes(subject) && f.acked < seq)
        })
    }

    /// Forgets the followers of a deleted origin.
    pub fn forget_origin(&self, origin: &str) {
        self.by_origin.borrow_mut().remove(origin);
    }
}

impl StreamService {
    /// A follower's read: it has stored everything it takes up to `request.acked`. On a
    /// workqueue origin that goes; on an interest origin it goes unless a consumer or
    /// another follower still needs it.
    pub(super) async fn follower_acked(&self, request: &OriginRequest) {
        let previous = self.sourcing.followers.heard(request);
        if request.acked <= previous {
            return;
        }
        let Ok(record) = self.record(&request.stream) else { return };
        let retention = record.config.retention;
        if retention == RetentionPolicy::Limits {
            return;
        }
        let Ok(stream) = self.engine.stream(&request.stream) else { return };
        let until = request.acked.min(stream.last_seq());
        let mut seq = (previous + 1).max(stream.state_first_seq());
        while let Some(summary) = stream.next_matching(seq, until, &request.filters) {
            seq = summary.seq + 1;
            let removable = stream
                .with_subject(summary.seq, |subject| {
                    retention == RetentionPolicy::WorkQueue
                        || (!self.consumers.needed_by_any(&request.stream, summary.seq, subject, None)
                            && !self.sourcing.followers.needs(
                                &request.stream,
                                summary.seq,
                                subject,
                                Some(&request.follower),
                            ))
                })
                .unwrap_or(false);
            if removable {
                self.remove_for_retention(&stream, summary.seq).await;
            }
        }
    }
}
