//! JetStream limits of an account and of the server, over real sockets: each refused with
//! nats-server 2.15's code and text (recorded side by side with
//! `tools/accounts/limits_diff.py`), what fits is created, and `$JS.API.INFO` counts the
//! reservations as nats-server does. A restart keeps the account's streams in it.

mod common;

use std::time::Duration;

use common::jetstream::{api, assert_error};
use common::TestServer;

fn server_with(config: &str) -> (TestServer, tempfile::NamedTempFile) {
    let file = tempfile::Builder::new().suffix(".conf").tempfile().unwrap();
    std::fs::write(file.path(), config).unwrap();
    let path = file.path().display().to_string();
    (TestServer::start(&["-c", path.as_str(), "--shards", "2"]), file)
}

async fn anonymous(server: &TestServer) -> async_nats::Client {
    async_nats::ConnectOptions::new()
        .request_timeout(Some(Duration::from_secs(5)))
        .connect(server.url())
        .await
        .expect("connects as no_auth_user")
}

fn assert_created(reply: &serde_json::Value) {
    assert!(reply.get("error").is_none(), "{reply}");
}

const ACCOUNT_LIMITS: &str = "no_auth_user: foo\naccounts: {\n  A {\n    users: [{ user: foo }]\n    \
    jetstream: { max_mem: 64MB, max_file: 32MB, max_streams: 3, max_consumers: 2, max_ack_pending: 100,\n      \
    memory_max_stream_bytes: 2048, store_max_stream_bytes: 4096, max_stream_bytes: true }\n  }\n  \
    B { users: [{ user: bar, password: bar }] }\n}\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_account_limit_is_refused_with_nats_server_code() {
    let (server, _config) = server_with(ACCOUNT_LIMITS);
    let client = anonymous(&server).await;
    let create = |name: &str, extra: &str| format!(r#"{{"name":"{name}","subjects":["{name}"]{extra}}}"#);
    let reply = api(&client, "STREAM.CREATE.S0", &create("S0", "")).await;
    assert_error(&reply, 400, 10113, "account requires a stream config to have max bytes set");
    let reply = api(&client, "STREAM.CREATE.M1", &create("M1", r#","storage":"memory","max_bytes":4096"#)).await;
    assert_error(&reply, 400, 10122, "stream max bytes exceeds account limit max stream bytes");
    let reply = api(&client, "STREAM.CREATE.F1", &create("F1", r#","max_bytes":8192"#)).await;
    assert_error(&reply, 400, 10122, "stream max bytes exceeds account limit max stream bytes");
    assert_created(&api(&client, "STREAM.CREATE.M2", &create("M2", r#","storage":"memory","max_bytes":2048"#)).await);
    assert_created(&api(&client, "STREAM.CREATE.F2", &create("F2", r#","max_bytes":4096"#)).await);
    assert_created(&api(&client, "STREAM.CREATE.F3", &create("F3", r#","max_bytes":1024"#)).await);
    let reply = api(&client, "STREAM.CREATE.F4", &create("F4", r#","max_bytes":1024"#)).await;
    assert_error(&reply, 400, 10027, "maximum number of streams reached");
    let reply = api(&client, "STREAM.UPDATE.F2", &create("F2", r#","max_bytes":8192"#)).await;
    assert_error(&reply, 400, 10122, "stream max bytes exceeds account limit max stream bytes");

    let consumer = |name: &str, extra: &str| {
        format!(r#"{{"stream_name":"F2","config":{{"durable_name":"{name}","ack_policy":"explicit"{extra}}}}}"#)
    };
    let reply = api(&client, "CONSUMER.CREATE.F2.C1", &consumer("C1", r#","max_ack_pending":200"#)).await;
    assert_error(&reply, 400, 10121, "consumer max ack pending exceeds system limit of 100");
    let reply = api(&client, "CONSUMER.CREATE.F2.C2", &consumer("C2", "")).await;
    assert_eq!(reply["config"]["max_ack_pending"], 100, "the account's limit is the default: {reply}");
    assert_created(&api(&client, "CONSUMER.CREATE.F2.C3", &consumer("C3", "")).await);
    let reply = api(&client, "CONSUMER.CREATE.F2.C4", &consumer("C4", "")).await;
    assert_error(&reply, 400, 10026, "maximum consumers limit reached");

    let info = api(&client, "INFO", "").await;
    assert_eq!((info["streams"].as_u64(), info["consumers"].as_u64()), (Some(3), Some(2)), "{info}");
    assert_eq!((info["reserved_memory"].as_u64(), info["reserved_storage"].as_u64()), (Some(2048), Some(5120)));
    // The full account leaves the other account's answer as it was.
    let other = async_nats::ConnectOptions::with_user_and_password("bar".into(), "bar".into())
        .connect(server.url())
        .await
        .unwrap();
    assert_error(&api(&other, "INFO", "").await, 503, 10039, "JetStream not enabled for account");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_store_limits_refuse_streams_that_would_not_fit() {
    let (server, _config) = server_with("jetstream { max_memory_store: 1MB, max_file_store: 2MB }\n");
    let client = anonymous(&server).await;
    let create = |name: &str, extra: &str| format!(r#"{{"name":"{name}","subjects":["{name}"]{extra}}}"#);
    let memory = r#","storage":"memory""#;
    let reply = api(&client, "STREAM.CREATE.M1", &create("M1", &format!(r#"{memory},"max_bytes":2000000"#))).await;
    assert_error(&reply, 500, 10028, "insufficient memory resources available");
    let reply = api(&client, "STREAM.CREATE.F1", &create("F1", r#","max_bytes":3000000"#)).await;
    assert_error(&reply, 500, 10047, "insufficient storage resources available");
    assert_created(&api(&client, "STREAM.CREATE.M2", &create("M2", &format!(r#"{memory},"max_bytes":600000"#))).await);
    let reply = api(&client, "STREAM.CREATE.M3", &create("M3", &format!(r#"{memory},"max_bytes":600000"#))).await;
    assert_error(&reply, 500, 10028, "insufficient memory resources available");
    assert_created(&api(&client, "STREAM.CREATE.M4", &create("M4", memory)).await);
    assert_created(&api(&client, "STREAM.CREATE.F2", &create("F2", r#","max_bytes":2097152"#)).await);
    let reply = api(&client, "STREAM.CREATE.F3", &create("F3", "")).await;
    assert_error(&reply, 500, 10047, "insufficient storage resources available");
    let update = create("M2", &format!(r#"{memory},"max_bytes":1048576"#));
    assert_created(&api(&client, "STREAM.UPDATE.M2", &update).await);
    let update = create("M2", &format!(r#"{memory},"max_bytes":2000000"#));
    assert_error(
        &api(&client, "STREAM.UPDATE.M2", &update).await,
        500,
        10028,
        "insufficient memory resources available",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_account_keeps_its_streams_across_a_restart() {
    let (mut server, _config) = server_with(ACCOUNT_LIMITS);
    let client = anonymous(&server).await;
    let body = r#"{"name":"KEPT","subjects":["kept"],"max_bytes":1024}"#;
    assert_created(&api(&client, "STREAM.CREATE.KEPT", body).await);
    let context = async_nats::jetstream::new(client.clone());
    context.publish("kept", "one".into()).await.unwrap().await.unwrap();
    drop(client);
    server.restart();
    let client = anonymous(&server).await;
    let info = api(&client, "STREAM.INFO.KEPT", "").await;
    assert_eq!(info["state"]["messages"], 1, "{info}");
    let other = async_nats::ConnectOptions::with_user_and_password("bar".into(), "bar".into())
        .connect(server.url())
        .await
        .unwrap();
    let reply = api(&other, "STREAM.INFO.KEPT", "").await;
    assert_error(&reply, 503, 10039, "JetStream not enabled for account");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_is_never_served_to_another_account() {
    let (mut server, config) = server_with(ACCOUNT_LIMITS);
    let client = anonymous(&server).await;
    let body = r#"{"name":"SECRET","subjects":["secret"],"max_bytes":1024}"#;
    assert_created(&api(&client, "STREAM.CREATE.SECRET", body).await);
    drop(client);
    let other = tempfile::Builder::new().suffix(".conf").tempfile().unwrap();
    std::fs::write(other.path(), "accounts { B { users: [{user: b, password: b}], jetstream: enabled } }\n").unwrap();
    let other_path = other.path().display().to_string();
    // B with JetStream on the same store, then `$G` without accounts: neither sees A's data.
    for (args, user) in [(vec!["-c", other_path.as_str()], Some("b")), (vec![], None)] {
        let mut args = args;
        args.extend(["--shards", "2"]);
        server.restart_with(&args);
        let mut options = async_nats::ConnectOptions::new();
        if let Some(user) = user {
            options = async_nats::ConnectOptions::with_user_and_password(user.into(), user.into());
        }
        let client = options.connect(server.url()).await.unwrap();
        assert_error(&api(&client, "STREAM.INFO.SECRET", "").await, 404, 10059, "stream not found");
        assert_eq!(api(&client, "INFO", "").await["streams"], 0);
    }
    let config_path = config.path().display().to_string();
    server.restart_with(&["-c", config_path.as_str(), "--shards", "2"]);
    let client = anonymous(&server).await;
    assert_created(&api(&client, "STREAM.INFO.SECRET", "").await);
}
