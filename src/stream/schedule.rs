//! Message schedules (ADR-51, nats-server 2.12+): a message with `Nats-Schedule` on a
//! stream with `allow_msg_schedules` is a schedule. When it comes due, the stream stores
//! a new message on its `Nats-Schedule-Target` (`scheduler.rs`); a one-shot `@at`
//! schedule is then purged, a repeating one (`@every`, cron) stays and fires again.
//!
//! This file is the pure part: the pattern and its due times, the publish-time header
//! checks with nats-server 2.15's error codes and order (recorded against 2.15.1), the
//! headers of a fired message, and [`ScheduleIndex`], the due times of the live
//! schedules (derived state, rebuilt from the stored messages after a restart).
//!
//! Headers of a schedule: `Nats-Schedule` (`@at <RFC 3339>`, `@every <Go duration ≥
//! 1s>`, a six-field cron or `@hourly`/`@daily`/...), `Nats-Schedule-Target` (a literal
//! subject of the same stream, not the schedule's own), optional `Nats-Schedule-TTL`
//! (becomes the fired message's `Nats-TTL`), `Nats-Schedule-Rollup: sub`,
//! `Nats-Schedule-Source` (fire the last message of that subject instead) and, for cron
//! only, `Nats-Schedule-Time-Zone` (an IANA name, `UTC` or `Local`: `time_zone.rs`).
//! The schedule is stored with `Nats-Rollup: sub`, so a new schedule on a subject
//! replaces the old. A client cancels one with `Nats-Schedule-Next: purge` and
//! `Nats-Scheduler: <schedule subject>`, the headers a one-shot's fired message carries.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use super::config::StreamConfig;
use super::cron::CronSchedule;
use super::error::Error;
use super::headers::{header_value, header_value_untrimmed_end, MESSAGE_SCHEDULE, MESSAGE_TTL, MSG_ID, ROLLUP};
use super::schedule_time::{format_rfc3339, format_rfc3339_at, parse_rfc3339, round_to_second};
use super::subject_match::{is_valid_subject, matches};
use super::time_zone::Zone;
use super::ttl::parse_ttl;
use crate::limits::NANOS_PER_SECOND;
use crate::protocol::go_duration::parse_go_duration;

pub const SCHEDULE_TARGET: &str = "Nats-Schedule-Target";
pub const SCHEDULE_SOURCE: &str = "Nats-Schedule-Source";
pub const SCHEDULE_TTL: &str = "Nats-Schedule-TTL";
pub const SCHEDULE_ROLLUP: &str = "Nats-Schedule-Rollup";
pub const SCHEDULE_TIME_ZONE: &str = "Nats-Schedule-Time-Zone";
pub const SCHEDULE_NEXT: &str = "Nats-Schedule-Next";
pub const SCHEDULER: &str = "Nats-Scheduler";
/// `Nats-Schedule-Next` of a one-shot's fired message, and of a client's cancel.
pub const SCHEDULE_NEXT_PURGE: &str = "purge";
const ROLLUP_SUBJECT: &str = "sub";
/// What the names of `Nats-Schedule`, `Nats-Schedule-*` and `Nats-Scheduler` start with.
const SCHEDULE_PREFIX: &[u8] = b"nats-sched";

/// When a schedule fires.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SchedulePattern {
    /// Once, at this Unix time (nanoseconds).
    At(i64),
    /// Repeatedly, this many nanoseconds apart (at least a second).
    Every(i64),
    /// On a cron schedule, in wall-clock time of a zone.
    Cron(CronSchedule, Arc<Zone>),
}

