//! Wire-level behaviour compared as literal bytes: what nats-server answers, jetcore must
//! answer the same way (texts from nats-server's client.go and ADR-40).

mod common;

use std::io::Read;
use std::time::Duration;

use common::{RawClient, TestServer};

fn connected(server: &TestServer, connect: &str) -> RawClient {
    let (mut client, info) = RawClient::connect(&server.address());
    assert!(info.starts_with("INFO {"), "{info}");
    client.send(format!("CONNECT {connect}\r\nPING\r\n").as_bytes());
    assert_eq!(client.line(), "PONG\r\n");
    client
}

#[test]
fn info_advertises_what_clients_need() {
    let server = TestServer::start(&[]);
    let (_client, info) = RawClient::connect(&server.address());
    let json: serde_json::Value = serde_json::from_str(info.trim_start_matches("INFO ").trim()).unwrap();
    assert_eq!(json["headers"], true);
    assert_eq!(json["max_payload"], 1048576);
    assert_eq!(json["proto"], 1);
    assert_eq!(json["jetstream"], true);
    let version = json["version"].as_str().unwrap();
    let parts: Vec<u32> = version.split('.').map(|p| p.parse().unwrap()).collect();
    assert!(parts[0] == 2 && parts[1] >= 11, "{version}");
    assert!(info.ends_with("\r\n"));
}

