//! The receiving loop shared by subscribers, responders and consumers: read in big chunks,
//! let a handler look at each message, flush whatever it wrote, and stop on the run's goal.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use super::RunState;
use crate::connection::{Connection, Flow, OutboundWriter, Wait};
use crate::error::Result;
use crate::limits::{PROGRESS_BATCH_MESSAGES, RECEIVE_IDLE_TIMEOUT, RECEIVE_POLL_INTERVAL};
use crate::progress::Counters;
use crate::protocol::Message;

/// When a receiver is done.
pub enum Goal {
    /// Every message the publishers published (known once they all finished).
    AllPublished(Arc<RunState>),
    /// A total shared by several receivers (e.g. consumers of one durable consumer).
    SharedTotal { total: u64, consumed: Arc<AtomicU64> },
    /// Until the run state says stop (responders).
    UntilStopped(Arc<RunState>),
}

/// What one receiver saw.
pub struct ReceiveReport {
    pub received: u64,
    pub first_at: Option<Instant>,
    pub last_at: Option<Instant>,
    /// Set when the receiver gave up before its goal.
    pub shortfall: Option<String>,
}

/// Receives until `goal` (or a deadline, or idleness). `on_message` returns whether the
/// message counts (status messages such as heartbeats do not).
pub fn receive(
    connection: &mut Connection,
    goal: &Goal,
    deadline: Option<Instant>,
    counters: &Counters,
    mut on_message: impl FnMut(&mut OutboundWriter, Message<'_>) -> Result<bool>,
) -> Result<ReceiveReport> {
    let mut report = ReceiveReport { received: 0, first_at: None, last_at: None, shortfall: None };
    let mut last_activity = Instant::now();
    let mut unreported = 0u64;
    loop {
        let mut counted = 0u64;
        let poll_until = Instant::now() + RECEIVE_POLL_INTERVAL;
        connection.poll(Wait::Until(poll_until), |writer, message| {
            counted += u64::from(on_message(writer, message)?);
            Ok(Flow::Continue)
        })?;
        connection.writer.flush()?;
        let now = Instant::now();
        if counted > 0 {
            report.first_at.get_or_insert(now);
            report.last_at = Some(now);
            report.received += counted;
            last_activity = now;
            unreported += counted;
            if unreported >= PROGRESS_BATCH_MESSAGES {
                counters.add_received(unreported);
                unreported = 0;
            }
        }
        if let Goal::SharedTotal { consumed, .. } = goal {
            consumed.fetch_add(counted, Ordering::Relaxed);
        }
        if goal_met(goal, report.received) || deadline.is_some_and(|deadline| now >= deadline) {
            break;
        }
        if now.duration_since(last_activity) >= RECEIVE_IDLE_TIMEOUT && idle_is_final(goal) {
            report.shortfall = Some(shortfall(goal, report.received));
            break;
        }
    }
    counters.add_received(unreported);
    Ok(report)
}

fn goal_met(goal: &Goal, received: u64) -> bool {
    match goal {
        Goal::AllPublished(state) => state.final_published().is_some_and(|total| received >= total),
        Goal::SharedTotal { total, consumed } => consumed.load(Ordering::Relaxed) >= *total,
        Goal::UntilStopped(state) => state.stop.load(Ordering::SeqCst),
    }
}

/// Idleness ends a receiver only once nothing more can be on its way.
fn idle_is_final(goal: &Goal) -> bool {
    match goal {
        Goal::AllPublished(state) => state.final_published().is_some(),
        Goal::SharedTotal { .. } => true,
        Goal::UntilStopped(_) => false,
    }
}

fn shortfall(goal: &Goal, received: u64) -> String {
    let expected = match goal {
        Goal::AllPublished(state) => state.final_published().unwrap_or(0),
        Goal::SharedTotal { total, consumed } => {
            return format!(
                "consumers stopped after {RECEIVE_IDLE_TIMEOUT:?} idle with {} of {total} messages",
                consumed.load(Ordering::Relaxed)
            )
        }
        Goal::UntilStopped(_) => received,
    };
    format!("receiver got {received} of {expected} messages before {RECEIVE_IDLE_TIMEOUT:?} idle")
}