impl SchedulePattern {
    /// Parses a `Nats-Schedule` value with its `Nats-Schedule-Time-Zone` (`None`:
    /// absent). nats-server answers a zone it cannot load (or an empty one) first, then
    /// a zone on anything but cron as a bad pattern.
    pub fn parse(text: &str, time_zone: Option<&str>) -> Result<SchedulePattern, Error> {
        let zone = match time_zone {
            None => None,
            Some("") => return Err(Error::MessageSchedulesTimeZoneInvalid),
            Some(name) => Some(Zone::load(name).ok_or(Error::MessageSchedulesTimeZoneInvalid)?),
        };
        let invalid = Err(Error::MessageSchedulesPatternInvalid);
        if let Some(time) = text.strip_prefix("@at ") {
            return match parse_rfc3339(time) {
                Some(at) if time_zone.is_none() => Ok(SchedulePattern::At(at)),
                _ => invalid,
            };
        }
        if let Some(interval) = text.strip_prefix("@every ") {
            return match parse_go_duration(interval) {
                Some(nanos) if nanos >= NANOS_PER_SECOND as i64 && time_zone.is_none() => {
                    Ok(SchedulePattern::Every(nanos))
                }
                _ => invalid,
            };
        }
        let cron = match text {
            "@yearly" | "@annually" => "0 0 0 1 1 *",
            "@monthly" => "0 0 0 1 * *",
            "@weekly" => "0 0 0 * * 0",
            "@daily" | "@midnight" => "0 0 0 * * *",
            "@hourly" => "0 0 * * * *",
            other => other,
        };
        let cron = CronSchedule::parse(cron).ok_or(Error::MessageSchedulesPatternInvalid)?;
        Ok(SchedulePattern::Cron(cron, zone.unwrap_or_else(|| Arc::new(Zone::utc()))))
    }

    /// Whether it fires more than once.
    pub fn repeats(&self) -> bool {
        !matches!(self, SchedulePattern::At(_))
    }

    /// When a schedule stored at `stored_ns` first fires (possibly in the past: it then
    /// fires at once, as after a restart that slept through it). `None`: never.
    pub fn first_due(&self, stored_ns: i64) -> Option<i64> {
        match self {
            SchedulePattern::At(at) => Some(*at),
            SchedulePattern::Every(interval) => Some(round_to_second(stored_ns).saturating_add(*interval)),
            SchedulePattern::Cron(cron, zone) => cron.next_after(stored_ns, zone),
        }
    }

    /// When a repeating schedule that fired for `due_ns` fires next: after `due_ns`, but
    /// never in the past (a schedule that missed several times fires once, not for each).
    pub fn next_after_fire(&self, due_ns: i64, now_ns: i64) -> Option<i64> {
        match self {
            SchedulePattern::At(_) => None,
            SchedulePattern::Every(interval) => {
                let next = round_to_second(due_ns).saturating_add(*interval);
                Some(if next < now_ns { round_to_second(now_ns).saturating_add(*interval) } else { next })
            }
            SchedulePattern::Cron(cron, zone) => match cron.next_after(due_ns, zone)? {
                next if next < now_ns => cron.next_after(round_to_second(now_ns), zone),
                next => Some(next),
            },
        }
    }

    /// A firing time as `Nats-Schedule-Next` gives it: RFC 3339 in the schedule's zone
    /// (`Z` in UTC, else its offset then, as `2026-03-09T02:30:00-04:00`).
    pub fn format_time(&self, at_ns: i64) -> String {
        match self {
            SchedulePattern::Cron(_, zone) => {
                format_rfc3339_at(at_ns, zone.offset_at(at_ns.div_euclid(NANOS_PER_SECOND as i64)).offset)
            }
            _ => format_rfc3339(at_ns),
        }
    }
}

/// A stored schedule message, read back from its headers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScheduleSpec {
    pub pattern: SchedulePattern,
    pub target: String,
    pub source: Option<String>,
    pub ttl: Option<String>,
    pub rollup: Option<String>,
}

