//! Pull-request statuses as nats-server 2.15.1 sends them (recorded with the same
//! requests): an `expires` too short to be served, `409 Server Shutdown` to every
//! waiting request at SIGTERM, and `prioritized` requests that arrive in one read served
//! by priority rather than by arrival.

mod common;

use std::time::Duration;

use common::jetstream::stream_with_messages;
use common::jetstream::{api, connect, REPLY_TIMEOUT};
use common::{RawClient, TestServer};
use futures::StreamExt;

async fn create(client: &async_nats::Client, name: &str, config: &str) {
    let body = format!(r#"{{"stream_name":"S","config":{config}}}"#);
    let reply = api(client, &format!("CONSUMER.CREATE.S.{name}"), &body).await;
    assert!(reply.get("error").is_none(), "{reply}");
}

fn header<'a>(message: &'a async_nats::Message, name: &str) -> Option<&'a str> {
    message.headers.as_ref()?.get(name).map(|value| value.as_str())
}

#[tokio::test]
async fn an_expires_of_one_nanosecond_times_out_without_delivering() {
    let server = TestServer::start(&[]);
    let (client, _) = connect(&server).await;
    stream_with_messages(&client, 3).await;
    create(&client, "P", r#"{"durable_name":"P","ack_policy":"explicit"}"#).await;
    let inbox = client.new_inbox();
    let mut replies = client.subscribe(inbox.clone()).await.unwrap();
    let pull = r#"{"batch":1,"expires":1}"#;
    client.publish_with_reply("$JS.API.CONSUMER.MSG.NEXT.S.P", inbox, pull.into()).await.unwrap();
    let reply = tokio::time::timeout(REPLY_TIMEOUT, replies.next()).await.expect("a reply").unwrap();
    assert_eq!(reply.status.map(|status| status.as_u16()), Some(408), "{reply:?}");
    assert_eq!(reply.description.as_deref(), Some("Request Timeout"));
    assert_eq!(header(&reply, "Nats-Pending-Messages"), Some("1"));
    assert_eq!(header(&reply, "Nats-Pending-Bytes"), Some("0"));
    let info = api(&client, "CONSUMER.INFO.S.P", "").await;
    assert_eq!(info["delivered"]["consumer_seq"], 0, "nothing delivered: {info}");
    assert_eq!(info["num_pending"], 3, "{info}");
}

#[tokio::test]
async fn waiting_pulls_get_server_shutdown_at_sigterm() {
    let mut server = TestServer::start(&["--shards", "2"]);
    let (client, _) = connect(&server).await;
    stream_with_messages(&client, 0).await;
    create(&client, "W", r#"{"durable_name":"W","ack_policy":"explicit"}"#).await;
    let inbox = client.new_inbox();
    let mut replies = client.subscribe(inbox.clone()).await.unwrap();
    let pulls = [r#"{"batch":5,"expires":60000000000}"#, r#"{"batch":3,"max_bytes":1000}"#];
    for pull in pulls {
        client.publish_with_reply("$JS.API.CONSUMER.MSG.NEXT.S.W", inbox.clone(), pull.into()).await.unwrap();
    }
    let mut waiting = 0;
    for _ in 0..500 {
        waiting = api(&client, "CONSUMER.INFO.S.W", "").await["num_waiting"].as_u64().unwrap();
        if waiting == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(waiting, 2, "both requests wait");
    server.signal(libc::SIGTERM);
    let mut statuses = Vec::new();
    for _ in 0..2 {
        let reply = tokio::time::timeout(REPLY_TIMEOUT, replies.next()).await.expect("a status").unwrap();
        let status = reply.status.map(|status| status.as_u16());
        let pending = (header(&reply, "Nats-Pending-Messages"), header(&reply, "Nats-Pending-Bytes"));
        statuses.push((status, reply.description.clone(), pending.0.map(String::from), pending.1.map(String::from)));
    }
    let shutdown = |messages: &str, bytes: &str| {
        (Some(409), Some("Server Shutdown".to_string()), Some(messages.to_string()), Some(bytes.to_string()))
    };
    assert_eq!(statuses, vec![shutdown("5", "0"), shutdown("3", "1000")]);
    assert!(server.wait_exit(Duration::from_secs(20)).expect("jetcore exits after SIGTERM").success());
}

/// Both requests go in one write on one connection, so the server reads them together.
#[tokio::test]
async fn prioritized_requests_read_together_are_served_by_priority() {
    let server = TestServer::start(&["--shards", "1"]);
    let (client, _) = connect(&server).await;
    stream_with_messages(&client, 2).await;
    let config =
        r#"{"durable_name":"C","ack_policy":"explicit","priority_policy":"prioritized","priority_groups":["A"]}"#;
    create(&client, "C", config).await;
    let (mut raw, _info) = RawClient::connect(&server.address());
    let low = r#"{"batch":1,"group":"A","priority":1}"#;
    let high = r#"{"batch":1,"group":"A","priority":0}"#;
    let next = "$JS.API.CONSUMER.MSG.NEXT.S.C";
    let wire = format!(
        "CONNECT {{\"verbose\":false,\"headers\":true}}\r\nSUB _INBOX.low 1\r\nSUB _INBOX.high 2\r\n\
         PUB {next} _INBOX.low {}\r\n{low}\r\nPUB {next} _INBOX.high {}\r\n{high}\r\nPING\r\n",
        low.len(),
        high.len()
    );
    raw.send(wire.as_bytes());
    let mut served = Vec::new();
    while served.len() < 2 {
        let line = raw.line();
        assert!(!line.is_empty(), "connection closed");
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.first() == Some(&"MSG") {
            // MSG <subject> <sid> <ack reply> <bytes>; the ack reply's 6th token is the stream sequence.
            let stream_seq = fields[3].split('.').nth(5).unwrap().to_string();
            served.push((fields[2].to_string(), stream_seq));
            raw.line();
        }
    }
    let expected = vec![("2".to_string(), "1".to_string()), ("1".to_string(), "2".to_string())];
    assert_eq!(served, expected, "priority 0 (sid 2) gets the first message");
}
