//! `/healthz`, as nats-server 2.15.1 answers it on a server without a cluster: 500
//! while the server starts (its shards are still recovering their streams); `ok` with
//! 200; 400 for a stream asked without its account (or a consumer without its stream);
//! 404 for an account, stream or consumer not found; 503 `unavailable` when JetStream is
//! configured but the shards do not answer within [`limits::MONITOR_HEALTH_TIMEOUT`], or
//! when a stream it checks is stopped (its storage failed: fail-stop) or could not be
//! recovered. `js-server-only` skips JetStream; `js-enabled-only` checks only that it
//! answers; `js-meta-only` checks everything (a single server has no meta group, and
//! nats-server then falls through to the stream checks too). `details=true` lists every
//! problem found under `errors` (status `error`) instead of the first under `error`.
//!
//! The stream checks run on the shards (`jetstream/service/health.rs`); this file
//! decides and words the answer. nats-server's single-server check walks the store
//! directory, so it sees file streams only, and an account only once its directory
//! exists (its first file stream made it): here too, an account is found while it has a
//! file stream, and memory streams are not checked (asked by name, they are not found).
//! (nats-server keeps finding an account whose file streams were all deleted, its
//! directory being left; jetcore does not.)

use serde::Serialize;

use super::http::{go_json, Request, Response};
use super::snapshot::{ShardSnapshot, SnapshotQuery};
use super::Monitor;
use crate::jetstream::service::{StreamCondition, StreamHealth};
use crate::limits;
use crate::protocol::go_quote;

/// The answer's body, with nats-server's field names and order.
#[derive(Debug, Serialize)]
struct HealthStatus {
    status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    errors: Vec<HealthError>,
    #[serde(skip)]
    code: u16,
}

#[derive(Debug, Serialize)]
struct HealthError {
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(skip_serializing_if = "str::is_empty")]
    account: String,
    #[serde(skip_serializing_if = "str::is_empty")]
    stream: String,
    #[serde(skip_serializing_if = "str::is_empty")]
    consumer: String,
    error: String,
}

/// What was asked (`js-enabled` is the deprecated spelling of `js-enabled-only`).
struct Asked<'a> {
    enabled_only: bool,
    server_only: bool,
    details: bool,
    account: &'a str,
    stream: &'a str,
    consumer: &'a str,
}

pub fn render(monitor: &Monitor, request: &Request) -> Response {
    let asked = match read_options(request) {
        Ok(asked) => asked,
        Err(refusal) => return refusal,
    };
    let mut health = HealthStatus { status: "ok", error: None, errors: Vec::new(), code: 200 };
    check(monitor, &asked, &mut health);
    if asked.details {
        health.status = if health.errors.is_empty() { "ok" } else { "error" };
    }
    if health.code == 200 && (health.error.is_some() || !health.errors.is_empty()) {
        health.code = 503;
    }
    if health.code != 200 {
        tracing::warn!("Healthcheck failed: {:?}", health.error.as_deref().unwrap_or("see errors"));
    }
    let body = serde_json::to_string(&health).unwrap_or_default();
    Response::json(health.code, go_json(body))
}

fn read_options(request: &Request) -> Result<Asked<'_>, Response> {
    let deprecated = request.boolean("js-enabled")?;
    let enabled_only = request.boolean("js-enabled-only")? || deprecated;
    let server_only = request.boolean("js-server-only")?;
    request.boolean("js-meta-only")?;
    let details = request.boolean("details")?;
    let (account, stream, consumer) = (request.text("account"), request.text("stream"), request.text("consumer"));
    Ok(Asked { enabled_only, server_only, details, account, stream, consumer })
}

/// What nats-server 2.15.1 answers (500) while it starts, before its client listener is
/// up (it recovers its streams first): recorded by polling it through a start.
const NOT_READY: &str = "failed to be ready for connections after 1ms: server";

fn check(monitor: &Monitor, asked: &Asked, health: &mut HealthStatus) {
    if !monitor.identity.ready.load(std::sync::atomic::Ordering::Acquire) {
        return fail(health, asked, 500, "error", HealthError::new("CONNECTION", NOT_READY.into()));
    }
    if asked.account.is_empty() && !asked.stream.is_empty() {
        let text = format!("{} must not be empty when checking stream health", go_quote(b"account"));
        return fail(health, asked, 400, "error", HealthError::new("BAD_REQUEST", text));
    }
    if asked.stream.is_empty() && !asked.consumer.is_empty() {
        let text = format!("{} must not be empty when checking consumer health", go_quote(b"stream"));
        return fail(health, asked, 400, "error", HealthError::new("BAD_REQUEST", text));
    }
    if asked.server_only || !monitor.options.jetstream {
        return;
    }
    let query = SnapshotQuery { health: true, ..SnapshotQuery::default() };
    let Some(snapshots) = monitor.gather_within(query, limits::MONITOR_HEALTH_TIMEOUT) else {
        let wait = limits::MONITOR_HEALTH_TIMEOUT.as_millis();
        let text = format!("JetStream not available: the shards did not answer within {wait} ms");
        return fail(health, asked, 503, "unavailable", HealthError::new("JETSTREAM", text));
    };
    if asked.enabled_only {
        return;
    }
    check_streams(monitor, &snapshots, asked, health);
}

