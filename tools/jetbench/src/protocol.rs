//! The NATS client protocol as the load generator needs it: a pure, incremental parser of
//! what a server sends (INFO, MSG, HMSG, PING, PONG, +OK, -ERR) and encoders for what a
//! client sends. No I/O here: the parser looks at a byte slice, says `Incomplete` when a
//! whole frame is not there yet, and borrows everything it returns from that slice.

use crate::limits::CONTROL_LINE_MAX_BYTES;

/// A frame the server sent.
#[derive(Debug, PartialEq, Eq)]
pub enum ServerOp<'a> {
    Info(&'a [u8]),
    Msg(Message<'a>),
    Ping,
    Pong,
    Ok,
    Err(&'a [u8]),
}

/// A delivered message (MSG or HMSG).
#[derive(Debug, PartialEq, Eq)]
pub struct Message<'a> {
    pub subject: &'a [u8],
    pub sid: u64,
    pub reply: Option<&'a [u8]>,
    /// The header block, from `NATS/1.0` to the blank line, for HMSG.
    pub header: Option<&'a [u8]>,
    pub payload: &'a [u8],
}

impl Message<'_> {
    /// The inline status code of a header block (`NATS/1.0 408 Request Timeout` gives 408).
    pub fn status(&self) -> Option<u16> {
        let header = self.header?;
        let rest = header.strip_prefix(b"NATS/1.0 ")?;
        let code = rest.get(..3)?;
        std::str::from_utf8(code).ok()?.parse().ok()
    }

    /// The value of header `name` (exact case), if present.
    pub fn header_value(&self, name: &[u8]) -> Option<&[u8]> {
        let header = self.header?;
        header.split(|&byte| byte == b'\n').skip(1).find_map(|line| {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            let value = line.strip_prefix(name)?.strip_prefix(b":")?;
            Some(value.trim_ascii())
        })
    }
}

#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum ProtocolError {
    #[error("control line longer than {CONTROL_LINE_MAX_BYTES} bytes")]
    ControlLineTooLong,
    #[error("unknown operation {0:?}")]
    UnknownOperation(String),
    #[error("malformed {op} arguments {line:?}")]
    MalformedArguments { op: &'static str, line: String },
    #[error("frame of {size} bytes does not end in CRLF")]
    MissingTrailer { size: usize },
}

/// The outcome of looking at the front of an inbound buffer.
#[derive(Debug, PartialEq, Eq)]
pub enum Parsed<'a> {
    /// A whole frame of `consumed` bytes.
    Frame { op: ServerOp<'a>, consumed: usize },
    /// More bytes are needed; `needed` is the whole frame's size when it is known.
    Incomplete { needed: Option<usize> },
}

/// Parses the frame at the front of `buffer`.
pub fn parse(buffer: &[u8]) -> Result<Parsed<'_>, ProtocolError> {
    let Some(line_end) = memchr::memmem::find(buffer, b"\r\n") else {
        if buffer.len() > CONTROL_LINE_MAX_BYTES {
            return Err(ProtocolError::ControlLineTooLong);
        }
        return Ok(Parsed::Incomplete { needed: None });
    };
    let line = &buffer[..line_end];
    let after_line = line_end + 2;
    let (op_name, arguments) = split_op(line);
    let frame = |op| Ok(Parsed::Frame { op, consumed: after_line });
    if op_name.eq_ignore_ascii_case(b"MSG") {
        parse_message(buffer, arguments, after_line, false)
    } else if op_name.eq_ignore_ascii_case(b"HMSG") {
        parse_message(buffer, arguments, after_line, true)
    } else if op_name.eq_ignore_ascii_case(b"PING") {
        frame(ServerOp::Ping)
    } else if op_name.eq_ignore_ascii_case(b"PONG") {
        frame(ServerOp::Pong)
    } else if op_name.eq_ignore_ascii_case(b"+OK") {
        frame(ServerOp::Ok)
    } else if op_name.eq_ignore_ascii_case(b"-ERR") {
        frame(ServerOp::Err(arguments))
    } else if op_name.eq_ignore_ascii_case(b"INFO") {
        frame(ServerOp::Info(arguments))
    } else {
        Err(ProtocolError::UnknownOperation(String::from_utf8_lossy(op_name).into_owned()))
    }
}

