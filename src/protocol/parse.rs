//! The incremental, zero-copy client protocol parser.
//!
//! Order of work for one call: recognise the operation name from as many bytes as are
//! there (garbage is refused at its first byte), find the end of the control line (bounded
//! by `CONTROL_LINE_BYTES_MAX`), split its arguments, then for PUB/HPUB check the sizes
//! and wait for the whole payload and its CR LF. Every decision depends only on bytes
//! already present, so a prefix of a stream yields either `Incomplete` or exactly what the
//! whole stream yields.

use super::error::{Operation, ParseError};
use super::{ClientOp, Parsed};
use crate::limits::{CONTROL_LINE_BYTES_MAX, SIZE_DIGITS_MAX};

const CR_LF_BYTES: usize = 2;
/// PUB/HPUB/SUB/UNSUB never take more than this many arguments.
const ARGUMENTS_MAX: usize = 4;

/// Parse one client operation from the front of `buf`; see the module docs of
/// [`crate::protocol`]. `max_payload` bounds PUB's size and HPUB's total size
/// (pass `usize::MAX` for no limit).
pub fn parse(buf: &[u8], max_payload: usize) -> Result<Parsed<'_>, ParseError> {
    let incomplete = Ok(Parsed::Incomplete { needed: None });
    let Some((operation, name_len)) = recognise_operation(buf)? else {
        return incomplete;
    };
    let Some(line) = find_control_line(buf)? else {
        return incomplete;
    };
    let arguments = &buf[name_len..line.content_end];
    let consumed = line.next;
    let op = match operation {
        Operation::Pub | Operation::Hpub => {
            return parse_publish(buf, operation, arguments, line.next, max_payload);
        }
        Operation::Sub => parse_sub(arguments)?,
        Operation::Unsub => parse_unsub(arguments)?,
        Operation::Connect => ClientOp::Connect { json: trim_start(arguments) },
        Operation::Info => ClientOp::Info { json: trim_start(arguments) },
        Operation::Err => ClientOp::Err { text: trim_start(arguments) },
        Operation::Ping => ClientOp::Ping,
        Operation::Pong => ClientOp::Pong,
        Operation::Ok => ClientOp::Ok,
    };
    Ok(Parsed::Op { op, consumed })
}

/// Where a control line ends: `content_end` excludes the CR LF (or bare LF),
/// `next` is the index just past the LF.
struct ControlLine {
    content_end: usize,
    next: usize,
}

/// Recognise the operation name at the front of `buf` (ASCII case-insensitive).
/// `Ok(None)`: too few bytes to decide. Returns the operation and its name's length.
fn recognise_operation(buf: &[u8]) -> Result<Option<(Operation, usize)>, ParseError> {
    let Some(&first) = buf.first() else {
        return Ok(None);
    };
    let operation = match first.to_ascii_uppercase() {
        b'P' => match buf.get(1).map(u8::to_ascii_uppercase) {
            None => return Ok(None),
            Some(b'U') => Operation::Pub,
            Some(b'I') => Operation::Ping,
            Some(b'O') => Operation::Pong,
            Some(_) => return Err(ParseError::UnknownOperation { offset: 1 }),
        },
        b'H' => Operation::Hpub,
        b'S' => Operation::Sub,
        b'U' => Operation::Unsub,
        b'C' => Operation::Connect,
        b'I' => Operation::Info,
        b'+' => Operation::Ok,
        b'-' => Operation::Err,
        _ => return Err(ParseError::UnknownOperation { offset: 0 }),
    };
    let name = operation.name().as_bytes();
    let available = buf.len().min(name.len());
    if let Some(offset) = (0..available).find(|&index| !buf[index].eq_ignore_ascii_case(&name[index])) {
        return Err(ParseError::UnknownOperation { offset });
    }
    if available < name.len() {
        return Ok(None);
    }
    if needs_whitespace_after_name(operation) {
        match buf.get(name.len()) {
            None => return Ok(None),
            Some(b' ' | b'\t') => {}
            Some(_) => return Err(ParseError::UnknownOperation { offset: name.len() }),
        }
    }
    Ok(Some((operation, name.len())))
}

