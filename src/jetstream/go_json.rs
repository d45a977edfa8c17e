//! Go's `encoding/json` error texts for malformed API request bodies.
//!
//! nats-server decodes request bodies into Go structs; a value of the wrong JSON kind (or
//! a number that does not fit) fails with `json: cannot unmarshal <kind> into Go struct
//! field <Request>.<path> of type <go type>`, and clients show that text. serde knows
//! neither the Go struct names nor the Go types, so when serde refuses a body this module
//! walks the raw bytes in document order against a description of the Go request struct
//! (`go_shapes.rs`) and words the first mistake as Go does. It runs only after serde
//! failed: accepted bodies never pay for it.
//!
//! The texts were taken from nats-server 2.15.1 (same bytes sent to both servers):
//! - `"max_msgs":"x"` → `... cannot unmarshal string into Go struct field
//!   StreamConfigRequest.max_msgs of type int64`; the kind is `string`, `bool`, `array`,
//!   `object`, or `number` into a non-numeric field;
//! - a number that does not parse into the integer type is shown as written:
//!   `number 1.5`, `number 1e3`, `number -1` (into `uint64`), `number 1e10` (into `int`);
//! - under an array element the words `Go struct field ` are left out:
//!   `cannot unmarshal number into StreamConfigRequest.subjects.0 of type string`;
//! - `time.Time` fields take only strings (a bad string is the time parser's own text,
//!   left to serde's message), enum fields use their own decoders (not checked here).
//!
//! Syntax errors are Go's scanner texts (`invalid character 'x' looking for beginning of
//! value`), worded per `GoReader`.

