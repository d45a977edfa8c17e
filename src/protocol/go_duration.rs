//! Go's `time.Duration` text: parsed in `-NAK 5s` bodies and `Nats-TTL` headers, written
//! in `409 Exceeded MaxRequestExpires of 1m0s` (Go formats that status with `%v`).

const NANOS_PER_MICRO: u64 = 1_000;
const NANOS_PER_MILLI: u64 = 1_000_000;
const NANOS_PER_SECOND: u64 = 1_000_000_000;
const NANOS_PER_MINUTE: u64 = 60 * NANOS_PER_SECOND;
const NANOS_PER_HOUR: u64 = 60 * NANOS_PER_MINUTE;

/// Formats nanoseconds like Go's `Duration.String`: `0s`, `1.5µs`, `100ms`, `5s`,
/// `1m0s`, `1h2m3.5s`, with a leading `-` for negative values.
pub fn format_go_duration(nanos: i64) -> String {
    let sign = if nanos < 0 { "-" } else { "" };
    let magnitude = nanos.unsigned_abs();
    if magnitude == 0 {
        return "0s".to_string();
    }
    if magnitude < NANOS_PER_SECOND {
        let (unit_nanos, unit) = match magnitude {
            value if value < NANOS_PER_MICRO => (1, "ns"),
            value if value < NANOS_PER_MILLI => (NANOS_PER_MICRO, "µs"),
            _ => (NANOS_PER_MILLI, "ms"),
        };
        return format!("{sign}{}{unit}", decimal(magnitude, unit_nanos));
    }
    let hours = magnitude / NANOS_PER_HOUR;
    let minutes = magnitude % NANOS_PER_HOUR / NANOS_PER_MINUTE;
    let seconds = decimal(magnitude % NANOS_PER_MINUTE, NANOS_PER_SECOND);
    match (hours, minutes) {
        (0, 0) => format!("{sign}{seconds}s"),
        (0, _) => format!("{sign}{minutes}m{seconds}s"),
        _ => format!("{sign}{hours}h{minutes}m{seconds}s"),
    }
}

/// `value / unit` with the fraction's trailing zeros dropped (`1500, 1000` → `1.5`).
fn decimal(value: u64, unit: u64) -> String {
    let whole = value / unit;
    let fraction = value % unit;
    if fraction == 0 {
        return whole.to_string();
    }
    let width = unit.ilog10() as usize;
    let digits = format!("{fraction:0width$}");
    format!("{whole}.{}", digits.trim_end_matches('0'))
}

/// Parses Go's `time.ParseDuration` syntax (`300ms`, `-1.5h`, `2h45m`, `1µs`/`1us`)
/// into nanoseconds; `None` when malformed or out of range.
pub fn parse_go_duration(text: &str) -> Option<i64> {
    let (negative, mut rest) = match text.as_bytes().first()? {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    if rest == "0" {
        return Some(0);
    }
    if rest.is_empty() {
        return None;
    }
    let mut total: u128 = 0;
    while !rest.is_empty() {
        let number_end = rest.find(|c: char| !c.is_ascii_digit() && c != '.').unwrap_or(rest.len());
        let (number, after) = rest.split_at(number_end);
        let unit_end = after.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(after.len());
        let (unit, after) = after.split_at(unit_end);
        let unit_nanos: u128 = match unit {
            "ns" => 1,
            "us" | "µs" | "μs" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            _ => return None,
        };
        total = total.checked_add(scaled(number, unit_nanos)?)?;
        rest = after;
    }
    let total = i64::try_from(total).ok()?;
    Some(if negative { -total } else { total })
}

/// `number` (digits with at most one `.`) times `unit_nanos`, truncated to whole nanos.
fn scaled(number: &str, unit_nanos: u128) -> Option<u128> {
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() && fraction.is_empty() || fraction.contains('.') {
        return None;
    }
    let whole_value: u128 = if whole.is_empty() { 0 } else { whole.parse().ok()? };
    let mut value = whole_value.checked_mul(unit_nanos)?;
    let mut place = unit_nanos;
    for digit in fraction.bytes().take(30) {
        place /= 10;
        value += u128::from(digit - b'0') * place;
    }
    Some(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_like_go() {
        let cases = [
            (0, "0s"),
            (1, "1ns"),
            (1_500, "1.5µs"),
            (100_000_000, "100ms"),
            (5_000_000_000, "5s"),
            (60_000_000_000, "1m0s"),
            (3_723_500_000_000, "1h2m3.5s"),
            (-2_000_000_000, "-2s"),
        ];
        for (nanos, text) in cases {
            assert_eq!(format_go_duration(nanos), text);
        }
    }

    #[test]
    fn parses_like_go() {
        assert_eq!(parse_go_duration("5s"), Some(5_000_000_000));
        assert_eq!(parse_go_duration("1.5s"), Some(1_500_000_000));
        assert_eq!(parse_go_duration("2h45m"), Some(9_900_000_000_000));
        assert_eq!(parse_go_duration("300us"), Some(300_000));
        assert_eq!(parse_go_duration("0"), Some(0));
        for bad in ["", "5", "s", "5x", "1..2s", "-"] {
            assert_eq!(parse_go_duration(bad), None, "{bad}");
        }
    }
}
