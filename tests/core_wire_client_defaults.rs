//! What a client gets when its CONNECT leaves options out, or sends odd bytes, compared
//! as literal bytes with what nats-server 2.15.1 answered to the same input: verbose and
//! pedantic are on unless CONNECT turns them off (also before CONNECT), `+OK` comes
//! before the messages its PUB causes, invalid UTF-8 is replaced rather than refused.

mod common;

use common::jetstream::{api, connect};
use common::{RawClient, TestServer};

fn raw(server: &TestServer) -> RawClient {
    let (client, info) = RawClient::connect(&server.address());
    assert!(info.starts_with("INFO {"), "{info}");
    client
}

#[test]
fn an_empty_connect_is_verbose() {
    let server = TestServer::start(&[]);
    let mut client = raw(&server);
    client.send(b"CONNECT {}\r\nPING\r\n");
    assert_eq!(client.line(), "+OK\r\n");
    assert_eq!(client.line(), "PONG\r\n");
}

#[test]
fn the_ok_of_a_publish_comes_before_the_message_it_delivers() {
    let server = TestServer::start(&[]);
    let mut client = raw(&server);
    client.send(b"CONNECT {\"verbose\":true}\r\nSUB a 1\r\nPUB a 2\r\nhi\r\nPING\r\n");
    assert_eq!(client.line(), "+OK\r\n", "CONNECT");
    assert_eq!(client.line(), "+OK\r\n", "SUB");
    assert_eq!(client.line(), "+OK\r\n", "PUB");
    assert_eq!(client.line(), "MSG a 1 2\r\n");
    assert_eq!(client.exact(4), b"hi\r\n");
    assert_eq!(client.line(), "PONG\r\n");
}

#[test]
fn a_publish_before_connect_is_acknowledged() {
    let server = TestServer::start(&[]);
    let mut client = raw(&server);
    client.send(b"PUB a 2\r\nhi\r\nCONNECT {\"verbose\":true}\r\nPING\r\n");
    assert_eq!(client.line(), "+OK\r\n", "PUB");
    assert_eq!(client.line(), "+OK\r\n", "CONNECT");
    assert_eq!(client.line(), "PONG\r\n");
}

#[test]
fn a_wildcard_publish_is_refused_unless_pedantic_is_off() {
    let server = TestServer::start(&[]);
    let mut client = raw(&server);
    client
        .send(b"CONNECT {\"verbose\":false}\r\nSUB > 1\r\nPUB > 1\r\nx\r\nPUB a.* 1\r\ny\r\nPUB ok 1\r\nz\r\nPING\r\n");
    assert_eq!(client.line(), "-ERR 'Invalid Publish Subject'\r\n");
    assert_eq!(client.line(), "-ERR 'Invalid Publish Subject'\r\n");
    assert_eq!(client.line(), "MSG ok 1 1\r\n", "the connection stays and serves");
    assert_eq!(client.exact(3), b"z\r\n");
    assert_eq!(client.line(), "PONG\r\n");

    let mut lenient = raw(&server);
    lenient.send(b"CONNECT {\"verbose\":false,\"pedantic\":false}\r\nPUB > 1\r\nx\r\nPING\r\n");
    assert_eq!(lenient.line(), "PONG\r\n");
}

#[test]
fn invalid_utf8_in_connect_is_accepted() {
    let server = TestServer::start(&[]);
    let mut client = raw(&server);
    client.send(b"CONNECT {\"name\":\"\xff\xfe\",\"verbose\":false}\r\nPING\r\n");
    assert_eq!(client.line(), "PONG\r\n");
}

#[tokio::test]
async fn invalid_utf8_in_an_api_body_is_replaced() {
    let server = TestServer::start(&[]);
    let (client, _js) = connect(&server).await;
    let body = b"{\"name\":\"U\",\"subjects\":[\"u\"],\"description\":\"\xff\"}".to_vec();
    let reply = client.request("$JS.API.STREAM.CREATE.U", body.into()).await.expect("create");
    let created: serde_json::Value = serde_json::from_slice(&reply.payload).expect("JSON reply");
    assert_eq!(created["config"]["description"], "\u{fffd}", "{created}");
    let info = api(&client, "STREAM.INFO.U", "").await;
    assert_eq!(info["config"]["description"], "\u{fffd}");
}

#[tokio::test]
async fn stream_names_descriptions_and_metadata_have_nats_server_limits() {
    let server = TestServer::start(&[]);
    let (client, _js) = connect(&server).await;
    let refused = |reply: serde_json::Value, text: &str| {
        assert_eq!(reply["error"]["code"], 500, "{reply}");
        assert_eq!(reply["error"]["err_code"], 10052, "{reply}");
        assert_eq!(reply["error"]["description"], text, "{reply}");
    };
    let name = "N".repeat(256);
    let body = serde_json::json!({ "name": name }).to_string();
    refused(
        api(&client, &format!("STREAM.CREATE.{name}"), &body).await,
        "stream name is too long, maximum allowed is 255",
    );

    let body = serde_json::json!({ "name": "D", "description": "x".repeat(4097) }).to_string();
    refused(api(&client, "STREAM.CREATE.D", &body).await, "stream description is too long, maximum allowed is 4096");
    let body = serde_json::json!({ "name": "D", "description": "x".repeat(4096) }).to_string();
    assert!(api(&client, "STREAM.CREATE.D", &body).await["error"].is_null(), "4096 bytes is allowed");

    let body = serde_json::json!({ "name": "M", "metadata": { "k": "v".repeat(128 * 1024) } }).to_string();
    refused(api(&client, "STREAM.CREATE.M", &body).await, "stream metadata exceeds maximum size of 131072 bytes");
}

#[test]
fn a_connection_over_max_connections_gets_info_then_the_error() {
    let config = tempfile::NamedTempFile::new().expect("config file");
    std::fs::write(config.path(), "max_connections: 1\n").expect("write config");
    let server = TestServer::start(&["-c", config.path().to_str().unwrap()]);
    let mut first = raw(&server);
    first.send(b"CONNECT {\"verbose\":false}\r\nPING\r\n");
    assert_eq!(first.line(), "PONG\r\n");
    let (mut refused, info) = RawClient::connect(&server.address());
    assert!(info.starts_with("INFO {"), "{info}");
    assert_eq!(refused.line(), "-ERR 'maximum connections exceeded'\r\n");
    assert_eq!(refused.line(), "", "closed");
}
