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
//! Malformed JSON is 10025 `invalid JSON: <detail>`; truncated input gives Go's exact
//! `unexpected EOF`, other syntax errors carry serde's wording instead of Go's.

use super::errors::ApiError;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// Decodes an API request body into `T`, or `T::default()` when there is no JSON body.
pub fn decode_request<T: DeserializeOwned + Default>(body: &[u8]) -> Result<T, ApiError> {
    let Some(value) = parse_body(body)? else {
        return Ok(T::default());
    };
    decode_value(value)
}

/// Deserialises an already parsed body (see `parse_body`), mapping errors to 10025.
pub fn decode_value<T: DeserializeOwned>(value: Value) -> Result<T, ApiError> {
    T::deserialize(value).map_err(|error| ApiError::invalid_json(&go_detail(&error)))
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
        .map_err(|error| ApiError::invalid_json(&go_detail(&error)))?;
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

/// serde's message without the `at line L column C` suffix; EOF as Go words it.
fn go_detail(error: &serde_json::Error) -> String {
    if error.is_eof() {
        return "unexpected EOF".to_string();
    }
    let text = error.to_string();
    let message = text
        .rsplit_once(" at line ")
        .map_or(text.as_str(), |(message, _)| message);
    match message
        .strip_prefix("unknown field `")
        .and_then(|rest| rest.split_once('`'))
    {
        Some((field, _)) => format!("json: unknown field \"{field}\""),
        None => message.to_string(),
    }
}

/// The text Go's `fmt.Errorf("can not unmarshal %q", data)` gives for a bad enum string;
/// used by the policy enums so 10025 descriptions match nats-server's.
pub(crate) fn cannot_unmarshal(raw: &str) -> String {
    let json = format!("\"{raw}\"");
    format!("can not unmarshal {}", go_quote(&json))
}

/// Go `%q` for printable ASCII: backslash-escape `\` and `"`, wrap in quotes.
pub(crate) fn go_quote(text: &str) -> String {
    let mut quoted = String::with_capacity(text.len() + 2);
    quoted.push('"');
    for character in text.chars() {
        if matches!(character, '"' | '\\') {
            quoted.push('\\');
        }
        quoted.push(character);
    }
    quoted.push('"');
    quoted
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Default, Deserialize, PartialEq)]
    #[serde(default)]
    struct Paging {
        offset: i64,
        subject: String,
    }

    #[test]
    fn bodies_without_options_decode_to_default() {
        for body in [&b""[..], b"null", b"[]", b" [ ] ", b"hello", b"{}"] {
            assert_eq!(
                decode_request::<Paging>(body),
                Ok(Paging::default()),
                "{body:?}"
            );
        }
    }

    #[test]
    fn null_members_are_absent() {
        let decoded: Paging = decode_request(br#"{"offset":3,"subject":null}"#).unwrap();
        assert_eq!(
            decoded,
            Paging {
                offset: 3,
                subject: String::new()
            }
        );
    }

    #[test]
    fn truncated_json_is_go_unexpected_eof() {
        let error = decode_request::<Paging>(br#"{"offset":"#).unwrap_err();
        assert_eq!(error, ApiError::invalid_json("unexpected EOF"));
        assert_eq!(error.err_code, 10025);
    }

    #[test]
    fn type_errors_drop_serde_position() {
        let error = decode_request::<Paging>(br#"{"offset":"x"}"#).unwrap_err();
        assert!(
            error
                .description
                .starts_with("invalid JSON: invalid type: string"),
            "{error}"
        );
        assert!(!error.description.contains("line"), "{error}");
    }

    #[derive(Debug, Default, Deserialize, PartialEq)]
    #[serde(default, deny_unknown_fields)]
    struct Strict {
        offset: i64,
    }

    #[test]
    fn unknown_fields_of_strict_types_use_go_text() {
        let error = decode_request::<Strict>(br#"{"offset":1,"bogus_field":2}"#).unwrap_err();
        assert_eq!(
            error.description,
            r#"invalid JSON: json: unknown field "bogus_field""#
        );
    }

    #[test]
    fn go_quote_escapes_quotes() {
        assert_eq!(
            cannot_unmarshal("sideways"),
            r#"can not unmarshal "\"sideways\"""#
        );
    }
}