impl ScheduleSpec {
    /// The schedule a stored message holds; `None` if it holds none (or a broken one,
    /// which nats-server drops when it comes due).
    pub fn from_headers(headers: &[u8]) -> Option<ScheduleSpec> {
        let pattern = header_value(headers, MESSAGE_SCHEDULE).filter(|value| !value.is_empty())?;
        let pattern = SchedulePattern::parse(pattern, header_value_untrimmed_end(headers, SCHEDULE_TIME_ZONE)).ok()?;
        let present = |name| header_value(headers, name).filter(|value| !value.is_empty()).map(str::to_string);
        Some(ScheduleSpec {
            pattern,
            target: present(SCHEDULE_TARGET)?,
            source: present(SCHEDULE_SOURCE),
            ttl: present(SCHEDULE_TTL),
            rollup: present(SCHEDULE_ROLLUP),
        })
    }
}

/// What a client's message may carry of the schedule headers, in nats-server's order
/// and with its codes. `Ok(true)`: the message is a schedule, to be stored with
/// `Nats-Rollup: sub` added (it has no `Nats-Rollup` of its own). A cron schedule that
/// would not fire within five years of `now_ns` is a bad pattern, as in nats-server.
pub fn check_client_headers(headers: &[u8], subject: &str, config: &StreamConfig, now_ns: i64) -> Result<bool, Error> {
    // Every header this looks at starts so: one pass over the bytes spares a publish
    // with other headers the lookups below.
    if !headers.windows(SCHEDULE_PREFIX.len()).any(|window| window.eq_ignore_ascii_case(SCHEDULE_PREFIX)) {
        return Ok(false);
    }
    let present = |name| header_value(headers, name).filter(|value| !value.is_empty());
    let enabled = config.allow_msg_schedules;
    if let Some(next) = present(SCHEDULE_NEXT) {
        let scheduler = present(SCHEDULER);
        let valid_scheduler = scheduler.is_some_and(|scheduler| scheduler != subject && is_literal(scheduler));
        if next != SCHEDULE_NEXT_PURGE || !valid_scheduler {
            return Err(Error::MessageSchedulesSchedulerInvalid);
        }
        if !enabled {
            return Err(Error::MessageSchedulesDisabled);
        }
    } else if present(SCHEDULER).is_some() {
        return Err(Error::MessageSchedulesSchedulerInvalid);
    }
    let Some(pattern) = present(MESSAGE_SCHEDULE) else {
        let zoned = header_value_untrimmed_end(headers, SCHEDULE_TIME_ZONE).is_some();
        return if zoned && !enabled { Err(Error::MessageSchedulesDisabled) } else { Ok(false) };
    };
    if !enabled {
        return Err(Error::MessageSchedulesDisabled);
    }
    let parsed = SchedulePattern::parse(pattern, header_value_untrimmed_end(headers, SCHEDULE_TIME_ZONE))?;
    if parsed.first_due(now_ns).is_none() {
        return Err(Error::MessageSchedulesPatternInvalid);
    }
    if let Some(ttl) = present(SCHEDULE_TTL) {
        parse_ttl(ttl).ok_or(Error::MessageSchedulesTtlInvalid)?;
        if !config.allow_msg_ttl {
            return Err(Error::MessageTtlDisabled);
        }
    }
    let rollups = [present(SCHEDULE_ROLLUP), present(ROLLUP)];
    if rollups.iter().flatten().any(|rollup| *rollup != ROLLUP_SUBJECT) {
        return Err(Error::MessageSchedulesRollupInvalid);
    }
    let in_stream = |other: &str| other != subject && is_literal(other) && captured(config, other);
    if !present(SCHEDULE_TARGET).is_some_and(in_stream) {
        return Err(Error::MessageSchedulesTargetInvalid);
    }
    if let Some(source) = present(SCHEDULE_SOURCE) {
        if !in_stream(source) || present(SCHEDULE_TARGET) == Some(source) {
            return Err(Error::MessageSchedulesSourceInvalid);
        }
    }
    Ok(header_value(headers, ROLLUP).is_none())
}

fn is_literal(subject: &str) -> bool {
    is_valid_subject(subject) && crate::subject::is_literal(subject.as_bytes())
}

