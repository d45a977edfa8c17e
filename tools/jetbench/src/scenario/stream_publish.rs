//! JetStream publish: each publisher keeps up to `window` publishes awaiting their ack
//! (`window = 1` is the synchronous case), on one thread that alternates between writing a
//! batch and reading whatever acks arrived. Every ack is checked (`{"stream":..,"seq":..}`
//! or an error) and timed from its publish (its intended time in fixed-rate mode).

use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use super::request_reply::last_token;
use super::{Context, Headline, Limit, Outcome};
use crate::connection::{timeout, Connection, Flow, OutboundWriter, ServerAddress, Wait};
use crate::error::{BenchError, Result};
use crate::jetstream::{check_pub_ack, new_inbox, ApiClient, PubAck, StreamSpec, INBOX_SID};
use crate::latency::LatencyRecorder;
use crate::limits::{API_REQUEST_TIMEOUT, PROGRESS_BATCH_MESSAGES, PUBLISH_ACK_TIMEOUT};
use crate::pacing::Pacer;
use crate::progress::Counters;
use crate::protocol::append_decimal;
use crate::workers::Workers;

/// Publish-ack errors quoted in the results (the rest are only counted).
const QUOTED_ERRORS_MAX: usize = 5;
/// Status of a no-responders reply: no stream captures the subject.
const NO_RESPONDERS_STATUS: u16 = 503;

pub fn run(context: &Context, window: usize) -> Result<Outcome> {
    let options = &context.options;
    let mut api = ApiClient::connect(&context.server)?;
    for index in 0..options.streams {
        let (name, subject) = (context.stream_name(index), context.stream_subject(index));
        api.recreate_stream(&StreamSpec {
            name: &name,
            subjects: vec![subject],
            storage: options.storage,
            max_consumers: None,
        })?;
    }
    let gate = Arc::new(Barrier::new(options.publishers));
    let mut workers = Workers::new(options.cpus.clone());
    for index in 0..options.publishers {
        let publisher = StreamPublisher {
            server: context.server.clone(),
            subject: context.stream_subject(index % options.streams),
            payload: context.payload(),
            limit: context.limit_for(index, options.publishers),
            rate: context.rate_per_publisher(options.publishers),
            window,
            counters: context.counters.clone(),
            msg_id_prefix: options.msg_id.then(|| format!("jb{}-{index}-", std::process::id())),
        };
        let gate = gate.clone();
        workers.spawn(format!("js-pub-{index}"), move || publisher.run(index, &gate));
    }
    let reports = workers.join()?;
    let mut outcome = combine(reports);
    let stored: u64 =
        (0..options.streams).map(|index| api.stream_message_count(&context.stream_name(index))).sum::<Result<u64>>()?;
    if stored != outcome.acknowledged {
        outcome.errors.push(format!("streams hold {stored} messages, {} acks received", outcome.acknowledged));
    }
    if !options.keep_streams {
        for index in 0..options.streams {
            api.delete_stream(&context.stream_name(index))?;
        }
    }
    Ok(outcome)
}

fn combine(reports: Vec<PublishReport>) -> Outcome {
    let mut latency = LatencyRecorder::new();
    let mut errors = Vec::new();
    for report in &reports {
        latency.merge(&report.latency);
        errors.extend(report.errors.iter().cloned());
    }
    let failed: u64 = reports.iter().map(|report| report.failed).sum();
    if failed > 0 {
        errors.push(format!("{failed} publishes were answered with an error"));
    }
    Outcome {
        elapsed: reports.iter().map(|report| report.elapsed).max().unwrap_or_default(),
        published: reports.iter().map(|report| report.sent).sum(),
        received: 0,
        acknowledged: reports.iter().map(|report| report.acked - report.failed).sum(),
        headline: Headline::Acknowledged,
        latency: Some(latency),
        memory: None,
        errors,
    }
}

/// What one JetStream publisher did.
pub struct PublishReport {
    pub sent: u64,
    /// Replies received, successful or not.
    pub acked: u64,
    pub failed: u64,
    pub elapsed: Duration,
    pub latency: LatencyRecorder,
    pub errors: Vec<String>,
}

/// One JetStream publisher with its window.
pub struct StreamPublisher {
    pub server: ServerAddress,
    pub subject: String,
    pub payload: Vec<u8>,
    pub limit: Limit,
    pub rate: Option<u64>,
    pub window: usize,
    pub counters: Arc<Counters>,
    /// When set, each publish carries `Nats-Msg-Id: <prefix><sequence>`.
    pub msg_id_prefix: Option<String>,
}

/// The publisher's bookkeeping between the write and read halves of its loop.
struct InFlight {
    /// (token, time counted from) of each unacknowledged publish, by `token % window`.
    sent_at: Vec<Option<(u64, Instant)>>,
    sent: u64,
    report: PublishReport,
}

