//! Messages over the size limit: which request they belong to, read from what framing
//! kept of them (their first and last few KiB), so that they can be answered with an
//! error instead of vanishing (a dropped request would stay "in flight" forever).
//!
//! The id is looked for among the top-level members at the start of the message (the
//! Python SDK and rmcp write `id` before `params`/`result`) and at its end (the
//! TypeScript SDK writes it last). Pure: no I/O.

use serde_json::Value;
use serde_json::value::RawValue;

/// The JSON-RPC id of a message of which only `head` and `tail` are known, as raw JSON
/// text (`7`, `"abc"`), or `None` when neither end shows a top-level string or number id.
pub(crate) fn find_id(head: &[u8], tail: &[u8]) -> Option<Vec<u8>> {
    id_from_head(head).or_else(|| id_from_tail(tail))
}

/// Walk the top-level members from the start, up to the first one that is cut off.
fn id_from_head(head: &[u8]) -> Option<Vec<u8>> {
    let mut rest = skip_ws(head).strip_prefix(b"{")?;
    loop {
        let (key, after) = next_value::<String>(skip_ws(rest))?;
        rest = skip_ws(after).strip_prefix(b":")?;
        let (value, after) = next_value::<&RawValue>(skip_ws(rest))?;
        if key == "id" {
            return is_id(value.get()).then(|| value.get().as_bytes().to_vec());
        }
        rest = skip_ws(after).strip_prefix(b",")?;
    }
}

/// Try each `"id"` in the tail, last first: it is a top-level member exactly when the
/// text from it to the end, opened with `{`, is one whole JSON object (a nested one
/// would leave a closing bracket over).
fn id_from_tail(tail: &[u8]) -> Option<Vec<u8>> {
    const KEY: &[u8] = b"\"id\"";
    let positions = tail.windows(KEY.len()).enumerate().rev();
    for (at, window) in positions {
        if window != KEY {
            continue;
        }
        let mut candidate = Vec::with_capacity(tail.len() - at + 1);
        candidate.push(b'{');
        candidate.extend_from_slice(&tail[at..]);
        let Ok(Value::Object(members)) = serde_json::from_slice::<Value>(&candidate) else {
            continue;
        };
        return members
            .get("id")
            .filter(|id| id.is_string() || id.is_number())
            .map(|id| id.to_string().into_bytes());
    }
    None
}

fn is_id(raw: &str) -> bool {
    raw.starts_with('"') || raw.starts_with(|c: char| c == '-' || c.is_ascii_digit())
}

/// One JSON value at the start of `bytes`, and what follows it.
fn next_value<'a, T: serde::Deserialize<'a>>(bytes: &'a [u8]) -> Option<(T, &'a [u8])> {
    let mut stream = serde_json::Deserializer::from_slice(bytes).into_iter::<T>();
    let value = stream.next()?.ok()?;
    let used = stream.byte_offset();
    Some((value, &bytes[used..]))
}

fn skip_ws(bytes: &[u8]) -> &[u8] {
    let start = bytes
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(bytes.len());
    &bytes[start..]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ends(message: &str, keep: usize) -> (Vec<u8>, Vec<u8>) {
        let bytes = message.as_bytes();
        let head = bytes[..keep.min(bytes.len())].to_vec();
        let tail = bytes[bytes.len().saturating_sub(keep)..].to_vec();
        (head, tail)
    }

    fn id_of(message: &str) -> Option<String> {
        let (head, tail) = ends(message, 40);
        find_id(&head, &tail).map(|id| String::from_utf8(id).expect("utf-8"))
    }

    #[test]
    fn the_id_is_found_at_either_end() {
        let big = "x".repeat(500);
        assert_eq!(
            id_of(&format!(
                r#"{{"jsonrpc":"2.0","id":7,"method":"m","params":{{"t":"{big}"}}}}"#
            ))
            .as_deref(),
            Some("7")
        );
        assert_eq!(
            id_of(&format!(r#"{{ "id" : "a\"b", "result":{{"t":"{big}"}}}}"#)).as_deref(),
            Some(r#""a\"b""#)
        );
        assert_eq!(
            id_of(&format!(
                r#"{{"method":"m","params":{{"t":"{big}","id":1}},"jsonrpc":"2.0","id":-3}}"#
            ))
            .as_deref(),
            Some("-3")
        );
        assert_eq!(
            id_of(&format!(r#"{{"result":{{"t":"{big}"}},"id": 12 }}"#)).as_deref(),
            Some("12")
        );
    }

    #[test]
    fn nested_ids_and_notifications_give_none() {
        let big = "x".repeat(500);
        assert_eq!(
            id_of(&format!(
                r#"{{"method":"m","params":{{"t":"{big}","id":1}}}}"#
            )),
            None
        );
        assert_eq!(
            id_of(&format!(
                r#"{{"method":"m","params":{{"t":"{big}","meta":{{"id":1}},"x":2}}}}"#
            )),
            None
        );
        assert_eq!(
            id_of(&format!(r#"{{"jsonrpc":"2.0","id":null,"t":"{big}"}}"#)),
            None
        );
        assert_eq!(id_of(&big), None);
        assert_eq!(find_id(b"", b""), None);
    }
}
