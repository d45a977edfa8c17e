//! Subject transforms: nats subject mapping from a source pattern to a destination, as
//! nats-server 2.15 builds and applies them (server/subject_transform.go) for stream
//! `subject_transform`, `republish` and mirror/source `subject_transforms`.
//!
//! The source is a subject pattern (`*` and `>` wildcards; empty means `>`). The
//! destination is a subject whose tokens are literals, `>` (the source's `>` tokens, only
//! if the source ends in `>` too) or functions of the source's `*` tokens, numbered from
//! 1 in the source:
//!
//! | token | output |
//! | --- | --- |
//! | `$N`, `{{wildcard(N)}}` | the token of wildcard N |
//! | `{{partition(P,N,M...)}}` | FNV-1a of tokens N, M... (none: the whole subject) mod P |
//! | `{{split(N,D)}}` | token N split on the string D (empty parts dropped) |
//! | `{{splitFromLeft(N,I)}}`, `{{splitFromRight(N,I)}}` | token N cut in two, I bytes from that end |
//! | `{{sliceFromLeft(N,I)}}`, `{{sliceFromRight(N,I)}}` | token N cut every I bytes, from that end |
//! | `{{left(N,I)}}`, `{{right(N,I)}}` | the first / last I bytes of token N |
//! | `{{random(R)}}` | a random number below R |
//!
//! Function names are accepted with the first letter of each word in either case
//! (`{{Wildcard(1)}}`, `{{SplitFromLeft(1,2)}}`). Errors carry nats-server's text, e.g.
//! `invalid mapping destination: wildcard index out of range in $3: [3]`.
//!
//! ```
//! use jetcore::subject::SubjectTransform;
//! let transform = SubjectTransform::new("orders.*.*", "by-region.$2.{{wildcard(1)}}").unwrap();
//! assert_eq!(transform.apply("orders.42.eu").as_deref(), Some("by-region.eu.42"));
//! assert_eq!(transform.apply("orders.42"), None); // does not match the source
//! ```

use std::cell::Cell;
use std::fmt;

use super::transform_function::{is_mustache, names_known_function, parse_token, TokenFunction};
use super::{matches, SINGLE_WILDCARD, TAIL_WILDCARD};

const TAIL: &str = ">";

/// A validated transform from a source pattern to a destination. Immutable; cheap to
/// apply (one pass over the subject's tokens, one allocation for the result).
#[derive(Clone, Debug)]
pub struct SubjectTransform {
    source: String,
    destination: String,
    source_token_count: usize,
    /// One per destination token, with wildcard numbers turned into source positions.
    parts: Vec<Part>,
}

#[derive(Clone, Debug)]
enum Part {
    Literal(String),
    /// The destination's `>`: the source's `>` tokens follow.
    Tail,
    Function(TokenFunction),
}

/// Why a transform is not valid; `Display` is nats-server's text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TransformError {
    /// `invalid subject`: the source or destination is not a valid subject, the
    /// destination has a `*` token, or only one of them ends in `>`.
    BadSubject,
    /// `invalid mapping destination: <fault>` followed by ` in <token>` when a token is
    /// named.
    InvalidDestination { fault: DestinationFault, token: String },
}

/// What is wrong with a destination.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DestinationFault {
    /// An empty token, a token after `>`, or whitespace.
    InvalidTransform,
    UnknownFunction,
    WildcardIndexOutOfRange,
    NotEnoughArguments,
    InvalidArgument,
    TooManyArguments,
}

impl TransformError {
    pub(crate) fn destination(fault: DestinationFault, token: &str) -> TransformError {
        TransformError::InvalidDestination { fault, token: token.to_string() }
    }
}

impl fmt::Display for TransformError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (fault, token) = match self {
            TransformError::BadSubject => return formatter.write_str("invalid subject"),
            TransformError::InvalidDestination { fault, token } => (fault, token),
        };
        let reason = match fault {
            DestinationFault::InvalidTransform => "invalid transform",
            DestinationFault::UnknownFunction => "unknown function",
            DestinationFault::WildcardIndexOutOfRange => "wildcard index out of range",
            DestinationFault::NotEnoughArguments => "not enough arguments passed to the function",
            DestinationFault::InvalidArgument => "function argument is invalid or in the wrong format",
            DestinationFault::TooManyArguments => "too many arguments passed to the function",
        };
        write!(formatter, "invalid mapping destination: {reason}")?;
        if !token.is_empty() {
            write!(formatter, " in {token}")?;
        }
        Ok(())
    }
}

