//! Starting the server: check the machine can run it, lock the store directory, listen on
//! the client and monitoring ports (refusing ports another process holds, see
//! `client_listener.rs`), start one pinned shard per core, each accepting on the one client
//! socket, and log the lines nats-server logs so harnesses that wait for them work unchanged.
//! Everything that can refuse a start does so before the first shard starts.

use std::fmt;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};

use glommio::net::TcpListener;

use super::account::AccountId;
use super::account_jetstream::AccountServices;
use super::catalog::CatalogChange;
use super::client_listener::{go_error_text, ClientListener, ShardListeners};
use super::connection;
use super::control::{self, Control};
use super::envelope::Envelope;
use super::info::NATS_COMPATIBLE_VERSION;
use super::monitor;
use super::node::{Node, ServerIdentity};
use super::options::Options;
use super::store_lock::{StoreLock, StoreLockError};
use crate::jetstream::service::{DmaDisk, StreamService, SyncPolicy};
use crate::shard::{probe, Runtime, RuntimeHandle, ShardContext};

/// How often a starting shard checks whether the others have announced their streams.
const STARTUP_POLL: std::time::Duration = std::time::Duration::from_millis(1);
/// How often the reactor is woken while a shard opens its streams (see `serve_shard`).
const STARTUP_REACTOR_TICK: std::time::Duration = std::time::Duration::from_millis(10);
/// How long the `startup_stall` failpoint holds a shard before it opens its streams.
const STARTUP_STALL: std::time::Duration = std::time::Duration::from_secs(3);
/// How often a shut-down embedded shard checks whether it may end (only after shutdown).
const EXIT_POLL: std::time::Duration = std::time::Duration::from_millis(1);

#[derive(Debug)]
pub enum StartError {
    Probe(probe::ProbeError),
    StoreDir {
        path: String,
        error: std::io::Error,
    },
    StoreLock(StoreLockError),
    /// The client port cannot be listened on (in use by another process, or not allowed).
    ClientPort {
        address: String,
        error: std::io::Error,
    },
    MonitorPort {
        address: String,
        error: std::io::Error,
    },
    PidFile {
        path: String,
        error: std::io::Error,
    },
    /// A `tls {}` file cannot be read or used.
    Tls(super::tls::TlsError),
    /// An account's JetStream directory cannot be used (`store_account`).
    StoreAccount(String),
    Runtime(String),
}

impl fmt::Display for StartError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StartError::Probe(error) => write!(f, "{error}"),
            StartError::StoreDir { path, error } => {
                write!(f, "cannot create store directory {path:?}: {error}")
            }
            StartError::StoreLock(error) => write!(f, "{error}"),
            // nats-server's words (Go's), which scripts and people search for.
            StartError::ClientPort { address, error } => write!(
                f,
                "Error listening on port: {address}, \"listen tcp {address}: bind: {}\"",
                go_error_text(error)
            ),
            StartError::MonitorPort { address, error } => write!(
                f,
                "Can't start monitoring: can't listen to the monitor port: listen tcp {address}: bind: {}",
                go_error_text(error)
            ),
            StartError::PidFile { path, error } => write!(f, "cannot write pid file {path:?}: {error}"),
            StartError::Tls(error) => write!(f, "{error}"),
            StartError::StoreAccount(message) => write!(f, "{message}"),
            StartError::Runtime(message) => write!(f, "{message}"),
        }
    }
}

impl std::error::Error for StartError {}

/// Runs the server until the process is stopped (the binary: signals stop it).
pub fn run(options: Options) -> Result<(), StartError> {
    start(options, Signals::Handle)?.wait()
}

/// Whether the server takes SIGTERM, SIGINT, SIGUSR2 and SIGHUP (see `signals.rs`). A
/// program that embeds the server keeps its own signals and stops it with `shut_down`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Signals {
    Handle,
    Leave,
}

/// A server whose shards are listening, each on a thread of its own.
pub struct Running {
    runtime: RuntimeHandle<Result<(), StartError>>,
    control: Arc<Control>,
    lifecycle: Arc<Lifecycle>,
    port: u16,
    /// The monitoring ports, stopped after the shards.
    monitors: Vec<monitor::MonitorListener>,
    /// Released when the shards have stopped.
    _store_lock: Option<StoreLock>,
}

