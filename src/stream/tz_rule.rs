//! The POSIX TZ string at the end of a TZif v2+ file (`EST5EDT,M3.2.0,M11.1.0`): the
//! rule a zone follows after its last listed transition. Read and evaluated as Go's
//! `time` package does (its `tzset`), since nats-server computes cron schedules with it:
//! offsets up to 167 hours, rule times that may be negative or past 24 h (TZif v3),
//! `<+1030>`-style quoted names, and DST one hour ahead when no DST offset is given.
//!
//! Offsets here are seconds east of UTC (added to UTC to get local time), the opposite
//! sign of the string's.

use crate::calendar::days_from_civil;

use super::schedule_time::days_in_month;

const SECONDS_PER_HOUR: i64 = 3600;
const SECONDS_PER_DAY: i64 = 86_400;
/// `tzdata` permits offsets and rule times up to a week.
const OFFSET_HOURS_MAX: i64 = 24 * 7;

/// When in a year a rule switches: Julian day `Jn` (1-365, no Feb 29), zero-based day
/// `n` (0-365), or `Mm.w.d` (weekday `d` of week `w`, 5 meaning the last, of month `m`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Day {
    Julian(i64),
    OfYear(i64),
    MonthWeekDay { month: u32, week: i64, weekday: i64 },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Switch {
    day: Day,
    /// Local seconds after midnight (default 02:00).
    time: i64,
}

/// A parsed TZ string: standard time, and DST between two switches if the zone has it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TzRule {
    standard_offset: i64,
    daylight: Option<(i64, Switch, Switch)>,
}

/// The offset in force at an instant, and the span `[start, end)` of Unix seconds it
/// is known to hold over (as Go reports it: exact near a switch, else the year's bounds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub offset: i64,
    pub start: i64,
    pub end: i64,
}

impl TzRule {
    /// Parses a TZ string; `None` where Go's `tzset` reports it not ok.
    pub fn parse(text: &str) -> Option<TzRule> {
        let (_, rest) = name(text)?;
        let (standard, rest) = offset(rest)?;
        let standard_offset = -standard;
        if rest.is_empty() || rest.starts_with(',') {
            return Some(TzRule { standard_offset, daylight: None });
        }
        let (_, rest) = name(rest)?;
        let (daylight_offset, rest) = if rest.is_empty() || rest.starts_with(',') {
            (standard_offset + SECONDS_PER_HOUR, rest)
        } else {
            let (daylight, rest) = offset(rest)?;
            (-daylight, rest)
        };
        let rest = if rest.is_empty() { ",M3.2.0,M11.1.0" } else { rest };
        let rest = rest.strip_prefix(',').or_else(|| rest.strip_prefix(';'))?;
        let (start, rest) = switch(rest)?;
        let (end, rest) = switch(rest.strip_prefix(',')?)?;
        if !rest.is_empty() {
            return None;
        }
        Some(TzRule { standard_offset, daylight: Some((daylight_offset, start, end)) })
    }

    /// The offset at Unix second `unix`; `last_transition` is the zone's last listed
    /// transition, where a rule without DST is said to start.
    pub fn span_at(&self, last_transition: i64, unix: i64) -> Span {
        let Some((daylight_offset, start_switch, end_switch)) = self.daylight else {
            return Span { offset: self.standard_offset, start: last_transition, end: i64::MAX };
        };
        let day = unix.div_euclid(SECONDS_PER_DAY);
        let (year, _, _) = crate::calendar::civil_from_days(day);
        let year_start = days_from_civil(year, 1, 1) * SECONDS_PER_DAY;
        let second_of_year = unix - year_start;
        let mut start = switch_second(year, start_switch, self.standard_offset);
        let mut end = switch_second(year, end_switch, daylight_offset);
        let (mut before_offset, mut during_offset) = (self.standard_offset, daylight_offset);
        // Southern hemisphere: DST spans the new year, so the labels swap as in Go.
        if end < start {
            std::mem::swap(&mut start, &mut end);
            std::mem::swap(&mut before_offset, &mut during_offset);
        }
        if second_of_year < start {
            Span { offset: before_offset, start: year_start, end: year_start + start }
        } else if second_of_year >= end {
            // Go's year end is 365 days on, even in a leap year; callers re-check.
            Span { offset: before_offset, start: year_start + end, end: year_start + 365 * SECONDS_PER_DAY }
        } else {
            Span { offset: during_offset, start: year_start + start, end: year_start + end }
        }
    }
}

/// Seconds from the start of `year` (UTC) to the switch, made at local time under `offset`.
fn switch_second(year: i64, switch: Switch, offset: i64) -> i64 {
    let leap = days_in_month(year, 2) == 29;
    let day_of_year = match switch.day {
        Day::Julian(day) => day - 1 + i64::from(leap && day >= 60),
        Day::OfYear(day) => day,
        Day::MonthWeekDay { month, week, weekday } => {
            let first = days_from_civil(year, month, 1);
            let first_weekday = super::schedule_time::weekday_of_days(first) as i64;
            let mut day = (weekday - first_weekday).rem_euclid(7);
            for _ in 1..week {
                if day + 7 >= i64::from(days_in_month(year, month)) {
                    break;
                }
                day += 7;
            }
            first - days_from_civil(year, 1, 1) + day
        }
    };
    day_of_year * SECONDS_PER_DAY + switch.time - offset
}