impl std::error::Error for TransformError {}

impl SubjectTransform {
    /// The transform from `source` to `destination` with all the checks nats-server makes
    /// of stream, mirror and source transforms (its `ValidateMapping`). An empty
    /// `source` means `>`. An empty `destination` is `BadSubject` here; nats-server's
    /// configs read it as "no transform", which callers decide before calling.
    pub fn new(source: &str, destination: &str) -> Result<SubjectTransform, TransformError> {
        if destination.is_empty() {
            return Err(TransformError::BadSubject);
        }
        check_destination_tokens(destination)?;
        SubjectTransform::new_lenient(source, destination)
    }

    /// The transform with only the checks of nats-server's `NewSubjectTransform`, which is
    /// what it applies to `republish` (whitespace in the destination is not checked).
    pub fn new_lenient(source: &str, destination: &str) -> Result<SubjectTransform, TransformError> {
        let source = if source.is_empty() { TAIL } else { source };
        let source_shape = shape(source).ok_or(TransformError::BadSubject)?;
        let destination_shape = shape(destination).ok_or(TransformError::BadSubject)?;
        if destination_shape.single_wildcards > 0 || source_shape.tail != destination_shape.tail {
            return Err(TransformError::BadSubject);
        }
        // Source position of each `*`, by wildcard number minus one.
        let wildcard_positions: Vec<usize> = source
            .split('.')
            .enumerate()
            .filter(|(_, token)| token.as_bytes() == SINGLE_WILDCARD)
            .map(|(position, _)| position)
            .collect();
        let has_wildcards = !wildcard_positions.is_empty() || source_shape.tail;
        let mut parts = Vec::new();
        for token in destination.split('.') {
            let function = parse_token(token)?;
            let part = match function {
                TokenFunction::Literal if token == TAIL => Part::Tail,
                TokenFunction::Literal => Part::Literal(token.to_string()),
                TokenFunction::Random(_) => Part::Function(function),
                // Without source wildcards a partition hashes the whole subject.
                TokenFunction::Partition(buckets, _) if !has_wildcards => {
                    Part::Function(TokenFunction::Partition(buckets, Vec::new()))
                }
                _ if !has_wildcards => {
                    let fault = DestinationFault::WildcardIndexOutOfRange;
                    return Err(TransformError::destination(fault, token));
                }
                function => Part::Function(positions(function, token, &wildcard_positions)?),
            };
            parts.push(part);
        }
        Ok(SubjectTransform {
            source: source.to_string(),
            destination: destination.to_string(),
            source_token_count: source.split('.').count(),
            parts,
        })
    }

    /// The source pattern (`>` when it was given empty).
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The destination as given.
    pub fn destination(&self) -> &str {
        &self.destination
    }

    /// `subject` transformed, or `None` when it does not match the source or is not a
    /// literal subject (nats-server's `Match`).
    pub fn apply(&self, subject: &str) -> Option<String> {
        if self.source == TAIL && self.destination == TAIL {
            return Some(subject.to_string());
        }
        let literal = subject.split('.').all(|token| !token.is_empty() && token != "*" && token != TAIL);
        if !literal || (self.source != TAIL && !matches(self.source.as_bytes(), subject.as_bytes())) {
            return None;
        }
        Some(self.transform(subject))
    }

    fn transform(&self, subject: &str) -> String {
        let tokens: Vec<&str> = subject.split('.').collect();
        let mut out: Vec<u8> = Vec::with_capacity(subject.len() + self.destination.len());
        let last = self.parts.len() - 1;
        for (index, part) in self.parts.iter().enumerate() {
            match part {
                Part::Tail => break,
                Part::Literal(literal) => out.extend_from_slice(literal.as_bytes()),
                Part::Function(function) => write_function(&mut out, function, &tokens, subject),
            }
            if index < last {
                out.push(b'.');
            }
        }
        if matches!(self.parts.last(), Some(Part::Tail)) {
            let tail = &tokens[self.source_token_count.saturating_sub(1).min(tokens.len())..];
            out.extend_from_slice(tail.join(".").as_bytes());
        }
        // Byte cuts (slice, split, left, right) can split a UTF-8 character, as in Go.
        String::from_utf8(out).unwrap_or_else(|error| String::from_utf8_lossy(error.as_bytes()).into_owned())
    }
}

