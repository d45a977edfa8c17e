//! Filling a fresh stream before a consume scenario (not measured).

use std::io::Write;
use std::sync::{Arc, Barrier};
use std::time::Duration;

use super::stream_publish::StreamPublisher;
use super::{Context, Limit};
use crate::cli::AckPolicy;
use crate::error::{BenchError, Result};
use crate::jetstream::{ApiClient, StreamSpec};
use crate::progress::Counters;

/// How long acks may take to be applied after the last one was sent.
const ACK_SETTLE_PATIENCE: Duration = Duration::from_secs(2);
/// Publish window used while prefilling.
const PREFILL_WINDOW: usize = 1024;

/// The stream a consume scenario reads.
pub struct FilledStream {
    pub name: String,
    pub messages: u64,
}

/// After an explicit-ack consume: a warning when the server still counts unacknowledged
/// deliveries once [`ACK_SETTLE_PATIENCE`] has passed (acks lost or not applied).
pub fn check_acks_settled(api: &mut ApiClient, stream: &str, consumer: &str, ack: AckPolicy) -> Result<Option<String>> {
    if ack != AckPolicy::Explicit {
        return Ok(None);
    }
    let pending = api.await_acks_settled(stream, consumer, ACK_SETTLE_PATIENCE)?;
    Ok((pending > 0).then(|| format!("{pending} deliveries still unacknowledged after {ACK_SETTLE_PATIENCE:?}")))
}

/// Recreates stream 0 and publishes `messages` into it, acknowledged.
pub fn prefill(context: &Context, api: &mut ApiClient, messages: u64) -> Result<FilledStream> {
    let (name, subject) = (context.stream_name(0), context.stream_subject(0));
    let storage = context.options.storage;
    api.recreate_stream(&StreamSpec { name: &name, subjects: vec![subject.clone()], storage, max_consumers: None })?;
    if !context.options.quiet {
        let _ = writeln!(std::io::stderr(), "jetbench: prefilling {name} with {messages} messages");
    }
    let publisher = StreamPublisher {
        server: context.server.clone(),
        subject: subject.clone(),
        payload: context.payload(),
        limit: Limit { count: Some(messages), duration: None },
        rate: None,
        window: PREFILL_WINDOW,
        counters: Arc::new(Counters::default()),
        msg_id_prefix: None,
    };
    let report = publisher.run(0, &Barrier::new(1))?;
    let stored = api.stream_message_count(&name)?;
    if report.failed > 0 || stored != messages {
        return Err(BenchError::PrefillIncomplete {
            stored,
            expected: messages,
            failed: report.failed,
            errors: report.errors,
        });
    }
    Ok(FilledStream { name, messages })
}
