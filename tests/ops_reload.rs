//! SIGHUP reloads the configuration file: a new token applies to new connections at
//! once, and a file that does not parse leaves the running configuration in place.

mod common;

use std::time::Duration;

use common::{RawClient, TestServer};

/// Whether a CONNECT with `token` is accepted (PONG) or refused (-ERR).
fn connects_with(server: &TestServer, token: &str) -> bool {
    let (mut client, info) = RawClient::connect(&server.address());
    assert!(info.contains("\"auth_required\":true"), "{info}");
    client.send(format!("CONNECT {{\"verbose\":false,\"auth_token\":\"{token}\"}}\r\nPING\r\n").as_bytes());
    let reply = client.line();
    assert!(reply == "PONG\r\n" || reply.starts_with("-ERR"), "{reply:?}");
    reply == "PONG\r\n"
}

/// Waits until a connection with `token` gives `expected` (a reload is asynchronous).
fn eventually(server: &TestServer, token: &str, expected: bool) {
    for _ in 0..100 {
        if connects_with(server, token) == expected {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("token {token:?} never became {}", if expected { "accepted" } else { "refused" });
}

#[test]
fn sighup_applies_a_new_token_and_keeps_the_old_config_on_a_bad_file() {
    let config = tempfile::Builder::new().suffix(".conf").tempfile().unwrap();
    std::fs::write(config.path(), "authorization { token: first }\n").unwrap();
    let path = config.path().display().to_string();
    let server = TestServer::start(&["-c", &path]);
    assert!(connects_with(&server, "first"));
    assert!(!connects_with(&server, "second"));

    std::fs::write(config.path(), "authorization { token: second }\ndebug: true\n").unwrap();
    server.signal(libc::SIGHUP);
    eventually(&server, "second", true);
    assert!(!connects_with(&server, "first"));

    std::fs::write(config.path(), "authorization { token: third \n bogus_key: 1\n").unwrap();
    server.signal(libc::SIGHUP);
    std::thread::sleep(Duration::from_millis(300));
    assert!(connects_with(&server, "second"), "a bad file keeps the running configuration");
    assert!(!connects_with(&server, "third"));
}
