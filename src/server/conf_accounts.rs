//! The `accounts { NAME { users, jetstream, exports, imports } }` block, `no_auth_user`
//! and `system_account`, read as nats-server's `parseAccounts` reads them, with its
//! errors for what cannot work (an import from an account nobody defined, an import of
//! an export that does not allow it, a `no_auth_user` nobody lists).

use super::account::{AccountConfig, Export, ExportKind, Import, ResponseType};
use super::conf::{boolean, duration, size, string, ConfError};
use super::conf_syntax::{ConfEntry, ConfValue};
use super::options::Options;
use crate::jetstream::account::AccountLimits;
use crate::limits;
use crate::subject::{self, SubjectTransform};

/// Applies `accounts { ... }`.
pub fn apply_accounts(entry: &ConfEntry, options: &mut Options) -> Result<(), ConfError> {
    let ConfValue::Map(accounts) = &entry.value else {
        return Err(ConfError::at(entry, "expected a block of accounts"));
    };
    for block in accounts {
        let mut account = AccountConfig::named(&block.key);
        let ConfValue::Map(fields) = &block.value else {
            return Err(ConfError::at(block, "expected an account block"));
        };
        for field in fields {
            match field.key.to_ascii_lowercase().as_str() {
                "users" => {
                    let (users, nkeys) = super::conf::users(field, Some(&block.key))?;
                    super::conf::add_users(field, options, users, nkeys)?;
                }
                "jetstream" => account.jetstream = account_jetstream(field)?,
                "exports" => account.exports = exports(field)?,
                "imports" => account.imports = imports(field)?,
                _ => return Err(ConfError::at(field, format!("unknown field {:?}", field.key))),
            }
        }
        options.accounts.insert(account).map_err(|message| ConfError::at(block, message))?;
    }
    Ok(())
}

/// What the whole file must satisfy once read: every import names a defined account
/// whose export allows it, `no_auth_user` is a listed user, the system account exists.
pub fn check(options: &Options) -> Result<(), ConfError> {
    let accounts = &options.accounts;
    let fail = |message: String| ConfError { line: 0, message };
    for (_, account) in accounts.iter() {
        for export in &account.exports {
            if let Some(unknown) = export.accounts.iter().find(|name| accounts.id_of(name).is_none()) {
                return Err(fail(format!("{unknown:?} account not defined for {} export", kind_word(export.kind))));
            }
        }
        for import in &account.imports {
            let Some(exporter) = accounts.id_of(&import.account).and_then(|id| accounts.get(id)) else {
                let word = kind_word(import.kind);
                return Err(fail(format!("{:?} account not defined for {word} import", import.account)));
            };
            if !import_allowed(exporter, import, &account.name) {
                let word = kind_word(import.kind);
                let name = import.to.as_deref().unwrap_or(&import.subject);
                return Err(fail(format!("Error adding {word} import {name:?}: {word} import not authorized")));
            }
        }
    }
    if let Some(name) = super::service_imports::find_cycle(accounts) {
        return Err(fail(format!("Error adding service import {name:?}: import forms a cycle")));
    }
    if let Some(user) = &options.no_auth_user {
        let listed =
            options.users.iter().any(|u| &u.name == user) || options.nkeys.iter().any(|k| &k.public_key == user);
        if !listed {
            return Err(fail(format!(
                "no_auth_user: {user:?} not present as user or nkey in authorization block or account configuration"
            )));
        }
    }
    let system = &accounts.system_account;
    if system != super::account::SYSTEM_ACCOUNT_NAME && accounts.id_of(system).is_none() {
        return Err(fail("error resolving system account: account missing".into()));
    }
    if options.jetstream {
        accounts.jetstream_accounts().map_err(fail)?;
    }
    Ok(())
}

fn kind_word(kind: ExportKind) -> &'static str {
    match kind {
        ExportKind::Stream => "stream",
        ExportKind::Service => "service",
    }
}

/// Whether `exporter` exports `import.subject` (of its kind) to the account `importer`.
fn import_allowed(exporter: &AccountConfig, import: &Import, importer: &str) -> bool {
    exporter.exports.iter().any(|export| {
        export.kind == import.kind
            && subject::is_subset(import.subject.as_bytes(), export.subject.as_bytes())
            && (export.accounts.is_empty() || export.accounts.iter().any(|name| name == importer))
    })
}

