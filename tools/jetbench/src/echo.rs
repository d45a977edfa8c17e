//! The durable echo: the floor under a one-in-flight durable publish as a whole, with no
//! server in it. A client thread sends a request the size of a 128 B publish over
//! loopback TCP; an echo thread reads it, makes one 4 KiB block durable (the variant's
//! way, into written blocks) and answers with a reply the size of a pub ack; the client
//! times each round trip. That is one socket read, one durable write and one socket write
//! per request, on one thread: what any server that acknowledges only after the disk
//! must do at least. Both threads run unpinned, as the servers' threads do.

use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{Report, Sampler, Variant};

/// `PUB` of a 128 B payload with a reply subject, as jetbench's `js-pub-sync` sends it.
const REQUEST_BYTES: usize = 180;
/// A pub ack's `MSG` line and JSON body.
const REPLY_BYTES: usize = 110;
/// The echo thread's "file prepared" byte, sent once before the first request.
const READY: u8 = b'!';

/// Runs the echo for `duration` and reports the client's round trips.
pub fn measure(dir: &Path, variant: Variant, duration: Duration, pause: Option<Duration>) -> io::Result<Report> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let address = listener.local_addr()?;
    let dir: PathBuf = dir.to_path_buf();
    let echo =
        std::thread::Builder::new().name("durable-echo".into()).spawn(move || serve(&listener, &dir, variant))?;
    let mut client = TcpStream::connect(address)?;
    client.set_nodelay(true)?;
    let mut ready = [0u8; 1];
    let report = client.read_exact(&mut ready).and_then(|()| ask(&mut client, variant, duration, pause));
    drop(client);
    let served = echo.join().map_err(|_| io::Error::other("the echo thread panicked"))?;
    served.and(report)
}

/// The client: one request in flight until `duration` has passed.
fn ask(client: &mut TcpStream, variant: Variant, duration: Duration, pause: Option<Duration>) -> io::Result<Report> {
    let request = [b'p'; REQUEST_BYTES];
    let mut reply = [0u8; REPLY_BYTES];
    super::timed(variant, duration, pause, |_| {
        client.write_all(&request)?;
        client.read_exact(&mut reply)
    })
}

/// The echo thread: prepares the file, then makes a block durable per request and
/// answers, until the client hangs up.
fn serve(listener: &TcpListener, dir: &Path, variant: Variant) -> io::Result<()> {
    let (mut socket, _) = listener.accept()?;
    socket.set_nodelay(true)?;
    let mut sampler = Sampler::prepare(dir, variant)?;
    socket.write_all(&[READY])?;
    let mut request = [0u8; REQUEST_BYTES];
    let reply = [b'a'; REPLY_BYTES];
    let mut count = 0u64;
    loop {
        match socket.read_exact(&mut request) {
            Ok(()) => {}
            Err(error) if error.kind() == io::ErrorKind::UnexpectedEof => return Ok(()),
            Err(error) => return Err(error),
        }
        sampler.durable_write(count)?;
        socket.write_all(&reply)?;
        count += 1;
    }
}
