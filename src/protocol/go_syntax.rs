//! Go's `encoding/json` syntax errors for request bodies serde could not parse, as
//! nats-server 2.15.1 answers them (recorded with the same bytes): Go's scanner texts
//! (`invalid character 'x' looking for beginning of value`), worded per `GoReader`.

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
        Stop::At(context) => (format!("invalid character {} {context}", quote_byte(body[scanner.at])), scanner.at + 1),
        Stop::Escape(start) => {
            let end = scanner.at.min(body.len());
            (format!("invalid escape sequence `{}` in string", String::from_utf8_lossy(&body[start..end])), end)
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
