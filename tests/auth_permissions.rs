//! Per-user permissions over real sockets. The expected bytes were taken from nats-server
//! 2.15 given the same configuration and the same input (see `perf/limits.md` for how):
//! a violation is `-ERR 'Permissions Violation for …'`, the message or subscription is
//! dropped, and the connection stays open.

mod common;

use common::{RawClient, TestServer};

const CONFIG: &str = r#"
authorization {
  default_permissions = { publish = "pub.>" }
  users = [
    {user: alice, password: a, permissions: {
      publish: {allow: ["foo.*", "_INBOX.>"], deny: ["foo.secret"]},
      subscribe: {allow: ["foo.>", "_INBOX.>", "q.* grp"], deny: ["foo.secret"]} }}
    {user: bob, password: b, permissions: { publish: "bar", subscribe: ["bar", "baz.*"] }}
    {user: carol, password: c}
    {user: fred, password: f, permissions: { publish: "req", subscribe: "svc", allow_responses: {max: 2, expires: "1m"} }}
    {user: gina, password: g, permissions: { subscribe: {allow: ">", deny: "secret.>"} }}
    {user: admin, password: x, permissions: { publish: ">" }}
    {user: viewer, password: v, permissions: { publish: ["$JS.API.INFO", "$JS.API.STREAM.INFO.>"], subscribe: "_INBOX.>" }}
  ]
}
"#;

fn server_with(config: &str, extra: &[&str]) -> (TestServer, tempfile::NamedTempFile) {
    let file = tempfile::Builder::new().suffix(".conf").tempfile().unwrap();
    std::fs::write(file.path(), config).unwrap();
    let path = file.path().display().to_string();
    let mut args = vec!["-c", path.as_str()];
    args.extend_from_slice(extra);
    (TestServer::start(&args), file)
}

fn log_in(server: &TestServer, user: &str, pass: &str) -> RawClient {
    let (mut client, _info) = RawClient::connect(&server.address());
    let connect = format!("CONNECT {{\"verbose\":false,\"user\":\"{user}\",\"pass\":\"{pass}\",\"headers\":true,\"protocol\":1}}\r\nPING\r\n");
    client.send(connect.as_bytes());
    assert_eq!(client.line(), "PONG\r\n", "{user} logs in");
    client
}

/// Sends `input` then PING, and returns everything up to and including the PONG.
fn exchange(client: &mut RawClient, input: &str) -> String {
    client.send(input.as_bytes());
    client.send(b"PING\r\n");
    let mut output = String::new();
    loop {
        let line = client.line();
        assert!(!line.is_empty(), "connection closed; got so far: {output:?}");
        let done = line == "PONG\r\n";
        output.push_str(&line);
        if done {
            return output;
        }
    }
}

/// The next `count` lines. Deliveries from a connection on another shard are not ordered
/// with this connection's PONG, so tests wait for what they expect (bounded by the read
/// timeout), then check nothing else came.
fn lines(client: &mut RawClient, count: usize) -> String {
    (0..count).map(|_| client.line()).collect()
}

