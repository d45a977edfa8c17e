//! TLS as an operator meets it: the `--tls*` flags, configuration mistakes refused at
//! start with the file or value named, a renewed certificate taken on reload (SIGHUP), and
//! monitoring over HTTPS with the same certificate.

mod common;
#[allow(dead_code)]
#[path = "common/start_refusal.rs"]
mod start_refusal;
#[path = "common/tls.rs"]
mod tls;

use std::io::{Read, Write};
use std::time::Duration;

use common::TestServer;
use tls::Authority;

fn path(path: &std::path::Path) -> String {
    path.display().to_string()
}

async fn connects(server: &TestServer, authority: &Authority) -> bool {
    let options = async_nats::ConnectOptions::new().add_root_certificates(authority.ca_file.clone()).require_tls(true);
    match options.connect(server.url()).await {
        Ok(client) => client.flush().await.is_ok(),
        Err(_) => false,
    }
}

#[tokio::test]
async fn the_tls_flags_serve_tls_and_verify() {
    let dir = tempfile::tempdir().expect("temp dir");
    let authority = Authority::new(dir.path(), "flags");
    let server_cert = authority.server("server");
    let (cert, key, ca) = (path(&server_cert.cert_file), path(&server_cert.key_file), path(&authority.ca_file));
    let server = TestServer::start(&["--tls", "--tlscert", &cert, "--tlskey", &key]);
    assert!(connects(&server, &authority).await);
    let verifying = TestServer::start(&["--tlsverify", "--tlscert", &cert, "--tlskey", &key, "--tlscacert", &ca]);
    assert!(!connects(&verifying, &authority).await, "--tlsverify accepted a client without a certificate");
    let client_cert = authority.client("client", "client", &[], &[]);
    let with_cert = async_nats::ConnectOptions::new()
        .add_root_certificates(authority.ca_file.clone())
        .add_client_certificate(client_cert.cert_file.clone(), client_cert.key_file.clone())
        .connect(verifying.url())
        .await
        .expect("client certificate accepted");
    with_cert.flush().await.expect("flush");
}

fn refusal_for(dir: &std::path::Path, config_text: &str) -> start_refusal::Refusal {
    let config = tls::config_file(dir, config_text);
    let store = dir.join("store");
    let refusal = start_refusal::start_expecting_refusal(
        &["-p", "-1", "-a", "127.0.0.1", "-sd", &path(&store), "-c", &path(&config)],
        None,
    );
    refusal.assert_no_partial_start();
    refusal
}

#[test]
fn bad_files_and_values_stop_the_start_naming_them() {
    let dir = tempfile::tempdir().expect("temp dir");
    let authority = Authority::new(dir.path(), "bad");
    let server_cert = authority.server("server");
    let missing = dir.path().join("missing.pem");
    let text = format!("tls {{ cert_file: {:?}, key_file: {:?} }}\n", path(&missing), path(&server_cert.key_file));
    let refusal = refusal_for(dir.path(), &text);
    assert!(refusal.stderr.contains("missing.pem"), "{}", refusal.stderr);

    let not_a_key = dir.path().join("not-a-key.pem");
    std::fs::write(&not_a_key, "hello\n").expect("write");
    let text = format!("tls {{ cert_file: {:?}, key_file: {:?} }}\n", path(&server_cert.cert_file), path(&not_a_key));
    let refusal = refusal_for(dir.path(), &text);
    assert!(refusal.stderr.contains("not-a-key.pem"), "{}", refusal.stderr);

    // A key that is not the certificate's.
    let other = authority.server("other");
    let text =
        format!("tls {{ cert_file: {:?}, key_file: {:?} }}\n", path(&server_cert.cert_file), path(&other.key_file));
    let refusal = refusal_for(dir.path(), &text);
    assert!(refusal.stderr.contains("key_file"), "{}", refusal.stderr);

    let text = tls::tls_block(&server_cert, "  cipher_suites: [TLS_RSA_WITH_RC4_128_SHA]");
    let refusal = refusal_for(dir.path(), &text);
    assert!(refusal.stderr.contains("unrecognized cipher TLS_RSA_WITH_RC4_128_SHA"), "{}", refusal.stderr);

    let text = tls::tls_block(&server_cert, "  curve_preferences: [CurveP521]");
    let refusal = refusal_for(dir.path(), &text);
    assert!(refusal.stderr.contains("unrecognized curve preference CurveP521"), "{}", refusal.stderr);

    let text = tls::tls_block(&server_cert, "  verify: true");
    let refusal = refusal_for(dir.path(), &text);
    assert!(refusal.stderr.contains("ca_file"), "{}", refusal.stderr);
}

#[tokio::test]
async fn named_suites_and_curves_and_tls13_only_still_serve() {
    let dir = tempfile::tempdir().expect("temp dir");
    let authority = Authority::new(dir.path(), "named");
    let server_cert = authority.server("server");
    let extra = "  min_version: \"1.3\"\n  cipher_suites: [TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256]\n  curve_preferences: [CurveP256, X25519]";
    let config = tls::config_file(dir.path(), &tls::tls_block(&server_cert, extra));
    let server = TestServer::start(&["-c", &path(&config)]);
    assert!(connects(&server, &authority).await);
}

