//! What a start-up log says: the client address and whether the server is ready. Both
//! jetcore and nats-server write these lines (nats-server's wording, which harnesses
//! match).

const LISTENING: &str = "Listening for client connections on ";
const READY: &str = "Server is ready";

/// The client address (`HOST:PORT`) from the last `Listening for client connections on`
/// line, once a `Server is ready` line follows it; `None` until then.
pub fn ready_address(log: &str) -> Option<String> {
    let listening = log.rfind(LISTENING)?;
    let rest = &log[listening + LISTENING.len()..];
    if !rest.contains(READY) {
        return None;
    }
    let address = rest.split_whitespace().next()?;
    Some(connectable(address))
}

/// A wildcard listen address becomes loopback, which a client can connect to.
fn connectable(address: &str) -> String {
    let Some((host, port)) = address.rsplit_once(':') else { return address.to_string() };
    match host {
        "0.0.0.0" | "[::]" | "::" | "" => format!("127.0.0.1:{port}"),
        _ => address.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_address_is_known_once_the_server_is_ready() {
        let starting = "2026-01-01T00:00:00Z  INFO Listening for client connections on 127.0.0.1:40123\n";
        assert_eq!(ready_address(starting), None);
        let ready = format!("{starting}2026-01-01T00:00:00Z  INFO Server is ready\n");
        assert_eq!(ready_address(&ready).as_deref(), Some("127.0.0.1:40123"));
    }

    #[test]
    fn nats_server_lines_and_wildcard_hosts() {
        let log = "[1] 2026/01/01 00:00:00.000000 [INF] Listening for client connections on 0.0.0.0:4222\n\
                   [1] 2026/01/01 00:00:00.000000 [INF] Server is ready\n";
        assert_eq!(ready_address(log).as_deref(), Some("127.0.0.1:4222"));
    }

    #[test]
    fn the_latest_start_wins() {
        let log = "Listening for client connections on 127.0.0.1:1\nServer is ready\n\
                   Listening for client connections on 127.0.0.1:2\n";
        assert_eq!(ready_address(log), None);
    }
}