impl Running {
    /// The bound client port (the one the OS picked for port 0).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Blocks until every shard has stopped (for the binary: until the process exits).
    pub fn wait(self) -> Result<(), StartError> {
        let results = self.runtime.join().map_err(|error| StartError::Runtime(error.to_string()))?;
        results.into_iter().collect::<Result<Vec<()>, StartError>>()?;
        Ok(())
    }

    /// The graceful shutdown SIGTERM runs (`shutdown.rs`), then the shards stop and their
    /// threads end; blocks until they have. When a step times out the shards are left to
    /// the process's exit (a stuck shard cannot be joined) and this says so.
    pub fn shut_down(mut self) -> Result<(), StartError> {
        let monitors = std::mem::take(&mut self.monitors);
        let settled = super::shutdown::shut_down(&self.control);
        self.lifecycle.exit.store(true, Ordering::Release);
        let stopped = match settled {
            true => self.wait(),
            false => Err(StartError::Runtime("a shutdown step did not finish in time".to_string())),
        };
        monitors.into_iter().for_each(monitor::MonitorListener::stop);
        stopped
    }
}

/// Starts the server and returns once every shard listens. Everything that can refuse a
/// start does so before the first shard starts, except a shard failing to open its
/// streams, which stops the others and is returned here.
pub fn start(mut options: Options, signals: Signals) -> Result<Running, StartError> {
    // Before any thread starts, so that every thread inherits the blocked mask.
    let blocked = match signals {
        Signals::Handle => Some(
            super::signals::block().map_err(|error| StartError::Runtime(format!("cannot block signals: {error}")))?,
        ),
        Signals::Leave => None,
    };
    options.tls_context =
        options.tls.as_ref().map(super::tls::TlsContext::load).transpose().map_err(StartError::Tls)?;
    if options.https_port.is_some() && options.tls_context.is_none() {
        return Err(StartError::Tls(super::tls::TlsError("https_port needs a tls {} block".to_string())));
    }
    let shard_count = options.shards.unwrap_or_else(default_shard_count);
    probe::check_for(usize::from(shard_count), crate::limits::SHARD_IO_MEMORY_BYTES).map_err(StartError::Probe)?;
    std::fs::create_dir_all(&options.store_dir)
        .map_err(|error| StartError::StoreDir { path: options.store_dir.display().to_string(), error })?;
    // Held until the shards stop (for the binary, until the process exits).
    let store_lock = match options.jetstream {
        true => Some(StoreLock::acquire(&options.store_dir).map_err(StartError::StoreLock)?),
        false => None,
    };
    if options.jetstream {
        jetstream_dirs(&options).map_err(StartError::StoreAccount)?;
        // Uploads a previous run was staging when it stopped: never to be finished.
        let _ = std::fs::remove_dir_all(options.store_dir.join(crate::jetstream::service::RESTORE_STAGING_DIR));
    }
    let requested_port = options.port.unwrap_or(0);
    let client_listener = ClientListener::bind(&options.host, requested_port)
        .map_err(|error| StartError::ClientPort { address: format!("{}:{requested_port}", options.host), error })?;
    let port = client_listener.port();
    options.port = Some(port);
    let monitor_listener = match options.http_port {
        Some(http_port) => Some(
            monitor::bind(&options.host, http_port)
                .map_err(|error| StartError::MonitorPort { address: format!("{}:{http_port}", options.host), error })?,
        ),
        None => None,
    };
    let https_listener =
        match options.https_port {
            Some(https_port) => Some(monitor::bind(&options.host, https_port).map_err(|error| {
                StartError::MonitorPort { address: format!("{}:{https_port}", options.host), error }
            })?),
            None => None,
        };
    let shard_listeners = Arc::new(
        client_listener
            .into_shard_listeners(shard_count)
            .map_err(|error| StartError::Runtime(format!("cannot share the client socket: {error}")))?,
    );
    write_pid_file(&options)?;
    // Unnamed, a server is named by its id, as nats-server.
    let id = server_id();
    let identity = Arc::new(ServerIdentity {
        server_name: if options.server_name.is_empty() { id.clone() } else { options.server_name.clone() },
        server_id: id,
        port,
        connections: Arc::new(AtomicUsize::new(0)),
        ready: std::sync::atomic::AtomicBool::new(false),
    });
    log_start(&options, &identity, shard_count);
    if options.tls_context.is_some() {
        // nats-server's lines, which operators look for.
        match options.allow_non_tls {
            true => tracing::info!("TLS available for client connections (plaintext allowed)"),
            false => tracing::info!("TLS required for client connections"),
        }
    }
    let control = Control::new(shard_count);
    let mut monitors = Vec::new();
    if let Some(listener) = monitor_listener {
        monitors.push(
            monitor::start(listener, identity.clone(), options.clone(), control.clone())
                .map_err(|error| StartError::Runtime(format!("cannot start the http monitor: {error}")))?,
        );
    }
    if let Some(listener) = https_listener {
        monitors.push(
            monitor::start_https(listener, identity.clone(), options.clone(), control.clone())
                .map_err(|error| StartError::Runtime(format!("cannot start the https monitor: {error}")))?,
        );
    }
    if let Some(blocked) = blocked {
        let https_certificate = monitors.iter().find_map(|monitor| monitor.certificate());
        let reloader = super::reload::Reloader::new(options.command_line.clone(), options.clone(), https_certificate);
        super::signals::spawn_handler(blocked, control.clone(), identity.clone(), reloader)
            .map_err(|error| StartError::Runtime(format!("cannot start the signal thread: {error}")))?;
    }
    let (ready, shards_ready) = mpsc::channel();
    let lifecycle = Arc::new(Lifecycle { exit: AtomicBool::new(false), stay: signals == Signals::Handle, ready });
    let startup = Arc::new(Startup::default());
    let options = Arc::new(options);
    let runtime = Runtime::builder().shards(shard_count);
    let shard_lifecycle = lifecycle.clone();
    let shard_control = control.clone();
    let runtime = runtime
        .start(move |context: ShardContext<Envelope>| {
            let options = options.clone();
            let identity = identity.clone();
            let startup = startup.clone();
            let control = shard_control.clone();
            let listeners = shard_listeners.clone();
            let lifecycle = shard_lifecycle.clone();
            async move { serve_shard(context, options, identity, startup, control, listeners, lifecycle).await }
        })
        .map_err(|error| StartError::Runtime(error.to_string()))?;
    let running = Running { runtime, control, lifecycle, port, monitors, _store_lock: store_lock };
    for _ in 0..shard_count {
        match shards_ready.recv() {
            Ok(Ok(())) => {}
            Ok(Err(error)) => {
                running.lifecycle.exit.store(true, Ordering::Release);
                let _ = running.wait();
                return Err(error);
            }
            Err(_) => unreachable!("the lifecycle keeps a sender"),
        }
    }
    Ok(running)
}

