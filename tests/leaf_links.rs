//! The leaf link's life against real nats-server hubs: credentials, loops, and
//! reconnecting to another node of a 3-node hub cluster when its node dies.

mod common;

use std::time::Duration;

use common::hub::{cluster, spoke_config, HubNode};
use common::TestServer;
use futures::StreamExt;

async fn await_link(subscriber: &async_nats::Client, publisher: &async_nats::Client) -> bool {
    let probe = subscriber.new_inbox();
    let mut subscription = subscriber.subscribe(probe.clone()).await.unwrap();
    subscriber.flush().await.unwrap();
    for _ in 0..300 {
        let _ = publisher.publish(probe.clone(), "probe".into()).await;
        let _ = publisher.flush().await;
        if let Ok(Some(_)) = tokio::time::timeout(Duration::from_millis(100), subscription.next()).await {
            return true;
        }
    }
    false
}

fn spoke(urls: &[String], extra: &str) -> (TestServer, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let config = spoke_config(dir.path(), "edge-1", urls, extra);
    (TestServer::start(&["-c", config.to_str().unwrap()]), dir)
}

const LEAF_AUTH: &str = "leafnodes { port: -1, authorization { user: leaf, password: right } }";

#[tokio::test]
async fn wrong_credentials_are_refused_and_right_ones_accepted() {
    let hub = HubNode::start("hub", Some(LEAF_AUTH), "");
    let wrong = format!("nats-leaf://leaf:wrong@127.0.0.1:{}", hub.leaf_port);
    let (_refused, _dir) = spoke(&[wrong], "");
    // The hub logs every attempt as created, then closes it for its credentials.
    assert!(hub.await_log("Authentication Failure", Duration::from_secs(10)), "the hub refused the link");

    let right = format!("nats-leaf://leaf:right@127.0.0.1:{}", hub.leaf_port);
    let (accepted, _dir) = spoke(&[right], "");
    let hub_client = async_nats::connect(hub.url()).await.unwrap();
    let spoke_client = async_nats::connect(accepted.url()).await.unwrap();
    assert!(await_link(&spoke_client, &hub_client).await, "a link with the right password carries messages");
}

#[tokio::test]
async fn a_loop_through_the_hub_is_detected() {
    // jetcore joins two hubs, one of which is itself a leaf of the other: each link's
    // `$LDS.` subject comes back to jetcore over the other link.
    let top = HubNode::start("top", None, "");
    let middle_block = format!("leafnodes {{ port: -1, remotes: [ {{ url: {:?} }} ] }}", top.leaf_url());
    let middle = HubNode::start("middle", Some(&middle_block), "");
    assert!(top.await_log("Leafnode connection created", Duration::from_secs(10)));
    let block =
        format!("leafnodes {{ remotes: [ {{ url: {:?} }}, {{ url: {:?} }} ] }}", middle.leaf_url(), top.leaf_url());
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("loop.conf");
    std::fs::write(&config, format!("server_name: looping\n{block}\n")).unwrap();
    let _spoke = TestServer::start(&["-c", config.to_str().unwrap()]);
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    let detected = |hub: &HubNode| !hub.log_lines("Loop detected for leafnode account").is_empty();
    while std::time::Instant::now() < deadline && !detected(&top) && !detected(&middle) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        detected(&top) || detected(&middle),
        "the spoke told a hub about the loop: {:?}",
        top.log_lines("Leafnode")
    );
}

#[tokio::test]
async fn the_link_moves_to_another_hub_node_and_traffic_resumes() {
    let mut nodes = cluster(3);
    // Only the first node's URL is configured: the others come from its `leafnode_urls`.
    let (spoke_server, _dir) = spoke(&[nodes[0].leaf_url()], "");
    let spoke_client = async_nats::connect(spoke_server.url()).await.unwrap();
    let hub_client = async_nats::connect(nodes[2].url()).await.unwrap();
    assert!(await_link(&spoke_client, &hub_client).await, "link up through the cluster");
    assert!(nodes[0].await_log("Leafnode connection created", Duration::from_secs(5)));

    nodes[0].kill();
    assert!(await_link(&spoke_client, &hub_client).await, "the link came back on another node");
    let moved = nodes[1..].iter().any(|node| !node.log_lines("Leafnode connection created").is_empty());
    assert!(moved, "a surviving node accepted the link");
    let mut at_hub = hub_client.subscribe("after.kill").await.unwrap();
    assert!(await_link(&hub_client, &spoke_client).await);
    spoke_client.publish("after.kill", "resumed".into()).await.unwrap();
    let message = tokio::time::timeout(Duration::from_secs(5), at_hub.next()).await.unwrap().unwrap();
    assert_eq!(&message.payload[..], b"resumed");
}

#[tokio::test]
async fn the_hubs_permissions_for_the_leaf_user_are_enforced_by_the_spoke() {
    let users = "authorization { users = [\n\
        { user: leaf, password: pw, permissions: { publish: { deny: \"secret.>\" }, \
          subscribe: { allow: [\"in.>\", \"_INBOX.>\", \"probe.>\"] } } }\n\
        { user: app, password: pw }\n] }";
    let hub = HubNode::start("hub", None, users);
    let url = format!("nats-leaf://leaf:pw@127.0.0.1:{}", hub.leaf_port);
    let (spoke_server, _dir) = spoke(&[url], "");
    let hub_client = async_nats::ConnectOptions::with_user_and_password("app".into(), "pw".into())
        .connect(format!("127.0.0.1:{}", hub.port))
        .await
        .unwrap();
    let spoke_client = async_nats::connect(spoke_server.url()).await.unwrap();
    assert!(await_link(&hub_client, &spoke_client).await, "spoke to hub");

    // Export: what the leaf user may not publish stays on the spoke.
    let mut at_hub = hub_client.subscribe("*.x").await.unwrap();
    assert!(await_link(&hub_client, &spoke_client).await);
    spoke_client.publish("secret.x", "kept".into()).await.unwrap();
    spoke_client.publish("public.x", "sent".into()).await.unwrap();
    let first = tokio::time::timeout(Duration::from_secs(5), at_hub.next()).await.unwrap().unwrap();
    assert_eq!(first.subject.as_str(), "public.x");

    // Import: only what the leaf user may subscribe to is asked for and received.
    let mut not_imported = spoke_client.subscribe("out.y").await.unwrap();
    let mut imported = spoke_client.subscribe("in.y").await.unwrap();
    let mut probe = spoke_client.subscribe("in.probe").await.unwrap();
    for _ in 0..300 {
        hub_client.publish("in.probe", "p".into()).await.unwrap();
        if tokio::time::timeout(Duration::from_millis(100), probe.next()).await.is_ok() {
            break;
        }
    }
    hub_client.publish("out.y", "not imported".into()).await.unwrap();
    hub_client.publish("in.y", "imported".into()).await.unwrap();
    let first = tokio::time::timeout(Duration::from_secs(5), imported.next()).await.unwrap().unwrap();
    assert_eq!(first.subject.as_str(), "in.y");
    // Sent before `in.y` on the same link and connection: it would be here by now.
    use futures::FutureExt;
    assert!(not_imported.next().now_or_never().is_none(), "out.y crossed");
    assert!(hub.log_lines("Permissions Violation").is_empty(), "{:?}", hub.log_lines("Violation"));
}