#[test]
fn violations_get_nats_server_errors_and_the_connection_stays_open() {
    let (server, _config) = server_with(CONFIG, &["--shards", "2"]);
    let mut alice = log_in(&server, "alice", "a");
    let input = "PUB foo.x 1\r\nx\r\nPUB foo.secret 1\r\nx\r\nPUB bar 1\r\nx\r\nSUB foo.secret 2\r\nSUB bar 3\r\n\
                 SUB q.x grp 4\r\nSUB q.x other 5\r\nSUB > 6\r\nSUB foo.> 7\r\nSUB bar qq 8\r\nPUB foo.y r.1 1\r\nx\r\n";
    let expected = "-ERR 'Permissions Violation for Publish to \"foo.secret\"'\r\n\
                    -ERR 'Permissions Violation for Publish to \"bar\"'\r\n\
                    -ERR 'Permissions Violation for Subscription to \"foo.secret\"'\r\n\
                    -ERR 'Permissions Violation for Subscription to \"bar\"'\r\n\
                    -ERR 'Permissions Violation for Subscription to \"q.x\" using queue \"other\"'\r\n\
                    -ERR 'Permissions Violation for Subscription to \">\"'\r\n\
                    -ERR 'Permissions Violation for Subscription to \"bar\" using queue \"qq\"'\r\n\
                    MSG foo.y 7 r.1 1\r\nx\r\nPONG\r\n";
    assert_eq!(exchange(&mut alice, input), expected);

    let mut bob = log_in(&server, "bob", "b");
    let input = "PUB bar 1\r\nx\r\nPUB pub.x 1\r\nx\r\nSUB baz.* 1\r\nSUB baz.> 2\r\nSUB * 3\r\n";
    let expected = "-ERR 'Permissions Violation for Publish to \"pub.x\"'\r\n\
                    -ERR 'Permissions Violation for Subscription to \"*\"'\r\nPONG\r\n";
    assert_eq!(exchange(&mut bob, input), expected, "baz.> passes under baz.*, as in nats-server");

    let mut carol = log_in(&server, "carol", "c");
    let expected = "-ERR 'Permissions Violation for Publish to \"other\"'\r\nPONG\r\n";
    assert_eq!(
        exchange(&mut carol, "PUB pub.x 1\r\nx\r\nPUB other 1\r\nx\r\nSUB x 1\r\n"),
        expected,
        "default_permissions"
    );
}

#[test]
fn a_refused_publish_reaches_no_subscriber() {
    let (server, _config) = server_with(CONFIG, &["--shards", "2"]);
    let mut admin = log_in(&server, "admin", "x");
    assert_eq!(exchange(&mut admin, "SUB > 1\r\n"), "PONG\r\n");
    let mut alice = log_in(&server, "alice", "a");
    for _ in 0..3 {
        exchange(&mut alice, "PUB foo.secret 6\r\nsecret\r\nPUB foo.ok 2\r\nok\r\n");
    }
    // Each refused message was published before an allowed one: had it been delivered,
    // it would come first.
    let seen = lines(&mut admin, 6);
    assert_eq!(seen, "MSG foo.ok 1 2\r\nok\r\n".repeat(3));
    assert_eq!(exchange(&mut admin, ""), "PONG\r\n");
}

#[test]
fn wildcard_subscriptions_do_not_receive_denied_subjects() {
    let (server, _config) = server_with(CONFIG, &[]);
    let mut gina = log_in(&server, "gina", "g");
    let expected = "-ERR 'Permissions Violation for Subscription to \"secret.*\"'\r\nPONG\r\n";
    assert_eq!(exchange(&mut gina, "SUB > 1\r\nSUB *.x 2\r\nSUB secret.* 3\r\n"), expected);
    let mut admin = log_in(&server, "admin", "x");
    exchange(&mut admin, "PUB secret.x 1\r\nz\r\nPUB ok.x 1\r\nz\r\n");
    let seen = lines(&mut gina, 4);
    assert!(seen.contains("MSG ok.x 1 1\r\nz\r\n") && seen.contains("MSG ok.x 2 1\r\nz\r\n"), "{seen}");
    assert_eq!(exchange(&mut gina, ""), "PONG\r\n");
}

#[test]
fn allow_responses_lets_a_service_answer_each_request_max_times() {
    let (server, _config) = server_with(CONFIG, &[]);
    let mut service = log_in(&server, "fred", "f");
    exchange(&mut service, "SUB svc 1\r\n");
    let mut requester = log_in(&server, "admin", "x");
    exchange(&mut requester, "SUB inbox.1 1\r\nPUB svc inbox.1 2\r\nhi\r\n");
    let replies = "PUB inbox.1 1\r\na\r\nPUB inbox.1 1\r\nb\r\nPUB inbox.1 1\r\nc\r\nPUB inbox.2 1\r\nd\r\n";
    assert_eq!(lines(&mut service, 2), "MSG svc 1 inbox.1 2\r\nhi\r\n");
    let expected = "-ERR 'Permissions Violation for Publish to \"inbox.1\"'\r\n\
                    -ERR 'Permissions Violation for Publish to \"inbox.2\"'\r\nPONG\r\n";
    assert_eq!(exchange(&mut service, replies), expected);
    assert_eq!(lines(&mut requester, 4), "MSG inbox.1 1 1\r\na\r\nMSG inbox.1 1 1\r\nb\r\n");
    assert_eq!(exchange(&mut requester, ""), "PONG\r\n");
}

