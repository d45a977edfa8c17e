//! Firing a stream's message schedules (`schedule.rs`), from the shard's maintenance
//! pass, the timer that also expires TTLs and writes delete markers: no thread or timer
//! of its own. When a schedule is due the stream appends the message it fires to the
//! target, as a copy (no client expectations), and that append does the rest in its
//! synchronous step (`note_schedule`): a one-shot's `Nats-Schedule-Next: purge` purges
//! the schedule's subject, a repeating one's next time reschedules it.
//!
//! The index is derived state: built lazily by the first pass after the stream opens,
//! from the last message of each subject. A repeating schedule resumes from the
//! `Nats-Schedule-Next` its last fired message carries; one due while the server was
//! down fires once, at once, as nats-server 2.15 does after a restart.

use super::error::Error;
use super::headers::{header_value, Rollup, MESSAGE_SCHEDULE};
use super::ingest::{Origin, PublishRequest};
use super::schedule::{check_client_headers, fired_headers, with_subject_rollup, ScheduleSpec};
use super::schedule::{SCHEDULER, SCHEDULE_NEXT, SCHEDULE_NEXT_PURGE};
use super::schedule_time::parse_rfc3339;
use super::stream::{Keep, Stream};
use super::table::MessageTable;

/// A message a schedule fired, durable (consumers are told of it like of a publish).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FiredMessage {
    pub seq: u64,
    pub subject: String,
    /// The subject's sequence before this message (0: none), for a republish.
    pub previous_seq: u64,
    pub headers: Vec<u8>,
    pub payload: bytes::Bytes,
}

impl Stream {
    /// A client's schedule as it is stored: with `Nats-Rollup: sub` added, so it replaces
    /// the subject's earlier schedule. `None`: store the headers as they are (not a
    /// schedule, or one the checks will refuse).
    pub(super) fn scheduled_headers(&self, request: &PublishRequest<'_>) -> Option<Vec<u8>> {
        let config = &self.meta.borrow().config;
        if request.origin != Origin::Client || !config.allow_msg_schedules || request.headers.is_empty() {
            return None;
        }
        match check_client_headers(request.headers, request.subject, config, self.context.clock.now_ns()) {
            Ok(true) => Some(with_subject_rollup(request.headers)),
            Ok(false) | Err(_) => None,
        }
    }

    /// When this stream's soonest schedule is due (now, while the index is not built).
    pub(super) fn next_schedule_ns(&self) -> Option<i64> {
        if !self.meta.borrow().config.allow_msg_schedules {
            return None;
        }
        let index = self.schedules.borrow();
        if !index.built {
            return Some(self.context.clock.now_ns());
        }
        index.next_due()
    }

    /// Fires the schedules that are due (call from the shard's timer). Each fired message
    /// is durable when this returns.
    pub async fn fire_schedules(&self) -> Result<Vec<FiredMessage>, Error> {
        if !self.meta.borrow().config.allow_msg_schedules {
            return Ok(Vec::new());
        }
        if !self.schedules.borrow().built {
            self.rebuild_schedules().await?;
        }
        let now = self.context.clock.now_ns();
        let due = self.schedules.borrow().due(now);
        let mut fired = Vec::new();
        for (subject, seq, due_ns) in due {
            match self.fire_one(&subject, seq, due_ns, now).await {
                Ok(Some(message)) => fired.push(message),
                Ok(None) => self.schedules.borrow_mut().remove(&subject),
                Err(error @ Error::Store(_)) => return Err(error),
                Err(error) => {
                    tracing::warn!(stream = %self.name(), %subject, %error, "scheduled message refused");
                    self.schedules.borrow_mut().remove(&subject);
                }
            }
        }
        Ok(fired)
    }