async fn serve_shard(
    context: ShardContext<Envelope>,
    options: Arc<Options>,
    identity: Arc<ServerIdentity>,
    startup: Arc<Startup>,
    control: Arc<Control>,
    listeners: Arc<ShardListeners>,
    lifecycle: Arc<Lifecycle>,
) -> Result<(), StartError> {
    let mut ready = ReadyReport(Some(lifecycle.ready.clone()));
    let shard = context.id();
    let shard_count = context.shard_count();
    // Until the maintenance tick runs, nothing else wakes the reactor on a timer. Starts
    // have hung (4 of 700 in the kill -9 long runs) with the shard asleep in io_uring
    // while its stream-opening I/O was in flight; a periodic wake makes the reactor poll
    // every ring again. A mitigation: the cause in glommio is not pinned down.
    let reactor_ticks = glommio::spawn_local(async {
        loop {
            glommio::timer::sleep(STARTUP_REACTOR_TICK).await;
        }
    });
    if crate::failpoint::fails("startup_stall") {
        // A shard slow to recover its streams, as `/healthz` must see one while it starts.
        glommio::timer::sleep(STARTUP_STALL).await;
    }
    let jetstream = match options.jetstream {
        true => match open_streams(&options, &identity, shard.0, shard_count).await {
            Ok(services) => services,
            Err(error) => {
                ready.send(Err(error));
                return Ok(());
            }
        },
        false => AccountServices::default(),
    };
    let services: Vec<(AccountId, Rc<StreamService>)> =
        jetstream.iter().map(|(account, service)| (account, service.clone())).collect();
    let control_signal = context.foreign_signal();
    let node = Node::new(context, Rc::new((*options).clone()), identity, jetstream);
    if shard.0 == 0 && options.leafnodes.is_some() {
        // Shard 0 owns the leaf links; set before any subscription so none goes uncounted.
        let _ = node.leaf.set(Rc::new(super::leaf::Spoke::new(&node)));
    }
    glommio::spawn_local(node.clone().run_mesh()).detach();
    glommio::spawn_local(control::serve(node.clone(), control, control_signal)).detach();
    glommio::spawn_local(super::memory_release::release_after_closes(node.clone())).detach();
    for (account, service) in &services {
        super::consumer_pump::start(&node, *account, service.clone()).await;
    }
    if options.jetstream {
        if !announce_streams(&node, &services, &startup, &lifecycle).await {
            return Ok(());
        }
        node.follow_all_sources();
    }
    for (_, service) in services {
        glommio::spawn_local(service.run_maintenance()).detach();
    }
    drop(reactor_ticks);
    let address = format!("{}:{}", options.host, node.identity.port);
    let listener = (listeners.take(shard), listeners.raw_fd(shard));
    drop(listeners);
    if startup.bound.fetch_add(1, Ordering::AcqRel) + 1 == usize::from(shard_count) {
        node.identity.ready.store(true, Ordering::Release);
        tracing::info!("Listening for client connections on {address}");
        tracing::info!("Server is ready");
    }
    ready.send(Ok(()));
    super::leaf::Spoke::start(&node);
    accept_until_stopped(&node, listener).await;
    if lifecycle.stay {
        // The binary: stay alive (the executor ends with this future) until the process exits.
        futures_lite::future::pending::<()>().await;
    }
    // Embedded: the executor, and every task on it, ends once the shutdown steps are done.
    while !lifecycle.exit.load(Ordering::Acquire) {
        glommio::timer::sleep(EXIT_POLL).await;
    }
    Ok(())
}

