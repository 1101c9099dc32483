//! Tests of [`super`]: reading messages, ids, spans and the messages the front builds.

use super::*;

fn parse(text: &str) -> Parsed {
    Message::parse(text.as_bytes().to_vec())
}

fn message(text: &str) -> Message {
    match parse(text) {
        Parsed::Message(m) => m,
        other => panic!("not a message: {other:?}"),
    }
}

#[test]
fn requests_notifications_and_responses_are_told_apart() {
    let m = message(r#"{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{}}"#);
    assert_eq!(
        m.kind(),
        &Kind::Request {
            id: RequestId::from_u64(7),
            method: "tools/list".into()
        }
    );
    let m = message(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    assert_eq!(m.method(), Some("notifications/initialized"));
    assert!(matches!(m.kind(), Kind::Notification { .. }));
    let m = message(r#"{"jsonrpc":"2.0","id":"a","result":{}}"#);
    assert!(matches!(
        m.kind(),
        Kind::Response {
            id: Some(_),
            is_error: false
        }
    ));
    let m = message(r#"{"jsonrpc":"2.0","id":null,"error":{"code":-1,"message":"x"}}"#);
    assert_eq!(
        m.kind(),
        &Kind::Response {
            id: None,
            is_error: true
        }
    );
}

#[test]
fn garbage_is_not_json_and_wrong_shapes_are_invalid() {
    assert!(matches!(
        parse("Server listening on port 3000"),
        Parsed::NotJson(..)
    ));
    assert!(matches!(
        parse(r#"{"jsonrpc":"2.0","id":1"#),
        Parsed::NotJson(..)
    ));
    for invalid in [
        "42",
        "[]",
        r#"["2.0", 1, "ping"]"#,
        r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#,
        r#"{"id":1,"method":"x"}"#,
        r#"{"jsonrpc":"1.0","id":1,"method":"x"}"#,
        r#"{"jsonrpc":"2.0","id":{},"method":"x"}"#,
        r#"{"jsonrpc":"2.0","id":null,"method":"x"}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":{},"error":{}}"#,
        r#"{"jsonrpc":"2.0","id":1}"#,
        r#"{"jsonrpc":"2.0","method":7}"#,
    ] {
        assert!(matches!(parse(invalid), Parsed::Invalid(..)), "{invalid}");
    }
    assert!(matches!(
        parse(r#"{"jsonrpc":"2.0","id":"k","method":7}"#),
        Parsed::Invalid(_, Some(id)) if id == br#""k""#
    ));
    assert!(matches!(parse(r#"{"hello":1}"#), Parsed::Invalid(_, None)));
}

#[test]
fn ids_are_spliced_without_touching_the_rest() {
    let text = r#"{"jsonrpc":"2.0", "id" : "client-1" ,"method":"tools/call","params":{"id":3}}"#;
    let m = message(text);
    assert_eq!(m.raw_id(), Some(&br#""client-1""#[..]));
    let swapped = m.with_raw_id(b"12");
    assert_eq!(
        String::from_utf8(swapped).expect("utf8"),
        r#"{"jsonrpc":"2.0", "id" : 12 ,"method":"tools/call","params":{"id":3}}"#
    );
}

#[test]
fn ids_compare_by_value_not_spelling() {
    assert_eq!(
        RequestId::from_raw(r#""\u0061""#),
        RequestId::from_raw(r#""a""#)
    );
    assert_ne!(RequestId::from_raw("1"), RequestId::from_raw(r#""1""#));
    assert_eq!(
        RequestId::from_raw("15").and_then(|id| id.as_u64()),
        Some(15)
    );
    assert_eq!(RequestId::from_raw("true"), None);
}

#[test]
fn ids_read_from_text_and_from_values_agree() {
    for raw in [
        "0",
        "7",
        "18446744073709551615",
        "-3",
        "1.5",
        "1e3",
        r#""12""#,
        r#""k\"1""#,
    ] {
        let value: Value = serde_json::from_str(raw).expect("json");
        let from_raw = RequestId::from_raw(raw).expect("an id");
        assert_eq!(from_raw.to_string(), value.to_string(), "{raw}");
        assert_eq!(from_raw.to_value(), value, "{raw}");
        if value.is_u64() {
            assert_eq!(
                Some(from_raw.clone()),
                RequestId::from_value(&value),
                "{raw}"
            );
        }
        assert_eq!(from_raw.as_u64(), value.as_u64(), "{raw}");
    }
    assert_eq!(
        RequestId::from_raw("18446744073709551616").and_then(|id| id.as_u64()),
        None
    );
}

#[test]
fn params_are_read_from_their_own_bytes() {
    let m = message(
        r#"{"params":{"arguments":{"name":"inner"},"name":"echo"},"jsonrpc":"2.0","id":1,"method":"tools/call"}"#,
    );
    assert_eq!(
        m.params_bytes(),
        Some(br#"{"arguments":{"name":"inner"},"name":"echo"}"#.as_slice())
    );
    assert_eq!(m.params_name().as_deref(), Some("echo"));
    assert_eq!(m.params().expect("params")["arguments"]["name"], "inner");
    let null = message(r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":null}"#);
    assert_eq!(null.params(), Some(Value::Null));
    assert_eq!(null.params_name(), None);
    let none = message(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    assert_eq!(none.params_bytes(), None);
    assert_eq!(none.params(), None);
}

#[test]
fn the_params_head_reads_as_name_and_meta_read_apart() {
    for params in [
        r#"{"name":"echo","arguments":{"name":1},"_meta":{"k":[1,{"a":null}]}}"#,
        r#"{"_meta":null,"name":"e\u0063ho"}"#,
        r#"{"name":5,"_meta":{"k":1}}"#,
        r#"{"name":"a","name":"b","_meta":{"k":1}}"#,
        r#"{"name":"a","_meta":{},"_meta":{"k":1}}"#,
        r#"["echo",{"k":1}]"#,
        r#"["echo"]"#,
        r#"[{"k":1}]"#,
        r#"{}"#,
        r#"[]"#,
        r#""text""#,
        "null",
    ] {
        let m = message(&format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{params}}}"#
        ));
        let head = m.params_head();
        assert_eq!(head.name, m.params_name(), "{params}");
        assert_eq!(head.meta, m.params_meta().map(RawValue::get), "{params}");
    }
    let none = message(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#);
    assert!(none.params_head().name.is_none() && none.params_head().meta.is_none());
}

#[test]
fn the_quick_reading_gives_what_serde_gives() {
    let mut quick = 0;
    for variant in scan::tests::variants() {
        if let Some(fields) = Fields::quick(&variant) {
            quick += 1;
            let read = Fields::read(&variant).expect("serde reads it too");
            assert_eq!(fields, read, "{}", String::from_utf8_lossy(&variant));
        }
        let Parsed::Message(message) = Message::parse(variant.clone()) else {
            continue;
        };
        if let Some(head) = message.params_bytes().and_then(quick_head) {
            assert_eq!(head.name, message.params_name());
            assert_eq!(head.meta, message.params_meta().map(RawValue::get));
        }
    }
    assert!(quick > 1000, "only {quick} read quickly");
    for sample in scan::tests::SAMPLES {
        let quick = Fields::quick(sample.as_bytes());
        assert_eq!(quick.is_some(), !sample.ends_with(r#""id":2}"#), "{sample}");
    }
    // Text with escapes, or that is not text, is serde's to read and complain about.
    for left in [
        r#"{"jsonrpc":"2\u002e0","id":1,"method":"ping"}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":7}"#,
    ] {
        assert_eq!(Fields::quick(left.as_bytes()), None, "{left}");
    }
    assert!(matches!(
        parse(r#"{"jsonrpc":"2\u002e0","id":1,"method":"ping"}"#),
        Parsed::Message(_)
    ));
}

#[test]
fn multibyte_text_survives_untouched() {
    let text = r#"{"jsonrpc":"2.0","id":1,"result":{"text":"héllo → 世界"}}"#;
    let m = message(text);
    assert_eq!(
        m.with_raw_id(b"\"x\""),
        text.replacen("1", "\"x\"", 1).into_bytes()
    );
}

#[test]
fn built_messages_parse_back() {
    let e = error_response(Some(b"3"), INTERNAL_ERROR, "server \"restarted\"");
    let m = message(std::str::from_utf8(&e).expect("utf8"));
    assert!(matches!(m.kind(), Kind::Response { is_error: true, .. }));
    let v = m.to_value().expect("json");
    assert_eq!(v["error"]["message"], "server \"restarted\"");
    let r = result_response(b"\"k\"", &serde_json::json!({"ok": true}));
    assert!(matches!(
        message(std::str::from_utf8(&r).expect("utf8")).kind(),
        Kind::Response {
            is_error: false,
            ..
        }
    ));
    let q = request(5, "initialize", Some(&serde_json::json!({"a": 1})));
    let m = message(std::str::from_utf8(&q).expect("utf8"));
    assert_eq!(m.params(), Some(serde_json::json!({"a": 1})));
    let n = notification("notifications/tools/list_changed", None);
    assert!(matches!(
        message(std::str::from_utf8(&n).expect("utf8")).kind(),
        Kind::Notification { .. }
    ));
}
