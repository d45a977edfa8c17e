//! Just enough HTTP/1.1 for monitoring: read one GET request line and its query string,
//! write one response, close. The query string is read as Go's `net/url` reads it
//! (nats-server's monitor is Go): pairs split on `&`, `+` and `%XX` decoded, a pair with
//! a bad escape or a `;` dropped, the first value of a repeated key kept. Booleans and
//! integers are parsed as `strconv.ParseBool` / `strconv.Atoi` do, with nats-server's
//! 400 answer when they do not parse.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};

use crate::protocol::go_quote;

pub struct Request {
    pub path: String,
    /// Decoded keys and values; the first of a repeated key.
    pub query: HashMap<String, String>,
}

impl Request {
    pub fn read(stream: impl Read) -> std::io::Result<Request> {
        let mut line = String::new();
        BufReader::new(stream).read_line(&mut line)?;
        Ok(Request::parse(&line))
    }

    /// Parses `GET /path?a=1&b HTTP/1.1`.
    pub fn parse(request_line: &str) -> Request {
        let target = request_line.split_whitespace().nth(1).unwrap_or("/");
        let (path, query_text) = target.split_once('?').unwrap_or((target, ""));
        let mut query = HashMap::new();
        for pair in query_text.split('&').filter(|pair| !pair.is_empty() && !pair.contains(';')) {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            if let (Some(key), Some(value)) = (query_unescape(key), query_unescape(value)) {
                query.entry(key).or_insert(value);
            }
        }
        Request { path: path.to_string(), query }
    }

    /// A parameter as Go's `Query().Get` returns it: empty when absent.
    pub fn text(&self, name: &str) -> &str {
        self.query.get(name).map_or("", String::as_str)
    }

    /// A boolean parameter as jetcore's older endpoints read them: `1`, `true` (or
    /// present, empty).
    pub fn flag(&self, name: &str) -> bool {
        matches!(self.query.get(name).map(String::as_str), Some("" | "1" | "true" | "TRUE" | "True"))
    }

    pub fn number(&self, name: &str) -> Option<usize> {
        self.query.get(name).and_then(|value| value.parse().ok())
    }

    /// A boolean as nats-server's `decodeBool` reads it: absent or empty is `false`;
    /// otherwise `strconv.ParseBool`, whose refusal is the 400 answer.
    pub fn boolean(&self, name: &str) -> Result<bool, Response> {
        match self.text(name) {
            "" | "0" | "f" | "F" | "false" | "FALSE" | "False" => Ok(false),
            "1" | "t" | "T" | "true" | "TRUE" | "True" => Ok(true),
            other => Err(Response::text(
                400,
                format!(
                    "Error decoding boolean for '{name}': strconv.ParseBool: parsing {}: invalid syntax",
                    go_quote(other.as_bytes())
                ),
            )),
        }
    }

    /// An integer as nats-server's `decodeInt` reads it: absent or empty is 0; otherwise
    /// `strconv.Atoi` (64-bit), whose refusal is the 400 answer.
    pub fn integer(&self, name: &str) -> Result<i64, Response> {
        let text = self.text(name);
        if text.is_empty() {
            return Ok(0);
        }
        let digits = text.strip_prefix(['+', '-']).unwrap_or(text);
        let problem = match text.parse::<i64>() {
            Ok(value) => return Ok(value),
            Err(_) if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) => "value out of range",
            Err(_) => "invalid syntax",
        };
        Err(Response::text(
            400,
            format!("Error decoding int for '{name}': strconv.Atoi: parsing {}: {problem}", go_quote(text.as_bytes())),
        ))
    }
}

/// Go's `url.QueryUnescape`: `+` is a space, `%XX` a byte; `None` for a bad escape.
fn query_unescape(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        match bytes[index] {
            b'%' => {
                let hex = bytes.get(index + 1..index + 3)?;
                let hex = std::str::from_utf8(hex).ok().filter(|h| h.bytes().all(|b| b.is_ascii_hexdigit()))?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                index += 3;
            }
            b'+' => {
                out.push(b' ');
                index += 1;
            }
            byte => {
                out.push(byte);
                index += 1;
            }
        }
    }
    Some(String::from_utf8_lossy(&out).into_owned())
}