/// A Go type a request field decodes into.
pub enum GoType {
    /// A signed integer type: its Go name (`int`, `int64`, `time.Duration`) and bit size.
    Int(&'static str, u32),
    Uint(&'static str, u32),
    Bool,
    String,
    /// `time.Time`: strings go to the time parser, anything else is a type error.
    Time,
    /// Go name (`[]string`) and element type.
    Slice(&'static str, &'static GoType),
    /// Go name (`map[string]string`) and value type.
    Map(&'static str, &'static GoType),
    Struct(&'static GoStruct),
    /// A policy enum, decoded by its own `UnmarshalJSON`: a string is checked by jetcore's
    /// decoder; any other value is refused with this text and the value as written
    /// (`can not unmarshal "1"`, `unknown consumer action: true`).
    Enum(EnumText),
    /// An own `UnmarshalJSON` that first decodes a Go string (`StoreCompression`): a
    /// non-string is `json: cannot unmarshal <kind> into Go value of type string`.
    CustomString,
}

/// How a policy enum's decoder words a value that is not a string.
pub enum EnumText {
    /// `can not unmarshal %q` of the value as written.
    Quoted,
    /// This prefix, then the value as written.
    Prefixed(&'static str),
}

/// A Go struct: its qualified name (`server.Placement`) and its fields by JSON name.
pub struct GoStruct {
    pub go_name: &'static str,
    pub fields: &'static [(&'static str, GoType)],
}

/// A request body type: the struct name Go's errors start the path with (`""` for the
/// pull request, which nats-server decodes through a local type) and its fields.
pub struct GoRequest {
    pub name: &'static str,
    pub body: &'static GoStruct,
}

/// The request types whose decoding errors are worded as nats-server's.
pub trait GoShaped {
    fn go_shape() -> &'static GoRequest;
}

/// The first mistake of `body` Go would report, or `None` when the walk finds none (the
/// caller keeps serde's message then). `unknown_field` is the field serde refused as
/// unknown, if that was its error: it is reported if it comes first in the document.
pub fn go_error(body: &[u8], shape: &GoRequest, unknown_field: Option<&str>) -> Option<String> {
    let mut walker = Walker {
        bytes: body,
        at: 0,
        path: Vec::new(),
        unknown_field,
        request: shape.name,
    };
    walker.skip_whitespace();
    if walker.peek() == Some(b'[') {
        return Some(format!(
            "json: cannot unmarshal array into Go value of type {}",
            shape.body.go_name
        ));
    }
    walker.value(&GoType::Struct(shape.body)).err()
}

struct Walker<'a> {
    bytes: &'a [u8],
    at: usize,
    path: Vec<Segment>,
    unknown_field: Option<&'a str>,
    request: &'static str,
}

/// The walk stops at the first mistake, carrying its text; `Ok` means the value was
/// consumed without one. The body is syntactically valid JSON (serde parsed it first):
/// the walker does not re-check syntax, and stops quietly (`Ok`) if it is not.
type Walk = Result<(), String>;

impl Walker<'_> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn skip_whitespace(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    fn value(&mut self, go_type: &GoType) -> Walk {
        self.skip_whitespace();
        let Some(first) = self.peek() else {
            return Ok(());
        };
        let kind = match first {
            b'n' => {
                self.at += 4;
                return Ok(());
            }
            b'"' => "string",
            b't' | b'f' => "bool",
            b'[' => "array",
            b'{' => "object",
            _ => "number",
        };
        match (go_type, first) {
            (GoType::Struct(go_struct), b'{') => self.members(Some(go_struct), None),
            (GoType::Map(_, value_type), b'{') => self.members(None, Some(value_type)),
            (GoType::Slice(_, element), b'[') => self.elements(element),
            (GoType::String | GoType::Time | GoType::CustomString | GoType::Enum(_), b'"')
            | (GoType::Bool, b't' | b'f') => {
                self.skip_value();
                Ok(())
            }
            (GoType::Enum(text), _) => {
                let start = self.at;
                self.skip_value();
                let raw = String::from_utf8_lossy(&self.bytes[start..self.at]);
                Err(match text {
                    EnumText::Quoted => super::request::cannot_unmarshal_raw(&raw),
                    EnumText::Prefixed(prefix) => format!("{prefix}{raw}"),
                })
            }
            (GoType::Int(_, bits), b'-' | b'0'..=b'9') => {
                let literal = self.number();
                let fits = literal
                    .parse::<i64>()
                    .is_ok_and(|n| *bits >= 64 || (n >> (bits - 1)) == 0 || (n >> (bits - 1)) == -1);
                self.mismatch_unless(fits, &format!("number {literal}"), go_type)
            }
            (GoType::Uint(_, bits), b'-' | b'0'..=b'9') => {
                let literal = self.number();
                let fits = literal
                    .parse::<u64>()
                    .is_ok_and(|n| *bits >= 64 || (n >> bits) == 0);
                self.mismatch_unless(fits, &format!("number {literal}"), go_type)
            }
            (GoType::CustomString, _) => Err(format!(
                "json: cannot unmarshal {kind} into Go value of type string"
            )),
            _ => Err(self.type_error(kind, go_type)),
        }
    }

    fn mismatch_unless(&self, fits: bool, shown: &str, go_type: &GoType) -> Walk {
        if fits {
            Ok(())
        } else {
            Err(self.type_error(shown, go_type))
        }
    }

    fn type_error(&self, shown: &str, go_type: &GoType) -> String {
        let type_name = match go_type {
            GoType::Int(name, _) | GoType::Uint(name, _) => name,
            GoType::Bool => "bool",
            GoType::String | GoType::CustomString => "string",
            GoType::Time => "time.Time",
            GoType::Slice(name, _) | GoType::Map(name, _) => name,
            GoType::Struct(go_struct) => go_struct.go_name,
            GoType::Enum(_) => "",
        };
        let field: Vec<_> = self.path.iter().map(Segment::name).collect();
        let field = field.join(".");
        if self.path.is_empty() {
            format!("json: cannot unmarshal {shown} into Go value of type {type_name}")
        } else if matches!(self.path.last(), Some(Segment::Index(_))) {
            format!("json: cannot unmarshal {shown} into {}.{field} of type {type_name}", self.request)
        } else {
            format!(
                "json: cannot unmarshal {shown} into Go struct field {}.{field} of type {type_name}",
                self.request
            )
        }
    }

    /// The members of an object: a struct's (`go_struct`) or a map's (`value_type`).
    fn members(&mut self, go_struct: Option<&GoStruct>, value_type: Option<&GoType>) -> Walk {
        self.at += 1; // `{`
        loop {
            self.skip_whitespace();
            match self.peek() {
                Some(b'}') | None => {
                    self.at += 1;
                    return Ok(());
                }
                Some(b',') => {
                    self.at += 1;
                    continue;
                }
                _ => {}
            }
            let key = self.string();
            self.skip_whitespace();
            self.at += 1; // `:`
            let field_type = match (go_struct, value_type) {
                (Some(go_struct), _) => {
                    // Go matches keys to field names exactly first, then case-insensitively.
                    let field = go_struct
                        .fields
                        .iter()
                        .find(|(name, _)| *name == key)
                        .or_else(|| {
                            go_struct
                                .fields
                                .iter()
                                .find(|(name, _)| name.eq_ignore_ascii_case(&key))
                        });
                    // Go's error path shows the key as sent.
                    match field {
                        Some((_, field_type)) => Some((key, field_type)),
                        None if self.unknown_field == Some(key.as_str()) => {
                            return Err(format!("json: unknown field {}", super::request::go_quote(&key)));
                        }
                        None => None,
                    }
                }
                (None, Some(value_type)) => Some((key, value_type)),
                (None, None) => None,
            };
            match field_type {
                Some((name, field_type)) => {
                    self.path.push(Segment::Key(name));
                    self.value(field_type)?;
                    self.path.pop();
                }
                None => self.skip_value(),
            }
        }
    }

    fn elements(&mut self, element: &GoType) -> Walk {
        self.at += 1; // `[`
        let mut index = 0;
        loop {
            self.skip_whitespace();
            match self.peek() {
                Some(b']') | None => {
                    self.at += 1;
                    return Ok(());
                }
                Some(b',') => {
                    self.at += 1;
                    continue;
                }
                _ => {}
            }
            self.path.push(Segment::Index(index));
            self.value(element)?;
            self.path.pop();
            index += 1;
        }
    }

    /// A string token's text (escapes decoded); the cursor moves past it.
    fn string(&mut self) -> String {
        let start = self.at;
        self.at += 1;
        while let Some(byte) = self.peek() {
            self.at += 1;
            match byte {
                b'\\' => self.at += 1,
                b'"' => break,
                _ => {}
            }
        }
        let raw = &self.bytes[start..self.at.min(self.bytes.len())];
        serde_json::from_slice(raw).unwrap_or_else(|_| String::from_utf8_lossy(raw).into_owned())
    }

    /// A number token's text as written; the cursor moves past it.
    fn number(&mut self) -> String {
        let start = self.at;
        while matches!(self.peek(), Some(b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')) {
            self.at += 1;
        }
        String::from_utf8_lossy(&self.bytes[start..self.at]).into_owned()
    }

    fn skip_value(&mut self) {
        self.skip_whitespace();
        match self.peek() {
            Some(b'"') => {
                self.string();
            }
            Some(b'{' | b'[') => {
                let mut depth = 0usize;
                while let Some(byte) = self.peek() {
                    match byte {
                        b'"' => {
                            self.string();
                            continue;
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth -= 1;
                            if depth == 0 {
                                self.at += 1;
                                return;
                            }
                        }
                        _ => {}
                    }
                    self.at += 1;
                }
            }
            _ => {
                while matches!(self.peek(), Some(byte) if !matches!(byte, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r')) {
                    self.at += 1;
                }
            }
        }
    }
}

enum Segment {
    Key(String),
    Index(usize),
}

impl Segment {
    fn name(&self) -> std::borrow::Cow<'_, str> {
        match self {
            Segment::Key(key) => key.into(),
            Segment::Index(index) => index.to_string().into(),
        }
    }
}

