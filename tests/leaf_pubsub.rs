//! jetcore as a leaf node of a real nats-server hub: messages, requests and queue groups
//! both ways, JetStream reached through its domain with exactly one answer.

mod common;

use std::time::Duration;

use common::hub::{spoke_config, HubNode, SpokePair};
use common::TestServer;
use futures::StreamExt;

const RECEIVE_TIMEOUT: Duration = Duration::from_secs(5);

async fn next(subscriber: &mut async_nats::Subscriber) -> async_nats::Message {
    tokio::time::timeout(RECEIVE_TIMEOUT, subscriber.next()).await.expect("message within timeout").expect("open")
}

/// Waits (up to 30 s) until a publish from `publisher` reaches a new subscription of
/// `subscriber`: the leaf link is up and carries that interest.
pub async fn await_link(subscriber: &async_nats::Client, publisher: &async_nats::Client) {
    let probe = subscriber.new_inbox();
    let mut subscription = subscriber.subscribe(probe.clone()).await.unwrap();
    subscriber.flush().await.unwrap();
    for _ in 0..300 {
        publisher.publish(probe.clone(), "probe".into()).await.unwrap();
        publisher.flush().await.unwrap();
        if let Ok(Some(_)) = tokio::time::timeout(Duration::from_millis(100), subscription.next()).await {
            return;
        }
    }
    panic!("the leaf link did not carry interest within 30 s");
}

#[tokio::test]
async fn messages_and_requests_cross_both_ways() {
    let pair = SpokePair::start();
    let hub = async_nats::connect(pair.hub.url()).await.unwrap();
    let spoke = async_nats::connect(pair.spoke.url()).await.unwrap();
    await_link(&spoke, &hub).await;
    await_link(&hub, &spoke).await;

    let mut at_spoke = spoke.subscribe("to.spoke.>").await.unwrap();
    let mut at_hub = hub.subscribe("to.hub.*").await.unwrap();
    common::await_interest(&spoke, &hub).await;
    common::await_interest(&hub, &spoke).await;
    let headers = async_nats::HeaderMap::from_iter([("Origin".parse().unwrap(), "hub".parse().unwrap())]);
    hub.publish_with_headers("to.spoke.a.b", headers, "from hub".into()).await.unwrap();
    spoke.publish("to.hub.x", "from spoke".into()).await.unwrap();
    let message = next(&mut at_spoke).await;
    assert_eq!((message.subject.as_str(), &message.payload[..]), ("to.spoke.a.b", &b"from hub"[..]));
    assert_eq!(message.headers.unwrap().get("Origin").unwrap().as_str(), "hub");
    let message = next(&mut at_hub).await;
    assert_eq!((message.subject.as_str(), &message.payload[..]), ("to.hub.x", &b"from spoke"[..]));

    let mut service = spoke.subscribe("svc.spoke").await.unwrap();
    let responder = spoke.clone();
    tokio::spawn(async move {
        while let Some(request) = service.next().await {
            responder.publish(request.reply.unwrap(), "spoke answers".into()).await.unwrap();
        }
    });
    let mut hub_service = hub.subscribe("svc.hub").await.unwrap();
    let hub_responder = hub.clone();
    tokio::spawn(async move {
        while let Some(request) = hub_service.next().await {
            hub_responder.publish(request.reply.unwrap(), "hub answers".into()).await.unwrap();
        }
    });
    common::await_interest(&spoke, &hub).await;
    common::await_interest(&hub, &spoke).await;
    let answer = hub.request("svc.spoke", "q".into()).await.unwrap();
    assert_eq!(&answer.payload[..], b"spoke answers");
    let answer = spoke.request("svc.hub", "q".into()).await.unwrap();
    assert_eq!(&answer.payload[..], b"hub answers");
}

#[tokio::test]
async fn a_queue_group_on_both_sides_gets_each_message_once() {
    let pair = SpokePair::start();
    let hub = async_nats::connect(pair.hub.url()).await.unwrap();
    let spokes =
        [async_nats::connect(pair.spoke.url()).await.unwrap(), async_nats::connect(pair.spoke.url()).await.unwrap()];
    await_link(&spokes[0], &hub).await;
    let mut members = Vec::new();
    for client in [&hub, &spokes[0], &spokes[1]] {
        members.push(client.queue_subscribe("jobs", "workers".into()).await.unwrap());
    }
    for client in [&hub, &spokes[0], &spokes[1]] {
        common::await_interest(client, &hub).await;
        common::await_interest(client, &spokes[0]).await;
    }
    const COUNT: usize = 200;
    for index in 0..COUNT {
        hub.publish("jobs", index.to_string().into()).await.unwrap();
        spokes[1].publish("jobs", index.to_string().into()).await.unwrap();
    }
    hub.flush().await.unwrap();
    spokes[1].flush().await.unwrap();
    let mut received = Vec::new();
    for member in &mut members {
        while let Ok(Some(message)) = tokio::time::timeout(Duration::from_millis(1500), member.next()).await {
            received.push(String::from_utf8(message.payload.to_vec()).unwrap());
        }
    }
    received.sort();
    let mut expected: Vec<String> = (0..COUNT).flat_map(|i| [i.to_string(), i.to_string()]).collect();
    expected.sort();
    assert_eq!(received, expected, "each message once per publish, across hub and spoke members");
}

