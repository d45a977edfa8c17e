//! Distinguished names as `verify_and_map` compares them (RFC 4514 text, RFC 4517
//! `distinguishedNameMatch`), the way nats-server's `internal/ldap` package does: a user
//! named `CN=alice,OU=desk,DC=example,DC=com` maps a certificate whose subject holds
//! those attributes, whatever the case of the attribute types, and also when the
//! subject lists the same RDNs in another order.

/// One attribute of an RDN: its type as written (`CN`, `dc`, or a dotted OID) and value.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Attribute {
    kind: String,
    value: String,
}

impl Attribute {
    /// Types compare without case, values exactly (what nats-server compares).
    fn matches(&self, other: &Attribute) -> bool {
        self.kind.eq_ignore_ascii_case(&other.kind) && self.value == other.value
    }
}

/// A name as a list of RDNs, first written first; each RDN is a set of attributes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DistinguishedName {
    rdns: Vec<Vec<Attribute>>,
}

/// The attribute types a certificate subject may hold for a DN match; a subject with
/// any other type has no DN (nats-server's table, which also leaves it without one).
pub fn short_type(dotted_oid: &str) -> Option<&'static str> {
    Some(match dotted_oid {
        "2.5.4.3" => "CN",
        "2.5.4.5" => "SERIALNUMBER",
        "2.5.4.6" => "C",
        "2.5.4.7" => "L",
        "2.5.4.8" => "ST",
        "2.5.4.9" => "STREET",
        "2.5.4.10" => "O",
        "2.5.4.11" => "OU",
        "2.5.4.17" => "POSTALCODE",
        "0.9.2342.19200300.100.1.25" => "DC",
        _ => return None,
    })
}

impl DistinguishedName {
    /// A certificate subject given as encoded (RDNs first to last, each a list of
    /// (dotted OID, value)): written in RFC 4514 order, last RDN first, and within an RDN
    /// last attribute first. `None` when an attribute type is not in [`short_type`].
    pub fn from_subject(encoded: &[Vec<(String, String)>]) -> Option<DistinguishedName> {
        let rdns = encoded
            .iter()
            .rev()
            .filter(|rdn| !rdn.is_empty())
            .map(|rdn| {
                rdn.iter()
                    .rev()
                    .map(|(oid, value)| Some(Attribute { kind: short_type(oid)?.to_string(), value: value.clone() }))
                    .collect::<Option<Vec<_>>>()
            })
            .collect::<Option<Vec<_>>>()?;
        Some(DistinguishedName { rdns })
    }

    /// Parses RFC 4514 text: RDNs separated by `,`, attributes of one RDN by `+`, `\`
    /// escaping a special character or two hex digits, unescaped spaces around a value
    /// dropped. `None` when it is not a DN (a plain user name such as `alice`), or uses
    /// a BER-encoded (`#…`) value.
    pub fn parse(text: &str) -> Option<DistinguishedName> {
        let bytes = text.as_bytes();
        let mut rdns = Vec::new();
        let mut rdn = Vec::new();
        let mut buffer: Vec<u8> = Vec::new();
        let mut kind: Option<String> = None;
        let mut trailing_spaces = 0;
        let mut index = 0;
        let take = |buffer: &mut Vec<u8>, trailing_spaces: &mut usize| {
            buffer.truncate(buffer.len() - *trailing_spaces);
            *trailing_spaces = 0;
            String::from_utf8(std::mem::take(buffer)).ok()
        };
        while index < bytes.len() {
            let byte = bytes[index];
            match byte {
                b'\\' => {
                    trailing_spaces = 0;
                    let next = *bytes.get(index + 1)?;
                    if b" \"#+,;<=>\\".contains(&next) {
                        buffer.push(next);
                        index += 2;
                    } else {
                        let hex = std::str::from_utf8(bytes.get(index + 1..index + 3)?).ok()?;
                        buffer.push(u8::from_str_radix(hex, 16).ok()?);
                        index += 3;
                    }
                    continue;
                }
                b'=' => {
                    kind = Some(take(&mut buffer, &mut trailing_spaces)?);
                    if bytes.get(index + 1) == Some(&b'#') {
                        return None;
                    }
                }
                b',' | b'+' => {
                    let kind = kind.take().filter(|kind| !kind.is_empty())?;
                    rdn.push(Attribute { kind, value: take(&mut buffer, &mut trailing_spaces)? });
                    if byte == b',' {
                        rdns.push(std::mem::take(&mut rdn));
                    }
                }
                b' ' if buffer.is_empty() => {}
                _ => {
                    trailing_spaces = if byte == b' ' { trailing_spaces + 1 } else { 0 };
                    buffer.push(byte);
                }
            }
            index += 1;
        }
        if !buffer.is_empty() {
            let kind = kind.take().filter(|kind| !kind.is_empty())?;
            rdn.push(Attribute { kind, value: take(&mut buffer, &mut trailing_spaces)? });
            rdns.push(rdn);
        }
        // A name with no `=` at all (`alice`) is a user name, not a DN.
        (!rdns.is_empty()).then_some(DistinguishedName { rdns })
    }

