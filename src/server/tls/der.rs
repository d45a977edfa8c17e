//! Just enough DER to read an X.509 certificate's public key info, subject and subject
//! alternative names: what `pinned_certs` and `verify_and_map` need. rustls has verified
//! the certificate before any of this reads it.

use super::distinguished_name::{self, DistinguishedName};

/// One TLV: its tag, the whole encoding, and the contents.
struct Element<'a> {
    tag: u8,
    whole: &'a [u8],
    contents: &'a [u8],
}

/// Splits the first element off `input`.
fn element<'a>(input: &mut &'a [u8]) -> Option<Element<'a>> {
    let bytes = *input;
    let tag = *bytes.first()?;
    let first_length = *bytes.get(1)?;
    let (length, header) = if first_length < 0x80 {
        (first_length as usize, 2)
    } else {
        let count = (first_length & 0x7f) as usize;
        if count == 0 || count > 4 {
            return None;
        }
        let mut length = 0usize;
        for index in 0..count {
            length = (length << 8) | *bytes.get(2 + index)? as usize;
        }
        (length, 2 + count)
    };
    let total = header.checked_add(length)?;
    if bytes.len() < total {
        return None;
    }
    *input = &bytes[total..];
    Some(Element { tag, whole: &bytes[..total], contents: &bytes[header..total] })
}

/// The TBSCertificate's fields, in order.
fn tbs_fields(certificate: &[u8]) -> Option<Vec<Element<'_>>> {
    let mut input = certificate;
    let outer = element(&mut input)?;
    let mut certificate_fields = outer.contents;
    let tbs = element(&mut certificate_fields)?;
    let mut rest = tbs.contents;
    let mut fields = Vec::new();
    while !rest.is_empty() {
        fields.push(element(&mut rest)?);
    }
    // Without the optional [0] version, the serial number comes first: align so that
    // index 0 is always the version slot.
    if fields.first()?.tag != 0xa0 {
        fields.insert(0, Element { tag: 0xa0, whole: &[], contents: &[] });
    }
    Some(fields)
}

/// SubjectPublicKeyInfo, whole (what nats-server's `pinned_certs` hashes).
pub fn public_key_info(certificate: &[u8]) -> Option<&[u8]> {
    let fields = tbs_fields(certificate)?;
    Some(fields.get(6)?.whole)
}

/// The names `verify_and_map` tries, in nats-server's order (`checkClientTLSCertSubject`):
/// e-mail addresses, DNS names, URIs (from subjectAltName), then the subject: as a
/// distinguished name, then as Go writes it with its domain components, then without.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct CertificateNames {
    pub emails: Vec<String>,
    pub dns_names: Vec<String>,
    pub uris: Vec<String>,
    /// The subject as encoded, for a DN match; `None` when it holds an attribute type
    /// nats-server's DN match does not know.
    pub subject_dn: Option<DistinguishedName>,
    /// [`Self::subject`] followed by the subject's `DC=` components in encoded order;
    /// `None` when it has none.
    pub subject_with_dcs: Option<String>,
    /// Go's `Subject.ToRDNSequence().String()`: known attributes in Go's fixed order
    /// (C, ST, L, STREET, POSTALCODE, O, OU, CN, SERIALNUMBER), written last to first.
    pub subject: String,
}

impl CertificateNames {
    /// The names compared as text, before the DN match: e-mails, DNS names, URIs.
    pub fn alternative_names(&self) -> impl Iterator<Item = &str> {
        self.emails.iter().chain(&self.dns_names).chain(&self.uris).map(String::as_str)
    }
}

pub fn names(certificate: &[u8]) -> Option<CertificateNames> {
    let fields = tbs_fields(certificate)?;
    let attributes = subject_attributes(fields.get(5)?.contents)?;
    let subject = go_subject(&attributes);
    let encoded: Vec<Vec<(String, String)>> = attributes
        .iter()
        .map(|rdn| rdn.iter().map(|attribute| (dotted(attribute.oid), attribute.text.clone())).collect())
        .collect();
    let dcs: Vec<String> = encoded
        .iter()
        .flatten()
        .filter(|(oid, _)| distinguished_name::short_type(oid) == Some("DC"))
        .map(|(_, value)| format!("DC={value}"))
        .collect();
    let mut names = CertificateNames {
        subject_dn: DistinguishedName::from_subject(&encoded),
        subject_with_dcs: (!dcs.is_empty()).then(|| format!("{subject},{}", dcs.join(","))),
        subject,
        ..Default::default()
    };
    // Extensions: [3] { SEQUENCE OF Extension }.
    let Some(extensions) = fields.iter().find(|field| field.tag == 0xa3) else { return Some(names) };
    let mut wrapper = extensions.contents;
    let list = element(&mut wrapper)?;
    let mut rest = list.contents;
    while !rest.is_empty() {
        let extension = element(&mut rest)?;
        let mut parts = extension.contents;
        let oid = element(&mut parts)?;
        // 2.5.29.17, subjectAltName.
        if oid.contents != [0x55, 0x1d, 0x11] {
            continue;
        }
        let mut value = element(&mut parts)?;
        if value.tag == 0x01 {
            value = element(&mut parts)?;
        }
        let mut octets = value.contents;
        let general_names = element(&mut octets)?;
        let mut entries = general_names.contents;
        while !entries.is_empty() {
            let entry = element(&mut entries)?;
            let text = String::from_utf8_lossy(entry.contents).into_owned();
            match entry.tag {
                0x81 => names.emails.push(text),
                0x82 => names.dns_names.push(text),
                0x86 => names.uris.push(text),
                _ => {}
            }
        }
    }
    Some(names)
}

