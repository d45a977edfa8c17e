//! What runs against the server during one cycle of a kill -9 run: producers publishing
//! uniquely numbered messages with many acks in flight, and a durable pull consumer that
//! double-acks (AckSync) three messages in four and watches for redeliveries of
//! confirmed acks. Everything observed goes into the shared [`History`]; tasks run
//! until the cycle's runtime is dropped after the kill.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_nats::jetstream::{self, consumer::PullConsumer, Context};
use futures::channel::oneshot;
use futures::future::Shared as SharedFuture;
use futures::stream::FuturesUnordered;
use futures::StreamExt;

use super::oracle::{History, MessageId};

pub const STREAM: &str = "K9";
pub const DURABLE: &str = "K9C";
/// Long enough that nothing is redelivered for a missed deadline within one cycle, so
/// every redelivery the consumer sees comes from a restart.
const ACK_WAIT: Duration = Duration::from_secs(120);
/// How long any one request or publish ack may take before it counts as unanswered.
pub const REPLY_TIMEOUT: Duration = Duration::from_secs(5);

pub type Shared = Arc<Mutex<History>>;

/// Connects, retrying while the server is not accepting yet.
pub async fn connect(url: &str) -> Context {
    loop {
        let options = async_nats::ConnectOptions::new().request_timeout(Some(REPLY_TIMEOUT));
        match options.connect(url).await {
            Ok(client) => return jetstream::ContextBuilder::new().timeout(REPLY_TIMEOUT).build(client),
            Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    }
}

/// Creates the stream and the durable consumer (first cycle only).
pub async fn create(context: &Context) {
    let config = jetstream::stream::Config { name: STREAM.into(), subjects: vec!["k9.>".into()], ..Default::default() };
    let stream = context.create_stream(config).await.expect("create stream");
    let consumer = jetstream::consumer::pull::Config {
        durable_name: Some(DURABLE.into()),
        ack_policy: jetstream::consumer::AckPolicy::Explicit,
        ack_wait: ACK_WAIT,
        ..Default::default()
    };
    stream.create_consumer(consumer).await.expect("create durable consumer");
}

/// One producer: keeps `in_flight` publishes outstanding; its counters continue from
/// what it attempted in earlier cycles. Notes `first_ack` once.
pub async fn produce(
    url: String,
    producer: u32,
    in_flight: usize,
    payload_bytes: usize,
    history: Shared,
    first_ack: Arc<Mutex<Option<Instant>>>,
    recovered_read: SharedFuture<oneshot::Receiver<()>>,
) {
    let context = connect(&url).await;
    // Sent, or dropped with the consumer's task: either way nothing is left to wait for.
    let _ = recovered_read.await;
    let subject = format!("k9.{producer}");
    let mut counter = history.lock().expect("history").attempted.get(&producer).copied().unwrap_or(0);
    let mut outstanding = FuturesUnordered::new();
    loop {
        while outstanding.len() < in_flight {
            counter += 1;
            let id = MessageId { producer, counter };
            history.lock().expect("history").note_attempt(id);
            match context.publish(subject.clone(), id.payload(payload_bytes).into()).await {
                Ok(ack) => outstanding.push(async move { (id, ack.await) }),
                Err(_) => {
                    history.lock().expect("history").errored += 1;
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            }
        }
        let Some((id, result)) = outstanding.next().await else { continue };
        let mut history = history.lock().expect("history");
        match result {
            Ok(ack) => {
                history.note_ack(ack.sequence, id);
                first_ack.lock().expect("first ack").get_or_insert_with(Instant::now);
            }
            Err(_) => history.errored += 1,
        }
    }
}

/// The durable consumer: checks the stream's last sequence as recovered (read before
/// any producer publishes, then `recovered` lets them start) against `known_seq` (the
/// highest sequence known before this restart), then fetches and double-acks every
/// message whose sequence is not a multiple of 4.
pub async fn consume(url: String, cycle: usize, known_seq: u64, history: Shared, recovered: oneshot::Sender<()>) {
    let context = connect(&url).await;
    let mut stream = loop {
        match context.get_stream(STREAM).await {
            Ok(stream) => break stream,
            Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    };
    let last_seq = stream.cached_info().state.last_sequence;
    history.lock().expect("history").note_last_seq(cycle, last_seq, known_seq);
    let _ = recovered.send(());
    let consumer: PullConsumer = loop {
        match stream.get_consumer(DURABLE).await {
            Ok(consumer) => break consumer,
            Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    };
    let _ = stream.info().await;
    loop {
        consume_batch(&consumer, &history).await;
    }
}

/// Fetches one batch and handles it; returns how many messages it held.
pub async fn consume_batch(consumer: &PullConsumer, history: &Shared) -> usize {
    let batch = consumer.batch().max_messages(64).expires(Duration::from_millis(300)).messages().await;
    let Ok(mut batch) = batch else {
        tokio::time::sleep(Duration::from_millis(20)).await;
        return 0;
    };
    let mut count = 0;
    while let Some(Ok(message)) = batch.next().await {
        let Ok(seq) = message.info().map(|info| info.stream_sequence) else { continue };
        count += 1;
        history.lock().expect("history").note_delivery(seq);
        if seq % 4 != 0 && message.double_ack().await.is_ok() {
            history.lock().expect("history").consumer_acked.insert(seq);
        }
    }
    count
}

/// Publishes one message as the next of producer 0, retrying until it is acked (the
/// stream may still be opening); when the ack came.
pub async fn publish_one(context: &Context, payload_bytes: usize, history: &Shared) -> Instant {
    loop {
        let id = {
            let mut history = history.lock().expect("history");
            let id = MessageId { producer: 0, counter: history.attempted.get(&0).copied().unwrap_or(0) + 1 };
            history.note_attempt(id);
            id
        };
        let sent = context.publish("k9.0", id.payload(payload_bytes).into()).await;
        match sent {
            Ok(ack) => match ack.await {
                Ok(ack) => {
                    history.lock().expect("history").note_ack(ack.sequence, id);
                    return Instant::now();
                }
                Err(_) => history.lock().expect("history").errored += 1,
            },
            Err(_) => history.lock().expect("history").errored += 1,
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
