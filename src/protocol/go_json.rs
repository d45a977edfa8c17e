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
//! Syntax errors are worded by `go_syntax.rs`, timestamps by `time.rs`.

use super::go_quote;

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
    let mut walker = Walker { bytes: body, at: 0, path: Vec::new(), unknown_field, request: shape.name };
    walker.skip_whitespace();
    if walker.peek() == Some(b'[') {
        return Some(format!("json: cannot unmarshal array into Go value of type {}", shape.body.go_name));
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
                    EnumText::Quoted => cannot_unmarshal_raw(&raw),
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
                let fits = literal.parse::<u64>().is_ok_and(|n| *bits >= 64 || (n >> bits) == 0);
                self.mismatch_unless(fits, &format!("number {literal}"), go_type)
            }
            (GoType::CustomString, _) => Err(format!("json: cannot unmarshal {kind} into Go value of type string")),
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
            format!("json: cannot unmarshal {shown} into Go struct field {}.{field} of type {type_name}", self.request)
        }
    }

    /// The members of an object: a struct's (`go_struct`) or a map's (`value_type`).
    fn members(&mut self, go_struct: Option<&GoStruct>, value_type: Option<&GoType>) -> Walk {
        self.at += 1; // `{`
        while self.next_item(b'}') {
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
                        .or_else(|| go_struct.fields.iter().find(|(name, _)| name.eq_ignore_ascii_case(&key)));
                    // Go's error path shows the key as sent.
                    match field {
                        Some((_, field_type)) => Some((key, field_type)),
                        None if self.unknown_field == Some(key.as_str()) => {
                            return Err(format!("json: unknown field {}", go_quote(&key)));
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
        Ok(())
    }

    fn elements(&mut self, element: &GoType) -> Walk {
        self.at += 1; // `[`
        let mut index = 0;
        while self.next_item(b']') {
            self.path.push(Segment::Index(index));
            self.value(element)?;
            self.path.pop();
            index += 1;
        }
        Ok(())
    }

    /// Moves to the next member or element of the container being walked, past white
    /// space and commas; `false` once its closing byte (consumed) or the body's end is
    /// reached.
    fn next_item(&mut self, close: u8) -> bool {
        loop {
            self.skip_whitespace();
            match self.peek() {
                Some(byte) if byte == close => {
                    self.at += 1;
                    return false;
                }
                None => {
                    self.at += 1;
                    return false;
                }
                Some(b',') => self.at += 1,
                Some(_) => return true,
            }
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
                let ends_value = |byte: u8| matches!(byte, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r');
                while matches!(self.peek(), Some(byte) if !ends_value(byte)) {
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

/// Go's text for a body serde refused: the first wrong-kind value or unknown field in
/// document order, as Go reports it. Other refusals come from jetcore's own decoders
/// (policy names, timestamps), which word them as nats-server's do: kept as they are.
pub fn type_error_detail(error: &serde_json::Error, body: &[u8], shape: &GoRequest) -> String {
    let detail = go_detail(error);
    let unknown_field = detail.strip_prefix("json: unknown field \"").and_then(|rest| rest.strip_suffix('"'));
    let kind_mismatch = detail.starts_with("invalid type: ") || detail.starts_with("invalid value: ");
    if unknown_field.is_none() && !kind_mismatch {
        return detail;
    }
    go_error(body, shape, unknown_field).unwrap_or(detail)
}

/// serde's message without the `at line L column C` suffix; EOF as Go words it.
pub fn go_detail(error: &serde_json::Error) -> String {
    if error.is_eof() {
        return "unexpected EOF".to_string();
    }
    let text = error.to_string();
    let message = text.rsplit_once(" at line ").map_or(text.as_str(), |(message, _)| message);
    match message.strip_prefix("unknown field `").and_then(|rest| rest.split_once('`')) {
        Some((field, _)) => format!("json: unknown field \"{field}\""),
        None => message.to_string(),
    }
}

/// The text Go's `fmt.Errorf("can not unmarshal %q", data)` gives for a bad enum string;
/// used by the policy enums so 10025 descriptions match nats-server's.
pub fn cannot_unmarshal(raw: &str) -> String {
    cannot_unmarshal_raw(&format!("\"{raw}\""))
}

/// `can not unmarshal %q` of a JSON value as written.
pub fn cannot_unmarshal_raw(json: &str) -> String {
    format!("can not unmarshal {}", go_quote(json))
}