/// What the starting thread and the shards share for the server's life.
struct Lifecycle {
    /// Set once the shutdown steps are done (or a start failed): embedded shards return.
    exit: AtomicBool,
    /// The binary's shards never return: the process exits under them.
    stay: bool,
    /// Each shard reports once: listening, or why it cannot.
    ready: mpsc::Sender<Result<(), StartError>>,
}

/// A shard's one report to `start`; a shard that ends (or panics) before it reports
/// reports that, so `start` never waits for a shard that is gone.
struct ReadyReport(Option<mpsc::Sender<Result<(), StartError>>>);

impl ReadyReport {
    fn send(&mut self, report: Result<(), StartError>) {
        if let Some(sender) = self.0.take() {
            let _ = sender.send(report);
        }
    }
}

impl Drop for ReadyReport {
    fn drop(&mut self) {
        self.send(Err(StartError::Runtime("a shard stopped while starting".to_string())));
    }
}

/// Accepts connections until lame duck or shutdown, then closes the listener.
async fn accept_until_stopped(node: &Rc<Node>, (listener, fd): (TcpListener, std::os::fd::RawFd)) {
    // A connection waiting in the backlog ends a client's blocking read wait on this shard.
    let _watched = crate::shard::socket_wait::Watched::new(fd);
    loop {
        let accepted = futures_lite::future::or(async { Some(listener.accept().await) }, async {
            node.ops.accept_reached(super::shard_ops::Phase::LameDuck).await;
            None
        })
        .await;
        let Some(accepted) = accepted else {
            tracing::debug!("shard {} stopped accepting connections", node.shard);
            return;
        };
        match accepted {
            Ok(stream) => {
                glommio::spawn_local(connection::serve(node.clone(), stream)).detach();
            }
            Err(error) => {
                tracing::warn!("accept failed on shard {}: {error}", node.shard);
                glommio::timer::sleep(std::time::Duration::from_millis(10)).await;
            }
        }
    }
}

/// Counters the shards share while starting.
#[derive(Default)]
struct Startup {
    /// Shards whose listener is bound.
    bound: AtomicUsize,
    /// Shards that have announced their streams, and how many streams in all.
    announced: AtomicUsize,
    streams: AtomicUsize,
}

/// Each account with JetStream and its directory under the store.
fn jetstream_dirs(options: &Options) -> Result<Vec<(AccountId, PathBuf)>, String> {
    let accounts = &options.accounts;
    let mut dirs = Vec::new();
    for account in accounts.jetstream_accounts()? {
        dirs.push((account, super::store_account::jetstream_dir(&options.store_dir, accounts.name_of(account))?));
    }
    Ok(dirs)
}

