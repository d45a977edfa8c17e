//! Just enough HTTP/1.1 for monitoring: read one GET request line and its query string,
//! write one response, close.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};

pub struct Request {
    pub path: String,
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
        let query = query_text
            .split('&')
            .filter(|pair| !pair.is_empty())
            .map(|pair| match pair.split_once('=') {
                Some((key, value)) => (key.to_string(), value.to_string()),
                None => (pair.to_string(), String::new()),
            })
            .collect();
        Request { path: path.to_string(), query }
    }

    /// A boolean parameter as nats-server reads them: `1`, `true` (or present, empty).
    pub fn flag(&self, name: &str) -> bool {
        matches!(self.query.get(name).map(String::as_str), Some("" | "1" | "true" | "TRUE" | "True"))
    }

    pub fn number(&self, name: &str) -> Option<usize> {
        self.query.get(name).and_then(|value| value.parse().ok())
    }
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

    pub fn prometheus(body: String) -> Response {
        Response { status: 200, content_type: "text/plain; version=0.0.4; charset=utf-8", body }
    }

    pub fn write(&self, stream: &mut impl Write) -> std::io::Result<()> {
        let reason = match self.status {
            200 => "OK",
            404 => "Not Found",
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
}
