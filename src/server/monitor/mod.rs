//! Monitoring over HTTP (`-m PORT`): `/healthz`, `/varz`, `/connz`, `/subsz`, `/jsz` with
//! nats-server's field names for what the NATS tools read, and `/metrics` in Prometheus
//! text format. Served by plain threads (one per request, at most
//! `MONITOR_REQUESTS_IN_FLIGHT_MAX`), off the shards, so a busy shard never delays a
//! health check; what only the shards know is gathered through shard 0, which asks every
//! shard over the mesh (see `snapshot.rs`).

pub mod accountz;
pub mod connz;
pub mod healthz;
pub mod http;
pub mod jsz;
pub mod leafz;
pub mod metrics;
pub mod process;
pub mod snapshot;
pub mod subsz;
pub mod varz;

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime};

use self::http::Request;
use self::snapshot::{ShardSnapshot, SnapshotQuery};
use super::control::{Control, ControlMessage};
use super::node::ServerIdentity;
use super::options::Options;
use crate::limits;
use crate::shard::ShardId;

/// What every endpoint may need: the fixed facts and a way to ask the shards.
pub struct Monitor {
    pub identity: Arc<ServerIdentity>,
    pub options: Options,
    pub control: Arc<Control>,
    pub started: SystemTime,
    pub cpu: process::CpuGauge,
    /// Requests answered per endpoint (`/varz`'s `http_req_stats`). The monitor's own
    /// threads share it; no shard touches it.
    requests: Mutex<BTreeMap<String, u64>>,
}

impl Monitor {
    fn count_request(&self, path: &str) {
        if let Ok(mut requests) = self.requests.lock() {
            *requests.entry(path.to_string()).or_default() += 1;
        }
    }

    pub fn requests_by_path(&self) -> BTreeMap<String, u64> {
        self.requests.lock().map(|requests| requests.clone()).unwrap_or_default()
    }

    /// Every shard's snapshot, or `None` when the shards did not answer in time.
    pub fn gather(&self, query: SnapshotQuery) -> Option<Vec<ShardSnapshot>> {
        self.gather_within(query, limits::MONITOR_GATHER_TIMEOUT)
    }

    pub fn gather_within(&self, query: SnapshotQuery, wait: Duration) -> Option<Vec<ShardSnapshot>> {
        let (reply, answer) = mpsc::channel();
        self.control.post(ShardId(0), ControlMessage::Gather { query, reply });
        answer.recv_timeout(wait).ok()
    }
}

/// The monitoring port, bound at start-up before the shards start, so a port in use is
/// refused at once. No `SO_REUSEPORT` (std sets only `SO_REUSEADDR`): no other process can
/// listen on it while this one does.
pub fn bind(host: &str, port: u16) -> std::io::Result<TcpListener> {
    TcpListener::bind((host, port))
}

/// The certificate the HTTPS monitor presents to new connections; a reload replaces it.
pub type CertificateSlot = Arc<Mutex<Arc<rustls::ServerConfig>>>;

/// A monitoring port served by a thread of its own, until [`MonitorListener::stop`] (an
/// embedded server's shutdown) or the process's exit. Requests already being answered
/// finish on their own threads.
pub struct MonitorListener {
    address: SocketAddr,
    stopping: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    certificate: Option<CertificateSlot>,
}

impl MonitorListener {
    /// The HTTPS monitor's certificate, for the reloader; `None` for plain HTTP.
    pub fn certificate(&self) -> Option<CertificateSlot> {
        self.certificate.clone()
    }

    /// Stops accepting and waits for the accepting thread to end, so the port is free
    /// when this returns. The thread blocks in `accept`: a connection of our own wakes it.
    pub fn stop(mut self) {
        self.stopping.store(true, Ordering::Release);
        let mut wake = self.address;
        if wake.ip().is_unspecified() {
            wake.set_ip(match wake {
                SocketAddr::V4(_) => Ipv4Addr::LOCALHOST.into(),
                SocketAddr::V6(_) => Ipv6Addr::LOCALHOST.into(),
            });
        }
        // Unreachable (a firewall, say): the thread is left to the process's exit rather
        // than joined forever.
        if TcpStream::connect_timeout(&wake, Duration::from_secs(1)).is_ok() {
            if let Some(thread) = self.thread.take() {
                let _ = thread.join();
            }
        }
    }
}

