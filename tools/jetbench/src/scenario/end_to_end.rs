//! End-to-end latency: one publisher at a fixed rate (`--rate`, default
//! [`DEFAULT_LATENCY_RATE`]) stamps each payload with its *intended* send time; one
//! subscriber records arrival minus that time. `--via core` goes through a plain
//! subscription, `--via stream` through a stream and a push consumer (ack none), so the
//! figure includes storing the message.

use std::sync::{Arc, Barrier};
use std::time::Instant;

use super::receive::{receive, Goal};
use super::{read_stamp, stamp, Context, Headline, Limit, Outcome, RunState};
use crate::cli::{AckPolicy, LatencyPath};
use crate::connection::{Connection, ServerAddress};
use crate::error::Result;
use crate::jetstream::{new_inbox, ApiClient, ConsumerSpec, StreamSpec};
use crate::latency::LatencyRecorder;
use crate::limits::{API_REQUEST_TIMEOUT, DEFAULT_LATENCY_RATE, DRAIN_TIMEOUT, TIMESTAMP_BYTES};
use crate::pacing::Pacer;
use crate::workers::Workers;

/// Name of the push consumer of `--via stream`.
const LATENCY_CONSUMER: &str = "JETBENCH_LATENCY";
/// Subscription id of the latency subscriber.
const LATENCY_SID: u64 = 1;

pub fn run(context: &Context) -> Result<Outcome> {
    let options = &context.options;
    let publish_subject = format!("{}.latency", options.subject);
    let mut api = None;
    let receive_subject = match options.via {
        LatencyPath::Core => publish_subject.clone(),
        LatencyPath::Loopback => unreachable!("`--via loopback` is run by scenario::loopback"),
        LatencyPath::Stream => {
            let client = api.insert(ApiClient::connect(&context.server)?);
            let name = context.stream_name(0);
            let subjects = vec![publish_subject.clone()];
            client.recreate_stream(&StreamSpec {
                name: &name,
                subjects,
                storage: options.storage,
                max_consumers: None,
            })?;
            format!("{}.deliver", new_inbox())
        }
    };
    let epoch = Instant::now();
    let state = RunState::with_publishers(1);
    let mut subscriber = Workers::new(options.cpus.clone());
    let ready = Arc::new(Barrier::new(2));
    {
        let (server, state, ready) = (context.server.clone(), state.clone(), ready.clone());
        let (counters, receive_subject) = (context.counters.clone(), receive_subject.clone());
        subscriber.spawn("latency-sub".into(), move || {
            let subscribed = subscribe(&server, &receive_subject);
            ready.wait();
            let mut connection = subscribed?;
            let mut latency = LatencyRecorder::new();
            let report = receive(&mut connection, &Goal::AllPublished(state), None, &counters, |_, message| {
                if message.status().is_some() {
                    return Ok(false);
                }
                if let Some(sent) = read_stamp(message.payload, epoch) {
                    latency.record(sent.elapsed());
                }
                Ok(true)
            })?;
            Ok((report, latency))
        });
    }
    ready.wait();
    if let Some(client) = api.as_mut() {
        client.create_consumer(&ConsumerSpec {
            stream: &context.stream_name(0),
            durable: LATENCY_CONSUMER,
            ack: AckPolicy::None,
            max_ack_pending: options.max_ack_pending,
            deliver_subject: Some(receive_subject.clone()),
            deliver_group: None,
        })?;
    }
    let published = publish_stamped(context, &publish_subject, epoch);
    state.publisher_done(*published.as_ref().unwrap_or(&0));
    let (report, latency) = subscriber.join()?.pop().expect("one subscriber");
    let published = published?;
    if let Some(client) = api.as_mut() {
        client.delete_stream(&context.stream_name(0))?;
    }
    let start_to_last = report.last_at.map(|last| last.duration_since(epoch)).unwrap_or_default();
    Ok(Outcome {
        elapsed: start_to_last,
        published,
        received: report.received,
        acknowledged: 0,
        headline: Headline::Received,
        latency: Some(latency),
        memory: None,
        errors: report.shortfall.into_iter().collect(),
    })
}

fn subscribe(server: &ServerAddress, subject: &str) -> Result<Connection> {
    let mut connection = Connection::connect(server, "jetbench-latency-sub")?;
    connection.writer.subscribe(subject.as_bytes(), None, LATENCY_SID);
    connection.flush_round_trip(API_REQUEST_TIMEOUT)?;
    Ok(connection)
}

/// Publishes stamped messages on schedule; returns how many were sent.
fn publish_stamped(context: &Context, subject: &str, epoch: Instant) -> Result<u64> {
    let mut connection = Connection::connect(&context.server, "jetbench-latency-pub")?;
    let mut payload = context.payload();
    payload.resize(payload.len().max(TIMESTAMP_BYTES), 0);
    let limit: Limit = context.limit_for(0, 1);
    let start = Instant::now();
    let pacer = Pacer::new(context.options.rate.unwrap_or(DEFAULT_LATENCY_RATE), start);
    let mut sent = 0u64;
    while !limit.reached(sent, start, Instant::now()) {
        let due = pacer.intended_time(sent);
        if due > Instant::now() {
            connection.writer.flush()?;
            pacer.sleep_until_due(sent);
        }
        stamp(&mut payload, epoch, due);
        connection.writer.publish(subject.as_bytes(), None, &payload);
        connection.writer.flush_if_full()?;
        sent += 1;
        if sent % crate::limits::PROGRESS_BATCH_MESSAGES == 0 {
            context.counters.add_published(crate::limits::PROGRESS_BATCH_MESSAGES);
        }
    }
    connection.writer.flush()?;
    connection.flush_round_trip(DRAIN_TIMEOUT)?;
    Ok(sent)
}