#[test]
fn sloppy_whitespace_and_lowercase_ops_are_accepted() {
    let server = TestServer::start(&[]);
    let mut client = connected(&server, r#"{"verbose":false,"headers":true}"#);
    client.send(b"sub  foo   1\r\nPUB foo  5\r\nhello\r\nunsub 1 \r\nPUB foo 2\r\nno\r\nPING\r\n");
    assert_eq!(client.line(), "MSG foo 1 5\r\n");
    assert_eq!(client.exact(7), b"hello\r\n");
    assert_eq!(client.line(), "PONG\r\n");
}

#[test]
fn hpub_is_delivered_as_hmsg_with_reply() {
    let server = TestServer::start(&[]);
    let mut client = connected(&server, r#"{"verbose":false,"headers":true}"#);
    let headers = "NATS/1.0\r\nA: b\r\n\r\n";
    let total = headers.len() + 2;
    client.send(format!("SUB x 7\r\nHPUB x r.1 {} {total}\r\n{headers}hi\r\nPING\r\n", headers.len()).as_bytes());
    assert_eq!(client.line(), format!("HMSG x 7 r.1 {} {total}\r\n", headers.len()));
    assert_eq!(client.exact(total + 2), format!("{headers}hi\r\n").as_bytes());
    assert_eq!(client.line(), "PONG\r\n");
}

#[test]
fn verbose_acknowledges_each_op() {
    let server = TestServer::start(&[]);
    let (mut client, _) = RawClient::connect(&server.address());
    client.send(b"CONNECT {\"verbose\":true}\r\n");
    assert_eq!(client.line(), "+OK\r\n");
    client.send(b"SUB a 1\r\nPUB b 0\r\n\r\nPING\r\n");
    assert_eq!(client.line(), "+OK\r\n");
    assert_eq!(client.line(), "+OK\r\n");
    assert_eq!(client.line(), "PONG\r\n");
}

#[test]
fn oversize_payload_is_refused_and_closed() {
    let server = TestServer::start(&[]);
    let mut client = connected(&server, r#"{"verbose":false}"#);
    client.send(b"PUB big 1048577\r\n");
    assert_eq!(client.line(), "-ERR 'Maximum Payload Violation'\r\n");
    assert_eq!(client.line(), "", "connection closed");
}

#[test]
fn unknown_operation_is_refused_and_closed() {
    let server = TestServer::start(&[]);
    let mut client = connected(&server, r#"{"verbose":false}"#);
    client.send(b"FLY me to the moon\r\n");
    assert_eq!(client.line(), "-ERR 'Unknown Protocol Operation'\r\n");
    assert_eq!(client.line(), "");
}

#[test]
fn invalid_subject_keeps_the_connection_open() {
    let server = TestServer::start(&[]);
    let mut client = connected(&server, r#"{"verbose":false}"#);
    client.send(b"SUB foo..bar 1\r\nPING\r\n");
    assert_eq!(client.line(), "-ERR 'Invalid Subject'\r\n");
    assert_eq!(client.line(), "PONG\r\n");
}

#[test]
fn no_responders_needs_headers() {
    let server = TestServer::start(&[]);
    let (mut client, _) = RawClient::connect(&server.address());
    client.send(b"CONNECT {\"no_responders\":true,\"headers\":false}\r\n");
    assert_eq!(client.line(), "-ERR 'no responders requires headers support'\r\n");
    assert_eq!(client.line(), "");
}

#[test]
fn no_responders_status_goes_to_the_reply_subscription() {
    let server = TestServer::start(&[]);
    let mut client = connected(&server, r#"{"verbose":false,"no_responders":true,"headers":true}"#);
    client.send(b"SUB _INBOX.abc.* 9\r\nPUB nobody _INBOX.abc.1 2\r\nhi\r\n");
    assert_eq!(client.line(), "HMSG _INBOX.abc.1 9 16 16\r\n");
    assert_eq!(client.exact(18), b"NATS/1.0 503\r\n\r\n\r\n");
}

#[test]
fn token_auth_refuses_bad_credentials() {
    let server = TestServer::start(&["--auth", "s3cret"]);
    let (mut client, info) = RawClient::connect(&server.address());
    assert!(info.contains("\"auth_required\":true"), "{info}");
    client.send(b"CONNECT {\"auth_token\":\"wrong\"}\r\nPING\r\n");
    assert_eq!(client.line(), "-ERR 'Authorization Violation'\r\n");
    assert_eq!(client.line(), "");
    let mut good = connected(&server, r#"{"verbose":false,"auth_token":"s3cret"}"#);
    good.send(b"PING\r\n");
    assert_eq!(good.line(), "PONG\r\n");
}

#[test]
fn silent_client_gets_authentication_timeout() {
    let server = TestServer::start(&["--user", "u", "--pass", "p"]);
    let (mut client, _) = RawClient::connect(&server.address());
    client.stream.set_read_timeout(Some(Duration::from_secs(6))).unwrap();
    assert_eq!(client.line(), "-ERR 'Authentication Timeout'\r\n");
}

#[test]
fn a_subscriber_that_never_reads_is_disconnected_as_slow_consumer() {
    let config = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(config.path(), "max_pending: 1MB\nwrite_deadline: \"2s\"\n").unwrap();
    let server = TestServer::start(&["-c", config.path().to_str().unwrap()]);
    let mut slow = connected(&server, r#"{"verbose":false}"#);
    slow.send(b"SUB flood 1\r\nPING\r\n");
    assert_eq!(slow.line(), "PONG\r\n");
    let mut publisher = connected(&server, r#"{"verbose":false}"#);
    let payload = vec![b'x'; 32 * 1024];
    let mut frame = format!("PUB flood {}\r\n", payload.len()).into_bytes();
    frame.extend_from_slice(&payload);
    frame.extend_from_slice(b"\r\n");
    for _ in 0..(64 * 1024 * 1024 / payload.len()) {
        publisher.send(&frame);
    }
    publisher.send(b"PING\r\n");
    assert_eq!(publisher.line(), "PONG\r\n", "publisher unaffected");
    // The slow client eventually sees its connection closed by the server.
    let mut sink = vec![0u8; 1 << 20];
    slow.stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut total = 0usize;
    loop {
        match slow.stream.read(&mut sink) {
            Ok(0) => break,
            Ok(read) => total += read,
            Err(error) => panic!("connection not closed after {total} bytes: {error}"),
        }
    }
    assert!(total < 64 * 1024 * 1024, "closed before everything was delivered ({total} bytes)");
}