fn captured(config: &StreamConfig, subject: &str) -> bool {
    if config.subjects.is_empty() {
        return config.name == subject;
    }
    config.subjects.iter().any(|pattern| matches(pattern, subject))
}

/// `headers` with `Nats-Rollup: sub` added (a schedule as it is stored).
pub fn with_subject_rollup(headers: &[u8]) -> Vec<u8> {
    let mut block = header_lines(headers, |_| true);
    push_header(&mut block, ROLLUP, ROLLUP_SUBJECT);
    block.extend_from_slice(b"\r\n");
    block
}

/// The headers of the message a schedule fires: those of the message fired (the
/// schedule, or its source's last message) without the schedule's, the expectations,
/// `Nats-Msg-Id`, `Nats-TTL` and `Nats-Rollup`; then `Nats-Scheduler`,
/// `Nats-Schedule-Next` (`purge`, or the next time) and the TTL and rollup asked for.
pub fn fired_headers(fired: &[u8], schedule_subject: &str, spec: &ScheduleSpec, next_ns: Option<i64>) -> Vec<u8> {
    let mut block = header_lines(fired, |name| {
        let lower = name.to_ascii_lowercase();
        let dropped = [MESSAGE_SCHEDULE, MSG_ID, MESSAGE_TTL, ROLLUP].iter().any(|n| n.eq_ignore_ascii_case(name));
        !dropped && !lower.starts_with("nats-schedule-") && !lower.starts_with("nats-expected-")
    });
    push_header(&mut block, SCHEDULER, schedule_subject);
    match next_ns {
        Some(next) => push_header(&mut block, SCHEDULE_NEXT, &spec.pattern.format_time(next)),
        None => push_header(&mut block, SCHEDULE_NEXT, SCHEDULE_NEXT_PURGE),
    }
    if let Some(ttl) = &spec.ttl {
        push_header(&mut block, MESSAGE_TTL, ttl);
    }
    if let Some(rollup) = &spec.rollup {
        push_header(&mut block, ROLLUP, rollup);
    }
    block.extend_from_slice(b"\r\n");
    block
}

/// The status line and the header lines `keep` accepts (by name), without the blank
/// line that ends a block.
fn header_lines(headers: &[u8], keep: impl Fn(&str) -> bool) -> Vec<u8> {
    let text = String::from_utf8_lossy(headers);
    let mut lines = text.split("\r\n");
    let status = lines.next().filter(|line| line.starts_with("NATS/")).unwrap_or("NATS/1.0");
    let mut block = format!("{status}\r\n").into_bytes();
    for line in lines.filter(|line| !line.is_empty()) {
        let name = line.split_once(':').map_or(line, |(name, _)| name.trim());
        if keep(name) {
            block.extend_from_slice(line.as_bytes());
            block.extend_from_slice(b"\r\n");
        }
    }
    block
}

fn push_header(block: &mut Vec<u8>, name: &str, value: &str) {
    block.extend_from_slice(format!("{name}: {value}\r\n").as_bytes());
}

/// The live schedules of a stream by subject (one per subject: the last schedule
/// message stored on it), and their due times.
#[derive(Debug, Default)]
pub struct ScheduleIndex {
    by_subject: HashMap<String, (u64, i64)>,
    by_due: BTreeSet<(i64, String)>,
    /// Rebuilt from the stored messages since the stream was opened or switched on.
    pub built: bool,
}

impl ScheduleIndex {
    /// The schedule of `subject` is the message `seq`, due at `due_ns`.
    pub fn set(&mut self, subject: &str, seq: u64, due_ns: i64) {
        self.remove(subject);
        self.by_subject.insert(subject.to_string(), (seq, due_ns));
        self.by_due.insert((due_ns, subject.to_string()));
    }

