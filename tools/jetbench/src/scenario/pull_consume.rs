//! Pull consume: `--subscribers` connections share one durable pull consumer on a pre-filled
//! stream, each keeping about two `--batch` pull requests open (re-pulling at half a batch,
//! as async-nats' `messages()` does), acking each message (`--ack explicit`) or not.

use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use super::prefill::{check_acks_settled, prefill};
use super::receive::{receive, Goal, ReceiveReport};
use super::{Context, Headline, Outcome};
use crate::cli::AckPolicy;
use crate::connection::{Connection, OutboundWriter, ServerAddress};
use crate::error::Result;
use crate::jetstream::{new_inbox, ApiClient, ConsumerSpec, INBOX_SID};
use crate::limits::{API_REQUEST_TIMEOUT, PULL_REQUEST_EXPIRES};
use crate::protocol::{parse_decimal, Message};
use crate::workers::Workers;

/// Name of the benchmark's durable pull consumer.
const PULL_CONSUMER: &str = "JETBENCH_PULL";
const STATUS_HEARTBEAT: u16 = 100;
const STATUS_NO_MESSAGES: u16 = 404;
const STATUS_REQUEST_TIMEOUT: u16 = 408;

pub fn run(context: &Context) -> Result<Outcome> {
    let options = &context.options;
    let mut api = ApiClient::connect(&context.server)?;
    let stream = prefill(context, &mut api, context.total_count())?;
    api.create_consumer(&ConsumerSpec {
        stream: &stream.name,
        durable: PULL_CONSUMER,
        ack: options.ack,
        max_ack_pending: options.max_ack_pending,
        deliver_subject: None,
        deliver_group: None,
    })?;
    let consumed = Arc::new(AtomicU64::new(0));
    let gate = Arc::new(Barrier::new(options.subscribers));
    let mut workers = Workers::new(options.cpus.clone());
    for index in 0..options.subscribers {
        let puller = Puller {
            server: context.server.clone(),
            next_subject: format!("$JS.API.CONSUMER.MSG.NEXT.{}.{PULL_CONSUMER}", stream.name),
            batch: options.batch as u64,
            ack: options.ack,
        };
        let goal = Goal::SharedTotal { total: stream.messages, consumed: consumed.clone() };
        let deadline_after = options.duration;
        let (gate, counters) = (gate.clone(), context.counters.clone());
        workers.spawn(format!("puller-{index}"), move || {
            let connected = puller.connect(index);
            gate.wait();
            let (mut connection, reply) = connected?;
            let start = Instant::now();
            let deadline = deadline_after.map(|after| start + after);
            let report = puller.consume(&mut connection, &reply, &goal, deadline, &counters)?;
            Ok((report, start))
        });
    }
    let reports = workers.join()?;
    let unsettled = check_acks_settled(&mut api, &stream.name, PULL_CONSUMER, options.ack)?;
    api.delete_stream(&stream.name)?;
    let mut outcome = consume_outcome(reports);
    outcome.errors.extend(unsettled);
    Ok(outcome)
}

/// Combines consumers' reports: elapsed runs from the start to the last message anyone got.
pub fn consume_outcome(reports: Vec<(ReceiveReport, Instant)>) -> Outcome {
    let elapsed = reports
        .iter()
        .filter_map(|(report, start)| report.last_at.map(|last| last.duration_since(*start)))
        .max()
        .unwrap_or(Duration::ZERO);
    Outcome {
        elapsed,
        published: 0,
        received: reports.iter().map(|(report, _)| report.received).sum(),
        acknowledged: 0,
        headline: Headline::Received,
        latency: None,
        memory: None,
        errors: reports.iter().filter_map(|(report, _)| report.shortfall.clone()).collect(),
    }
}

struct Puller {
    server: ServerAddress,
    next_subject: String,
    batch: u64,
    ack: AckPolicy,
}

impl Puller {
    fn connect(&self, index: usize) -> Result<(Connection, String)> {
        let mut connection = Connection::connect(&self.server, &format!("jetbench-puller-{index}"))?;
        let inbox = new_inbox();
        connection.writer.subscribe(format!("{inbox}.*").as_bytes(), None, INBOX_SID);
        connection.flush_round_trip(API_REQUEST_TIMEOUT)?;
        Ok((connection, format!("{inbox}.pull")))
    }

    fn consume(
        &self,
        connection: &mut Connection,
        reply: &str,
        goal: &Goal,
        deadline: Option<Instant>,
        counters: &crate::progress::Counters,
    ) -> Result<ReceiveReport> {
        let mut outstanding = 0u64;
        self.pull(&mut connection.writer, reply, &mut outstanding);
        self.pull(&mut connection.writer, reply, &mut outstanding);
        connection.writer.flush()?;
        receive(connection, goal, deadline, counters, |writer, message| {
            let counted = self.on_message(writer, &message, &mut outstanding);
            if outstanding <= self.batch {
                self.pull(writer, reply, &mut outstanding);
            }
            Ok(counted)
        })
    }

    /// Accounts one delivery or status; returns whether it was a stream message.
    fn on_message(&self, writer: &mut OutboundWriter, message: &Message<'_>, outstanding: &mut u64) -> bool {
        match message.status() {
            None => {
                *outstanding = outstanding.saturating_sub(1);
                if let (AckPolicy::Explicit, Some(ack_subject)) = (self.ack, message.reply) {
                    writer.publish(ack_subject, None, b"");
                }
                true
            }
            Some(STATUS_HEARTBEAT) => false,
            Some(STATUS_NO_MESSAGES | STATUS_REQUEST_TIMEOUT) => {
                let unfilled =
                    message.header_value(b"Nats-Pending-Messages").and_then(parse_decimal).unwrap_or(self.batch);
                *outstanding = outstanding.saturating_sub(unfilled);
                false
            }
            Some(_) => {
                *outstanding = outstanding.saturating_sub(self.batch);
                false
            }
        }
    }

    fn pull(&self, writer: &mut OutboundWriter, reply: &str, outstanding: &mut u64) {
        let expires = PULL_REQUEST_EXPIRES.as_nanos() as u64;
        let body = format!(r#"{{"batch":{},"expires":{expires}}}"#, self.batch);
        writer.publish(self.next_subject.as_bytes(), Some(reply.as_bytes()), body.as_bytes());
        *outstanding += self.batch;
    }
}
