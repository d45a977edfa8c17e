//! Fast batch publish (`allow_batched`, nats-server 2.14; the reply subject
//! `<inbox>.<id>.<flow>.<gap>.<seq>.<op>.$FI` names the batch) through the wire. Every
//! expected reply below is the byte string nats-server 2.15.1 sent for the same publishes
//! (recorded 2026-12-03): messages are stored as they come, flow acks every `flow`
//! messages, gap notes, errors, and one pub ack with `batch` and `count` at the end.
//! nats-server may also lower a batch's ack frequency under load (a slow start); the
//! scenarios here were recorded when it did not.

mod common;

use std::time::Duration;

use async_nats::{Client, HeaderMap, Subscriber};
use common::jetstream::{api, assert_error, connect};
use common::TestServer;
use futures::StreamExt;

/// How long a scenario waits for one more reply before calling it quiet.
const QUIET: Duration = Duration::from_millis(300);

/// One publisher's replies: everything under its inbox.
struct Publisher {
    client: Client,
    inbox: String,
    replies: Subscriber,
}

impl Publisher {
    async fn new(client: &Client) -> Publisher {
        let inbox = "fast".to_string();
        let replies = client.subscribe(format!("{inbox}.>")).await.unwrap();
        Publisher { client: client.clone(), inbox, replies }
    }

    /// Publishes `payload` to `subject` as message `seq` of batch `id`, and returns the
    /// replies (subject's batch sequence, op and body) that came before a quiet spell.
    async fn send(&mut self, subject: &str, id: &str, flow: &str, gap: &str, seq: u64, op: u8) -> Vec<String> {
        self.send_with(subject, HeaderMap::new(), id, flow, gap, seq, op).await
    }

    #[expect(clippy::too_many_arguments, reason = "the reply subject's tokens, spelled out")]
    async fn send_with(
        &mut self,
        subject: &str,
        headers: HeaderMap,
        id: &str,
        flow: &str,
        gap: &str,
        seq: u64,
        op: u8,
    ) -> Vec<String> {
        let reply = format!("{}.{id}.{flow}.{gap}.{seq}.{op}.$FI", self.inbox);
        self.client.publish_with_reply_and_headers(subject.to_string(), reply, headers, "x".into()).await.unwrap();
        self.client.flush().await.unwrap();
        self.quiet().await
    }

    async fn quiet(&mut self) -> Vec<String> {
        let mut out = Vec::new();
        while let Ok(Some(message)) = tokio::time::timeout(QUIET, self.replies.next()).await {
            out.push(String::from_utf8(message.payload.to_vec()).unwrap());
        }
        out
    }
}

async fn messages(client: &Client, stream: &str) -> u64 {
    api(client, &format!("STREAM.INFO.{stream}"), "").await["state"]["messages"].as_u64().unwrap()
}

