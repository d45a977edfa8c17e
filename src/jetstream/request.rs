//! Lenient request-body decoding, shaped after nats-server's own rules.
//!
//! nats-server only JSON-decodes a request body that starts with `{` or `[`; anything
//! else (empty, `null`, `hello`) means "no options" (recorded: `STREAM.INFO` with body
//! `hello` answers normally). jetcore follows that and is more lenient in two places,
//! on purpose, because clients send them:
//! - `[]` is treated as "no options" (async-nats sends it for `$JS.API.INFO`);
//! - `null`-valued fields count as absent (async-nats sends `"subject":null`, pull
//!   requests with `"group":null`, stream configs with `"consumer_limits":null`);
//!
//! Unknown fields are refused where nats-server refuses them (configs and API request
//! bodies use `deny_unknown_fields`): 10025 `invalid JSON: json: unknown field "x"`.
//! Pull request bodies stay lenient, as in nats-server.
//!
//! Malformed JSON is 10025 `invalid JSON: <detail>` with Go's detail (`go_json.rs`):
//! syntax errors as Go's scanner words them, truncated input as `unexpected EOF`, type
//! mismatches as `json: cannot unmarshal ...` naming nats-server's struct and Go type.

use super::errors::ApiError;
use crate::protocol::go_json::{self, go_detail, GoRequest, GoShaped};
use crate::protocol::go_syntax::{go_syntax_error, GoReader};
// Go's wording helpers, used across the `$JS.API` decoders.
pub(crate) use crate::protocol::go_json::{cannot_unmarshal, type_error_detail};
pub(crate) use crate::protocol::go_quote;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// Decodes an API request body into `T`, or `T::default()` when there is no JSON body.
pub fn decode_request<T: DeserializeOwned + Default + GoShaped>(body: &[u8]) -> Result<T, ApiError> {
    let Some(value) = parse_body(body)? else {
        return Ok(T::default());
    };
    decode_value(value, body, T::go_shape())
}

/// Deserialises an already parsed `body` (see `parse_body`) as nats-server's `shape`;
/// errors are 10025 with Go's wording.
pub fn decode_value<T: DeserializeOwned>(value: Value, body: &[u8], shape: &GoRequest) -> Result<T, ApiError> {
    T::deserialize(value).map_err(|error| ApiError::invalid_json(&type_error_detail(&error, body, shape)))
}

/// `decode_value` for stream and consumer configs, which also refuses what serde takes
/// and Go does not: an array where a struct goes (serde reads it as the fields in
/// order), an `int32` field past its range, a mistyped member jetcore drops unread
/// (`pedantic`). Configs are created rarely, so the extra walk costs nothing that counts.
pub fn decode_config<T: DeserializeOwned>(value: Value, body: &[u8], shape: &GoRequest) -> Result<T, ApiError> {
    let decoded = decode_value(value, body, shape)?;
    match go_json::go_error(body, shape, None) {
        Some(detail) => Err(ApiError::invalid_json(&detail)),
        None => Ok(decoded),
    }
}

/// Parses the body to a JSON value with `null` object members removed; `None` when the
/// body carries no options (not an object or array, or an empty array).
pub fn parse_body(body: &[u8]) -> Result<Option<Value>, ApiError> {
    let trimmed = body.trim_ascii();
    if !matches!(trimmed.first(), Some(b'{' | b'[')) {
        return Ok(None);
    }
    // Invalid UTF-8 becomes U+FFFD, as Go's decoder does (nats-server stores it so).
    let mut value: Value = serde_json::from_str(&String::from_utf8_lossy(trimmed))
        .map_err(|error| ApiError::invalid_json(&syntax_error_detail(&error, body)))?;
    if matches!(&value, Value::Array(items) if items.is_empty()) {
        return Ok(None);
    }
    strip_nulls(&mut value);
    Ok(Some(value))
}

/// Removes `"key": null` members from every object, recursively (Go leaves the field unset).
fn strip_nulls(value: &mut Value) {
    match value {
        Value::Object(members) => {
            members.retain(|_, member| !member.is_null());
            members.values_mut().for_each(strip_nulls);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_nulls),
        _ => {}
    }
}

/// Go's text for a body serde could not parse (serde's, should Go's scanner accept it).
pub fn syntax_error_detail(error: &serde_json::Error, body: &[u8]) -> String {
    go_syntax_error(body, GoReader::Decoder).unwrap_or_else(|| go_detail(error))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    use crate::protocol::go_json::{GoStruct, GoType};

    #[derive(Debug, Default, Deserialize, PartialEq)]
    #[serde(default)]
    struct Paging {
        offset: i64,
        subject: String,
    }

    static PAGING: GoStruct = GoStruct {
        go_name: "server.Paging",
        fields: &[("offset", GoType::Int("int", 64)), ("subject", GoType::String)],
    };

    impl GoShaped for Paging {
        fn go_shape() -> &'static GoRequest {
            static SHAPE: GoRequest = GoRequest { name: "Paging", body: &PAGING };
            &SHAPE
        }
    }

    #[test]
    fn bodies_without_options_decode_to_default() {
        for body in [&b""[..], b"null", b"[]", b" [ ] ", b"hello", b"{}"] {
            assert_eq!(decode_request::<Paging>(body), Ok(Paging::default()), "{body:?}");
        }
    }

    #[test]
    fn null_members_are_absent() {
        let decoded: Paging = decode_request(br#"{"offset":3,"subject":null}"#).unwrap();
        assert_eq!(decoded, Paging { offset: 3, subject: String::new() });
    }

    #[test]
    fn truncated_json_is_go_unexpected_eof() {
        let error = decode_request::<Paging>(br#"{"offset":"#).unwrap_err();
        assert_eq!(error, ApiError::invalid_json("unexpected EOF"));
        assert_eq!(error.err_code, 10025);
    }

    #[test]
    fn type_errors_name_the_go_field_and_type() {
        let cases: [(&[u8], &str); 5] = [
            (br#"{"offset":"x"}"#, "json: cannot unmarshal string into Go struct field Paging.offset of type int"),
            (br#"{"offset":1.5}"#, "json: cannot unmarshal number 1.5 into Go struct field Paging.offset of type int"),
            (
                br#"{"subject":"a", "offset":[]}"#,
                "json: cannot unmarshal array into Go struct field Paging.offset of type int",
            ),
            (br#"{"subject":1e3}"#, "json: cannot unmarshal number into Go struct field Paging.subject of type string"),
            (br#"{"subject":"a",}"#, "invalid character '}' looking for beginning of object key string at offset 16"),
        ];
        for (body, detail) in cases {
            let error = decode_request::<Paging>(body).unwrap_err();
            assert_eq!(error.description, format!("invalid JSON: {detail}"));
        }
    }

    #[derive(Debug, Default, Deserialize, PartialEq)]
    #[serde(default, deny_unknown_fields)]
    struct Strict {
        offset: i64,
    }

    impl GoShaped for Strict {
        fn go_shape() -> &'static GoRequest {
            Paging::go_shape()
        }
    }

    #[test]
    fn unknown_fields_of_strict_types_use_go_text() {
        let error = decode_request::<Strict>(br#"{"offset":1,"bogus_field":2}"#).unwrap_err();
        assert_eq!(error.description, r#"invalid JSON: json: unknown field "bogus_field""#);
    }

    #[test]
    fn go_quote_escapes_quotes() {
        assert_eq!(cannot_unmarshal("sideways"), r#"can not unmarshal "\"sideways\"""#);
    }
}
