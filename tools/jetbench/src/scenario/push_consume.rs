//! Push consume: a durable push consumer delivers a pre-filled stream to a deliver subject
//! that `--subscribers` connections subscribe to (as a queue group when more than one),
//! acking each message (`--ack explicit`) or not. Flow-control requests are answered.

use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Barrier};
use std::time::Instant;

use super::prefill::{check_acks_settled, prefill};
use super::pull_consume::consume_outcome;
use super::receive::{receive, Goal};
use super::{Context, Outcome};
use crate::cli::AckPolicy;
use crate::connection::{Connection, ServerAddress};
use crate::error::Result;
use crate::jetstream::{new_inbox, ApiClient, ConsumerSpec};
use crate::limits::API_REQUEST_TIMEOUT;
use crate::workers::Workers;

/// Name of the benchmark's durable push consumer.
const PUSH_CONSUMER: &str = "JETBENCH_PUSH";
/// Queue group of several push subscribers.
const DELIVER_GROUP: &str = "jetbench-push";
/// Subscription id of the deliver subject.
const DELIVER_SID: u64 = 1;

pub fn run(context: &Context) -> Result<Outcome> {
    let options = &context.options;
    let mut api = ApiClient::connect(&context.server)?;
    let stream = prefill(context, &mut api, context.total_count())?;
    let deliver_subject = format!("{}.push", new_inbox());
    let group = (options.subscribers > 1).then(|| DELIVER_GROUP.to_string());
    let consumed = Arc::new(AtomicU64::new(0));
    // The subscribers subscribe, then the consumer is created, then they all start.
    let subscribed = Arc::new(Barrier::new(options.subscribers + 1));
    let created = Arc::new(Barrier::new(options.subscribers + 1));
    let mut workers = Workers::new(options.cpus.clone());
    for index in 0..options.subscribers {
        let (server, deliver_subject, group) = (context.server.clone(), deliver_subject.clone(), group.clone());
        let goal = Goal::SharedTotal { total: stream.messages, consumed: consumed.clone() };
        let (subscribed, created, counters) = (subscribed.clone(), created.clone(), context.counters.clone());
        let (ack, deadline_after) = (options.ack, options.duration);
        workers.spawn(format!("push-{index}"), move || {
            let connected = subscribe(&server, index, &deliver_subject, group.as_deref());
            subscribed.wait();
            created.wait();
            let mut connection = connected?;
            let start = Instant::now();
            let deadline = deadline_after.map(|after| start + after);
            let report = receive(&mut connection, &goal, deadline, &counters, |writer, message| {
                if message.status().is_some() {
                    if let Some(flow_control_reply) = message.reply {
                        writer.publish(flow_control_reply, None, b"");
                    }
                    return Ok(false);
                }
                if let (AckPolicy::Explicit, Some(ack_subject)) = (ack, message.reply) {
                    writer.publish(ack_subject, None, b"");
                }
                Ok(true)
            })?;
            Ok((report, start))
        });
    }
    subscribed.wait();
    let creation = api.create_consumer(&ConsumerSpec {
        stream: &stream.name,
        durable: PUSH_CONSUMER,
        ack: options.ack,
        max_ack_pending: options.max_ack_pending,
        deliver_subject: Some(deliver_subject),
        deliver_group: group,
    });
    created.wait();
    creation?;
    let reports = workers.join()?;
    let unsettled = check_acks_settled(&mut api, &stream.name, PUSH_CONSUMER, options.ack)?;
    api.delete_stream(&stream.name)?;
    let mut outcome = consume_outcome(reports);
    outcome.errors.extend(unsettled);
    Ok(outcome)
}

fn subscribe(server: &ServerAddress, index: usize, subject: &str, group: Option<&str>) -> Result<Connection> {
    let mut connection = Connection::connect(server, &format!("jetbench-push-{index}"))?;
    connection.writer.subscribe(subject.as_bytes(), group.map(str::as_bytes), DELIVER_SID);
    connection.flush_round_trip(API_REQUEST_TIMEOUT)?;
    Ok(connection)
}
