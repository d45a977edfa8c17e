//! Credentials that are not plain text, over real sockets: nkey users who sign the nonce
//! sent in INFO (with async-nats, which signs as applications do, and by hand for the
//! refusals), and bcrypt hashes for passwords and tokens. The texts are nats-server
//! 2.15's for the same configuration: `-ERR 'Authorization Violation'` then close, and
//! its configuration errors.

mod common;

use common::start_refusal::start_expecting_refusal;
use common::{RawClient, TestServer};
use nkeys::KeyPair;

fn server_with(config: &str) -> (TestServer, tempfile::NamedTempFile) {
    let file = tempfile::Builder::new().suffix(".conf").tempfile().unwrap();
    std::fs::write(file.path(), config).unwrap();
    let path = file.path().display().to_string();
    (TestServer::start(&["-c", path.as_str(), "--shards", "2"]), file)
}

/// The value of a string field in an INFO line.
fn info_field(info: &str, field: &str) -> Option<String> {
    let json: serde_json::Value = serde_json::from_str(info.trim().strip_prefix("INFO ")?).ok()?;
    json.get(field)?.as_str().map(str::to_string)
}

/// Sends CONNECT (+PING) and returns the first reply line.
fn connect_reply(client: &mut RawClient, connect: serde_json::Value) -> String {
    client.send(format!("CONNECT {connect}\r\nPING\r\n").as_bytes());
    client.line()
}