fn split_op(line: &[u8]) -> (&[u8], &[u8]) {
    match line.iter().position(|&byte| byte == b' ' || byte == b'\t') {
        Some(space) => (&line[..space], line[space + 1..].trim_ascii()),
        None => (line, &[]),
    }
}

fn parse_message<'a>(
    buffer: &'a [u8],
    arguments: &'a [u8],
    body_start: usize,
    with_header: bool,
) -> Result<Parsed<'a>, ProtocolError> {
    let op: &'static str = if with_header { "HMSG" } else { "MSG" };
    let malformed = || ProtocolError::MalformedArguments { op, line: String::from_utf8_lossy(arguments).into() };
    let mut fields: [&[u8]; 5] = [&[]; 5];
    let mut count = 0;
    for field in arguments.split(|&b| b == b' ' || b == b'\t').filter(|f| !f.is_empty()) {
        if count == fields.len() {
            return Err(malformed());
        }
        fields[count] = field;
        count += 1;
    }
    let sizes_count = if with_header { 2 } else { 1 };
    let (reply, sizes) = match count - sizes_count.min(count) {
        2 => (None, &fields[2..count]),
        3 => (Some(fields[2]), &fields[3..count]),
        _ => return Err(malformed()),
    };
    let sid = parse_decimal(fields[1]).ok_or_else(malformed)?;
    let total = parse_decimal(sizes[sizes_count - 1]).ok_or_else(malformed)? as usize;
    let header_size = if with_header { parse_decimal(sizes[0]).ok_or_else(malformed)? as usize } else { 0 };
    if header_size > total {
        return Err(malformed());
    }
    let frame_size = body_start + total + 2;
    if buffer.len() < frame_size {
        return Ok(Parsed::Incomplete { needed: Some(frame_size) });
    }
    if &buffer[body_start + total..frame_size] != b"\r\n" {
        return Err(ProtocolError::MissingTrailer { size: total });
    }
    let body = &buffer[body_start..body_start + total];
    let message = Message {
        subject: fields[0],
        sid,
        reply,
        header: with_header.then(|| &body[..header_size]),
        payload: &body[header_size..],
    };
    Ok(Parsed::Frame { op: ServerOp::Msg(message), consumed: frame_size })
}

/// Parses an unsigned decimal; `None` for empty, non-digit or overflowing input.
pub fn parse_decimal(digits: &[u8]) -> Option<u64> {
    if digits.is_empty() {
        return None;
    }
    digits.iter().try_fold(0u64, |value, &digit| {
        let digit = digit.checked_sub(b'0').filter(|d| *d <= 9)?;
        value.checked_mul(10)?.checked_add(u64::from(digit))
    })
}

/// Appends `PUB <subject> [reply] <size>\r\n<payload>\r\n` to `out`.
pub fn encode_pub(out: &mut Vec<u8>, subject: &[u8], reply: Option<&[u8]>, payload: &[u8]) {
    out.extend_from_slice(b"PUB ");
    out.extend_from_slice(subject);
    out.push(b' ');
    if let Some(reply) = reply {
        out.extend_from_slice(reply);
        out.push(b' ');
    }
    append_decimal(out, payload.len() as u64);
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(payload);
    out.extend_from_slice(b"\r\n");
}

/// Appends `HPUB <subject> [reply] <header size> <total size>\r\n<header><payload>\r\n`;
/// `header` is a whole header block (`NATS/1.0\r\n...\r\n\r\n`).
pub fn encode_hpub(out: &mut Vec<u8>, subject: &[u8], reply: Option<&[u8]>, header: &[u8], payload: &[u8]) {
    out.extend_from_slice(b"HPUB ");
    out.extend_from_slice(subject);
    out.push(b' ');
    if let Some(reply) = reply {
        out.extend_from_slice(reply);
        out.push(b' ');
    }
    append_decimal(out, header.len() as u64);
    out.push(b' ');
    append_decimal(out, (header.len() + payload.len()) as u64);
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(header);
    out.extend_from_slice(payload);
    out.extend_from_slice(b"\r\n");
}

/// Appends `SUB <subject> [queue] <sid>\r\n` to `out`.
pub fn encode_sub(out: &mut Vec<u8>, subject: &[u8], queue: Option<&[u8]>, sid: u64) {
    out.extend_from_slice(b"SUB ");
    out.extend_from_slice(subject);
    out.push(b' ');
    if let Some(queue) = queue {
        out.extend_from_slice(queue);
        out.push(b' ');
    }
    append_decimal(out, sid);
    out.extend_from_slice(b"\r\n");
}