/// nats-server's single-server walk: accounts by name, their streams by name; the first
/// problem ends the walk unless details are asked for.
fn check_streams(monitor: &Monitor, snapshots: &[ShardSnapshot], asked: &Asked, health: &mut HealthStatus) {
    let accounts = &monitor.options.accounts;
    let mut names: Vec<&str> = snapshots
        .iter()
        .flat_map(|snapshot| &snapshot.accounts)
        .filter(|entry| entry.health.iter().any(|stream| !stream.memory))
        .map(|entry| accounts.name_of(entry.account))
        .collect();
    names.sort_unstable();
    names.dedup();
    let (mut account_found, mut stream_found, mut consumer_found) = (false, false, false);
    for name in names.into_iter().filter(|name| asked.account.is_empty() || *name == asked.account) {
        account_found = true;
        for stream in streams_of(snapshots, monitor, name) {
            if !asked.stream.is_empty() && stream.name != asked.stream {
                continue;
            }
            stream_found = !asked.stream.is_empty();
            let problem = match &stream.condition {
                StreamCondition::Running => None,
                StreamCondition::Stopped(cause) => {
                    Some(format!("JetStream stream '{name} > {}' is not current: {cause}", stream.name))
                }
                StreamCondition::NotRecovered => {
                    Some(format!("JetStream stream '{name} > {}' could not be recovered", stream.name))
                }
            };
            if let Some(text) = problem {
                let error = HealthError {
                    account: name.into(),
                    stream: stream.name.clone(),
                    ..HealthError::new("STREAM", text)
                };
                if !asked.details {
                    return fail(health, asked, 503, "unavailable", error);
                }
                health.errors.push(error);
                continue;
            }
            if stream_found {
                consumer_found = stream.consumers.iter().any(|consumer| consumer == asked.consumer);
                break;
            }
        }
    }
    let (account, stream, consumer) =
        (go_quote(asked.account.as_bytes()), go_quote(asked.stream.as_bytes()), go_quote(asked.consumer.as_bytes()));
    let not_found = if !asked.account.is_empty() && !account_found {
        HealthError {
            account: asked.account.into(),
            ..HealthError::new("ACCOUNT", format!("JetStream account {account} not found"))
        }
    } else if !asked.stream.is_empty() && !stream_found {
        let text = format!("JetStream stream {stream} not found on account {account}");
        HealthError { account: asked.account.into(), stream: asked.stream.into(), ..HealthError::new("STREAM", text) }
    } else if !asked.consumer.is_empty() && !consumer_found {
        let text = format!("JetStream consumer {consumer} not found for stream {stream} on account {account}");
        HealthError {
            account: asked.account.into(),
            stream: asked.stream.into(),
            consumer: asked.consumer.into(),
            ..HealthError::new("CONSUMER", text)
        }
    } else {
        return;
    };
    // A not-found answer replaces whatever the walk listed, as nats-server's does.
    health.errors.clear();
    fail(health, asked, 404, "unavailable", not_found);
}

/// Every shard's streams of account `name`, by name.
fn streams_of<'a>(snapshots: &'a [ShardSnapshot], monitor: &Monitor, name: &str) -> Vec<&'a StreamHealth> {
    let accounts = &monitor.options.accounts;
    let mut streams: Vec<&StreamHealth> = snapshots
        .iter()
        .flat_map(|snapshot| &snapshot.accounts)
        .filter(|entry| accounts.name_of(entry.account) == name)
        .flat_map(|entry| &entry.health)
        .filter(|stream| !stream.memory)
        .collect();
    streams.sort_by(|a, b| a.name.cmp(&b.name));
    streams
}

/// Records a failed check: under `error` with `status`, or (details) in `errors`.
fn fail(health: &mut HealthStatus, asked: &Asked, code: u16, status: &'static str, error: HealthError) {
    health.code = code;
    if asked.details {
        health.errors.push(error);
    } else {
        health.status = status;
        health.error = Some(error.error);
    }
}

impl HealthError {
    fn new(kind: &'static str, error: String) -> HealthError {
        HealthError { kind, account: String::new(), stream: String::new(), consumer: String::new(), error }
    }
}
