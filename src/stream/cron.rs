//! The six-field cron schedules of `Nats-Schedule` (ADR-51): seconds, minutes, hours,
//! day of month, month, day of week, each a list of `*`/`?`, numbers, ranges `a-b` and
//! steps `/n`, with month and weekday names (`jan`, `mon`, any case). As in nats-server
//! (and the cron library it follows), when both day fields are restricted a day matches
//! either; a field given as `*` or `?` leaves the other alone. Times are wall-clock times
//! of the schedule's zone (`time_zone.rs`), UTC by default.

use super::schedule_time::{round_to_second, weekday_of_days, Civil};
use super::time_zone::Zone;
use crate::calendar::days_from_civil;
use crate::limits::NANOS_PER_SECOND;

/// How far ahead a schedule is looked for before it is called one that never fires
/// (`0 0 0 30 2 *`): five years, as the cron library nats-server follows.
const SEARCH_YEARS: i64 = 5;

const MONTH_NAMES: [&str; 12] = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];
const WEEKDAY_NAMES: [&str; 7] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

/// A parsed cron schedule: one bit per allowed value of each field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CronSchedule {
    seconds: u64,
    minutes: u64,
    hours: u64,
    days_of_month: u64,
    months: u64,
    weekdays: u64,
    /// The day-of-month or day-of-week field leaves the day free ([`names_any`]).
    day_of_month_any: bool,
    weekday_any: bool,
}

struct Field {
    low: u32,
    high: u32,
    names: &'static [&'static str],
    /// The value the first name stands for.
    names_from: u32,
}

const SECONDS: Field = Field { low: 0, high: 59, names: &[], names_from: 0 };
const MINUTES: Field = Field { low: 0, high: 59, names: &[], names_from: 0 };
const HOURS: Field = Field { low: 0, high: 23, names: &[], names_from: 0 };
const DAYS_OF_MONTH: Field = Field { low: 1, high: 31, names: &[], names_from: 0 };
const MONTHS: Field = Field { low: 1, high: 12, names: &MONTH_NAMES, names_from: 1 };
const WEEKDAYS: Field = Field { low: 0, high: 6, names: &WEEKDAY_NAMES, names_from: 0 };

impl CronSchedule {
    /// Parses six whitespace-separated fields; `None` for anything else.
    pub fn parse(text: &str) -> Option<CronSchedule> {
        let fields: Vec<&str> = text.split_whitespace().collect();
        let [seconds, minutes, hours, days, months, weekdays] = fields[..] else {
            return None;
        };
        Some(CronSchedule {
            seconds: parse_field(seconds, &SECONDS)?,
            minutes: parse_field(minutes, &MINUTES)?,
            hours: parse_field(hours, &HOURS)?,
            days_of_month: parse_field(days, &DAYS_OF_MONTH)?,
            months: parse_field(months, &MONTHS)?,
            weekdays: parse_field(weekdays, &WEEKDAYS)?,
            day_of_month_any: names_any(days),
            weekday_any: names_any(weekdays),
        })
    }