/// How nats-server reads a body, which decides the wording of syntax errors.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum GoReader {
    /// `$JS.API` requests: a `json.Decoder` (values after the first are decoded too; an
    /// error ends with ` at offset N`, N = the offending byte's index + 1; a cut-off body
    /// is `unexpected EOF`).
    Decoder,
    /// Pull requests: `json.Unmarshal` (anything after the value is `after top-level
    /// value`; no offset; a cut-off body is `unexpected end of JSON input`).
    Unmarshal,
}

/// Go's text for a syntax error in `body`; `None` when Go's scanner accepts it.
pub fn go_syntax_error(body: &[u8], reader: GoReader) -> Option<String> {
    let mut scanner = Scanner { bytes: body, at: 0 };
    let stop = loop {
        if let Err(stop) = scanner.value() {
            break stop;
        }
        match (scanner.next_after_whitespace(), reader) {
            (Err(_), _) => return None,
            (Ok(_), GoReader::Decoder) => continue,
            (Ok(_), GoReader::Unmarshal) => break Stop::At("after top-level value"),
        }
    };
    let (text, offset) = match stop {
        Stop::Eof => {
            return Some(
                match reader {
                    GoReader::Decoder => "unexpected EOF",
                    GoReader::Unmarshal => "unexpected end of JSON input",
                }
                .to_string(),
            );
        }
        Stop::At(context) => (
            format!("invalid character {} {context}", quote_byte(body[scanner.at])),
            scanner.at + 1,
        ),
        Stop::Escape(start) => {
            let end = scanner.at.min(body.len());
            (
                format!(
                    "invalid escape sequence `{}` in string",
                    String::from_utf8_lossy(&body[start..end])
                ),
                end,
            )
        }
    };
    Some(match reader {
        GoReader::Decoder => format!("{text} at offset {offset}"),
        GoReader::Unmarshal => text,
    })
}

