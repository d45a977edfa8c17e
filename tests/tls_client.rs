//! TLS on the client port with real clients (async-nats, and a raw rustls client for the
//! wire-level cases): the handshake in both of nats-server's orders, client certificates,
//! and the ways a handshake goes wrong.

mod common;
#[path = "common/tls.rs"]
mod tls;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::Duration;

use common::TestServer;
use futures::StreamExt;
use tls::{Authority, Issued};

/// A test's certificates and a server started with `tls { ... extra }` and `top` lines.
struct Setup {
    _dir: tempfile::TempDir,
    authority: Authority,
    server: TestServer,
}

fn start(extra: &str, top: &str) -> Setup {
    let dir = tempfile::tempdir().expect("temp dir");
    let authority = Authority::new(dir.path(), "test");
    let server_cert = authority.server("server");
    let extra = extra.replace("CA_FILE", &format!("{:?}", authority.ca_file.display().to_string()));
    let text = format!("{}{top}\n", tls::tls_block(&server_cert, &extra));
    let config = tls::config_file(dir.path(), &text);
    let server = TestServer::start(&["-c", config.to_str().expect("utf-8 path")]);
    Setup { _dir: dir, authority, server }
}

fn tls_options(setup: &Setup) -> async_nats::ConnectOptions {
    async_nats::ConnectOptions::new().add_root_certificates(setup.authority.ca_file.clone()).require_tls(true)
}

/// Publishes to itself through one subscription: a payload past rustls' 64 KiB default
/// buffer, then a burst of small messages, and checks every byte came back.
async fn round_trip(client: &async_nats::Client) {
    let mut subscription = client.subscribe("tls.echo").await.expect("subscribe");
    client.flush().await.expect("flush");
    let large: Vec<u8> = (0..1_000_000u32).map(|i| (i % 251) as u8).collect();
    client.publish("tls.echo", large.clone().into()).await.expect("publish large");
    for i in 0..2000u32 {
        client.publish("tls.echo", i.to_string().into()).await.expect("publish");
    }
    client.flush().await.expect("flush");
    let first = subscription.next().await.expect("large message");
    assert_eq!(first.payload.as_ref(), large.as_slice());
    for i in 0..2000u32 {
        let message = subscription.next().await.expect("message");
        assert_eq!(message.payload.as_ref(), i.to_string().as_bytes());
    }
}

#[tokio::test]
async fn async_nats_upgrades_after_info_for_pub_sub_and_jetstream() {
    let setup = start("", "");
    let client = tls_options(&setup).connect(setup.server.url()).await.expect("TLS connect");
    round_trip(&client).await;
    let jetstream = async_nats::jetstream::new(client.clone());
    jetstream
        .create_stream(async_nats::jetstream::stream::Config {
            name: "TLS".into(),
            subjects: vec!["tls.js.>".into()],
            ..Default::default()
        })
        .await
        .expect("create stream");
    let mut acks = Vec::new();
    for i in 0..200 {
        acks.push(jetstream.publish("tls.js.a", format!("m{i}").into()).await.expect("publish"));
    }
    for (i, ack) in acks.into_iter().enumerate() {
        assert_eq!(ack.await.expect("ack").sequence, i as u64 + 1);
    }
    let mut stream = jetstream.get_stream("TLS").await.expect("stream");
    assert_eq!(stream.info().await.expect("info").state.messages, 200);
}

#[tokio::test]
async fn info_says_tls_required_in_plaintext_before_the_upgrade() {
    let setup = start("", "");
    let (_raw, info) = common::RawClient::connect(&setup.server.address());
    assert!(info.starts_with("INFO {"), "{info}");
    assert!(info.contains("\"tls_required\":true"), "{info}");
    assert!(!info.contains("tls_verify"), "{info}");
}

#[tokio::test]
async fn a_tls_url_connects() {
    let setup = start("", "");
    let url = format!("tls://127.0.0.1:{}", setup.server.port);
    let client = async_nats::ConnectOptions::new()
        .add_root_certificates(setup.authority.ca_file.clone())
        .connect(url)
        .await
        .expect("tls:// connect");
    round_trip(&client).await;
}

#[tokio::test]
async fn handshake_first_serves_a_tls_first_client() {
    let setup = start("  handshake_first: true", "");
    let client = tls_options(&setup).tls_first().connect(setup.server.url()).await.expect("TLS-first connect");
    round_trip(&client).await;
    assert!(client.server_info().tls_required);
}

#[tokio::test]
async fn handshake_first_auto_serves_both_orders() {
    let setup = start("  handshake_first: auto", "");
    let first = tls_options(&setup).tls_first().connect(setup.server.url()).await.expect("TLS-first connect");
    let after_info = tls_options(&setup).connect(setup.server.url()).await.expect("INFO-first connect");
    round_trip(&first).await;
    round_trip(&after_info).await;
}

