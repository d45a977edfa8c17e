//! Cross-shard hop latency: one envelope from shard 0 (CPU 0) to shard 1 (CPU 1).
//!
//! Method: shard 0 stamps `Instant::now()` into a ping and `try_send`s it; shard 1 computes
//! `elapsed()` the moment it takes the ping out of its ring and sends that back in a pong
//! (both shards read the same CLOCK_MONOTONIC, synchronized across cores). Shard 0 spins for
//! the pong, then records the one-way figure. Two receiver modes:
//! - busy: shard 1 spins on `try_recv` (a shard with work in hand);
//! - parked: shard 1 awaits `recv()`, and shard 0 waits `PARKED_GAP` between pings so that
//!   shard 1's executor is asleep in io_uring_enter and must be woken.
//!
//! Criterion reports the mean one-way hop (`iter_custom` returns the sum of hops);
//! a custom loop records each hop in an HdrHistogram and prints p50/p90/p99/p99.9/max.
//! For comparison, glommio's own `shared_channel` ping-pong (round trip / 2).
//!
//! Run briefly on a shared machine:
//! `cargo bench --bench mesh_hop -- --warm-up-time 1 --measurement-time 3`

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use criterion::Criterion;
use glommio::channels::shared_channel;
use glommio::{LocalExecutorBuilder, Placement};
use hdrhistogram::Histogram;
use jetcore::shard::{Runtime, RuntimeHandle, ShardContext, ShardId};

/// Pause between pings in parked mode: long enough for shard 1's executor to fall asleep.
/// The histogram loop also tries shorter and longer pauses: under a hypervisor an idle vCPU
/// is cheaper to wake while the host still polls it (KVM `halt_poll_ns`, 200 us by default).
const PARKED_GAP: Duration = Duration::from_micros(200);
const PARKED_GAPS_HISTOGRAM: [Duration; 3] = [Duration::from_micros(50), PARKED_GAP, Duration::from_millis(1)];
const HISTOGRAM_HOPS_BUSY: u64 = 200_000;
const HISTOGRAM_HOPS_PARKED: u64 = 2_000;
const SHARED_CHANNEL_ROUND_TRIPS: u64 = 2_000;
const SHARED_CHANNEL_TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Clone, Copy, PartialEq, Debug)]
enum Mode {
    Busy,
    Parked,
}

enum Envelope {
    Enter(Mode),
    Ping(Instant),
    Pong(Duration),
    Stop,
}

/// A request from the benchmark driver thread to shard 0.
struct Run {
    mode: Mode,
    /// Pause before each ping (parked mode).
    gap: Duration,
    hops: u64,
    reply: mpsc::Sender<Vec<Duration>>,
}

struct Harness {
    runs: mpsc::Sender<Run>,
    runtime: RuntimeHandle<()>,
}

impl Harness {
    fn start() -> Harness {
        let (runs, run_queue) = mpsc::channel::<Run>();
        let run_queue = std::sync::Mutex::new(Some(run_queue));
        let runtime = Runtime::builder()
            .shards(2)
            .start(move |context: ShardContext<Envelope>| {
                let run_queue = if context.id() == ShardId(0) { run_queue.lock().unwrap().take() } else { None };
                async move {
                    match run_queue {
                        Some(run_queue) => drive(&context, run_queue),
                        None => echo(&context).await,
                    }
                }
            })
            .expect("runtime starts (see the probe's message)");
        Harness { runs, runtime }
    }

    fn hops(&self, mode: Mode, hops: u64) -> Vec<Duration> {
        self.hops_with_gap(mode, PARKED_GAP, hops)
    }

    fn hops_with_gap(&self, mode: Mode, gap: Duration, hops: u64) -> Vec<Duration> {
        let (reply, replies) = mpsc::channel();
        self.runs.send(Run { mode, gap, hops, reply }).expect("shard 0 running");
        replies.recv().expect("shard 0 replies")
    }

    fn stop(self) {
        drop(self.runs);
        self.runtime.join().expect("shards stop");
    }
}

/// Shard 0: blocks its own thread on the driver's queue (it is the load generator, nothing
/// else runs there), and spins for pongs so the return hop adds no wake-up.
fn drive(context: &ShardContext<Envelope>, run_queue: mpsc::Receiver<Run>) {
    let peer = ShardId(1);
    while let Ok(run) = run_queue.recv() {
        send_spinning(context, peer, Envelope::Enter(run.mode));
        let mut hops = Vec::with_capacity(run.hops as usize);
        for _ in 0..run.hops {
            if run.mode == Mode::Parked {
                std::thread::sleep(run.gap);
            }
            send_spinning(context, peer, Envelope::Ping(Instant::now()));
            loop {
                match context.try_recv() {
                    Some((_, Envelope::Pong(hop))) => break hops.push(hop),
                    Some(_) => panic!("shard 0 expects only pongs"),
                    None => std::hint::spin_loop(),
                }
            }
        }
        run.reply.send(hops).expect("driver waiting");
    }
    send_spinning(context, peer, Envelope::Stop);
}

fn send_spinning(context: &ShardContext<Envelope>, to: ShardId, mut envelope: Envelope) {
    while let Err(back) = context.try_send(to, envelope) {
        envelope = back;
        std::hint::spin_loop();
    }
}

