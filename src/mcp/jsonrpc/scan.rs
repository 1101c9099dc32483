//! A quick reading of a JSON object's top-level members: one pass over the bytes that
//! builds nothing and tells where the values of the wanted members sit. Every message
//! the proxy passes on is read this way, so it costs a fraction of serde_json's
//! reading of the same object.
//!
//! It answers only for text that serde_json reads as the same object, with the same
//! members: valid UTF-8, JSON as the standard writes it, top-level keys without escapes,
//! each wanted key at most once, and nesting at most [`MAX_DEPTH`] deep. For anything
//! else (every malformed line among it) it answers `None`, and the caller reads the text
//! with serde_json, whose verdict stands.

use std::ops::Range;

/// Deeper nesting is left to serde_json.
const MAX_DEPTH: usize = 64;

/// Where the values of the members named `keys` sit in the JSON object `text` (`None`
/// for an absent one), or `None` when this reading does not vouch for `text`.
pub(crate) fn members<const N: usize>(
    text: &str,
    keys: [&str; N],
) -> Option<[Option<Range<usize>>; N]> {
    let text = text.as_bytes();
    let mut found = [const { None }; N];
    let mut at = skip_ws(text, 0);
    if text.get(at) != Some(&b'{') {
        return None;
    }
    at = skip_ws(text, at + 1);
    if text.get(at) == Some(&b'}') {
        at += 1;
    } else {
        loop {
            let key_end = string_end(text, at, false)?;
            let key = &text[at + 1..key_end - 1];
            let start = after_colon(text, key_end)?;
            let end = value_end(text, start)?;
            if let Some(slot) = keys.iter().position(|wanted| wanted.as_bytes() == key) {
                if found[slot].is_some() {
                    return None;
                }
                found[slot] = Some(start..end);
            }
            at = skip_ws(text, end);
            match text.get(at) {
                Some(b',') => at = skip_ws(text, at + 1),
                Some(b'}') => {
                    at += 1;
                    break;
                }
                _ => return None,
            }
        }
    }
    (skip_ws(text, at) == text.len()).then_some(found)
}

/// The text of the JSON string at `span` of `text`, without its quotes, when it is
/// written without escapes.
pub(crate) fn plain_string(text: &str, span: Range<usize>) -> Option<&str> {
    let inner = text.get(span)?.strip_prefix('"')?.strip_suffix('"')?;
    (!inner.contains('\\')).then_some(inner)
}

fn skip_ws(text: &[u8], mut at: usize) -> usize {
    while let Some(b' ' | b'\n' | b'\t' | b'\r') = text.get(at) {
        at += 1;
    }
    at
}

/// Past the `:` that follows a key ending before `at`, and the whitespace after it.
fn after_colon(text: &[u8], at: usize) -> Option<usize> {
    let at = skip_ws(text, at);
    (text.get(at) == Some(&b':')).then(|| skip_ws(text, at + 1))
}

/// The end of the string starting at `at` (its opening quote), past its closing quote.
/// Without `escapes`, a backslash in it is refused.
fn string_end(text: &[u8], at: usize, escapes: bool) -> Option<usize> {
    if text.get(at) != Some(&b'"') {
        return None;
    }
    let mut at = at + 1;
    loop {
        at = plain_run_end(text, at);
        match *text.get(at)? {
            b'"' => return Some(at + 1),
            b'\\' if escapes => {
                at += match *text.get(at + 1)? {
                    b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => 2,
                    b'u' if text.get(at + 2..at + 6)?.iter().all(u8::is_ascii_hexdigit) => 6,
                    _ => return None,
                };
            }
            _ => return None,
        }
    }
}

/// Where the run of string bytes that need no look (anything but `"`, `\\` and control
/// characters) starting at `at` ends: eight bytes at a time, since string text is most
/// of every message.
fn plain_run_end(text: &[u8], mut at: usize) -> usize {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
    // A high bit for each byte that is zero; exact up to the first such byte.
    let zero_bytes = |word: u64| word.wrapping_sub(ONES) & !word & HIGHS;
    while let Some(chunk) = text.get(at..).and_then(<[u8]>::first_chunk::<8>) {
        let word = u64::from_le_bytes(*chunk);
        let special = zero_bytes(word ^ (ONES * u64::from(b'"')))
            | zero_bytes(word ^ (ONES * u64::from(b'\\')))
            | (word.wrapping_sub(ONES * 0x20) & !word & HIGHS);
        if special != 0 {
            return at + (special.trailing_zeros() / 8) as usize;
        }
        at += 8;
    }
    while text
        .get(at)
        .is_some_and(|&byte| byte != b'"' && byte != b'\\' && byte >= 0x20)
    {
        at += 1;
    }
    at
}

