//! Subject transforms (`jetcore::subject::SubjectTransform`): mapping results and error
//! texts, checked against nats-server 2.15.1 (the partition figures were recorded there).

use jetcore::subject::{SubjectTransform, TransformError};

fn apply(source: &str, destination: &str, subject: &str) -> Option<String> {
    SubjectTransform::new(source, destination).unwrap().apply(subject)
}

fn error(source: &str, destination: &str) -> String {
    SubjectTransform::new(source, destination).unwrap_err().to_string()
}

#[test]
fn maps_wildcards_and_the_tail() {
    let cases = [
        (">", "uno.>", "one.two.three", "uno.one.two.three"),
        ("", "eins.zwei.>", "four.five", "eins.zwei.four.five"),
        ("one.>", "uno.>", "one.two.three", "uno.two.three"),
        ("one", "uno", "one", "uno"),
        ("one.*.three.*.five", "uno.$2.$1", "one.two.three.four.five", "uno.four.two"),
        ("one.*.three.*.five", "uno.{{wildcard(2)}}.{{Wildcard(1)}}", "one.two.three.four.five", "uno.four.two"),
        ("*.two.three.>", "uno.$1.>", "one.two.three.four.five", "uno.one.four.five"),
        ("m.*.*", "m.{{wildcard(1)}}", "m.a.b", "m.a"),
        ("u.*", "{{wildcard(1)}}", "u.a", "a"),
        ("w.*", "out.$1a", "w.q", "out.$1a"),
        ("w.*", "out.$01", "w.q", "out.q"),
        // A wildcard number below 1 reads the first token, as in nats-server.
        ("w.*", "out.{{wildcard(0)}}", "w.q", "out.w"),
        ("w.*", "out.$-1", "w.q", "out.w"),
        (">", ">", "a.b", "a.b"),
    ];
    for (source, destination, subject, expected) in cases {
        assert_eq!(apply(source, destination, subject).as_deref(), Some(expected), "{source} -> {destination}");
    }
}

#[test]
fn string_functions_match_nats_server() {
    let cases = [
        ("*", "{{split(1,-)}}", "-abc-def--ghij-", "abc.def.ghij"),
        ("s.*", "out.{{split(1,-)}}.end", "s.a--b", "out.a.b.end"),
        ("s.*", "out.{{split(1,-)}}.end", "s.--", "out..end"),
        ("s.*", "out.{{split(1,-)}}", "s.--a", "out..a"),
        ("s.*", "out.{{split(1,ab)}}", "s.xabyabz", "out.x.y.z"),
        ("s.*", "out.{{split(1,)}}", "s.abc", "out.a.b.c"),
        ("*", "{{splitfromleft(1,3)}}", "12345", "123.45"),
        ("*", "{{SplitFromRight(1,3)}}", "12345", "12.345"),
        ("*", "{{SliceFromLeft(1,3)}}", "1234567890", "123.456.789.0"),
        ("*", "{{SliceFromRight(1,3)}}", "1234567890", "1.234.567.890"),
        ("*", "{{SliceFromLeft(1,3)}}", "123456", "123.456"),
        ("*", "{{SliceFromRight(1,3)}}", "1234", "1.234"),
        ("*", "{{SliceFromLeft(1,0)}}", "abc", "abc"),
        ("l.*", "out.{{left(1,5)}}.{{right(1,5)}}", "l.abcdefgh", "out.abcde.defgh"),
        ("l.*", "out.{{left(1,5)}}.{{right(1,5)}}", "l.abc", "out.abc.abc"),
        ("l.*", "out.{{left(1,-1)}}", "l.abc", "out.abc"),
    ];
    for (source, destination, subject, expected) in cases {
        assert_eq!(apply(source, destination, subject).as_deref(), Some(expected), "{destination} of {subject}");
    }
}

#[test]
fn partitions_hash_like_nats_server() {
    // Figures recorded from nats-server 2.15.1.
    let cases = [
        ("p.*.*", "out.{{partition(3,1,2)}}.{{wildcard(2)}}", "p.a.b", "out.0.b"),
        ("p.*.*", "out.{{partition(3,1,2)}}.{{wildcard(2)}}", "p.foo.bar", "out.1.bar"),
        ("pp.*", "out.{{partition(5)}}", "pp.dd", "out.1"),
        ("pq.*", "out.{{partition(5,1)}}", "pq.dd", "out.2"),
        ("k.b", "out.{{partition(3,0)}}", "k.b", "out.2"),
        ("k34.*", "out.{{partition(2,0)}}", "k34.a", "out.1"),
        ("q.*.>", "out.{{partition(7)}}.>", "q.a.b.c", "out.5.b.c"),
        ("k27.*", "out.{{partition(0,1)}}", "k27.a", "out.0"),
        ("w14.*", "out.{{partition(-3,1)}}", "w14.q", "out.4094444124"),
    ];
    for (source, destination, subject, expected) in cases {
        assert_eq!(apply(source, destination, subject).as_deref(), Some(expected), "{destination} of {subject}");
    }
}

