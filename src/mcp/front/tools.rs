//! The tools the supervisor adds to the server's own (unless `--no-inject-tools`):
//! `restart_server`, `verify_server_restarted` and `server_status` (issue 6, "Tools the
//! supervisor adds").
//!
//! This module owns their definitions, how they are appended to a `tools/list` result,
//! how a `tools/call` for one of them is recognised, and how their results read. It is
//! pure: the proxy supplies the facts (pids, generations, times) and does the restarting.
//! A child that lists a tool with one of these names keeps it: the child's wins.

use std::collections::HashSet;
use std::str::FromStr;

use jiff::Timestamp;
use serde::Serialize;
use serde_json::{Value, json};

/// Name of the tool that restarts the server.
pub(crate) const RESTART_SERVER: &str = "restart_server";
/// Name of the tool that checks a restart happened.
pub(crate) const VERIFY_SERVER_RESTARTED: &str = "verify_server_restarted";
/// Name of the tool that reports the supervisor's state.
pub(crate) const SERVER_STATUS: &str = "server_status";
/// Name of the convention some servers use for settings, whose `action: "restart"`
/// the front answers like `restart_server`.
pub(crate) const CONFIGURE: &str = "configure";

/// Whether a call of the tool `name` may be one of the injected tools' (`configure` only
/// with `action: "restart"`).
pub(crate) fn is_injected(name: &str) -> bool {
    matches!(
        name,
        RESTART_SERVER | VERIFY_SERVER_RESTARTED | SERVER_STATUS | CONFIGURE
    )
}

/// A call of an injected tool, with its arguments checked.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum InjectedCall {
    /// `restart_server(reason)`.
    Restart {
        /// Why the caller wants a restart.
        reason: String,
    },
    /// `verify_server_restarted(since_timestamp)`.
    Verify {
        /// Restarts after this instant count.
        since: Timestamp,
    },
    /// `server_status()`.
    Status,
}

/// The tool definitions, as `tools/list` entries.
pub(crate) fn definitions() -> Vec<Value> {
    vec![
        json!({
            "name": RESTART_SERVER,
            "description": "Restart the MCP server behind the debussy supervisor (for example after editing its code). Replies once the new server process is ready, with the old and new pid and generation. The client session stays connected.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "reason": {"type": "string", "description": "Why the restart is needed; recorded in the audit log."}
                }
            }
        }),
        json!({
            "name": VERIFY_SERVER_RESTARTED,
            "description": "Check from the supervisor's records whether the MCP server was (re)started after a given time.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "since_timestamp": {
                        "type": ["string", "number"],
                        "description": "ISO 8601 time (e.g. 2025-01-31T12:00:00Z) or seconds since the Unix epoch."
                    }
                },
                "required": ["since_timestamp"]
            }
        }),
        json!({
            "name": SERVER_STATUS,
            "description": "Report the supervised MCP server's state: generation, pid, uptime, restart and crash counts, last exit, mode and watched paths.",
            "inputSchema": {"type": "object", "properties": {}}
        }),
    ]
}

