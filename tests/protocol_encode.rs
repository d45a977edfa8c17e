//! Wire tests for what the server writes: literal expected bytes.

use bytes::BytesMut;
use jetcore::protocol::{
    encode_err, encode_hmsg, encode_info, encode_msg, encode_ok, encode_ping, encode_pong, ConnectOptions, ServerInfo,
};

fn server_info() -> ServerInfo {
    ServerInfo {
        server_id: "NX1".into(),
        server_name: "n1".into(),
        version: "2.12.0".into(),
        proto: 1,
        go: "rust".into(),
        host: "0.0.0.0".into(),
        port: 4222,
        headers: true,
        max_payload: 1_048_576,
        jetstream: true,
        client_id: Some(7),
        client_ip: Some("127.0.0.1".into()),
        auth_required: false,
        tls_required: false,
        tls_verify: false,
        tls_available: false,
        nonce: None,
        connect_urls: Vec::new(),
        domain: None,
        api_lvl: None,
    }
}

#[test]
fn msg_with_and_without_reply() {
    let mut out = Vec::new();
    encode_msg(&mut out, b"foo.bar", b"9", None, b"hello");
    assert_eq!(out, b"MSG foo.bar 9 5\r\nhello\r\n");
    out.clear();
    encode_msg(&mut out, b"foo", b"1", Some(b"_INBOX.x"), b"");
    assert_eq!(out, b"MSG foo 1 _INBOX.x 0\r\n\r\n");
}

#[test]
fn hmsg_counts_header_and_total_bytes() {
    let mut out = BytesMut::new();
    let headers = b"NATS/1.0 503\r\n\r\n";
    encode_hmsg(&mut out, b"_INBOX.a.b", b"0", None, headers, b"");
    assert_eq!(&out[..], b"HMSG _INBOX.a.b 0 16 16\r\nNATS/1.0 503\r\n\r\n\r\n");
    out.clear();
    encode_hmsg(&mut out, b"s", b"2", Some(b"r"), b"NATS/1.0\r\n\r\n", b"abc");
    assert_eq!(&out[..], b"HMSG s 2 r 12 15\r\nNATS/1.0\r\n\r\nabc\r\n");
}

#[test]
fn info_omits_empty_optional_fields() {
    let mut out = Vec::new();
    encode_info(&mut out, &server_info());
    let expected = concat!(
        r#"INFO {"server_id":"NX1","server_name":"n1","version":"2.12.0","proto":1,"#,
        r#""go":"rust","host":"0.0.0.0","port":4222,"headers":true,"max_payload":1048576,"#,
        r#""jetstream":true,"client_id":7,"client_ip":"127.0.0.1"}"#,
        "\r\n"
    );
    assert_eq!(String::from_utf8(out).unwrap(), expected);
}

#[test]
fn info_with_auth_carries_nonce_and_auth_required() {
    let mut info = server_info();
    info.auth_required = true;
    info.nonce = Some("abc".into());
    info.jetstream = false;
    info.client_id = None;
    info.client_ip = None;
    info.api_lvl = Some(1);
    let mut out = Vec::new();
    encode_info(&mut out, &info);
    let text = String::from_utf8(out).unwrap();
    assert!(text.ends_with("\"auth_required\":true,\"nonce\":\"abc\",\"api_lvl\":1}\r\n"));
    assert!(!text.contains("jetstream"));
}

#[test]
fn err_ok_ping_pong_bytes() {
    let mut out = Vec::new();
    encode_err(&mut out, "Unknown Protocol Operation");
    encode_ok(&mut out);
    encode_ping(&mut out);
    encode_pong(&mut out);
    assert_eq!(out, b"-ERR 'Unknown Protocol Operation'\r\n+OK\r\nPING\r\nPONG\r\n");
}

#[test]
fn connect_from_async_nats_and_nats_py() {
    let async_nats = br#"{"verbose":false,"pedantic":false,"lang":"rust","version":"0.51.0","protocol":1,"echo":true,"headers":true,"no_responders":true,"tls_required":false,"name":null,"user":null}"#;
    let options = ConnectOptions::from_json(async_nats).unwrap();
    assert!(options.headers && options.no_responders && options.echo);
    assert_eq!(options.protocol, 1);
    assert_eq!(options.lang.as_deref(), Some("rust"));
    assert_eq!(options.name, None);
    let nats_py = br#"{"echo": false, "headers": true, "lang": "python3", "no_responders": true, "pedantic": false, "protocol": 1, "verbose": true, "unknown_field": [1]}"#;
    let options = ConnectOptions::from_json(nats_py).unwrap();
    assert!(!options.echo && options.verbose);
}

#[test]
fn connect_defaults_echo_true_and_null_booleans_to_default() {
    let options = ConnectOptions::from_json(b"{}").unwrap();
    assert_eq!(options, ConnectOptions::default());
    assert!(options.echo);
    let options = ConnectOptions::from_json(br#"{"echo":null,"verbose":null,"protocol":null}"#);
    assert_eq!(options.unwrap(), ConnectOptions::default());
    let options = ConnectOptions::from_json(br#"{"protocol":-1,"auth_token":"s3"}"#).unwrap();
    assert_eq!(options.protocol, -1);
    assert_eq!(options.auth_token.as_deref(), Some("s3"));
    assert!(ConnectOptions::from_json(b"").is_err());
    assert!(ConnectOptions::from_json(b"{\"verbose\":1}").is_err());
}
