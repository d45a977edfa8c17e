//! Pub/sub fan-out: `--subscribers` plain subscribers each receive every message of
//! `--publishers` core publishers. The headline is all subscribers' messages/s together.

use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use super::core_publish::PublishJob;
use super::receive::{receive, Goal};
use super::{Context, Headline, Outcome, RunState};
use crate::connection::{Connection, ServerAddress};
use crate::error::Result;
use crate::limits::API_REQUEST_TIMEOUT;
use crate::workers::Workers;

/// Subscription id of a fan-out subscriber's only subscription.
const SUBSCRIPTION_SID: u64 = 1;

/// How long subscribers on `--sub-url` give their interest to reach the publishers' server.
const INTEREST_CROSSING: Duration = Duration::from_secs(1);

pub fn run(context: &Context) -> Result<Outcome> {
    let (publishers, subscribers) = (context.options.publishers, context.options.subscribers);
    let state = RunState::with_publishers(publishers);
    let gate = Arc::new(Barrier::new(publishers + subscribers));
    let subject = context.options.subject.clone();
    let subscriber_server = match &context.options.sub_url {
        Some(url) => ServerAddress::parse(url)?,
        None => context.server.clone(),
    };
    let crossing = context.options.sub_url.is_some();

    let mut receivers = Workers::new(context.options.cpus.clone());
    for index in 0..subscribers {
        let server = subscriber_server.clone();
        let (gate, state, counters) = (gate.clone(), state.clone(), context.counters.clone());
        let subject = subject.clone();
        receivers.spawn(format!("sub-{index}"), move || {
            let subscribed = subscribe(&server, index, &subject);
            if crossing {
                // Interest reaches another server asynchronously (a leaf's LS+, a route's RS+).
                std::thread::sleep(INTEREST_CROSSING);
            }
            gate.wait();
            let mut connection = subscribed?;
            let start = Instant::now();
            let goal = Goal::AllPublished(state);
            let report = receive(&mut connection, &goal, None, &counters, |_, _| Ok(true))?;
            let elapsed = report.last_at.map_or(Duration::ZERO, |last| last.duration_since(start));
            Ok((report, elapsed))
        });
    }
    let mut senders = Workers::new(context.options.cpus.clone());
    for index in 0..publishers {
        let job = PublishJob::new(context, index, publishers, subject.clone());
        let (gate, state) = (gate.clone(), state.clone());
        senders.spawn(format!("pub-{index}"), move || job.run(&gate, &state));
    }
    let sent = senders.join()?;
    let received = receivers.join()?;
    let errors = received.iter().filter_map(|(report, _)| report.shortfall.clone()).collect();
    Ok(Outcome {
        elapsed: received.iter().map(|(_, elapsed)| *elapsed).max().unwrap_or_default(),
        published: sent.iter().map(|report| report.sent).sum(),
        received: received.iter().map(|(report, _)| report.received).sum(),
        acknowledged: 0,
        headline: Headline::Received,
        latency: None,
        memory: None,
        errors,
    })
}

fn subscribe(server: &ServerAddress, index: usize, subject: &str) -> Result<Connection> {
    let mut connection = Connection::connect(server, &format!("jetbench-sub-{index}"))?;
    connection.writer.subscribe(subject.as_bytes(), None, SUBSCRIPTION_SID);
    connection.flush_round_trip(API_REQUEST_TIMEOUT)?;
    Ok(connection)
}