#[tokio::test]
async fn jetstream_through_the_domain_answers_once() {
    let pair = SpokePair::start();
    let hub = async_nats::connect(pair.hub.url()).await.unwrap();
    let spoke = async_nats::connect(pair.spoke.url()).await.unwrap();
    await_link(&spoke, &hub).await;
    await_link(&hub, &spoke).await;

    let edge = async_nats::jetstream::with_domain(hub.clone(), "edge");
    let stream = edge
        .create_stream(async_nats::jetstream::stream::Config {
            name: "ORDERS".into(),
            subjects: vec!["orders.>".into()],
            ..Default::default()
        })
        .await
        .expect("the hub's client creates a stream in jetcore's domain");
    assert_eq!(stream.cached_info().config.name, "ORDERS");
    let local = async_nats::jetstream::new(spoke.clone());
    let ack = local.publish("orders.1", "one".into()).await.unwrap().await.unwrap();
    assert_eq!((ack.stream.as_str(), ack.sequence, ack.domain.as_str()), ("ORDERS", 1, "edge"));
    let account = edge.query_account().await.unwrap();
    assert_eq!(account.streams, 1);

    // Exactly one answer: count replies to one raw request from the hub side, and from a
    // spoke client to its own `$JS.API` (the hub's JetStream must not answer it too).
    for (client, subject) in [(&hub, "$JS.edge.API.INFO"), (&spoke, "$JS.API.INFO")] {
        let inbox = client.new_inbox();
        let mut replies = client.subscribe(inbox.clone()).await.unwrap();
        common::await_interest(client, client).await;
        client.publish_with_reply(subject, inbox, "".into()).await.unwrap();
        let first = next(&mut replies).await;
        let info: serde_json::Value = serde_json::from_slice(&first.payload).unwrap();
        assert_eq!(info["domain"], "edge", "{subject}: {info}");
        let second = tokio::time::timeout(Duration::from_millis(1000), replies.next()).await;
        assert!(second.is_err(), "{subject}: a second answer came: {:?}", second.unwrap().unwrap().payload);
    }
}

#[tokio::test]
async fn leafz_lists_the_link_as_nats_server_does() {
    let hub_node = HubNode::start("hub", None, "");
    let dir = tempfile::tempdir().unwrap();
    let config = spoke_config(dir.path(), "edge-1", &[hub_node.leaf_url()], "");
    let http_port = common::hub::free_port();
    let spoke_server = TestServer::start(&["-c", config.to_str().unwrap(), "-m", &http_port.to_string()]);
    let hub = async_nats::connect(hub_node.url()).await.unwrap();
    let spoke = async_nats::connect(spoke_server.url()).await.unwrap();
    let _watched = hub.subscribe("seen.by.leafz").await.unwrap();
    await_link(&spoke, &hub).await;
    await_link(&hub, &spoke).await;

    let leafz = common::hub::monitor_json(http_port, "/leafz?subs=1");
    assert_eq!(leafz["leafnodes"], 1, "{leafz}");
    let link = &leafz["leafs"][0];
    let mut keys: Vec<&str> = link.as_object().unwrap().keys().map(String::as_str).collect();
    keys.sort();
    // nats-server 2.15's fields for a spoke's link (checked against a nats-server spoke).
    let mut expected = vec![
        "id",
        "name",
        "is_spoke",
        "account",
        "ip",
        "port",
        "rtt",
        "in_msgs",
        "out_msgs",
        "in_bytes",
        "out_bytes",
        "subscriptions",
        "subscriptions_list",
        "compression",
    ];
    expected.sort();
    assert_eq!(keys, expected, "{link}");
    assert_eq!(
        (link["name"].as_str(), link["is_spoke"].as_bool(), link["account"].as_str()),
        (Some("hub"), Some(true), Some("$G"))
    );
    assert_eq!(link["port"], hub_node.leaf_port);
    assert!(link["in_msgs"].as_u64().unwrap() >= 1 && link["out_msgs"].as_u64().unwrap() >= 1, "{link}");
    let subjects: Vec<&str> =
        link["subscriptions_list"].as_array().unwrap().iter().filter_map(|s| s.as_str()).collect();
    assert!(subjects.contains(&"seen.by.leafz"), "{subjects:?}");
    assert!(
        !subjects.iter().any(|s| s.starts_with("$JS.API")),
        "the hub's $JS.API interest is not taken: {subjects:?}"
    );
    let without = common::hub::monitor_json(http_port, "/leafz");
    assert!(without["leafs"][0].get("subscriptions_list").is_none(), "{without}");
}
