//! The six-field cron schedules of `Nats-Schedule` (ADR-51): seconds, minutes, hours,
//! day of month, month, day of week, each a list of `*`/`?`, numbers, ranges `a-b` and
//! steps `/n`, with month and weekday names (`jan`, `mon`, any case). As in nats-server
//! (and the cron library it follows), when both day fields are restricted a day matches
//! either; a field given as `*` or `?` leaves the other alone. Times are UTC.

use super::schedule_time::{weekday_of_days, Civil};
use crate::calendar::{civil_from_days, days_from_civil};
use crate::limits::NANOS_PER_SECOND;

/// How far ahead a schedule is looked for before it is called one that never fires
/// (`0 0 0 30 2 *`): five years, as the cron library nats-server follows.
const SEARCH_DAYS_MAX: i64 = 5 * 366;

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
    /// The day-of-month or day-of-week field was `*` or `?`.
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
            day_of_month_any: matches!(days, "*" | "?"),
            weekday_any: matches!(weekdays, "*" | "?"),
        })
    }

    /// The first whole second strictly after `after_ns` that the schedule names, in Unix
    /// nanoseconds; `None` if none comes within five years.
    pub fn next_after(&self, after_ns: i64) -> Option<i64> {
        let start = after_ns.div_euclid(NANOS_PER_SECOND as i64) + 1;
        let first_day = start.div_euclid(86_400);
        let mut from_second_of_day = start.rem_euclid(86_400) as u32;
        for day in first_day..first_day + SEARCH_DAYS_MAX {
            if self.day_matches(day) {
                if let Some(second) = self.first_second_from(from_second_of_day) {
                    let (year, month, day_of_month) = civil_from_days(day);
                    let civil = Civil {
                        year,
                        month,
                        day: day_of_month,
                        hour: second / 3600,
                        minute: second % 3600 / 60,
                        second: second % 60,
                    };
                    let seconds = super::schedule_time::unix_seconds(&civil);
                    return seconds.checked_mul(NANOS_PER_SECOND as i64);
                }
            }
            from_second_of_day = 0;
        }
        None
    }

    fn day_matches(&self, day: i64) -> bool {
        let (year, month, day_of_month) = civil_from_days(day);
        debug_assert_eq!(days_from_civil(year, month, day_of_month), day);
        if !has(self.months, month) {
            return false;
        }
        let by_date = has(self.days_of_month, day_of_month);
        let by_weekday = has(self.weekdays, weekday_of_days(day));
        if self.day_of_month_any || self.weekday_any {
            by_date && by_weekday
        } else {
            by_date || by_weekday
        }
    }

    /// The first second of a day at or after `from` (seconds since midnight) that matches.
    fn first_second_from(&self, from: u32) -> Option<u32> {
        let (from_hour, from_minute, from_second) = (from / 3600, from % 3600 / 60, from % 60);
        for hour in from_hour..24 {
            if !has(self.hours, hour) {
                continue;
            }
            let minute_start = if hour == from_hour { from_minute } else { 0 };
            for minute in minute_start..60 {
                if !has(self.minutes, minute) {
                    continue;
                }
                let second_start = if hour == from_hour && minute == from_minute { from_second } else { 0 };
                if let Some(second) = (second_start..60).find(|second| has(self.seconds, *second)) {
                    return Some(hour * 3600 + minute * 60 + second);
                }
            }
        }
        None
    }
}

fn has(bits: u64, value: u32) -> bool {
    bits & (1 << value) != 0
}

/// One field: a comma-separated list of `*`, `?`, `n`, `a-b`, each with an optional `/step`.
fn parse_field(text: &str, field: &Field) -> Option<u64> {
    let mut bits = 0u64;
    for part in text.split(',') {
        let (range, step) = match part.split_once('/') {
            Some((range, step)) => (range, Some(step.parse::<u32>().ok().filter(|step| *step > 0)?)),
            None => (part, None),
        };
        let (low, high) = match range {
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
    use crate::stream::schedule_time::{format_rfc3339, parse_rfc3339};

    fn next(pattern: &str, after: &str) -> String {
        let schedule = CronSchedule::parse(pattern).expect("valid");
        format_rfc3339(schedule.next_after(parse_rfc3339(after).expect("time")).expect("fires"))
    }

    #[test]
    fn accepts_what_nats_server_accepts() {
        for accepted in ["0 */5 * * * *", "0 0 12 * jan-mar mon,wed,FRI", "0 0 0 ? * *", "*/15 0-30/5 1,2,3 1-31 * *"] {
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
}
