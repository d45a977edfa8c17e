//! Which shard owns a stream.
//!
//! CONTRACT:
//! - `shard_for(name, count)` is a pure function of the name's UTF-8 bytes and `count`, fixed
//!   forever: FNV-1a 64-bit over the bytes, then Lamping & Veach's jump consistent hash into
//!   `count` buckets. Both are written out here (no `std` hasher, whose output may change
//!   between Rust releases), and a test pins known outputs. Jump hash moves only about
//!   `1/(count+1)` of streams when `count` grows by one, so a placement that must be recomputed
//!   disturbs little.
//! - A new stream is placed with `shard_for` and its storage records the chosen `ShardId` in
//!   the stream's metadata. At every start, `owner(name, recorded, count)` says who owns it:
//!   the recorded shard while it still exists (`recorded < count`), so streams do not move
//!   when `--shards` grows; otherwise (`--shards` shrank) `shard_for(name, count)`. The storage
//!   code should then record the new owner, so the stream stays put from then on.

use super::ShardId;

const FNV1A_OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
const FNV1A_PRIME: u64 = 0x0000_0100_0000_01b3;

/// 64-bit FNV-1a of `bytes`.
pub fn fnv1a_64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(FNV1A_OFFSET_BASIS, |hash, &byte| (hash ^ u64::from(byte)).wrapping_mul(FNV1A_PRIME))
}

/// Jump consistent hash (Lamping & Veach 2014): maps `key` to a bucket in `0..buckets`.
pub fn jump_consistent_hash(mut key: u64, buckets: u32) -> u32 {
    assert!(buckets > 0, "jump hash needs at least one bucket");
    let mut bucket: i64 = -1;
    let mut next: i64 = 0;
    while next < i64::from(buckets) {
        bucket = next;
        key = key.wrapping_mul(2_862_933_555_777_941_757).wrapping_add(1);
        let scale = (1u64 << 31) as f64 / ((key >> 33) + 1) as f64;
        next = ((bucket + 1) as f64 * scale) as i64;
    }
    bucket as u32
}

/// The shard a new stream named `stream_name` is placed on, given `shard_count` shards.
pub fn shard_for(stream_name: &str, shard_count: u16) -> ShardId {
    assert!(shard_count > 0, "placement needs at least one shard");
    let bucket = jump_consistent_hash(fnv1a_64(stream_name.as_bytes()), u32::from(shard_count));
    ShardId(bucket as u16)
}

/// The shard that owns an existing stream whose metadata recorded `recorded` as its shard,
/// now that the runtime has `shard_count` shards (see the module doc).
pub fn owner(stream_name: &str, recorded: ShardId, shard_count: u16) -> ShardId {
    if recorded.0 < shard_count {
        recorded
    } else {
        shard_for(stream_name, shard_count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a_matches_reference_vectors() {
        // Vectors from the FNV reference (draft-eastlake-fnv, test suite).
        assert_eq!(fnv1a_64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a_64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a_64(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn jump_hash_matches_reference_vectors() {
        // Computed with an independent Python port of the paper's C++ listing.
        assert_eq!(jump_consistent_hash(1, 1), 0);
        assert_eq!(jump_consistent_hash(0xdead_10cc, 1), 0);
        assert_eq!(jump_consistent_hash(0xdead_10cc, 666), 361);
        assert_eq!(jump_consistent_hash(256, 1024), 520);
    }

    #[test]
    fn placement_is_pinned_forever() {
        // If this fails, existing data directories would be placed differently: don't.
        let pinned: Vec<u16> =
            ["ORDERS", "telemetry", "KV_config", "a", ""].iter().map(|name| shard_for(name, 8).0).collect();
        assert_eq!(pinned, PINNED_PLACEMENT_8_SHARDS);
    }
    const PINNED_PLACEMENT_8_SHARDS: [u16; 5] = [2, 5, 0, 2, 1];

    #[test]
    fn placement_spreads_streams_evenly() {
        let shard_count = 4u16;
        let mut per_shard = [0u32; 4];
        for index in 0..40_000 {
            per_shard[usize::from(shard_for(&format!("stream-{index}"), shard_count).0)] += 1;
        }
        for count in per_shard {
            assert!((9_000..11_000).contains(&count), "uneven placement {per_shard:?}");
        }
    }

    #[test]
    fn growing_by_one_shard_moves_few_streams() {
        let moved = (0..10_000)
            .filter(|index| {
                let name = format!("s{index}");
                shard_for(&name, 4) != shard_for(&name, 5)
            })
            .count();
        // Expected 1/5 of streams; allow noise.
        assert!((1_500..2_500).contains(&moved), "moved {moved}");
    }

    #[test]
    fn owner_keeps_recorded_shard_while_it_exists() {
        assert_eq!(owner("ORDERS", ShardId(3), 4), ShardId(3));
        assert_eq!(owner("ORDERS", ShardId(3), 16), ShardId(3));
        let rehomed = owner("ORDERS", ShardId(3), 2);
        assert_eq!(rehomed, shard_for("ORDERS", 2));
        assert!(rehomed.0 < 2);
    }
}
