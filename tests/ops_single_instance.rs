//! One server per client port, per store directory and per monitoring port: a start that
//! would share one with a running process (another jetcore or any other program) is
//! refused at once, with nats-server's words for a port in use, before it listens.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use common::start_refusal::{reuseport_listener, start_expecting_refusal};
use common::{RawClient, TestServer};

/// An unprivileged user: as root, permissions do not stop writes, so the read-only and
/// foreign-owned cases run the server as `nobody`.
const NOBODY: u32 = 65534;

fn port_in_use_message(port: u16) -> String {
    format!("Error listening on port: 127.0.0.1:{port}, \"listen tcp 127.0.0.1:{port}: bind: address already in use\"")
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn still_serves(server: &TestServer) {
    let (_client, info) = RawClient::connect(&server.address());
    assert!(info.starts_with("INFO "), "{info}");
}

#[test]
fn a_second_jetcore_on_a_served_port_is_refused_with_nats_servers_message() {
    let first = TestServer::start(&[]);
    let other_store = tempfile::tempdir().unwrap();
    let port = first.port.to_string();
    let store = other_store.path().to_str().unwrap();
    let refusal = start_expecting_refusal(&["-p", &port, "-a", "127.0.0.1", "-sd", store], None);
    refusal.assert_no_partial_start();
    assert!(refusal.stderr.contains(&port_in_use_message(first.port)), "{}", refusal.stderr);
    still_serves(&first);
}

#[test]
fn a_port_a_foreign_listener_holds_is_refused() {
    let foreign = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    refused_on_the_port_of(&foreign);
}

#[test]
fn a_port_a_foreign_reuseport_listener_holds_is_refused() {
    let foreign = reuseport_listener(0).expect("bind a free port");
    refused_on_the_port_of(&foreign);
}

/// A jetcore started on the port `foreign` holds is refused with nats-server's message.
fn refused_on_the_port_of(foreign: &std::net::TcpListener) {
    let port = foreign.local_addr().unwrap().port();
    let store = tempfile::tempdir().unwrap();
    let args = ["-p", &port.to_string(), "-a", "127.0.0.1", "-sd", store.path().to_str().unwrap()];
    let refusal = start_expecting_refusal(&args, None);
    refusal.assert_no_partial_start();
    assert!(refusal.stderr.contains(&port_in_use_message(port)), "{}", refusal.stderr);
}

#[test]
fn no_other_program_can_join_the_port_jetcore_serves() {
    let server = TestServer::start(&[]);
    assert!(reuseport_listener(server.port).is_none(), "a SO_REUSEPORT socket joined jetcore's port");
    assert!(std::net::TcpListener::bind(server.address()).is_err());
    still_serves(&server);
}

#[test]
fn a_second_server_on_the_same_store_directory_is_refused_naming_it_and_its_holder() {
    let first = TestServer::start(&[]);
    let store = first.store_dir.to_str().unwrap().to_string();
    let refusal = start_expecting_refusal(&["-p", "-1", "-a", "127.0.0.1", "-sd", &store], None);
    refusal.assert_no_partial_start();
    let named = format!("store directory {store:?} is in use by another server (pid {})", first.pid());
    assert!(refusal.stderr.contains(&named), "{}", refusal.stderr);
    still_serves(&first);
}

#[test]
fn a_server_starts_on_a_store_whose_holder_was_killed() {
    let mut server = TestServer::start(&[]);
    server.restart(); // kill -9, then a new process on the same store
    let lock_file = server.store_dir.join("jetcore.lock");
    let holder = std::fs::read_to_string(&lock_file).expect("lock file");
    assert_eq!(holder.trim(), server.pid().to_string(), "the new server holds the lock");
    still_serves(&server);
}

/// A store directory `nobody` cannot write: refused naming it, before listening.
fn refused_as_nobody(store_dir: &Path) {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        // Only root can start the server as another user (and root ignores permissions).
        eprintln!("skipped: needs root to run the server as `nobody`");
        return;
    }
    let port = free_port();
    let args = ["-p", &port.to_string(), "-a", "127.0.0.1", "-sd", store_dir.to_str().unwrap()];
    let refusal = start_expecting_refusal(&args, Some(NOBODY));
    refusal.assert_no_partial_start();
    let named = format!("store directory {:?} cannot be used", store_dir.display().to_string());
    assert!(refusal.stderr.contains(&named), "{}", refusal.stderr);
    assert!(refusal.stderr.contains("Permission denied"), "{}", refusal.stderr);
    assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_err(), "no port left listening");
}

/// A temporary directory `nobody` may enter.
fn shared_temp_dir() -> tempfile::TempDir {
    let temp = tempfile::tempdir().unwrap();
    std::fs::set_permissions(temp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    temp
}

#[test]
fn a_read_only_store_directory_is_refused_before_listening() {
    let temp = shared_temp_dir();
    let store = temp.path().join("store");
    std::fs::create_dir(&store).unwrap();
    std::os::unix::fs::chown(&store, Some(NOBODY), Some(NOBODY)).unwrap();
    std::fs::set_permissions(&store, std::fs::Permissions::from_mode(0o555)).unwrap();
    refused_as_nobody(&store);
}

#[test]
fn a_store_directory_owned_by_another_user_is_refused_before_listening() {
    let temp = shared_temp_dir();
    let store = temp.path().join("store");
    std::fs::create_dir(&store).unwrap();
    std::fs::set_permissions(&store, std::fs::Permissions::from_mode(0o755)).unwrap();
    refused_as_nobody(&store); // owned by root, the test's user
}

#[test]
fn a_store_path_under_a_regular_file_is_refused_before_listening() {
    let temp = tempfile::tempdir().unwrap();
    let file = temp.path().join("a-file");
    std::fs::write(&file, b"not a directory").unwrap();
    let store = file.join("store");
    let port = free_port();
    let args = ["-p", &port.to_string(), "-a", "127.0.0.1", "-sd", store.to_str().unwrap()];
    let refusal = start_expecting_refusal(&args, None);
    refusal.assert_no_partial_start();
    assert!(refusal.stderr.contains(&format!("{:?}", store.display().to_string())), "{}", refusal.stderr);
    assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_err(), "no port left listening");
}

#[test]
fn a_monitoring_port_in_use_is_refused_with_nats_servers_message() {
    let foreign = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let monitor_port = foreign.local_addr().unwrap().port();
    let store = tempfile::tempdir().unwrap();
    let port = free_port();
    let args = [
        "-p",
        &port.to_string(),
        "-a",
        "127.0.0.1",
        "-m",
        &monitor_port.to_string(),
        "-sd",
        store.path().to_str().unwrap(),
    ];
    let refusal = start_expecting_refusal(&args, None);
    refusal.assert_no_partial_start();
    let message = format!(
        "Can't start monitoring: can't listen to the monitor port: listen tcp 127.0.0.1:{monitor_port}: bind: address already in use"
    );
    assert!(refusal.stderr.contains(&message), "{}", refusal.stderr);
    assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_err(), "no client port left listening");
}