/// A subject's shape for a transform (nats-server's `subjectInfo`): `None` unless it is
/// non-empty with no empty token and nothing after `>`.
struct Shape {
    single_wildcards: usize,
    tail: bool,
}

fn shape(subject: &str) -> Option<Shape> {
    let mut shape = Shape { single_wildcards: 0, tail: false };
    if subject.is_empty() {
        return None;
    }
    for token in subject.split('.') {
        if token.is_empty() || shape.tail {
            return None;
        }
        shape.tail = token.as_bytes() == TAIL_WILDCARD;
        shape.single_wildcards += usize::from(token.as_bytes() == SINGLE_WILDCARD);
    }
    Some(shape)
}

/// The destination checks `ValidateMapping` adds before building the transform.
fn check_destination_tokens(destination: &str) -> Result<(), TransformError> {
    let mut after_tail = false;
    for token in destination.split('.') {
        if token.is_empty() || after_tail {
            return Err(TransformError::destination(DestinationFault::InvalidTransform, token));
        }
        if is_mustache(token) {
            if !names_known_function(token) {
                return Err(TransformError::destination(DestinationFault::UnknownFunction, token));
            }
            continue;
        }
        if token == TAIL {
            after_tail = true;
        } else if token.contains(['\t', '\n', '\x0c', '\r', ' ']) {
            return Err(TransformError::destination(DestinationFault::InvalidTransform, ""));
        }
    }
    Ok(())
}

/// `function` with wildcard numbers replaced by source token positions. A number above
/// the source's `*` count is refused; one below 1 reads the first token, as in Go (whose
/// lookup of a missing number yields position 0).
fn positions(function: TokenFunction, token: &str, wildcards: &[usize]) -> Result<TokenFunction, TransformError> {
    let position = |number: i64| -> Result<i64, TransformError> {
        if number > wildcards.len() as i64 {
            let fault = DestinationFault::WildcardIndexOutOfRange;
            return Err(TransformError::destination(fault, &format!("{token}: [{number}]")));
        }
        let slot = usize::try_from(number - 1).ok();
        Ok(slot.and_then(|slot| wildcards.get(slot)).map_or(0, |&position| position as i64))
    };
    Ok(match function {
        TokenFunction::Wildcard(number) => TokenFunction::Wildcard(position(number)?),
        TokenFunction::Partition(buckets, numbers) => {
            let positions = numbers.into_iter().map(position).collect::<Result<_, _>>()?;
            TokenFunction::Partition(buckets, positions)
        }
        TokenFunction::SplitFromLeft(number, size) => TokenFunction::SplitFromLeft(position(number)?, size),
        TokenFunction::SplitFromRight(number, size) => TokenFunction::SplitFromRight(position(number)?, size),
        TokenFunction::SliceFromLeft(number, size) => TokenFunction::SliceFromLeft(position(number)?, size),
        TokenFunction::SliceFromRight(number, size) => TokenFunction::SliceFromRight(position(number)?, size),
        TokenFunction::Left(number, size) => TokenFunction::Left(position(number)?, size),
        TokenFunction::Right(number, size) => TokenFunction::Right(position(number)?, size),
        TokenFunction::Split(number, delimiter) => TokenFunction::Split(position(number)?, delimiter),
        TokenFunction::Literal | TokenFunction::Random(_) => function,
    })
}

/// Appends what `function` (with source positions) makes of the subject's `tokens`.
fn write_function(out: &mut Vec<u8>, function: &TokenFunction, tokens: &[&str], subject: &str) {
    let token = |position: &i64| tokens.get(*position as usize).copied().unwrap_or("").as_bytes();
    match function {
        TokenFunction::Literal => {}
        TokenFunction::Wildcard(position) => out.extend_from_slice(token(position)),
        TokenFunction::Partition(buckets, positions) => {
            let key: Vec<u8> = if positions.is_empty() {
                subject.as_bytes().to_vec()
            } else {
                positions.iter().flat_map(|position| token(position).iter().copied()).collect()
            };
            let bucket = match *buckets {
                0 => 0,
                buckets => fnv1a_32(&key) % (buckets as u32),
            };
            out.extend_from_slice(bucket.to_string().as_bytes());
        }
        TokenFunction::SplitFromLeft(position, at) => split_at(out, token(position), Some(*at), true),
        TokenFunction::SplitFromRight(position, at) => split_at(out, token(position), Some(*at), false),
        TokenFunction::SliceFromLeft(position, size) => slice_from_left(out, token(position), *size),
        TokenFunction::SliceFromRight(position, size) => slice_from_right(out, token(position), *size),
        TokenFunction::Left(position, size) => keep_end(out, token(position), *size, true),
        TokenFunction::Right(position, size) => keep_end(out, token(position), *size, false),
        TokenFunction::Split(position, delimiter) => split_on(out, tokens, *position, delimiter),
        TokenFunction::Random(range) => {
            let value = if *range <= 0 { 0 } else { next_random() % (*range as u64) };
            out.extend_from_slice(value.to_string().as_bytes());
        }
    }
}

