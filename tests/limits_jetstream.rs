//! JetStream resource limits under hostile requests (reliability matrix row 18), with
//! nats-server 2.15's answers for the same requests (see perf/limits.md): a consumer
//! per stream beyond the default 1000 is refused, waiting pulls beyond max_waiting get
//! 409, a pull for 2^31 messages is served without allocating for them, and a consumer
//! that never acks gets no more than max_ack_pending. The server answers PING after each.

mod common;

use common::{RawClient, TestServer};

struct Client {
    raw: RawClient,
}

/// One frame from the server: a status line (HMSG) or a payload (MSG), or a line.
#[derive(Debug, PartialEq)]
enum Frame {
    Payload(String),
    Status(String),
    Line(String),
}

impl Client {
    fn connect(server: &TestServer) -> Client {
        let (mut raw, _info) = RawClient::connect(&server.address());
        raw.send(b"CONNECT {\"verbose\":false,\"headers\":true,\"protocol\":1}\r\nSUB _R.> 1\r\nPING\r\n");
        assert_eq!(raw.line(), "PONG\r\n");
        Client { raw }
    }

    fn publish(&mut self, subject: &str, reply: &str, body: &str) {
        self.raw.send(format!("PUB {subject} {reply} {}\r\n{body}\r\n", body.len()).as_bytes());
    }

    fn next(&mut self) -> Frame {
        let line = self.raw.line();
        assert!(!line.is_empty(), "connection closed");
        let words: Vec<&str> = line.split_whitespace().collect();
        match words[0] {
            "MSG" => {
                let size: usize = words.last().unwrap().parse().unwrap();
                let body = self.raw.exact(size + 2);
                Frame::Payload(String::from_utf8_lossy(&body[..size]).into_owned())
            }
            "HMSG" => {
                let total: usize = words.last().unwrap().parse().unwrap();
                let body = self.raw.exact(total + 2);
                let status = String::from_utf8_lossy(&body).lines().next().unwrap_or("").to_string();
                Frame::Status(status)
            }
            _ => Frame::Line(line.trim_end().to_string()),
        }
    }

    fn request(&mut self, subject: &str, body: &str) -> String {
        self.publish(subject, "_R.api", body);
        match self.next() {
            Frame::Payload(payload) => payload,
            other => panic!("expected an API reply, got {other:?}"),
        }
    }

    fn answers_ping(&mut self) {
        self.raw.send(b"PING\r\n");
        while self.next() != Frame::Line("PONG".into()) {}
    }

    fn stream(&mut self, name: &str) {
        let body = format!("{{\"name\":\"{name}\",\"subjects\":[\"{name}.>\"],\"storage\":\"memory\"}}");
        let reply = self.request(&format!("$JS.API.STREAM.CREATE.{name}"), &body);
        assert!(!reply.contains("\"error\""), "{reply}");
    }

    fn consumer(&mut self, stream: &str, name: &str, extra: &str) -> String {
        let body = format!("{{\"stream_name\":\"{stream}\",\"config\":{{\"durable_name\":\"{name}\",\"ack_policy\":\"explicit\"{extra}}}}}");
        self.request(&format!("$JS.API.CONSUMER.CREATE.{stream}.{name}"), &body)
    }
}

#[test]
fn a_stream_takes_1000_consumers_by_default_then_refuses_like_nats_server() {
    let server = TestServer::start(&[]);
    let mut client = Client::connect(&server);
    client.stream("MANY");
    for index in 0..1000 {
        let reply = client.consumer("MANY", &format!("c{index}"), "");
        assert!(!reply.contains("\"error\""), "consumer {index}: {reply}");
    }
    let refused = client.consumer("MANY", "c1000", "");
    assert!(
        refused.contains(r#""error":{"code":400,"err_code":10026,"description":"maximum consumers limit reached"}"#),
        "{refused}"
    );
    let again = client.consumer("MANY", "c999", "");
    assert!(!again.contains("\"error\""), "re-creating an existing consumer at the limit: {again}");
    client.answers_ping();
}

#[test]
fn waiting_pulls_beyond_max_waiting_get_409() {
    let server = TestServer::start(&[]);
    let mut client = Client::connect(&server);
    client.stream("WAIT");
    client.consumer("WAIT", "waiter", "");
    for index in 0..600 {
        client.publish(
            "$JS.API.CONSUMER.MSG.NEXT.WAIT.waiter",
            &format!("_R.w.{index}"),
            "{\"batch\":1,\"expires\":30000000000}",
        );
    }
    // The 88 beyond the default max_waiting (512) are answered at once; the others wait.
    for _ in 0..88 {
        assert_eq!(client.next(), Frame::Status("NATS/1.0 409 Exceeded MaxWaiting".into()));
    }
    client.answers_ping();
}

#[test]
fn a_pull_for_2_pow_31_messages_is_served_and_bounded() {
    let server = TestServer::start(&[]);
    let mut client = Client::connect(&server);
    client.stream("BIG");
    for _ in 0..10 {
        client.publish("BIG.x", "_R.ack", "hi");
    }
    for _ in 0..10 {
        assert!(matches!(client.next(), Frame::Payload(_)));
    }
    client.consumer("BIG", "puller", "");
    client.publish("$JS.API.CONSUMER.MSG.NEXT.BIG.puller", "_R.pull", "{\"batch\":2147483648,\"expires\":500000000}");
    let mut delivered = 0;
    let status = loop {
        match client.next() {
            Frame::Payload(_) => delivered += 1,
            Frame::Status(status) => break status,
            Frame::Line(line) => panic!("{line}"),
        }
    };
    assert_eq!(delivered, 10);
    assert_eq!(status, "NATS/1.0 408 Request Timeout", "at expiry, as nats-server");
    client.answers_ping();
}

#[test]
fn a_consumer_that_never_acks_gets_max_ack_pending_messages() {
    let server = TestServer::start(&[]);
    let mut client = Client::connect(&server);
    client.stream("PEND");
    let mut burst = Vec::new();
    for _ in 0..3000 {
        burst.extend_from_slice(b"PUB PEND.x 2\r\nhi\r\n");
    }
    client.raw.send(&burst);
    client.consumer("PEND", "lazy", ",\"max_ack_pending\":1000");
    client.publish("$JS.API.CONSUMER.MSG.NEXT.PEND.lazy", "_R.pull", "{\"batch\":3000,\"expires\":500000000}");
    let mut delivered = 0;
    let status = loop {
        match client.next() {
            Frame::Payload(_) => delivered += 1,
            Frame::Status(status) => break status,
            Frame::Line(line) => panic!("{line}"),
        }
    };
    assert_eq!(delivered, 1000);
    assert_eq!(status, "NATS/1.0 408 Request Timeout");
    client.answers_ping();
}