    /// When the schedule next fires after `after_ns`, in Unix nanoseconds, stepping
    /// through wall-clock time in `zone` as nats-server's cron (Go's `time` package) does:
    /// from `after_ns` rounded to the second, plus a second; the hour steps by an hour of
    /// real time, so a local time a DST switch skips does not fire that day and one it
    /// repeats fires twice. `None` if none comes within five years.
    pub fn next_after(&self, after_ns: i64, zone: &Zone) -> Option<i64> {
        let mut next = round_to_second(after_ns).div_euclid(NANOS_PER_SECOND as i64) + 1;
        let mut truncated = false;
        let year_limit = zone.civil_at(next).year + SEARCH_YEARS;
        'wrap: loop {
            let mut civil = zone.civil_at(next);
            if civil.year > year_limit {
                return None;
            }
            while !has(self.months, civil.month) {
                if !std::mem::replace(&mut truncated, true) {
                    next = zone.from_local(civil.year, i64::from(civil.month), 1, 0, 0, 0);
                    civil = zone.civil_at(next);
                }
                next = add_date(zone, &civil, 1, 0);
                civil = zone.civil_at(next);
                if civil.month == 1 {
                    continue 'wrap;
                }
            }
            while !self.day_matches(&civil) {
                if !std::mem::replace(&mut truncated, true) {
                    next = zone.from_local(civil.year, i64::from(civil.month), i64::from(civil.day), 0, 0, 0);
                    civil = zone.civil_at(next);
                }
                next = add_date(zone, &civil, 0, 1);
                civil = zone.civil_at(next);
                if civil.day == 1 {
                    continue 'wrap;
                }
            }
            for (bits, step, value) in [
                (self.hours, 3600, (|c: &Civil| c.hour) as fn(&Civil) -> u32),
                (self.minutes, 60, |c: &Civil| c.minute),
                (self.seconds, 1, |c: &Civil| c.second),
            ] {
                while !has(bits, value(&civil)) {
                    if !std::mem::replace(&mut truncated, true) {
                        // Down to the hour (a wall-clock time, as Go's `time.Date`), or
                        // the minute or second (of absolute time, as Go's `Truncate`).
                        next = match step {
                            3600 => {
                                let (year, month, day) = (civil.year, i64::from(civil.month), i64::from(civil.day));
                                zone.from_local(year, month, day, i64::from(civil.hour), 0, 0)
                            }
                            _ => next - next.rem_euclid(step),
                        };
                    }
                    next += step;
                    civil = zone.civil_at(next);
                    if value(&civil) == 0 {
                        continue 'wrap;
                    }
                }
            }
            return next.checked_mul(NANOS_PER_SECOND as i64);
        }
    }

    fn day_matches(&self, civil: &Civil) -> bool {
        let day = days_from_civil(civil.year, civil.month, civil.day);
        let by_date = has(self.days_of_month, civil.day);
        let by_weekday = has(self.weekdays, weekday_of_days(day));
        if self.day_of_month_any || self.weekday_any {
            by_date && by_weekday
        } else {
            by_date || by_weekday
        }
    }
}

/// Go's `AddDate(0, months, days)`: the same wall-clock time that many months and days on.
fn add_date(zone: &Zone, civil: &Civil, months: i64, days: i64) -> i64 {
    let month = i64::from(civil.month) + months;
    let day = i64::from(civil.day) + days;
    zone.from_local(civil.year, month, day, i64::from(civil.hour), i64::from(civil.minute), i64::from(civil.second))
}

fn has(bits: u64, value: u32) -> bool {
    bits & (1 << value) != 0
}

/// Whether a day field leaves the day free, as the cron library's star bit: one of its
/// parts is `*` or `?` without a step above 1 (`*/2` restricts, `*,5` does not).
fn names_any(text: &str) -> bool {
    text.split(',').any(|part| {
        let (range, step) = part.split_once('/').unwrap_or((part, "1"));
        let low = range.split('-').next().unwrap_or_default();
        matches!(low, "*" | "?") && step.parse::<u32>() == Ok(1)
    })
}

/// One field: a comma-separated list of `*`, `?`, `n`, `a-b`, each with an optional `/step`.
/// As the cron library nats-server follows: empty parts are skipped, and a range that
/// starts with `*` or `?` is the whole field whatever follows its `-`.
fn parse_field(text: &str, field: &Field) -> Option<u64> {
    let mut bits = 0u64;
    for part in text.split(',').filter(|part| !part.is_empty()) {
        let (range, step) = match part.split_once('/') {
            Some((range, step)) => (range, Some(step.parse::<u32>().ok().filter(|step| *step > 0)?)),
            None => (part, None),
        };
        let (low, high) = match range.split('-').next().unwrap_or_default() {
            "*" | "?" => (field.low, field.high),
            _ => match range.split_once('-') {
                Some((low, high)) => (value(low, field)?, value(high, field)?),
                // `5/15` runs from 5 to the field's end.
                None if step.is_some() => (value(range, field)?, field.high),
                None => (value(range, field)?, value(range, field)?),
            },
        };
        if low > high {
            return None;
        }
        let step = step.unwrap_or(1);
        for value in (low..=high).step_by(step as usize) {
            bits |= 1 << value;
        }
    }
    Some(bits)
}

