//! NATS nkeys as a server checks them: a user's public key (`U…`, base32 of a prefix
//! byte, the 32-byte ed25519 key and a CRC-16), the nonce sent in INFO, and the client's
//! signature of that nonce in CONNECT (`sig`, base64).

use ring::rand::{SecureRandom, SystemRandom};
use ring::signature::{UnparsedPublicKey, ED25519};

/// The first byte of a user's public key: its base32 text starts with `U`.
const USER_PREFIX_BYTE: u8 = 20 << 3;
/// Prefix byte, 32 key bytes, 2 checksum bytes.
const DECODED_BYTES: usize = 35;
/// nats-server sends 11 random bytes, base64 (URL alphabet, no padding): 15 characters.
const NONCE_RANDOM_BYTES: usize = 11;

/// The ed25519 key of a user's public nkey, or `None` when `text` is not one (wrong
/// length, alphabet, prefix or checksum), as nats-server's `IsValidPublicUserKey`.
pub fn user_public_key(text: &str) -> Option<[u8; 32]> {
    let decoded = base32_decode(text)?;
    if decoded.len() != DECODED_BYTES || decoded[0] != USER_PREFIX_BYTE {
        return None;
    }
    let (body, checksum) = decoded.split_at(DECODED_BYTES - 2);
    if crc16(body) != u16::from_le_bytes([checksum[0], checksum[1]]) {
        return None;
    }
    body[1..].try_into().ok()
}

/// Whether `signature` (base64, URL alphabet without padding or standard, as clients
/// send it) is `public_key`'s ed25519 signature of `nonce`.
pub fn verifies(public_key: &str, nonce: &str, signature: &str) -> bool {
    let Some(key) = user_public_key(public_key) else { return false };
    let Some(signature) = base64_decode(signature) else { return false };
    UnparsedPublicKey::new(&ED25519, key).verify(nonce.as_bytes(), &signature).is_ok()
}

/// A fresh nonce for one connection's INFO.
pub fn new_nonce() -> String {
    let mut random = [0u8; NONCE_RANDOM_BYTES];
    if SystemRandom::new().fill(&mut random).is_err() {
        // No randomness means no nonce a signature could be trusted for: an empty one
        // makes every nkey login fail rather than accept a replayed signature.
        return String::new();
    }
    base64_url_encode(&random)
}

/// CRC-16/XMODEM (polynomial 0x1021, initial 0), the checksum nkeys carry.
fn crc16(bytes: &[u8]) -> u16 {
    let mut crc = 0u16;
    for &byte in bytes {
        crc ^= u16::from(byte) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 { (crc << 1) ^ 0x1021 } else { crc << 1 };
        }
    }
    crc
}

/// RFC 4648 base32 without padding, upper case, as nkeys are written.
fn base32_decode(text: &str) -> Option<Vec<u8>> {
    decode_symbols(text, 5, |symbol| match symbol {
        b'A'..=b'Z' => Some(symbol - b'A'),
        b'2'..=b'7' => Some(symbol - b'2' + 26),
        _ => None,
    })
}

/// Bytes from `text`, each symbol carrying `bits` bits (`value_of` gives them); leftover
/// bits at the end are padding.
fn decode_symbols(text: &str, bits: u32, value_of: impl Fn(u8) -> Option<u8>) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len() * bits as usize / 8);
    let (mut buffer, mut held) = (0u32, 0u32);
    for symbol in text.bytes() {
        buffer = (buffer << bits) | u32::from(value_of(symbol)?);
        held += bits;
        if held >= 8 {
            held -= 8;
            out.push((buffer >> held) as u8);
            buffer &= (1 << held) - 1;
        }
    }
    Some(out)
}

const URL_ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

fn base64_url_encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let word =
            chunk.iter().enumerate().fold(0u32, |word, (index, &byte)| word | u32::from(byte) << (16 - 8 * index));
        for index in 0..=chunk.len() {
            out.push(URL_ALPHABET[(word >> (18 - 6 * index)) as usize & 63] as char);
        }
    }
    out
}

/// Base64 in either alphabet (`-_` or `+/`), padded or not.
fn base64_decode(text: &str) -> Option<Vec<u8>> {
    decode_symbols(text.trim_end_matches('='), 6, |symbol| match symbol {
        b'A'..=b'Z' => Some(symbol - b'A'),
        b'a'..=b'z' => Some(symbol - b'a' + 26),
        b'0'..=b'9' => Some(symbol - b'0' + 52),
        b'-' | b'+' => Some(62),
        b'_' | b'/' => Some(63),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A user key from nats-server's own configuration tests.
    const USER_KEY: &str = "UC6NLCN7AS34YOJVCYD4PJ3QB7QGLYG5B5IMBT25VW5K4TNUJODM7BOX";

    #[test]
    fn a_user_key_decodes_and_others_do_not() {
        assert!(user_public_key(USER_KEY).is_some());
        // A seed, an account key, one changed character (checksum), a short key.
        assert!(user_public_key("SCARKS2E3KVB7YORL2DG34XLT7PUCOL2SVM7YXV6ETHLW6Z46UUJ2VZ3").is_none());
        assert!(user_public_key("AC5GRL36RQV7MJ2GT6WQSCKDKJKYTK4T2LGLWJ2SEJKRDHFOQQWGGFQL").is_none());
        assert!(user_public_key("UC6NLCN7AS34YOJVCYD4PJ3QB7QGLYG5B5IMBT25VW5K4TNUJODM7BOY").is_none());
        assert!(user_public_key(&USER_KEY[..50]).is_none());
        assert!(user_public_key("uc6nlcn7as34yojvcyd4pj3qb7qglyg5b5imbt25vw5k4tnujodm7box").is_none());
    }

    #[test]
    fn nonces_are_fifteen_url_safe_characters_and_differ() {
        let (first, second) = (new_nonce(), new_nonce());
        assert_eq!(first.len(), 15);
        assert!(first.bytes().all(|byte| URL_ALPHABET.contains(&byte)));
        assert_ne!(first, second);
        assert_eq!(base64_decode(&first).map(|bytes| bytes.len()), Some(NONCE_RANDOM_BYTES));
    }

    #[test]
    fn base64_round_trips_in_both_alphabets() {
        let bytes: Vec<u8> = (0u8..=255).collect();
        let url = base64_url_encode(&bytes);
        assert_eq!(base64_decode(&url).as_deref(), Some(&bytes[..]));
        let standard: String = url
            .chars()
            .map(|c| {
                if c == '-' {
                    '+'
                } else if c == '_' {
                    '/'
                } else {
                    c
                }
            })
            .collect();
        assert_eq!(base64_decode(&format!("{standard}==")).as_deref(), Some(&bytes[..]));
        assert!(base64_decode("a b").is_none());
    }
}
