//! The NATS server: listeners, connections, interest, auth, CLI/config, monitoring.
//! It routes; it does not mutate streams directly (DESIGN §6).

pub mod conf;
pub mod conf_syntax;
pub mod options;
