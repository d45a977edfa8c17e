//! SIGHUP reloads the configuration file: a new token applies to new connections at
//! once, open connections whose credentials no longer hold are closed with
//! `-ERR 'Authorization Violation'` (as nats-server does) while the others stay, and a
//! file that does not parse leaves the running configuration in place.

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

/// A raw connection authenticated as `user`/`pass`, checked with a PING round trip.
fn logged_in(server: &TestServer, user: &str, pass: &str) -> Option<RawClient> {
    let (mut client, info) = RawClient::connect(&server.address());
    assert!(info.contains("\"auth_required\":true"), "{info}");
    let connect = format!("CONNECT {{\"verbose\":false,\"user\":\"{user}\",\"pass\":\"{pass}\"}}\r\nPING\r\n");
    client.send(connect.as_bytes());
    let reply = client.line();
    assert!(reply == "PONG\r\n" || reply == "-ERR 'Authorization Violation'\r\n", "{reply:?}");
    (reply == "PONG\r\n").then_some(client)
}

fn users_config(alice_password: &str) -> String {
    let alice = format!("{{user: alice, password: {alice_password}}}");
    format!("authorization {{\n  users = [\n    {alice}\n    {{user: bob, password: two}}\n  ]\n}}\n")
}

#[test]
fn sighup_closes_connections_whose_password_changed_and_keeps_the_others() {
    let config = tempfile::Builder::new().suffix(".conf").tempfile().unwrap();
    std::fs::write(config.path(), users_config("one")).unwrap();
    let path = config.path().display().to_string();
    let server = TestServer::start(&["-c", &path, "--shards", "2"]);
    let log_in = |user: &str, pass: &str| logged_in(&server, user, pass).expect("logs in");
    let mut alices: Vec<RawClient> = (0..3).map(|_| log_in("alice", "one")).collect();
    let mut bobs: Vec<RawClient> = (0..3).map(|_| log_in("bob", "two")).collect();
    assert!(logged_in(&server, "alice", "uno").is_none());

    std::fs::write(config.path(), users_config("uno")).unwrap();
    server.signal(libc::SIGHUP);
    for alice in &mut alices {
        // Read timeout 5 s: the reload closes the connection well before that.
        assert_eq!(alice.line(), "-ERR 'Authorization Violation'\r\n");
        assert_eq!(alice.line(), "", "closed after the error");
    }
    for bob in &mut bobs {
        bob.send(b"PING\r\n");
        assert_eq!(bob.line(), "PONG\r\n", "bob's password still holds: his connection stays open");
    }
    let mut alice = logged_in(&server, "alice", "uno").expect("the new password is accepted");
    assert!(logged_in(&server, "alice", "one").is_none(), "the old password is refused");

    // A reload that leaves authorization alone closes nobody.
    std::fs::write(config.path(), users_config("uno") + "debug: true\n").unwrap();
    server.signal(libc::SIGHUP);
    std::thread::sleep(Duration::from_millis(300));
    for client in bobs.iter_mut().chain(std::iter::once(&mut alice)) {
        client.send(b"PING\r\n");
        assert_eq!(client.line(), "PONG\r\n");
    }
}