/// JSON text as Go's `encoding/json` writes it: `<`, `>`, `&`, U+2028 and U+2029 escaped
/// inside strings (they can only occur inside strings, so the whole text is rewritten).
pub fn go_json(text: String) -> String {
    if !text.contains(['<', '>', '&', '\u{2028}', '\u{2029}']) {
        return text;
    }
    let mut out = String::with_capacity(text.len() + 16);
    for character in text.chars() {
        match character {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

pub struct Response {
    status: u16,
    content_type: &'static str,
    body: String,
}

impl Response {
    pub fn json(status: u16, body: String) -> Response {
        Response { status, content_type: "application/json", body }
    }

    /// A plain-text answer, as nats-server writes its decoding errors (no newline).
    pub fn text(status: u16, message: String) -> Response {
        Response { status, content_type: "text/plain; charset=utf-8", body: message }
    }

    pub fn prometheus(body: String) -> Response {
        Response { status: 200, content_type: "text/plain; version=0.0.4; charset=utf-8", body }
    }

    pub fn status(&self) -> u16 {
        self.status
    }

    pub fn body(&self) -> &str {
        &self.body
    }

    pub fn write(&self, stream: &mut impl Write) -> std::io::Result<()> {
        let reason = match self.status {
            200 => "OK",
            400 => "Bad Request",
            404 => "Not Found",
            500 => "Internal Server Error",
            _ => "Service Unavailable",
        };
        write!(
            stream,
            "HTTP/1.1 {} {reason}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{}",
            self.status,
            self.content_type,
            self.body.len(),
            self.body
        )?;
        stream.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_and_query_are_split() {
        let request = Request::parse("GET /connz?subs=1&limit=5&auth HTTP/1.1\r\n");
        assert_eq!(request.path, "/connz");
        assert!(request.flag("subs"));
        assert!(request.flag("auth"));
        assert!(!request.flag("missing"));
        assert_eq!(request.number("limit"), Some(5));
    }

    #[test]
    fn query_is_decoded_as_go_decodes_it() {
        let request = Request::parse("GET /jsz?acc=%24G&x=a+b&x=second&bad=%zz&semi=1;2&e HTTP/1.1");
        assert_eq!(request.text("acc"), "$G");
        assert_eq!(request.text("x"), "a b", "the first value wins, + is a space");
        assert!(!request.query.contains_key("bad") && !request.query.contains_key("semi"));
        assert_eq!(request.text("e"), "");
    }

    #[test]
    fn booleans_and_integers_parse_as_strconv() {
        let request = Request::parse("GET /x?a=T&b=False&c=&d=yes&n=-3&m=x&o=99999999999999999999 HTTP/1.1");
        assert_eq!((request.boolean("a").ok(), request.boolean("b").ok()), (Some(true), Some(false)));
        assert_eq!((request.boolean("c").ok(), request.boolean("missing").ok()), (Some(false), Some(false)));
        let refused = request.boolean("d").err().expect("yes is no boolean");
        assert_eq!(refused.status(), 400);
        assert_eq!(
            refused.body(),
            "Error decoding boolean for 'd': strconv.ParseBool: parsing \"yes\": invalid syntax"
        );
        assert_eq!(request.integer("n").ok(), Some(-3));
        let refused = request.integer("m").err().expect("x is no integer");
        assert_eq!(refused.body(), "Error decoding int for 'm': strconv.Atoi: parsing \"x\": invalid syntax");
        assert!(request.integer("o").err().expect("too big").body().ends_with("value out of range"));
    }

    #[test]
    fn go_escapes() {
        assert_eq!(go_json(r#"{"s":"a.>&<"}"#.to_string()), r#"{"s":"a.\u003e\u0026\u003c"}"#);
    }
}