/// `jetstream: enabled | disabled | true | false | { max_mem, max_file, ... }` inside an
/// account, with nats-server's key names and aliases.
fn account_jetstream(entry: &ConfEntry) -> Result<Option<AccountLimits>, ConfError> {
    let fields = match &entry.value {
        ConfValue::Bool(true) => return Ok(Some(AccountLimits::default())),
        ConfValue::Bool(false) => return Ok(None),
        ConfValue::String(word) if word.eq_ignore_ascii_case("enabled") => return Ok(Some(AccountLimits::default())),
        ConfValue::String(word) if word.eq_ignore_ascii_case("disabled") => return Ok(None),
        ConfValue::Map(fields) => fields,
        _ => return Err(ConfError::at(entry, "expected enabled, disabled or a block of limits")),
    };
    let mut limits = AccountLimits::default();
    for field in fields {
        let number = || size(field).map(|value| value.min(i64::MAX as u64) as i64);
        match field.key.to_ascii_lowercase().as_str() {
            "max_memory" | "max_mem" | "mem" | "memory" => limits.max_memory = number()?,
            "max_store" | "max_file" | "max_disk" | "store" | "disk" => limits.max_storage = number()?,
            "max_streams" | "streams" => limits.max_streams = number()?,
            "max_consumers" | "consumers" => limits.max_consumers = number()?,
            "max_bytes_required" | "max_stream_bytes" | "max_bytes" => limits.max_bytes_required = boolean(field)?,
            "mem_max_stream_bytes" | "memory_max_stream_bytes" => limits.memory_max_stream_bytes = number()?,
            "disk_max_stream_bytes" | "store_max_stream_bytes" => limits.storage_max_stream_bytes = number()?,
            "max_ack_pending" => limits.max_ack_pending = number()?,
            _ => return Err(ConfError::at(field, format!("unknown field {:?}", field.key))),
        }
    }
    Ok(Some(limits))
}

fn exports(entry: &ConfEntry) -> Result<Vec<Export>, ConfError> {
    let ConfValue::Array(items) = &entry.value else {
        return Err(ConfError::at(entry, "expected an array of exports"));
    };
    let mut exports = Vec::with_capacity(items.len());
    for item in items {
        let ConfValue::Map(fields) = item else {
            return Err(ConfError::at(entry, "expected an export block"));
        };
        let (mut kind, mut subject_text, mut accounts) = (None, None, Vec::new());
        let (mut response_type, mut response_threshold) = (None, None);
        for field in fields {
            match field.key.to_ascii_lowercase().as_str() {
                "stream" => (kind, subject_text) = (Some(ExportKind::Stream), Some(string(field)?)),
                "service" => (kind, subject_text) = (Some(ExportKind::Service), Some(string(field)?)),
                "accounts" => accounts = names(field)?,
                "response" | "response_type" => response_type = Some(response_type_of(field)?),
                "threshold" | "response_threshold" | "response_max_time" | "response_time" => {
                    response_threshold = Some(duration(field)?)
                }
                // Latency tracking and tracing shape what nats-server reports about
                // responses beyond routing them back; jetcore routes them only.
                _ => return Err(ConfError::at(field, format!("unsupported export field {:?}", field.key))),
            }
        }
        let (Some(kind), Some(subject_text)) = (kind, subject_text) else {
            return Err(ConfError::at(entry, "an export needs `stream` or `service`"));
        };
        if !subject::is_valid_subject(subject_text.as_bytes()) {
            return Err(ConfError::at(entry, format!("invalid export subject {subject_text:?}")));
        }
        if kind == ExportKind::Stream && (response_type.is_some() || response_threshold.is_some()) {
            return Err(ConfError::at(entry, format!("Detected response directive on non-service {subject_text:?}")));
        }
        exports.push(Export {
            kind,
            subject: subject_text,
            accounts,
            response_type: response_type.unwrap_or_default(),
            response_threshold: response_threshold.unwrap_or(limits::SERVICE_RESPONSE_THRESHOLD_DEFAULT),
        });
    }
    Ok(exports)
}

