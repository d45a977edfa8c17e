//! CRC32C (Castagnoli), the checksum of every record and file in the store: three
//! interleaved streams of the SSE4.2 `crc32` instruction over the whole buffer, joined with
//! a carry-less multiply.
//!
//! The `crc32` instruction takes 3 cycles and can start one per cycle, so one stream over a
//! buffer runs at a third of the instruction's rate. The `crc32c` crate interleaves three
//! streams only over fixed blocks (768 bytes here) and runs the rest as one stream: a
//! 1 KiB record was ~100 ns, 13 % of the shard's time in the embedded lockstep window
//! (perf/embedding.md, eleventh session). Here the buffer is cut into three equal lanes
//! whatever its length. Lane two and three start from a zero state; the three states are
//! then joined: feeding `n` zero bytes to a state is multiplying it by `x^(8n)` modulo
//! the polynomial, one carry-less multiply by a constant per lane length
//! ([`shift_constants`]) and one `crc32` to reduce the product.
//!
//! The same values as `crc32c::crc32c_append` (the unit tests compare every length up to
//! a few KiB), which is also the fallback on a CPU without SSE4.2 and PCLMULQDQ.

#[cfg(target_arch = "x86_64")]
use std::sync::OnceLock;

/// Words (8 bytes) per lane at most: a longer buffer is taken in rounds of three lanes.
#[cfg(target_arch = "x86_64")]
const LANE_WORDS_MAX: usize = 512;
/// Fewer words per lane than this go through one stream: joining costs about as much as
/// the interleaving saves for a few words.
#[cfg(target_arch = "x86_64")]
const LANE_WORDS_MIN: usize = 4;

/// The CRC32C of `data`.
pub fn crc32c(data: &[u8]) -> u32 {
    crc32c_append(0, data)
}

/// The CRC32C of the bytes whose CRC32C is `crc`, followed by `data`.
pub fn crc32c_append(crc: u32, data: &[u8]) -> u32 {
    #[cfg(target_arch = "x86_64")]
    if let Some(constants) = hardware() {
        // SAFETY: `hardware` answers only on a CPU with SSE4.2 and PCLMULQDQ.
        return unsafe { interleaved::append(crc, data, constants) };
    }
    crc32c::crc32c_append(crc, data)
}

/// The join constants ([`shift_constants`]) when the CPU has SSE4.2 and PCLMULQDQ:
/// detected once, so a call costs one load.
#[cfg(target_arch = "x86_64")]
fn hardware() -> Option<&'static [u64; LANE_WORDS_MAX + 1]> {
    static CONSTANTS: OnceLock<Option<Box<[u64; LANE_WORDS_MAX + 1]>>> = OnceLock::new();
    let detected = || {
        (std::arch::is_x86_feature_detected!("sse4.2") && std::arch::is_x86_feature_detected!("pclmulqdq"))
            .then(shift_constants)
    };
    CONSTANTS.get_or_init(detected).as_deref()
}

/// For each lane length of `words` 8-byte words (index `words`), the constant whose
/// carry-less product with a CRC state, reduced by one `crc32` of it, is the state after
/// `8 × words` zero bytes: `x^(64·words − 33)` modulo the polynomial, bit-reflected as the
/// instruction holds states (the `− 33`: 32 for the `x^32` the reducing `crc32` multiplies
/// by, 1 for the bit a reflected carry-less product is shifted by).
#[cfg(target_arch = "x86_64")]
fn shift_constants() -> Box<[u64; LANE_WORDS_MAX + 1]> {
    let mut constants = Box::new([0u64; LANE_WORDS_MAX + 1]);
    // x^31 reflected is bit 0; x^(64·1 − 33) = x^31 for one word.
    let mut power = 1u32;
    for words in 1..=LANE_WORDS_MAX {
        constants[words] = u64::from(power);
        for _ in 0..64 {
            power = times_x(power);
        }
    }
    constants
}

/// `value · x` modulo the CRC32C polynomial, bit-reflected (bit 31 is `x^0`).
#[cfg(target_arch = "x86_64")]
fn times_x(value: u32) -> u32 {
    const POLYNOMIAL_REFLECTED: u32 = 0x82F6_3B78;
    if value & 1 == 1 {
        (value >> 1) ^ POLYNOMIAL_REFLECTED
    } else {
        value >> 1
    }
}

