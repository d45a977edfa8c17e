//! The nats-server configuration syntax: `key: value`, `key = value` or `key value`;
//! blocks `{ }`, arrays `[ ]`, `#` and `//` comments, quoted or bare strings, numbers with
//! size suffixes (`1MB`, `64k`), booleans (`true`/`false`/`yes`/`no`/`on`/`off`).
//! Entries are separated by newlines, commas or semicolons. Every value keeps its line
//! so a mistake can be reported where it was written.

use std::fmt;

#[derive(Clone, Debug, PartialEq)]
pub enum ConfValue {
    String(String),
    Integer(i64),
    Float(f64),
    Bool(bool),
    Map(Vec<ConfEntry>),
    Array(Vec<ConfValue>),
}

#[derive(Clone, Debug, PartialEq)]
pub struct ConfEntry {
    pub key: String,
    pub line: usize,
    pub value: ConfValue,
}

#[derive(Clone, Debug, PartialEq)]
pub struct SyntaxError {
    pub line: usize,
    pub message: String,
}

impl fmt::Display for SyntaxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

/// Parses a whole configuration file into its top-level entries.
pub fn parse(text: &str) -> Result<Vec<ConfEntry>, SyntaxError> {
    let mut parser = Parser { bytes: text.as_bytes(), position: 0, line: 1 };
    let entries = parser.entries(None)?;
    Ok(entries)
}

struct Parser<'a> {
    bytes: &'a [u8],
    position: usize,
    line: usize,
}

impl Parser<'_> {
    fn error(&self, message: impl Into<String>) -> SyntaxError {
        SyntaxError { line: self.line, message: message.into() }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.position).copied()
    }

    fn bump(&mut self) -> Option<u8> {
        let byte = self.peek()?;
        self.position += 1;
        if byte == b'\n' {
            self.line += 1;
        }
        Some(byte)
    }

    /// Skips blanks and comments; with `newlines`, also line ends and separators.
    fn skip(&mut self, newlines: bool) {
        while let Some(byte) = self.peek() {
            match byte {
                b' ' | b'\t' | b'\r' => {
                    self.bump();
                }
                b'\n' | b',' | b';' if newlines => {
                    self.bump();
                }
                b'#' => self.skip_comment(),
                b'/' if self.bytes.get(self.position + 1) == Some(&b'/') => self.skip_comment(),
                _ => break,
            }
        }
    }

    fn skip_comment(&mut self) {
        while let Some(byte) = self.peek() {
            if byte == b'\n' {
                break;
            }
            self.bump();
        }
    }

    /// Entries until `closer` (or the end of input at the top level).
    fn entries(&mut self, closer: Option<u8>) -> Result<Vec<ConfEntry>, SyntaxError> {
        let mut entries = Vec::new();
        loop {
            self.skip(true);
            match (self.peek(), closer) {
                (None, None) => return Ok(entries),
                (None, Some(_)) => return Err(self.error("unexpected end of file: missing '}'")),
                (Some(byte), Some(close)) if byte == close => {
                    self.bump();
                    return Ok(entries);
                }
                _ => {}
            }
            let line = self.line;
            let key = self.key()?;
            self.skip(false);
            if matches!(self.peek(), Some(b':') | Some(b'=')) {
                self.bump();
                self.skip(false);
            }
            let value = self.value()?;
            entries.push(ConfEntry { key, line, value });
        }
    }

    fn key(&mut self) -> Result<String, SyntaxError> {
        if let Some(quote @ (b'"' | b'\'')) = self.peek() {
            return self.quoted(quote);
        }
        let start = self.position;
        while let Some(byte) = self.peek() {
            if byte.is_ascii_whitespace() || matches!(byte, b':' | b'=' | b'{' | b'[') {
                break;
            }
            self.bump();
        }
        if start == self.position {
            return Err(self.error(format!("expected a key, found {:?}", self.peek().map(char::from))));
        }
        Ok(String::from_utf8_lossy(&self.bytes[start..self.position]).into_owned())
    }

    fn value(&mut self) -> Result<ConfValue, SyntaxError> {
        match self.peek() {
            None => Err(self.error("expected a value, found end of file")),
            Some(b'{') => {
                self.bump();
                Ok(ConfValue::Map(self.entries(Some(b'}'))?))
            }
            Some(b'[') => {
                self.bump();
                self.array()
            }
            Some(quote @ (b'"' | b'\'')) => Ok(ConfValue::String(self.quoted(quote)?)),
            Some(_) => self.bare(),
        }
    }

    fn array(&mut self) -> Result<ConfValue, SyntaxError> {
        let mut items = Vec::new();
        loop {
            self.skip(true);
            match self.peek() {
                None => return Err(self.error("unexpected end of file: missing ']'")),
                Some(b']') => {
                    self.bump();
                    return Ok(ConfValue::Array(items));
                }
                _ => items.push(self.value()?),
            }
        }
    }

    fn quoted(&mut self, quote: u8) -> Result<String, SyntaxError> {
        self.bump();
        let mut text = Vec::new();
        loop {
            if matches!(self.peek(), None | Some(b'\n')) {
                return Err(self.error("unterminated quoted string"));
            }
            match self.bump() {
                Some(b'\\') if quote == b'"' => match self.bump() {
                    Some(b'n') => text.push(b'\n'),
                    Some(b't') => text.push(b'\t'),
                    Some(other) => text.push(other),
                    None => return Err(self.error("unterminated quoted string")),
                },
                Some(byte) if byte == quote => break,
                Some(byte) => text.push(byte),
                None => return Err(self.error("unterminated quoted string")),
            }
        }
        String::from_utf8(text).map_err(|_| self.error("quoted string is not UTF-8"))
    }

    /// A bare word up to the end of the line or a separator: a number, boolean or string.
    fn bare(&mut self) -> Result<ConfValue, SyntaxError> {
        let start = self.position;
        while let Some(byte) = self.peek() {
            if matches!(byte, b'\n' | b',' | b';' | b'}' | b']' | b'#') {
                break;
            }
            self.bump();
        }
        let word = String::from_utf8_lossy(&self.bytes[start..self.position]).trim().to_string();
        if word.is_empty() {
            return Err(self.error("expected a value"));
        }
        if word.starts_with('$') {
            return Err(self.error(format!("variables are not supported: {word}")));
        }
        Ok(classify(word))
    }
}

