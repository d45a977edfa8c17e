//! Core NATS messaging through an unmodified client (async-nats) against a real jetcore
//! process on two shards, so that publisher and subscriber often sit on different shards.

mod common;

use std::time::Duration;

use common::TestServer;
use futures::StreamExt;

const RECEIVE_TIMEOUT: Duration = Duration::from_secs(5);

async fn next(subscriber: &mut async_nats::Subscriber) -> async_nats::Message {
    tokio::time::timeout(RECEIVE_TIMEOUT, subscriber.next())
        .await
        .expect("message within timeout")
        .expect("subscription open")
}

async fn connections(server: &TestServer, count: usize) -> Vec<async_nats::Client> {
    let mut clients = Vec::new();
    for _ in 0..count {
        clients.push(async_nats::connect(server.url()).await.expect("connect"));
    }
    clients
}

#[tokio::test]
async fn publish_reaches_subscribers_on_every_shard_in_order() {
    let server = TestServer::start(&["--shards", "2"]);
    let clients = connections(&server, 6).await;
    let mut subscribers = Vec::new();
    for client in &clients[1..] {
        subscribers.push(client.subscribe("orders.created").await.unwrap());
        common::await_interest(client, &clients[0]).await;
    }
    for index in 0..100u32 {
        clients[0].publish("orders.created", index.to_string().into()).await.unwrap();
    }
    clients[0].flush().await.unwrap();
    for subscriber in &mut subscribers {
        for index in 0..100u32 {
            let message = next(subscriber).await;
            assert_eq!(message.subject.as_str(), "orders.created");
            assert_eq!(message.payload, index.to_string().as_bytes(), "order preserved");
        }
    }
}

#[tokio::test]
async fn wildcards_match_tokens() {
    let server = TestServer::start(&["--shards", "2"]);
    let clients = connections(&server, 2).await;
    let mut star = clients[1].subscribe("telemetry.*.cpu").await.unwrap();
    let mut tail = clients[1].subscribe("telemetry.>").await.unwrap();
    common::await_interest(&clients[1], &clients[0]).await;
    for subject in ["telemetry.host1.cpu", "telemetry.host1.mem", "telemetry.host2.cpu.core0", "other"] {
        clients[0].publish(subject, "x".into()).await.unwrap();
    }
    clients[0].flush().await.unwrap();
    assert_eq!(next(&mut star).await.subject.as_str(), "telemetry.host1.cpu");
    for expected in ["telemetry.host1.cpu", "telemetry.host1.mem", "telemetry.host2.cpu.core0"] {
        assert_eq!(next(&mut tail).await.subject.as_str(), expected);
    }
    assert!(tokio::time::timeout(Duration::from_millis(200), star.next()).await.is_err());
}

#[tokio::test]
async fn queue_group_delivers_each_message_once_across_shards() {
    let server = TestServer::start(&["--shards", "2"]);
    let clients = connections(&server, 5).await;
    let mut members = Vec::new();
    for client in &clients[1..] {
        members.push(client.queue_subscribe("jobs", "workers".into()).await.unwrap());
        common::await_interest(client, &clients[0]).await;
    }
    const JOBS: usize = 400;
    for index in 0..JOBS {
        clients[0].publish("jobs", index.to_string().into()).await.unwrap();
    }
    clients[0].flush().await.unwrap();
    let mut seen = vec![0u32; JOBS];
    let mut per_member = Vec::new();
    for member in &mut members {
        let mut count = 0;
        while let Ok(Some(message)) = tokio::time::timeout(Duration::from_millis(500), member.next()).await {
            let index: usize = std::str::from_utf8(&message.payload).unwrap().parse().unwrap();
            seen[index] += 1;
            count += 1;
        }
        per_member.push(count);
    }
    assert!(seen.iter().all(|&count| count == 1), "every job exactly once: {per_member:?}");
    assert!(per_member.iter().filter(|&&count| count > 0).count() >= 2, "spread: {per_member:?}");
}

#[tokio::test]
async fn request_reply_across_connections() {
    let server = TestServer::start(&["--shards", "2"]);
    let clients = connections(&server, 2).await;
    let mut service = clients[1].subscribe("svc.echo").await.unwrap();
    common::await_interest(&clients[1], &clients[0]).await;
    let responder = clients[1].clone();
    tokio::spawn(async move {
        while let Some(request) = service.next().await {
            let reply = request.reply.expect("reply subject");
            let mut body = b"echo:".to_vec();
            body.extend_from_slice(&request.payload);
            responder.publish(reply, body.into()).await.unwrap();
        }
    });
    for index in 0..20 {
        let response = clients[0].request("svc.echo", format!("{index}").into()).await.unwrap();
        assert_eq!(response.payload, format!("echo:{index}").as_bytes());
    }
}

