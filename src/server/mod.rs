//! The NATS server: listeners, connections, interest, auth, CLI/config, monitoring.
//! It routes; it does not mutate streams directly (DESIGN §6).

pub mod auth;
pub mod batch;
pub mod calls;
pub mod catalog;
pub mod client_listener;
pub mod conf;
pub mod conf_permissions;
pub mod conf_syntax;
pub mod conf_tls;
pub mod connection;
pub mod consumer_pump;
pub mod consumer_routing;
pub mod control;
pub mod embedded;
pub mod envelope;
pub mod guard;
pub mod info;
pub mod interest;
pub mod jetstream_routing;
pub mod leaf;
pub mod logging;
pub mod match_cache;
pub mod monitor;
pub mod nkey;
pub mod node;
pub mod options;
pub mod outbound;
pub mod permissions;
pub mod reload;
pub mod router;
pub mod run;
pub mod shard_ops;
pub mod shutdown;
pub mod signals;
pub mod source_cycles;
pub mod source_pump;
pub mod store_lock;
pub mod tls;
pub mod trace;

pub use embedded::{Server, ServerBuilder};
pub use options::{parse_args, Command, Options};
pub use run::run;
