//! The TZif format of zone files (RFC 8536, versions 1 to 4), read as Go's
//! `LoadLocationFromTZData` reads it: from a v2+ file the 64-bit block and the TZ string
//! footer, from a v1 file the 32-bit block; leap seconds and the standard/UT indicators
//! are skipped (Go ignores them, so `right/UTC` is plain UTC). A pure function over the
//! bytes.

/// One local time type: its offset east of UTC and whether it is DST.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LocalType {
    pub offset: i64,
    pub is_daylight: bool,
}

/// What a zone file says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZoneData {
    /// (Unix second, index into `types`), ascending.
    pub transitions: Vec<(i64, usize)>,
    pub types: Vec<LocalType>,
    /// The POSIX TZ string for times after the last transition (v2+).
    pub footer: Option<String>,
}

const MAGIC: &[u8] = b"TZif";
const HEADER_BYTES: usize = 44;
/// Bytes of one local time type record: a 4-byte offset, a DST flag, an abbreviation index.
const TYPE_BYTES: usize = 6;

struct Counts {
    ut_indicators: usize,
    standard_indicators: usize,
    leap_seconds: usize,
    transitions: usize,
    types: usize,
    abbreviation_bytes: usize,
}

impl Counts {
    fn data_bytes(&self, time_bytes: usize) -> usize {
        self.transitions * (time_bytes + 1)
            + self.types * TYPE_BYTES
            + self.abbreviation_bytes
            + self.leap_seconds * (time_bytes + 4)
            + self.standard_indicators
            + self.ut_indicators
    }
}

/// Parses a zone file; `None` for anything that is not valid TZif.
pub fn parse(bytes: &[u8]) -> Option<ZoneData> {
    let (version, counts) = header(bytes)?;
    if version == 0 {
        return block(&bytes[HEADER_BYTES..], &counts, 4).map(|(data, _)| data);
    }
    let second = bytes.get(HEADER_BYTES + counts.data_bytes(4)..)?;
    let (_, counts) = header(second)?;
    let (mut data, rest) = block(&second[HEADER_BYTES..], &counts, 8)?;
    // The footer: a newline, the TZ string (possibly empty), a newline.
    if rest.len() >= 2 && rest[0] == b'\n' && rest[rest.len() - 1] == b'\n' {
        let text = std::str::from_utf8(&rest[1..rest.len() - 1]).ok()?;
        data.footer = (!text.is_empty()).then(|| text.to_string());
    }
    Some(data)
}

/// The version byte (0 for v1) and the six counts.
fn header(bytes: &[u8]) -> Option<(u8, Counts)> {
    if bytes.len() < HEADER_BYTES || &bytes[..4] != MAGIC {
        return None;
    }
    let count = |index: usize| -> usize {
        let at = 20 + index * 4;
        u32::from_be_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]) as usize
    };
    let counts = Counts {
        ut_indicators: count(0),
        standard_indicators: count(1),
        leap_seconds: count(2),
        transitions: count(3),
        types: count(4),
        abbreviation_bytes: count(5),
    };
    Some((bytes[4], counts))
}

/// One data block with `time_bytes`-wide times; the bytes after it.
fn block<'a>(bytes: &'a [u8], counts: &Counts, time_bytes: usize) -> Option<(ZoneData, &'a [u8])> {
    if counts.types == 0 || bytes.len() < counts.data_bytes(time_bytes) {
        return None;
    }
    let times = &bytes[..counts.transitions * time_bytes];
    let indices = &bytes[times.len()..times.len() + counts.transitions];
    let types_at = times.len() + indices.len();
    let type_records = &bytes[types_at..types_at + counts.types * TYPE_BYTES];
    let mut transitions = Vec::with_capacity(counts.transitions);
    for (time, &index) in times.chunks_exact(time_bytes).zip(indices) {
        let when = match time_bytes {
            4 => i64::from(i32::from_be_bytes(time.try_into().ok()?)),
            _ => i64::from_be_bytes(time.try_into().ok()?),
        };
        if usize::from(index) >= counts.types {
            return None;
        }
        transitions.push((when, usize::from(index)));
    }
    let types = type_records
        .chunks_exact(TYPE_BYTES)
        .map(|record| LocalType {
            offset: i64::from(i32::from_be_bytes([record[0], record[1], record[2], record[3]])),
            is_daylight: record[4] != 0,
        })
        .collect();
    let rest = &bytes[counts.data_bytes(time_bytes)..];
    Some((ZoneData { transitions, types, footer: None }, rest))
}

/// For tests: a v2 file with these transitions and types (both blocks) and TZ string.
#[cfg(test)]
pub fn test_file(transitions: &[(i64, u8)], types: &[(i32, bool)], footer: &str) -> Vec<u8> {
    let mut bytes = Vec::new();
    for time_bytes in [4usize, 8] {
        bytes.extend_from_slice(MAGIC);
        bytes.push(b'2');
        bytes.extend_from_slice(&[0; 15]);
        for count in [0, 0, 0, transitions.len(), types.len(), 4] {
            bytes.extend_from_slice(&(count as u32).to_be_bytes());
        }
        for (when, _) in transitions {
            match time_bytes {
                4 => bytes.extend_from_slice(&(*when as i32).to_be_bytes()),
                _ => bytes.extend_from_slice(&when.to_be_bytes()),
            }
        }
        bytes.extend(transitions.iter().map(|(_, index)| *index));
        for (offset, daylight) in types {
            bytes.extend_from_slice(&offset.to_be_bytes());
            bytes.extend_from_slice(&[u8::from(*daylight), 0]);
        }
        bytes.extend_from_slice(b"ABC\0");
    }
    bytes.extend_from_slice(format!("\n{footer}\n").as_bytes());
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_64_bit_block_and_the_footer() {
        let bytes = test_file(&[(-100, 0), (1_000, 1)], &[(-18_000, false), (-14_400, true)], "EST5EDT,M3.2.0,M11.1.0");
        let data = parse(&bytes).expect("valid");
        assert_eq!(data.transitions, vec![(-100, 0), (1_000, 1)]);
        assert_eq!(data.types[1], LocalType { offset: -14_400, is_daylight: true });
        assert_eq!(data.footer.as_deref(), Some("EST5EDT,M3.2.0,M11.1.0"));
    }

    #[test]
    fn refuses_what_is_not_tzif() {
        let bytes = test_file(&[(5, 0)], &[(0, false)], "UTC0");
        assert!(parse(&bytes[..bytes.len() - 30]).is_none(), "truncated");
        assert!(parse(b"# zone.tab\nAD\t+4230+00131\tEurope/Andorra\n").is_none());
        assert!(parse(&test_file(&[(5, 3)], &[(0, false)], "")).is_none(), "type index out of range");
        assert!(parse(&test_file(&[], &[], "")).is_none(), "no local time type");
    }
}
