//! Calendar arithmetic for message schedules: RFC 3339 as Go's `time.RFC3339`
//! parses and formats it (dates through `calendar`), and rounding to the
//! second as Go's `Time.Round(time.Second)` does (half up).

use crate::calendar::{civil_from_days, days_from_civil};
use crate::limits::NANOS_PER_SECOND;

const SECONDS_PER_DAY: i64 = 86_400;
const NANOS_PER_SECOND_I64: i64 = NANOS_PER_SECOND as i64;

/// A wall-clock time broken into fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Civil {
    pub year: i64,
    pub month: u32,
    pub day: u32,
    pub hour: u32,
    pub minute: u32,
    pub second: u32,
}

/// The weekday (0 Sunday) of `days` since 1970-01-01 (a Thursday).
pub fn weekday_of_days(days: i64) -> u32 {
    (days + 4).rem_euclid(7) as u32
}

/// Days in `month` of `year`.
pub fn days_in_month(year: i64, month: u32) -> u32 {
    match month {
        2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Unix seconds of a civil time.
pub fn unix_seconds(civil: &Civil) -> i64 {
    days_from_civil(civil.year, civil.month, civil.day) * SECONDS_PER_DAY
        + i64::from(civil.hour) * 3600
        + i64::from(civil.minute) * 60
        + i64::from(civil.second)
}

/// `nanos` rounded to the nearest second, halves up (Go's `Round(time.Second)`).
pub fn round_to_second(nanos: i64) -> i64 {
    (nanos.saturating_add(NANOS_PER_SECOND_I64 / 2)).div_euclid(NANOS_PER_SECOND_I64) * NANOS_PER_SECOND_I64
}

/// Parses RFC 3339 as Go's `time.Parse(time.RFC3339, ..)` accepts it: `T` and `Z` in
/// upper case, an optional fraction, `Z` or a `±hh:mm` offset. Unix nanoseconds.
pub fn parse_rfc3339(text: &str) -> Option<i64> {
    let bytes = text.as_bytes();
    if bytes.len() < 20 || bytes[4] != b'-' || bytes[7] != b'-' || bytes[10] != b'T' {
        return None;
    }
    if bytes[13] != b':' || bytes[16] != b':' {
        return None;
    }
    let number = |range: std::ops::Range<usize>| -> Option<u32> {
        let part = text.get(range)?;
        part.bytes().all(|b| b.is_ascii_digit()).then(|| part.parse().ok())?
    };
    let civil = Civil {
        year: i64::from(number(0..4)?),
        month: number(5..7)?,
        day: number(8..10)?,
        hour: number(11..13)?,
        minute: number(14..16)?,
        second: number(17..19)?,
    };
    let valid_day = (1..=12).contains(&civil.month) && civil.day >= 1;
    if !valid_day || civil.day > days_in_month(civil.year, civil.month) {
        return None;
    }
    if civil.hour > 23 || civil.minute > 59 || civil.second > 59 {
        return None;
    }
    let mut rest = &text[19..];
    let mut fraction_nanos = 0i64;
    if let Some(fraction) = rest.strip_prefix('.') {
        let digits = fraction.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        for (index, digit) in fraction.bytes().take(digits).enumerate() {
            if index < 9 {
                fraction_nanos += i64::from(digit - b'0') * 10i64.pow(8 - index as u32);
            }
        }
        rest = &fraction[digits..];
    }
    let offset_seconds = match rest {
        "Z" => 0,
        _ => {
            let sign = match rest.as_bytes().first()? {
                b'+' => 1,
                b'-' => -1,
                _ => return None,
            };
            let (hours, minutes) = rest[1..].split_once(':')?;
            let valid = hours.len() == 2 && minutes.len() == 2;
            let hours: i64 = hours.parse().ok().filter(|h| valid && *h < 24)?;
            let minutes: i64 = minutes.parse().ok().filter(|m| *m < 60)?;
            sign * (hours * 3600 + minutes * 60)
        }
    };
    let seconds = unix_seconds(&civil) - offset_seconds;
    seconds.checked_mul(NANOS_PER_SECOND_I64)?.checked_add(fraction_nanos)
}

/// Formats Unix nanoseconds as Go's `Format(time.RFC3339)` in UTC: whole seconds, `Z`.
pub fn format_rfc3339(nanos: i64) -> String {
    format_rfc3339_at(nanos, 0)
}

/// As [`format_rfc3339`], in local time `offset_seconds` east of UTC: `Z` for a zero
/// offset, else `±hh:mm` (Go drops the seconds of an offset).
pub fn format_rfc3339_at(nanos: i64, offset_seconds: i64) -> String {
    let seconds = nanos.div_euclid(NANOS_PER_SECOND_I64) + offset_seconds;
    let (year, month, day) = civil_from_days(seconds.div_euclid(SECONDS_PER_DAY));
    let of_day = seconds.rem_euclid(SECONDS_PER_DAY);
    let (hour, minute, second) = (of_day / 3600, of_day % 3600 / 60, of_day % 60);
    let zone = match offset_seconds {
        0 => "Z".to_string(),
        _ => {
            let minutes = offset_seconds.abs() / 60;
            let sign = if offset_seconds < 0 { '-' } else { '+' };
            format!("{sign}{:02}:{:02}", minutes / 60, minutes % 60)
        }
    };
    format!("{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}{zone}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_round_trips_and_refuses_what_go_refuses() {
        let at = parse_rfc3339("2026-12-03T23:44:25Z").expect("valid");
        assert_eq!(format_rfc3339(at), "2026-12-03T23:44:25Z");
        assert_eq!(parse_rfc3339("2099-01-01T01:00:00+01:00"), parse_rfc3339("2099-01-01T00:00:00Z"));
        assert_eq!(
            parse_rfc3339("2099-01-01T00:00:00.5Z"),
            parse_rfc3339("2099-01-01T00:00:00Z").map(|n| n + 500_000_000)
        );
        for refused in ["2099-01-01t00:00:00z", "tomorrow", " 2099-01-01T00:00:00Z", "2099-02-30T00:00:00Z"] {
            assert_eq!(parse_rfc3339(refused), None, "{refused}");
        }
        assert_eq!(format_rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(weekday_of_days(days_from_civil(2026, 12, 3)), 4);
        assert_eq!(civil_from_days(days_from_civil(2024, 2, 29)), (2024, 2, 29));
    }

    #[test]
    fn rounds_half_up_to_the_second() {
        assert_eq!(round_to_second(1_499_999_999), 1_000_000_000);
        assert_eq!(round_to_second(1_500_000_000), 2_000_000_000);
    }
}
