//! A stream's `subject_transform` and `republish`: the config checks nats-server's
//! `checkStreamCfg` makes (with its errors). The compiled transforms the publish path
//! applies are the stream's rules (`stream::StreamRules`, from `service/convert.rs`).
//!
//! - `subject_transform {src, dest}`: a captured message whose subject matches `src` is
//!   stored under the mapped subject (others as they came). An empty `dest` is no
//!   transform.
//! - `republish {src, dest, headers_only}`: once a message is stored, a copy goes to the
//!   mapping of its stored subject, if that matches `src` (empty: `>`), with the headers
//!   `Nats-Stream`, `Nats-Subject`, `Nats-Sequence`, `Nats-Time-Stamp`,
//!   `Nats-Last-Sequence` (the subject's previous sequence, 0 if none) after the
//!   message's own, and with `headers_only` no payload but `Nats-Msg-Size`.

use super::errors::ApiError;
use super::stream_config::StreamConfig;
use crate::subject::{collide, is_valid_subject, SubjectTransform};

const ALL: &str = ">";

/// Checks `subject_transform` then normalises and checks `republish`, as nats-server does: an
/// empty republish source becomes `>`; `>` to `>` with a transform whose source is the
/// stream's only subject republishes the transformed subjects (the implicit republish).
pub fn normalize(config: &mut StreamConfig) -> Result<(), ApiError> {
    if let Some(transform) = &config.subject_transform {
        if !transform.src.is_empty() && !is_valid_subject(transform.src.as_bytes()) {
            return Err(ApiError::stream_transform_invalid_source(&transform.src));
        }
        if !transform.dest.is_empty() {
            SubjectTransform::new(&transform.src, &transform.dest)
                .map_err(ApiError::stream_transform_invalid_destination)?;
        }
    }
    if let Some(republish) = &mut config.republish {
        if republish.src.is_empty() {
            republish.src = ALL.to_string();
        }
        if let Some(transform) = &config.subject_transform {
            let implicit = republish.src == ALL
                && republish.dest == ALL
                && config.subjects.len() == 1
                && transform.src == config.subjects[0];
            if implicit {
                republish.src = transform.dest.clone();
                republish.dest = transform.dest.clone();
            }
        }
        let destination = republish.dest.as_bytes();
        if config.subjects.iter().any(|subject| collide(destination, subject.as_bytes())) {
            return Err(ApiError::stream_invalid_config(
                "stream configuration for republish destination forms a cycle",
            ));
        }
        if !republish.dest.is_empty() && SubjectTransform::new_lenient(&republish.src, &republish.dest).is_err() {
            return Err(ApiError::stream_invalid_config(format!(
                "stream configuration for republish with transform from '{}' to '{}' not valid",
                republish.src, republish.dest
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jetstream::stream_config::ConfigPurpose;

    fn normalized(json: &str) -> Result<StreamConfig, ApiError> {
        serde_json::from_str::<StreamConfig>(json).unwrap().normalized(ConfigPurpose::Create)
    }

    #[test]
    fn republish_errors_match_nats_server() {
        let cases = [
            (
                r#"{"name":"C","subjects":["c.>"],"republish":{"src":">","dest":"c.x"}}"#,
                "stream configuration for republish destination forms a cycle",
            ),
            (
                r#"{"name":"C","subjects":["c.*"],"republish":{"src":"c.*","dest":"o.$2"}}"#,
                "stream configuration for republish with transform from 'c.*' to 'o.$2' not valid",
            ),
            (
                r#"{"name":"C","subjects":["c.*"],"subject_transform":{"src":"c.*","dest":"t.$1"},
                   "republish":{"src":">","dest":">"}}"#,
                "stream configuration for republish with transform from 't.$1' to 't.$1' not valid",
            ),
        ];
        for (json, description) in cases {
            let error = normalized(json).unwrap_err();
            assert_eq!((error.err_code, error.description.as_str()), (10052, description), "{json}");
        }
    }

    #[test]
    fn transform_errors_match_nats_server() {
        let error =
            normalized(r#"{"name":"C","subjects":["c.*"],"subject_transform":{"src":"c..*","dest":"x"}}"#).unwrap_err();
        assert_eq!((error.code, error.err_code), (400, 10155));
        assert_eq!(error.description, "stream transform source: invalid subject c..*");
        let error = normalized(r#"{"name":"C","subjects":["c.*"],"subject_transform":{"src":"c.*","dest":"o.$3"}}"#)
            .unwrap_err();
        assert_eq!((error.code, error.err_code), (400, 10156));
        assert_eq!(
            error.description,
            "stream transform: invalid mapping destination: wildcard index out of range in $3: [3]"
        );
    }

    #[test]
    fn empty_republish_source_reads_all() {
        let config = normalized(r#"{"name":"C","subjects":["c.*"],"republish":{"dest":"o.>"}}"#).unwrap();
        assert_eq!(config.republish.unwrap().src, ">");
    }
}
