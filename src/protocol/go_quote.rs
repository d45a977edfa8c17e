//! Go's `%q` (`strconv.Quote`), which nats-server uses to quote subjects, names and
//! values in the texts clients and monitors read (`Permissions Violation for Publish to
//! "a b"`, `JetStream account "A" not found`). One function over bytes, so a subject that
//! is not UTF-8 is quoted as Go quotes it too.

/// `bytes` double-quoted as Go's `strconv.Quote` writes them: `"` and `\` escaped; `\a`,
/// `\b`, `\f`, `\n`, `\r`, `\t`, `\v` for those controls; `\xNN` for other ASCII
/// controls and for each byte that is not UTF-8; `\uNNNN` / `\UNNNNNNNN` for the other
/// characters Go does not print (C1 controls, non-ASCII spaces, format and private-use
/// characters); everything else as it is.
pub fn go_quote(bytes: impl AsRef<[u8]>) -> String {
    let bytes = bytes.as_ref();
    let mut quoted = String::with_capacity(bytes.len() + 2);
    quoted.push('"');
    for chunk in bytes.utf8_chunks() {
        for character in chunk.valid().chars() {
            push_quoted(&mut quoted, character);
        }
        for byte in chunk.invalid() {
            quoted.push_str(&format!("\\x{byte:02x}"));
        }
    }
    quoted.push('"');
    quoted
}

fn push_quoted(quoted: &mut String, character: char) {
    match character {
        '"' => quoted.push_str("\\\""),
        '\\' => quoted.push_str("\\\\"),
        '\u{7}' => quoted.push_str("\\a"),
        '\u{8}' => quoted.push_str("\\b"),
        '\u{c}' => quoted.push_str("\\f"),
        '\n' => quoted.push_str("\\n"),
        '\r' => quoted.push_str("\\r"),
        '\t' => quoted.push_str("\\t"),
        '\u{b}' => quoted.push_str("\\v"),
        c if (c as u32) < 0x20 || c == '\u{7f}' => quoted.push_str(&format!("\\x{:02x}", c as u32)),
        c if !go_prints(c) && (c as u32) < 0x1_0000 => quoted.push_str(&format!("\\u{:04x}", c as u32)),
        c if !go_prints(c) => quoted.push_str(&format!("\\U{:08x}", c as u32)),
        c => quoted.push(c),
    }
}

/// Go's `strconv.IsPrint` for the characters a subject or a name may hold: false for
/// controls, spaces other than ASCII's, format characters (Cf), line and paragraph
/// separators and private use. (Unassigned code points, which Go does not print either,
/// are printed here: telling them apart needs the Unicode tables.)
fn go_prints(character: char) -> bool {
    let code = character as u32;
    let not_printed = character.is_control()
        || matches!(code, 0xA0 | 0xAD | 0x61C | 0x1680 | 0x180E | 0x202F | 0x205F | 0x3000 | 0xFEFF)
        || (0x600..=0x605).contains(&code)
        || (0x2000..=0x200F).contains(&code)
        || (0x2028..=0x202E).contains(&code)
        || (0x2060..=0x206F).contains(&code)
        || (0xFFF9..=0xFFFB).contains(&code)
        || (0xE000..=0xF8FF).contains(&code)
        || (0xD800..=0xDFFF).contains(&code)
        || code >= 0xF_0000
        || (0xE_0000..=0xE_007F).contains(&code);
    !not_printed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_as_go_strconv_quote() {
        // Each expected text is what Go's strconv.Quote returns for the input.
        assert_eq!(go_quote(b"a\"b\\c\n"), r#""a\"b\\c\n""#);
        assert_eq!(go_quote(b"orders.>"), r#""orders.>""#);
        assert_eq!(go_quote(b"\x07\x08\x0c\x0b\t\r\x00\x1f\x7f"), r#""\a\b\f\v\t\r\x00\x1f\x7f""#);
        assert_eq!(go_quote(b"bad\xff\xfe."), r#""bad\xff\xfe.""#);
        assert_eq!(go_quote("é ü 中 😀".as_bytes()), "\"é ü 中 😀\"");
        assert_eq!(
            go_quote("\u{85}\u{a0}\u{ad}\u{200b}\u{2028}\u{feff}".as_bytes()),
            r#""\u0085\u00a0\u00ad\u200b\u2028\ufeff""#
        );
        assert_eq!(go_quote("\u{f0000}".as_bytes()), r#""\U000f0000""#);
        assert_eq!(go_quote(b""), r#""""#);
    }
}