/// Shard 1: answers each ping with the hop it measured, spinning or parked per mode.
async fn echo(context: &ShardContext<Envelope>) {
    let mut mode = Mode::Parked;
    loop {
        let envelope = match mode {
            Mode::Busy => loop {
                if let Some((_, envelope)) = context.try_recv() {
                    break envelope;
                }
                std::hint::spin_loop();
            },
            Mode::Parked => context.recv().await.1,
        };
        match envelope {
            Envelope::Ping(sent_at) => {
                let hop = sent_at.elapsed();
                send_spinning(context, ShardId(0), Envelope::Pong(hop));
            }
            Envelope::Enter(next) => mode = next,
            Envelope::Stop => return,
            Envelope::Pong(_) => panic!("shard 1 expects no pongs"),
        }
    }
}

fn print_percentiles(label: &str, hops: &[Duration]) {
    let mut histogram = Histogram::<u64>::new_with_bounds(1, 10_000_000_000, 3).expect("bounds");
    for hop in hops {
        histogram.record(hop.as_nanos().max(1) as u64).expect("in range");
    }
    let micros = |quantile: f64| histogram.value_at_quantile(quantile) as f64 / 1000.0;
    println!(
        "{label:<34} n={:<7} p50={:>8.2}us p90={:>8.2}us p99={:>8.2}us p99.9={:>8.2}us max={:>9.2}us mean={:>8.2}us",
        hops.len(),
        micros(0.5),
        micros(0.9),
        micros(0.99),
        micros(0.999),
        histogram.max() as f64 / 1000.0,
        histogram.mean() / 1000.0,
    );
}

fn bench_mesh(criterion: &mut Criterion, harness: &Harness) {
    let mut group = criterion.benchmark_group("mesh_hop");
    group.bench_function("busy_receiver", |bencher| {
        bencher.iter_custom(|iterations| harness.hops(Mode::Busy, iterations).iter().sum())
    });
    // Each parked hop costs PARKED_GAP of wall time that criterion does not see: keep it short.
    group.sample_size(10).measurement_time(Duration::from_millis(500));
    group.bench_function("parked_receiver", |bencher| {
        bencher.iter_custom(|iterations| harness.hops(Mode::Parked, iterations).iter().sum())
    });
    group.finish();
}

/// glommio's shared channels, ping-pong between executors on CPUs 0 and 1; per-hop figures
/// are round trip / 2. Returns `None` if it did not finish in time (DESIGN §9 saw hangs).
fn shared_channel_hops() -> Option<Vec<Duration>> {
    let (ping_sender, ping_receiver) = shared_channel::new_bounded::<Instant>(1);
    let (pong_sender, pong_receiver) = shared_channel::new_bounded::<Instant>(1);
    let finished = Arc::new(AtomicBool::new(false));
    let pinger = LocalExecutorBuilder::new(Placement::Fixed(0))
        .spawn(move || async move {
            let (pings, pongs) = (ping_sender.connect().await, pong_receiver.connect().await);
            let mut hops = Vec::with_capacity(SHARED_CHANNEL_ROUND_TRIPS as usize);
            for _ in 0..SHARED_CHANNEL_ROUND_TRIPS {
                let started = Instant::now();
                pings.send(started).await.expect("ponger alive");
                pongs.recv().await.expect("ponger alive");
                hops.push(started.elapsed() / 2);
            }
            hops
        })
        .expect("executor 0");
    let ponger = LocalExecutorBuilder::new(Placement::Fixed(1))
        .spawn(move || async move {
            let (pings, pongs) = (ping_receiver.connect().await, pong_sender.connect().await);
            while let Some(stamp) = pings.recv().await {
                if pongs.send(stamp).await.is_err() {
                    break;
                }
            }
        })
        .expect("executor 1");
    let watchdog_finished = finished.clone();
    std::thread::spawn(move || {
        std::thread::sleep(SHARED_CHANNEL_TIMEOUT);
        if !watchdog_finished.load(Ordering::SeqCst) {
            println!("glommio shared_channel ping-pong: no progress in {SHARED_CHANNEL_TIMEOUT:?} (hung)");
            std::process::exit(0);
        }
    });
    let hops = pinger.join().ok();
    finished.store(true, Ordering::SeqCst);
    let _ = ponger.join();
    hops
}

fn main() {
    let mut criterion = Criterion::default().configure_from_args();
    let harness = Harness::start();
    bench_mesh(&mut criterion, &harness);
    println!("\nper-hop percentiles (one-way, HdrHistogram):");
    print_percentiles("jetcore mesh, busy receiver", &harness.hops(Mode::Busy, HISTOGRAM_HOPS_BUSY));
    for gap in PARKED_GAPS_HISTOGRAM {
        let label = format!("jetcore mesh, parked, gap {gap:?}");
        print_percentiles(&label, &harness.hops_with_gap(Mode::Parked, gap, HISTOGRAM_HOPS_PARKED));
    }
    harness.stop();
    match shared_channel_hops() {
        Some(hops) => print_percentiles("glommio shared_channel (rtt/2)", &hops),
        None => println!("glommio shared_channel ping-pong failed"),
    }
    criterion.final_summary();
}