#[tokio::test]
async fn handshake_first_sends_no_plaintext_info() {
    let setup = start("  handshake_first: true", "");
    let mut socket = TcpStream::connect(setup.server.address()).expect("connect");
    socket.set_read_timeout(Some(Duration::from_millis(300))).expect("timeout");
    let mut byte = [0u8; 1];
    let read = socket.read(&mut byte);
    assert!(read.is_err(), "the server spoke first: {read:?} {byte:?}");
}

#[tokio::test]
async fn verify_requires_a_client_certificate() {
    let setup = start("  verify: true\n  ca_file: CA_FILE", "");
    let (_raw, info) = common::RawClient::connect(&setup.server.address());
    assert!(info.contains("\"tls_verify\":true"), "{info}");
    let client_cert = setup.authority.client("alice", "alice", &[], &[]);
    let with_cert = tls_options(&setup)
        .add_client_certificate(client_cert.cert_file.clone(), client_cert.key_file.clone())
        .connect(setup.server.url())
        .await
        .expect("connect with a client certificate");
    round_trip(&with_cert).await;
    let without = tls_options(&setup).connect(setup.server.url()).await;
    assert!(without.is_err(), "a client without a certificate was accepted");
}

#[tokio::test]
async fn a_certificate_from_another_authority_is_refused() {
    let setup = start("  verify: true\n  ca_file: CA_FILE", "");
    let stranger = Authority::new(&setup.authority.dir, "stranger");
    let client_cert = stranger.client("mallory", "mallory", &[], &[]);
    let refused = tls_options(&setup)
        .add_client_certificate(client_cert.cert_file.clone(), client_cert.key_file.clone())
        .connect(setup.server.url())
        .await;
    assert!(refused.is_err(), "a certificate from another CA was accepted");
}

#[tokio::test]
async fn pinned_certs_admit_only_the_pinned_key() {
    let dir = tempfile::tempdir().expect("temp dir");
    let authority = Authority::new(dir.path(), "pin");
    let pinned = authority.client("pinned", "pinned", &[], &[]);
    let other = authority.client("other", "other", &[], &[]);
    let server_cert = authority.server("server");
    let extra = format!(
        "  verify: true\n  ca_file: {:?}\n  pinned_certs: [{:?}]",
        authority.ca_file.display().to_string(),
        pinned.pin
    );
    let config = tls::config_file(dir.path(), &tls::tls_block(&server_cert, &extra));
    let server = TestServer::start(&["-c", config.to_str().expect("path")]);
    let options = |issued: &Issued| {
        async_nats::ConnectOptions::new()
            .add_root_certificates(authority.ca_file.clone())
            .add_client_certificate(issued.cert_file.clone(), issued.key_file.clone())
            .require_tls(true)
    };
    let admitted = options(&pinned).connect(server.url()).await.expect("pinned certificate");
    round_trip(&admitted).await;
    let refused = options(&other).connect(server.url()).await;
    assert!(refused.is_err(), "a certificate outside pinned_certs was accepted");
}

#[tokio::test]
async fn allow_non_tls_serves_a_plaintext_and_a_tls_client_at_once() {
    let setup = start("", "allow_non_tls: true");
    let (_raw, info) = common::RawClient::connect(&setup.server.address());
    assert!(info.contains("\"tls_available\":true") && !info.contains("tls_required"), "{info}");
    let plain = async_nats::connect(setup.server.url()).await.expect("plaintext connect");
    let secure = tls_options(&setup).connect(setup.server.url()).await.expect("TLS connect");
    let mut subscription = secure.subscribe("mixed").await.expect("subscribe");
    secure.flush().await.expect("flush");
    common::await_interest(&secure, &plain).await;
    plain.publish("mixed", "from plaintext".into()).await.expect("publish");
    plain.flush().await.expect("flush");
    assert_eq!(subscription.next().await.expect("message").payload.as_ref(), b"from plaintext");
}

/// Reads until the server closes; panics when it keeps the connection past `wait`.
fn read_until_closed(socket: &mut TcpStream, wait: Duration) -> Vec<u8> {
    socket.set_read_timeout(Some(wait)).expect("timeout");
    let mut received = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        match socket.read(&mut chunk) {
            Ok(0) => return received,
            Ok(read) => received.extend_from_slice(&chunk[..read]),
            Err(error) if error.kind() == std::io::ErrorKind::ConnectionReset => return received,
            Err(error) => panic!("the server kept the connection open: {error}"),
        }
    }
}

