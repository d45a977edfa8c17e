//! A reusable kill -9 harness (reliability matrix row 1), shared by tests/crash_kill9.rs
//! (short, for CI) and tools/killnine.rs (the long run).
//!
//! A run starts jetcore on a fresh data directory, then repeats cycles: producers publish
//! uniquely numbered messages at full rate with many acks in flight while a durable pull
//! consumer double-acks some of them; at a seeded uniform-random moment the server gets
//! SIGKILL; it restarts on the same directory and port. At the end a new consumer drains
//! the stream and [`oracle::History::check`] classifies what it read. The kill schedule
//! is derived from the seed (`JETCORE_SEED` reproduces it); the interleaving of the
//! server's threads with the kill is not deterministic, so a failure reproduces as a
//! schedule, not as an exact interleaving: rerun the seed a few times.

pub mod oracle;
pub mod process;
pub mod workload;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::{FutureExt, StreamExt};
use oracle::{History, MessageId, Verdict};
use process::ServerProcess;
use workload::{Shared, DURABLE, STREAM};

/// Worker threads of the clients' runtime (the machine this was sized for has 2 cores).
const CLIENT_THREADS: usize = 2;
/// How long the final check retries a failing request before it gives up.
const RETRY_FOR: Duration = Duration::from_secs(60);
/// The final check of the durable consumer ends after this long without a delivery.
const CONSUMER_QUIET: Duration = Duration::from_millis(1500);

/// What one run does.
#[derive(Debug, Clone)]
pub struct Settings {
    pub binary: PathBuf,
    pub seed: u64,
    /// Kill cycles at least; the run goes on until `acked_min` too.
    pub cycles: usize,
    pub acked_min: u64,
    pub producers: u32,
    /// Publishes each producer keeps awaiting their ack.
    pub in_flight: usize,
    pub payload_bytes: usize,
    /// The kill lands uniformly in this range after the restart began.
    pub kill_after: (Duration, Duration),
    /// Extra server flags (e.g. `--shards 1`).
    pub server_args: Vec<String>,
    /// Print one line per cycle.
    pub verbose: bool,
    /// A named crash point (`jetcore::failpoint`) armed at every start but the first and
    /// the last: the server aborts at a seeded hit in `1..=max` of it (or is killed at its
    /// kill time if it never gets that far).
    pub failpoint: Option<(String, u64)>,
}

/// A run's outcome: the oracle's verdict plus what went wrong with the process itself.
pub struct Outcome {
    pub verdict: Verdict,
    /// Starts that did not report a listening port in time (each retried).
    pub hung_starts: usize,
    /// Times the server exited by itself before its kill.
    pub crashes: usize,
    /// Log lines with "panicked".
    pub panics: u64,
    /// Cycles that ended with the armed failpoint aborting the server.
    pub failpoint_fired: usize,
    pub elapsed: Duration,
    pub log_tail: String,
}

impl Outcome {
    pub fn violations(&self) -> Vec<String> {
        let mut found = self.verdict.violations();
        if self.hung_starts > 0 {
            found.push(format!("{} starts hung", self.hung_starts));
        }
        if self.crashes > 0 {
            found.push(format!("{} unprompted exits", self.crashes));
        }
        if self.panics > 0 {
            found.push(format!("{} panics logged", self.panics));
        }
        found
    }
}

/// The seed: `JETCORE_SEED` if set, else one from the clock. Printed by the caller.
pub fn seed_from_env() -> u64 {
    match std::env::var("JETCORE_SEED") {
        Ok(seed) => seed.parse().expect("JETCORE_SEED is a number"),
        Err(_) => std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("clock").as_nanos() as u64,
    }
}

/// A tiny seeded generator (xorshift64*) for the kill schedule.
pub struct Schedule(u64);

