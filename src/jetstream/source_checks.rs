//! The checks nats-server 2.15 makes on `mirror` and `sources` when a stream is created or
//! updated, with its error codes and texts (recorded against nats-server 2.15.1; see
//! `tests/jetstream_sources_config.rs`). Checks that need other streams (cycles through
//! them) are made by the coordinator with the catalog; this file needs only the config.

use super::errors::ApiError;
use super::stream_config::{is_valid_name, StreamConfig};
use super::stream_sources::{StreamSource, SubjectTransform};
use crate::subject;

/// The API prefix of this server's own JetStream: an `external` naming it is the local
/// stream, which nats-server refuses as an overlap (10021).
const LOCAL_API_PREFIX: &str = "$JS.API";

/// Checks `config`'s mirror and sources on their own (create and update).
pub fn check(config: &StreamConfig) -> Result<(), ApiError> {
    if let Some(mirror) = &config.mirror {
        check_mirror(config, mirror)?;
    }
    if !config.sources.is_empty() && config.allow_msg_schedules {
        return Err(ApiError::new(400, 10187, "stream source can not also schedule messages"));
    }
    for source in &config.sources {
        check_source(config, source)?;
    }
    for (index, source) in config.sources.iter().enumerate() {
        let name = source.index_name();
        if config.sources[index + 1..].iter().any(|other| other.index_name() == name) {
            return Err(ApiError::new(400, 10140, "duplicate source configuration detected"));
        }
    }
    Ok(())
}

/// What an update may not change: a mirror stays the mirror it was created as (it may
/// only be removed, which promotes the stream, as nats-server 2.12+ allows); message
/// schedules, once on, stay on.
pub fn check_update(old: &StreamConfig, new: &StreamConfig) -> Result<(), ApiError> {
    if old.allow_msg_schedules && !new.allow_msg_schedules {
        return Err(ApiError::new(500, 10052, "message schedules can not be disabled"));
    }
    match (&old.mirror, &new.mirror) {
        (Some(before), Some(after)) if before != after => Err(mirror_not_updatable()),
        (None, Some(_)) => Err(mirror_not_updatable()),
        _ => Ok(()),
    }
}

fn mirror_not_updatable() -> ApiError {
    ApiError::new(400, 10055, "stream mirror configuration can not be updated")
}

/// nats-server's answer when a stream would (also) copy from itself.
pub fn detected_cycle() -> ApiError {
    ApiError::new(500, 10052, "detected cycle")
}

fn check_mirror(config: &StreamConfig, mirror: &StreamSource) -> Result<(), ApiError> {
    if !config.subjects.is_empty() {
        return Err(ApiError::new(400, 10034, "stream mirrors can not contain subjects"));
    }
    if !config.sources.is_empty() {
        return Err(ApiError::new(400, 10031, "stream mirrors can not also contain other sources"));
    }
    if config.allow_msg_counter {
        return Err(ApiError::new(400, 10173, "stream mirrors can not also calculate counters"));
    }
    if config.allow_batched {
        return Err(ApiError::mirror_with_batch_publish());
    }
    if config.allow_msg_schedules {
        return Err(ApiError::new(400, 10186, "stream mirrors can not also schedule messages"));
    }
    if !is_valid_name(&mirror.name) {
        return Err(ApiError::new(400, 10142, "mirrored stream name is invalid"));
    }
    if !mirror.filter_subject.is_empty() && !mirror.subject_transforms.is_empty() {
        return Err(ApiError::new(
            400,
            10150,
            "mirror with multiple subject transforms cannot also have a single subject filter",
        ));
    }
    if !mirror.filter_subject.is_empty() && !valid_filter(&mirror.filter_subject) {
        let text = format!("subject filter '{}' for the mirror invalid subject", mirror.filter_subject);
        return Err(ApiError::new(500, 10049, text));
    }
    check_transforms(&mirror.subject_transforms, Kind::Mirror)?;
    check_external(mirror)?;
    if mirror.name == config.name && mirror.external.is_none() {
        return Err(detected_cycle());
    }
    Ok(())
}

fn check_source(config: &StreamConfig, source: &StreamSource) -> Result<(), ApiError> {
    if !is_valid_name(&source.name) {
        return Err(ApiError::new(400, 10141, "sourced stream name is invalid"));
    }
    if let Some(consumer) = &source.consumer {
        let name_ok = is_valid_name(&consumer.name);
        let deliver_ok = subject::is_valid_literal_subject(consumer.deliver_subject.as_bytes());
        if !name_ok || !deliver_ok {
            return Err(ApiError::new(400, 10215, "stream source consumer config is invalid"));
        }
    }
    if !source.filter_subject.is_empty() && !source.subject_transforms.is_empty() {
        return Err(ApiError::new(
            400,
            10144,
            "source with multiple subject transforms cannot also have a single subject filter",
        ));
    }
    if !source.filter_subject.is_empty() && !valid_filter(&source.filter_subject) {
        let text = format!("subject filter '{}' for the source: invalid subject", source.filter_subject);
        return Err(ApiError::new(500, 10049, text));
    }
    check_transforms(&source.subject_transforms, Kind::Source)?;
    check_external(source)?;
    if source.name == config.name && source.external.is_none() {
        return Err(detected_cycle());
    }
    Ok(())
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Mirror,
    Source,
}

