//! The client port: one listening socket per process, shared by its shards.
//!
//! CONTRACT: `ClientListener::bind` returns only once this process listens on the port, so a
//! port another process holds is refused before anything else starts, and no other process
//! can join the port while this one lives. The socket does not set `SO_REUSEPORT`: with it,
//! any later socket that also sets it (another jetcore, or any program of the same user)
//! would join the port and the kernel would spread new connections over both servers.
//! `SO_REUSEADDR` is set (as nats-server and std set it), so a restart is not refused for
//! the previous run's connections in TIME_WAIT; it never lets two sockets listen on one port.
//!
//! Each shard accepts on its own duplicate of the one socket (`ShardListeners`). The
//! kernel queues connections once for the port and wakes one waiting accept per connection
//! (io_uring polls accepts exclusively), so a connection still belongs to the shard that
//! accepted it, for life. The socket is non-blocking from the start: glommio's first,
//! synchronous accept attempt sets and restores `O_NONBLOCK` around the call, and the
//! duplicates share that flag, so with the flag cleared one shard could restore "blocking"
//! while another is about to call `accept` and block its whole thread.
//!
//! The socket listens from `bind` on; connections that arrive while the shards open their
//! streams wait in the backlog and are served once the shards accept.

use std::io::ErrorKind;
use std::net::{SocketAddr, TcpListener as StdTcpListener, ToSocketAddrs};
use std::os::fd::{FromRawFd, IntoRawFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};

use socket2::{Domain, Protocol, Socket, Type};

use crate::limits;
use crate::shard::ShardId;

/// The process's one listening socket on the client port.
pub struct ClientListener {
    socket: StdTcpListener,
    address: SocketAddr,
}

impl ClientListener {
    /// Binds and listens on `host:port` (`port` 0: a free port the kernel picks). A port in
    /// use is tried again until `CLIENT_PORT_RELEASE_WAIT` has passed (see its doc).
    pub fn bind(host: &str, port: u16) -> std::io::Result<ClientListener> {
        let deadline = std::time::Instant::now() + limits::CLIENT_PORT_RELEASE_WAIT;
        loop {
            match ClientListener::bind_once(host, port) {
                Err(error) if error.kind() == ErrorKind::AddrInUse && std::time::Instant::now() < deadline => {
                    std::thread::sleep(limits::CLIENT_PORT_RETRY_INTERVAL);
                }
                result => return result,
            }
        }
    }

    fn bind_once(host: &str, port: u16) -> std::io::Result<ClientListener> {
        let address = (host, port)
            .to_socket_addrs()?
            .next()
            .ok_or_else(|| std::io::Error::other(format!("no address for host {host:?}")))?;
        let socket = Socket::new(Domain::for_address(address), Type::STREAM, Some(Protocol::TCP))?;
        socket.set_reuse_address(true)?;
        socket.set_nonblocking(true)?;
        socket.bind(&address.into())?;
        socket.listen(limits::CLIENT_LISTEN_BACKLOG)?;
        let socket = StdTcpListener::from(socket);
        let address = socket.local_addr()?;
        Ok(ClientListener { socket, address })
    }

    pub fn port(&self) -> u16 {
        self.address.port()
    }

    /// One descriptor of this socket per shard; the listener itself is given up, so the
    /// port closes when the last shard drops its descriptor (lame duck, shutdown).
    pub fn into_shard_listeners(self, shard_count: u16) -> std::io::Result<ShardListeners> {
        let mut descriptors = Vec::with_capacity(usize::from(shard_count));
        for _ in 1..shard_count {
            descriptors.push(self.socket.try_clone()?.into_raw_fd());
        }
        descriptors.push(self.socket.into_raw_fd());
        let taken = descriptors.iter().map(|_| AtomicBool::new(false)).collect();
        Ok(ShardListeners { descriptors, taken })
    }
}

/// Descriptors of the one client socket, one owned by each shard.
pub struct ShardListeners {
    descriptors: Vec<RawFd>,
    /// Whether each shard has taken its descriptor; a second take would own it twice.
    taken: Vec<AtomicBool>,
}

impl ShardListeners {
    /// Shard `shard`'s listener, on the calling shard's executor. Each shard takes its own
    /// once (asserted); a descriptor no shard takes stays open until the process exits.
    pub fn take(&self, shard: ShardId) -> glommio::net::TcpListener {
        let index = usize::from(shard.0);
        let already = self.taken[index].swap(true, Ordering::AcqRel);
        assert!(!already, "shard {index} took its client listener twice");
        // SAFETY: `descriptors[index]` is an open, listening socket that nothing else owns:
        // `into_shard_listeners` gave up every other owner, and the flag above hands it out once.
        unsafe { glommio::net::TcpListener::from_raw_fd(self.descriptors[index]) }
    }

    /// Shard `shard`'s listening descriptor (glommio's listener does not show it).
    pub fn raw_fd(&self, shard: ShardId) -> std::os::fd::RawFd {
        self.descriptors[usize::from(shard.0)]
    }
}

/// Go's wording of an OS error, as nats-server prints it ("address already in use").
pub fn go_error_text(error: &std::io::Error) -> String {
    let text = error.to_string();
    let text = match text.find(" (os error") {
        Some(end) => &text[..end],
        None => &text,
    };
    let mut characters = text.chars();
    match characters.next() {
        Some(first) => first.to_lowercase().chain(characters).collect(),
        None => String::new(),
    }
}