#[tokio::test]
async fn a_plaintext_client_against_a_tls_only_server_is_closed() {
    let setup = start("", "");
    let (mut raw, _info) = common::RawClient::connect(&setup.server.address());
    raw.send(b"CONNECT {\"verbose\":false}\r\nPING\r\n");
    let received = read_until_closed(&mut raw.stream, Duration::from_secs(20));
    // nats-server answers nothing the client could read as NATS: only a TLS alert.
    assert!(!String::from_utf8_lossy(&received).contains("PONG"), "{received:?}");
}

#[tokio::test]
async fn a_stalled_handshake_is_closed_after_the_timeout() {
    let setup = start("  timeout: 0.5", "");
    let (mut raw, _info) = common::RawClient::connect(&setup.server.address());
    let received = read_until_closed(&mut raw.stream, Duration::from_secs(20));
    assert!(received.is_empty(), "{received:?}");
    // A ClientHello begun and never finished is closed too.
    let (mut raw, _info) = common::RawClient::connect(&setup.server.address());
    raw.send(&[0x16, 0x03, 0x01, 0x02, 0x00, 0x01]);
    read_until_closed(&mut raw.stream, Duration::from_secs(20));
}

#[tokio::test]
async fn garbage_instead_of_a_client_hello_is_closed() {
    let setup = start("", "");
    let (mut raw, _info) = common::RawClient::connect(&setup.server.address());
    raw.send(b"\x16\x03\x01\x00\x05hello GARBAGE GARBAGE GARBAGE\r\n");
    read_until_closed(&mut raw.stream, Duration::from_secs(20));
    let (mut raw, _info) = common::RawClient::connect(&setup.server.address());
    raw.send(&[0xff; 64]);
    read_until_closed(&mut raw.stream, Duration::from_secs(20));
    // The server still serves TLS clients.
    let client = tls_options(&setup).connect(setup.server.url()).await.expect("TLS connect");
    round_trip(&client).await;
}

/// A rustls client over a blocking socket, past the plaintext INFO.
struct RawTls {
    socket: TcpStream,
    session: rustls::ClientConnection,
}

impl RawTls {
    /// Connects and reads the plaintext INFO; `early` is written before the handshake
    /// ends, so it leaves in the same write (and TCP segment) as the client's Finished.
    fn connect(address: &str, config: Arc<rustls::ClientConfig>, early: &[u8]) -> RawTls {
        let mut socket = TcpStream::connect(address).expect("connect");
        socket.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
        let mut info = Vec::new();
        let mut byte = [0u8; 1];
        while !info.ends_with(b"\r\n") {
            socket.read_exact(&mut byte).expect("INFO");
            info.push(byte[0]);
        }
        let name = rustls::pki_types::ServerName::try_from("127.0.0.1").expect("name");
        let mut session = rustls::ClientConnection::new(config, name).expect("client session");
        session.writer().write_all(early).expect("queue early data");
        loop {
            let mut outgoing = Vec::new();
            while session.wants_write() {
                session.write_tls(&mut outgoing).expect("write_tls");
            }
            socket.write_all(&outgoing).expect("send");
            if !session.is_handshaking() {
                break;
            }
            let read = session.read_tls(&mut socket).expect("read_tls");
            assert!(read > 0, "the server closed during the handshake");
            session.process_new_packets().expect("handshake");
        }
        RawTls { socket, session }
    }

    /// Plaintext up to and including `marker`; `None` at a clean close (close_notify).
    fn read_until(&mut self, marker: &[u8]) -> Option<Vec<u8>> {
        let mut plaintext = Vec::new();
        loop {
            let mut chunk = [0u8; 4096];
            match self.session.reader().read(&mut chunk) {
                Ok(0) => return None,
                Ok(read) => {
                    plaintext.extend_from_slice(&chunk[..read]);
                    if plaintext.windows(marker.len()).any(|window| window == marker) {
                        return Some(plaintext);
                    }
                    continue;
                }
                Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(error) => panic!("reading plaintext: {error}"),
            }
            let read = self.session.read_tls(&mut self.socket).expect("read_tls");
            assert!(read > 0, "closed without close_notify");
            self.session.process_new_packets().expect("process");
        }
    }
}

#[tokio::test]
async fn connect_and_ping_in_the_same_flight_as_finished_are_answered() {
    let setup = start("", "");
    let config = tls::client_config(&setup.authority, None);
    let mut raw = RawTls::connect(&setup.server.address(), config, b"CONNECT {\"verbose\":false}\r\nPING\r\n");
    let plaintext = raw.read_until(b"PONG\r\n").expect("PONG before any close");
    assert!(String::from_utf8_lossy(&plaintext).ends_with("PONG\r\n"), "{plaintext:?}");
}

