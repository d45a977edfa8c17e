//! Service imports between accounts, as nats-server's `accounts.go` maps them: a request
//! published in the importing account on the import's local subject (`to`, else the
//! imported `subject`) is delivered in the exporting account on the exported subject,
//! with its reply rewritten to a reply mapping (`service_responses.rs`) that carries the
//! response back to the requester. Built once at start from the configuration (whose check
//! refused imports no export allows, and `to` mappings that cannot map).
//!
//! Imports chain as nats-server's do: a request an account receives through an import
//! may leave it again through one of its own imports (A imports from B a subject that B
//! imports from C). The configuration check refuses a chain that comes back to an
//! account it left ([`find_cycle`], nats-server's `import forms a cycle`).
//!
//! [`ServiceImports::of`] is what the publish path asks, once per publish: an account
//! that imports no service and exports none that is imported gets an empty entry and
//! pays that one test.

use std::time::Duration;

use super::account::{AccountId, Accounts, ExportKind, ResponseType};
use crate::subject::{self, SubjectTransform};

/// One service import, seen from the importer's side.
#[derive(Debug)]
pub struct ServiceImport {
    /// The importer's subjects it takes (the import's `to`, else its `subject`).
    pub pattern: Vec<u8>,
    pub exporter: AccountId,
    remote: Remote,
    /// The export's, which decides how long the reply mapping lives.
    pub response_type: ResponseType,
    pub response_threshold: Duration,
}

#[derive(Debug)]
enum Remote {
    /// The exporter's subject is the importer's.
    Same,
    /// A literal import with `to`: always this subject.
    Literal(Vec<u8>),
    /// A wildcard import with `to`: its wildcards carried over.
    Transform(SubjectTransform),
}

impl ServiceImport {
    pub fn takes(&self, subject: &[u8]) -> bool {
        subject::matches(&self.pattern, subject)
    }

    /// The exporter's subject for the importer's `subject` (which the import takes).
    pub fn remote_subject(&self, subject: &[u8]) -> Option<Vec<u8>> {
        match &self.remote {
            Remote::Same => Some(subject.to_vec()),
            Remote::Literal(remote) => Some(remote.clone()),
            Remote::Transform(transform) => transform.apply(std::str::from_utf8(subject).ok()?).map(String::into_bytes),
        }
    }
}

/// An account's side of services: the imports it publishes through, and whether its
/// responders' replies may be reply mappings (it exports a service someone imports).
#[derive(Debug, Default)]
pub struct AccountServices {
    pub imports: Vec<ServiceImport>,
    pub answers_imports: bool,
}

impl AccountServices {
    /// Whether the publish path has nothing to do for the account.
    pub fn is_empty(&self) -> bool {
        self.imports.is_empty() && !self.answers_imports
    }
}

/// Every account's services, by account number.
#[derive(Debug, Default)]
pub struct ServiceImports {
    by_account: Vec<AccountServices>,
    none: AccountServices,
}

impl ServiceImports {
    pub fn new(accounts: &Accounts) -> ServiceImports {
        let mut by_account: Vec<AccountServices> = accounts.iter().map(|_| AccountServices::default()).collect();
        for (importer, account) in accounts.iter() {
            for import in account.imports.iter().filter(|import| import.kind == ExportKind::Service) {
                let Some(exporter) = accounts.id_of(&import.account) else { continue };
                let export = accounts.get(exporter).and_then(|config| {
                    config.exports.iter().find(|export| {
                        export.kind == ExportKind::Service
                            && subject::is_subset(import.subject.as_bytes(), export.subject.as_bytes())
                    })
                });
                let (response_type, response_threshold) = export
                    .map_or((ResponseType::Single, crate::limits::SERVICE_RESPONSE_THRESHOLD_DEFAULT), |export| {
                        (export.response_type, export.response_threshold)
                    });
                let (pattern, remote) = match import.to.as_deref() {
                    None => (import.subject.clone(), Remote::Same),
                    Some(to) if to == import.subject => (import.subject.clone(), Remote::Same),
                    Some(to) if subject::is_literal(import.subject.as_bytes()) => {
                        (to.to_string(), Remote::Literal(import.subject.as_bytes().to_vec()))
                    }
                    // The configuration check built this transform once already.
                    Some(to) => match SubjectTransform::new(to, &import.subject) {
                        Ok(transform) => (to.to_string(), Remote::Transform(transform)),
                        Err(_) => continue,
                    },
                };
                by_account[importer.0 as usize].imports.push(ServiceImport {
                    pattern: pattern.into_bytes(),
                    exporter,
                    remote,
                    response_type,
                    response_threshold,
                });
                by_account[exporter.0 as usize].answers_imports = true;
            }
        }
        ServiceImports { by_account, none: AccountServices::default() }
    }

    /// `account`'s services (empty for an account that has none).
    pub fn of(&self, account: AccountId) -> &AccountServices {
        self.by_account.get(account.0 as usize).unwrap_or(&self.none)
    }
}