/// Appends the decimal digits of `value` without allocating.
pub fn append_decimal(out: &mut Vec<u8>, mut value: u64) {
    let mut digits = [0u8; 20];
    let mut start = digits.len();
    loop {
        start -= 1;
        digits[start] = b'0' + (value % 10) as u8;
        value /= 10;
        if value == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[start..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(bytes: &[u8]) -> (ServerOp<'_>, usize) {
        match parse(bytes).expect("valid frame") {
            Parsed::Frame { op, consumed } => (op, consumed),
            Parsed::Incomplete { .. } => panic!("incomplete: {bytes:?}"),
        }
    }

    #[test]
    fn msg_without_reply_borrows_subject_and_payload() {
        let (op, consumed) = frame(b"MSG foo.bar 9 5\r\nhello\r\nPING\r\n");
        let expected = Message { subject: b"foo.bar", sid: 9, reply: None, header: None, payload: b"hello" };
        assert_eq!(op, ServerOp::Msg(expected));
        assert_eq!(consumed, 24);
    }

    #[test]
    fn hmsg_with_reply_splits_header_and_payload() {
        let bytes = b"HMSG s 1 $JS.ACK.a 12 14\r\nNATS/1.0\r\n\r\nhi\r\n";
        let (ServerOp::Msg(message), _) = frame(bytes) else { panic!("not a message") };
        assert_eq!(message.reply, Some(&b"$JS.ACK.a"[..]));
        assert_eq!(message.header, Some(&b"NATS/1.0\r\n\r\n"[..]));
        assert_eq!(message.payload, b"hi");
        assert_eq!(message.status(), None);
    }

    #[test]
    fn status_and_headers_are_read_from_the_header_block() {
        let bytes = b"HMSG _INBOX.x 2 58 58\r\n\
            NATS/1.0 408 Request Timeout\r\nNats-Pending-Messages: 7\r\n\r\n\r\n";
        let (ServerOp::Msg(message), _) = frame(bytes) else { panic!("not a message") };
        assert_eq!(message.status(), Some(408));
        assert_eq!(message.header_value(b"Nats-Pending-Messages"), Some(&b"7"[..]));
    }

    #[test]
    fn a_partial_body_is_incomplete_with_its_size() {
        assert_eq!(parse(b"MSG a 1 10\r\nabc").unwrap(), Parsed::Incomplete { needed: Some(24) });
        assert_eq!(parse(b"MSG a 1").unwrap(), Parsed::Incomplete { needed: None });
    }

    #[test]
    fn control_ops_and_errors() {
        assert_eq!(frame(b"PING\r\n").0, ServerOp::Ping);
        assert_eq!(frame(b"pong\r\n").0, ServerOp::Pong);
        assert_eq!(frame(b"+OK\r\n").0, ServerOp::Ok);
        assert_eq!(frame(b"-ERR 'Slow Consumer'\r\n").0, ServerOp::Err(b"'Slow Consumer'"));
        assert!(matches!(parse(b"BOGUS\r\n"), Err(ProtocolError::UnknownOperation(_))));
        assert!(matches!(parse(b"MSG a x 1\r\nz\r\n"), Err(ProtocolError::MalformedArguments { .. })));
    }

    #[test]
    fn hpub_counts_header_and_total_sizes() {
        let mut out = Vec::new();
        encode_hpub(&mut out, b"s", Some(b"r"), b"NATS/1.0\r\nNats-Msg-Id: 1\r\n\r\n", b"ab");
        assert_eq!(out, b"HPUB s r 28 30\r\nNATS/1.0\r\nNats-Msg-Id: 1\r\n\r\nab\r\n");
    }

    #[test]
    fn encoders_write_literal_bytes() {
        let mut out = Vec::new();
        encode_pub(&mut out, b"a.b", Some(b"_INBOX.1"), b"xyz");
        encode_sub(&mut out, b"q", Some(b"workers"), 12);
        assert_eq!(out, b"PUB a.b _INBOX.1 3\r\nxyz\r\nSUB q workers 12\r\n");
    }
}