/// The certificate in `slot` now. A panicked reload cannot leave it half-written (the
/// swap is one assignment), so a poisoned lock still holds a whole certificate.
fn presented(slot: &CertificateSlot) -> Arc<rustls::ServerConfig> {
    slot.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).clone()
}

/// Serves `listener` (from `bind`) until stopped.
pub fn start(
    listener: TcpListener,
    identity: Arc<ServerIdentity>,
    options: Options,
    control: Arc<Control>,
) -> std::io::Result<MonitorListener> {
    start_serving(listener, identity, options, control, None)
}

/// As [`start`], over HTTPS with the certificate of `options.tls_context`; a reload
/// swaps in a new one through [`MonitorListener::certificate`].
pub fn start_https(
    listener: TcpListener,
    identity: Arc<ServerIdentity>,
    options: Options,
    control: Arc<Control>,
) -> std::io::Result<MonitorListener> {
    let Some(context) = options.tls_context.clone() else {
        return Err(std::io::Error::other("https_port needs a tls {} block"));
    };
    start_serving(listener, identity, options, control, Some(Arc::new(Mutex::new(context.config))))
}

fn start_serving(
    listener: TcpListener,
    identity: Arc<ServerIdentity>,
    options: Options,
    control: Arc<Control>,
    certificate: Option<CertificateSlot>,
) -> std::io::Result<MonitorListener> {
    let address = listener.local_addr()?;
    let started = SystemTime::now();
    let (cpu, requests) = (process::CpuGauge::new(), Mutex::default());
    let monitor = Arc::new(Monitor { identity, options, control, started, cpu, requests });
    let scheme = if certificate.is_some() { "https" } else { "http" };
    tracing::info!("Starting {scheme} monitor on {address}");
    let stopping = Arc::new(AtomicBool::new(false));
    let (stop_seen, slot) = (stopping.clone(), certificate.clone());
    let thread = std::thread::Builder::new().name("jetcore-monitor".into()).spawn(move || {
        let in_flight = Arc::new(AtomicUsize::new(0));
        for stream in listener.incoming() {
            if stop_seen.load(Ordering::Acquire) {
                break;
            }
            let Ok(stream) = stream else { continue };
            serve_request(stream, &monitor, &in_flight, slot.as_ref().map(presented));
        }
    })?;
    Ok(MonitorListener { address, stopping, thread: Some(thread), certificate })
}