/// The end of the number starting at `at`.
fn number_end(text: &[u8], mut at: usize) -> Option<usize> {
    let digits = |text: &[u8], mut at: usize| {
        let start = at;
        while text.get(at).is_some_and(u8::is_ascii_digit) {
            at += 1;
        }
        (at > start).then_some(at)
    };
    if text.get(at) == Some(&b'-') {
        at += 1;
    }
    at = match text.get(at)? {
        b'0' => at + 1,
        b'1'..=b'9' => digits(text, at)?,
        _ => return None,
    };
    if text.get(at) == Some(&b'.') {
        at = digits(text, at + 1)?;
    }
    if let Some(b'e' | b'E') = text.get(at) {
        at += 1;
        if let Some(b'+' | b'-') = text.get(at) {
            at += 1;
        }
        at = digits(text, at)?;
    }
    // A digit right after a leading zero (`01`) is not a number.
    (!text.get(at).is_some_and(u8::is_ascii_digit)).then_some(at)
}

/// The end of the value starting at `at`.
fn value_end(text: &[u8], mut at: usize) -> Option<usize> {
    // The closing bracket of each array or object open around `at`, innermost last.
    let mut open = [0_u8; MAX_DEPTH];
    let mut depth = 0;
    loop {
        let mut ended = true;
        match *text.get(at)? {
            b'"' => at = string_end(text, at, true)?,
            bracket @ (b'{' | b'[') => {
                let close = if bracket == b'{' { b'}' } else { b']' };
                *open.get_mut(depth)? = close;
                depth += 1;
                at = skip_ws(text, at + 1);
                if text.get(at) == Some(&close) {
                    at += 1;
                    depth -= 1;
                } else {
                    ended = false;
                    if close == b'}' {
                        at = after_colon(text, string_end(text, at, true)?)?;
                    }
                }
            }
            b't' => at = literal(text, at, b"true")?,
            b'f' => at = literal(text, at, b"false")?,
            b'n' => at = literal(text, at, b"null")?,
            b'-' | b'0'..=b'9' => at = number_end(text, at)?,
            _ => return None,
        }
        // After a whole value: close what it ends, or go on to the next element.
        while ended {
            if depth == 0 {
                return Some(at);
            }
            at = skip_ws(text, at);
            let close = open[depth - 1];
            match *text.get(at)? {
                b',' => {
                    at = skip_ws(text, at + 1);
                    if close == b'}' {
                        at = after_colon(text, string_end(text, at, true)?)?;
                    }
                    ended = false;
                }
                byte if byte == close => {
                    at += 1;
                    depth -= 1;
                }
                _ => return None,
            }
        }
    }
}

fn literal(text: &[u8], at: usize, word: &[u8]) -> Option<usize> {
    text.get(at..)?.starts_with(word).then_some(at + word.len())
}

#[cfg(test)]
pub(crate) mod tests {
    use serde::{Deserialize, Deserializer};
    use serde_json::value::RawValue;

    use super::*;

    const KEYS: [&str; 6] = ["jsonrpc", "id", "method", "params", "result", "error"];