/// Opens this shard's streams: one service per account with JetStream.
async fn open_streams(
    options: &Options,
    identity: &ServerIdentity,
    shard: u16,
    shard_count: u16,
) -> Result<AccountServices, StartError> {
    let sync = match options.sync_interval {
        None => SyncPolicy::Always,
        Some(interval) => SyncPolicy::Interval(interval),
    };
    let mut services = Vec::new();
    for (account, dir) in jetstream_dirs(options).map_err(StartError::StoreAccount)? {
        let service = StreamService::open(
            Rc::new(DmaDisk),
            &dir,
            shard,
            shard_count,
            sync,
            (identity.server_id.clone(), identity.server_name.clone()),
            NATS_COMPATIBLE_VERSION.to_string(),
        )
        .await
        .map_err(|error| StartError::Runtime(format!("shard {shard} could not open its streams: {error}")))?;
        service.set_domain(options.jetstream_domain.clone().unwrap_or_default());
        service.set_account_name(options.accounts.name_of(account).to_string());
        services.push((account, Rc::new(service)));
    }
    Ok(AccountServices::new(services))
}

/// Tells every shard which streams this one owns, then waits until this shard's catalog
/// holds every shard's streams, so the first client publish finds its stream. False when
/// the start was abandoned meanwhile (another shard failed).
async fn announce_streams(
    node: &Rc<Node>,
    services: &[(AccountId, Rc<StreamService>)],
    startup: &Startup,
    lifecycle: &Lifecycle,
) -> bool {
    for (account, service) in services {
        let summaries = service.summaries();
        startup.streams.fetch_add(summaries.len(), Ordering::AcqRel);
        for summary in summaries {
            let entry = node.catalog_entry(*account, summary);
            node.broadcast_catalog(CatalogChange::Upsert(entry));
        }
    }
    startup.announced.fetch_add(1, Ordering::AcqRel);
    let shard_count = usize::from(node.shard_count());
    loop {
        let everyone = startup.announced.load(Ordering::Acquire) == shard_count;
        if everyone && node.catalog_len() == startup.streams.load(Ordering::Acquire) {
            return true;
        }
        if lifecycle.exit.load(Ordering::Acquire) {
            return false;
        }
        glommio::timer::sleep(STARTUP_POLL).await;
    }
}

fn default_shard_count() -> u16 {
    std::thread::available_parallelism().map(|n| n.get().min(u16::MAX as usize) as u16).unwrap_or(1)
}

fn write_pid_file(options: &Options) -> Result<(), StartError> {
    let Some(path) = &options.pid_file else { return Ok(()) };
    std::fs::write(path, std::process::id().to_string())
        .map_err(|error| StartError::PidFile { path: path.display().to_string(), error })
}

fn log_start(options: &Options, identity: &ServerIdentity, shard_count: u16) {
    tracing::info!("Starting jetcore (nats-server {NATS_COMPATIBLE_VERSION} compatible)");
    tracing::info!("  Version:  {}", env!("CARGO_PKG_VERSION"));
    tracing::info!("  Shards:   {shard_count}");
    tracing::info!("  Name:     {}", identity.server_name);
    tracing::info!("  ID:       {}", identity.server_id);
    if options.jetstream {
        tracing::info!("Starting JetStream");
        tracing::info!("  Store Directory: \"{}\"", options.store_dir.display());
        match options.sync_interval {
            None => tracing::info!("  Sync:     always (acknowledged only after fdatasync)"),
            Some(interval) => tracing::info!("  Sync:     every {interval:?} (not durable on power loss)"),
        }
        let accounts = &options.accounts;
        match accounts.jetstream_accounts() {
            Ok(enabled) if enabled.is_empty() => {
                tracing::warn!("No account enables `jetstream`: every account is answered `not enabled`")
            }
            Ok(enabled) if accounts.configured() => {
                let names: Vec<&str> = enabled.iter().map(|id| accounts.name_of(*id)).collect();
                tracing::info!("  Accounts: {names:?}");
            }
            _ => {}
        }
    }
}

/// A 56-character id in nats-server's style (`N` followed by base32 characters).
fn server_id() -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    let nanos =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0);
    let mut state = nanos ^ (u64::from(std::process::id()) << 32) ^ 0x2545_F491_4F6C_DD1D;
    let mut id = String::from("N");
    for _ in 0..55 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        id.push(ALPHABET[(state % 32) as usize] as char);
    }
    id
}