async fn create(client: &Client, name: &str, subjects: &str) {
    let body = format!(r#"{{"name":"{name}","subjects":["{subjects}"],"allow_batched":true}}"#);
    let created = api(client, &format!("STREAM.CREATE.{name}"), &body).await;
    assert!(created["error"].is_null(), "{created}");
    assert_eq!(created["config"]["allow_batched"], true);
    assert_eq!(created["config"]["metadata"]["_nats.req.level"], "4");
}

#[tokio::test]
async fn allow_batched_is_taken_toggled_and_refused_on_a_mirror() {
    let server = TestServer::start(&[]);
    let (client, _) = connect(&server).await;
    api(&client, "STREAM.CREATE.O", r#"{"name":"O","subjects":["o.>"]}"#).await;
    let mirror = api(&client, "STREAM.CREATE.M", r#"{"name":"M","mirror":{"name":"O"},"allow_batched":true}"#).await;
    assert_error(&mirror, 400, 10209, "stream mirrors can not also use batch publishing");
    let sourcing = r#"{"name":"S","sources":[{"name":"O"}],"allow_batched":true}"#;
    assert_eq!(api(&client, "STREAM.CREATE.S", sourcing).await["config"]["allow_batched"], true);

    api(&client, "STREAM.CREATE.U", r#"{"name":"U","subjects":["u.>"]}"#).await;
    let mut publisher = Publisher::new(&client).await;
    let off = publisher.send("u.a", "u", "2", "fail", 1, 0).await;
    assert_eq!(
        off,
        [r#"{"error":{"code":400,"err_code":10205,"description":"batch publish is disabled"},"stream":"U","seq":0}"#]
    );
    let on = api(&client, "STREAM.UPDATE.U", r#"{"name":"U","subjects":["u.>"],"allow_batched":true}"#).await;
    assert_eq!(on["config"]["allow_batched"], true);
    assert_eq!(publisher.send("u.a", "u", "2", "fail", 1, 0).await, [r#"{"type":"ack","seq":0,"msgs":2}"#]);
    let off = api(&client, "STREAM.UPDATE.U", r#"{"name":"U","subjects":["u.>"],"allow_batched":false}"#).await;
    assert!(off["config"]["allow_batched"].is_null(), "{off}");
    assert_eq!(off["config"]["metadata"]["_nats.req.level"], "0");
    let refused = publisher.send("u.a", "u", "2", "fail", 2, 1).await;
    assert_eq!(
        refused,
        [r#"{"error":{"code":400,"err_code":10205,"description":"batch publish is disabled"},"stream":"U","seq":0}"#]
    );
}

#[tokio::test]
async fn a_batch_is_stored_as_it_comes_with_flow_acks_and_one_pub_ack() {
    let server = TestServer::start(&["--shards", "2"]);
    let (client, _) = connect(&server).await;
    create(&client, "FB", "fb.>").await;
    let mut publisher = Publisher::new(&client).await;
    assert_eq!(publisher.send("fb.a", "b1", "2", "fail", 1, 0).await, [r#"{"type":"ack","seq":0,"msgs":2}"#]);
    // Stored at once, not held for the commit.
    assert_eq!(messages(&client, "FB").await, 1);
    assert_eq!(publisher.send("fb.a", "b1", "2", "fail", 2, 1).await, [r#"{"type":"ack","seq":2,"msgs":2}"#]);
    assert!(publisher.send("fb.a", "b1", "2", "fail", 3, 1).await.is_empty());
    assert_eq!(publisher.send("fb.a", "b1", "2", "fail", 4, 1).await, [r#"{"type":"ack","seq":4,"msgs":2}"#]);
    assert!(publisher.send("fb.a", "b1", "2", "fail", 5, 1).await.is_empty());
    let commit = publisher.send("fb.a", "b1", "2", "fail", 6, 2).await;
    assert_eq!(commit, [r#"{"stream":"FB","seq":6,"batch":"b1","count":6}"#]);
    assert_eq!(messages(&client, "FB").await, 6);
    // Stored as published: no batch headers added.
    let last = api(&client, "STREAM.MSG.GET.FB", r#"{"seq":6}"#).await;
    assert!(last["message"]["hdrs"].is_null(), "{last}");
    // The batch is over.
    let after = publisher.send("fb.a", "b1", "2", "fail", 7, 1).await;
    assert_eq!(
        after,
        [r#"{"error":{"code":400,"err_code":10208,"description":"batch publish ID unknown"},"stream":"FB","seq":0}"#]
    );

    // Pipelined without waiting, closed by `eob` (op 3, not stored): every ack still comes.
    let mut pipelined = Vec::new();
    for seq in 1..=40 {
        let reply = format!("fast.f10.10.fail.{seq}.{}.$FI", if seq == 1 { 0 } else { 1 });
        client.publish_with_reply("fb.a", reply, "x".into()).await.unwrap();
    }
    client.publish_with_reply("fb.a", "fast.f10.10.fail.41.3.$FI", "".into()).await.unwrap();
    client.flush().await.unwrap();
    pipelined.extend(publisher.quiet().await);
    assert_eq!(
        pipelined,
        [
            r#"{"type":"ack","seq":0,"msgs":10}"#,
            r#"{"type":"ack","seq":10,"msgs":10}"#,
            r#"{"type":"ack","seq":20,"msgs":10}"#,
            r#"{"type":"ack","seq":30,"msgs":10}"#,
            r#"{"type":"ack","seq":40,"msgs":10}"#,
            r#"{"stream":"FB","seq":46,"batch":"f10","count":40}"#,
        ]
    );
    assert_eq!(messages(&client, "FB").await, 46);
}

#[tokio::test]
async fn a_gap_ends_a_fail_batch_and_is_reported_in_an_ok_batch() {
    let server = TestServer::start(&[]);
    let (client, _) = connect(&server).await;
    create(&client, "FB", "fb.>").await;
    let mut publisher = Publisher::new(&client).await;
    assert_eq!(publisher.send("fb.a", "g1", "3", "fail", 1, 0).await, [r#"{"type":"ack","seq":0,"msgs":3}"#]);
    assert!(publisher.send("fb.a", "g1", "3", "fail", 2, 1).await.is_empty());
    let gap = publisher.send("fb.a", "g1", "3", "fail", 4, 1).await;
    assert_eq!(gap, [r#"{"type":"gap","last_seq":3,"seq":4}"#, r#"{"stream":"FB","seq":2,"batch":"g1","count":2}"#]);
    let unknown = publisher.send("fb.a", "g1", "3", "fail", 5, 1).await;
    assert_eq!(
        unknown,
        [r#"{"error":{"code":400,"err_code":10208,"description":"batch publish ID unknown"},"stream":"FB","seq":0}"#]
    );
    assert_eq!(messages(&client, "FB").await, 2);

    assert_eq!(publisher.send("fb.a", "g2", "3", "ok", 1, 0).await, [r#"{"type":"ack","seq":0,"msgs":3}"#]);
    assert!(publisher.send("fb.a", "g2", "3", "ok", 2, 1).await.is_empty());
    let gap = publisher.send("fb.a", "g2", "3", "ok", 4, 1).await;
    assert_eq!(gap, [r#"{"type":"gap","last_seq":3,"seq":4}"#, r#"{"type":"ack","seq":3,"msgs":3}"#]);
    assert!(publisher.send("fb.a", "g2", "3", "ok", 5, 1).await.is_empty());
    assert_eq!(publisher.send("fb.a", "g2", "3", "ok", 6, 1).await, [r#"{"type":"ack","seq":6,"msgs":3}"#]);
    // Going backwards ends the batch even when gaps are fine.
    let backwards = publisher.send("fb.a", "g2", "3", "ok", 3, 1).await;
    assert_eq!(
        backwards,
        [r#"{"type":"gap","last_seq":7,"seq":3}"#, r#"{"stream":"FB","seq":7,"batch":"g2","count":6}"#]
    );
    assert_eq!(messages(&client, "FB").await, 7);
}

#[tokio::test]
async fn bad_replies_get_nats_server_errors() {
    let server = TestServer::start(&[]);
    let (client, _) = connect(&server).await;
    create(&client, "FB", "fb.>").await;
    let mut publisher = Publisher::new(&client).await;
    let error = |code: u64, text: &str| {
        format!(r#"{{"error":{{"code":400,"err_code":{code},"description":"{text}"}},"stream":"FB","seq":0}}"#)
    };
    let invalid = error(10206, "batch publish pattern is invalid");
    assert_eq!(publisher.send("fb.a", "p", "3", "xyz", 1, 0).await, [invalid.as_str()]);
    assert_eq!(publisher.send("fb.a", "p", "3", "fail", 1, 9).await, [invalid.as_str()]);
    assert_eq!(publisher.send("fb.a", "p", "3", "fail", 0, 0).await, [invalid.as_str()]);
    assert_eq!(publisher.send("fb.a", "p", "3", "fail", 2, 0).await, [invalid.as_str()]);
    assert_eq!(publisher.send("fb.a", "p", "3", "fail", 1, 3).await, [invalid.as_str()]);
    let long = "b".repeat(65);
    assert_eq!(publisher.send("fb.a", &long, "3", "fail", 1, 0).await, [error(10207, "batch publish ID is invalid")]);
    assert_eq!(messages(&client, "FB").await, 0);
    // A commit at sequence 1 is a batch of one.
    let one = publisher.send("fb.a", &"a".repeat(64), "3", "fail", 1, 2).await;
    assert_eq!(one, [format!(r#"{{"stream":"FB","seq":1,"batch":"{}","count":1}}"#, "a".repeat(64))]);
}

#[tokio::test]
async fn pings_and_refused_messages_get_nats_server_answers() {
    let server = TestServer::start(&[]);
    let (client, _) = connect(&server).await;
    create(&client, "FB", "fb.>").await;
    let mut publisher = Publisher::new(&client).await;
    let error = |code: u64, text: &str| {
        format!(r#"{{"error":{{"code":400,"err_code":{code},"description":"{text}"}},"stream":"FB","seq":0}}"#)
    };
    // A ping answers with the last flow ack.
    assert_eq!(publisher.send("fb.a", "q1", "2", "fail", 1, 0).await, [r#"{"type":"ack","seq":0,"msgs":2}"#]);
    assert_eq!(publisher.send("fb.a", "q1", "2", "fail", 2, 1).await, [r#"{"type":"ack","seq":2,"msgs":2}"#]);
    assert!(publisher.send("fb.a", "q1", "2", "fail", 3, 1).await.is_empty());
    assert_eq!(publisher.send("fb.a", "q1", "2", "fail", 3, 4).await, [r#"{"type":"ack","seq":2,"msgs":2}"#]);
    let eob = publisher.send("fb.a", "q1", "2", "fail", 4, 3).await;
    assert_eq!(eob, [r#"{"stream":"FB","seq":3,"batch":"q1","count":3}"#]);
    assert_eq!(messages(&client, "FB").await, 3);

    // A message the stream refuses ends a `fail` batch: `err`, then the pub ack so far.
    assert_eq!(publisher.send("fb.a", "s1", "2", "fail", 1, 0).await, [r#"{"type":"ack","seq":0,"msgs":2}"#]);
    let mut expect_one = HeaderMap::new();
    expect_one.insert("Nats-Expected-Last-Sequence", "1");
    let refused = publisher.send_with("fb.a", expect_one.clone(), "s1", "2", "fail", 2, 1).await;
    assert_eq!(
        refused,
        [
            r#"{"type":"err","seq":2,"error":{"code":400,"err_code":10071,"description":"wrong last sequence: 4"}}"#,
            r#"{"stream":"FB","seq":4,"batch":"s1","count":1}"#,
        ]
    );
    // ... and only reports it in an `ok` batch, which goes on.
    assert_eq!(publisher.send("fb.a", "s2", "2", "ok", 1, 0).await, [r#"{"type":"ack","seq":0,"msgs":2}"#]);
    let reported = publisher.send_with("fb.a", expect_one.clone(), "s2", "2", "ok", 2, 1).await;
    assert_eq!(
        reported,
        [r#"{"type":"err","seq":2,"error":{"code":400,"err_code":10071,"description":"wrong last sequence: 5"}}"#]
    );
    // The flow ack the refused message did not get comes with the next one.
    assert_eq!(publisher.send("fb.a", "s2", "2", "ok", 3, 1).await, [r#"{"type":"ack","seq":2,"msgs":2}"#]);
    let commit = publisher.send("fb.a", "s2", "2", "ok", 4, 2).await;
    assert_eq!(commit, [r#"{"stream":"FB","seq":7,"batch":"s2","count":4}"#]);
    // A refused commit of a batch of one is a plain error.
    let first = publisher.send_with("fb.a", expect_one, "f2", "2", "fail", 1, 2).await;
    assert_eq!(first, [error(10071, "wrong last sequence: 7")]);
    assert_eq!(messages(&client, "FB").await, 7);

    // A message over `max_msg_size` is refused before its batch sees it: a gap follows.
    let small = r#"{"name":"SZ","subjects":["sz.>"],"allow_batched":true,"max_msg_size":100}"#;
    assert!(api(&client, "STREAM.CREATE.SZ", small).await["error"].is_null());
    assert_eq!(publisher.send("sz.a", "z", "2", "ok", 1, 0).await, [r#"{"type":"ack","seq":0,"msgs":2}"#]);
    let reply = "fast.z.2.ok.2.1.$FI";
    client.publish_with_reply("sz.a", reply, "x".repeat(200).into()).await.unwrap();
    let too_big = r#"{"error":{"code":400,"err_code":10054,"description":"message size exceeds maximum allowed"},"stream":"SZ","seq":0}"#;
    assert_eq!(publisher.quiet().await, [too_big]);
    let gap = publisher.send("sz.a", "z", "2", "ok", 3, 2).await;
    assert_eq!(gap, [r#"{"type":"gap","last_seq":2,"seq":3}"#, r#"{"stream":"SZ","seq":2,"batch":"z","count":3}"#]);
}

#[tokio::test]
async fn an_idle_batch_is_dropped_after_ten_seconds() {
    let server = TestServer::start(&[]);
    let (client, _) = connect(&server).await;
    create(&client, "FB", "fb.>").await;
    let mut publisher = Publisher::new(&client).await;
    assert_eq!(publisher.send("fb.a", "t", "10", "fail", 1, 0).await, [r#"{"type":"ack","seq":0,"msgs":10}"#]);
    assert!(publisher.send("fb.a", "t", "10", "fail", 2, 1).await.is_empty());
    // Dropped without a word (nats-server 2.15.1 sends neither a reply nor an advisory).
    let mut advisories = client.subscribe("$JS.EVENT.ADVISORY.STREAM.>").await.unwrap();
    tokio::time::sleep(Duration::from_secs(11)).await;
    assert!(publisher.quiet().await.is_empty());
    assert!(tokio::time::timeout(Duration::from_millis(100), advisories.next()).await.is_err());
    let late = publisher.send("fb.a", "t", "10", "fail", 3, 1).await;
    assert_eq!(
        late,
        [r#"{"error":{"code":400,"err_code":10208,"description":"batch publish ID unknown"},"stream":"FB","seq":0}"#]
    );
    assert_eq!(messages(&client, "FB").await, 2);
}
