//! Encoders for what the server writes to clients. Each appends one complete operation
//! to a [`BufMut`] (a `Vec<u8>` or a `BytesMut`), in the exact bytes clients expect:
//! upper-case names, single spaces between arguments (async-nats splits MSG on `' '`
//! only), CR LF terminators.

use bytes::BufMut;

use super::info::ServerInfo;

/// `PING\r\n`
pub const PING: &[u8] = b"PING\r\n";
/// `PONG\r\n`
pub const PONG: &[u8] = b"PONG\r\n";
/// `+OK\r\n`
pub const OK: &[u8] = b"+OK\r\n";

/// Longest decimal text of a `usize`.
const DECIMAL_DIGITS_MAX: usize = 20;

/// `MSG <subject> <sid> [reply] <#bytes>\r\n<payload>\r\n`
pub fn encode_msg<B: BufMut>(out: &mut B, subject: &[u8], sid: &[u8], reply: Option<&[u8]>, payload: &[u8]) {
    out.put_slice(b"MSG ");
    put_subject_sid_reply(out, subject, sid, reply);
    put_decimal(out, payload.len());
    out.put_slice(b"\r\n");
    out.put_slice(payload);
    out.put_slice(b"\r\n");
}

/// `HMSG <subject> <sid> [reply] <#header bytes> <#total bytes>\r\n<headers><payload>\r\n`
/// where `headers` is a complete header block (see [`super::headers`]).
pub fn encode_hmsg<B: BufMut>(
    out: &mut B,
    subject: &[u8],
    sid: &[u8],
    reply: Option<&[u8]>,
    headers: &[u8],
    payload: &[u8],
) {
    out.put_slice(b"HMSG ");
    put_subject_sid_reply(out, subject, sid, reply);
    put_decimal(out, headers.len());
    out.put_u8(b' ');
    put_decimal(out, headers.len() + payload.len());
    out.put_slice(b"\r\n");
    out.put_slice(headers);
    out.put_slice(payload);
    out.put_slice(b"\r\n");
}

/// `INFO {json}\r\n`
pub fn encode_info<B: BufMut>(out: &mut B, info: &ServerInfo) {
    out.put_slice(b"INFO ");
    let mut writer = out.writer();
    // Serialising plain strings, integers and booleans into memory cannot fail.
    serde_json::to_writer(&mut writer, info).expect("ServerInfo serialises to JSON");
    writer.into_inner().put_slice(b"\r\n");
}

/// `-ERR '<text>'\r\n`; `text` is one of nats-server's error texts, e.g.
/// [`super::ParseError::nats_text`].
pub fn encode_err<B: BufMut>(out: &mut B, text: &str) {
    out.put_slice(b"-ERR '");
    out.put_slice(text.as_bytes());
    out.put_slice(b"'\r\n");
}

pub fn encode_ping<B: BufMut>(out: &mut B) {
    out.put_slice(PING);
}

pub fn encode_pong<B: BufMut>(out: &mut B) {
    out.put_slice(PONG);
}

pub fn encode_ok<B: BufMut>(out: &mut B) {
    out.put_slice(OK);
}

fn put_subject_sid_reply<B: BufMut>(out: &mut B, subject: &[u8], sid: &[u8], reply: Option<&[u8]>) {
    out.put_slice(subject);
    out.put_u8(b' ');
    out.put_slice(sid);
    out.put_u8(b' ');
    if let Some(reply) = reply {
        out.put_slice(reply);
        out.put_u8(b' ');
    }
}

/// "00", "01", ... "99": two digits per division.
const DIGIT_PAIRS: &[u8; 200] = b"\
0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

/// Append `value` in decimal without allocating. Hot (message sizes, ack subjects):
/// two digits per step.
pub(crate) fn put_decimal<B: BufMut>(out: &mut B, value: usize) {
    let mut digits = [0u8; DECIMAL_DIGITS_MAX];
    let width = decimal_width(value);
    write_digits(&mut digits[..width], value);
    out.put_slice(&digits[..width]);
}

/// [`put_decimal`] for a `Vec`: the digits are written in place, so the copy is of a
/// fixed size (a few stores) instead of a variable-length `memmove` call per number,
/// which showed in pull-consume profiles (five numbers per ack subject).
pub(crate) fn push_decimal(out: &mut Vec<u8>, value: usize) {
    let at = out.len();
    let width = decimal_width(value);
    out.extend_from_slice(&[0u8; DECIMAL_DIGITS_MAX]);
    write_digits(&mut out[at..at + width], value);
    out.truncate(at + width);
}

/// How many decimal digits `value` has. `ilog10` compares instead of dividing once per
/// digit: an ack subject's nanosecond timestamp has 19 digits, and the dividing loop was
/// most of `AckSubjectBuilder::build`'s ~10% of a pull-consume profile.
pub(crate) fn decimal_width(value: usize) -> usize {
    value.checked_ilog10().map_or(1, |log| log as usize + 1)
}

/// Writes `value` into `digits`, whose length is its [`decimal_width`].
fn write_digits(digits: &mut [u8], mut value: usize) {
    let mut end = digits.len();
    while value >= 100 {
        let pair = (value % 100) * 2;
        value /= 100;
        end -= 2;
        digits[end..end + 2].copy_from_slice(&DIGIT_PAIRS[pair..pair + 2]);
    }
    if value >= 10 {
        let pair = value * 2;
        digits[..2].copy_from_slice(&DIGIT_PAIRS[pair..pair + 2]);
    } else {
        digits[0] = b'0' + value as u8;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pushed_decimals_match_put_decimal() {
        let mut values = vec![0usize, 1, 9, 10, 11, 99, 100, 101, 999, 1000, 12_345, usize::MAX - 1, usize::MAX];
        values.extend((0..64).map(|shift| 1usize << shift));
        values.extend((1..20).map(|power| 10usize.pow(power) - 1));
        for value in values {
            let mut pushed = b"x.".to_vec();
            push_decimal(&mut pushed, value);
            assert_eq!(pushed, format!("x.{value}").as_bytes());
        }
    }

    #[test]
    fn decimal_covers_zero_and_extremes() {
        for value in [0usize, 7, 9, 10, 99, 100, 101, 999, 1000, 65_535, 1_048_576, usize::MAX - 1, usize::MAX] {
            let mut out = Vec::new();
            put_decimal(&mut out, value);
            assert_eq!(out, value.to_string().as_bytes());
        }
    }
}
