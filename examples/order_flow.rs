//! A trading order flow against jetcore (or nats-server): a gateway publishes orders with
//! `Nats-Msg-Id` (a retried publish is stored once), a durable "risk" consumer checks each
//! order and acknowledges it explicitly, and an audit replays the orders from a point in
//! time with a new consumer (`DeliverPolicy::ByStartTime`), as after an incident.
//!
//! ```sh
//! cargo run --release                        # jetcore on 127.0.0.1:4222, in another shell
//! cargo run --release --example order_flow -- 500
//! NATS_URL=nats://host:4222 cargo run --release --example order_flow
//! ```

use std::time::Duration;

use async_nats::jetstream::{
    self, consumer::pull, consumer::AckPolicy, consumer::DeliverPolicy, message::PublishMessage, stream,
};
use futures::StreamExt;

const STREAM: &str = "ORDERS";
const SYMBOLS: [&str; 4] = ["AAPL", "MSFT", "NVDA", "TSLA"];

#[tokio::main]
async fn main() -> Result<(), async_nats::Error> {
    let url = std::env::var("NATS_URL").unwrap_or_else(|_| "nats://127.0.0.1:4222".into());
    let orders: u32 = std::env::args().nth(1).and_then(|n| n.parse().ok()).unwrap_or(200);
    let client = async_nats::ConnectOptions::new().name("order-flow").connect(&url).await?;
    let js = jetstream::new(client);
    js.get_or_create_stream(stream::Config {
        name: STREAM.into(),
        subjects: vec!["orders.>".into()],
        duplicate_window: Duration::from_secs(120),
        ..Default::default()
    })
    .await?;

    let run = time::OffsetDateTime::now_utc().unix_timestamp_nanos();
    let first_half = orders / 2;
    publish_orders(&js, run, 0..first_half).await?;
    // The audit later replays everything from here on.
    tokio::time::sleep(Duration::from_millis(20)).await;
    let replay_from = time::OffsetDateTime::now_utc();
    publish_orders(&js, run, first_half..orders).await?;

    check_risk(&js).await?;
    replay(&js, replay_from).await
}

/// Publishes orders `range`; each is sent twice, as a gateway retrying after a timeout
/// would, and stored once thanks to its `Nats-Msg-Id`.
async fn publish_orders(
    js: &jetstream::Context,
    run: i128,
    range: std::ops::Range<u32>,
) -> Result<(), async_nats::Error> {
    for id in range {
        let symbol = SYMBOLS[id as usize % SYMBOLS.len()];
        let side = if id % 2 == 0 { "buy" } else { "sell" };
        let body = format!(
            "{{\"id\":{id},\"symbol\":\"{symbol}\",\"side\":\"{side}\",\"qty\":{},\"px\":{}}}",
            100 + id % 900,
            100 + id % 50
        );
        let message_id = format!("{run}-{id}");
        for attempt in 0..2 {
            let publish = PublishMessage::build().payload(body.clone().into()).message_id(&message_id);
            let ack = js.send_publish(format!("orders.{symbol}.{side}"), publish).await?.await?;
            assert_eq!(ack.duplicate, attempt == 1, "the retry of order {id} is a duplicate");
        }
    }
    Ok(())
}

/// The durable risk checker: explicit acks, resumes after a restart where it left off.
async fn check_risk(js: &jetstream::Context) -> Result<(), async_nats::Error> {
    let consumer = js
        .get_stream(STREAM)
        .await?
        .get_or_create_consumer(
            "risk",
            pull::Config {
                durable_name: Some("risk".into()),
                ack_policy: AckPolicy::Explicit,
                ack_wait: Duration::from_secs(10),
                max_deliver: 5,
                ..Default::default()
            },
        )
        .await?;
    let (mut checked, mut flagged) = (0u32, 0u32);
    loop {
        let mut batch = consumer.fetch().max_messages(100).expires(Duration::from_millis(300)).messages().await?;
        let mut got = 0;
        while let Some(message) = batch.next().await {
            let message = message?;
            let order: serde_json::Value = serde_json::from_slice(&message.payload)?;
            if order["qty"].as_u64().unwrap_or(0) > 350 {
                flagged += 1;
            }
            // Double ack: returns once the server has recorded it.
            message.double_ack().await?;
            checked += 1;
            got += 1;
        }
        if got == 0 {
            break;
        }
    }
    println!("risk: checked {checked} orders, flagged {flagged} large ones");
    Ok(())
}

/// Replays the orders published since `from` with an ephemeral consumer.
async fn replay(js: &jetstream::Context, from: time::OffsetDateTime) -> Result<(), async_nats::Error> {
    let consumer = js
        .get_stream(STREAM)
        .await?
        .create_consumer(pull::Config {
            deliver_policy: DeliverPolicy::ByStartTime { start_time: from },
            ack_policy: AckPolicy::None,
            inactive_threshold: Duration::from_secs(30),
            ..Default::default()
        })
        .await?;
    let mut replayed = 0u32;
    let mut first = None;
    loop {
        let mut batch = consumer.fetch().max_messages(500).expires(Duration::from_millis(300)).messages().await?;
        let mut got = 0;
        while let Some(message) = batch.next().await {
            let message = message?;
            let sequence = message.info()?.stream_sequence;
            first.get_or_insert(sequence);
            replayed += 1;
            got += 1;
        }
        if got == 0 {
            break;
        }
    }
    println!("audit: replayed {replayed} orders published since {from} (from stream sequence {first:?})");
    Ok(())
}
