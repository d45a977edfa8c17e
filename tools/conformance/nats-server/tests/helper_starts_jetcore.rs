//! The helper against the real binary: the address comes from the log, a restart keeps the
//! port and the store, drop removes everything, and a refused config fails loudly.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;

fn info_line(url: &str) -> String {
    let address = url.strip_prefix("nats://").expect("a nats:// url");
    let stream = TcpStream::connect(address).expect("the server accepts connections");
    let mut line = String::new();
    BufReader::new(stream).read_line(&mut line).expect("INFO");
    line
}

#[test]
fn client_url_reaches_a_ready_server() {
    let server = nats_server::run_basic_server();
    let url = server.client_url();
    assert!(url.starts_with("nats://127.0.0.1:"), "{url}");
    let info = info_line(&url);
    assert!(info.starts_with("INFO {"), "{info}");
    assert!(info.contains(&format!("\"port\":{}", server.client_port())), "{info}");
}

#[test]
fn restart_keeps_the_port_and_the_store() {
    let mut server = nats_server::run_server("tests/configs/jetstream.conf");
    let port = server.client_port();
    let store = nats_server::store_dir(&server);
    let pid = server.client_pid();
    server.restart();
    assert_eq!(server.client_port(), port);
    assert_ne!(server.client_pid(), pid, "a new process");
    assert!(store.exists(), "the store directory survives a restart");
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect after restart");
    stream.write_all(b"CONNECT {}\r\nPING\r\n").unwrap();
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    assert!(line.starts_with("INFO"), "{line}");
}

#[test]
fn drop_kills_the_process_and_removes_its_files() {
    let server = nats_server::run_basic_server();
    let port = server.client_port();
    let store = nats_server::store_dir(&server);
    drop(server);
    assert!(!store.parent().unwrap().exists(), "directory removed");
    let connected = TcpStream::connect(("127.0.0.1", port));
    assert!(connected.is_err(), "nothing listens any more: {connected:?}");
}

#[test]
fn a_fixed_port_is_used() {
    let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = probe.local_addr().unwrap().port();
    drop(probe);
    let server = nats_server::run_server_with_port("", Some(&port.to_string()));
    assert_eq!(server.client_port(), port);
}

#[test]
#[should_panic(expected = "exited before it was ready")]
fn a_refused_config_fails_the_test_with_the_reason() {
    let _server = nats_server::run_server("tests/configs/refused.conf");
}

#[test]
#[should_panic(expected = "does not support clustering")]
fn clusters_are_refused() {
    let _cluster = nats_server::run_cluster("tests/configs/jetstream.conf");
}