/// Where Go's scanner stopped.
enum Stop {
    /// The body ended inside a value.
    Eof,
    /// The byte at the cursor is wrong; the text says what was expected.
    At(&'static str),
    /// A bad escape sequence from this index to the cursor.
    Escape(usize),
}

/// Go's scanner as a recursive descent over one value.
struct Scanner<'a> {
    bytes: &'a [u8],
    at: usize,
}

type Scan = Result<(), Stop>;

impl Scanner<'_> {
    fn next_after_whitespace(&mut self) -> Result<u8, Stop> {
        while let Some(&byte) = self.bytes.get(self.at) {
            if !matches!(byte, b' ' | b'\t' | b'\n' | b'\r') {
                return Ok(byte);
            }
            self.at += 1;
        }
        Err(Stop::Eof)
    }

    fn byte(&self) -> Result<u8, Stop> {
        self.bytes.get(self.at).copied().ok_or(Stop::Eof)
    }

    fn value(&mut self) -> Scan {
        match self.next_after_whitespace()? {
            b'{' => self.object(),
            b'[' => self.array(),
            b'"' => self.string(),
            b'-' | b'0'..=b'9' => self.number(),
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            _ => Err(Stop::At("looking for beginning of value")),
        }
    }

    fn object(&mut self) -> Scan {
        self.at += 1;
        if self.next_after_whitespace()? == b'}' {
            self.at += 1;
            return Ok(());
        }
        loop {
            if self.next_after_whitespace()? != b'"' {
                return Err(Stop::At("looking for beginning of object key string"));
            }
            self.string()?;
            if self.next_after_whitespace()? != b':' {
                return Err(Stop::At("after object key"));
            }
            self.at += 1;
            self.value()?;
            match self.next_after_whitespace()? {
                b',' => self.at += 1,
                b'}' => {
                    self.at += 1;
                    return Ok(());
                }
                _ => return Err(Stop::At("after object key:value pair")),
            }
        }
    }

    fn array(&mut self) -> Scan {
        self.at += 1;
        if self.next_after_whitespace()? == b']' {
            self.at += 1;
            return Ok(());
        }
        loop {
            self.value()?;
            match self.next_after_whitespace()? {
                b',' => self.at += 1,
                b']' => {
                    self.at += 1;
                    return Ok(());
                }
                _ => return Err(Stop::At("after array element")),
            }
        }
    }

    fn string(&mut self) -> Scan {
        self.at += 1;
        loop {
            match self.byte()? {
                b'"' => {
                    self.at += 1;
                    return Ok(());
                }
                b'\\' => {
                    let start = self.at;
                    self.at += 1;
                    match self.byte()? {
                        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => self.at += 1,
                        b'u' => {
                            self.at += 1;
                            let hex = self.bytes.len().min(self.at + 4);
                            if hex - self.at < 4 {
                                return Err(Stop::Eof);
                            }
                            let valid = self.bytes[self.at..hex].iter().all(u8::is_ascii_hexdigit);
                            self.at = hex;
                            if !valid {
                                return Err(Stop::Escape(start));
                            }
                        }
                        _ => {
                            self.at += 1;
                            return Err(Stop::Escape(start));
                        }
                    }
                }
                byte if byte < 0x20 => return Err(Stop::At("in string")),
                _ => self.at += 1,
            }
        }
    }

    fn digits(&mut self) -> Scan {
        if !self.byte()?.is_ascii_digit() {
            return Err(Stop::At("in numeric literal"));
        }
        while self.bytes.get(self.at).is_some_and(u8::is_ascii_digit) {
            self.at += 1;
        }
        Ok(())
    }

    /// A number; what follows it is judged by the caller's state.
    fn number(&mut self) -> Scan {
        if self.byte()? == b'-' {
            self.at += 1;
        }
        if self.byte()? == b'0' {
            self.at += 1;
        } else {
            self.digits()?;
        }
        if self.bytes.get(self.at) == Some(&b'.') {
            self.at += 1;
            self.digits()?;
        }
        if matches!(self.bytes.get(self.at), Some(b'e' | b'E')) {
            self.at += 1;
            if matches!(self.byte()?, b'+' | b'-') {
                self.at += 1;
            }
            self.digits()?;
        }
        // A number at the very end of the body: Go's decoder waits for more input.
        if self.at == self.bytes.len() {
            return Err(Stop::Eof);
        }
        Ok(())
    }

    fn literal(&mut self, word: &'static [u8]) -> Scan {
        self.at += 1;
        for &expected in &word[1..] {
            if self.byte()? != expected {
                return Err(Stop::At(literal_context(word[0], expected)));
            }
            self.at += 1;
        }
        Ok(())
    }
}