impl StreamPublisher {
    pub fn run(self, index: usize, gate: &Barrier) -> Result<PublishReport> {
        let inbox = new_inbox();
        let connected = self.connect(index, &inbox);
        gate.wait();
        let mut connection = connected?;
        let start = Instant::now();
        let pacer = self.rate.map(|rate| Pacer::new(rate, start));
        let mut flight = InFlight {
            sent_at: vec![None; self.window],
            sent: 0,
            report: PublishReport {
                sent: 0,
                acked: 0,
                failed: 0,
                elapsed: Duration::ZERO,
                latency: LatencyRecorder::new(),
                errors: Vec::new(),
            },
        };
        let mut framer = Framer::new(&self.subject, &inbox, self.msg_id_prefix.as_deref());
        let mut reported = 0u64;
        let mut last_ack_at = Instant::now();
        loop {
            let (limit_hit, next_due) =
                self.send_batch(&mut connection, &mut flight, &mut framer, start, pacer.as_ref());
            connection.writer.flush()?;
            let in_flight = flight.sent - flight.report.acked;
            if limit_hit && in_flight == 0 {
                break;
            }
            let ack_deadline = last_ack_at + PUBLISH_ACK_TIMEOUT;
            let wait = if limit_hit || in_flight >= self.window as u64 {
                Wait::Until(ack_deadline)
            } else {
                next_due.map_or(Wait::NoWait, |due| Wait::Until(due.min(ack_deadline)))
            };
            let now = Instant::now();
            if read_acks(&mut connection, &mut flight, wait)? > 0 || in_flight == 0 {
                last_ack_at = now;
            } else if now >= ack_deadline {
                return Err(timeout("publish acks", PUBLISH_ACK_TIMEOUT));
            }
            if flight.report.acked - reported >= PROGRESS_BATCH_MESSAGES {
                self.counters.add_published(flight.report.acked - reported);
                reported = flight.report.acked;
            }
        }
        self.counters.add_published(flight.report.acked - reported);
        flight.report.sent = flight.sent;
        flight.report.elapsed = start.elapsed();
        Ok(flight.report)
    }

    fn connect(&self, index: usize, inbox: &str) -> Result<Connection> {
        let mut connection = Connection::connect(&self.server, &format!("jetbench-js-pub-{index}"))?;
        connection.writer.subscribe(format!("{inbox}.*").as_bytes(), None, INBOX_SID);
        connection.flush_round_trip(API_REQUEST_TIMEOUT)?;
        Ok(connection)
    }

    /// Buffers publishes while the window has room and the limit and schedule allow.
    /// Returns whether the limit was reached and, when paced, when the next one is due.
    fn send_batch(
        &self,
        connection: &mut Connection,
        flight: &mut InFlight,
        framer: &mut Framer,
        start: Instant,
        pacer: Option<&Pacer>,
    ) -> (bool, Option<Instant>) {
        while flight.sent - flight.report.acked < self.window as u64 {
            let now = Instant::now();
            if self.limit.reached(flight.sent, start, now) {
                return (true, None);
            }
            let counted_from = match pacer {
                Some(pacer) => {
                    let due = pacer.intended_time(flight.sent);
                    if due > now {
                        return (false, Some(due));
                    }
                    due
                }
                None => now,
            };
            framer.publish(&mut connection.writer, flight.sent, &self.payload);
            let slot = (flight.sent % self.window as u64) as usize;
            flight.sent_at[slot] = Some((flight.sent, counted_from));
            flight.sent += 1;
        }
        (false, None)
    }
}

/// Encodes this publisher's publishes: reply `<inbox>.<token>` and, with a message-id
/// prefix, a `Nats-Msg-Id: <prefix><token>` header. Reuses its buffers across messages.
struct Framer {
    subject: Vec<u8>,
    inbox: Vec<u8>,
    msg_id_prefix: Option<Vec<u8>>,
    reply: Vec<u8>,
    header: Vec<u8>,
}

impl Framer {
    fn new(subject: &str, inbox: &str, msg_id_prefix: Option<&str>) -> Self {
        Self {
            subject: subject.as_bytes().to_vec(),
            inbox: inbox.as_bytes().to_vec(),
            msg_id_prefix: msg_id_prefix.map(|prefix| prefix.as_bytes().to_vec()),
            reply: Vec::new(),
            header: Vec::new(),
        }
    }

    fn publish(&mut self, writer: &mut OutboundWriter, token: u64, payload: &[u8]) {
        self.reply.clear();
        self.reply.extend_from_slice(&self.inbox);
        self.reply.push(b'.');
        append_decimal(&mut self.reply, token);
        let Some(prefix) = &self.msg_id_prefix else {
            writer.publish(&self.subject, Some(&self.reply), payload);
            return;
        };
        self.header.clear();
        self.header.extend_from_slice(b"NATS/1.0\r\nNats-Msg-Id: ");
        self.header.extend_from_slice(prefix);
        append_decimal(&mut self.header, token);
        self.header.extend_from_slice(b"\r\n\r\n");
        writer.publish_with_header(&self.subject, Some(&self.reply), &self.header, payload);
    }
}

/// Reads the acks that arrive per `wait`; returns how many replies were handled.
fn read_acks(connection: &mut Connection, flight: &mut InFlight, wait: Wait) -> Result<usize> {
    let window = flight.sent_at.len() as u64;
    connection.poll(wait, |_, message| {
        if message.status() == Some(NO_RESPONDERS_STATUS) {
            let subject = String::from_utf8_lossy(message.subject).into_owned();
            return Err(BenchError::NoResponders { subject: format!("publish (reply {subject})") });
        }
        let report = &mut flight.report;
        report.acked += 1;
        match check_pub_ack(message.payload) {
            PubAck::Stored { .. } => {
                let token = last_token(message.subject);
                let slot = token.map(|token| (token % window) as usize);
                if let Some((sent_token, at)) = slot.and_then(|slot| flight.sent_at[slot].take()) {
                    if Some(sent_token) == token {
                        report.latency.record(at.elapsed());
                    }
                }
            }
            PubAck::Failed { description } => {
                report.failed += 1;
                if report.errors.len() < QUOTED_ERRORS_MAX {
                    report.errors.push(description);
                }
            }
        }
        Ok(Flow::Continue)
    })
}