/// The names of the tools in one `tools/list` result page.
pub(crate) fn listed_names(result: &Value) -> HashSet<String> {
    result
        .get("tools")
        .and_then(Value::as_array)
        .map(|tools| {
            tools
                .iter()
                .filter_map(|tool| tool.get("name").and_then(Value::as_str))
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// Append the injected tools to a `tools/list` result, skipping names in `child_names`
/// (all the child's tools seen in this listing). Only the last page (no `nextCursor`)
/// gets them, so a paginated listing shows each once. Returns whether anything changed.
pub(crate) fn append(result: &mut Value, child_names: &HashSet<String>) -> bool {
    if result.get("nextCursor").is_some_and(|c| !c.is_null()) {
        return false;
    }
    let Some(object) = result.as_object_mut() else {
        return false;
    };
    let tools = object.entry("tools").or_insert_with(|| json!([]));
    let Some(tools) = tools.as_array_mut() else {
        return false;
    };
    let mut changed = false;
    for definition in definitions() {
        let name = definition.get("name").and_then(Value::as_str).unwrap_or("");
        if !child_names.contains(name) {
            tools.push(definition);
            changed = true;
        }
    }
    changed
}

/// Recognise a `tools/call` of an injected tool. `Ok(None)`: not one of ours.
/// `Err(message)`: ours, with arguments that do not fit (answered with an error result).
pub(crate) fn parse_call(params: Option<&Value>) -> Result<Option<InjectedCall>, String> {
    let Some(params) = params else {
        return Ok(None);
    };
    let Some(name) = params.get("name").and_then(Value::as_str) else {
        return Ok(None);
    };
    let arguments = params
        .get("arguments")
        .cloned()
        .unwrap_or_else(|| json!({}));
    match name {
        RESTART_SERVER => {
            let reason = match arguments.get("reason") {
                None | Some(Value::Null) => {
                    "restart requested with the restart_server tool".to_owned()
                }
                Some(Value::String(reason)) if !reason.trim().is_empty() => reason.clone(),
                Some(Value::String(_)) => {
                    "restart requested with the restart_server tool".to_owned()
                }
                Some(other) => return Err(format!("`reason` must be a string, not {other}")),
            };
            Ok(Some(InjectedCall::Restart { reason }))
        }
        VERIFY_SERVER_RESTARTED => {
            let since = arguments.get("since_timestamp").ok_or_else(|| {
                "missing `since_timestamp` (ISO 8601 time or Unix seconds)".to_owned()
            })?;
            parse_instant(since).map(|since| Some(InjectedCall::Verify { since }))
        }
        SERVER_STATUS => Ok(Some(InjectedCall::Status)),
        CONFIGURE => Ok(configure_restart(&arguments)),
        _ => Ok(None),
    }
}

/// `configure` with `action: "restart"`, the convention some servers use for the same
/// thing as `restart_server` (any other `configure` call is the server's own).
fn configure_restart(arguments: &Value) -> Option<InjectedCall> {
    if arguments.get("action").and_then(Value::as_str) != Some("restart") {
        return None;
    }
    let reason = arguments
        .get("reason")
        .and_then(Value::as_str)
        .filter(|r| !r.trim().is_empty())
        .unwrap_or("restart requested with configure(action: restart)");
    Some(InjectedCall::Restart {
        reason: reason.to_owned(),
    })
}

/// Read a point in time from ISO 8601 text or Unix seconds (number or numeric text).
pub(crate) fn parse_instant(value: &Value) -> Result<Timestamp, String> {
    let seconds = match value {
        Value::Number(n) => n.as_f64(),
        Value::String(text) => match Timestamp::from_str(text.trim()) {
            Ok(ts) => return Ok(ts),
            Err(err) => match text.trim().parse::<f64>() {
                Ok(seconds) => Some(seconds),
                Err(_) => {
                    return Err(format!(
                        "`since_timestamp` {text:?} is neither ISO 8601 ({err}) nor Unix seconds"
                    ));
                }
            },
        },
        _ => None,
    };
    let Some(seconds) = seconds.filter(|s| s.is_finite()) else {
        return Err(format!(
            "`since_timestamp` must be ISO 8601 text or Unix seconds, not {value}"
        ));
    };
    #[expect(
        clippy::cast_possible_truncation,
        reason = "checked finite; out-of-range values are rejected by jiff below"
    )]
    let micros = (seconds * 1e6).round() as i64;
    Timestamp::from_microsecond(micros)
        .map_err(|err| format!("`since_timestamp` out of range: {err}"))
}

/// The protocol revision of the client that called an injected tool: its answer is in
/// that revision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Era {
    /// Up to 2025-11-25: a plain result.
    Legacy,
    /// 2026-07-28: every result says `resultType`.
    Stateless,
}

impl Era {
    /// The era of a request that was (or was not) stateless.
    pub(crate) fn of(stateless: bool) -> Self {
        if stateless {
            Era::Stateless
        } else {
            Era::Legacy
        }
    }

    /// `result` as this era's clients read it.
    pub(crate) fn result(self, mut result: Value) -> Value {
        if self == Era::Stateless
            && let Some(object) = result.as_object_mut()
        {
            object.insert("resultType".to_owned(), json!("complete"));
        }
        result
    }
}

/// One child start, as the supervisor recorded it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct StartRecord {
    /// The child's generation (1 for the first).
    pub(crate) generation: u64,
    /// Its pid.
    pub(crate) pid: Option<u32>,
    /// When it was spawned.
    #[serde(serialize_with = "serialize_iso")]
    pub(crate) started_at: Timestamp,
    /// Why it was started (`initial start`, or the restart's reason).
    pub(crate) reason: String,
}

fn serialize_iso<S: serde::Serializer>(ts: &Timestamp, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&crate::mcp::iso(*ts))
}

/// The answer to `verify_server_restarted`.
pub(crate) fn verify_result(history: &[StartRecord], since: Timestamp, now: Timestamp) -> Value {
    let current = history.last();
    let previous = history.len().checked_sub(2).and_then(|i| history.get(i));
    let restarted = history.iter().any(|start| start.started_at > since);
    let seconds_since_restart = current.map(|c| seconds_between(c.started_at, now));
    json!({
        "restarted": restarted,
        "since": crate::mcp::iso(since),
        "current": current,
        "previous": previous,
        "reason": current.map(|c| c.reason.clone()),
        "seconds_since_restart": seconds_since_restart,
        "starts_since": history.iter().filter(|s| s.started_at > since).count(),
    })
}

/// Seconds from `earlier` to `later`, with millisecond precision.
pub(crate) fn seconds_between(earlier: Timestamp, later: Timestamp) -> f64 {
    #[expect(
        clippy::cast_precision_loss,
        reason = "a supervisor's lifetime in milliseconds is far below 2^53"
    )]
    let millis = later.duration_since(earlier).as_millis() as f64;
    millis / 1000.0
}

/// A tool result carrying `value` as pretty JSON text.
pub(crate) fn tool_result(value: &Value, is_error: bool) -> Value {
    let text = serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string());
    json!({
        "content": [{"type": "text", "text": text}],
        "isError": is_error,
    })
}

