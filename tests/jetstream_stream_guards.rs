//! What a stream's config guards, answered by its owner as nats-server 2.15 answers (codes
//! and texts taken from it): `deny_purge`, `deny_delete`, and `sealed` set by an update
//! (publishes, purges and deletes refused after it). And a publish finds its stream's
//! owner from every shard, also after streams were deleted and created again under the
//! same name (the owner's key in the catalog never names a deleted stream's successor).

mod common;

use common::jetstream::{api, assert_error, connect, publish_raw};
use common::TestServer;

#[tokio::test]
async fn deny_flags_and_an_update_that_seals_refuse_as_nats_server() {
    let server = TestServer::start(&[]);
    let (client, _js) = connect(&server).await;
    let guarded = r#"{"name":"G","subjects":["g.>"],"deny_purge":true,"deny_delete":true}"#;
    let created = api(&client, "STREAM.CREATE.G", guarded).await;
    assert!(created["error"].is_null(), "{created}");
    let ack = publish_raw(&client, "g.a", &[], "x").await;
    assert_eq!((ack["stream"].as_str(), ack["seq"].as_u64()), (Some("G"), Some(1)), "{ack}");

    let purged = api(&client, "STREAM.PURGE.G", "").await;
    assert_error(&purged, 500, 10110, "stream purge not permitted");
    let deleted = api(&client, "STREAM.MSG.DELETE.G", r#"{"seq":1}"#).await;
    assert_error(&deleted, 500, 10057, "message delete not permitted");

    let sealed = r#"{"name":"G","subjects":["g.>"],"deny_purge":true,"deny_delete":true,"sealed":true}"#;
    let updated = api(&client, "STREAM.UPDATE.G", sealed).await;
    assert_eq!(updated["config"]["sealed"], true, "{updated}");
    let ack = publish_raw(&client, "g.b", &[], "x").await;
    assert_error(&ack, 400, 10109, "invalid operation on sealed stream");
    let purged = api(&client, "STREAM.PURGE.G", "").await;
    assert_error(&purged, 400, 10109, "invalid operation on sealed stream");
    let deleted = api(&client, "STREAM.MSG.DELETE.G", r#"{"seq":1}"#).await;
    assert_error(&deleted, 400, 10109, "invalid operation on sealed stream");
    let info = api(&client, "STREAM.INFO.G", "").await;
    assert_eq!((info["state"]["messages"].as_u64(), info["state"]["last_seq"].as_u64()), (Some(1), Some(1)));
}

/// Clients spread over both shards, so some publish on the stream's shard and some
/// through the mesh.
#[tokio::test]
async fn publishes_from_every_shard_reach_streams_created_again_under_their_names() {
    let server = TestServer::start(&["--shards", "2"]);
    let mut clients = Vec::new();
    for _ in 0..6 {
        clients.push(connect(&server).await.0);
    }
    let admin = &clients[0];
    for name in ["A", "B", "C"] {
        let config = format!(r#"{{"name":"{name}","subjects":["{name}.>"]}}"#);
        let created = api(admin, &format!("STREAM.CREATE.{name}"), &config).await;
        assert!(created["error"].is_null(), "{created}");
    }
    for client in &clients {
        let ack = publish_raw(client, "A.x", &[], "x").await;
        assert!(ack["error"].is_null(), "{ack}");
    }
    // A's and B's places are freed; D (created next) may take one of them; A and B come
    // back elsewhere, empty.
    for name in ["A", "B"] {
        let deleted = api(admin, &format!("STREAM.DELETE.{name}"), "").await;
        assert!(deleted["error"].is_null(), "{deleted}");
    }
    for name in ["D", "B", "A"] {
        let config = format!(r#"{{"name":"{name}","subjects":["{name}.>"]}}"#);
        let created = api(admin, &format!("STREAM.CREATE.{name}"), &config).await;
        assert!(created["error"].is_null(), "{created}");
    }
    for name in ["A", "B", "C", "D"] {
        for (index, client) in clients.iter().enumerate() {
            let ack = publish_raw(client, &format!("{name}.x"), &[], "x").await;
            let expected = (Some(name), Some(index as u64 + 1));
            assert_eq!((ack["stream"].as_str(), ack["seq"].as_u64()), expected, "{ack}");
        }
    }
}