    /// As `set`, unless a newer schedule message of `subject` is known already.
    pub fn set_if_newer(&mut self, subject: &str, seq: u64, due_ns: i64) {
        if self.by_subject.get(subject).is_none_or(|(known, _)| *known < seq) {
            self.set(subject, seq, due_ns);
        }
    }

    /// The schedule of `subject` fires next at `due_ns`.
    pub fn reschedule(&mut self, subject: &str, due_ns: i64) {
        if let Some(&(seq, _)) = self.by_subject.get(subject) {
            self.set(subject, seq, due_ns);
        }
    }

    pub fn remove(&mut self, subject: &str) {
        if let Some((_, due_ns)) = self.by_subject.remove(subject) {
            self.by_due.remove(&(due_ns, subject.to_string()));
        }
    }

    /// Schedules due at `now_ns`, soonest first: (subject, sequence, due time).
    pub fn due(&self, now_ns: i64) -> Vec<(String, u64, i64)> {
        let due = self.by_due.iter().take_while(|(due_ns, _)| *due_ns <= now_ns);
        due.map(|(due_ns, subject)| (subject.clone(), self.by_subject[subject].0, *due_ns)).collect()
    }

    /// When the soonest schedule is due.
    pub fn next_due(&self) -> Option<i64> {
        self.by_due.first().map(|(due_ns, _)| *due_ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeating_schedules_skip_what_they_missed() {
        let second = NANOS_PER_SECOND as i64;
        let every = SchedulePattern::parse("@every 2s", None).expect("valid");
        assert_eq!(every.first_due(22 * second + second / 10), Some(24 * second));
        assert_eq!(every.next_after_fire(24 * second, 24 * second), Some(26 * second));
        assert_eq!(every.next_after_fire(24 * second, 61 * second + second / 2), Some(64 * second));
        assert!(SchedulePattern::parse("@every 500ms", None).is_err());
        assert_eq!(SchedulePattern::parse("@every 1s", Some("UTC")), Err(Error::MessageSchedulesPatternInvalid));
        assert_eq!(SchedulePattern::parse("@hourly", Some("+02:00")), Err(Error::MessageSchedulesTimeZoneInvalid));
    }

    #[test]
    fn a_cron_schedule_that_never_fires_is_a_bad_pattern() {
        // Recorded from nats-server 2.15.1: February 30th and April 31st get 10189.
        let config = StreamConfig { allow_msg_schedules: true, ..StreamConfig::new("S", &["s.>"]) };
        let now = parse_rfc3339("2026-12-04T15:00:00Z").expect("time");
        for (pattern, verdict) in [
            ("0 0 0 30 2 *", Err(Error::MessageSchedulesPatternInvalid)),
            ("0 0 0 31 4 *", Err(Error::MessageSchedulesPatternInvalid)),
            ("0 0 0 29 2 *", Ok(true)),
        ] {
            let headers = format!("NATS/1.0\r\nNats-Schedule: {pattern}\r\nNats-Schedule-Target: s.t\r\n\r\n");
            assert_eq!(check_client_headers(headers.as_bytes(), "s.a", &config, now), verdict, "{pattern}");
        }
    }

    #[test]
    fn fired_headers_keep_only_the_users() {
        let stored = b"NATS/1.0\r\nNats-Schedule: @at 2009-01-01T00:00:00Z\r\nNats-Schedule-Target: f.t\r\n\
            Nats-Schedule-TTL: 5m\r\nX-Custom: kept\r\nNats-Msg-Id: m1\r\nNats-Expected-Stream: F\r\n\
            Nats-Rollup: sub\r\n\r\n";
        let spec = ScheduleSpec::from_headers(stored).expect("a schedule");
        let fired = fired_headers(stored, "f.at", &spec, None);
        let expected =
            "NATS/1.0\r\nX-Custom: kept\r\nNats-Scheduler: f.at\r\nNats-Schedule-Next: purge\r\nNats-TTL: 5m\r\n\r\n";
        assert_eq!(String::from_utf8_lossy(&fired), expected);
    }
}