fn literal_context(word: u8, expected: u8) -> &'static str {
    match (word, expected) {
        (b't', b'r') => "in literal true (expecting 'r')",
        (b't', b'u') => "in literal true (expecting 'u')",
        (b't', _) => "in literal true (expecting 'e')",
        (b'f', b'a') => "in literal false (expecting 'a')",
        (b'f', b'l') => "in literal false (expecting 'l')",
        (b'f', b's') => "in literal false (expecting 's')",
        (b'f', _) => "in literal false (expecting 'e')",
        (_, b'u') => "in literal null (expecting 'u')",
        _ => "in literal null (expecting 'l')",
    }
}

/// Go's `quoteChar`: the byte as a quoted rune, escaped as `strconv.Quote` does.
fn quote_byte(byte: u8) -> String {
    match byte {
        b'\'' => "'\\''".to_string(),
        b'"' => "'\"'".to_string(),
        b'\\' => "'\\\\'".to_string(),
        b'\x07' => "'\\a'".to_string(),
        b'\x08' => "'\\b'".to_string(),
        b'\x0c' => "'\\f'".to_string(),
        b'\n' => "'\\n'".to_string(),
        b'\r' => "'\\r'".to_string(),
        b'\t' => "'\\t'".to_string(),
        b'\x0b' => "'\\v'".to_string(),
        0..=0x1f | 0x7f => format!("'\\x{byte:02x}'"),
        0x80..=0x9f | 0xad => format!("'\\u{byte:04x}'"),
        _ => format!("'{}'", char::from(byte)),
    }
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
