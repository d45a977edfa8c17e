//! Consumer create and update checks that must answer as nats-server 2.15.1 does (each
//! code, text and echoed value recorded from it with the same request): overlapping or
//! invalid filters, replicas on a single server, negative limits, an update naming a
//! durable by `name` only, a start sequence past the stream's end, and a durable with a
//! tiny `inactive_threshold`.

mod common;

use common::jetstream::stream_with_messages;
use common::jetstream::{api, assert_error, connect};
use common::TestServer;
use serde_json::Value;

async fn create(client: &async_nats::Client, name: &str, config: &str) -> Value {
    let body = format!(r#"{{"stream_name":"S","config":{config}}}"#);
    api(client, &format!("CONSUMER.CREATE.S.{name}"), &body).await
}

#[tokio::test]
async fn overlapping_and_invalid_filter_subjects_are_refused() {
    let server = TestServer::start(&[]);
    let (client, _) = connect(&server).await;
    stream_with_messages(&client, 0).await;
    let overlap = create(&client, "O1", r#"{"name":"O1","filter_subjects":["FOO.*","FOO.B"]}"#).await;
    assert_error(&overlap, 400, 10138, "consumer subject filters cannot overlap");
    let repeated = create(&client, "O2", r#"{"name":"O2","filter_subjects":["FOO.A","FOO.A"]}"#).await;
    assert_error(&repeated, 400, 10138, "consumer subject filters cannot overlap");
    let invalid = create(&client, "O3", r#"{"name":"O3","filter_subjects":["FOO..A"]}"#).await;
    assert_error(&invalid, 500, 10052, "invalid subject");
    let invalid_single = create(&client, "O4", r#"{"name":"O4","filter_subject":"FOO..A"}"#).await;
    assert_error(&invalid_single, 500, 10052, "invalid subject");
    let disjoint = create(&client, "O5", r#"{"name":"O5","filter_subjects":["FOO.A","FOO.B"]}"#).await;
    assert!(disjoint.get("error").is_none(), "{disjoint}");
}

#[tokio::test]
async fn replicas_above_one_are_refused_on_a_single_server() {
    let server = TestServer::start(&[]);
    let (client, _) = connect(&server).await;
    stream_with_messages(&client, 0).await;
    for replicas in [5, 2] {
        let reply = create(&client, "R", &format!(r#"{{"durable_name":"R","num_replicas":{replicas}}}"#)).await;
        assert_error(&reply, 500, 10074, "replicas > 1 not supported in non-clustered mode");
    }
    let one = create(&client, "R", r#"{"durable_name":"R","num_replicas":1}"#).await;
    assert_eq!(one["config"]["num_replicas"], 1, "{one}");
}

#[tokio::test]
async fn negative_limits_mean_not_set() {
    let server = TestServer::start(&[]);
    let (client, _) = connect(&server).await;
    stream_with_messages(&client, 0).await;
    let fields = ["max_expires", "max_bytes", "max_batch", "inactive_threshold", "priority_timeout"];
    for field in fields {
        let name = format!("N{}", field.replace('_', ""));
        let reply = create(&client, &name, &format!(r#"{{"durable_name":"{name}","{field}":-5}}"#)).await;
        assert!(reply.get("error").is_none(), "{field}: {reply}");
        assert!(reply["config"].get(field).is_none(), "{field} is not echoed: {reply}");
    }
    let push = create(&client, "NP", r#"{"durable_name":"NP","deliver_subject":"x","idle_heartbeat":-5}"#).await;
    assert!(push.get("error").is_none(), "{push}");
    assert!(push["config"].get("idle_heartbeat").is_none(), "{push}");
}

#[tokio::test]
async fn an_update_naming_a_durable_by_name_only_updates_it() {
    let server = TestServer::start(&[]);
    let (client, _) = connect(&server).await;
    stream_with_messages(&client, 0).await;
    let config = r#"{"name":"test_consumer","durable_name":"test_consumer","ack_policy":"explicit"}"#;
    let created = create(&client, "test_consumer", config).await;
    assert!(created.get("error").is_none(), "{created}");
    let body = r#"{"stream_name":"S","action":"update","config":{"max_deliver":20,"name":"test_consumer","ack_policy":"explicit"}}"#;
    let updated = api(&client, "CONSUMER.CREATE.S.test_consumer", body).await;
    assert!(updated.get("error").is_none(), "{updated}");
    assert_eq!(updated["config"]["max_deliver"], 20, "{updated}");
    // nats-server drops `durable_name` here (and with it durability); jetcore keeps it.
    assert_eq!(updated["config"]["durable_name"], "test_consumer", "{updated}");
    assert!(updated["config"].get("inactive_threshold").is_none(), "still never reaped: {updated}");
    let info = api(&client, "CONSUMER.INFO.S.test_consumer", "").await;
    assert_eq!(info["config"]["max_deliver"], 20, "{info}");
}

#[tokio::test]
async fn a_start_sequence_past_the_end_is_reported_as_given() {
    let server = TestServer::start(&[]);
    let (client, _) = connect(&server).await;
    stream_with_messages(&client, 3).await;
    let config = r#"{"durable_name":"B","ack_policy":"explicit","deliver_policy":"by_start_sequence","opt_start_seq":1000000000000000000}"#;
    let created = create(&client, "B", config).await;
    let before_start: u64 = 999_999_999_999_999_999;
    for reply in [created, api(&client, "CONSUMER.INFO.S.B", "").await] {
        assert_eq!(reply["delivered"]["stream_seq"], before_start, "{reply}");
        assert_eq!(reply["ack_floor"]["stream_seq"], before_start, "{reply}");
        assert_eq!(reply["delivered"]["consumer_seq"], 0, "{reply}");
        assert_eq!(reply["num_pending"], 0, "{reply}");
    }
    common::jetstream::publish_raw(&client, "FOO.A", &[], "y").await;
    let info = api(&client, "CONSUMER.INFO.S.B", "").await;
    assert_eq!(info["delivered"]["stream_seq"], before_start, "{info}");
    assert_eq!(info["num_pending"], 0, "{info}");
}

#[tokio::test]
async fn a_durable_with_a_tiny_inactive_threshold_is_created() {
    let server = TestServer::start(&[]);
    let (client, _) = connect(&server).await;
    stream_with_messages(&client, 10).await;
    for (name, threshold) in [("D1", 1), ("D2", 1_000_000)] {
        let config = format!(r#"{{"durable_name":"{name}","ack_policy":"explicit","inactive_threshold":{threshold}}}"#);
        let created = create(&client, name, &config).await;
        assert!(created.get("error").is_none(), "{name}: {created}");
        assert_eq!(created["config"]["inactive_threshold"], threshold, "{created}");
        assert_eq!(created["num_pending"], 10, "{created}");
    }
}

#[tokio::test]
async fn an_array_where_an_object_belongs_is_invalid_json() {
    let server = TestServer::start(&[]);
    let (client, _) = connect(&server).await;
    stream_with_messages(&client, 0).await;
    let body_array = api(&client, "CONSUMER.CREATE.S.J", "[]").await;
    let text = "invalid JSON: json: cannot unmarshal array into Go value of type server.CreateConsumerRequest";
    assert_error(&body_array, 400, 10025, text);
    let config_array = api(&client, "CONSUMER.CREATE.S.J", r#"{"stream_name":"S","config":[]}"#).await;
    let text = "invalid JSON: json: cannot unmarshal array into Go struct field CreateConsumerRequest.config of type server.ConsumerConfig";
    assert_error(&config_array, 400, 10025, text);
}

/// The stream's `consumer_limits` make every push consumer here need acks (10082 for
/// ack none), so the other cases set an ack policy.
#[tokio::test]
async fn limits_cycles_direct_priority_groups_and_flow_control_acks_are_checked() {
    let server = TestServer::start(&[]);
    let (client, _) = connect(&server).await;
    let stream = r#"{"name":"S","subjects":["FOO.>"],"consumer_limits":{"max_ack_pending":100,"inactive_threshold":10000000000}}"#;
    let created = api(&client, "STREAM.CREATE.S", stream).await;
    assert!(created.get("error").is_none(), "{created}");
    let cases: [(&str, u64, u64, &str); 13] = [
        (
            r#"{"durable_name":"X","ack_policy":"explicit","max_ack_pending":500}"#,
            400,
            10121,
            "consumer max ack pending exceeds system limit of 100",
        ),
        (
            r#"{"durable_name":"X","ack_policy":"explicit","inactive_threshold":20000000000}"#,
            400,
            10153,
            "consumer inactive threshold exceeds system limit of 10s",
        ),
        (
            r#"{"durable_name":"X","ack_policy":"explicit","deliver_subject":"FOO.x"}"#,
            400,
            10081,
            "consumer deliver subject forms a cycle",
        ),
        (
            r#"{"durable_name":"X","deliver_subject":"d"}"#,
            400,
            10082,
            "consumer requires ack policy for max ack pending",
        ),
        (
            r#"{"durable_name":"X","ack_policy":"explicit","direct":true}"#,
            400,
            10090,
            "consumer direct requires a push based consumer",
        ),
        (
            r#"{"durable_name":"X","ack_policy":"explicit","direct":true,"deliver_subject":"d"}"#,
            400,
            10091,
            "consumer direct requires an ephemeral consumer",
        ),
        (
            r#"{"durable_name":"X","priority_policy":"overflow","priority_groups":[""]}"#,
            400,
            10161,
            "Group name cannot be an empty string",
        ),
        (
            r#"{"durable_name":"X","priority_policy":"overflow","priority_groups":["bad group!"]}"#,
            400,
            10162,
            "Valid priority group name must match A-Z, a-z, 0-9, -_/=)+ and may not exceed 16 characters",
        ),
        (
            r#"{"durable_name":"X","priority_policy":"overflow","priority_groups":["aaaaaaaaaaaaaaaaa"]}"#,
            400,
            10162,
            "Valid priority group name must match A-Z, a-z, 0-9, -_/=)+ and may not exceed 16 characters",
        ),
        (
            r#"{"durable_name":"X","priority_timeout":5000000000}"#,
            400,
            10197,
            "PinnedTTL cannot be set when PriorityPolicy is none",
        ),
        (
            r#"{"durable_name":"X","ack_policy":"flow_control"}"#,
            400,
            10218,
            "flow control ack policy requires a push based consumer",
        ),
        (
            r#"{"durable_name":"X","ack_policy":"flow_control","deliver_subject":"d","ack_wait":5000000000}"#,
            400,
            10221,
            "flow control ack policy requires unset ack wait",
        ),
        (
            r#"{"durable_name":"X","ack_policy":"flow_control","deliver_subject":"d","max_deliver":3}"#,
            400,
            10222,
            "flow control ack policy requires unset max deliver",
        ),
    ];
    for (config, code, err_code, description) in cases {
        assert_error(&create(&client, "X", config).await, code, err_code, description);
    }
    let group =
        create(&client, "G", r#"{"durable_name":"G","priority_policy":"overflow","priority_groups":["a-Z_0/="]}"#)
            .await;
    assert!(group.get("error").is_none(), "{group}");
    let flow = create(&client, "F", r#"{"durable_name":"F","ack_policy":"flow_control","deliver_subject":"f"}"#).await;
    assert!(flow.get("error").is_none(), "{flow}");
}

#[tokio::test]
async fn updates_may_not_change_storage_direct_or_sourcing() {
    let server = TestServer::start(&[]);
    let (client, _) = connect(&server).await;
    stream_with_messages(&client, 0).await;
    let base = r#""durable_name":"U","deliver_subject":"u","ack_policy":"explicit""#;
    let created = create(&client, "U", &format!("{{{base}}}")).await;
    assert!(created.get("error").is_none(), "{created}");
    let storage_first = create(&client, "U", &format!(r#"{{{base},"mem_storage":true,"deliver_policy":"new"}}"#)).await;
    assert_error(&storage_first, 500, 10012, "deliver policy can not be updated");
    let storage = create(&client, "U", &format!(r#"{{{base},"mem_storage":true,"replay_policy":"original"}}"#)).await;
    assert_error(&storage, 500, 10012, "storage type can not be updated");
    let sourcing = create(&client, "U", &format!(r#"{{{base},"sourcing":true}}"#)).await;
    assert_error(&sourcing, 500, 10012, "sourcing can not be updated");
    let allowed = create(&client, "U", &format!(r#"{{{base},"description":"changed"}}"#)).await;
    assert_eq!(allowed["config"]["description"], "changed", "{allowed}");
}

#[tokio::test]
async fn sampling_metadata_size_and_durable_name_length_are_checked() {
    let server = TestServer::start(&[]);
    let (client, _) = connect(&server).await;
    stream_with_messages(&client, 0).await;
    let sampling = create(&client, "SF", r#"{"durable_name":"SF","deliver_subject":"sf","sample_freq":"abc"}"#).await;
    let text = r#"failed to parse consumer sampling configuration: strconv.Atoi: parsing "abc": invalid syntax"#;
    assert_error(&sampling, 400, 10095, text);
    let percent = create(&client, "SF", r#"{"durable_name":"SF","deliver_subject":"sf","sample_freq":"50%"}"#).await;
    assert!(percent.get("error").is_none(), "{percent}");
    let metadata = format!(r#"{{"durable_name":"MD","metadata":{{"k":"{}"}}}}"#, "x".repeat(128 * 1024));
    let too_much = create(&client, "MD", &metadata).await;
    assert_error(&too_much, 400, 10135, "consumer metadata exceeds maximum size of 128KB");
    let name = "N".repeat(256);
    let body = format!(r#"{{"stream_name":"S","config":{{"durable_name":"{name}"}}}}"#);
    let long = api(&client, &format!("CONSUMER.DURABLE.CREATE.S.{name}"), &body).await;
    assert_error(&long, 400, 10102, "consumer name is too long, maximum allowed is 255");
}
