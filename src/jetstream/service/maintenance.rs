//! The shard's stream maintenance task: interval syncs, age and TTL expiry, message
//! schedules (`StreamService::fire_schedules`), checkpoints, abandoning idle batches
//! (`StreamService::tick`), run only when something is due.
//!
//! Why not a fixed period: an idle server must not wake (issue: 20 passes a second per
//! shard cost CPU with no traffic). The streams say when they next have work
//! (`Engine::next_maintenance_ns`), and every append or configuration change raises the
//! engine's maintenance signal (kept if raised before the wait, so none is lost), after
//! which the task asks again. Passes stay at least `STREAM_MAINTENANCE_INTERVAL` apart, so
//! a publish burst costs one pass per interval, as the fixed period did.

use std::rc::Rc;
use std::time::Duration;

use super::{republish, StreamService};
use crate::limits::STREAM_MAINTENANCE_INTERVAL;

impl StreamService {
    /// Runs maintenance passes for the shard's life (spawn once per shard).
    pub async fn run_maintenance(self: Rc<Self>) {
        loop {
            self.tick().await;
            match self.next_maintenance_in() {
                None => self.engine.maintenance_wanted().await,
                Some(wait) if wait > STREAM_MAINTENANCE_INTERVAL => {
                    let sleep = glommio::timer::sleep(wait - STREAM_MAINTENANCE_INTERVAL);
                    futures_lite::future::or(self.engine.maintenance_wanted(), sleep).await;
                }
                Some(_) => {}
            }
            glommio::timer::sleep(STREAM_MAINTENANCE_INTERVAL).await;
        }
    }

    /// How long until a pass has work without a new write; `None`: not until one.
    fn next_maintenance_in(&self) -> Option<Duration> {
        if !self.batches.borrow().is_empty() || !self.fast_batches.borrow().is_empty() {
            return Some(Duration::ZERO);
        }
        let due_ns = self.engine.next_maintenance_ns()?;
        let wait_ns = due_ns.saturating_sub(self.engine.now_ns()).max(0);
        Some(Duration::from_nanos(wait_ns as u64))
    }

    /// Fires the message schedules that are due; consumers, followers and republish hear
    /// of each fired message (durable by then) like of a publish.
    pub(super) async fn fire_schedules(&self) {
        for name in self.engine.stream_names() {
            let Some(owner) = self.owner(&name) else { continue };
            let stream = owner.stream().clone();
            let fired = match stream.fire_schedules().await {
                Ok(fired) => fired,
                Err(error) => {
                    tracing::error!(shard = self.shard, stream = %name, %error, "message schedules failed");
                    continue;
                }
            };
            for message in fired {
                let (seq, subject) = (message.seq, message.subject.as_str());
                let (header_bytes, payload_bytes) = (message.headers.len(), message.payload.len());
                self.consumers.stream_appended(&stream, seq, subject, header_bytes, payload_bytes);
                self.origin_appended();
                let rules = owner.rules();
                if let Some(rule) = &rules.republish {
                    let stored = republish::Stored {
                        stream: &owner,
                        subject,
                        seq,
                        previous_seq: message.previous_seq,
                        headers: &message.headers,
                        payload: &message.payload,
                    };
                    self.republish(rule, &stored).await;
                }
            }
        }
    }
}
