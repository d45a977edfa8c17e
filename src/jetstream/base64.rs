//! Standard base64 with padding (RFC 4648 §4), as Go's `encoding/json` writes `[]byte`.
//! Used for `hdrs` and `data` of `STREAM.MSG.GET` replies.

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

pub fn encode(bytes: &[u8]) -> String {
    let mut text = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let word =
            chunk.iter().enumerate().fold(0u32, |word, (index, &byte)| word | u32::from(byte) << (16 - 8 * index));
        for position in 0..4 {
            if position <= chunk.len() {
                text.push(ALPHABET[(word >> (18 - 6 * position) & 0x3f) as usize] as char);
            } else {
                text.push('=');
            }
        }
    }
    text
}

/// Decodes padded standard base64; `None` on any other input.
pub fn decode(text: &str) -> Option<Vec<u8>> {
    let bytes = text.as_bytes();
    if bytes.len() % 4 != 0 {
        return None;
    }
    let mut decoded = Vec::with_capacity(bytes.len() / 4 * 3);
    for (index, chunk) in bytes.chunks(4).enumerate() {
        let is_last = index + 1 == bytes.len() / 4;
        let padding = chunk.iter().rev().take_while(|&&byte| byte == b'=').count();
        if padding > 2 || (padding > 0 && !is_last) {
            return None;
        }
        let mut word = 0u32;
        for &byte in &chunk[..4 - padding] {
            word = word << 6 | u32::from(sextet(byte)?);
        }
        word <<= 6 * padding as u32;
        decoded.extend_from_slice(&word.to_be_bytes()[1..4 - padding]);
    }
    Some(decoded)
}

fn sextet(byte: u8) -> Option<u8> {
    Some(match byte {
        b'A'..=b'Z' => byte - b'A',
        b'a'..=b'z' => byte - b'a' + 26,
        b'0'..=b'9' => byte - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_recorded_nats_server_encodings() {
        assert_eq!(encode(b"hello"), "aGVsbG8=");
        assert_eq!(encode(b"one"), "b25l");
        assert_eq!(encode(b"NATS/1.0\r\nNats-Msg-Id: m1\r\n\r\n"), "TkFUUy8xLjANCk5hdHMtTXNnLUlkOiBtMQ0KDQo=");
    }

    #[test]
    fn round_trips_every_length_and_rejects_garbage() {
        let bytes: Vec<u8> = (0..=255).collect();
        for length in 0..40 {
            assert_eq!(decode(&encode(&bytes[..length])).as_deref(), Some(&bytes[..length]));
        }
        for bad in ["a", "ab=c", "a===", "ab!=", "YQ==YQ=="] {
            assert_eq!(decode(bad), None, "{bad}");
        }
    }
}