    /// Fires the schedule `seq` of `subject`; `None` when it is gone or broken.
    async fn fire_one(&self, subject: &str, seq: u64, due_ns: i64, now: i64) -> Result<Option<FiredMessage>, Error> {
        let schedule = match self.get(seq).await {
            Ok(message) => message,
            Err(Error::NoMessageFound) => return Ok(None),
            Err(error) => return Err(error),
        };
        let Some(spec) = ScheduleSpec::from_headers(&schedule.headers) else {
            return Ok(None);
        };
        let next = spec.pattern.next_after_fire(due_ns, now);
        if spec.pattern.repeats() && next.is_none() {
            return Ok(None);
        }
        let source = match &spec.source {
            Some(source) => self.get_last_by_subject(source).await.ok(),
            None => None,
        };
        let fired = source.as_ref().unwrap_or(&schedule);
        let headers = fired_headers(&fired.headers, subject, &spec, next);
        let target = spec.target.as_str();
        let request = PublishRequest {
            origin: Origin::Source,
            captured: target,
            subject: target,
            headers: &headers,
            payload: &fired.payload,
            keep: Keep::Store,
            at_ns: None,
        };
        let previous_seq = {
            let table = self.table.borrow();
            let id = table.subjects.id_of(target);
            id.and_then(|id| table.subjects.entry(id)).map_or(0, |entry| entry.last_seq)
        };
        let ack = self.append(request).await?;
        let payload = fired.payload.clone();
        let message = FiredMessage { seq: ack.seq, subject: spec.target.clone(), previous_seq, headers, payload };
        Ok(Some(message))
    }

    /// Finds the live schedules: the last message of each subject that holds one.
    async fn rebuild_schedules(&self) -> Result<(), Error> {
        let lasts: Vec<(String, u64)> = {
            let table = self.table.borrow();
            table.subjects.live_entries().map(|(_, entry)| (entry.name.to_string(), entry.last_seq)).collect()
        };
        for (subject, seq) in lasts {
            let message = match self.get(seq).await {
                Ok(message) => message,
                Err(Error::NoMessageFound) => continue,
                Err(error) => return Err(error),
            };
            let Some(spec) = ScheduleSpec::from_headers(&message.headers) else {
                continue;
            };
            let mut due = spec.pattern.first_due(message.timestamp_ns);
            if spec.pattern.repeats() {
                if let Some(next) = self.last_fired_next(&subject, &spec.target, seq).await {
                    due = Some(next);
                }
            }
            if let Some(due) = due {
                self.schedules.borrow_mut().set_if_newer(&subject, seq, due);
            }
        }
        self.schedules.borrow_mut().built = true;
        Ok(())
    }

    /// The `Nats-Schedule-Next` of the last message schedule `subject` (stored at
    /// `schedule_seq`) fired on `target`, if that is the target's last message.
    async fn last_fired_next(&self, subject: &str, target: &str, schedule_seq: u64) -> Option<i64> {
        let last = self.get_last_by_subject(target).await.ok()?;
        let ours = last.seq > schedule_seq && header_value(&last.headers, SCHEDULER) == Some(subject);
        ours.then(|| header_value(&last.headers, SCHEDULE_NEXT).and_then(parse_rfc3339))?
    }

    /// A message of a scheduling stream was stored at `seq`: index a schedule, purge the
    /// schedule a one-shot fired (or a client cancels), reschedule a repeating one.
    /// Called in the append's synchronous step; room was ensured for a purge record.
    #[expect(clippy::too_many_arguments, reason = "the stored message's parts, as publish_now has them")]
    pub(super) fn note_schedule(
        &self,
        table: &mut MessageTable,
        origin: Origin,
        subject: &str,
        headers: &[u8],
        seq: u64,
        timestamp_ns: i64,
        now: i64,
    ) -> Result<(), Error> {
        if headers.is_empty() || !self.meta.borrow().config.allow_msg_schedules {
            return Ok(());
        }
        if origin == Origin::Client && header_value(headers, MESSAGE_SCHEDULE).is_some_and(|v| !v.is_empty()) {
            let due = ScheduleSpec::from_headers(headers).and_then(|spec| spec.pattern.first_due(timestamp_ns));
            let mut index = self.schedules.borrow_mut();
            match due {
                Some(due) => index.set(subject, seq, due),
                None => index.remove(subject),
            }
        }
        let Some(scheduler) = header_value(headers, SCHEDULER).filter(|value| !value.is_empty()) else {
            return Ok(());
        };
        match header_value(headers, SCHEDULE_NEXT) {
            Some(SCHEDULE_NEXT_PURGE) => {
                self.roll_up(table, Rollup::Subject, scheduler, seq, now)?;
                self.schedules.borrow_mut().remove(scheduler);
            }
            Some(next) => {
                if let Some(next) = parse_rfc3339(next) {
                    self.schedules.borrow_mut().reschedule(scheduler, next);
                }
            }
            None => {}
        }
        Ok(())
    }
}
