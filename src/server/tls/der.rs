//! Just enough DER to read an X.509 certificate's public key info, subject and subject
//! alternative names: what `pinned_certs` and `verify_and_map` need. rustls has verified
//! the certificate before any of this reads it.

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

/// The names `verify_and_map` tries, in nats-server's order: e-mail addresses, DNS
/// names, URIs (from subjectAltName), then the subject as an RFC 2253 string.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct CertificateNames {
    pub emails: Vec<String>,
    pub dns_names: Vec<String>,
    pub uris: Vec<String>,
    pub subject: String,
}

pub fn names(certificate: &[u8]) -> Option<CertificateNames> {
    let fields = tbs_fields(certificate)?;
    let mut names = CertificateNames { subject: rfc2253(fields.get(5)?.contents)?, ..Default::default() };
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

/// Go's `pkix.Name.String()`: RDNs last to first, comma-separated, known attribute types
/// by their short names and others as dotted OID `=#` hex DER.
fn rfc2253(name: &[u8]) -> Option<String> {
    let mut rdns = Vec::new();
    let mut rest = name;
    while !rest.is_empty() {
        let set = element(&mut rest)?;
        let mut attributes = set.contents;
        let mut parts = Vec::new();
        while !attributes.is_empty() {
            let attribute = element(&mut attributes)?;
            let mut fields = attribute.contents;
            let oid = element(&mut fields)?;
            let value = element(&mut fields)?;
            let part = match short_name(oid.contents) {
                Some(short) => format!("{short}={}", escape(&String::from_utf8_lossy(value.contents))),
                None => {
                    let hex: String = value.whole.iter().map(|byte| format!("{byte:02x}")).collect();
                    format!("{}=#{hex}", dotted(oid.contents))
                }
            };
            parts.push(part);
        }
        rdns.push(parts.join("+"));
    }
    rdns.reverse();
    Some(rdns.join(","))
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
