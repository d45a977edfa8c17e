//! Wall-clock timestamps as the JetStream API writes them: RFC 3339 in UTC with `Z`,
//! nanosecond precision with trailing zeros trimmed (Go's `time.RFC3339Nano`), and
//! Go's zero time `0001-01-01T00:00:00Z` for "never".
//!
//! Durations are not here: on the wire they are plain `i64` nanoseconds.

use serde::{de, Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

use crate::calendar::{civil_from_days, days_from_civil};

const NANOS_PER_SECOND: i64 = 1_000_000_000;
const SECONDS_PER_DAY: i64 = 86_400;
/// Seconds from 0001-01-01T00:00:00Z (Go's zero `time.Time`) to the Unix epoch.
const GO_ZERO_UNIX_SECONDS: i64 = -62_135_596_800;

/// An instant in UTC, stored as seconds and nanoseconds since the Unix epoch so that Go's
/// zero time (year 1, beyond the `i64` nanosecond range) is representable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp {
    seconds: i64,
    nanos: u32,
}

impl Timestamp {
    /// Go's zero time; JetStream writes it for `first_ts`/`last_ts` of an empty stream.
    pub const ZERO: Timestamp = Timestamp { seconds: GO_ZERO_UNIX_SECONDS, nanos: 0 };

    /// The instant `unix_nanos` nanoseconds after 1970-01-01T00:00:00Z.
    pub fn from_unix_nanos(unix_nanos: i64) -> Timestamp {
        Timestamp {
            seconds: unix_nanos.div_euclid(NANOS_PER_SECOND),
            nanos: unix_nanos.rem_euclid(NANOS_PER_SECOND) as u32,
        }
    }

    /// Nanoseconds since the Unix epoch, or `None` when out of `i64` range (e.g. `ZERO`).
    pub fn unix_nanos(self) -> Option<i64> {
        self.seconds.checked_mul(NANOS_PER_SECOND)?.checked_add(i64::from(self.nanos))
    }

    pub fn is_zero(self) -> bool {
        self == Timestamp::ZERO
    }

    /// Parses RFC 3339 (`2025-06-01T10:00:00.5Z`, `...+02:00`), normalising to UTC.
    pub fn parse_rfc3339(text: &str) -> Option<Timestamp> {
        let bytes = text.as_bytes();
        if bytes.len() < 20 || bytes[4] != b'-' || bytes[7] != b'-' || bytes[13] != b':' {
            return None;
        }
        if !matches!(bytes[10], b'T' | b't' | b' ') || bytes[16] != b':' {
            return None;
        }
        let year = digits(&bytes[0..4])?;
        let month = digits(&bytes[5..7])?;
        let day = digits(&bytes[8..10])?;
        let hour = digits(&bytes[11..13])?;
        let minute = digits(&bytes[14..16])?;
        let second = digits(&bytes[17..19])?;
        if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 || second > 60 {
            return None;
        }
        let mut rest = &bytes[19..];
        let mut nanos: u32 = 0;
        if rest.first() == Some(&b'.') {
            let count = rest[1..].iter().take_while(|b| b.is_ascii_digit()).count();
            if count == 0 || count > 9 {
                return None;
            }
            nanos = digits(&rest[1..=count])? as u32 * 10u32.pow(9 - count as u32);
            rest = &rest[1 + count..];
        }
        let offset_seconds = match rest {
            [b'Z' | b'z'] => 0,
            [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2] => {
                let magnitude = digits(&[*h1, *h2])? * 3600 + digits(&[*m1, *m2])? * 60;
                if *sign == b'+' {
                    magnitude
                } else {
                    -magnitude
                }
            }
            _ => return None,
        };
        // Validated above: month 1-12, day 1-31.
        let days = days_from_civil(year, month as u32, day as u32);
        let seconds = days * SECONDS_PER_DAY + hour * 3600 + minute * 60 + second - offset_seconds;
        Some(Timestamp { seconds, nanos })
    }
}

impl fmt::Display for Timestamp {
    /// Go `time.RFC3339Nano` in UTC: fraction trimmed of trailing zeros, omitted when zero.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let days = self.seconds.div_euclid(SECONDS_PER_DAY);
        let second_of_day = self.seconds.rem_euclid(SECONDS_PER_DAY);
        let (year, month, day) = civil_from_days(days);
        write!(
            f,
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
            year,
            month,
            day,
            second_of_day / 3600,
            second_of_day % 3600 / 60,
            second_of_day % 60
        )?;
        if self.nanos != 0 {
            let mut fraction = self.nanos;
            let mut width = 9;
            while fraction % 10 == 0 {
                fraction /= 10;
                width -= 1;
            }
            write!(f, ".{:0width$}", fraction, width = width)?;
        }
        f.write_str("Z")
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        // Go's parser is the judge (it refuses `2024-02-30`, a space for `T`), with its text.
        if let Some(go_text) = go_rfc3339_error(&text) {
            return Err(de::Error::custom(go_text));
        }
        Timestamp::parse_rfc3339(&text).ok_or_else(|| de::Error::custom(format!("parsing time {text:?} as RFC 3339")))
    }
}

fn digits(bytes: &[u8]) -> Option<i64> {
    bytes.iter().try_fold(0i64, |value, byte| byte.is_ascii_digit().then(|| value * 10 + i64::from(byte - b'0')))
}