impl Schedule {
    pub fn new(seed: u64) -> Schedule {
        Schedule(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    /// Uniform in `[low, high]` at millisecond resolution.
    pub fn delay(&mut self, (low, high): (Duration, Duration)) -> Duration {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let random = self.0.wrapping_mul(0x2545_F491_4F6C_DD1D);
        let span = (high - low).as_millis() as u64 + 1;
        low + Duration::from_millis(random % span)
    }
}

/// Runs the whole thing: setup, cycles, final check.
pub fn run(settings: &Settings) -> Outcome {
    let started = Instant::now();
    let data = tempfile::tempdir().expect("temp dir");
    let store_dir = data.path().join("store");
    let mut server = ServerProcess::start(&settings.binary, &store_dir, &settings.server_args);
    runtime().block_on(async {
        let context = workload::connect(&server.url()).await;
        workload::create(&context).await;
    });
    let history: Shared = Arc::new(Mutex::new(History::default()));
    let mut schedule = Schedule::new(settings.seed);
    let (mut hung_starts, mut crashes, mut failpoint_fired) = (0, 0, 0);
    if let Some(armed) = arm(settings, &mut schedule) {
        server.env = vec![armed];
        server.restart().unwrap_or_else(|error| panic!("{error}\n{}", server.log_tail()));
    }
    let mut restart = Restart { began: Instant::now(), listening: Duration::ZERO };
    let mut cycle = 0;
    while cycle < settings.cycles || acked(&history) < settings.acked_min {
        let kill_after = schedule.delay(settings.kill_after);
        let acked_before = acked(&history);
        let report = run_cycle(settings, &mut server, cycle, restart.began + kill_after, &history);
        if report.failpoint_fired {
            failpoint_fired += 1;
        } else if !report.alive {
            eprintln!("cycle {cycle}: the server exited before its kill\n{}", server.log_tail());
            crashes += 1;
        }
        let first_ack = report.first_ack.map(|at| at - restart.began);
        history.lock().expect("history").note_cycle(first_ack, report.ended_at - restart.began);
        cycle += 1;
        if settings.verbose {
            let recovered =
                history.lock().expect("history").last_seqs.iter().find(|(at, _)| *at == cycle - 1).map(|(_, seq)| *seq);
            println!("cycle {cycle}: kill at {kill_after:?}, listening after {:?}, recovered last_seq {recovered:?}, first ack after {first_ack:?}, acked {} (total {})",
                restart.listening, acked(&history) - acked_before, acked(&history));
        }
        let more = cycle < settings.cycles || acked(&history) < settings.acked_min;
        server.env = if more { arm(settings, &mut schedule).into_iter().collect() } else { Vec::new() };
        restart = loop {
            let began = Instant::now();
            match server.restart() {
                Ok(listening) => break Restart { began, listening },
                Err(error) => {
                    eprintln!("cycle {cycle}: {error}\n{}", server.log_tail());
                    hung_starts += 1;
                }
            }
        };
    }
    let final_check = final_check(&server, cycle, restart.began, settings.payload_bytes, history.clone());
    let verdict = runtime().block_on(final_check);
    Outcome {
        verdict,
        hung_starts,
        crashes,
        panics: server.panics(),
        failpoint_fired,
        elapsed: started.elapsed(),
        log_tail: server.log_tail(),
    }
}

/// The environment arming the settings' failpoint at a seeded hit, if there is one.
fn arm(settings: &Settings, schedule: &mut Schedule) -> Option<(String, String)> {
    let (name, max) = settings.failpoint.as_ref()?;
    let hit = schedule.delay((Duration::from_millis(1), Duration::from_millis(*max.max(&1)))).as_millis();
    Some(("JETCORE_FAILPOINT".to_string(), format!("{name}:{hit}")))
}

/// When the current server start began and how long it took to listen.
struct Restart {
    began: Instant,
    listening: Duration,
}

/// What one cycle saw.
struct CycleReport {
    /// The server was still running when its kill came.
    alive: bool,
    /// It had aborted at its armed failpoint instead.
    failpoint_fired: bool,
    first_ack: Option<Instant>,
    /// When the server was killed, or ended on its own before that.
    ended_at: Instant,
}

/// How often a cycle looks whether its server ended on its own before the kill.
const EXIT_POLL_INTERVAL: Duration = Duration::from_millis(10);

fn acked(history: &Shared) -> u64 {
    history.lock().expect("history").acked.len() as u64
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(CLIENT_THREADS)
        .enable_all()
        .build()
        .expect("tokio runtime")
}

/// One cycle: clients run on their own runtime until `kill_at`, the server is killed,
/// then the runtime is dropped, which ends every client (nothing carries over, not even
/// a client reconnecting to the next server with stale buffered publishes).
fn run_cycle(
    settings: &Settings,
    server: &mut ServerProcess,
    cycle: usize,
    kill_at: Instant,
    history: &Shared,
) -> CycleReport {
    let runtime = runtime();
    let first_ack = Arc::new(Mutex::new(None));
    let known_seq = history.lock().expect("history").highest_known_seq();
    // The producers wait until the consumer has read the recovered last sequence: read
    // later, it would count publishes this server only queued, which the next crash may
    // rightly lose (they were never acknowledged).
    let (recovered, recovered_read) = futures::channel::oneshot::channel();
    let recovered_read = recovered_read.shared();
    for producer in 0..settings.producers {
        runtime.spawn(workload::produce(
            server.url(),
            producer,
            settings.in_flight,
            settings.payload_bytes,
            history.clone(),
            first_ack.clone(),
            recovered_read.clone(),
        ));
    }
    runtime.spawn(workload::consume(server.url(), cycle, known_seq, history.clone(), recovered));
    // Until the kill, or until the server ends on its own at an armed failpoint: a server
    // that aborted there before its first ack had only until then to answer one.
    let mut ended_at = kill_at;
    while Instant::now() < kill_at {
        std::thread::sleep(EXIT_POLL_INTERVAL.min(kill_at.saturating_duration_since(Instant::now())));
        if server.exited().is_some() {
            ended_at = Instant::now();
            break;
        }
    }
    let exit = server.exited();
    let alive = exit.is_none();
    let failpoint_fired = settings.failpoint.is_some()
        && exit.is_some_and(|status| std::os::unix::process::ExitStatusExt::signal(&status) == Some(libc::SIGABRT))
        && server.log_tail().contains("failpoint ");
    // Kill while the clients still run, then give acks already on their way a moment to
    // be read before the clients go.
    server.sigkill();
    std::thread::sleep(Duration::from_millis(50));
    runtime.shutdown_timeout(Duration::from_millis(500));
    let first_ack = *first_ack.lock().expect("first ack");
    CycleReport { alive, failpoint_fired, first_ack, ended_at }
}

/// After the last restart: the durable consumer must not get a confirmed ack again,
/// then a new consumer drains the stream and the oracle classifies it.
async fn final_check(
    server: &ServerProcess,
    cycles: usize,
    restart_began: Instant,
    payload_bytes: usize,
    history: Shared,
) -> Verdict {
    let context = workload::connect(&server.url()).await;
    let first_ack = workload::publish_one(&context, payload_bytes, &history).await;
    history.lock().expect("history").final_restart_to_first_ack = Some(first_ack - restart_began);
    let stream = retry("stream after restart", || context.get_stream(STREAM)).await;
    let known = history.lock().expect("history").highest_known_seq();
    let last_seq = retry("stream info", || stream.get_info()).await.state.last_sequence;
    history.lock().expect("history").note_last_seq(cycles, last_seq, known);
    let durable: async_nats::jetstream::consumer::PullConsumer =
        retry("durable consumer after restart", || stream.get_consumer(DURABLE)).await;
    let mut quiet_since = Instant::now();
    while quiet_since.elapsed() < CONSUMER_QUIET {
        if workload::consume_batch(&durable, &history).await > 0 {
            quiet_since = Instant::now();
        }
    }
    let client = context.client();
    let info = retry("raw stream info", || client.request(format!("$JS.API.STREAM.INFO.{STREAM}"), "".into())).await;
    let info: serde_json::Value = serde_json::from_slice(&info.payload).expect("info JSON");
    let lost_reported = info["state"]["lost"].clone();
    let read = drain(&stream, last_seq, payload_bytes).await;
    let history = history.lock().expect("history");
    let mut verdict = history.check(&read, last_seq);
    // A kill leaves every completed write in place: only a torn, never-acknowledged tail
    // may be dropped, and that is not damage. So nothing may be reported lost.
    verdict.damage_reported = (!lost_reported.is_null()).then(|| lost_reported.to_string());
    verdict
}

/// Reads every message up to `last_seq` with a new ack-none consumer.
async fn drain(
    stream: &async_nats::jetstream::stream::Stream,
    last_seq: u64,
    payload_bytes: usize,
) -> std::collections::BTreeMap<u64, Option<MessageId>> {
    use async_nats::jetstream::consumer::{pull, AckPolicy};
    let config = pull::Config { ack_policy: AckPolicy::None, ..Default::default() };
    let consumer = retry("drain consumer", || stream.create_consumer(config.clone())).await;
    let mut read = std::collections::BTreeMap::new();
    let mut highest = 0;
    let mut empty_batches = 0;
    while highest < last_seq && empty_batches < 20 {
        let mut batch =
            retry("drain batch", || consumer.batch().max_messages(2000).expires(Duration::from_secs(1)).messages())
                .await;
        let mut count = 0;
        while let Some(Ok(message)) = batch.next().await {
            let seq = message.info().expect("message info").stream_sequence;
            read.insert(seq, MessageId::parse(&message.payload, payload_bytes));
            highest = highest.max(seq);
            count += 1;
        }
        empty_batches = if count == 0 { empty_batches + 1 } else { 0 };
    }
    read
}

/// Retries `attempt` for up to [`RETRY_FOR`] (a loaded machine can make one request time
/// out); panics with the last error after that.
async fn retry<T, E: std::fmt::Display, F: std::future::Future<Output = Result<T, E>>>(
    what: &str,
    mut attempt: impl FnMut() -> F,
) -> T {
    let deadline = Instant::now() + RETRY_FOR;
    loop {
        match attempt().await {
            Ok(value) => return value,
            Err(error) if Instant::now() < deadline => {
                eprintln!("{what}: {error}; retrying");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(error) => panic!("{what}: {error} (for {RETRY_FOR:?})"),
        }
    }
}