#[tokio::test]
async fn a_reload_takes_a_renewed_certificate_for_new_connections() {
    let dir = tempfile::tempdir().expect("temp dir");
    let first = Authority::new(dir.path(), "first");
    let server_cert = first.server("server");
    let config = tls::config_file(dir.path(), &tls::tls_block(&server_cert, ""));
    let server = TestServer::start(&["-c", &path(&config)]);
    let open = async_nats::ConnectOptions::new()
        .add_root_certificates(first.ca_file.clone())
        .connect(server.url())
        .await
        .expect("connect before the reload");
    // The renewed certificate, from another authority, in the same files.
    let second = Authority::new(dir.path(), "second");
    second.server("server");
    assert!(!connects(&server, &second).await, "the new certificate was served before the reload");
    server.signal(libc::SIGHUP);
    let mut renewed = false;
    for _ in 0..100 {
        if connects(&server, &second).await {
            renewed = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(renewed, "new connections never got the renewed certificate");
    assert!(!connects(&server, &first).await, "the old certificate is still served to new connections");
    open.flush().await.expect("an open connection keeps its session across the reload");
}

#[test]
fn https_port_serves_monitoring_with_the_same_certificate() {
    let dir = tempfile::tempdir().expect("temp dir");
    let authority = Authority::new(dir.path(), "https");
    let server_cert = authority.server("server");
    let https_port = std::net::TcpListener::bind("127.0.0.1:0").expect("probe").local_addr().expect("addr").port();
    let text = format!("{}https_port: {https_port}\n", tls::tls_block(&server_cert, ""));
    let config = tls::config_file(dir.path(), &text);
    let _server = TestServer::start(&["-c", &path(&config)]);
    let response = https_varz(https_port, &authority).expect("the monitor answers over TLS");
    assert!(response.starts_with("HTTP/1.1 200 OK"), "{response}");
    assert!(response.contains("\"server_id\""), "{response}");
}

#[test]
fn a_reload_gives_the_https_port_the_renewed_certificate() {
    let dir = tempfile::tempdir().expect("temp dir");
    let first = Authority::new(dir.path(), "first");
    let server_cert = first.server("server");
    let https_port = std::net::TcpListener::bind("127.0.0.1:0").expect("probe").local_addr().expect("addr").port();
    let text = format!("{}https_port: {https_port}\n", tls::tls_block(&server_cert, ""));
    let config = tls::config_file(dir.path(), &text);
    let server = TestServer::start(&["-c", &path(&config)]);
    assert!(https_varz(https_port, &first).is_some(), "the first certificate is served");
    // The renewed certificate, from another authority, in the same files.
    let second = Authority::new(dir.path(), "second");
    second.server("server");
    server.signal(libc::SIGHUP);
    let renewed = (0..100).any(|_| {
        std::thread::sleep(Duration::from_millis(50));
        https_varz(https_port, &second).is_some()
    });
    assert!(renewed, "the monitoring port never served the renewed certificate");
    assert!(https_varz(https_port, &first).is_none(), "the old certificate is still served");
}

/// `GET /varz` over TLS trusting only `authority`; `None` when the handshake or the
/// request fails.
fn https_varz(port: u16, authority: &Authority) -> Option<String> {
    let socket = (0..100).find_map(|_| {
        std::net::TcpStream::connect(("127.0.0.1", port)).ok().or_else(|| {
            std::thread::sleep(Duration::from_millis(50));
            None
        })
    })?;
    socket.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
    let name = rustls::pki_types::ServerName::try_from("127.0.0.1").expect("name");
    let session = rustls::ClientConnection::new(tls::client_config(authority, None), name).expect("session");
    let mut stream = rustls::StreamOwned::new(session, socket);
    stream.write_all(b"GET /varz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    (!response.is_empty()).then_some(response)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connz_shows_a_tls_connections_version_and_suite() {
    let dir = tempfile::tempdir().expect("temp dir");
    let authority = Authority::new(dir.path(), "connz");
    let server_cert = authority.server("server");
    let http_port = std::net::TcpListener::bind("127.0.0.1:0").expect("probe").local_addr().expect("addr").port();
    let config = tls::config_file(dir.path(), &tls::tls_block(&server_cert, ""));
    let server = TestServer::start(&["-c", &path(&config), "-m", &http_port.to_string()]);
    let client = async_nats::ConnectOptions::new()
        .add_root_certificates(authority.ca_file.clone())
        .require_tls(true)
        .connect(server.url())
        .await
        .expect("TLS client");
    client.flush().await.expect("flush");
    let body = tokio::task::spawn_blocking(move || {
        let mut socket = std::net::TcpStream::connect(("127.0.0.1", http_port)).expect("monitor");
        socket.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
        write!(socket, "GET /connz HTTP/1.1\r\nHost: localhost\r\n\r\n").expect("request");
        let mut response = String::new();
        let _ = socket.read_to_string(&mut response);
        response.split_once("\r\n\r\n").map(|(_, body)| body.to_string()).unwrap_or_default()
    })
    .await
    .expect("request");
    let connz: serde_json::Value = serde_json::from_str(&body).expect("connz JSON");
    let connection = &connz["connections"][0];
    assert_eq!(connection["tls_version"], "1.3", "{connection}");
    let suite = connection["tls_cipher_suite"].as_str().expect("suite");
    assert!(suite.starts_with("TLS_AES_") || suite.starts_with("TLS_CHACHA20_"), "{suite}");
    assert!(connection.get("tls_first").is_none(), "INFO came first: {connection}");
}