/// Answers on a thread of its own, so a slow gather never holds up `/healthz`.
fn serve_request(
    mut stream: TcpStream,
    monitor: &Arc<Monitor>,
    in_flight: &Arc<AtomicUsize>,
    tls: Option<Arc<rustls::ServerConfig>>,
) {
    if in_flight.fetch_add(1, Ordering::AcqRel) >= limits::MONITOR_REQUESTS_IN_FLIGHT_MAX {
        in_flight.fetch_sub(1, Ordering::AcqRel);
        let busy = http::Response::json(503, r#"{"error":"too many monitoring requests"}"#.to_string());
        let _ = busy.write(&mut stream);
        return;
    }
    let (monitor, finished) = (monitor.clone(), in_flight.clone());
    let spawned = std::thread::Builder::new().name("jetcore-http".into()).spawn(move || {
        let answered = match tls {
            None => answer(stream, &monitor),
            Some(config) => answer_over_tls(stream, config, &monitor),
        };
        if let Err(error) = answered {
            tracing::debug!("monitoring request failed: {error}");
        }
        finished.fetch_sub(1, Ordering::AcqRel);
    });
    if spawned.is_err() {
        in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

fn answer_over_tls(stream: TcpStream, config: Arc<rustls::ServerConfig>, monitor: &Monitor) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    let session = rustls::ServerConnection::new(config).map_err(std::io::Error::other)?;
    let mut stream = rustls::StreamOwned::new(session, stream);
    let request = Request::read(&mut stream)?;
    respond(&request, monitor).write(&mut stream)?;
    stream.conn.send_close_notify();
    stream.conn.complete_io(&mut stream.sock)?;
    Ok(())
}

fn answer(mut stream: TcpStream, monitor: &Monitor) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    let request = Request::read(&stream)?;
    respond(&request, monitor).write(&mut stream)
}

fn respond(request: &Request, monitor: &Monitor) -> http::Response {
    let unavailable = || http::Response::json(503, r#"{"error":"the shards did not answer in time"}"#.to_string());
    if ENDPOINTS.contains(&request.path.as_str()) || request.path == "/subscriptionsz" {
        monitor.count_request(&request.path);
    }
    let response = match request.path.as_str() {
        "/healthz" => healthz::render(monitor, request),
        "/varz" => http::Response::json(200, varz::render(monitor)),
        "/connz" => connz::render(monitor, request).map_or_else(unavailable, |body| http::Response::json(200, body)),
        "/subsz" | "/subscriptionsz" => {
            subsz::render(monitor, request).map_or_else(unavailable, |body| http::Response::json(200, body))
        }
        "/jsz" => jsz::render(monitor, request).unwrap_or_else(unavailable),
        "/accountz" => http::Response::json(200, accountz::render(monitor, request)),
        "/accstatz" => {
            accountz::render_statz(monitor, request).map_or_else(unavailable, |body| http::Response::json(200, body))
        }
        "/leafz" => leafz::render(monitor, request).map_or_else(unavailable, |body| http::Response::json(200, body)),
        "/metrics" => metrics::render(monitor).map_or_else(unavailable, http::Response::prometheus),
        "/" => http::Response::json(200, serde_json::json!({ "endpoints": ENDPOINTS }).to_string()),
        _ => http::Response::json(404, r#"{"error":"not found"}"#.to_string()),
    };
    response
}

const ENDPOINTS: [&str; 9] =
    ["/varz", "/connz", "/subsz", "/jsz", "/accountz", "/accstatz", "/leafz", "/healthz", "/metrics"];

/// A time as nats-server writes it in JSON (RFC 3339 with nanoseconds, UTC).
pub fn rfc3339(time: SystemTime) -> serde_json::Value {
    let nanos = time.duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as i64).unwrap_or(0);
    serde_json::to_value(crate::jetstream::time::Timestamp::from_unix_nanos(nanos)).unwrap_or_default()
}

/// A duration in whole seconds as nats-server writes uptimes and idle times: `1d2h3m4s`,
/// `5m0s`, `0s`.
pub fn human_duration(duration: Duration) -> String {
    let mut seconds = duration.as_secs();
    let days = seconds / 86_400;
    seconds %= 86_400;
    let (hours, minutes, seconds) = (seconds / 3600, seconds % 3600 / 60, seconds % 60);
    match (days, hours, minutes) {
        (0, 0, 0) => format!("{seconds}s"),
        (0, 0, _) => format!("{minutes}m{seconds}s"),
        (0, _, _) => format!("{hours}h{minutes}m{seconds}s"),
        _ => format!("{days}d{hours}h{minutes}m{seconds}s"),
    }
}

/// Applies `offset` and `limit` (nats-server's paging parameters) to `items`.
pub fn page<T>(items: Vec<T>, request: &Request) -> (Vec<T>, usize, usize) {
    let offset = request.number("offset").unwrap_or(0);
    let limit = request.number("limit").filter(|l| *l > 0).unwrap_or(limits::MONITOR_PAGE_DEFAULT);
    (items.into_iter().skip(offset).take(limit).collect(), offset, limit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_like_nats_server() {
        assert_eq!(human_duration(Duration::from_secs(0)), "0s");
        assert_eq!(human_duration(Duration::from_secs(65)), "1m5s");
        assert_eq!(human_duration(Duration::from_secs(3600)), "1h0m0s");
        assert_eq!(human_duration(Duration::from_secs(90_061)), "1d1h1m1s");
    }
}
