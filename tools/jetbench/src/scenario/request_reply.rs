//! Request-reply: `--publishers` requesters, each with one request in flight, against
//! `--subscribers` built-in responders sharing a queue group. Reports requests/s and the
//! round-trip latency (from the intended send time in fixed-rate mode).

use std::sync::atomic::Ordering;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use super::receive::{receive, Goal};
use super::{Context, Headline, Limit, Outcome, RunState};
use crate::connection::{timeout, Connection, Flow, ServerAddress, Wait};
use crate::error::{BenchError, Result};
use crate::jetstream::{new_inbox, INBOX_SID};
use crate::latency::LatencyRecorder;
use crate::limits::{API_REQUEST_TIMEOUT, PROGRESS_BATCH_MESSAGES};
use crate::pacing::Pacer;
use crate::progress::Counters;
use crate::protocol::{append_decimal, parse_decimal};
use crate::workers::Workers;

/// Queue group the responders share.
const RESPONDER_QUEUE: &[u8] = b"jetbench-responders";
/// Status of a no-responders reply.
const NO_RESPONDERS_STATUS: u16 = 503;
/// Subscription id of a responder's subscription.
const RESPONDER_SID: u64 = 1;

pub fn run(context: &Context) -> Result<Outcome> {
    let (requesters, responders) = (context.options.publishers, context.options.subscribers);
    let state = RunState::with_publishers(requesters);
    let gate = Arc::new(Barrier::new(requesters + responders));
    let subject = format!("{}.request", context.options.subject);

    let mut answering = Workers::new(context.options.cpus.clone());
    for index in 0..responders {
        let (server, subject) = (context.server.clone(), subject.clone());
        let (gate, state, counters) = (gate.clone(), state.clone(), Arc::new(Counters::default()));
        answering.spawn(format!("responder-{index}"), move || {
            let subscribed = subscribe_responder(&server, index, &subject);
            gate.wait();
            let mut connection = subscribed?;
            receive(&mut connection, &Goal::UntilStopped(state), None, &counters, |writer, message| {
                if let Some(reply) = message.reply {
                    writer.publish(reply, None, message.payload);
                }
                Ok(true)
            })
        });
    }
    let mut asking = Workers::new(context.options.cpus.clone());
    for index in 0..requesters {
        let requester = Requester {
            server: context.server.clone(),
            subject: subject.clone(),
            payload: context.payload(),
            limit: context.limit_for(index, requesters),
            rate: context.rate_per_publisher(requesters),
            counters: context.counters.clone(),
        };
        let gate = gate.clone();
        asking.spawn(format!("requester-{index}"), move || requester.run(index, &gate));
    }
    let asked = asking.join();
    state.stop.store(true, Ordering::SeqCst);
    let answered = answering.join()?;
    let asked = asked?;

    let mut latency = LatencyRecorder::new();
    asked.iter().for_each(|(_, _, recorder)| latency.merge(recorder));
    let completed = asked.iter().map(|(completed, _, _)| completed).sum();
    Ok(Outcome {
        elapsed: asked.iter().map(|(_, elapsed, _)| *elapsed).max().unwrap_or_default(),
        published: completed,
        received: answered.iter().map(|report| report.received).sum(),
        acknowledged: completed,
        headline: Headline::Acknowledged,
        latency: Some(latency),
        memory: None,
        errors: Vec::new(),
    })
}

fn subscribe_responder(server: &ServerAddress, index: usize, subject: &str) -> Result<Connection> {
    let mut connection = Connection::connect(server, &format!("jetbench-responder-{index}"))?;
    connection.writer.subscribe(subject.as_bytes(), Some(RESPONDER_QUEUE), RESPONDER_SID);
    connection.flush_round_trip(API_REQUEST_TIMEOUT)?;
    Ok(connection)
}

struct Requester {
    server: ServerAddress,
    subject: String,
    payload: Vec<u8>,
    limit: Limit,
    rate: Option<u64>,
    counters: Arc<Counters>,
}

impl Requester {
    /// Sends requests one at a time; returns (completed, elapsed, latencies).
    fn run(self, index: usize, gate: &Barrier) -> Result<(u64, Duration, LatencyRecorder)> {
        let inbox = new_inbox();
        let connected = self.connect(index, &inbox);
        gate.wait();
        let mut connection = connected?;
        let mut latency = LatencyRecorder::new();
        let mut reply = Vec::with_capacity(inbox.len() + 24);
        let start = Instant::now();
        let pacer = self.rate.map(|rate| Pacer::new(rate, start));
        let mut completed = 0u64;
        while !self.limit.reached(completed, start, Instant::now()) {
            let intended = match &pacer {
                Some(pacer) => {
                    pacer.sleep_until_due(completed);
                    pacer.intended_time(completed)
                }
                None => Instant::now(),
            };
            reply.clear();
            reply.extend_from_slice(inbox.as_bytes());
            reply.push(b'.');
            append_decimal(&mut reply, completed);
            connection.writer.publish(self.subject.as_bytes(), Some(&reply), &self.payload);
            connection.writer.flush()?;
            await_reply(&mut connection, completed)?;
            latency.record(intended.elapsed());
            completed += 1;
            if completed % PROGRESS_BATCH_MESSAGES == 0 {
                self.counters.add_published(PROGRESS_BATCH_MESSAGES);
            }
        }
        self.counters.add_published(completed % PROGRESS_BATCH_MESSAGES);
        Ok((completed, start.elapsed(), latency))
    }

    fn connect(&self, index: usize, inbox: &str) -> Result<Connection> {
        let mut connection = Connection::connect(&self.server, &format!("jetbench-requester-{index}"))?;
        connection.writer.subscribe(format!("{inbox}.*").as_bytes(), None, INBOX_SID);
        connection.flush_round_trip(API_REQUEST_TIMEOUT)?;
        Ok(connection)
    }
}

/// Reads until the reply whose last subject token is `token` arrived.
fn await_reply(connection: &mut Connection, token: u64) -> Result<()> {
    let deadline = Instant::now() + API_REQUEST_TIMEOUT;
    let mut answered = false;
    while !answered {
        if Instant::now() >= deadline {
            return Err(timeout(&format!("the reply to request {token}"), API_REQUEST_TIMEOUT));
        }
        connection.poll(Wait::Until(deadline), |_, message| {
            if last_token(message.subject) != Some(token) {
                return Ok(Flow::Continue);
            }
            if message.status() == Some(NO_RESPONDERS_STATUS) {
                let subject = String::from_utf8_lossy(message.subject).into_owned();
                return Err(BenchError::NoResponders { subject });
            }
            answered = true;
            Ok(Flow::Stop)
        })?;
    }
    Ok(())
}

/// The numeric last token of a subject (`_INBOX.x.42` gives 42).
pub fn last_token(subject: &[u8]) -> Option<u64> {
    let dot = memchr::memrchr(b'.', subject)?;
    parse_decimal(&subject[dot + 1..])
}
