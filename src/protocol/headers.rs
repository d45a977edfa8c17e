//! Header blocks (ADR-4): `NATS/1.0[ SSS[ description]]\r\n(Name: value\r\n)*\r\n`.
//!
//! [`parse_header_block`] validates a whole block once and returns a view borrowing it;
//! lookups and iteration afterwards cannot fail and do not allocate. Names keep their case;
//! [`HeaderBlock::get`] compares exactly (as async-nats and nats.js do by default),
//! [`HeaderBlock::get_ignore_case`] does not. A name may repeat.
//!
//! [`HeaderBlockBuilder`] writes blocks, and [`encode_status`] the status-only blocks the
//! server originates (`NATS/1.0 404 No Messages\r\n\r\n`): exactly one space, a 3-digit
//! code, one space, the description, because nats-py slices those positions.

use std::fmt;

use bytes::BufMut;

use super::encode::put_decimal;

const VERSION: &[u8] = b"NATS/1.0";
const CR_LF: &[u8] = b"\r\n";
const STATUS_DIGITS: usize = 3;

/// Why bytes are not a header block. Offsets are from the start of the block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeaderError {
    /// The block does not start with `NATS/1.0`.
    MissingVersion,
    /// The status after `NATS/1.0` is not three digits followed by a space or the end.
    InvalidStatus { offset: usize },
    /// A line does not end with CR LF, or the block lacks its final blank line.
    Unterminated { offset: usize },
    /// A header line without a `:`, with an empty or non-token name, or with a bare
    /// CR or LF inside.
    InvalidLine { offset: usize },
    /// Bytes after the blank line that ends the block.
    TrailingBytes { offset: usize },
}

impl fmt::Display for HeaderError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HeaderError::MissingVersion => write!(formatter, "header block lacks NATS/1.0"),
            HeaderError::InvalidStatus { offset } => {
                write!(formatter, "invalid status at byte {offset}")
            }
            HeaderError::Unterminated { offset } => {
                write!(formatter, "unterminated header line at byte {offset}")
            }
            HeaderError::InvalidLine { offset } => {
                write!(formatter, "invalid header line at byte {offset}")
            }
            HeaderError::TrailingBytes { offset } => {
                write!(formatter, "bytes after the header block at byte {offset}")
            }
        }
    }
}

impl std::error::Error for HeaderError {}

/// A validated header block, borrowing its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeaderBlock<'a> {
    status: Option<u16>,
    description: Option<&'a [u8]>,
    /// The header lines, each ending with CR LF, without the final blank line.
    lines: &'a [u8],
}

impl<'a> HeaderBlock<'a> {
    /// The inline status code (`NATS/1.0 404 ...` → 404), if any.
    pub fn status(&self) -> Option<u16> {
        self.status
    }

    /// The status description (`No Messages`), if any; surrounding spaces trimmed.
    pub fn description(&self) -> Option<&'a [u8]> {
        self.description
    }

    /// All `(name, value)` pairs in order; values have surrounding spaces/tabs trimmed.
    pub fn iter(&self) -> HeaderIter<'a> {
        HeaderIter { rest: self.lines }
    }

    /// The first value of the header named exactly `name`.
    pub fn get(&self, name: &[u8]) -> Option<&'a [u8]> {
        self.iter().find(|(candidate, _)| *candidate == name).map(|(_, value)| value)
    }

    /// The first value of the header whose name equals `name` ignoring ASCII case.
    pub fn get_ignore_case(&self, name: &[u8]) -> Option<&'a [u8]> {
        self.iter().find(|(candidate, _)| candidate.eq_ignore_ascii_case(name)).map(|(_, value)| value)
    }

    /// Every value of the header named exactly `name`, in order.
    pub fn get_all<'n>(&self, name: &'n [u8]) -> impl Iterator<Item = &'a [u8]> + 'n
    where
        'a: 'n,
    {
        self.iter().filter(move |(candidate, _)| *candidate == name).map(|(_, value)| value)
    }
}

/// Iterator over the `(name, value)` pairs of a [`HeaderBlock`].
#[derive(Debug, Clone)]
pub struct HeaderIter<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for HeaderIter<'a> {
    type Item = (&'a [u8], &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        // The block was validated: every line has a `:` and ends with CR LF.
        let line_end = find_cr_lf(self.rest)?;
        let line = &self.rest[..line_end];
        self.rest = &self.rest[line_end + CR_LF.len()..];
        let colon = line.iter().position(|&byte| byte == b':')?;
        Some((&line[..colon], trim(&line[colon + 1..])))
    }
}

/// Validate `block` (all of it, through its blank line) and return a view of it.
pub fn parse_header_block(block: &[u8]) -> Result<HeaderBlock<'_>, HeaderError> {
    if !block.starts_with(VERSION) {
        return Err(HeaderError::MissingVersion);
    }
    let status_line_end = find_cr_lf(block).ok_or(HeaderError::Unterminated { offset: VERSION.len() })?;
    let (status, description) = parse_status(block, VERSION.len(), status_line_end)?;
    let lines_start = status_line_end + CR_LF.len();
    let mut position = lines_start;
    loop {
        let rest = &block[position..];
        let line_length = find_cr_lf(rest).ok_or(HeaderError::Unterminated { offset: position })?;
        if line_length == 0 {
            let end = position + CR_LF.len();
            if end != block.len() {
                return Err(HeaderError::TrailingBytes { offset: end });
            }
            let lines = &block[lines_start..position];
            return Ok(HeaderBlock { status, description, lines });
        }
        validate_line(&rest[..line_length], position)?;
        position += line_length + CR_LF.len();
    }
}