#[tokio::test]
async fn a_clients_close_notify_is_answered() {
    let setup = start("", "");
    let config = tls::client_config(&setup.authority, None);
    let mut raw = RawTls::connect(&setup.server.address(), config, b"CONNECT {\"verbose\":false}\r\nPING\r\n");
    raw.read_until(b"PONG\r\n").expect("PONG");
    raw.session.send_close_notify();
    let mut outgoing = Vec::new();
    while raw.session.wants_write() {
        raw.session.write_tls(&mut outgoing).expect("write_tls");
    }
    raw.socket.write_all(&outgoing).expect("send close_notify");
    assert!(raw.read_until(b"never").is_none(), "no close_notify came back");
}

#[tokio::test]
async fn verify_and_map_takes_the_user_and_its_permissions_from_the_certificate() {
    let users = "authorization { users = [\n\
                 {user: \"alice@example.com\", permissions: {publish: {allow: [\"alice.>\", \"_INBOX.>\"]}}}\n\
                 {user: \"CN=bob,O=Jetcore Tests\"}\n]}";
    let setup = start("  verify_and_map: true\n  ca_file: CA_FILE", users);
    let alice_cert = setup.authority.client("alice", "alice", &["alice@example.com"], &["alice.example.com"]);
    let bob_cert = setup.authority.client("bob", "bob", &[], &[]);
    let carol_cert = setup.authority.client("carol", "carol", &["carol@example.com"], &[]);
    let options =
        |issued: &Issued| tls_options(&setup).add_client_certificate(issued.cert_file.clone(), issued.key_file.clone());
    // CONNECT names no user: the certificate does.
    let alice = options(&alice_cert).connect(setup.server.url()).await.expect("alice by e-mail");
    let bob = options(&bob_cert).connect(setup.server.url()).await.expect("bob by subject");
    let mut everything = bob.subscribe(">").await.expect("subscribe");
    bob.flush().await.expect("flush");
    common::await_interest(&bob, &alice).await;
    // Alice may publish only under alice.> (and inboxes): the first is dropped, the second arrives.
    alice.publish("secret", "no".into()).await.expect("publish");
    alice.publish("alice.ok", "yes".into()).await.expect("publish");
    alice.flush().await.expect("flush");
    let message = loop {
        let message = everything.next().await.expect("message");
        if !message.subject.starts_with("_INBOX") {
            break message;
        }
    };
    assert_eq!(message.subject.as_str(), "alice.ok");
    let refused = options(&carol_cert).connect(setup.server.url()).await;
    assert!(refused.is_err(), "a certificate naming no configured user was accepted");
}

#[tokio::test]
async fn verify_and_map_matches_a_distinguished_name_as_nats_server_does() {
    // Users named by DN: type case and spaces do not matter; the second lists the
    // subject's RDNs in another order, which nats-server also accepts.
    let users = "authorization { users = [\n\
                 {user: \"dc=example, ou=desk, cn=dave\", permissions: {publish: {allow: [\"dave.>\", \"_INBOX.>\"]}}}\n\
                 {user: \"CN=erin,OU=desk,DC=example\"}\n]}";
    let setup = start("  verify_and_map: true\n  ca_file: CA_FILE", users);
    let domain = rcgen::DnType::CustomDnType(vec![0, 9, 2342, 19200300, 100, 1, 25]);
    let subject = |common_name| {
        vec![
            (rcgen::DnType::CommonName, common_name),
            (rcgen::DnType::OrganizationalUnitName, "desk"),
            (domain.clone(), "example"),
        ]
    };
    let dave_cert = setup.authority.client_with_subject("dave", &subject("dave"));
    let erin_cert = setup.authority.client_with_subject("erin", &subject("erin"));
    let frank_cert = setup.authority.client_with_subject("frank", &subject("frank"));
    let options =
        |issued: &Issued| tls_options(&setup).add_client_certificate(issued.cert_file.clone(), issued.key_file.clone());
    let dave = options(&dave_cert).connect(setup.server.url()).await.expect("dave by distinguished name");
    let erin = options(&erin_cert).connect(setup.server.url()).await.expect("erin by reordered RDNs");
    let mut everything = erin.subscribe(">").await.expect("subscribe");
    erin.flush().await.expect("flush");
    common::await_interest(&erin, &dave).await;
    // Dave has his user's permissions: the first is dropped, the second arrives.
    dave.publish("elsewhere", "no".into()).await.expect("publish");
    dave.publish("dave.ok", "yes".into()).await.expect("publish");
    dave.flush().await.expect("flush");
    let message = loop {
        let message = everything.next().await.expect("message");
        if !message.subject.starts_with("_INBOX") {
            break message;
        }
    };
    assert_eq!(message.subject.as_str(), "dave.ok");
    let refused = options(&frank_cert).connect(setup.server.url()).await;
    assert!(refused.is_err(), "a subject naming no configured user was accepted");
}
