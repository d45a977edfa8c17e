//! The INFO line a client reads first. The version names the nats-server feature level
//! jetcore implements: clients choose code paths by it (wire digest §1.3).

use super::node::Node;
use crate::protocol::{self, ServerInfo};

/// The nats-server version whose client-visible behaviour jetcore implements.
pub const NATS_COMPATIBLE_VERSION: &str = "2.12.0";

pub fn encode_for_client(out: &mut Vec<u8>, node: &Node, client_id: u64, client_ip: &str, auth: bool) {
    encode_for_tls_client(out, node, client_id, client_ip, auth, None, false);
}

/// As [`encode_for_client`]; `nonce`: for nkey users to sign; `tls_first`: sent inside a
/// TLS-first session, where nats-server says `tls_required` even when plaintext clients
/// are allowed too.
pub fn encode_for_tls_client(
    out: &mut Vec<u8>,
    node: &Node,
    client_id: u64,
    client_ip: &str,
    auth: bool,
    nonce: Option<&str>,
    tls_first: bool,
) {
    let mut info = ServerInfo {
        client_id: Some(client_id),
        client_ip: Some(client_ip.to_string()),
        auth_required: auth,
        nonce: nonce.map(str::to_string),
        ..server_info(node)
    };
    info.tls_required |= tls_first;
    protocol::encode_info(out, &info);
}

/// The INFO nats-server sends its clients when it enters lame duck mode: the usual
/// fields plus `"ldm":true`, which tells clients to reconnect elsewhere.
pub fn encode_lame_duck(out: &mut Vec<u8>, node: &Node) {
    let mut info = serde_json::to_value(server_info(node)).expect("ServerInfo serialises to JSON");
    if let Some(fields) = info.as_object_mut() {
        fields.insert("ldm".to_string(), serde_json::Value::Bool(true));
    }
    out.extend_from_slice(b"INFO ");
    out.extend_from_slice(info.to_string().as_bytes());
    out.extend_from_slice(b"\r\n");
}

fn server_info(node: &Node) -> ServerInfo {
    let live = node.ops.live_options();
    let tls = live.tls_context.as_ref().map(|context| &context.settings);
    ServerInfo {
        server_id: node.identity.server_id.clone(),
        server_name: node.identity.server_name.clone(),
        version: NATS_COMPATIBLE_VERSION.to_string(),
        proto: 1,
        go: format!("jetcore {}", env!("CARGO_PKG_VERSION")),
        host: node.options.host.clone(),
        port: node.identity.port,
        headers: true,
        max_payload: node.options.max_payload,
        jetstream: node.options.jetstream,
        client_id: None,
        client_ip: None,
        auth_required: super::auth::required(&node.ops.live_options()),
        tls_required: tls.is_some() && !live.allow_non_tls,
        tls_verify: tls.is_some_and(|settings| settings.verifies_clients()),
        tls_available: tls.is_some() && live.allow_non_tls,
        nonce: None,
        connect_urls: Vec::new(),
        domain: node.options.jetstream_domain.clone().filter(|_| node.options.jetstream),
        api_lvl: None,
    }
}
