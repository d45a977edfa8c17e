//! SubjectTrie against brute force: random patterns and subjects from a seed; the trie
//! must report exactly the values whose pattern `matches`, before and after removals.

use jetcore::subject::{matches, InvalidSubject, SubjectTrie};

/// splitmix64: a tiny deterministic generator, so a failing seed replays exactly.
struct Random(u64);

impl Random {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut mixed = self.0;
        mixed = (mixed ^ (mixed >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        mixed = (mixed ^ (mixed >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        mixed ^ (mixed >> 31)
    }

    fn below(&mut self, bound: usize) -> usize {
        (self.next() % bound as u64) as usize
    }
}

/// More distinct tokens than a node keeps in its short list, so both child layouts
/// (scanned and hashed) are exercised.
const LITERAL_TOKENS: &[&[u8]] =
    &[b"a", b"b", b"c", b"d", b"e", b"f", b"g", b"h", b"orders", b"eu", b"us", b"*x", b"1"];

fn random_subject(random: &mut Random, wildcards: bool) -> Vec<u8> {
    let token_count = 1 + random.below(5);
    let mut subject = Vec::new();
    for index in 0..token_count {
        if index > 0 {
            subject.push(b'.');
        }
        let roll = random.below(10);
        if wildcards && roll == 0 && index + 1 == token_count {
            subject.push(b'>');
        } else if wildcards && roll < 3 {
            subject.push(b'*');
        } else {
            subject.extend_from_slice(LITERAL_TOKENS[random.below(LITERAL_TOKENS.len())]);
        }
    }
    subject
}

fn trie_matches(trie: &SubjectTrie<usize>, subject: &[u8]) -> Vec<usize> {
    let mut found = Vec::new();
    trie.for_each_match(subject, |&id| found.push(id));
    found.sort_unstable();
    found
}

fn brute_force_matches(entries: &[(Vec<u8>, usize)], subject: &[u8]) -> Vec<usize> {
    let mut found: Vec<usize> =
        entries.iter().filter(|(pattern, _)| matches(pattern, subject)).map(|(_, id)| *id).collect();
    found.sort_unstable();
    found
}

fn run_seed(seed: u64) {
    let mut random = Random(seed);
    let mut trie = SubjectTrie::new();
    let mut entries: Vec<(Vec<u8>, usize)> = Vec::new();
    for id in 0..300 {
        let pattern = random_subject(&mut random, true);
        trie.insert(&pattern, id).unwrap_or_else(|_| panic!("seed {seed}: insert {pattern:?}"));
        entries.push((pattern, id));
    }
    assert_eq!(trie.len(), entries.len(), "seed {seed}");
    let compare = |trie: &SubjectTrie<usize>, entries: &[(Vec<u8>, usize)], random: &mut Random| {
        for _ in 0..300 {
            let wildcards = random.below(4) == 0;
            let subject = random_subject(random, wildcards);
            let expected = brute_force_matches(entries, &subject);
            let shown = String::from_utf8_lossy(&subject).into_owned();
            assert_eq!(trie_matches(trie, &subject), expected, "seed {seed}, subject {shown}");
        }
    };
    compare(&trie, &entries, &mut random);
    // Remove about half the entries, by exact pattern and id.
    let mut kept = Vec::new();
    for (pattern, id) in entries {
        if random.below(2) == 0 {
            assert_eq!(trie.remove(&pattern, |&value| value == id), 1, "seed {seed}");
        } else {
            kept.push((pattern, id));
        }
    }
    assert_eq!(trie.len(), kept.len(), "seed {seed}");
    compare(&trie, &kept, &mut random);
    for (pattern, id) in &kept {
        trie.remove(pattern, |value| value == id);
    }
    assert!(trie.is_empty(), "seed {seed}");
}

#[test]
fn trie_agrees_with_brute_force_on_seeded_random_inputs() {
    let base_seed = std::env::var("JETCORE_TEST_SEED").ok().and_then(|seed| seed.parse().ok());
    let seeds: Vec<u64> = match base_seed {
        Some(seed) => vec![seed],
        None => (1..=20).collect(),
    };
    for seed in seeds {
        run_seed(seed);
    }
}

/// `for_each_match_any_last(prefix)` claims, when it does not refuse, that its values are
/// what `prefix.X` matches for every last token `X`: checked against brute force for
/// every token the patterns use and some they do not, and its refusal checked to be
/// needed (some pattern names a token at that place) whenever it refuses. The interest cache shares these matches among every
/// reply to one client inbox (`server/match_cache.rs`).
#[test]
fn matches_of_any_last_token_agree_with_brute_force() {
    const UNNAMED: &[&[u8]] = &[b"zz", b"q7", b"reply"];
    let mut shared = 0;
    for seed in 1..=40u64 {
        let mut random = Random(seed);
        let mut trie = SubjectTrie::new();
        let mut entries: Vec<(Vec<u8>, usize)> = Vec::new();
        for id in 0..(20 + random.below(200)) {
            let pattern = random_subject(&mut random, true);
            trie.insert(&pattern, id).expect("valid");
            entries.push((pattern, id));
        }
        for _ in 0..300 {
            let prefix = random_subject(&mut random, false);
            let mut found = Vec::new();
            let whole = trie.for_each_match_any_last(&prefix, |&id| found.push(id));
            let shown = String::from_utf8_lossy(&prefix).into_owned();
            if !whole {
                let depth = prefix.split(|&byte| byte == b'.').count();
                let named = entries.iter().any(|(pattern, _)| {
                    let tokens: Vec<&[u8]> = pattern.split(|&byte| byte == b'.').collect();
                    tokens.len() > depth
                        && tokens[depth] != b"*"
                        && tokens[depth] != b">"
                        && matches(&tokens[..depth].join(&b'.'), &prefix)
                });
                assert!(named, "seed {seed}: {shown} refused with no pattern naming its last token");
                continue;
            }
            shared += 1;
            found.sort_unstable();
            for last in LITERAL_TOKENS.iter().chain(UNNAMED) {
                let subject = [&prefix[..], b".", last].concat();
                let expected = brute_force_matches(&entries, &subject);
                assert_eq!(found, expected, "seed {seed}: {shown} with last token {}", String::from_utf8_lossy(last));
            }
        }
    }
    assert!(shared > 1000, "too few prefixes were shared to test anything: {shared}");
}

#[test]
fn matches_of_any_last_token_see_a_literal_named_there() {
    let mut trie = SubjectTrie::new();
    trie.insert(b"_INBOX.abc.*", 1).unwrap();
    trie.insert(b"_INBOX.>", 2).unwrap();
    let mut found = Vec::new();
    assert!(trie.for_each_match_any_last(b"_INBOX.abc", |&id| found.push(id)));
    found.sort_unstable();
    assert_eq!(found, [1, 2]);
    trie.insert(b"_INBOX.abc.7", 3).unwrap();
    assert!(!trie.for_each_match_any_last(b"_INBOX.abc", |_| {}));
    assert!(!trie.for_each_match_any_last(b"a..b", |_| panic!("an empty token matches nothing")));
}

#[test]
fn remove_counts_only_entries_under_the_exact_pattern() {
    let mut trie = SubjectTrie::new();
    trie.insert(b"a.*", 1).unwrap();
    trie.insert(b"a.*", 2).unwrap();
    trie.insert(b"a.>", 3).unwrap();
    trie.insert(b"a.b", 4).unwrap();
    assert_eq!(trie.remove(b"a.*", |_| true), 2);
    assert_eq!(trie.remove(b"a.*", |_| true), 0);
    assert_eq!(trie.remove(b"a.c", |_| true), 0);
    assert_eq!(trie.remove(b"a..", |_| true), 0);
    assert_eq!(trie.len(), 2);
    let mut found = Vec::new();
    trie.for_each_match(b"a.b", |&id| found.push(id));
    found.sort_unstable();
    assert_eq!(found, [3, 4]);
}

#[test]
fn insert_refuses_invalid_patterns() {
    let mut trie = SubjectTrie::new();
    for pattern in [&b""[..], b"a..b", b"a.>.b", b"a b", b".a"] {
        assert_eq!(trie.insert(pattern, 0), Err(InvalidSubject), "{pattern:?}");
    }
    assert!(trie.is_empty());
}

#[test]
fn empty_token_subjects_match_nothing() {
    let mut trie = SubjectTrie::new();
    trie.insert(b">", 1).unwrap();
    trie.insert(b"*.*", 2).unwrap();
    for subject in [&b""[..], b".", b"a.", b".a", b"a..b"] {
        trie.for_each_match(subject, |_| panic!("{subject:?} matched"));
    }
}

/// `any_exact` looks at values inserted under exactly the pattern, never at wildcard
/// matches (the interest table uses it to know a (subject, queue) pair's first and last).
#[test]
fn any_exact_sees_only_the_same_pattern() {
    let mut trie = SubjectTrie::new();
    trie.insert(b"a.*", 1).unwrap();
    trie.insert(b"a.>", 2).unwrap();
    trie.insert(b"a.b", 3).unwrap();
    assert!(trie.any_exact(b"a.*", |v| *v == 1));
    assert!(!trie.any_exact(b"a.b", |v| *v == 1));
    assert!(trie.any_exact(b"a.>", |v| *v == 2));
    assert!(!trie.any_exact(b"a.c", |_| true));
    assert!(!trie.any_exact(b"a..b", |_| true));
    trie.remove(b"a.b", |v| *v == 3);
    assert!(!trie.any_exact(b"a.b", |_| true));
}

/// A node with more children than one hash map holds before it splits (a client's many
/// SUBs under one prefix): every child stays reachable, matches and removals stay exact.
#[test]
fn a_node_with_a_hundred_thousand_children_matches_exactly() {
    const CHILDREN: u64 = 100_000;
    let mut trie = SubjectTrie::new();
    for index in 0..CHILDREN {
        trie.insert(format!("sensors.{index}").as_bytes(), index).expect("valid");
    }
    trie.insert(b"sensors.*", u64::MAX).expect("valid");
    assert_eq!(trie.len() as u64, CHILDREN + 1);
    for index in (0..CHILDREN).step_by(997) {
        let mut found = Vec::new();
        trie.for_each_match(format!("sensors.{index}").as_bytes(), |value| found.push(*value));
        found.sort_unstable();
        assert_eq!(found, vec![index, u64::MAX], "sensors.{index}");
    }
    for index in (0..CHILDREN).filter(|index| index % 2 == 1) {
        assert_eq!(trie.remove(format!("sensors.{index}").as_bytes(), |_| true), 1);
    }
    let mut found = Vec::new();
    trie.for_each_match(b"sensors.4243", |value| found.push(*value));
    assert_eq!(found.len(), 1, "only the wildcard matches a removed child: {found:?}");
    trie.for_each_match(b"sensors.4242", |value| found.push(*value));
    assert_eq!(found.len(), 3);
}
