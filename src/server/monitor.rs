//! Monitoring over HTTP (`-m PORT`): `/healthz` and `/varz` with nats-server's field names
//! for what the NATS tools read. Served from one plain thread, off the shards, so a busy
//! shard never delays a health check.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use super::info::NATS_COMPATIBLE_VERSION;
use super::node::ServerIdentity;
use super::options::Options;

pub fn start(host: &str, port: u16, identity: Arc<ServerIdentity>, options: Options) -> std::io::Result<()> {
    let listener = TcpListener::bind((host, port))?;
    let started = Instant::now();
    let started_wall = SystemTime::now();
    tracing::info!("Starting http monitor on {host}:{port}");
    std::thread::Builder::new().name("jetcore-monitor".into()).spawn(move || {
        for stream in listener.incoming().flatten() {
            let _ = answer(stream, &identity, &options, started, started_wall);
        }
    })?;
    Ok(())
}

fn answer(
    mut stream: TcpStream,
    identity: &ServerIdentity,
    options: &Options,
    started: Instant,
    started_wall: SystemTime,
) -> std::io::Result<()> {
    stream.set_read_timeout(Some(std::time::Duration::from_secs(5)))?;
    let mut request_line = String::new();
    BufReader::new(&stream).read_line(&mut request_line)?;
    let path = request_line.split_whitespace().nth(1).unwrap_or("/");
    let path = path.split('?').next().unwrap_or("/");
    let (status, body) = match path {
        "/healthz" => ("200 OK", r#"{"status":"ok"}"#.to_string()),
        "/varz" => ("200 OK", varz(identity, options, started, started_wall)),
        "/" => ("200 OK", r#"{"endpoints":["/varz","/healthz"]}"#.to_string()),
        _ => ("404 Not Found", r#"{"error":"not found"}"#.to_string()),
    };
    write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

fn varz(identity: &ServerIdentity, options: &Options, started: Instant, started_wall: SystemTime) -> String {
    let start_seconds = started_wall.duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    serde_json::json!({
        "server_id": identity.server_id,
        "server_name": identity.server_name,
        "version": NATS_COMPATIBLE_VERSION,
        "proto": 1,
        "host": options.host,
        "port": identity.port,
        "max_connections": options.max_connections,
        "max_payload": options.max_payload,
        "max_control_line": options.max_control_line,
        "max_pending": options.max_pending,
        "connections": identity.connections.load(Ordering::Relaxed),
        "uptime": format!("{}s", started.elapsed().as_secs()),
        "start_unix_seconds": start_seconds,
        "jetstream": { "config": { "store_dir": options.store_dir.display().to_string() } },
    })
    .to_string()
}