fn imports(entry: &ConfEntry) -> Result<Vec<Import>, ConfError> {
    let ConfValue::Array(items) = &entry.value else {
        return Err(ConfError::at(entry, "expected an array of imports"));
    };
    let mut imports = Vec::with_capacity(items.len());
    for item in items {
        let ConfValue::Map(fields) = item else {
            return Err(ConfError::at(entry, "expected an import block"));
        };
        let (mut source, mut prefix, mut to) = (None, None, None);
        for field in fields {
            match field.key.to_ascii_lowercase().as_str() {
                "stream" => source = Some((ExportKind::Stream, import_source(field)?)),
                "service" => source = Some((ExportKind::Service, import_source(field)?)),
                "prefix" => prefix = Some(string(field)?),
                "to" => to = Some(string(field)?),
                _ => return Err(ConfError::at(field, format!("unsupported import field {:?}", field.key))),
            }
        }
        let Some((kind, (account, subject_text))) = source else {
            return Err(ConfError::at(entry, "an import needs `stream` or `service`"));
        };
        if kind == ExportKind::Service {
            service_import_mapping(entry, &subject_text, prefix.as_deref(), to.as_deref())?;
        } else if let (Some(to), false) = (&to, subject::is_literal(subject_text.as_bytes())) {
            return Err(ConfError::at(
                entry,
                format!(
                    "Error adding stream import {subject_text:?}: a `to` ({to:?}) on a wildcard import is not \
                         built yet (use `prefix`)"
                ),
            ));
        }
        imports.push(Import { kind, account, subject: subject_text, prefix, to });
    }
    Ok(imports)
}

/// `single` | `stream` | `chunked`, as nats-server reads `response_type`.
fn response_type_of(entry: &ConfEntry) -> Result<ResponseType, ConfError> {
    match string(entry)?.to_ascii_lowercase().as_str() {
        "single" | "singleton" => Ok(ResponseType::Single),
        "stream" => Ok(ResponseType::Stream),
        "chunked" => Ok(ResponseType::Chunked),
        other => Err(ConfError::at(entry, format!("Unknown response type: {other:?}"))),
    }
}

/// A service import maps its local subject (`to`, else `subject`) onto the exporter's
/// `subject`: no `prefix` (a stream import's), and a wildcard `to` must map onto the
/// subject's wildcards (`to: "JS.A.API.>"` for `$JS.API.>`).
fn service_import_mapping(
    entry: &ConfEntry,
    subject_text: &str,
    prefix: Option<&str>,
    to: Option<&str>,
) -> Result<(), ConfError> {
    if prefix.is_some() {
        return Err(ConfError::at(
            entry,
            format!("Error adding service import {subject_text:?}: `prefix` is for stream imports (use `to`)"),
        ));
    }
    let Some(to) = to else { return Ok(()) };
    if !subject::is_valid_subject(to.as_bytes()) {
        return Err(ConfError::at(entry, format!("Error adding service import {subject_text:?}: invalid `to` {to:?}")));
    }
    if subject::is_literal(to.as_bytes()) && subject::is_literal(subject_text.as_bytes()) {
        return Ok(());
    }
    match SubjectTransform::new(to, subject_text) {
        Ok(_) => Ok(()),
        Err(error) => Err(ConfError::at(
            entry,
            format!(
                "Error adding service import {subject_text:?}: failed to create mapping transform for service \
                 import subject from {to:?} to {subject_text:?}: {error}"
            ),
        )),
    }
}

/// `{account: NAME, subject: SUBJ}`.
fn import_source(entry: &ConfEntry) -> Result<(String, String), ConfError> {
    let ConfValue::Map(fields) = &entry.value else {
        return Err(ConfError::at(entry, "expected {account, subject}"));
    };
    let (mut account, mut subject_text) = (None, None);
    for field in fields {
        match field.key.to_ascii_lowercase().as_str() {
            "account" => account = Some(string(field)?),
            "subject" => subject_text = Some(string(field)?),
            _ => return Err(ConfError::at(field, format!("unknown field {:?}", field.key))),
        }
    }
    match (account, subject_text) {
        (Some(account), Some(subject_text)) if subject::is_valid_subject(subject_text.as_bytes()) => {
            Ok((account, subject_text))
        }
        _ => Err(ConfError::at(entry, "an import needs an `account` and a valid `subject`")),
    }
}

fn names(entry: &ConfEntry) -> Result<Vec<String>, ConfError> {
    match &entry.value {
        ConfValue::Array(items) => items
            .iter()
            .map(|item| match item {
                ConfValue::String(text) => Ok(text.clone()),
                _ => Err(ConfError::at(entry, "expected account names")),
            })
            .collect(),
        _ => Ok(vec![string(entry)?]),
    }
}

