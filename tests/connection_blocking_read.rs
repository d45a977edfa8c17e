//! A client with one publish in flight is read by a blocking wait (`server/connection/
//! read_wait.rs`) while its shard has nothing else to do, and the shard still serves
//! everything else meanwhile: another client's requests and a new connection (their
//! sockets and the listener end the wait), a consumer's redelivery timer with nothing else
//! going on (the reactor gets a turn every `IO_YIELD_INTERVAL`), and another shard's
//! publishes to the same stream (the doorbell ends the wait), and a paced producer whose
//! waits end with its next publish. Each run checks that the wait was taken
//! (`jetcore_client_blocking_reads_total`), so a run that never waits fails.

mod common;

use std::io::{Read, Write};
use std::time::Duration;

use async_nats::jetstream::{self, consumer::pull, consumer::AckPolicy};
use common::TestServer;
use futures::StreamExt;

const PUBLISHES: u64 = 1500;
/// Generous: a stall of a few ms is within the contract; only a stuck shard misses this.
const PATIENCE: Duration = Duration::from_secs(10);

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Sum over the shards of the blocking reads counter, from `/metrics`.
fn blocking_reads(http_port: u16) -> u64 {
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", http_port)).expect("connect to monitor");
    stream.set_read_timeout(Some(PATIENCE)).unwrap();
    write!(stream, "GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").unwrap();
    let mut text = String::new();
    stream.read_to_string(&mut text).unwrap();
    let lines = text.lines().filter(|line| line.starts_with("jetcore_client_blocking_reads_total{"));
    lines.map(|line| line.rsplit(' ').next().unwrap().parse::<u64>().unwrap()).sum()
}

/// A server with `shards` shards and monitoring, a client, and stream `name` on `subject`.
struct Setup {
    server: TestServer,
    http_port: u16,
    client: async_nats::Client,
    js: jetstream::Context,
    stream: jetstream::stream::Stream,
}

async fn start(shards: &str, name: &str, subject: &str) -> Setup {
    let http_port = free_port();
    let server = TestServer::start(&["--shards", shards, "-m", &http_port.to_string()]);
    let client = async_nats::connect(server.url()).await.unwrap();
    let js = jetstream::new(client.clone());
    let config = jetstream::stream::Config { name: name.into(), subjects: vec![subject.into()], ..Default::default() };
    let stream = js.create_stream(config).await.unwrap();
    Setup { server, http_port, client, js, stream }
}

/// [`blocking_reads`] off the async runtime.
async fn blocking_reads_now(http_port: u16) -> u64 {
    tokio::task::spawn_blocking(move || blocking_reads(http_port)).await.unwrap()
}

/// Publishes `count` messages one at a time, each waiting for its ack; the sequences must
/// follow each other. The last sequence.
async fn publish_one_at_a_time(url: String, subject: &'static str, count: u64) -> u64 {
    publish_paced(url, subject, count, Duration::ZERO).await
}

/// [`publish_one_at_a_time`] with `pause` after each ack, as a producer at a fixed rate
/// (telemetry) publishes.
async fn publish_paced(url: String, subject: &'static str, count: u64, pause: Duration) -> u64 {
    let client = async_nats::connect(url).await.unwrap();
    let js = jetstream::new(client);
    let mut last = 0;
    for index in 0..count {
        let ack = js.publish(subject, format!("m{index}").into()).await.unwrap();
        let ack = tokio::time::timeout(PATIENCE, ack).await.expect("ack in time").unwrap();
        assert!(ack.sequence > last, "sequence {} after {last}", ack.sequence);
        last = ack.sequence;
        if !pause.is_zero() {
            tokio::time::sleep(pause).await;
        }
    }
    last
}

/// A durable pull consumer with a 100 ms ack wait on `subject`, holding one message
/// published to it, which nobody will ack.
async fn unacked_consumer(
    js: &jetstream::Context,
    stream: &jetstream::stream::Stream,
    subject: &str,
    durable: &str,
) -> jetstream::consumer::Consumer<pull::Config> {
    js.publish(subject.to_string(), "again".into()).await.unwrap().await.unwrap();
    let config = pull::Config {
        durable_name: Some(durable.into()),
        filter_subject: subject.into(),
        ack_policy: AckPolicy::Explicit,
        ack_wait: Duration::from_millis(100),
        ..Default::default()
    };
    stream.create_consumer(config).await.unwrap()
}