#[tokio::test]
async fn request_without_responders_fails_fast() {
    let server = TestServer::start(&["--shards", "2"]);
    let client = async_nats::connect(server.url()).await.unwrap();
    let started = std::time::Instant::now();
    let error = client.request("nobody.home", "?".into()).await.unwrap_err();
    assert_eq!(error.kind(), async_nats::RequestErrorKind::NoResponders, "{error:?}");
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[tokio::test]
async fn headers_arrive_intact() {
    let server = TestServer::start(&["--shards", "2"]);
    let clients = connections(&server, 2).await;
    let mut subscriber = clients[1].subscribe("with.headers").await.unwrap();
    common::await_interest(&clients[1], &clients[0]).await;
    let mut headers = async_nats::HeaderMap::new();
    headers.insert("Trace-Id", "abc-123");
    headers.append("Multi", "one");
    headers.append("Multi", "two");
    clients[0].publish_with_headers("with.headers", headers, "body".into()).await.unwrap();
    clients[0].flush().await.unwrap();
    let message = next(&mut subscriber).await;
    let received = message.headers.expect("headers");
    assert_eq!(received.get("Trace-Id").map(|v| v.as_str()), Some("abc-123"));
    let multi: Vec<&str> = received.get_all("Multi").map(|v| v.as_str()).collect();
    assert_eq!(multi, ["one", "two"]);
    assert_eq!(message.payload, "body".as_bytes());
}

#[tokio::test]
async fn unsubscribe_after_max_stops_delivery() {
    let server = TestServer::start(&["--shards", "2"]);
    let clients = connections(&server, 2).await;
    let mut subscriber = clients[1].subscribe("limited").await.unwrap();
    subscriber.unsubscribe_after(3).await.unwrap();
    common::await_interest(&clients[1], &clients[0]).await;
    for index in 0..10 {
        clients[0].publish("limited", format!("{index}").into()).await.unwrap();
    }
    clients[0].flush().await.unwrap();
    let mut received = Vec::new();
    while let Ok(Some(message)) = tokio::time::timeout(Duration::from_millis(500), subscriber.next()).await {
        received.push(message.payload);
    }
    assert_eq!(received, ["0", "1", "2"].map(|s| bytes::Bytes::from(s)));
}

#[tokio::test]
async fn many_connections_spread_over_shards_all_work() {
    let server = TestServer::start(&["--shards", "2"]);
    let clients = connections(&server, 40).await;
    let publisher = async_nats::connect(server.url()).await.unwrap();
    let mut subscribers = Vec::new();
    for (index, client) in clients.iter().enumerate() {
        subscribers.push(client.subscribe(format!("fan.{index}")).await.unwrap());
        common::await_interest(client, &publisher).await;
    }
    for index in 0..clients.len() {
        publisher.publish(format!("fan.{index}"), format!("{index}").into()).await.unwrap();
    }
    publisher.flush().await.unwrap();
    for (index, subscriber) in subscribers.iter_mut().enumerate() {
        assert_eq!(next(subscriber).await.payload, format!("{index}").as_bytes());
    }
}

/// Every reply to one client inbox (`_INBOX.<id>.<token>`) shares the matches of its
/// prefix while no subscription names a last token there (`server/match_cache.rs`). A
/// subscription that does name one, made after many replies were routed, must still get
/// its reply, and only its own; and the wildcard subscriber keeps getting every reply.
#[tokio::test]
async fn a_reply_subject_subscribed_by_name_after_many_replies_reaches_its_subscriber() {
    let server = TestServer::start(&["--shards", "2"]);
    let clients = connections(&server, 4).await;
    let mut inbox = clients[1].subscribe("_INBOX.t.*").await.unwrap();
    common::await_interest(&clients[1], &clients[0]).await;
    for token in 0..50u32 {
        clients[0].publish(format!("_INBOX.t.{token}"), token.to_string().into()).await.unwrap();
    }
    clients[0].flush().await.unwrap();
    for token in 0..50u32 {
        assert_eq!(next(&mut inbox).await.subject.as_str(), format!("_INBOX.t.{token}"));
    }
    // Named subscribers on both shards (connections land on them in turn).
    let mut named = Vec::new();
    for client in &clients[2..] {
        named.push(client.subscribe("_INBOX.t.77").await.unwrap());
        common::await_interest(client, &clients[0]).await;
    }
    for token in [76u32, 77, 78] {
        clients[0].publish(format!("_INBOX.t.{token}"), token.to_string().into()).await.unwrap();
    }
    clients[0].flush().await.unwrap();
    for token in [76u32, 77, 78] {
        assert_eq!(next(&mut inbox).await.subject.as_str(), format!("_INBOX.t.{token}"));
    }
    for subscriber in &mut named {
        assert_eq!(next(subscriber).await.subject.as_str(), "_INBOX.t.77");
        let more = tokio::time::timeout(Duration::from_millis(200), subscriber.next()).await;
        assert!(more.is_err(), "a named subscriber got a reply not its own: {more:?}");
    }
}