/// The transform sources must be valid subjects and must not overlap each other; the
/// destinations must be valid mappings of their sources (an empty one: no mapping).
fn check_transforms(transforms: &[SubjectTransform], kind: Kind) -> Result<(), ApiError> {
    let (label, invalid_code, destination_code) = match kind {
        Kind::Mirror => ("mirror", 10151, 10154),
        Kind::Source => ("source", 10145, 10146),
    };
    for (index, transform) in transforms.iter().enumerate() {
        let src = if transform.src.is_empty() { ">" } else { transform.src.as_str() };
        if !valid_filter(src) {
            let text = format!("{label} transform source: invalid subject {src}");
            return Err(ApiError::new(400, invalid_code, text));
        }
        if !transform.dest.is_empty() {
            if let Err(error) = subject::SubjectTransform::new(src, &transform.dest) {
                return Err(ApiError::new(400, destination_code, format!("{label} transform: {error}")));
            }
        }
        for other in &transforms[index + 1..] {
            let other_src = if other.src.is_empty() { ">" } else { other.src.as_str() };
            if subject::collide(src.as_bytes(), other_src.as_bytes()) {
                let text = format!("{label} filters can not overlap");
                let code = if kind == Kind::Mirror { 10152 } else { 10147 };
                return Err(ApiError::new(400, code, text));
            }
        }
    }
    Ok(())
}

/// Origins in another JetStream (a hub's domain across a leaf link) are followed through
/// its API (`server::source_external`); the local API prefix is refused as an overlap,
/// and a deliver prefix must be literal, as nats-server does.
fn check_external(source: &StreamSource) -> Result<(), ApiError> {
    let Some(external) = &source.external else { return Ok(()) };
    if subject::collide(external.api.as_bytes(), LOCAL_API_PREFIX.as_bytes()) {
        let text = format!("stream external api prefix {} must not overlap with {LOCAL_API_PREFIX}", external.api);
        return Err(ApiError::new(400, 10021, text));
    }
    if external.deliver.contains(['*', '>']) {
        let text = format!("stream external delivery prefix {} must not contain wildcards", external.deliver);
        return Err(ApiError::new(400, 10024, text));
    }
    Ok(())
}

fn valid_filter(filter: &str) -> bool {
    subject::is_valid_subject(filter.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(json: &str) -> StreamConfig {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn go_codes_for_bad_mirrors_and_sources() {
        let cases = [
            (r#"{"name":"M","mirror":{"name":"O"},"subjects":["x"]}"#, 10034),
            (r#"{"name":"M","mirror":{"name":"O"},"sources":[{"name":"P"}]}"#, 10031),
            (r#"{"name":"M","mirror":{"name":""}}"#, 10142),
            (r#"{"name":"M","mirror":{"name":"M"}}"#, 10052),
            (r#"{"name":"S","sources":[{"name":"O"},{"name":"O"}]}"#, 10140),
            (r#"{"name":"S","sources":[{"name":"a.b"}]}"#, 10141),
            (r#"{"name":"S","sources":[{"name":"O","consumer":{"name":"c"}}]}"#, 10215),
            (r#"{"name":"S","sources":[{"name":"O","filter_subject":"a..b"}]}"#, 10049),
            (r#"{"name":"S","sources":[{"name":"O","external":{"api":"$JS.API","deliver":""}}]}"#, 10021),
            (r#"{"name":"S","sources":[{"name":"O","subject_transforms":[{"src":"a","dest":"b..c"}]}]}"#, 10146),
            (r#"{"name":"M","mirror":{"name":"O","subject_transforms":[{"src":"a","dest":"b..c"}]}}"#, 10154),
        ];
        for (json, code) in cases {
            assert_eq!(check(&config(json)).unwrap_err().err_code, code, "{json}");
        }
        assert!(check(&config(r#"{"name":"S","sources":[{"name":"O","filter_subject":"a.>"},{"name":"O"}]}"#)).is_ok());
    }

    #[test]
    fn a_mirror_may_be_removed_but_not_changed_or_added() {
        let mirror = config(r#"{"name":"M","mirror":{"name":"O"}}"#);
        let other = config(r#"{"name":"M","mirror":{"name":"P"}}"#);
        let plain = config(r#"{"name":"M","subjects":["m"]}"#);
        assert_eq!(check_update(&mirror, &other).unwrap_err().err_code, 10055);
        assert_eq!(check_update(&plain, &mirror).unwrap_err().err_code, 10055);
        assert!(check_update(&mirror, &plain).is_ok());
    }
}