/// Fetches `consumer`'s message, leaves it unacked, and fetches it again once its ack wait
/// has passed: the consumer's timer must have run while `publisher` still publishes.
async fn redelivered_while(
    consumer: &jetstream::consumer::Consumer<pull::Config>,
    publisher: &tokio::task::JoinHandle<u64>,
) {
    let mut first = consumer.fetch().max_messages(1).expires(PATIENCE).messages().await.unwrap();
    assert_eq!(first.next().await.unwrap().unwrap().info().unwrap().delivered, 1);
    let mut again = consumer.fetch().max_messages(1).expires(PATIENCE).messages().await.unwrap();
    assert_eq!(again.next().await.unwrap().unwrap().info().unwrap().delivered, 2);
    assert!(!publisher.is_finished(), "the redelivery came only after the publisher stopped");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_publish_in_flight_is_read_by_a_blocking_wait_while_the_shard_serves_the_rest() {
    let Setup { server, http_port, client, js, .. } = start("1", "RW", "rw.>").await;
    let responder = async_nats::connect(server.url()).await.unwrap();
    let mut requests = responder.subscribe("svc.echo").await.unwrap();
    let replies = responder.clone();
    tokio::spawn(async move {
        while let Some(request) = requests.next().await {
            replies.publish(request.reply.unwrap(), request.payload).await.unwrap();
        }
    });
    responder.flush().await.unwrap();
    let before = blocking_reads_now(http_port).await;

    let publisher = tokio::spawn(publish_one_at_a_time(server.url(), "rw.data", PUBLISHES));
    let (mut answered, mut connected) = (0, 0);
    while !publisher.is_finished() {
        tokio::time::sleep(Duration::from_millis(10)).await;
        let reply = tokio::time::timeout(PATIENCE, client.request("svc.echo", "ping".into())).await;
        assert_eq!(reply.expect("reply in time").unwrap().payload, "ping");
        answered += 1;
        if answered % 10 == 0 {
            // A connection arriving on the shard: its handshake and a round trip.
            let newcomer = tokio::time::timeout(PATIENCE, async_nats::connect(server.url())).await;
            tokio::time::timeout(PATIENCE, newcomer.expect("connected in time").unwrap().flush())
                .await
                .unwrap()
                .unwrap();
            connected += 1;
        }
    }
    assert_eq!(publisher.await.unwrap(), PUBLISHES);
    let waited = blocking_reads_now(http_port).await - before;
    assert!(waited > 0, "the publisher was never read by a blocking wait ({answered} requests meanwhile)");
    assert!(answered > 0 && connected > 0, "{answered} requests, {connected} connections");
    let info = js.get_stream("RW").await.unwrap().info().await.unwrap().clone();
    assert_eq!(info.state.messages, PUBLISHES);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consumers_timer_fires_while_the_publisher_is_read_by_blocking_waits() {
    let Setup { server, http_port, js, stream, .. } = start("1", "RWT", "rwt.>").await;
    let consumer = unacked_consumer(&js, &stream, "rwt.redeliver", "SLOW").await;
    let before = blocking_reads_now(http_port).await;

    // Long enough that the redelivery, 100 ms after the first delivery, falls inside it.
    let publisher = tokio::spawn(publish_one_at_a_time(server.url(), "rwt.data", 4 * PUBLISHES));
    // Nothing acked: only the consumer's timer, which runs at a reactor turn, brings the
    // message back. A wait that kept the reactor from running while the publisher keeps
    // its shard busy would hold it back. (Waits that time out, when the client is slower
    // than `READ_WAIT_MAX`, give the reactor turns too, so this does not isolate the
    // `IO_YIELD_INTERVAL` bound.)
    redelivered_while(&consumer, &publisher).await;
    publisher.await.unwrap();
    let waited = blocking_reads_now(http_port).await - before;
    assert!(waited > 0, "the publisher was never read by a blocking wait");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paced_publisher_is_read_by_blocking_waits_and_the_reactor_still_turns() {
    const PACED: u64 = 400;
    let Setup { server, http_port, js, stream, .. } = start("1", "RWP", "rwp.>").await;
    let consumer = unacked_consumer(&js, &stream, "rwp.redeliver", "PACED").await;
    let before = blocking_reads_now(http_port).await;

    // A publish every millisecond or so: slower than a loopback round trip, faster than
    // `READ_WAIT_MAX`. Its waits end with its next publish, not with their timeout, and
    // the consumer's timer must still run meanwhile. (Reactor turns come from the
    // `IO_YIELD_INTERVAL` bound and from the reads that go through the reactor anyway;
    // with the bound disabled this still passed, so it does not isolate the bound.)
    let publisher = tokio::spawn(publish_paced(server.url(), "rwp.data", PACED, Duration::from_millis(1)));
    redelivered_while(&consumer, &publisher).await;
    assert_eq!(publisher.await.unwrap(), PACED + 1);
    // Every other read or so goes through the reactor for its turn; the rest wait. (With
    // a wait bound shorter than the pause, none would.)
    let waited = blocking_reads_now(http_port).await - before;
    assert!(waited >= PACED / 4, "{waited} of {PACED} paced publishes were read by a blocking wait");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_shards_publishes_end_the_wait_and_every_publish_is_stored() {
    let Setup { server, http_port, js, .. } = start("2", "RW2", "rw2.>").await;
    let before = blocking_reads_now(http_port).await;

    let publisher = tokio::spawn(publish_one_at_a_time(server.url(), "rw2.data", PUBLISHES));
    // Other connections publish to the same stream now and then; each lands on either
    // shard, so some of their publishes reach the stream's shard through the mesh.
    let mut others = 0u64;
    while !publisher.is_finished() {
        tokio::time::sleep(Duration::from_millis(5)).await;
        let other = jetstream::new(async_nats::connect(server.url()).await.unwrap());
        let ack = other.publish("rw2.other", "x".into()).await.unwrap();
        tokio::time::timeout(PATIENCE, ack).await.expect("ack in time").unwrap();
        others += 1;
    }
    publisher.await.unwrap();
    let waited = blocking_reads_now(http_port).await - before;
    assert!(waited > 0, "the publisher was never read by a blocking wait ({others} other publishes)");
    let info = js.get_stream("RW2").await.unwrap().info().await.unwrap().clone();
    assert_eq!(info.state.messages, PUBLISHES + others);
}