#[cfg(target_arch = "x86_64")]
mod interleaved {
    use std::arch::x86_64::{_mm_clmulepi64_si128, _mm_crc32_u64, _mm_crc32_u8, _mm_cvtsi128_si64, _mm_cvtsi64_si128};

    use super::{LANE_WORDS_MAX, LANE_WORDS_MIN};

    /// # Safety
    /// The CPU has SSE4.2 and PCLMULQDQ.
    #[target_feature(enable = "sse4.2,pclmulqdq")]
    pub(super) unsafe fn append(crc: u32, data: &[u8], constants: &[u64; LANE_WORDS_MAX + 1]) -> u32 {
        let mut state = u64::from(!crc);
        let mut rest = data;
        loop {
            let words = (rest.len() / 24).min(LANE_WORDS_MAX);
            if words < LANE_WORDS_MIN {
                break;
            }
            let lane = words * 8;
            let (first, second, third) = (&rest[..lane], &rest[lane..2 * lane], &rest[2 * lane..3 * lane]);
            let (mut one, mut two, mut three) = (state, 0u64, 0u64);
            for word in 0..words {
                let at = word * 8;
                one = _mm_crc32_u64(one, word_at(first, at));
                two = _mm_crc32_u64(two, word_at(second, at));
                three = _mm_crc32_u64(three, word_at(third, at));
            }
            let constant = constants[words];
            state = shift(one, constant) ^ two;
            state = shift(state, constant) ^ three;
            rest = &rest[3 * lane..];
        }
        let mut words = rest.chunks_exact(8);
        for word in &mut words {
            state = _mm_crc32_u64(state, word_at(word, 0));
        }
        let mut state = state as u32;
        for &byte in words.remainder() {
            state = _mm_crc32_u8(state, byte);
        }
        !state
    }

    /// The state after `8 × words` zero bytes from `state`, `constant` being that lane
    /// length's (`super::shift_constants`).
    #[target_feature(enable = "sse4.2,pclmulqdq")]
    unsafe fn shift(state: u64, constant: u64) -> u64 {
        let product = _mm_clmulepi64_si128(_mm_cvtsi64_si128(state as i64), _mm_cvtsi64_si128(constant as i64), 0x00);
        _mm_crc32_u64(0, _mm_cvtsi128_si64(product) as u64)
    }

    fn word_at(bytes: &[u8], at: usize) -> u64 {
        u64::from_le_bytes(bytes[at..at + 8].try_into().expect("eight bytes"))
    }
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::*;

    /// Bytes that are not a pattern a wrong join could still get right.
    fn noise(len: usize, seed: u64) -> Vec<u8> {
        let mut state = seed | 1;
        (0..len)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state as u8
            })
            .collect()
    }

    #[test]
    fn matches_the_reference_at_every_length_and_start() {
        let data = noise(4 * 24 * LANE_WORDS_MAX + 100, 7);
        for len in (0..3000).chain([24 * LANE_WORDS_MAX - 1, 24 * LANE_WORDS_MAX, 3 * 24 * LANE_WORDS_MAX + 77]) {
            for start in [0, 1, 5] {
                let bytes = &data[start..start + len];
                assert_eq!(crc32c(bytes), crc32c::crc32c(bytes), "length {len} from {start}");
            }
        }
    }

    #[test]
    fn appends_as_the_reference_does() {
        let data = noise(5000, 11);
        for split in [0, 3, 4, 8, 100, 1067, 4999] {
            let (head, tail) = data.split_at(split);
            assert_eq!(crc32c_append(crc32c(head), tail), crc32c::crc32c(&data), "split at {split}");
            assert_eq!(crc32c_append(0xDEAD_BEEF, tail), crc32c::crc32c_append(0xDEAD_BEEF, tail));
        }
    }

    #[test]
    fn known_check_value() {
        // The CRC32C check value of the nine ASCII digits (RFC 3720, iSCSI).
        assert_eq!(crc32c(b"123456789"), 0xE306_9283);
    }
}