/// One attribute of a subject: its OID and its value's text.
struct Attribute<'a> {
    oid: &'a [u8],
    text: String,
}

/// The subject's RDNs as encoded, each a set of attributes.
fn subject_attributes(name: &[u8]) -> Option<Vec<Vec<Attribute<'_>>>> {
    let mut rdns = Vec::new();
    let mut rest = name;
    while !rest.is_empty() {
        let set = element(&mut rest)?;
        let mut members = set.contents;
        let mut rdn = Vec::new();
        while !members.is_empty() {
            let attribute = element(&mut members)?;
            let mut fields = attribute.contents;
            let oid = element(&mut fields)?;
            let value = element(&mut fields)?;
            let text = String::from_utf8_lossy(value.contents).into_owned();
            rdn.push(Attribute { oid: oid.contents, text });
        }
        rdns.push(rdn);
    }
    Some(rdns)
}

/// Go's order of the attributes `pkix.Name` keeps; each type's values form one RDN.
const GO_ORDER: [[u8; 3]; 9] = [
    [0x55, 0x04, 0x06],
    [0x55, 0x04, 0x08],
    [0x55, 0x04, 0x07],
    [0x55, 0x04, 0x09],
    [0x55, 0x04, 0x11],
    [0x55, 0x04, 0x0a],
    [0x55, 0x04, 0x0b],
    [0x55, 0x04, 0x03],
    [0x55, 0x04, 0x05],
];

fn go_subject(rdns: &[Vec<Attribute<'_>>]) -> String {
    let all: Vec<&Attribute<'_>> = rdns.iter().flatten().collect();
    let mut sequence: Vec<Vec<String>> = Vec::new();
    for oid in GO_ORDER {
        let values: Vec<&&Attribute<'_>> = all.iter().filter(|attribute| attribute.oid == oid).collect();
        let short = short_name(&oid).unwrap_or_default();
        // Go keeps one common name and one serial number: the last one encoded.
        let single = matches!(short, "CN" | "SERIALNUMBER");
        let values: Vec<String> = match (single, values.last()) {
            (true, Some(last)) => vec![format!("{short}={}", escape(&last.text))],
            (true, None) => Vec::new(),
            (false, _) => values.iter().map(|attribute| format!("{short}={}", escape(&attribute.text))).collect(),
        };
        if !values.is_empty() {
            sequence.push(values);
        }
    }
    sequence.iter().rev().map(|rdn| rdn.join("+")).collect::<Vec<_>>().join(",")
}

fn short_name(oid: &[u8]) -> Option<&'static str> {
    Some(match oid {
        [0x55, 0x04, 0x03] => "CN",
        [0x55, 0x04, 0x05] => "SERIALNUMBER",
        [0x55, 0x04, 0x06] => "C",
        [0x55, 0x04, 0x07] => "L",
        [0x55, 0x04, 0x08] => "ST",
        [0x55, 0x04, 0x09] => "STREET",
        [0x55, 0x04, 0x0a] => "O",
        [0x55, 0x04, 0x0b] => "OU",
        [0x55, 0x04, 0x11] => "POSTALCODE",
        _ => return None,
    })
}

fn dotted(oid: &[u8]) -> String {
    let Some((&first, rest)) = oid.split_first() else { return String::new() };
    let mut parts = vec![(first / 40) as u64, (first % 40) as u64];
    let mut value = 0u64;
    for &byte in rest {
        value = (value << 7) | (byte & 0x7f) as u64;
        if byte & 0x80 == 0 {
            parts.push(value);
            value = 0;
        }
    }
    parts.iter().map(u64::to_string).collect::<Vec<_>>().join(".")
}

/// RFC 2253 escaping, as Go's `attributeTypeAndValue` string escaping does it.
fn escape(value: &str) -> String {
    let mut escaped = String::with_capacity(value.len());
    let last = value.chars().count().saturating_sub(1);
    for (index, c) in value.chars().enumerate() {
        let special = matches!(c, ',' | '+' | '"' | '\\' | '<' | '>' | ';')
            || (index == 0 && matches!(c, ' ' | '#'))
            || (index == last && c == ' ');
        if special {
            escaped.push('\\');
        }
        escaped.push(c);
    }
    escaped
}