/// The first service import (by account, then configuration order) that closes a chain
/// of imports back on an account it left, as nats-server's `checkServiceImportsForCycles`
/// finds it while adding the imports one by one: the name it is refused under.
pub fn find_cycle(accounts: &Accounts) -> Option<String> {
    // (importer, its local subject, exporter, the exporter's subject), in the order added.
    let mut added: Vec<(AccountId, &str, AccountId, &str)> = Vec::new();
    for (importer, account) in accounts.iter() {
        for import in account.imports.iter().filter(|import| import.kind == ExportKind::Service) {
            let Some(exporter) = accounts.id_of(&import.account) else { continue };
            let local = import.to.as_deref().unwrap_or(&import.subject);
            let mut visited = vec![importer];
            if forms_cycle(&added, exporter, local, &mut visited) {
                return Some(local.to_string());
            }
            added.push((importer, local, exporter, &import.subject));
        }
    }
    None
}

/// Whether requests on `subject` entering `account` can, through the imports `added`,
/// reach an account in `visited`.
fn forms_cycle(
    added: &[(AccountId, &str, AccountId, &str)],
    account: AccountId,
    subject: &str,
    visited: &mut Vec<AccountId>,
) -> bool {
    for &(importer, local, exporter, remote) in added.iter().filter(|entry| entry.0 == account) {
        if !subject::collide(subject.as_bytes(), remote.as_bytes()) {
            continue;
        }
        if visited.contains(&exporter) {
            return true;
        }
        visited.push(importer);
        let narrowed = if subject::is_subset(local.as_bytes(), subject.as_bytes()) { local } else { subject };
        if forms_cycle(added, exporter, narrowed, visited) {
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::super::conf::apply;
    use super::super::options::Options;
    use super::*;

    #[test]
    fn imports_map_local_subjects_onto_the_exporters() {
        let mut options = Options { jetstream: false, ..Options::default() };
        let text = "accounts {\n  E { exports: [{service: \"req.>\", response_type: stream}, \
            {service: \"$JS.API.>\"}] }\n  \
            I { imports: [{service: {account: E, subject: req.x}, to: local.x}, \
            {service: {account: E, subject: req.y}}, \
            {service: {account: E, subject: \"$JS.API.>\"}, to: \"JS.E.API.>\"}] }\n  J { }\n}\n";
        apply(text, &mut options).unwrap();
        let accounts = &options.accounts;
        let services = ServiceImports::new(accounts);
        let (exporter, importer) = (accounts.id_of("E").unwrap(), accounts.id_of("I").unwrap());
        let imports = &services.of(importer).imports;
        assert_eq!(imports.len(), 3);
        assert!(imports[0].takes(b"local.x") && !imports[0].takes(b"req.x"));
        assert_eq!(imports[0].remote_subject(b"local.x").unwrap(), b"req.x");
        assert_eq!(imports[0].response_type, ResponseType::Stream);
        assert_eq!(imports[1].remote_subject(b"req.y").unwrap(), b"req.y");
        assert!(imports[2].takes(b"JS.E.API.STREAM.INFO.S"));
        assert_eq!(imports[2].remote_subject(b"JS.E.API.STREAM.INFO.S").unwrap(), b"$JS.API.STREAM.INFO.S");
        assert_eq!(imports[2].response_type, ResponseType::Single);
        assert!(services.of(exporter).answers_imports && services.of(exporter).imports.is_empty());
        assert!(!services.of(importer).answers_imports);
        assert!(services.of(accounts.id_of("J").unwrap()).is_empty());
        assert!(services.of(AccountId::GLOBAL).is_empty() && services.of(AccountId(99)).is_empty());
    }

    #[test]
    fn a_chain_of_imports_is_allowed_and_one_that_comes_back_is_a_cycle() {
        let chain = |last_import: &str| {
            format!(
                "accounts {{\n  A {{ exports: [{{service: \"svc.>\"}}], imports: [{{service: {{account: B, subject: \
                 \"svc.>\"}}}}] }}\n  B {{ exports: [{{service: \"svc.>\"}}], imports: [{{service: {{account: C, \
                 subject: \"svc.>\"}}}}] }}\n  C {{ exports: [{{service: \"svc.>\"}}]{last_import} }}\n}}\n"
            )
        };
        let mut options = Options { jetstream: false, ..Options::default() };
        apply(&chain(""), &mut options).unwrap();
        assert_eq!(find_cycle(&options.accounts), None);
        let mut options = Options { jetstream: false, ..Options::default() };
        let refused = apply(&chain(", imports: [{service: {account: A, subject: \"svc.x\"}}]"), &mut options);
        // nats-server 2.15.1 -t on the same file: `Error adding service import "svc.x": import forms a cycle`.
        assert_eq!(refused.unwrap_err().message, "Error adding service import \"svc.x\": import forms a cycle");
        // C takes `c.x` to A, which A does not import onward: no cycle (nats-server agrees).
        let mut options = Options { jetstream: false, ..Options::default() };
        apply(&chain(", imports: [{service: {account: A, subject: \"svc.x\"}, to: \"c.x\"}]"), &mut options).unwrap();
        assert_eq!(find_cycle(&options.accounts), None);
    }
}