/// Parse `block[start..end]`, the part of the first line after `NATS/1.0`.
fn parse_status(block: &[u8], start: usize, end: usize) -> Result<(Option<u16>, Option<&[u8]>), HeaderError> {
    let text = &block[start..end];
    let code_start = text.iter().position(|&byte| byte != b' ' && byte != b'\t');
    let Some(code_start) = code_start else {
        return Ok((None, None));
    };
    let invalid = HeaderError::InvalidStatus { offset: start + code_start };
    if code_start == 0 || text.contains(&b'\n') || text.contains(&b'\r') {
        return Err(invalid);
    }
    let code_text = &text[code_start..];
    let digits = code_text.get(..STATUS_DIGITS).ok_or(invalid)?;
    if !digits.iter().all(u8::is_ascii_digit) {
        return Err(invalid);
    }
    let after = &code_text[STATUS_DIGITS..];
    if !after.is_empty() && after[0] != b' ' && after[0] != b'\t' {
        return Err(invalid);
    }
    let code = digits.iter().fold(0u16, |code, &digit| code * 10 + u16::from(digit - b'0'));
    let description = trim(after);
    Ok((Some(code), (!description.is_empty()).then_some(description)))
}

/// A header line: a token name, `:`, a value without bare CR or LF.
fn validate_line(line: &[u8], offset: usize) -> Result<(), HeaderError> {
    let invalid = HeaderError::InvalidLine { offset };
    let colon = line.iter().position(|&byte| byte == b':').ok_or(invalid)?;
    let name = &line[..colon];
    if name.is_empty() || !name.iter().all(|&byte| is_name_byte(byte)) {
        return Err(invalid);
    }
    if line.iter().any(|&byte| byte == b'\r' || byte == b'\n') {
        return Err(invalid);
    }
    Ok(())
}

/// Header names are printable ASCII without spaces or `:`.
fn is_name_byte(byte: u8) -> bool {
    byte.is_ascii_graphic() && byte != b':'
}

fn find_cr_lf(bytes: &[u8]) -> Option<usize> {
    bytes.windows(CR_LF.len()).position(|window| window == CR_LF)
}

fn trim(bytes: &[u8]) -> &[u8] {
    let is_space = |byte: &u8| *byte == b' ' || *byte == b'\t';
    let start = bytes.iter().position(|byte| !is_space(byte)).unwrap_or(bytes.len());
    let end = bytes.iter().rposition(|byte| !is_space(byte)).map_or(start, |end| end + 1);
    &bytes[start..end]
}

/// Writes one header block into `out`. Names and values come from server code: a name
/// that is not a token, or a value or description containing CR or LF, is a bug (panics).
pub struct HeaderBlockBuilder<'o, B: BufMut> {
    out: &'o mut B,
    written: usize,
}

impl<'o, B: BufMut> HeaderBlockBuilder<'o, B> {
    /// Start a block without a status: `NATS/1.0\r\n`.
    pub fn new(out: &'o mut B) -> Self {
        let mut builder = HeaderBlockBuilder { out, written: 0 };
        builder.put(VERSION);
        builder.put(CR_LF);
        builder
    }

    /// Start a block with a status line: `NATS/1.0 503\r\n` when `description` is empty,
    /// else `NATS/1.0 404 No Messages\r\n`.
    pub fn with_status(out: &'o mut B, code: u16, description: &str) -> Self {
        assert!((100..=999).contains(&code), "status code {code} is not 3 digits");
        assert!(!description.contains(['\r', '\n']), "status description has CR/LF");
        let mut builder = HeaderBlockBuilder { out, written: 0 };
        builder.put(VERSION);
        builder.put(b" ");
        put_decimal(builder.out, usize::from(code));
        builder.written += STATUS_DIGITS;
        if !description.is_empty() {
            builder.put(b" ");
            builder.put(description.as_bytes());
        }
        builder.put(CR_LF);
        builder
    }

    /// Append `name: value`.
    pub fn header(&mut self, name: &[u8], value: &[u8]) -> &mut Self {
        assert!(!name.is_empty() && name.iter().all(|&byte| is_name_byte(byte)), "header name is not a token");
        assert!(!value.iter().any(|&byte| byte == b'\r' || byte == b'\n'), "value has CR/LF");
        self.put(name);
        self.put(b": ");
        self.put(value);
        self.put(CR_LF);
        self
    }

    /// Write the final blank line; returns the block's length in bytes (the header size
    /// of an HMSG).
    pub fn finish(mut self) -> usize {
        self.put(CR_LF);
        self.written
    }

    fn put(&mut self, bytes: &[u8]) {
        self.out.put_slice(bytes);
        self.written += bytes.len();
    }
}

/// Write a status-only block, e.g. `NATS/1.0 404 No Messages\r\n\r\n` or, with an empty
/// description, `NATS/1.0 503\r\n\r\n`. Returns its length.
pub fn encode_status<B: BufMut>(out: &mut B, code: u16, description: &str) -> usize {
    HeaderBlockBuilder::with_status(out, code, description).finish()
}
