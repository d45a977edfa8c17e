//! A stream's `subject_transform` (messages stored under the mapped subject, before and
//! after a restart) and `first_seq`; bad transforms get nats-server's errors (recorded
//! from nats-server 2.15.1).

mod common;

use common::jetstream::{api, assert_error, connect};
use common::TestServer;
use serde_json::Value;

async fn stored_subject(client: &async_nats::Client, stream: &str, seq: u64) -> Value {
    let reply = api(client, &format!("STREAM.MSG.GET.{stream}"), &format!(r#"{{"seq":{seq}}}"#)).await;
    reply["message"]["subject"].clone()
}

#[tokio::test]
async fn captured_subjects_are_stored_transformed_across_a_restart() {
    let mut server = TestServer::start(&["--shards", "2"]);
    let (client, _js) = connect(&server).await;
    let config = r#"{"name":"T","subjects":["in.>"],
        "subject_transform":{"src":"in.*.*","dest":"out.$2.{{wildcard(1)}}.{{partition(4,1)}}"}}"#;
    let reply = api(&client, "STREAM.CREATE.T", config).await;
    assert!(reply.get("error").is_none(), "{reply}");
    client.request("in.a.b", "x".into()).await.unwrap();
    client.request("in.a", "x".into()).await.unwrap(); // not matched: stored as it came
    assert_eq!(stored_subject(&client, "T", 1).await, "out.b.a.0");
    assert_eq!(stored_subject(&client, "T", 2).await, "in.a");
    // A consumer filters on the stored subject.
    let reply =
        api(&client, "CONSUMER.CREATE.T.C", r#"{"stream_name":"T","config":{"name":"C","filter_subject":"out.>"}}"#)
            .await;
    assert_eq!(reply["num_pending"], 1, "{reply}");

    drop(client);
    server.restart();
    let (client, _js) = connect(&server).await;
    client.request("in.c.d", "x".into()).await.unwrap();
    assert_eq!(stored_subject(&client, "T", 3).await, "out.d.c.2");
}

#[tokio::test]
async fn bad_transforms_get_nats_server_errors() {
    let server = TestServer::start(&[]);
    let (client, _js) = connect(&server).await;
    let invalid_destination = "stream transform: invalid mapping destination";
    let cases = [
        (r#"{"src":"c..*","dest":"x"}"#, 10155, "stream transform source: invalid subject c..*".to_string()),
        (
            r#"{"src":"c.*","dest":"o.$3"}"#,
            10156,
            format!("{invalid_destination}: wildcard index out of range in $3: [3]"),
        ),
        (
            r#"{"src":"c.*","dest":"o.{{nope(1)}}"}"#,
            10156,
            format!("{invalid_destination}: unknown function in {{{{nope(1)}}}}"),
        ),
        (r#"{"src":"c.*","dest":"o..x"}"#, 10156, format!("{invalid_destination}: invalid transform")),
        (r#"{"src":"c.*","dest":"o.*"}"#, 10156, "stream transform: invalid subject".to_string()),
    ];
    for (transform, err_code, description) in cases {
        let config = format!(r#"{{"name":"C","subjects":["c.*"],"subject_transform":{transform}}}"#);
        assert_error(&api(&client, "STREAM.CREATE.C", &config).await, 400, err_code, &description);
    }
}

#[tokio::test]
async fn first_seq_numbers_the_first_message_and_survives_a_restart() {
    let mut server = TestServer::start(&[]);
    let (client, _js) = connect(&server).await;
    let reply = api(&client, "STREAM.CREATE.F", r#"{"name":"F","subjects":["f.*"],"first_seq":100}"#).await;
    assert_eq!(
        (reply["state"]["first_seq"].as_u64(), reply["state"]["last_seq"].as_u64()),
        (Some(100), Some(99)),
        "{reply}"
    );
    let ack = client.request("f.a", "x".into()).await.unwrap();
    assert_eq!(serde_json::from_slice::<Value>(&ack.payload).unwrap()["seq"], 100);
    // Changing it later is echoed and changes nothing, as in nats-server.
    let reply = api(&client, "STREAM.UPDATE.F", r#"{"name":"F","subjects":["f.*"],"first_seq":500}"#).await;
    assert_eq!(
        (reply["config"]["first_seq"].as_u64(), reply["state"]["last_seq"].as_u64()),
        (Some(500), Some(100)),
        "{reply}"
    );
    drop(client);
    server.restart();
    let (client, _js) = connect(&server).await;
    let ack = client.request("f.b", "x".into()).await.unwrap();
    assert_eq!(serde_json::from_slice::<Value>(&ack.payload).unwrap()["seq"], 101);
    let reply = api(&client, "STREAM.CREATE.G", r#"{"name":"G","subjects":["g.*"],"first_seq":1}"#).await;
    assert_eq!(reply["state"]["first_seq"], 1, "{reply}");
}
