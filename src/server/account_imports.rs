//! Stream imports between accounts, as nats-server's `accounts.go` maps them: a message
//! published in the exporting account on a subject the import names is also delivered in
//! the importing account, on `prefix.subject` (with `prefix`), on `to` (a literal import
//! with `to`), else on the subject itself. Built once at start from the configuration
//! (whose check refused imports no export allows); read on every publish of an exporting
//! account, and nothing else, so an account without exports pays one empty-slice test.

use super::account::{AccountId, Accounts, ExportKind};
use crate::subject;

/// One stream import, seen from the exporter's side.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamImport {
    /// The exporter's subjects it takes (the import's `subject`).
    pub pattern: Vec<u8>,
    pub importer: AccountId,
    mapping: Mapping,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Mapping {
    Same,
    Prefix(Vec<u8>),
    To(Vec<u8>),
}

impl StreamImport {
    /// The subject the importer sees for `subject` (which matches `pattern`).
    pub fn local_subject(&self, subject: &[u8]) -> Vec<u8> {
        match &self.mapping {
            Mapping::Same => subject.to_vec(),
            Mapping::To(to) => to.clone(),
            Mapping::Prefix(prefix) => {
                let mut local = Vec::with_capacity(prefix.len() + 1 + subject.len());
                local.extend_from_slice(prefix);
                local.push(b'.');
                local.extend_from_slice(subject);
                local
            }
        }
    }

    pub fn takes(&self, subject: &[u8]) -> bool {
        subject::matches(&self.pattern, subject)
    }
}

/// Every stream import, indexed by the exporting account.
#[derive(Default)]
pub struct StreamImports {
    by_exporter: Vec<Vec<StreamImport>>,
}

impl StreamImports {
    pub fn new(accounts: &Accounts) -> StreamImports {
        let mut by_exporter: Vec<Vec<StreamImport>> = Vec::new();
        for (importer, account) in accounts.iter() {
            for import in account.imports.iter().filter(|import| import.kind == ExportKind::Stream) {
                let Some(exporter) = accounts.id_of(&import.account) else { continue };
                let mapping = match (&import.prefix, &import.to) {
                    (Some(prefix), _) => Mapping::Prefix(prefix.trim_end_matches('.').as_bytes().to_vec()),
                    (None, Some(to)) => Mapping::To(to.as_bytes().to_vec()),
                    (None, None) => Mapping::Same,
                };
                let index = exporter.0 as usize;
                if by_exporter.len() <= index {
                    by_exporter.resize(index + 1, Vec::new());
                }
                let pattern = import.subject.as_bytes().to_vec();
                by_exporter[index].push(StreamImport { pattern, importer, mapping });
            }
        }
        StreamImports { by_exporter }
    }

    /// The imports of what `exporter` publishes.
    pub fn of(&self, exporter: AccountId) -> &[StreamImport] {
        self.by_exporter.get(exporter.0 as usize).map_or(&[], Vec::as_slice)
    }
}

#[cfg(test)]
mod tests {
    use super::super::conf::apply;
    use super::super::options::Options;
    use super::*;

    #[test]
    fn imports_map_as_nats_server_does() {
        let mut options = Options { jetstream: false, ..Options::default() };
        let text = "accounts {\n  E { exports: [{stream: \"prices.>\"}, {stream: \"news\", accounts: [I]}] }\n  \
            I { imports: [{stream: {account: E, subject: \"prices.>\"}, prefix: eu}, \
            {stream: {account: E, subject: news}, to: headlines}] }\n  J { }\n}\n";
        apply(text, &mut options).unwrap();
        let accounts = &options.accounts;
        let imports = StreamImports::new(accounts);
        let (exporter, importer) = (accounts.id_of("E").unwrap(), accounts.id_of("I").unwrap());
        let of_exporter = imports.of(exporter);
        assert_eq!(of_exporter.len(), 2);
        assert!(of_exporter.iter().all(|import| import.importer == importer));
        assert!(of_exporter[0].takes(b"prices.usd") && !of_exporter[0].takes(b"news"));
        assert_eq!(of_exporter[0].local_subject(b"prices.usd"), b"eu.prices.usd");
        assert_eq!(of_exporter[1].local_subject(b"news"), b"headlines");
        assert!(imports.of(importer).is_empty() && imports.of(accounts.id_of("J").unwrap()).is_empty());
    }
}