    /// The same members as serde_json reads them: the value of each, as written.
    fn by_serde(text: &str) -> Option<[Option<&str>; 6]> {
        fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
            <&RawValue>::deserialize(d).map(Some)
        }
        #[derive(Deserialize)]
        struct All<'a> {
            #[serde(default, borrow, deserialize_with = "present")]
            jsonrpc: Option<&'a RawValue>,
            #[serde(default, borrow, deserialize_with = "present")]
            id: Option<&'a RawValue>,
            #[serde(default, borrow, deserialize_with = "present")]
            method: Option<&'a RawValue>,
            #[serde(default, borrow, deserialize_with = "present")]
            params: Option<&'a RawValue>,
            #[serde(default, borrow, deserialize_with = "present")]
            result: Option<&'a RawValue>,
            #[serde(default, borrow, deserialize_with = "present")]
            error: Option<&'a RawValue>,
        }
        // serde reads a struct from an array too; `members` reads objects only.
        if !text
            .trim_start_matches([' ', '\n', '\t', '\r'])
            .starts_with('{')
        {
            return None;
        }
        let all: All<'_> = serde_json::from_str(text).ok()?;
        Some(
            [
                all.jsonrpc,
                all.id,
                all.method,
                all.params,
                all.result,
                all.error,
            ]
            .map(|raw| raw.map(RawValue::get)),
        )
    }

    fn quick(text: &str) -> Option<[Option<&str>; 6]> {
        members(text, KEYS).map(|spans| spans.map(|span| span.map(|span| &text[span])))
    }

    /// Messages as peers write them, and some they could.
    pub(crate) const SAMPLES: [&str; 12] = [
        r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}"#,
        r#"{"id":101,"jsonrpc":"2.0","method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}},"arguments":{"text":"hello"},"name":"echo"}}"#,
        r#"{"jsonrpc":"2.0","id":5,"result":{"content":[{"type":"text","text":"héllo → 世界 \"q\" \\ \/ \b\f\n\r\t \u00e9\uD83C\uDFB5"}],"isError":false}}"#,
        r#" { "jsonrpc" : "2.0" , "id" : "k-1" , "error" : { "code" : -32601 , "message" : "no" , "data" : null } } "#,
        r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":0.5,"total":1e2,"x":[-0,0.25E-3,12e+4,true,false,null,[],{},[[{}]]]}}"#,
        r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","id":18446744073709551615,"method":"ping","params":null,"unknown":{"id":1},"unknown":2}"#,
        r#"{}"#,
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"t\":\"a\x7fb\"}}",
        r#"{"jsonrpc":"2.0","id":-1.5e-7,"result":[1,[2,[3,[4]]],{"a":{"b":{"c":"d"}}}]}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":{},"id":2}"#,
    ];

    /// Every sample cut short, with a byte replaced, dropped or added at each place.
    pub(crate) fn variants() -> Vec<Vec<u8>> {
        const BYTES: &[u8] = b"\"\\{}[],: \t0-.eExun\x01\x0c\xff";
        let mut out = Vec::new();
        for sample in SAMPLES {
            let bytes = sample.as_bytes();
            for at in 0..=bytes.len() {
                out.push(bytes[..at].to_vec());
                let mut dropped = bytes.to_vec();
                if at < bytes.len() {
                    dropped.remove(at);
                    out.push(dropped);
                }
                for &byte in BYTES {
                    let mut added = bytes.to_vec();
                    added.insert(at, byte);
                    out.push(added);
                    if at < bytes.len() {
                        let mut replaced = bytes.to_vec();
                        replaced[at] = byte;
                        out.push(replaced);
                    }
                }
            }
        }
        out
    }

    #[test]
    fn the_samples_are_read_quickly_and_as_serde_reads_them() {
        for sample in SAMPLES {
            if sample.ends_with(r#""id":2}"#) {
                assert_eq!(quick(sample), None, "a member twice is left to serde");
                continue;
            }
            assert!(quick(sample).is_some(), "{sample}");
            assert_eq!(quick(sample), by_serde(sample), "{sample}");
        }
        assert_eq!(
            quick(r#"{"jsonrpc":"2.0","id":1,"method":"x"}"#).map(|m| m[1]),
            Some(Some("1"))
        );
    }

    #[test]
    fn whatever_it_reads_serde_reads_the_same_and_the_rest_is_left_to_serde() {
        let mut read = 0;
        for variant in variants() {
            let Ok(text) = std::str::from_utf8(&variant) else {
                continue;
            };
            if let Some(found) = quick(text) {
                read += 1;
                assert_eq!(Some(found), by_serde(text), "{text}");
            }
        }
        assert!(read > 1000, "only {read} variants read");
    }

    #[test]
    fn a_plain_run_ends_at_the_first_byte_a_string_must_look_at_wherever_it_falls() {
        let naive = |text: &[u8], at: usize| {
            (at..text.len())
                .find(|&i| matches!(text[i], b'"' | b'\\' | 0..=0x1f))
                .unwrap_or(text.len())
        };
        for byte in [
            b'"', b'\\', 0x00, 0x1f, b' ', b'!', b'#', b'[', b']', 0x7f, 0x80, 0xff,
        ] {
            for len in 0..20 {
                for place in 0..len {
                    let mut text = vec![b'a'; len];
                    text[place] = byte;
                    for start in 0..=len {
                        assert_eq!(
                            plain_run_end(&text, start),
                            naive(&text, start),
                            "byte {byte:#04x} at {place} of {len}, from {start}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn deep_nesting_and_escaped_keys_are_left_to_serde() {
        let deep = format!("{{\"id\":{}1{}}}", "[".repeat(70), "]".repeat(70));
        assert!(by_serde(&deep).is_some());
        assert_eq!(quick(&deep), None);
        let shallow = format!("{{\"id\":{}1{}}}", "[".repeat(60), "]".repeat(60));
        assert_eq!(quick(&shallow), by_serde(&shallow));
        assert_eq!(quick(r#"{"i\u0064":1}"#), None);
        assert_eq!(plain_string(r#""a\"b""#, 0..6), None);
        assert_eq!(plain_string(r#""tools/call""#, 0..12), Some("tools/call"));
    }
}
