//! One destination token of a subject transform, read the way nats-server reads it
//! (`indexPlaceHolders` in server/subject_transform.go): a literal, the legacy `$N`, or a
//! `{{Function(args)}}` mustache token.
//!
//! nats-server finds functions with unanchored regular expressions of the form
//! `{{\s*Name\s*\((.*)\)\s*}}` (only the first letter of each word of `Name` may be upper
//! case) and splits the captured arguments on `,\s*`. `find_arguments` reproduces that
//! match, greedy capture included, so odd tokens (`{{wildcard(1)}}{{wildcard(1)}}`) get
//! the same answer as from nats-server.

use super::transform::{DestinationFault, TransformError};

/// What a destination token produces. Indexes are wildcard numbers as written (1 = the
/// first `*` of the source); they become source token positions later.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum TokenFunction {
    Literal,
    Wildcard(i64),
    /// Bucket count and the wildcards hashed (none: the whole subject).
    Partition(i32, Vec<i64>),
    SplitFromLeft(i64, i32),
    SplitFromRight(i64, i32),
    SliceFromLeft(i64, i32),
    SliceFromRight(i64, i32),
    Left(i64, i32),
    Right(i64, i32),
    /// Wildcard and delimiter (empty: split between every character).
    Split(i64, String),
    Random(i32),
}

/// The function names nats-server knows, as words (each word's first letter may be either
/// case), in the order it tries them.
const WILDCARD: &[&str] = &["wildcard"];
const PARTITION: &[&str] = &["partition"];
const SPLIT_FROM_LEFT: &[&str] = &["split", "from", "left"];
const SPLIT_FROM_RIGHT: &[&str] = &["split", "from", "right"];
const SLICE_FROM_LEFT: &[&str] = &["slice", "from", "left"];
const SLICE_FROM_RIGHT: &[&str] = &["slice", "from", "right"];
const RIGHT: &[&str] = &["right"];
const LEFT: &[&str] = &["left"];
const SPLIT: &[&str] = &["split"];
const RANDOM: &[&str] = &["random"];
const FUNCTIONS: [&[&str]; 10] = [
    WILDCARD,
    PARTITION,
    SPLIT_FROM_LEFT,
    SPLIT_FROM_RIGHT,
    SLICE_FROM_LEFT,
    SLICE_FROM_RIGHT,
    RIGHT,
    LEFT,
    SPLIT,
    RANDOM,
];

/// Whether `token` is `{{...}}` (more than four bytes), the form nats-server reads as a
/// function call.
pub(crate) fn is_mustache(token: &str) -> bool {
    token.len() > 4 && token.starts_with("{{") && token.ends_with("}}")
}

/// Whether some known function's pattern matches inside `token`.
pub(crate) fn names_known_function(token: &str) -> bool {
    FUNCTIONS.iter().any(|name| find_arguments(token, name).is_some())
}

/// Reads one destination token.
pub(crate) fn parse_token(token: &str) -> Result<TokenFunction, TransformError> {
    if token.len() <= 1 {
        return Ok(TokenFunction::Literal);
    }
    if let Some(number) = token.strip_prefix('$') {
        // Other things rely on `$` tokens, so a `$` not followed by a number is literal.
        return Ok(number.parse().map_or(TokenFunction::Literal, TokenFunction::Wildcard));
    }
    if !is_mustache(token) {
        return Ok(TokenFunction::Literal);
    }
    let fault = |fault| Err(TransformError::destination(fault, token));
    if let Some(arguments) = find_arguments(token, WILDCARD) {
        return match arguments.as_slice() {
            [""] => fault(DestinationFault::NotEnoughArguments),
            [index] => match integer(index) {
                Some(index) => Ok(TokenFunction::Wildcard(index)),
                None => fault(DestinationFault::InvalidArgument),
            },
            _ => fault(DestinationFault::TooManyArguments),
        };
    }
    if let Some(arguments) = find_arguments(token, PARTITION) {
        let buckets = integer(arguments[0]).filter(|&count| count <= i64::from(i32::MAX));
        let indexes: Option<Vec<i64>> = arguments[1..].iter().map(|index| integer(index)).collect();
        return match (buckets, indexes) {
            // Go converts with int32(n): a large negative count wraps, as there.
            (Some(buckets), Some(indexes)) => Ok(TokenFunction::Partition(buckets as i32, indexes)),
            _ => fault(DestinationFault::InvalidArgument),
        };
    }
    let index_and_size: [(&[&str], fn(i64, i32) -> TokenFunction); 6] = [
        (SPLIT_FROM_LEFT, TokenFunction::SplitFromLeft),
        (SPLIT_FROM_RIGHT, TokenFunction::SplitFromRight),
        (SLICE_FROM_LEFT, TokenFunction::SliceFromLeft),
        (SLICE_FROM_RIGHT, TokenFunction::SliceFromRight),
        (RIGHT, TokenFunction::Right),
        (LEFT, TokenFunction::Left),
    ];
    for (name, make) in index_and_size {
        if let Some(arguments) = find_arguments(token, name) {
            return match arguments.as_slice() {
                [_] => fault(DestinationFault::NotEnoughArguments),
                [index, size] => match (integer(index), size.trim_matches(' ').parse::<i32>().ok()) {
                    (Some(index), Some(size)) => Ok(make(index, size)),
                    _ => fault(DestinationFault::InvalidArgument),
                },
                _ => fault(DestinationFault::TooManyArguments),
            };
        }
    }
    if let Some(arguments) = find_arguments(token, SPLIT) {
        return match arguments.as_slice() {
            [_] => fault(DestinationFault::NotEnoughArguments),
            [index, delimiter] => match integer(index) {
                Some(index) if !delimiter.contains([' ', '.']) => {
                    Ok(TokenFunction::Split(index, (*delimiter).to_string()))
                }
                _ => fault(DestinationFault::InvalidArgument),
            },
            _ => fault(DestinationFault::TooManyArguments),
        };
    }
    if let Some(arguments) = find_arguments(token, RANDOM) {
        // nats-server answers any count other than one "not enough arguments".
        let [range] = arguments.as_slice() else {
            return fault(DestinationFault::NotEnoughArguments);
        };
        return match integer(range).filter(|&range| range <= i64::from(i32::MAX)) {
            Some(range) => Ok(TokenFunction::Random(range as i32)),
            None => fault(DestinationFault::InvalidArgument),
        };
    }
    fault(DestinationFault::UnknownFunction)
}