/// Go's `time.Parse(time.RFC3339, text)` error, as `time.Time`'s JSON decoder returns it
/// (`parsing time "x" as "2006-01-02T15:04:05Z07:00": cannot parse "x" as "2006"`), or
/// `None` when Go's parser would accept `text`.
pub fn go_rfc3339_error(text: &str) -> Option<String> {
    use super::request::go_quote;
    const LAYOUT: &str = "2006-01-02T15:04:05Z07:00";
    let cannot_parse = |rest: &str, element: &str| {
        format!(
            "parsing time {} as {}: cannot parse {} as {}",
            go_quote(text),
            go_quote(LAYOUT),
            go_quote(rest),
            go_quote(element)
        )
    };
    let out_of_range = |what: &str| format!("parsing time {}: {what} out of range", go_quote(text));
    let mut rest = text;
    // Two digits (or one, when not `fixed`), as Go's `getnum`.
    let number = |rest: &mut &str, fixed: bool| -> Option<u32> {
        let bytes = rest.as_bytes();
        if !bytes.first()?.is_ascii_digit() {
            return None;
        }
        if !bytes.get(1).is_some_and(u8::is_ascii_digit) {
            if fixed {
                return None;
            }
            *rest = &rest[1..];
            return Some(u32::from(bytes[0] - b'0'));
        }
        *rest = &rest[2..];
        Some(u32::from(bytes[0] - b'0') * 10 + u32::from(bytes[1] - b'0'))
    };
    let literal = |rest: &mut &str, separator: &str| -> Result<(), String> {
        match rest.strip_prefix(separator) {
            Some(after) => {
                *rest = after;
                Ok(())
            }
            None => Err(cannot_parse(rest, separator)),
        }
    };
    let digits4 = rest.len() >= 4 && rest.as_bytes()[..4].iter().all(u8::is_ascii_digit);
    if !digits4 {
        return Some(cannot_parse(rest, "2006"));
    }
    let year: u32 = rest[..4].parse().ok()?;
    rest = &rest[4..];
    let fields: [(&str, &str, bool, u32, &str); 5] = [
        ("-", "01", true, 12, "month"),
        // Any two-digit day passes here; the calendar checks it at the end, as Go does.
        ("-", "02", true, 99, "day"),
        ("T", "15", false, 23, "hour"),
        (":", "04", true, 59, "minute"),
        (":", "05", true, 59, "second"),
    ];
    let mut values = [0u32; 5];
    for (index, (separator, element, fixed, max, name)) in fields.into_iter().enumerate() {
        if let Err(error) = literal(&mut rest, separator) {
            return Some(error);
        }
        let hold = rest;
        let Some(value) = number(&mut rest, fixed) else {
            return Some(cannot_parse(hold, element));
        };
        if value > max || (index == 0 && value == 0) {
            return Some(out_of_range(name));
        }
        values[index] = value;
    }
    // A fraction after the seconds is taken although the layout has none.
    let bytes = rest.as_bytes();
    if bytes.len() >= 2 && matches!(bytes[0], b'.' | b',') && bytes[1].is_ascii_digit() {
        let digits = bytes[1..].iter().take_while(|b| b.is_ascii_digit()).count();
        rest = &rest[1 + digits..];
    }
    let hold = rest;
    if let Some(after) = rest.strip_prefix('Z') {
        rest = after;
    } else {
        let bytes = rest.as_bytes();
        let well_formed = bytes.len() >= 6
            && bytes[3] == b':'
            && bytes[1..3].iter().chain(&bytes[4..6]).all(u8::is_ascii_digit)
            && matches!(bytes[0], b'+' | b'-');
        if !well_formed {
            return Some(cannot_parse(hold, "Z07:00"));
        }
        rest = &rest[6..];
    }
    if !rest.is_empty() {
        return Some(format!("parsing time {}: extra text: {}", go_quote(text), go_quote(rest)));
    }
    let (month, day) = (values[0], values[1]);
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days_in_month = match month {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    };
    if day < 1 || day > days_in_month {
        return Some(out_of_range("day"));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_time_is_go_zero() {
        assert_eq!(Timestamp::ZERO.to_string(), "0001-01-01T00:00:00Z");
        assert_eq!(Timestamp::parse_rfc3339("0001-01-01T00:00:00Z"), Some(Timestamp::ZERO));
        assert_eq!(Timestamp::ZERO.unix_nanos(), None);
    }

    #[test]
    fn fraction_trims_trailing_zeros_like_go() {
        let stamp = Timestamp::parse_rfc3339("2026-11-30T01:31:16.36454655Z").unwrap();
        assert_eq!(stamp.to_string(), "2026-11-30T01:31:16.36454655Z");
        assert_eq!(Timestamp::from_unix_nanos(1_500_000_000).to_string(), "1970-01-01T00:00:01.5Z");
        assert_eq!(Timestamp::from_unix_nanos(0).to_string(), "1970-01-01T00:00:00Z");
    }

    #[test]
    fn unix_nanos_round_trip_across_leap_years_and_before_epoch() {
        for nanos in [0, 1, -1, 951_782_400_123_456_789, 4_107_542_399_999_999_999, -2_208_988_800_000_000_000] {
            let stamp = Timestamp::from_unix_nanos(nanos);
            assert_eq!(stamp.unix_nanos(), Some(nanos));
            assert_eq!(Timestamp::parse_rfc3339(&stamp.to_string()), Some(stamp), "{stamp}");
        }
        assert_eq!(Timestamp::from_unix_nanos(951_782_400_000_000_000).to_string(), "2000-02-29T00:00:00Z");
    }

    #[test]
    fn offsets_are_normalised_to_utc() {
        let shifted = Timestamp::parse_rfc3339("2020-01-02T05:04:05.5+02:00").unwrap();
        assert_eq!(shifted.to_string(), "2020-01-02T03:04:05.5Z");
        assert_eq!(Timestamp::parse_rfc3339("2020-01-02T03:04:05"), None);
        assert_eq!(Timestamp::parse_rfc3339("2020-13-02T03:04:05Z"), None);
    }
}