    /// `distinguishedNameMatch`: the same RDNs in the same order, each the same set.
    pub fn equals(&self, other: &DistinguishedName) -> bool {
        self.rdns.len() == other.rdns.len() && self.rdns.iter().zip(&other.rdns).all(|(a, b)| same_set(a, b))
    }

    /// The same RDNs in any order.
    pub fn same_rdns(&self, other: &DistinguishedName) -> bool {
        self.rdns.len() == other.rdns.len() && self.rdns.iter().all(|a| other.rdns.iter().any(|b| same_set(a, b)))
    }
}

fn same_set(a: &[Attribute], b: &[Attribute]) -> bool {
    let covers = |x: &[Attribute], y: &[Attribute]| y.iter().all(|wanted| x.iter().any(|have| have.matches(wanted)));
    a.len() == b.len() && covers(a, b) && covers(b, a)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn subject(pairs: &[&[(&str, &str)]]) -> DistinguishedName {
        let encoded: Vec<Vec<(String, String)>> = pairs
            .iter()
            .map(|rdn| rdn.iter().map(|(oid, value)| (oid.to_string(), value.to_string())).collect())
            .collect();
        DistinguishedName::from_subject(&encoded).expect("known types")
    }

    const DC: &str = "0.9.2342.19200300.100.1.25";

    #[test]
    fn a_subject_matches_its_rfc4514_text_with_any_type_case() {
        // Encoded DC=com, DC=example, OU=desk, CN=alice: written last first.
        let cert = subject(&[&[(DC, "com")], &[(DC, "example")], &[("2.5.4.11", "desk")], &[("2.5.4.3", "alice")]]);
        let user = DistinguishedName::parse("CN=alice, ou=desk,dc=example,DC=com").expect("a DN");
        assert!(user.equals(&cert));
        let reordered = DistinguishedName::parse("DC=com,DC=example,OU=desk,CN=alice").expect("a DN");
        assert!(!reordered.equals(&cert));
        assert!(reordered.same_rdns(&cert));
        let other = DistinguishedName::parse("CN=bob,OU=desk,DC=example,DC=com").expect("a DN");
        assert!(!other.equals(&cert) && !other.same_rdns(&cert));
    }

    #[test]
    fn values_are_unescaped_and_multi_valued_rdns_are_sets() {
        let cert = subject(&[&[("2.5.4.10", "Acme, Inc.")], &[("2.5.4.3", "a+b"), ("2.5.4.11", "x")]]);
        let user = DistinguishedName::parse(r"OU=x+CN=a\+b,O=Acme\2C Inc.").expect("a DN");
        assert!(user.equals(&cert));
    }

    #[test]
    fn plain_names_ber_values_and_unknown_types_give_no_dn() {
        assert_eq!(DistinguishedName::parse("alice"), None);
        assert_eq!(DistinguishedName::parse("CN=#0403616263"), None);
        assert_eq!(DistinguishedName::parse(r"CN=a\"), None);
        let unknown = vec![vec![("1.2.840.113549.1.9.1".to_string(), "a@b".to_string())]];
        assert_eq!(DistinguishedName::from_subject(&unknown), None);
    }
}