/// A zone abbreviation: three or more letters, or anything within `<...>`.
fn name(text: &str) -> Option<(&str, &str)> {
    if let Some(quoted) = text.strip_prefix('<') {
        let close = quoted.find('>')?;
        return Some((&quoted[..close], &quoted[close + 1..]));
    }
    let end = text.find(|c: char| c.is_ascii_digit() || matches!(c, ',' | '-' | '+')).unwrap_or(text.len());
    (end >= 3).then(|| (&text[..end], &text[end..]))
}

/// `[+-]hh[:mm[:ss]]` as seconds (positive west of UTC, as written).
fn offset(text: &str) -> Option<(i64, &str)> {
    let (negative, text) = match text.as_bytes().first()? {
        b'+' => (false, &text[1..]),
        b'-' => (true, &text[1..]),
        _ => (false, text),
    };
    let (hours, mut rest) = number(text, 0, OFFSET_HOURS_MAX)?;
    let mut seconds = hours * SECONDS_PER_HOUR;
    for unit in [60, 1] {
        let Some(after_colon) = rest.strip_prefix(':') else { break };
        let (value, after) = number(after_colon, 0, 59)?;
        seconds += value * unit;
        rest = after;
    }
    Some((if negative { -seconds } else { seconds }, rest))
}

/// A rule's day and optional `/time`.
fn switch(text: &str) -> Option<(Switch, &str)> {
    let (day, rest) = if let Some(julian) = text.strip_prefix('J') {
        let (day, rest) = number(julian, 1, 365)?;
        (Day::Julian(day), rest)
    } else if let Some(month_week_day) = text.strip_prefix('M') {
        let (month, rest) = number(month_week_day, 1, 12)?;
        let (week, rest) = number(rest.strip_prefix('.')?, 1, 5)?;
        let (weekday, rest) = number(rest.strip_prefix('.')?, 0, 6)?;
        (Day::MonthWeekDay { month: month as u32, week, weekday }, rest)
    } else {
        let (day, rest) = number(text, 0, 365)?;
        (Day::OfYear(day), rest)
    };
    match rest.strip_prefix('/') {
        Some(time) => {
            let (time, rest) = offset(time)?;
            Some((Switch { day, time }, rest))
        }
        None => Some((Switch { day, time: 2 * SECONDS_PER_HOUR }, rest)),
    }
}

/// Leading digits as a number within `low..=high`.
fn number(text: &str, low: i64, high: i64) -> Option<(i64, &str)> {
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return None;
    }
    let mut value = 0i64;
    for digit in text[..digits].bytes() {
        value = value * 10 + i64::from(digit - b'0');
        if value > high {
            return None;
        }
    }
    (value >= low).then_some((value, &text[digits..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unix(y: i64, m: u32, d: u32, h: i64, min: i64) -> i64 {
        days_from_civil(y, m, d) * SECONDS_PER_DAY + h * 3600 + min * 60
    }

    #[test]
    fn new_york_switches_at_two_local() {
        let rule = TzRule::parse("EST5EDT,M3.2.0,M11.1.0").expect("valid");
        // 2026-03-08 07:00 UTC is 02:00 EST; 2026-11-01 06:00 UTC is 02:00 EDT.
        assert_eq!(rule.span_at(0, unix(2026, 3, 8, 6, 59)).offset, -5 * 3600);
        let summer = rule.span_at(0, unix(2026, 3, 8, 7, 0));
        assert_eq!(summer, Span { offset: -4 * 3600, start: unix(2026, 3, 8, 7, 0), end: unix(2026, 11, 1, 6, 0) });
        assert_eq!(rule.span_at(0, unix(2026, 11, 1, 6, 0)).offset, -5 * 3600);
    }

    #[test]
    fn lord_howe_has_half_an_hour_of_southern_dst() {
        let rule = TzRule::parse("<+1030>-10:30<+11>-11,M10.1.0,M4.1.0").expect("valid");
        // DST ends 2026-04-05 02:00 +11 (04-04 15:00 UTC), starts 2026-10-04 02:00 +1030.
        assert_eq!(rule.span_at(0, unix(2026, 4, 4, 14, 59)).offset, 11 * 3600);
        assert_eq!(rule.span_at(0, unix(2026, 4, 4, 15, 0)).offset, 10 * 3600 + 1800);
        assert_eq!(rule.span_at(0, unix(2026, 10, 3, 15, 29)).offset, 10 * 3600 + 1800);
        assert_eq!(rule.span_at(0, unix(2026, 10, 3, 15, 30)).offset, 11 * 3600);
    }

    #[test]
    fn refuses_what_go_refuses() {
        assert_eq!(TzRule::parse("<+00>0").map(|rule| rule.span_at(7, 9).offset), Some(0));
        assert_eq!(
            TzRule::parse("UTC0").map(|rule| rule.span_at(7, 9)),
            Some(Span { offset: 0, start: 7, end: i64::MAX })
        );
        assert_eq!(TzRule::parse("<-03>3").map(|rule| rule.span_at(0, 0).offset), Some(-3 * 3600));
        for refused in ["", "ES5", "EST", "EST5EDT,M13.1.0,M11.1.0", "EST5EDT,M3.2.0", "EST169"] {
            assert_eq!(TzRule::parse(refused), None, "{refused}");
        }
        // Rule times past midnight and negative ones (TZif v3), as in America/Godthab.
        let rule = TzRule::parse("<-02>2<-01>,M3.5.0/-1,M10.5.0/0").expect("valid");
        // 2026-03-29 (last Sunday) at -1:00 local standard time (-02) is 01:00 UTC.
        assert_eq!(rule.span_at(0, unix(2026, 3, 29, 1, 0)).offset, -3600);
        assert_eq!(rule.span_at(0, unix(2026, 3, 29, 0, 59)).offset, -7200);
    }
}