/// nats-server requires a space or tab right after these names; CONNECT and INFO skip
/// optional whitespace; PING, PONG and +OK ignore whatever follows up to LF.
fn needs_whitespace_after_name(operation: Operation) -> bool {
    matches!(operation, Operation::Pub | Operation::Hpub | Operation::Sub | Operation::Unsub | Operation::Err)
}

/// Find the LF ending the control line at the front of `buf`, refusing lines longer
/// than `CONTROL_LINE_BYTES_MAX` (CR LF not counted) whether or not their end arrived.
fn find_control_line(buf: &[u8]) -> Result<Option<ControlLine>, ParseError> {
    // A line of CONTROL_LINE_BYTES_MAX bytes has its LF at most at index MAX + 1.
    let window = &buf[..buf.len().min(CONTROL_LINE_BYTES_MAX + CR_LF_BYTES)];
    let Some(line_feed) = window.iter().position(|&byte| byte == b'\n') else {
        if buf.len() >= CONTROL_LINE_BYTES_MAX + CR_LF_BYTES {
            return Err(ParseError::ControlLineTooLong { limit: CONTROL_LINE_BYTES_MAX });
        }
        return Ok(None);
    };
    let content_end = if line_feed > 0 && buf[line_feed - 1] == b'\r' { line_feed - 1 } else { line_feed };
    if content_end > CONTROL_LINE_BYTES_MAX {
        return Err(ParseError::ControlLineTooLong { limit: CONTROL_LINE_BYTES_MAX });
    }
    Ok(Some(ControlLine { content_end, next: line_feed + 1 }))
}

/// PUB/HPUB: arguments, then the payload and its CR LF starting at `payload_start`.
fn parse_publish<'a>(
    buf: &'a [u8],
    operation: Operation,
    arguments: &'a [u8],
    payload_start: usize,
    max_payload: usize,
) -> Result<Parsed<'a>, ParseError> {
    let mut fields: [&[u8]; ARGUMENTS_MAX] = [&[]; ARGUMENTS_MAX];
    let count = split_arguments(arguments, b"", &mut fields);
    let (subject, reply, header_size, total_size) = match (operation, count) {
        (Operation::Pub, 2) => (fields[0], None, None, fields[1]),
        (Operation::Pub, 3) => (fields[0], Some(fields[1]), None, fields[2]),
        (Operation::Hpub, 3) => (fields[0], None, Some(fields[1]), fields[2]),
        (Operation::Hpub, 4) => (fields[0], Some(fields[1]), Some(fields[2]), fields[3]),
        _ => return Err(ParseError::ArgumentCount { operation, count }),
    };
    let header_size = match header_size {
        None => None,
        Some(digits) => Some(parse_size(digits).ok_or(ParseError::InvalidHeaderSize)?),
    };
    let total_size = parse_size(total_size).ok_or(ParseError::InvalidSize { operation })?;
    if let Some(header_size) = header_size {
        if header_size > total_size {
            return Err(ParseError::HeaderSizeExceedsTotal { header_size, total_size });
        }
    }
    if total_size > max_payload {
        return Err(ParseError::MaxPayloadExceeded { size: total_size, max_payload });
    }
    // Cannot overflow: payload_start <= CONTROL_LINE_BYTES_MAX + 2 and the size has at
    // most SIZE_DIGITS_MAX digits.
    let payload_end = payload_start + total_size;
    let needed = payload_end + CR_LF_BYTES;
    if buf.len() < needed {
        if buf.len() > payload_end && buf[payload_end] != b'\r' {
            return Err(ParseError::PayloadTerminator);
        }
        return Ok(Parsed::Incomplete { needed: Some(needed) });
    }
    if &buf[payload_end..needed] != b"\r\n" {
        return Err(ParseError::PayloadTerminator);
    }
    let body = &buf[payload_start..payload_end];
    let (headers, payload) = match header_size {
        None => (None, body),
        Some(header_size) => (Some(&body[..header_size]), &body[header_size..]),
    };
    let op = ClientOp::Pub { subject, reply, headers, payload };
    Ok(Parsed::Op { op, consumed: needed })
}