fn base64_url(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let word = chunk.iter().enumerate().fold(0u32, |word, (i, &byte)| word | u32::from(byte) << (16 - 8 * i));
        for i in 0..=chunk.len() {
            out.push(ALPHABET[(word >> (18 - 6 * i)) as usize & 63] as char);
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_nkey_user_logs_in_by_signing_the_nonce_and_gets_its_permissions() {
    let (alice, mallory) = (KeyPair::new_user(), KeyPair::new_user());
    let config = format!(
        "authorization {{\n  users = [\n    {{nkey: {}, permissions: {{publish: \"ok.>\", subscribe: [\"ok.>\", \"_INBOX.>\"]}}}}\n    {{user: bob, password: two}}\n  ]\n}}\n",
        alice.public_key()
    );
    let (server, _config) = server_with(&config);

    let client = async_nats::ConnectOptions::with_nkey(alice.seed().unwrap()).connect(server.url()).await.unwrap();
    let mut subscription = client.subscribe("ok.>").await.unwrap();
    client.flush().await.unwrap();
    client.publish("ok.one", "allowed".into()).await.unwrap();
    client.publish("denied.one", "dropped".into()).await.unwrap();
    client.flush().await.unwrap();
    let received = subscription.next_message().await;
    assert_eq!(received.subject.as_str(), "ok.one");

    let refused = async_nats::ConnectOptions::with_nkey(mallory.seed().unwrap()).connect(server.url());
    let refused = tokio::time::timeout(std::time::Duration::from_secs(10), refused).await;
    assert!(!matches!(refused, Ok(Ok(_))), "an unlisted key is refused");

    // The password user beside the nkey user still logs in.
    let bob = async_nats::ConnectOptions::with_user_and_password("bob".into(), "two".into());
    bob.connect(server.url()).await.expect("password users work beside nkey users");
}

trait NextMessage {
    async fn next_message(&mut self) -> async_nats::Message;
}

impl NextMessage for async_nats::Subscriber {
    async fn next_message(&mut self) -> async_nats::Message {
        use futures::StreamExt;
        tokio::time::timeout(std::time::Duration::from_secs(10), self.next()).await.unwrap().unwrap()
    }
}

#[test]
fn a_signature_counts_only_for_this_connections_nonce_and_key() {
    let (alice, mallory) = (KeyPair::new_user(), KeyPair::new_user());
    let (server, _config) = server_with(&format!("authorization {{ users = [ {{nkey: {}}} ] }}\n", alice.public_key()));
    let sign = |key: &KeyPair, nonce: &str| base64_url(&key.sign(nonce.as_bytes()).unwrap());
    let connect =
        |key: &KeyPair, sig: String| serde_json::json!({"verbose": false, "nkey": key.public_key(), "sig": sig});

    let (mut first, info) = RawClient::connect(&server.address());
    let nonce = info_field(&info, "nonce").expect("INFO carries a nonce when nkey users exist");
    assert_eq!(nonce.len(), 15, "{info}");
    assert!(info.contains("\"auth_required\":true"), "{info}");
    let (mut second, second_info) = RawClient::connect(&server.address());
    assert_ne!(info_field(&second_info, "nonce").as_deref(), Some(nonce.as_str()), "a nonce per connection");

    // A signature of another connection's nonce (a replay) is refused.
    assert_eq!(connect_reply(&mut second, connect(&alice, sign(&alice, &nonce))), "-ERR 'Authorization Violation'\r\n");
    assert_eq!(second.line(), "", "closed after the error");
    // Another key's signature under alice's name, and no signature at all.
    let (mut third, third_info) = RawClient::connect(&server.address());
    let third_nonce = info_field(&third_info, "nonce").unwrap();
    assert_eq!(
        connect_reply(&mut third, connect(&alice, sign(&mallory, &third_nonce))),
        "-ERR 'Authorization Violation'\r\n"
    );
    let (mut fourth, _) = RawClient::connect(&server.address());
    let unsigned = serde_json::json!({"verbose": false, "nkey": alice.public_key()});
    assert_eq!(connect_reply(&mut fourth, unsigned), "-ERR 'Authorization Violation'\r\n");
    // The right signature, in standard base64 with padding (nats-server accepts both).
    let standard = sign(&alice, &nonce).replace('-', "+").replace('_', "/") + "==";
    assert_eq!(connect_reply(&mut first, connect(&alice, standard)), "PONG\r\n");
}

#[test]
fn a_server_without_nkey_users_sends_no_nonce() {
    let (server, _config) = server_with("authorization { users = [ {user: bob, password: two} ] }\n");
    let (_client, info) = RawClient::connect(&server.address());
    assert_eq!(info_field(&info, "nonce"), None, "{info}");
}

fn log_in(server: &TestServer, user: &str, pass: &str) -> (RawClient, String) {
    let (mut client, _) = RawClient::connect(&server.address());
    let reply = connect_reply(&mut client, serde_json::json!({"verbose": false, "user": user, "pass": pass}));
    (client, reply)
}

#[test]
fn a_bcrypt_password_is_checked_as_a_hash_and_a_reload_that_changes_it_closes_its_users() {
    let hash = bcrypt::hash("s3cret", 6).unwrap();
    let users = |alice_hash: &str| {
        format!("authorization {{\n  users = [\n    {{user: alice, password: \"{alice_hash}\"}}\n    {{user: bob, password: two}}\n  ]\n}}\n")
    };
    let (server, config) = server_with(&users(&hash));
    let (mut alice, reply) = log_in(&server, "alice", "s3cret");
    assert_eq!(reply, "PONG\r\n");
    assert_eq!(log_in(&server, "alice", "wrong").1, "-ERR 'Authorization Violation'\r\n");
    assert_eq!(log_in(&server, "alice", &hash).1, "-ERR 'Authorization Violation'\r\n", "the hash is no password");
    let (mut bob, reply) = log_in(&server, "bob", "two");
    assert_eq!(reply, "PONG\r\n");

    // The same hash again: nobody is closed (and no bcrypt runs again).
    std::fs::write(config.path(), users(&hash) + "debug: true\n").unwrap();
    server.signal(libc::SIGHUP);
    std::thread::sleep(std::time::Duration::from_millis(300));
    alice.send(b"PING\r\n");
    assert_eq!(alice.line(), "PONG\r\n");

    // A new hash of another password: alice's connection no longer holds.
    std::fs::write(config.path(), users(&bcrypt::hash("other", 6).unwrap())).unwrap();
    server.signal(libc::SIGHUP);
    assert_eq!(alice.line(), "-ERR 'Authorization Violation'\r\n");
    assert_eq!(alice.line(), "", "closed after the error");
    bob.send(b"PING\r\n");
    assert_eq!(bob.line(), "PONG\r\n", "bob's password still holds");
    assert_eq!(log_in(&server, "alice", "other").1, "PONG\r\n");
}

#[test]
fn a_bcrypt_token_is_checked_as_a_hash() {
    let (server, _config) =
        server_with(&format!("authorization {{ token: \"{}\" }}\n", bcrypt::hash("t0ken", 5).unwrap()));
    let token = |value: &str| {
        let (mut client, _) = RawClient::connect(&server.address());
        connect_reply(&mut client, serde_json::json!({"verbose": false, "auth_token": value}))
    };
    assert_eq!(token("t0ken"), "PONG\r\n");
    assert_eq!(token("t0ke"), "-ERR 'Authorization Violation'\r\n");
}

#[test]
fn nkey_entries_nats_server_refuses_are_refused_with_its_words() {
    let valid = KeyPair::new_user().public_key();
    let cases = [
        (
            "authorization { users = [ {nkey: SCARKS2E3KVB7YORL2DG34XLT7PUCOL2SVM7YXV6ETHLW6Z46UUJ2VZ3} ] }\n"
                .to_string(),
            "Not a valid public nkey for a user",
        ),
        (
            format!("authorization {{ users = [ {{nkey: {valid}, user: alice}} ] }}\n"),
            "Nkey users do not take usernames or passwords",
        ),
        (format!("authorization {{ users = [ {{nkey: {valid}}}, {{nkey: {valid}}} ] }}\n"), "Duplicate nkey"),
        (
            "authorization { users = [ {user: a, password: b}, {user: a, password: c} ] }\n".to_string(),
            "Duplicate user \"a\"",
        ),
    ];
    for (config, expected) in cases {
        let file = tempfile::Builder::new().suffix(".conf").tempfile().unwrap();
        std::fs::write(file.path(), &config).unwrap();
        let refusal = start_expecting_refusal(&["-c", &file.path().display().to_string()], None);
        refusal.assert_no_partial_start();
        assert!(refusal.stderr.contains(expected), "{config}: {}", refusal.stderr);
    }
}