/// A tool error result with a plain message.
pub(crate) fn tool_error(message: &str) -> Value {
    json!({
        "content": [{"type": "text", "text": message}],
        "isError": true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tools_are_appended_once_and_the_childs_win() {
        let mut result =
            json!({"tools": [{"name": "echo"}, {"name": "restart_server", "description": "mine"}]});
        let names = listed_names(&result);
        assert!(append(&mut result, &names));
        let listed: Vec<_> = result["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .map(|t| t["name"].as_str().unwrap_or_default().to_owned())
            .collect();
        assert_eq!(
            listed,
            [
                "echo",
                "restart_server",
                VERIFY_SERVER_RESTARTED,
                SERVER_STATUS
            ]
        );
        assert_eq!(result["tools"][1]["description"], "mine");
    }

    #[test]
    fn only_the_last_page_gets_the_tools() {
        let mut page = json!({"tools": [], "nextCursor": "2"});
        assert!(!append(&mut page, &HashSet::new()));
        assert_eq!(page["tools"], json!([]));
        let mut empty = json!({});
        assert!(append(&mut empty, &HashSet::new()));
        assert_eq!(empty["tools"].as_array().map(Vec::len), Some(3));
    }

    #[test]
    fn calls_are_recognised_with_their_arguments() {
        let call = |v: Value| parse_call(Some(&v));
        assert_eq!(call(json!({"name": "echo"})), Ok(None));
        assert_eq!(parse_call(None), Ok(None));
        assert_eq!(
            call(json!({"name": "restart_server", "arguments": {"reason": "edited"}})),
            Ok(Some(InjectedCall::Restart {
                reason: "edited".into()
            }))
        );
        assert!(matches!(
            call(json!({"name": "restart_server"})),
            Ok(Some(InjectedCall::Restart { .. }))
        ));
        assert!(call(json!({"name": "restart_server", "arguments": {"reason": 3}})).is_err());
        assert_eq!(
            call(json!({"name": "server_status", "arguments": {}})),
            Ok(Some(InjectedCall::Status))
        );
        assert!(call(json!({"name": "verify_server_restarted", "arguments": {}})).is_err());
        let Ok(Some(InjectedCall::Verify { since })) = call(
            json!({"name": "verify_server_restarted", "arguments": {"since_timestamp": "2025-01-31T12:00:00Z"}}),
        ) else {
            panic!("verify not parsed")
        };
        assert_eq!(since.as_second(), 1_738_324_800);
    }

    #[test]
    fn configure_restart_is_recognised() {
        let call = |v: Value| parse_call(Some(&v));
        assert!(matches!(
            call(json!({"name": "configure", "arguments": {"action": "restart"}})),
            Ok(Some(InjectedCall::Restart { .. }))
        ));
        assert_eq!(
            call(json!({"name": "configure", "arguments": {"action": "set", "key": "x"}})),
            Ok(None)
        );
    }

    #[test]
    fn instants_parse_from_iso_or_unix_seconds() {
        assert_eq!(
            parse_instant(&json!(1_738_324_800.5)).map(jiff::Timestamp::as_millisecond),
            Ok(1_738_324_800_500)
        );
        assert_eq!(
            parse_instant(&json!("1738324800")).map(Timestamp::as_second),
            Ok(1_738_324_800)
        );
        assert!(parse_instant(&json!("yesterday")).is_err());
        assert!(parse_instant(&json!(true)).is_err());
        assert!(parse_instant(&json!(1e300)).is_err());
    }

    #[test]
    fn verify_reports_starts_after_the_given_time() {
        let t = |s: i64| Timestamp::from_second(s).expect("ts");
        let history = vec![
            StartRecord {
                generation: 1,
                pid: Some(10),
                started_at: t(100),
                reason: "initial start".into(),
            },
            StartRecord {
                generation: 2,
                pid: Some(11),
                started_at: t(200),
                reason: "edited".into(),
            },
        ];
        let v = verify_result(&history, t(150), t(260));
        assert_eq!(v["restarted"], true);
        assert_eq!(v["current"]["pid"], 11);
        assert_eq!(v["previous"]["pid"], 10);
        assert_eq!(v["reason"], "edited");
        assert_eq!(v["seconds_since_restart"], 60.0);
        assert_eq!(v["starts_since"], 1);
        let v = verify_result(&history, t(250), t(260));
        assert_eq!(v["restarted"], false);
    }

    #[test]
    fn results_are_text_content() {
        let r = tool_result(&json!({"a": 1}), false);
        assert_eq!(r["isError"], false);
        let text = r["content"][0]["text"].as_str().expect("text");
        assert_eq!(
            serde_json::from_str::<Value>(text).expect("json"),
            json!({"a": 1})
        );
        assert_eq!(tool_error("no")["isError"], true);
    }
}

/// The tool list as the client sees it: the server's own tools (once listed) and the
/// names the last `tools/list` answer carried, to tell the client when they change.
#[derive(Debug, Default)]
pub(crate) struct ToolView {
    /// The server's tools, once it has listed them.
    pub(crate) server_tools: Option<std::collections::HashSet<String>>,
    /// The names in the last list sent to the client.
    pub(crate) listing: std::collections::HashSet<String>,
}
