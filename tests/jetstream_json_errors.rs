//! Malformed JSON in request bodies answers with Go's `encoding/json` texts, as
//! nats-server 2.15.1 does: every body and text below was sent to and recorded from it
//! (`$JS.API` requests: 400 10025 `invalid JSON: <text>`; pull requests: status 400
//! `Bad Request - <text>`). One case per class of mistake: each JSON kind into each Go
//! type, numbers that do not fit, paths through nested structs, arrays and maps, the
//! policy enums, syntax errors and cut-off bodies.

mod common;

use common::jetstream::{api, assert_error, connect, stream_with_messages, REPLY_TIMEOUT};
use common::TestServer;
use futures::StreamExt;

const STREAM: &str = "STREAM.CREATE.S2";

/// (API after `$JS.API.`, body, description after `invalid JSON: `).
const CASES: &[(&str, &str, &str)] = &[
    // Each JSON kind into an integer field; numbers that do not fit are shown as written.
    (STREAM, r#"{"name":"S2","max_msgs":"x"}"#, "json: cannot unmarshal string into Go struct field StreamConfigRequest.max_msgs of type int64"),
    (STREAM, r#"{"name":"S2","max_msgs":true}"#, "json: cannot unmarshal bool into Go struct field StreamConfigRequest.max_msgs of type int64"),
    (STREAM, r#"{"name":"S2","max_msgs":[1]}"#, "json: cannot unmarshal array into Go struct field StreamConfigRequest.max_msgs of type int64"),
    (STREAM, r#"{"name":"S2","max_msgs":{}}"#, "json: cannot unmarshal object into Go struct field StreamConfigRequest.max_msgs of type int64"),
    (STREAM, r#"{"name":"S2","max_msgs":1.5}"#, "json: cannot unmarshal number 1.5 into Go struct field StreamConfigRequest.max_msgs of type int64"),
    (STREAM, r#"{"name":"S2","max_msgs":1e3}"#, "json: cannot unmarshal number 1e3 into Go struct field StreamConfigRequest.max_msgs of type int64"),
    (STREAM, r#"{"name":"S2","max_msgs":18446744073709551616}"#, "json: cannot unmarshal number 18446744073709551616 into Go struct field StreamConfigRequest.max_msgs of type int64"),
    (STREAM, r#"{"name":"S2","first_seq":-1}"#, "json: cannot unmarshal number -1 into Go struct field StreamConfigRequest.first_seq of type uint64"),
    (STREAM, r#"{"name":"S2","max_msg_size":4294967296}"#, "json: cannot unmarshal number 4294967296 into Go struct field StreamConfigRequest.max_msg_size of type int32"),
    (STREAM, r#"{"name":"S2","num_replicas":1e10}"#, "json: cannot unmarshal number 1e10 into Go struct field StreamConfigRequest.num_replicas of type int"),
    (STREAM, r#"{"name":"S2","max_age":"1s"}"#, "json: cannot unmarshal string into Go struct field StreamConfigRequest.max_age of type time.Duration"),
    // Strings, bools, slices, maps and structs.
    (STREAM, r#"{"name":1}"#, "json: cannot unmarshal number into Go struct field StreamConfigRequest.name of type string"),
    (STREAM, r#"{"name":"S2","sealed":1}"#, "json: cannot unmarshal number into Go struct field StreamConfigRequest.sealed of type bool"),
    (STREAM, r#"{"name":"S2","pedantic":"x"}"#, "json: cannot unmarshal string into Go struct field StreamConfigRequest.pedantic of type bool"),
    (STREAM, r#"{"name":"S2","subjects":"s.>"}"#, "json: cannot unmarshal string into Go struct field StreamConfigRequest.subjects of type []string"),
    (STREAM, r#"{"name":"S2","subjects":[1]}"#, "json: cannot unmarshal number into StreamConfigRequest.subjects.0 of type string"),
    (STREAM, r#"{"name":"S2","metadata":[]}"#, "json: cannot unmarshal array into Go struct field StreamConfigRequest.metadata of type map[string]string"),
    (STREAM, r#"{"name":"S2","metadata":{"a":1}}"#, "json: cannot unmarshal number into Go struct field StreamConfigRequest.metadata.a of type string"),
    (STREAM, r#"{"name":"S2","placement":"x"}"#, "json: cannot unmarshal string into Go struct field StreamConfigRequest.placement of type server.Placement"),
    (STREAM, r#"{"name":"S2","sources":["x"]}"#, "json: cannot unmarshal string into StreamConfigRequest.sources.0 of type server.StreamSource"),
    (STREAM, r#"{"name":"S2","sources":[{"name":"A","opt_start_seq":"x"}]}"#, "json: cannot unmarshal string into Go struct field StreamConfigRequest.sources.0.opt_start_seq of type uint64"),
    (STREAM, r#"{"name":"S2","sources":[{"name":"A","opt_start_time":5}]}"#, "json: cannot unmarshal number into Go struct field StreamConfigRequest.sources.0.opt_start_time of type time.Time"),
    (STREAM, r#"{"name":"S2","consumer_limits":{"inactive_threshold":"x"}}"#, "json: cannot unmarshal string into Go struct field StreamConfigRequest.consumer_limits.inactive_threshold of type time.Duration"),
    (STREAM, r#"{"name":"S2","Max_Msgs":"x"}"#, "json: cannot unmarshal string into Go struct field StreamConfigRequest.Max_Msgs of type int64"),
    (STREAM, "[1]", "json: cannot unmarshal array into Go value of type server.StreamConfigRequest"),
    // The first mistake in the body's order is the one reported.
    (STREAM, r#"{"name":"S2","max_bytes":"x","bogus":1}"#, "json: cannot unmarshal string into Go struct field StreamConfigRequest.max_bytes of type int64"),
    (STREAM, r#"{"name":"S2","bogus":1,"max_bytes":"x"}"#, r#"json: unknown field "bogus""#),
    // Policy enums and compression use their own decoders.
    (STREAM, r#"{"name":"S2","storage":1.50}"#, r#"can not unmarshal "1.50""#),
    (STREAM, r#"{"name":"S2","discard":[]}"#, r#"can not unmarshal "[]""#),
    (STREAM, r#"{"name":"S2","compression":1}"#, "json: cannot unmarshal number into Go value of type string"),
    (STREAM, r#"{"name":"S2","compression":"x"}"#, "unknown compression algorithm"),
    // Syntax errors: Go's scanner, with the offset nats-server adds.
    (STREAM, r#"{"name":"S2","max_bytes":x}"#, "invalid character 'x' looking for beginning of value at offset 26"),
    (STREAM, r#"{"name":"S2","max_msgs":1,}"#, "invalid character '}' looking for beginning of object key string at offset 27"),
    (STREAM, r#"{"name":"S2","max_msgs":01}"#, "invalid character '1' after object key:value pair at offset 26"),
    (STREAM, r#"{"name":"S2","max_msgs" 1}"#, "invalid character '1' after object key at offset 25"),
    (STREAM, r#"{"name":"S2","subjects":["a" "b"]}"#, "invalid character '\"' after array element at offset 30"),
    (STREAM, r#"{"name":"S2","max_msgs":tru}"#, "invalid character '}' in literal true (expecting 'e') at offset 28"),
    (STREAM, r#"{"name":"S2","max_msgs":1.}"#, "invalid character '}' in numeric literal at offset 27"),
    (STREAM, r#"{'name':"S2"}"#, r"invalid character '\'' looking for beginning of object key string at offset 2"),
    (STREAM, r#"{"name":"S2\q"}"#, r"invalid escape sequence `\q` in string at offset 13"),
    (STREAM, "{\"name\":\"S2\t\"}", r"invalid character '\t' in string at offset 12"),
    (STREAM, r#"{"name":"S2"}}"#, "invalid character '}' looking for beginning of value at offset 14"),
    (STREAM, r#"{"name":"S2","max_msgs":1"#, "unexpected EOF"),
    // Consumer create: the path runs through `config`.
    ("CONSUMER.CREATE.S", r#"{"stream_name":"S","config":{"max_deliver":"x"}}"#, "json: cannot unmarshal string into Go struct field CreateConsumerRequest.config.max_deliver of type int"),
    ("CONSUMER.CREATE.S", r#"{"stream_name":"S","config":{"max_deliver":1.5}}"#, "json: cannot unmarshal number 1.5 into Go struct field CreateConsumerRequest.config.max_deliver of type int"),
    ("CONSUMER.CREATE.S", r#"{"stream_name":"S","config":{"ack_wait":"1s"}}"#, "json: cannot unmarshal string into Go struct field CreateConsumerRequest.config.ack_wait of type time.Duration"),
    ("CONSUMER.CREATE.S", r#"{"stream_name":"S","config":{"backoff":[1.5]}}"#, "json: cannot unmarshal number 1.5 into CreateConsumerRequest.config.backoff.0 of type time.Duration"),
    ("CONSUMER.CREATE.S", r#"{"stream_name":"S","config":"x"}"#, "json: cannot unmarshal string into Go struct field CreateConsumerRequest.config of type server.ConsumerConfig"),
    ("CONSUMER.CREATE.S", r#"{"stream_name":"S","config":{"ack_policy":1}}"#, r#"can not unmarshal "1""#),
    ("CONSUMER.CREATE.S", r#"{"stream_name":"S","config":{"priority_policy":[1, 2]}}"#, "unknown priority policy: [1, 2]"),
    ("CONSUMER.CREATE.S", r#"{"stream_name":"S","config":{"priority_policy":"x"}}"#, r#"unknown priority policy: "x""#),
    ("CONSUMER.CREATE.S", r#"{"stream_name":"S","action":true,"config":{}}"#, "unknown consumer action: true"),
    ("CONSUMER.CREATE.S", r#"{"stream_name":"S","config":{"name":"C","num_replicas":99999999999999999999}}"#, "json: cannot unmarshal number 99999999999999999999 into Go struct field CreateConsumerRequest.config.num_replicas of type int"),
    // Timestamps: Go's RFC 3339 parser's own texts.
    ("CONSUMER.CREATE.S", r#"{"stream_name":"S","config":{"opt_start_time":"x"}}"#, r#"parsing time "x" as "2006-01-02T15:04:05Z07:00": cannot parse "x" as "2006""#),
    ("CONSUMER.CREATE.S", r#"{"stream_name":"S","config":{"opt_start_time":"2024/01/01"}}"#, r#"parsing time "2024/01/01" as "2006-01-02T15:04:05Z07:00": cannot parse "/01/01" as "-""#),
    ("CONSUMER.CREATE.S", r#"{"stream_name":"S","config":{"opt_start_time":"2024-1-01T00:00:00Z"}}"#, r#"parsing time "2024-1-01T00:00:00Z" as "2006-01-02T15:04:05Z07:00": cannot parse "1-01T00:00:00Z" as "01""#),
    ("CONSUMER.CREATE.S", r#"{"stream_name":"S","config":{"opt_start_time":"2024-13-01T00:00:00Z"}}"#, r#"parsing time "2024-13-01T00:00:00Z": month out of range"#),
    ("CONSUMER.CREATE.S", r#"{"stream_name":"S","config":{"opt_start_time":"2024-02-30T00:00:00Z"}}"#, r#"parsing time "2024-02-30T00:00:00Z": day out of range"#),
    ("CONSUMER.CREATE.S", r#"{"stream_name":"S","config":{"opt_start_time":"2024-01-01T25:00:00Z"}}"#, r#"parsing time "2024-01-01T25:00:00Z": hour out of range"#),
    ("CONSUMER.CREATE.S", r#"{"stream_name":"S","config":{"opt_start_time":"2024-01-01T00:00:00.5"}}"#, r#"parsing time "2024-01-01T00:00:00.5" as "2006-01-02T15:04:05Z07:00": cannot parse "" as "Z07:00""#),
    ("CONSUMER.CREATE.S", r#"{"stream_name":"S","config":{"opt_start_time":"2024-01-01T00:00:00+0100"}}"#, r#"parsing time "2024-01-01T00:00:00+0100" as "2006-01-02T15:04:05Z07:00": cannot parse "+0100" as "Z07:00""#),
    ("CONSUMER.CREATE.S", r#"{"stream_name":"S","config":{"opt_start_time":"2024-01-01T00:00:00Zjunk"}}"#, r#"parsing time "2024-01-01T00:00:00Zjunk": extra text: "junk""#),
    ("STREAM.MSG.GET.S", r#"{"start_time":"yesterday"}"#, r#"parsing time "yesterday" as "2006-01-02T15:04:05Z07:00": cannot parse "yesterday" as "2006""#),
    // Message get and delete, purge, info and listing requests.
    ("STREAM.MSG.GET.S", r#"{"seq":"x"}"#, "json: cannot unmarshal string into Go struct field JSApiMsgGetRequest.seq of type uint64"),
    ("STREAM.MSG.GET.S", r#"{"seq":-1}"#, "json: cannot unmarshal number -1 into Go struct field JSApiMsgGetRequest.seq of type uint64"),
    ("STREAM.MSG.GET.S", r#"{"start_time":1}"#, "json: cannot unmarshal number into Go struct field JSApiMsgGetRequest.start_time of type time.Time"),
    ("STREAM.MSG.GET.S", r#"{"multi_last":"x"}"#, "json: cannot unmarshal string into Go struct field JSApiMsgGetRequest.multi_last of type []string"),
    ("STREAM.MSG.DELETE.S", r#"{"seq":1,"no_erase":1}"#, "json: cannot unmarshal number into Go struct field JSApiMsgDeleteRequest.no_erase of type bool"),
    ("STREAM.PURGE.S", r#"{"keep":-1}"#, "json: cannot unmarshal number -1 into Go struct field JSApiStreamPurgeRequest.keep of type uint64"),
    ("STREAM.PURGE.S", r#"{"filter":1}"#, "json: cannot unmarshal number into Go struct field JSApiStreamPurgeRequest.filter of type string"),
    ("STREAM.INFO.S", r#"{"offset":"x"}"#, "json: cannot unmarshal string into Go struct field JSApiStreamInfoRequest.offset of type int"),
    ("STREAM.NAMES", r#"{"subject":1}"#, "json: cannot unmarshal number into Go struct field JSApiStreamNamesRequest.subject of type string"),
    ("CONSUMER.NAMES.S", r#"{"offset":"x"}"#, "json: cannot unmarshal string into Go struct field JSApiConsumersRequest.offset of type int"),
    ("CONSUMER.PAUSE.S.D", r#"{"pause_until":1}"#, "json: cannot unmarshal number into Go struct field JSApiConsumerPauseRequest.pause_until of type time.Time"),
    ("CONSUMER.RESET.S.D", r#"{"seq":-1}"#, "json: cannot unmarshal number -1 into Go struct field JSApiConsumerResetRequest.seq of type uint64"),
];

/// (pull body, status description after `Bad Request - `): nats-server decodes pull
/// requests with `json.Unmarshal` through a local type (no struct name, no offset).
const PULL_CASES: &[(&str, &str)] = &[
    (r#"{"batch":"x"}"#, "json: cannot unmarshal string into Go struct field .batch of type int"),
    (r#"{"batch":1.5,"no_wait":true}"#, "json: cannot unmarshal number 1.5 into Go struct field .batch of type int"),
    (
        r#"{"expires":"x","batch":1}"#,
        "json: cannot unmarshal string into Go struct field .expires of type time.Duration",
    ),
    (r#"{"batch":1,"no_wait":"x"}"#, "json: cannot unmarshal string into Go struct field .no_wait of type bool"),
    (
        r#"{"batch":1,"no_wait":true,"min_pending":"x"}"#,
        "json: cannot unmarshal string into Go struct field .min_pending of type int64",
    ),
    (
        r#"{"batch":1,"no_wait":true,"group":1}"#,
        "json: cannot unmarshal number into Go struct field .group of type string",
    ),
    (r#"{"batch":1,"no_wait":x}"#, "invalid character 'x' looking for beginning of value"),
    (r#"{"batch":1,"no_wait":true}}"#, "invalid character '}' after top-level value"),
    (r#"{"batch":1,"no_wait":true,"#, "unexpected end of JSON input"),
];

#[tokio::test]
async fn api_request_bodies_answer_go_decoding_errors() {
    let server = TestServer::start(&[]);
    let (client, _) = connect(&server).await;
    stream_with_messages(&client, 1).await;
    let durable = api(&client, "CONSUMER.CREATE.S.D", r#"{"stream_name":"S","config":{"durable_name":"D"}}"#).await;
    assert!(durable.get("error").is_none(), "{durable}");
    for (endpoint, body, text) in CASES {
        let reply = api(&client, endpoint, body).await;
        assert_error(&reply, 400, 10025, &format!("invalid JSON: {text}"));
    }
}

#[tokio::test]
async fn pull_request_bodies_answer_go_decoding_errors() {
    let server = TestServer::start(&[]);
    let (client, _) = connect(&server).await;
    stream_with_messages(&client, 1).await;
    let durable = api(&client, "CONSUMER.CREATE.S.D", r#"{"stream_name":"S","config":{"durable_name":"D"}}"#).await;
    assert!(durable.get("error").is_none(), "{durable}");
    let inbox = client.new_inbox();
    let mut replies = client.subscribe(inbox.clone()).await.unwrap();
    for (body, text) in PULL_CASES {
        client
            .publish_with_reply("$JS.API.CONSUMER.MSG.NEXT.S.D", inbox.clone(), body.to_string().into())
            .await
            .unwrap();
        let reply = tokio::time::timeout(REPLY_TIMEOUT, replies.next()).await.expect("a reply").unwrap();
        assert_eq!(reply.status.map(|status| status.as_u16()), Some(400), "{body}: {reply:?}");
        assert_eq!(reply.description.as_deref(), Some(format!("Bad Request - {text}").as_str()), "{body}");
    }
}