#[cfg(test)]
mod tests {
    use super::super::conf::apply;
    use super::*;

    const ISSUE_CONFIG: &str = "jetstream: { domain: \"test-domain\" }\nno_auth_user: \"foo\"\n\
        accounts: {\n  A {\n    users: [{ user: \"foo\" }]\n    \
        jetstream: { max_mem: 64MB, max_file: 32MB, max_streams: 10, max_consumers: 20,\n \
        max_ack_pending: 100, memory_max_stream_bytes: 2048,\n \
        store_max_stream_bytes: 4096, max_stream_bytes: true }\n  }\n}\n";

    #[test]
    fn the_issue_configuration_applies() {
        let mut options = Options::default();
        apply(ISSUE_CONFIG, &mut options).unwrap();
        let a = options.accounts.id_of("A").unwrap();
        assert_eq!(options.accounts.jetstream_accounts(), Ok(vec![a]));
        let limits = options.accounts.get(a).unwrap().jetstream.clone().unwrap();
        assert_eq!((limits.max_memory, limits.max_storage), (64 << 20, 32 << 20));
        assert_eq!((limits.max_streams, limits.max_consumers, limits.max_ack_pending), (10, 20, 100));
        assert_eq!((limits.memory_max_stream_bytes, limits.storage_max_stream_bytes), (2048, 4096));
        assert!(limits.max_bytes_required);
        assert_eq!(options.users[0].account.as_deref(), Some("A"));
        assert_eq!(options.no_auth_user.as_deref(), Some("foo"));
    }

    #[test]
    fn nats_server_refusals() {
        let refused = |text: &str| apply(text, &mut Options { jetstream: false, ..Options::default() }).unwrap_err();
        let error = refused("accounts { A { users: [{user: a, password: a}] }, B { users: [{user: a}] } }\n");
        assert!(error.message.contains("Duplicate user \"a\" detected"), "{error}");
        let error = refused("accounts { A { imports: [{stream: {account: Z, subject: foo}}] } }\n");
        assert_eq!(error.message, "\"Z\" account not defined for stream import");
        let error = refused("accounts { A { users: [{user: a}] } }\nno_auth_user: zz\n");
        assert!(error.message.starts_with("no_auth_user: \"zz\" not present"), "{error}");
        let error = refused("accounts { $G { users: [{user: a}] } }\n");
        assert!(error.message.contains("\"$G\" is a Reserved Account"), "{error}");
        let error = refused("accounts { A { bogus: 1 } }\n");
        assert!(error.message.contains("unknown field \"bogus\""), "{error}");
        let error = refused("system_account: NOPE\n");
        assert_eq!(error.message, "error resolving system account: account missing");
        let error = refused(
            "accounts { A { exports: [{stream: foo}] }, B { imports: [{stream: {account: A, subject: bar}}] } }\n",
        );
        assert_eq!(error.message, "Error adding stream import \"bar\": stream import not authorized");
        let error = refused("accounts { A { exports: [{stream: foo, accounts: [C]}] } }\n");
        assert_eq!(error.message, "\"C\" account not defined for stream export");
        let error = refused(
            "accounts { A { exports: [{service: foo, accounts: [C]}] }, B { }, C { }, \
             B { imports: [{service: {account: A, subject: foo}}] } }\n",
        );
        assert_eq!(error.message, "Error adding service import \"foo\": service import not authorized");
        let error = refused("accounts { A { exports: [{service: foo, response_type: bogus}] } }\n");
        assert!(error.message.contains("Unknown response type"), "{error}");
        let error = refused(
            "accounts { A { exports: [{service: \"a.>\"}] }, \
             B { imports: [{service: {account: A, subject: \"a.>\"}, to: \"b.*\"}] } }\n",
        );
        // nats-server 2.15.1's words.
        let words = "Error adding service import \"a.>\": failed to create mapping transform for service import \
            subject from \"b.*\" to \"a.>\": invalid subject";
        assert!(error.message.ends_with(words), "{error}");
        let error = refused("operator: \"abc\"\n");
        assert!(error.message.contains("does not support"), "{error}");
    }

    #[test]
    fn a_second_block_with_the_same_name_replaces_the_first() {
        let mut options = Options { jetstream: false, ..Options::default() };
        apply("accounts { A { users: [{user: a}] }, A { users: [{user: b}] } }\n", &mut options).unwrap();
        assert_eq!(options.accounts.iter().count(), 2);
    }
}