#[test]
fn random_stays_in_range() {
    let transform = SubjectTransform::new("r.*", "out.{{random(3)}}.$1").unwrap();
    for _ in 0..100 {
        let subject = transform.apply("r.a").unwrap();
        assert!(["out.0.a", "out.1.a", "out.2.a"].contains(&subject.as_str()), "{subject}");
    }
    assert_eq!(apply("r.*", "out.{{random(0)}}", "r.a").as_deref(), Some("out.0"));
}

#[test]
fn subjects_outside_the_source_are_not_transformed() {
    let transform = SubjectTransform::new("in.a.*", "x.$1").unwrap();
    assert_eq!(transform.apply("in.b.q"), None);
    assert_eq!(transform.apply("in.a"), None);
    assert_eq!(transform.apply("in.a.*"), None);
    assert_eq!(transform.apply("in.a..q"), None);
    assert_eq!(transform.apply("in.a.q").as_deref(), Some("x.q"));
}

#[test]
fn bad_destinations_get_nats_server_texts() {
    let mapping = "invalid mapping destination";
    let cases = [
        ("k.a", "out.{{wildcard(1)}}", format!("{mapping}: wildcard index out of range in {{{{wildcard(1)}}}}")),
        ("k.>", "out.{{wildcard(1)}}.>", format!("{mapping}: wildcard index out of range in {{{{wildcard(1)}}}}: [1]")),
        ("k.*", "out.$3", format!("{mapping}: wildcard index out of range in $3: [3]")),
        ("k.*", "out.{{foo(1)}}", format!("{mapping}: unknown function in {{{{foo(1)}}}}")),
        (
            "k.*",
            "out.{{wildcard()}}",
            format!("{mapping}: not enough arguments passed to the function in {{{{wildcard()}}}}"),
        ),
        (
            "k.*",
            "out.{{wildcard(1,2)}}",
            format!("{mapping}: too many arguments passed to the function in {{{{wildcard(1,2)}}}}"),
        ),
        (
            "k.*",
            "out.{{wildcard(x)}}",
            format!("{mapping}: function argument is invalid or in the wrong format in {{{{wildcard(x)}}}}"),
        ),
        (
            "k.*",
            "out.{{split(1)}}",
            format!("{mapping}: not enough arguments passed to the function in {{{{split(1)}}}}"),
        ),
        (
            "k.*",
            "out.{{left(1,2,3)}}",
            format!("{mapping}: too many arguments passed to the function in {{{{left(1,2,3)}}}}"),
        ),
        (
            "k.*",
            "out.{{random()}}",
            format!("{mapping}: function argument is invalid or in the wrong format in {{{{random()}}}}"),
        ),
        (
            "k.*",
            "out.{{random(1,2)}}",
            format!("{mapping}: not enough arguments passed to the function in {{{{random(1,2)}}}}"),
        ),
        (
            "k.*",
            "out.{{left(1,99999999999)}}",
            format!("{mapping}: function argument is invalid or in the wrong format in {{{{left(1,99999999999)}}}}"),
        ),
        ("k.*", "out..a", format!("{mapping}: invalid transform")),
        ("k.*", "out.a b", format!("{mapping}: invalid transform")),
        ("k.*", "out.*", "invalid subject".to_string()),
        ("k.*", "out.>", "invalid subject".to_string()),
        ("k.>", "out.a", "invalid subject".to_string()),
        ("k..a", "out", "invalid subject".to_string()),
        ("k.*", "", "invalid subject".to_string()),
    ];
    for (source, destination, expected) in cases {
        assert_eq!(error(source, destination), expected, "{source} -> {destination}");
    }
}

#[test]
fn the_lenient_constructor_skips_the_destination_token_checks() {
    assert!(SubjectTransform::new_lenient("k.*", "out.a b").is_ok());
    assert_eq!(SubjectTransform::new_lenient("k.*", "out..a").unwrap_err(), TransformError::BadSubject);
}

#[test]
fn accepts_what_nats_server_accepts() {
    for (source, destination) in [
        ("k.a", "out.{{partition(3)}}"),
        ("k.a", "out.{{random(3)}}"),
        ("k.>", "out.{{partition(4)}}.>"),
        ("k.*", "out.{{split(1,.)}}"), // `{{split(1,` and `)}}` are literal tokens
        ("k.*", "out.{{}}"),
        ("k.*", "out.$x"),
    ] {
        assert!(SubjectTransform::new(source, destination).is_ok(), "{source} -> {destination}");
    }
}