/// Go's `strconv.Atoi` after `strings.Trim(arg, " ")`: optional sign, decimal digits.
fn integer(argument: &str) -> Option<i64> {
    argument.trim_matches(' ').parse().ok()
}

/// The arguments of the leftmost match of `{{\s*Name\s*\((.*)\)\s*}}` in `token`, split
/// on `,\s*`; `None` when the pattern does not match.
fn find_arguments<'a>(token: &'a str, name: &[&str]) -> Option<Vec<&'a str>> {
    let bytes = token.as_bytes();
    (0..bytes.len().saturating_sub(1))
        .filter(|&start| bytes[start..].starts_with(b"{{"))
        .find_map(|start| match_at(token, start + 2, name))
        .map(|captured| {
            let mut pieces = captured.split(',');
            let first = pieces.next().unwrap_or("");
            std::iter::once(first).chain(pieces.map(|piece| piece.trim_start_matches(is_regex_space))).collect()
        })
}

/// After `{{` at `position`: `\s*Name\s*\(`, then the greedy `(.*)` (no newline) up to
/// the last `)` that is followed by `\s*}}`.
fn match_at<'a>(token: &'a str, position: usize, name: &[&str]) -> Option<&'a str> {
    let mut rest = token[position..].trim_start_matches(is_regex_space);
    for word in name {
        let (first, tail) = word.split_at(1);
        let rest_bytes = rest.as_bytes();
        if rest_bytes.is_empty() || !rest_bytes[0].eq_ignore_ascii_case(&first.as_bytes()[0]) {
            return None;
        }
        rest = rest[1..].strip_prefix(tail)?;
    }
    let captured = rest.trim_start_matches(is_regex_space).strip_prefix('(')?;
    let line = captured.split('\n').next().unwrap_or("");
    line.match_indices(')')
        .rev()
        .find(|&(close, _)| captured[close + 1..].trim_start_matches(is_regex_space).starts_with("}}"))
        .map(|(close, _)| &captured[..close])
}

/// `\s` of Go's regular expressions: `[\t\n\f\r ]`.
fn is_regex_space(character: char) -> bool {
    matches!(character, '\t' | '\n' | '\x0c' | '\r' | ' ')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_functions_in_either_case_with_spaces() {
        assert_eq!(parse_token("{{wildcard(1)}}"), Ok(TokenFunction::Wildcard(1)));
        assert_eq!(parse_token("{{ Wildcard( 2 ) }}"), Ok(TokenFunction::Wildcard(2)));
        assert_eq!(parse_token("$3"), Ok(TokenFunction::Wildcard(3)));
        assert_eq!(parse_token("$x"), Ok(TokenFunction::Literal));
        assert_eq!(parse_token("{{}}"), Ok(TokenFunction::Literal));
        assert_eq!(parse_token("{{SplitFromLeft(1, 3)}}"), Ok(TokenFunction::SplitFromLeft(1, 3)));
        assert_eq!(parse_token("{{partition(10,1,2)}}"), Ok(TokenFunction::Partition(10, vec![1, 2])));
        assert_eq!(parse_token("{{split(1,-)}}"), Ok(TokenFunction::Split(1, "-".into())));
        assert_eq!(parse_token("{{random(5)}}"), Ok(TokenFunction::Random(5)));
        assert_eq!(parse_token("{{Left(1,2)}}"), Ok(TokenFunction::Left(1, 2)));
        // Only the first letter of a word may change case.
        assert!(parse_token("{{WILDCARD(1)}}").is_err());
    }

    #[test]
    fn the_capture_is_greedy_like_go() {
        // Captures `1)}}{{wildcard(1`, which is no number.
        let error = parse_token("{{wildcard(1)}}{{wildcard(1)}}").unwrap_err();
        assert_eq!(
            error.to_string(),
            "invalid mapping destination: function argument is invalid or in the wrong \
             format in {{wildcard(1)}}{{wildcard(1)}}"
        );
    }
}
