//! disk-floor: the disk's own durable-write round trip, the floor under a durable publish
//! with one in flight (issue 21). One 4 KiB O_DIRECT write made durable at a time, at
//! queue depth 1, into a file prepared as jetcore prepares its segments, in a directory
//! on the filesystem under test.
//!
//! Each variant is one way to make the write durable:
//! - `--submit syscall`: pwrite(2) + fdatasync(2), or pwritev2(RWF_DSYNC), from this thread;
//! - `--submit uring`: the same through an io_uring at depth 1 (what a glommio shard does:
//!   the kernel runs a blocking fdatasync on one of its io-wq worker threads);
//! - `--durability fdatasync | dsync | linked`: a write then an fdatasync, or one write
//!   with RWF_DSYNC (durable when it completes; a cache flush, or FUA where the disk has
//!   it), or (io_uring only) the write linked to its fdatasync, submitted together;
//! - `--blocks written | unwritten`: the file is fallocated, and either zeroed and synced
//!   first (jetcore's zero-ahead: an fdatasync is then a cache flush) or left as unwritten
//!   extents (the first write to each block changes metadata: a journal commit).
//!
//!
//! Each way into written blocks runs twice: alone, and as a durable echo (`echo-…`,
//! `echo.rs`): a client thread asks for each write over loopback TCP and waits for its
//! acknowledgement, the least any server that acknowledges after the disk can do.
//!
//! `disk-floor --dir DIR [--duration 2s] [--pause 1s] [--json FILE]` runs every variant
//! and prints a table; `--only` picks variants (`syscall-fdatasync-written`, ...). The JSON holds one
//! jetbench-shaped report per variant (`scenario`, `msgs_per_s`, `latency` with its curve).

mod block_file;
mod echo;

#[allow(dead_code, reason = "shared with jetbench; merging is not needed here")]
#[path = "latency.rs"]
mod latency;
#[allow(dead_code, reason = "shared with jetbench; this tool uses only the latency limits")]
#[path = "limits.rs"]
mod limits;

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use clap::Parser;
use io_uring::{opcode, types, IoUring};
use serde::Serialize;

use block_file::{prepare, AlignedBlock, BLOCK_BYTES, FILE_BYTES};
use latency::{LatencyRecorder, LatencySummary};

const FILE_NAME: &str = ".jetbench-disk-floor";

