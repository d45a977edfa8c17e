//! Seeded randomized checks of the pure codecs in `jetcore::jetstream`: parsers never
//! panic, encoders and decoders are inverse. A failure prints its seed; rerun one with
//! `JETSTREAM_WIRE_SEED=<seed> cargo test --test jetstream_wire_properties`.

use jetcore::jetstream::base64;
use jetcore::jetstream::consumer_api::PullRequest;
use jetcore::jetstream::request::parse_body;
use jetcore::jetstream::stream_config::{ConfigPurpose, StreamConfig};
use jetcore::jetstream::{ApiRequest, Timestamp};

const ITERATIONS: usize = 2_000;

/// xorshift64*: small, deterministic, good enough to spread inputs.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, bound: usize) -> usize {
        (self.next() % bound as u64) as usize
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

fn seeds() -> Vec<u64> {
    match std::env::var("JETSTREAM_WIRE_SEED") {
        Ok(seed) => vec![seed.parse().expect("JETSTREAM_WIRE_SEED is a u64")],
        Err(_) => vec![0x9e37_79b9_7f4a_7c15, 1, 0xdead_beef],
    }
}

fn for_each_seed(check: impl Fn(&mut Rng)) {
    for seed in seeds() {
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(&mut Rng(seed))));
        if let Err(panic) = outcome {
            eprintln!("failing seed: JETSTREAM_WIRE_SEED={seed}");
            std::panic::resume_unwind(panic);
        }
    }
}

#[test]
fn timestamps_round_trip_through_rfc3339() {
    for_each_seed(|rng| {
        for _ in 0..ITERATIONS {
            let nanos = rng.next() as i64;
            let stamp = Timestamp::from_unix_nanos(nanos);
            let text = stamp.to_string();
            assert!(text.ends_with('Z') && !text.contains(".0Z"), "{text}");
            assert_eq!(Timestamp::parse_rfc3339(&text), Some(stamp), "{nanos} {text}");
            assert_eq!(stamp.unix_nanos(), Some(nanos));
        }
    });
}

#[test]
fn base64_round_trips_random_bytes() {
    for_each_seed(|rng| {
        for _ in 0..ITERATIONS {
            let bytes: Vec<u8> = (0..rng.below(64)).map(|_| rng.next() as u8).collect();
            assert_eq!(base64::decode(&base64::encode(&bytes)), Some(bytes));
        }
    });
}

#[test]
fn api_subjects_built_from_tokens_parse_to_their_endpoint() {
    let names = ["ORDERS", "KV_B", "a-b", "NAMES", "INFO", "x1"];
    let filters = ["orders.*", ">", "a.b.c", "$KV.B.k1"];
    for_each_seed(|rng| {
        for _ in 0..ITERATIONS {
            let (stream, consumer, filter) = (rng.pick(&names), rng.pick(&names), rng.pick(&filters));
            let (subject, expected) = match rng.below(5) {
                0 => (format!("$JS.API.STREAM.INFO.{stream}"), ApiRequest::StreamInfo { stream }),
                1 => (
                    format!("$JS.API.CONSUMER.CREATE.{stream}.{consumer}.{filter}"),
                    ApiRequest::ConsumerCreate { stream, consumer: Some(consumer), filter: Some(filter) },
                ),
                2 => (
                    format!("$JS.API.DIRECT.GET.{stream}.{filter}"),
                    ApiRequest::DirectGet { stream, last_by_subject: Some(filter) },
                ),
                3 => (
                    format!("$JS.API.CONSUMER.MSG.NEXT.{stream}.{consumer}"),
                    ApiRequest::ConsumerNext { stream, consumer },
                ),
                _ => (
                    format!("$JS.API.CONSUMER.INFO.{stream}.{consumer}"),
                    ApiRequest::ConsumerInfo { stream, consumer },
                ),
            };
            assert_eq!(ApiRequest::parse(&subject), expected, "{subject}");
        }
    });
}

#[test]
fn decoders_never_panic_on_garbage() {
    let alphabet = b"{}[]\":,.*> 0123456789abcnulltrue$JS.API.STREAM.CONSUMER";
    for_each_seed(|rng| {
        for _ in 0..ITERATIONS {
            let bytes: Vec<u8> = (0..rng.below(40)).map(|_| alphabet[rng.below(alphabet.len())]).collect();
            let text = String::from_utf8_lossy(&bytes);
            let _ = ApiRequest::parse(&text);
            let _ = parse_body(&bytes);
            let _ = PullRequest::decode(&bytes);
            let _ = StreamConfig::from_request("S", &bytes, ConfigPurpose::Create);
        }
    });
}