fn parse_sub(arguments: &[u8]) -> Result<ClientOp<'_>, ParseError> {
    let mut fields: [&[u8]; ARGUMENTS_MAX] = [&[]; ARGUMENTS_MAX];
    // nats-server splits SUB and UNSUB arguments on CR and LF too.
    match split_arguments(arguments, b"\r", &mut fields) {
        2 => Ok(ClientOp::Sub { subject: fields[0], queue: None, sid: fields[1] }),
        3 => Ok(ClientOp::Sub { subject: fields[0], queue: Some(fields[1]), sid: fields[2] }),
        count => Err(ParseError::ArgumentCount { operation: Operation::Sub, count }),
    }
}

fn parse_unsub(arguments: &[u8]) -> Result<ClientOp<'_>, ParseError> {
    let mut fields: [&[u8]; ARGUMENTS_MAX] = [&[]; ARGUMENTS_MAX];
    match split_arguments(arguments, b"\r", &mut fields) {
        1 => Ok(ClientOp::Unsub { sid: fields[0], max: None }),
        2 => {
            // As nats-server: a max that is 0 or not a valid size means "no max".
            let max = parse_size(fields[1]).filter(|&max| max > 0).map(|max| max as u64);
            Ok(ClientOp::Unsub { sid: fields[0], max })
        }
        count => Err(ParseError::ArgumentCount { operation: Operation::Unsub, count }),
    }
}

/// Split on runs of spaces, tabs and `extra_separators`; store the first fields in
/// `fields` and return how many there are in total.
fn split_arguments<'a>(arguments: &'a [u8], extra_separators: &[u8], fields: &mut [&'a [u8]; ARGUMENTS_MAX]) -> usize {
    let is_separator = |byte: u8| byte == b' ' || byte == b'\t' || extra_separators.contains(&byte);
    let mut count = 0;
    let mut index = 0;
    while index < arguments.len() {
        if is_separator(arguments[index]) {
            index += 1;
            continue;
        }
        let start = index;
        while index < arguments.len() && !is_separator(arguments[index]) {
            index += 1;
        }
        if count < ARGUMENTS_MAX {
            fields[count] = &arguments[start..index];
        }
        count += 1;
    }
    count
}

/// A size: 1 to `SIZE_DIGITS_MAX` ASCII digits, as nats-server's `parseSize`.
fn parse_size(digits: &[u8]) -> Option<usize> {
    if digits.is_empty() || digits.len() > SIZE_DIGITS_MAX {
        return None;
    }
    digits
        .iter()
        .try_fold(0usize, |value, &digit| digit.is_ascii_digit().then(|| value * 10 + usize::from(digit - b'0')))
}

fn trim_start(bytes: &[u8]) -> &[u8] {
    let start = bytes.iter().position(|&byte| byte != b' ' && byte != b'\t');
    &bytes[start.unwrap_or(bytes.len())..]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_refuses_ten_digits_and_non_digits() {
        assert_eq!(parse_size(b"999999999"), Some(999_999_999));
        assert_eq!(parse_size(b"1000000000"), None);
        assert_eq!(parse_size(b"12a"), None);
        assert_eq!(parse_size(b""), None);
        assert_eq!(parse_size(b"-1"), None);
    }

    #[test]
    fn split_counts_fields_beyond_capacity() {
        let mut fields: [&[u8]; ARGUMENTS_MAX] = [&[]; ARGUMENTS_MAX];
        assert_eq!(split_arguments(b" a\t\tb  c d e f ", b"", &mut fields), 6);
        assert_eq!(fields, [b"a" as &[u8], b"b", b"c", b"d"]);
    }
}