#[derive(Parser)]
#[command(name = "disk-floor", about = "O_DIRECT 4 KiB durable write latency at queue depth 1")]
struct Cli {
    /// Directory on the filesystem to measure (a file is created and removed there).
    #[arg(long, default_value = ".")]
    dir: PathBuf,
    /// How long each variant runs (e.g. 2s, 500ms).
    #[arg(long, default_value = "2s", value_parser = parse_seconds)]
    duration: Duration,
    /// Comma-separated variants to run (default: all).
    #[arg(long)]
    only: Option<String>,
    /// Sleep this long before each sample: the disk's round trip after idle (issue 28's
    /// first publish after a silence), e.g. `--pause 1s --duration 20s`.
    #[arg(long, value_parser = parse_seconds)]
    pause: Option<Duration>,
    /// Write the reports as JSON here.
    #[arg(long)]
    json: Option<PathBuf>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Submit {
    Syscall,
    Uring,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Durability {
    Fdatasync,
    Dsync,
    /// io_uring only: the write linked to its fdatasync (IOSQE_IO_LINK), both submitted
    /// at once; the fdatasync starts when the write completes, in the kernel.
    Linked,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Blocks {
    Written,
    Unwritten,
}

#[derive(Clone, Copy)]
struct Variant {
    submit: Submit,
    durability: Durability,
    blocks: Blocks,
    /// Each write is asked for and acknowledged over loopback TCP (`echo.rs`).
    echo: bool,
}

impl Variant {
    fn all() -> Vec<Variant> {
        let mut variants = Vec::new();
        for blocks in [Blocks::Written, Blocks::Unwritten] {
            for submit in [Submit::Syscall, Submit::Uring] {
                for durability in [Durability::Fdatasync, Durability::Dsync, Durability::Linked] {
                    if durability == Durability::Linked && submit == Submit::Syscall {
                        continue;
                    }
                    variants.push(Variant { submit, durability, blocks, echo: false });
                }
            }
        }
        // The echo over every way into written blocks (what a server's stores see).
        let echoes: Vec<Variant> = variants
            .iter()
            .filter(|variant| variant.blocks == Blocks::Written)
            .map(|variant| Variant { echo: true, ..*variant })
            .collect();
        variants.extend(echoes);
        variants
    }

    fn name(&self) -> String {
        let submit = if self.submit == Submit::Syscall { "syscall" } else { "uring" };
        let durability = match self.durability {
            Durability::Fdatasync => "fdatasync",
            Durability::Dsync => "dsync",
            Durability::Linked => "linked",
        };
        let blocks = if self.blocks == Blocks::Written { "written" } else { "unwritten" };
        let echo = if self.echo { "echo-" } else { "" };
        format!("{echo}{submit}-{durability}-{blocks}")
    }
}

/// One variant's result, shaped like a jetbench report so perf/ scripts read both alike.
#[derive(Serialize)]
struct Report {
    tool: &'static str,
    scenario: String,
    elapsed_s: f64,
    messages_acknowledged: u64,
    msgs_per_s: f64,
    latency: Option<LatencySummary>,
    /// The write alone and the fdatasync alone (fdatasync variants only).
    write_latency: Option<LatencySummary>,
    sync_latency: Option<LatencySummary>,
}

fn parse_seconds(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let (number, scale) =
        if let Some(ms) = text.strip_suffix("ms") { (ms, 1e-3) } else { (text.strip_suffix('s').unwrap_or(text), 1.0) };
    let value: f64 = number.parse().map_err(|_| format!("not a duration: {text:?}"))?;
    Ok(Duration::from_secs_f64(value * scale))
}

/// The per-variant sample loop: write block `index`, make it durable, time both.
struct Sampler {
    file: File,
    block: AlignedBlock,
    ring: Option<IoUring>,
    variant: Variant,
}

impl Sampler {
    fn uring_one(&mut self, entry: io_uring::squeue::Entry) -> io::Result<i32> {
        let ring = self.ring.as_mut().expect("uring variant has a ring");
        // SAFETY: the entry's buffer (our block) outlives the wait below.
        unsafe { ring.submission().push(&entry).map_err(|_| io::Error::other("submission queue full"))? };
        ring.submit_and_wait(1)?;
        let completion = ring.completion().next().ok_or_else(|| io::Error::other("no completion"))?;
        if completion.result() < 0 {
            return Err(io::Error::from_raw_os_error(-completion.result()));
        }
        Ok(completion.result())
    }

    fn write(&mut self, offset: u64, dsync: bool) -> io::Result<()> {
        let flags = if dsync { libc::RWF_DSYNC } else { 0 };
        let fd = self.file.as_raw_fd();
        let written = match self.variant.submit {
            Submit::Syscall => {
                self.block.write_at(&self.file, BLOCK_BYTES, offset, flags)?;
                BLOCK_BYTES as i32
            }
            Submit::Uring => {
                let entry = opcode::Write::new(types::Fd(fd), self.block.pointer, BLOCK_BYTES as u32)
                    .offset(offset)
                    .rw_flags(flags)
                    .build();
                self.uring_one(entry)?
            }
        };
        if written as usize != BLOCK_BYTES {
            return Err(io::Error::other("short write"));
        }
        Ok(())
    }

    /// The write and its fdatasync as one linked chain: one submission, two completions.
    fn write_linked(&mut self, offset: u64) -> io::Result<()> {
        let fd = self.file.as_raw_fd();
        let write = opcode::Write::new(types::Fd(fd), self.block.pointer, BLOCK_BYTES as u32)
            .offset(offset)
            .build()
            .flags(io_uring::squeue::Flags::IO_LINK);
        let sync = opcode::Fsync::new(types::Fd(fd)).flags(types::FsyncFlags::DATASYNC).build();
        let ring = self.ring.as_mut().expect("linked variants use a ring");
        // SAFETY: the write's buffer (our block) outlives the wait below.
        unsafe { ring.submission().push_multiple(&[write, sync]).map_err(|_| io::Error::other("queue full"))? };
        ring.submit_and_wait(2)?;
        let results: Vec<i32> = ring.completion().map(|completion| completion.result()).collect();
        if results.len() != 2 {
            return Err(io::Error::other("missing completion"));
        }
        if let Some(error) = results.iter().find(|result| **result < 0) {
            return Err(io::Error::from_raw_os_error(-error));
        }
        if results[0] as usize != BLOCK_BYTES {
            return Err(io::Error::other("short write"));
        }
        Ok(())
    }

    fn fdatasync(&mut self) -> io::Result<()> {
        match self.variant.submit {
            Submit::Syscall => self.file.sync_data(),
            Submit::Uring => {
                let fd = self.file.as_raw_fd();
                let entry = opcode::Fsync::new(types::Fd(fd)).flags(types::FsyncFlags::DATASYNC).build();
                self.uring_one(entry).map(|_| ())
            }
        }
    }

    /// Whether block `count` fits the file.
    fn has_room(count: u64) -> bool {
        (count + 1) * (BLOCK_BYTES as u64) <= FILE_BYTES
    }

    /// Writes block `count` and makes it durable the variant's way. With a write and an
    /// fdatasync, returns how long each took.
    fn durable_write(&mut self, count: u64) -> io::Result<Option<(Duration, Duration)>> {
        self.block.bytes_mut()[..8].copy_from_slice(&count.to_le_bytes());
        let offset = count * BLOCK_BYTES as u64;
        match self.variant.durability {
            Durability::Dsync => self.write(offset, true).map(|()| None),
            Durability::Linked => self.write_linked(offset).map(|()| None),
            Durability::Fdatasync => {
                let begun = Instant::now();
                self.write(offset, false)?;
                let written = Instant::now();
                self.fdatasync()?;
                Ok(Some((written - begun, written.elapsed())))
            }
        }
    }

    fn run(&mut self, duration: Duration, pause: Option<Duration>) -> io::Result<Report> {
        let (mut writes, mut syncs) = (LatencyRecorder::new(), LatencyRecorder::new());
        let variant = self.variant;
        let mut report = timed(variant, duration, pause, |count| {
            if let Some((write, sync)) = self.durable_write(count)? {
                writes.record(write);
                syncs.record(sync);
            }
            Ok(())
        })?;
        report.write_latency = writes.summary();
        report.sync_latency = syncs.summary();
        Ok(report)
    }
}

/// Runs `one` (the `count`-th durable write, by whatever way) at queue depth 1 until
/// `duration` has passed or the file is full, sleeping `pause` before each, and reports
/// its latencies. With pauses the rate says nothing about the disk; the latencies do.
fn timed(
    variant: Variant,
    duration: Duration,
    pause: Option<Duration>,
    mut one: impl FnMut(u64) -> io::Result<()>,
) -> io::Result<Report> {
    let mut total = LatencyRecorder::new();
    let started = Instant::now();
    let mut count = 0u64;
    while started.elapsed() < duration && Sampler::has_room(count) {
        if let Some(pause) = pause {
            std::thread::sleep(pause);
        }
        let begun = Instant::now();
        one(count)?;
        total.record(begun.elapsed());
        count += 1;
    }
    let elapsed = started.elapsed().as_secs_f64();
    Ok(Report {
        tool: "disk-floor",
        scenario: variant.name(),
        elapsed_s: elapsed,
        messages_acknowledged: count,
        msgs_per_s: count as f64 / elapsed,
        latency: total.summary(),
        write_latency: None,
        sync_latency: None,
    })
}

impl Sampler {
    /// A new test file in `dir`, prepared for `variant`.
    fn prepare(dir: &Path, variant: Variant) -> io::Result<Sampler> {
        let file = prepare(&dir.join(FILE_NAME), variant.blocks == Blocks::Written)?;
        let ring = if variant.submit == Submit::Uring { Some(IoUring::new(8)?) } else { None };
        Ok(Sampler { file, block: AlignedBlock::new(BLOCK_BYTES), ring, variant })
    }
}

fn measure(dir: &Path, variant: Variant, duration: Duration, pause: Option<Duration>) -> io::Result<Report> {
    let report = if variant.echo {
        echo::measure(dir, variant, duration, pause)
    } else {
        Sampler::prepare(dir, variant).and_then(|mut sampler| sampler.run(duration, pause))
    };
    let _ = std::fs::remove_file(dir.join(FILE_NAME));
    report
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let wanted: Option<Vec<String>> = cli.only.as_ref().map(|only| only.split(',').map(str::to_string).collect());
    let mut reports = Vec::new();
    println!("| variant | per s | p50 µs | p90 µs | p99 µs | p99.9 µs | max µs | write p50 | fdatasync p50 |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for variant in Variant::all() {
        if wanted.as_ref().is_some_and(|wanted| !wanted.contains(&variant.name())) {
            continue;
        }
        let report = match measure(&cli.dir, variant, cli.duration, cli.pause) {
            Ok(report) => report,
            Err(error) => {
                eprintln!("disk-floor: {}: {error}", variant.name());
                return std::process::ExitCode::FAILURE;
            }
        };
        print_row(&report);
        reports.push(report);
    }
    if let Some(path) = &cli.json {
        let text = serde_json::to_string_pretty(&reports).expect("reports serialize");
        if let Err(error) = std::fs::write(path, text + "\n") {
            eprintln!("disk-floor: {}: {error}", path.display());
            return std::process::ExitCode::FAILURE;
        }
    }
    std::process::ExitCode::SUCCESS
}

fn print_row(report: &Report) {
    let Some(total) = &report.latency else { return };
    let part = |summary: &Option<LatencySummary>| {
        summary.as_ref().map_or("—".to_string(), |summary| format!("{:.0}", summary.p50_us))
    };
    println!(
        "| {} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} | {} | {} |",
        report.scenario,
        report.msgs_per_s,
        total.p50_us,
        total.p90_us,
        total.p99_us,
        total.p999_us,
        total.max_us,
        part(&report.write_latency),
        part(&report.sync_latency)
    );
}
