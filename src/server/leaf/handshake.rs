//! The leaf handshake, spoke side: the hub's INFO, our CONNECT, the hub's second INFO
//! (`connect_info: true`) after which interest may be sent (nats-server
//! `processLeafnodeInfo`, `sendLeafConnect`, `sendPermsAndAccountInfo`).

use serde::{Deserialize, Serialize};

use super::config::LeafUrl;
use crate::server::permissions::{Permissions, Rule, SubjectRules};

/// The fields of a hub's INFO the spoke uses.
#[derive(Debug, Default, Deserialize)]
pub struct HubInfo {
    #[serde(default)]
    pub server_id: String,
    #[serde(default)]
    pub server_name: String,
    #[serde(default)]
    pub version: String,
    #[serde(default)]
    pub cluster: Option<String>,
    #[serde(default)]
    pub domain: Option<String>,
    #[serde(default)]
    pub client_id: u64,
    #[serde(default)]
    pub leafnode_urls: Option<Vec<String>>,
    /// Set on the hub's answer to CONNECT.
    #[serde(default)]
    pub connect_info: bool,
    #[serde(default)]
    pub remote_account: Option<String>,
    #[serde(default)]
    pub max_payload: Option<usize>,
    /// What this spoke may receive (subscribe) and send (publish) over the link, as the
    /// hub's user permissions say, for the spoke to enforce (`sendPermsAndAccountInfo`).
    #[serde(default)]
    pub import: Option<WirePermission>,
    #[serde(default)]
    pub export: Option<WirePermission>,
}

/// nats-server's `SubjectPermission` as it travels in INFO.
#[derive(Debug, Default, Deserialize)]
pub struct WirePermission {
    #[serde(default)]
    pub allow: Option<Vec<String>>,
    #[serde(default)]
    pub deny: Option<Vec<String>>,
}

impl WirePermission {
    fn rules(&self) -> SubjectRules {
        let parse = |texts: &Vec<String>| texts.iter().filter_map(|text| Rule::parse(text).ok()).collect::<Vec<_>>();
        SubjectRules { allow: self.allow.as_ref().map(parse), deny: self.deny.as_ref().map(parse).unwrap_or_default() }
    }
}

/// The link's permissions: the hub's export rules as what may be published (sent) over
/// it, its import rules as what may be subscribed (asked for and received); with
/// JetStream here, `$JS.API.>`, `$KV.>` and `$OBJ.>` denied both ways (leafnode.md: one
/// answer per request). None when nothing is restricted.
pub fn link_permissions(info: &HubInfo, jetstream_local: bool) -> Option<Permissions> {
    let mut permissions = Permissions {
        publish: info.export.as_ref().map(WirePermission::rules).unwrap_or_default(),
        subscribe: info.import.as_ref().map(WirePermission::rules).unwrap_or_default(),
        responses: None,
    };
    if jetstream_local {
        for subject in ["$JS.API.>", "$KV.>", "$OBJ.>"] {
            let rule = Rule { subject: subject.to_string(), queue: None };
            permissions.publish.deny.push(rule.clone());
            permissions.subscribe.deny.push(rule);
        }
    }
    let open = |rules: &SubjectRules| rules.allow.is_none() && rules.deny.is_empty();
    (!open(&permissions.publish) || !open(&permissions.subscribe)).then_some(permissions)
}

impl HubInfo {
    pub fn parse(json: &[u8]) -> Result<HubInfo, String> {
        serde_json::from_slice(json).map_err(|error| format!("invalid INFO from the hub: {error}"))
    }

    /// A zero `client_id` or no `leafnode_urls`: the port is not a leafnode port (a
    /// client or route port answered).
    pub fn check_leafnode_port(&self) -> Result<(), String> {
        if self.client_id == 0 || self.leafnode_urls.is_none() {
            return Err("the remote port is not a leafnode port (no client_id or leafnode_urls in its INFO)".into());
        }
        Ok(())
    }

    /// The hub's advertised leafnode URLs, parsed; malformed ones are skipped.
    pub fn advertised_urls(&self) -> Vec<LeafUrl> {
        let urls = self.leafnode_urls.as_deref().unwrap_or_default();
        urls.iter().filter_map(|url| LeafUrl::parse(url).ok()).collect()
    }
}

/// The CONNECT a spoke sends (nats-server `leafConnectInfo`). Never `lang`: a hub takes
/// a CONNECT with `lang` for a client's and refuses it.
#[derive(Debug, Serialize)]
pub struct LeafConnect<'a> {
    pub version: &'a str,
    pub server_id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub domain: Option<&'a str>,
    pub name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster: Option<&'a str>,
    pub headers: bool,
    pub jetstream: bool,
    pub compress_mode: &'a str,
    pub remote_account: &'a str,
    pub protocol: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pass: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auth_token: Option<&'a str>,
}

impl LeafConnect<'_> {
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"CONNECT ");
        // Plain strings and booleans always serialise.
        out.extend_from_slice(&serde_json::to_vec(self).expect("CONNECT serialises to JSON"));
        out.extend_from_slice(b"\r\n");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_port_is_told_apart() {
        let client = HubInfo::parse(br#"{"server_id":"N","client_id":5}"#).unwrap();
        assert!(client.check_leafnode_port().is_err());
        let hub = HubInfo::parse(br#"{"server_id":"N","client_id":5,"leafnode_urls":["127.0.0.1:7422"]}"#).unwrap();
        assert!(hub.check_leafnode_port().is_ok());
        assert_eq!(hub.advertised_urls()[0].port, 7422);
    }

    #[test]
    fn the_hubs_permissions_and_the_jetstream_denies_apply() {
        let info = HubInfo::parse(br#"{"client_id":1,"import":{"allow":["in.>"]},"export":{"deny":["secret.>"]}}"#);
        let permissions = link_permissions(&info.unwrap(), true).unwrap();
        assert!(permissions.may_subscribe(b"in.a", None) && !permissions.may_subscribe(b"other", None));
        assert!(permissions.may_publish(b"out.a") && !permissions.may_publish(b"secret.a"));
        assert!(!permissions.may_publish(b"$JS.API.INFO") && !permissions.may_subscribe(b"$KV.b.k", None));
        assert!(link_permissions(&HubInfo::parse(br#"{"client_id":1}"#).unwrap(), false).is_none());
    }

    #[test]
    fn connect_has_no_lang_and_carries_credentials() {
        let connect = LeafConnect {
            version: "2.12.0",
            server_id: "S",
            domain: Some("edge"),
            name: "edge-1",
            cluster: None,
            headers: true,
            jetstream: true,
            compress_mode: "not supported",
            remote_account: "$G",
            protocol: 1,
            user: Some("leaf"),
            pass: Some("pw"),
            auth_token: None,
        };
        let mut out = Vec::new();
        connect.encode(&mut out);
        let text = String::from_utf8(out).unwrap();
        assert!(!text.contains("lang") && text.contains("\"user\":\"leaf\"") && text.ends_with("}\r\n"), "{text}");
    }
}