fn classify(word: String) -> ConfValue {
    match word.to_ascii_lowercase().as_str() {
        "true" | "yes" | "on" => return ConfValue::Bool(true),
        "false" | "no" | "off" => return ConfValue::Bool(false),
        _ => {}
    }
    if let Ok(number) = word.parse::<i64>() {
        return ConfValue::Integer(number);
    }
    if let Ok(float) = word.parse::<f64>() {
        return ConfValue::Float(float);
    }
    ConfValue::String(word)
}

/// `1024`, `64k`, `64kb`, `1MB`, `2G`, `1TB` (powers of 1024, as nats-server reads them).
pub fn parse_size(word: &str) -> Option<i64> {
    let digits_end = word
        .char_indices()
        .find(|(index, c)| !(c.is_ascii_digit() || (*index == 0 && *c == '-')))
        .map(|(index, _)| index)
        .unwrap_or(word.len());
    let number: i64 = word[..digits_end].parse().ok()?;
    let multiplier: i64 = match word[digits_end..].to_ascii_lowercase().as_str() {
        "" => 1,
        "k" | "kb" | "ki" | "kib" => 1 << 10,
        "m" | "mb" | "mi" | "mib" => 1 << 20,
        "g" | "gb" | "gi" | "gib" => 1 << 30,
        "t" | "tb" | "ti" | "tib" => 1 << 40,
        _ => return None,
    };
    number.checked_mul(multiplier)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value_of<'a>(entries: &'a [ConfEntry], key: &str) -> &'a ConfValue {
        &entries.iter().find(|entry| entry.key == key).expect("key present").value
    }

    #[test]
    fn separators_comments_and_suffixes() {
        let text = "# a comment\nport: 4333\nhost = \"0.0.0.0\" // trailing\nmax_payload 2MB\n\
                    debug: true, trace: off; server_name: 'n1'\n";
        let entries = parse(text).unwrap();
        assert_eq!(value_of(&entries, "port"), &ConfValue::Integer(4333));
        assert_eq!(value_of(&entries, "host"), &ConfValue::String("0.0.0.0".into()));
        assert_eq!(value_of(&entries, "max_payload"), &ConfValue::String("2MB".into()));
        assert_eq!(parse_size("2MB"), Some(2 << 20));
        assert_eq!(parse_size("64k"), Some(64 << 10));
        assert_eq!(parse_size("2x"), None);
        assert_eq!(value_of(&entries, "debug"), &ConfValue::Bool(true));
        assert_eq!(value_of(&entries, "trace"), &ConfValue::Bool(false));
        assert_eq!(value_of(&entries, "server_name"), &ConfValue::String("n1".into()));
        assert_eq!(entries.iter().find(|e| e.key == "max_payload").unwrap().line, 4);
    }

    #[test]
    fn nested_blocks_and_arrays() {
        let text = "jetstream {\n  store_dir: /tmp/js\n  max_file_store: 1G\n}\n\
                    authorization { users = [ {user: a, password: b}, {user: c, password: d} ] }\n\
                    listen: localhost:4222\n";
        let entries = parse(text).unwrap();
        let ConfValue::Map(jetstream) = value_of(&entries, "jetstream") else { panic!() };
        assert_eq!(value_of(jetstream, "store_dir"), &ConfValue::String("/tmp/js".into()));
        assert_eq!(value_of(jetstream, "max_file_store"), &ConfValue::String("1G".into()));
        let ConfValue::Map(authorization) = value_of(&entries, "authorization") else { panic!() };
        let ConfValue::Array(users) = value_of(authorization, "users") else { panic!() };
        assert_eq!(users.len(), 2);
        assert_eq!(value_of(&entries, "listen"), &ConfValue::String("localhost:4222".into()));
    }

    #[test]
    fn errors_carry_their_line() {
        let error = parse("port: 4222\njetstream {\n store_dir: x\n").unwrap_err();
        assert!(error.message.contains("missing '}'"), "{error}");
        let error = parse("a: 1\nb: \"open\n").unwrap_err();
        assert_eq!(error.line, 2);
        let error = parse("\n\nport: $PORT\n").unwrap_err();
        assert_eq!(error.line, 3);
    }
}