#[test]
fn sighup_applies_new_permissions_to_open_connections() {
    let before =
        "authorization { users = [ {user: u, password: p, permissions: {publish: \"a.>\", subscribe: \"a.>\"}} ] }\n";
    let after =
        "authorization { users = [ {user: u, password: p, permissions: {publish: \"b.>\", subscribe: \"b.>\"}} ] }\n";
    let (server, config) = server_with(before, &[]);
    let mut client = log_in(&server, "u", "p");
    assert_eq!(exchange(&mut client, "SUB a.x 1\r\nPUB a.x 1\r\n1\r\n"), "MSG a.x 1 1\r\n1\r\nPONG\r\n");
    std::fs::write(config.path(), after).unwrap();
    server.signal(libc::SIGHUP);
    // The reload is asynchronous: its error line arrives on this connection first.
    assert_eq!(client.line(), "-ERR 'Permissions Violation for Subscription to \"a.x\"'\r\n");
    let expected = "-ERR 'Permissions Violation for Publish to \"a.x\"'\r\nMSG b.x 2 1\r\n2\r\nPONG\r\n";
    assert_eq!(exchange(&mut client, "PUB a.x 1\r\n1\r\nSUB b.x 2\r\nPUB b.x 1\r\n2\r\n"), expected);
}

/// JetStream API requests are publishes: without publish permission on
/// `$JS.API.STREAM.CREATE.X` a user cannot create stream X, and gets the violation.
#[tokio::test]
async fn jetstream_api_requests_are_checked_as_publishes() {
    let (server, _config) = server_with(CONFIG, &["--shards", "2"]);
    let admin = async_nats::ConnectOptions::with_user_and_password("admin".into(), "x".into())
        .connect(server.url())
        .await
        .unwrap();
    let admin_js = async_nats::jetstream::new(admin);
    admin_js.create_stream(common::jetstream::stream_config("ORDERS", &["orders.>"])).await.unwrap();

    let (errors_tx, mut errors) = tokio::sync::mpsc::unbounded_channel();
    let viewer = async_nats::ConnectOptions::with_user_and_password("viewer".into(), "v".into())
        .event_callback(move |event| {
            let errors_tx = errors_tx.clone();
            async move {
                if let async_nats::Event::ServerError(error) = event {
                    let _ = errors_tx.send(error.to_string());
                }
            }
        })
        .connect(server.url())
        .await
        .unwrap();
    let mut viewer_js = async_nats::jetstream::new(viewer.clone());
    viewer_js.set_timeout(std::time::Duration::from_millis(500));
    let info = viewer_js.get_stream("ORDERS").await.expect("STREAM.INFO is allowed");
    assert_eq!(info.cached_info().config.name, "ORDERS");
    let refused = viewer_js.create_stream(common::jetstream::stream_config("X", &["x.>"])).await;
    assert!(refused.is_err(), "the create request was dropped, so it got no reply");
    let error = errors.recv().await.unwrap();
    assert!(error.contains("Permissions Violation for Publish to \"$JS.API.STREAM.CREATE.X\""), "{error}");
    assert!(admin_js.get_stream("X").await.is_err(), "stream X was not created");
    viewer.flush().await.expect("the viewer's connection is still open");
    assert!(viewer_js.get_stream("ORDERS").await.is_ok());
}

/// Verbose mode: a refused PUB or SUB gets its -ERR and no +OK (nats-server's bytes).
#[test]
fn verbose_violations_get_no_ok() {
    let (server, _config) = server_with(CONFIG, &[]);
    let (mut client, _info) = RawClient::connect(&server.address());
    client.send(b"CONNECT {\"verbose\":true,\"user\":\"alice\",\"pass\":\"a\",\"protocol\":1}\r\n");
    let input = "PUB foo.secret 1\r\nx\r\nSUB bar 1\r\nPUB foo.ok 1\r\nx\r\n";
    let expected = "+OK\r\n-ERR 'Permissions Violation for Publish to \"foo.secret\"'\r\n\
                    -ERR 'Permissions Violation for Subscription to \"bar\"'\r\n+OK\r\nPONG\r\n";
    assert_eq!(exchange(&mut client, input), expected);
}
