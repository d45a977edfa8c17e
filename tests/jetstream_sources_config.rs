//! Bad `mirror` and `sources` configs get nats-server 2.15's errors (codes and texts
//! recorded against nats-server 2.15.1), and a refused create or update changes nothing.

mod common;

use common::jetstream::{api, assert_error, connect};
use common::TestServer;

#[tokio::test]
async fn bad_mirror_and_source_configs_get_nats_server_errors() {
    let server = TestServer::start(&[]);
    let (client, _js) = connect(&server).await;
    let cases: [(&str, &str, u64, u64, &str); 12] = [
        (
            "M1",
            r#"{"name":"M1","mirror":{"name":"O"},"subjects":["x"]}"#,
            400,
            10034,
            "stream mirrors can not contain subjects",
        ),
        (
            "M2",
            r#"{"name":"M2","mirror":{"name":"O"},"sources":[{"name":"P"}]}"#,
            400,
            10031,
            "stream mirrors can not also contain other sources",
        ),
        ("M3", r#"{"name":"M3","mirror":{"name":"M3"}}"#, 500, 10052, "detected cycle"),
        ("M4", r#"{"name":"M4","mirror":{"name":""}}"#, 400, 10142, "mirrored stream name is invalid"),
        (
            "M5",
            r#"{"name":"M5","mirror":{"name":"O","filter_subject":"a","subject_transforms":[{"src":"a","dest":"b"}]}}"#,
            400,
            10150,
            "mirror with multiple subject transforms cannot also have a single subject filter",
        ),
        (
            "M6",
            r#"{"name":"M6","mirror":{"name":"O","filter_subject":"a..b"}}"#,
            500,
            10049,
            "subject filter 'a..b' for the mirror invalid subject",
        ),
        (
            "S1",
            r#"{"name":"S1","sources":[{"name":"O"},{"name":"O"}]}"#,
            400,
            10140,
            "duplicate source configuration detected",
        ),
        ("S2", r#"{"name":"S2","sources":[{"name":"S2"}]}"#, 500, 10052, "detected cycle"),
        ("S3", r#"{"name":"S3","sources":[{"name":"a.b"}]}"#, 400, 10141, "sourced stream name is invalid"),
        (
            "S4",
            r#"{"name":"S4","sources":[{"name":"O","consumer":{"name":"c"}}]}"#,
            400,
            10215,
            "stream source consumer config is invalid",
        ),
        (
            "S5",
            r#"{"name":"S5","sources":[{"name":"O","external":{"api":"$JS.API","deliver":""}}]}"#,
            400,
            10021,
            "stream external api prefix $JS.API must not overlap with $JS.API",
        ),
        (
            "S6",
            r#"{"name":"S6","sources":[{"name":"O","subject_transforms":[{"src":"a..b","dest":"b"}]}]}"#,
            400,
            10145,
            "source transform source: invalid subject a..b",
        ),
    ];
    for (name, body, code, err_code, description) in cases {
        let reply = api(&client, &format!("STREAM.CREATE.{name}"), body).await;
        assert_error(&reply, code, err_code, description);
    }
    let names = api(&client, "STREAM.NAMES", "").await;
    assert_eq!(names["total"], 0, "a refused create left a stream: {names}");

    // A source in another domain is accepted, as nats-server does, and followed through
    // that domain's API once reachable (tests/leaf_external_mirror.rs).
    let external = r#"{"name":"X","sources":[{"name":"O","external":{"api":"$JS.hub.API","deliver":""}}]}"#;
    let reply = api(&client, "STREAM.CREATE.X", external).await;
    assert!(reply["error"].is_null(), "{reply}");
    assert_eq!(reply["sources"][0]["external"]["api"], "$JS.hub.API", "{reply}");
}

#[tokio::test]
async fn a_mirror_cannot_be_changed_or_added_but_can_be_removed() {
    let server = TestServer::start(&[]);
    let (client, _js) = connect(&server).await;
    let plain = api(&client, "STREAM.CREATE.P", r#"{"name":"P","subjects":["p"]}"#).await;
    assert!(plain["error"].is_null(), "{plain}");
    let mirror = api(&client, "STREAM.CREATE.M", r#"{"name":"M","mirror":{"name":"P"}}"#).await;
    assert!(mirror["error"].is_null(), "{mirror}");
    assert_eq!(mirror["mirror"]["name"], "P", "{mirror}");
    assert_eq!(mirror["mirror"]["active"], -1, "{mirror}");
    assert!(mirror["config"]["subjects"].is_null(), "a mirror has no subjects: {mirror}");

    let changed = api(&client, "STREAM.UPDATE.M", r#"{"name":"M","mirror":{"name":"Q"}}"#).await;
    assert_error(&changed, 400, 10055, "stream mirror configuration can not be updated");
    let added = api(&client, "STREAM.UPDATE.P", r#"{"name":"P","mirror":{"name":"Q"}}"#).await;
    assert_error(&added, 400, 10055, "stream mirror configuration can not be updated");
    let with_subjects = api(&client, "STREAM.UPDATE.M", r#"{"name":"M","mirror":{"name":"P"},"subjects":["m"]}"#).await;
    assert_error(&with_subjects, 400, 10034, "stream mirrors can not contain subjects");

    // Removing the mirror promotes the stream (nats-server 2.12+): it takes publishes.
    let promoted = api(&client, "STREAM.UPDATE.M", r#"{"name":"M","subjects":["m"]}"#).await;
    assert!(promoted["error"].is_null(), "{promoted}");
    assert!(promoted["mirror"].is_null(), "{promoted}");
    let ack = common::jetstream::publish_raw(&client, "m", &[], "own").await;
    assert_eq!(ack["stream"], "M", "{ack}");
}

#[tokio::test]
async fn a_stream_cannot_copy_from_itself_through_others() {
    let server = TestServer::start(&["--shards", "2"]);
    let (client, _js) = connect(&server).await;
    let first = api(&client, "STREAM.CREATE.C1", r#"{"name":"C1","mirror":{"name":"C2"}}"#).await;
    assert!(first["error"].is_null(), "an origin that does not exist yet is fine: {first}");
    let back = api(&client, "STREAM.CREATE.C2", r#"{"name":"C2","mirror":{"name":"C1"}}"#).await;
    assert_error(&back, 500, 10052, "detected cycle");
    let chain = api(&client, "STREAM.CREATE.C3", r#"{"name":"C3","sources":[{"name":"C1"}]}"#).await;
    assert!(chain["error"].is_null(), "{chain}");
    let around = api(&client, "STREAM.CREATE.C2", r#"{"name":"C2","sources":[{"name":"C3"}]}"#).await;
    assert_error(&around, 500, 10052, "detected cycle");
    let plain = api(&client, "STREAM.CREATE.C2", r#"{"name":"C2","subjects":["c2"]}"#).await;
    assert!(plain["error"].is_null(), "{plain}");
}