fn value(text: &str, field: &Field) -> Option<u32> {
    let lower = text.to_ascii_lowercase();
    let value = match field.names.iter().position(|name| *name == lower) {
        Some(index) => index as u32 + field.names_from,
        None => text.parse::<u32>().ok()?,
    };
    (field.low..=field.high).contains(&value).then_some(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stream::schedule_time::{format_rfc3339_at, parse_rfc3339};
    use crate::stream::time_zone::test_zone;

    fn next(pattern: &str, after: &str) -> String {
        next_in(&Zone::utc(), pattern, after)
    }

    /// The next firing after `after`, written in the zone's local time with its offset
    /// (as nats-server writes `Nats-Schedule-Next`).
    fn next_in(zone: &Zone, pattern: &str, after: &str) -> String {
        let schedule = CronSchedule::parse(pattern).expect("valid");
        let next = schedule.next_after(parse_rfc3339(after).expect("time"), zone).expect("fires");
        format_rfc3339_at(next, zone.offset_at(next / NANOS_PER_SECOND as i64).offset)
    }

    #[test]
    fn accepts_what_nats_server_accepts() {
        for accepted in [
            "0 */5 * * * *",
            "0 0 12 * jan-mar mon,wed,FRI",
            "0 0 0 ? * *",
            "*/15 0-30/5 1,2,3 1-31 * *",
            "*-5 1,,2 * * * *",
        ] {
            assert!(CronSchedule::parse(accepted).is_some(), "{accepted}");
        }
        for refused in ["*/5 * * * *", "0 0 0 * * * *", "60 0 0 * * *", "0 0 0 * * 7", "0 0 5-3 * * *", "0 0 0 0 * *"] {
            assert!(CronSchedule::parse(refused).is_none(), "{refused}");
        }
        for refused in ["0 0 0 * 13 *", "*/0 0 0 * * *", "0 0 0 L * *"] {
            assert!(CronSchedule::parse(refused).is_none(), "{refused}");
        }
    }

    #[test]
    fn finds_the_next_second_strictly_after() {
        assert_eq!(next("*/5 * * * * *", "2026-12-03T23:46:01Z"), "2026-12-03T23:46:05Z");
        assert_eq!(next("*/5 * * * * *", "2026-12-03T23:46:05Z"), "2026-12-03T23:46:10Z");
        assert_eq!(next("0 0 * * * *", "2026-12-03T23:46:01Z"), "2026-12-04T00:00:00Z");
        assert_eq!(next("0 0 0 1 1 *", "2026-12-03T23:46:01Z"), "2027-01-01T00:00:00Z");
        // Both day fields restricted: either matches (the 1st, or a Friday).
        assert_eq!(next("0 30 4 1 * 5", "2026-12-03T00:00:00Z"), "2026-12-04T04:30:00Z");
        assert_eq!(next("0 0 0 29 2 *", "2026-03-01T00:00:00Z"), "2028-02-29T00:00:00Z");
    }

    #[test]
    fn rounds_to_the_second_first_as_go_does() {
        // 04.7 rounds to 05, so the first candidate is 06: `*/5` fires at 10, not 05.
        assert_eq!(next("*/5 * * * * *", "2026-12-03T23:46:04.7Z"), "2026-12-03T23:46:10Z");
        assert_eq!(next("*/5 * * * * *", "2026-12-03T23:46:04.4Z"), "2026-12-03T23:46:05Z");
        // `*/2` restricts the day of month, so either day field may match; `*/1` does not.
        assert_eq!(next("0 0 0 */2 * 5", "2026-12-03T12:00:00Z"), "2026-12-04T00:00:00Z");
        assert_eq!(next("0 0 0 */1 * 6", "2026-12-03T12:00:00Z"), "2026-12-05T00:00:00Z");
    }

    #[test]
    fn new_york_skips_the_spring_forward_hour_and_repeats_the_fall_back_one() {
        let zone = test_zone("America/New_York");
        // 2026-03-08: 02:00 EST jumps to 03:00 EDT; 02:30 does not exist that day.
        assert_eq!(next_in(&zone, "0 30 2 * * *", "2026-03-07T12:00:00Z"), "2026-03-09T02:30:00-04:00");
        assert_eq!(next_in(&zone, "0 0 * * * *", "2026-03-08T06:30:00Z"), "2026-03-08T03:00:00-04:00");
        assert_eq!(next_in(&zone, "0 0 0 * * *", "2026-03-08T06:30:00Z"), "2026-03-09T00:00:00-04:00");
        // 2026-11-01: 02:00 EDT falls back to 01:00 EST; 01:30 comes twice and fires twice.
        assert_eq!(next_in(&zone, "0 30 1 * * *", "2026-11-01T04:00:00Z"), "2026-11-01T01:30:00-04:00");
        assert_eq!(next_in(&zone, "0 30 1 * * *", "2026-11-01T05:30:00Z"), "2026-11-01T01:30:00-05:00");
        assert_eq!(next_in(&zone, "0 30 1 * * *", "2026-11-01T06:30:00Z"), "2026-11-02T01:30:00-05:00");
        assert_eq!(next_in(&zone, "0 0 * * * *", "2026-11-01T05:00:00Z"), "2026-11-01T01:00:00-05:00");
        assert_eq!(next_in(&zone, "0 0 12 * * mon", "2026-11-01T12:00:00Z"), "2026-11-02T12:00:00-05:00");
    }

    #[test]
    fn a_zone_past_its_last_transition_follows_its_tz_string() {
        // New York as a slim zone file would give it: one old transition, then the rule.
        let bytes = crate::stream::tzif::test_file(&[(1_000, 0)], &[(-18_000, false)], "EST5EDT,M3.2.0,M11.1.0");
        let zone = Zone::from_tzif("America/New_York", &bytes).expect("valid");
        let fat = test_zone("America/New_York");
        for (pattern, after) in [
            ("0 30 2 * * *", "2026-03-07T12:00:00Z"),
            ("0 0 * * * *", "2026-03-08T06:30:00Z"),
            ("0 30 1 * * *", "2026-11-01T05:30:00Z"),
            ("0 0 0 1 * *", "2026-12-31T12:00:00Z"),
        ] {
            assert_eq!(next_in(&zone, pattern, after), next_in(&fat, pattern, after), "{pattern} after {after}");
        }
    }

    #[test]
    fn london_switches_at_one_utc() {
        let zone = test_zone("Europe/London");
        // 2026-03-29: 01:00 GMT jumps to 02:00 BST.
        assert_eq!(next_in(&zone, "0 30 1 * * *", "2026-03-28T12:00:00Z"), "2026-03-30T01:30:00+01:00");
        assert_eq!(next_in(&zone, "0 0 9 * * *", "2026-03-28T12:00:00Z"), "2026-03-29T09:00:00+01:00");
        // 2026-10-25: 02:00 BST falls back to 01:00 GMT.
        assert_eq!(next_in(&zone, "0 30 1 * * *", "2026-10-24T23:00:00Z"), "2026-10-25T01:30:00+01:00");
        assert_eq!(next_in(&zone, "0 30 1 * * *", "2026-10-25T00:30:00Z"), "2026-10-25T01:30:00Z");
    }

    #[test]
    fn lord_howe_moves_by_half_an_hour() {
        let zone = test_zone("Australia/Lord_Howe");
        // 2026-10-04 02:00 +10:30 jumps to 02:30 +11: 02:15 is skipped, 02:45 fires.
        assert_eq!(next_in(&zone, "0 15 2 * * *", "2026-10-03T12:00:00Z"), "2026-10-05T02:15:00+11:00");
        assert_eq!(next_in(&zone, "0 45 2 * * *", "2026-10-03T12:00:00Z"), "2026-10-04T02:45:00+11:00");
        // 2026-04-05 02:00 +11 falls back to 01:30 +10:30: 01:45 fires twice.
        assert_eq!(next_in(&zone, "0 45 1 * * *", "2026-04-04T12:00:00Z"), "2026-04-05T01:45:00+11:00");
        assert_eq!(next_in(&zone, "0 45 1 * * *", "2026-04-04T14:45:00Z"), "2026-04-05T01:45:00+10:30");
    }
}