/// The byte count `size` if it cuts strictly inside a token of `length` bytes.
fn inside(size: i32, length: usize) -> Option<usize> {
    usize::try_from(size).ok().filter(|&size| size > 0 && size < length)
}

fn split_at(out: &mut Vec<u8>, token: &[u8], at: Option<i32>, from_left: bool) {
    match at.and_then(|at| inside(at, token.len())) {
        Some(at) => {
            let cut = if from_left { at } else { token.len() - at };
            out.extend_from_slice(&token[..cut]);
            out.push(b'.');
            out.extend_from_slice(&token[cut..]);
        }
        None => out.extend_from_slice(token),
    }
}

fn keep_end(out: &mut Vec<u8>, token: &[u8], size: i32, from_left: bool) {
    match inside(size, token.len()) {
        Some(size) if from_left => out.extend_from_slice(&token[..size]),
        Some(size) => out.extend_from_slice(&token[token.len() - size..]),
        None => out.extend_from_slice(token),
    }
}

fn slice_from_left(out: &mut Vec<u8>, token: &[u8], size: i32) {
    let Some(size) = inside(size, token.len()) else {
        return out.extend_from_slice(token);
    };
    let pieces: Vec<&[u8]> = token.chunks(size).collect();
    out.extend_from_slice(&pieces.join(&b'.'));
}

fn slice_from_right(out: &mut Vec<u8>, token: &[u8], size: i32) {
    let Some(size) = inside(size, token.len()) else {
        return out.extend_from_slice(token);
    };
    let remainder = token.len() % size;
    let mut pieces: Vec<&[u8]> = Vec::new();
    if remainder > 0 {
        pieces.push(&token[..remainder]);
    }
    pieces.extend(token[remainder..].chunks(size));
    out.extend_from_slice(&pieces.join(&b'.'));
}

/// Go's split: the non-empty parts, each after a `.` except the first part and a second
/// part that follows an empty first one (so `--a` on `-` gives `.a`, as in nats-server).
/// An empty delimiter splits between characters.
fn split_on(out: &mut Vec<u8>, tokens: &[&str], position: i64, delimiter: &str) {
    let token = tokens.get(position as usize).copied().unwrap_or("");
    let parts: Vec<&str> = if delimiter.is_empty() {
        token.char_indices().map(|(start, character)| &token[start..start + character.len_utf8()]).collect()
    } else {
        token.split(delimiter).collect()
    };
    for (index, part) in parts.iter().enumerate() {
        let leading_empty = index == 1 && parts[0].is_empty();
        if index > 0 && !part.is_empty() && !leading_empty {
            out.push(b'.');
        }
        out.extend_from_slice(part.as_bytes());
    }
}

/// 32-bit FNV-1a, the hash nats-server partitions with.
fn fnv1a_32(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811c_9dc5_u32, |hash, &byte| (hash ^ u32::from(byte)).wrapping_mul(0x0100_0193))
}

thread_local! {
    static RANDOM_STATE: Cell<u64> = Cell::new(random_seed());
}

/// A per-thread xorshift64* sequence for `{{random(R)}}` (not cryptographic).
fn next_random() -> u64 {
    RANDOM_STATE.with(|state| {
        let mut value = state.get();
        value ^= value >> 12;
        value ^= value << 25;
        value ^= value >> 27;
        state.set(value);
        value.wrapping_mul(0x2545_f491_4f6c_dd1d)
    })
}

fn random_seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(0x9e37_79b9_7f4a_7c15);
    hasher.finish() | 1
}
