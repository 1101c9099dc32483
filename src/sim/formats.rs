//! What the sim agent prints, in the format of the agent it stands in for (the scenario's
//! `format` key): Claude Code's `stream-json` (`lines`), `codex exec --json`
//! with a rollout file under `$CODEX_HOME/sessions/`, or the Gemini CLI's `stream-json`.
//!
//! The player says what happens (a message and its usage, a tool's result, a compaction,
//! the end) and `Printer` writes it the way that agent would, so every parser and the
//! rollout follower are exercised without the real CLIs. Only the main thread is printed
//! for Codex and Gemini: subagents are Claude Code's.

use std::fs::File;
use std::io::{self, Write};
use std::path::PathBuf;

use serde::Deserialize;
use serde_json::{Value, json};

use super::lines::{Block, LineWriter, Lines, ResultContent, ResultLine};
use crate::sim::Usage;

/// The output format a scenario plays in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// Claude Code's `stream-json` (the default).
    #[default]
    Claude,
    /// `codex exec --json` on stdout, usage in a rollout file.
    Codex,
    /// The Gemini CLI's `stream-json`, usage only at the end.
    Gemini,
}

/// Writes one session's output in its format.
pub(super) struct Printer<W: Write> {
    pub(super) format: Format,
    pub(super) out: LineWriter<W>,
    pub(super) lines: Lines,
    /// Codex's rollout file, when `CODEX_HOME` names where it goes.
    rollout: Option<LineWriter<File>>,
    /// Codex's cumulative usage, for `token_count`.
    total: Usage,
}

/// A tool call as the player made it, for the formats that report the call with its
/// result.
pub(super) struct CallInfo<'a> {
    pub(super) id: &'a str,
    pub(super) name: &'a str,
    pub(super) input: &'a Value,
}

/// OpenAI's usage shape: the input includes the cached tokens.
fn openai_usage(usage: &Usage) -> Value {
    let input = usage.context_tokens();
    json!({
        "input_tokens": input,
        "cached_input_tokens": usage.cache_read_input_tokens,
        "cache_write_input_tokens": usage.cache_creation_input_tokens,
        "output_tokens": usage.output_tokens,
        "reasoning_output_tokens": 0,
        "total_tokens": input + usage.output_tokens,
    })
}

fn now() -> String {
    jiff::Timestamp::now().to_string()
}

impl<W: Write> Printer<W> {
    /// A printer for `format`; `codex_home` is where a Codex rollout goes.
    pub(super) fn new(
        format: Format,
        out: W,
        lines: Lines,
        codex_home: Option<PathBuf>,
    ) -> io::Result<Self> {
        let rollout = match (format, codex_home) {
            (Format::Codex, Some(home)) => {
                let dir = home.join("sessions").join("sim");
                std::fs::create_dir_all(&dir)?;
                let path = dir.join(format!("rollout-sim-{}.jsonl", lines.session_id));
                Some(LineWriter::new(File::create(path)?))
            }
            _ => None,
        };
        Ok(Printer {
            format,
            out: LineWriter::new(out),
            lines,
            rollout,
            total: Usage::default(),
        })
    }

    fn record(&mut self, kind: &str, payload: Value) -> io::Result<()> {
        match &mut self.rollout {
            Some(rollout) => {
                rollout.emit(&json!({"timestamp": now(), "type": kind, "payload": payload}))
            }
            None => Ok(()),
        }
    }

    /// The session started.
    pub(super) fn init(&mut self, cwd: &str) -> io::Result<()> {
        match self.format {
            Format::Claude => self.out.emit(&self.lines.init(cwd)),
            Format::Codex => {
                self.out
                    .emit(&json!({"type": "thread.started", "thread_id": self.lines.session_id}))?;
                let meta = json!({
                    "id": self.lines.session_id,
                    "cwd": cwd,
                    "cli_version": concat!("debussy-sim ", env!("CARGO_PKG_VERSION")),
                });
                self.record("session_meta", meta)?;
                let context = json!({"cwd": cwd, "model": self.lines.model});
                self.record("turn_context", context)
            }
            Format::Gemini => self.out.emit(&json!({
                "type": "init",
                "timestamp": now(),
                "session_id": self.lines.session_id,
                "model": self.lines.model,
            })),
        }
    }

    /// One assistant message (its blocks) and the usage of the request that made it.
    pub(super) fn message(
        &mut self,
        message_id: &str,
        parent: Option<&str>,
        blocks: &[Block],
        usage: &Usage,
        window: u64,
    ) -> io::Result<()> {
        if self.format == Format::Claude {
            for block in blocks {
                self.out
                    .emit(&self.lines.assistant(message_id, parent, block, usage))?;
            }
            return Ok(());
        }
        if parent.is_some() {
            return Ok(());
        }
        for block in blocks {
            let line = match (self.format, block) {
                (Format::Codex, Block::Text { text }) => Some(json!({
                    "type": "item.completed",
                    "item": {"id": format!("{message_id}-text"), "type": "agent_message", "text": text},
                })),
                (Format::Codex, Block::Thinking { thinking, .. }) => Some(json!({
                    "type": "item.completed",
                    "item": {"id": format!("{message_id}-reasoning"), "type": "reasoning", "text": thinking},
                })),
                (Format::Codex, Block::ToolUse { id, name, input }) => codex_call(id, name, input),
                (Format::Gemini, Block::Text { text }) => Some(json!({
                    "type": "message", "timestamp": now(), "role": "assistant", "content": text, "delta": true,
                })),
                (Format::Gemini, Block::ToolUse { id, name, input }) => {
                    gemini_call(id, name, input)
                }
                _ => None,
            };
            if let Some(line) = line {
                self.out.emit(&line)?;
            }
        }
        if self.format == Format::Codex {
            self.total = Usage {
                input_tokens: self.total.input_tokens + usage.input_tokens,
                cache_read_input_tokens: self.total.cache_read_input_tokens
                    + usage.cache_read_input_tokens,
                cache_creation_input_tokens: self.total.cache_creation_input_tokens
                    + usage.cache_creation_input_tokens,
                output_tokens: self.total.output_tokens + usage.output_tokens,
            };
            let last = openai_usage(usage);
            self.record(
                "token_usage_record",
                json!({"response_id": message_id, "usage": last}),
            )?;
            let info = json!({
                "last_token_usage": last,
                "total_token_usage": openai_usage(&self.total),
                "model_context_window": window,
            });
            self.record("event_msg", json!({"type": "token_count", "info": info}))?;
        }
        Ok(())
    }

    /// A tool call's result.
    pub(super) fn tool_result(
        &mut self,
        parent: Option<&str>,
        call: &CallInfo<'_>,
        content: &ResultContent,
        is_error: bool,
    ) -> io::Result<()> {
        if self.format == Format::Claude {
            return self
                .out
                .emit(&self.lines.tool_result(parent, call.id, content, is_error));
        }
        if parent.is_some() {
            return Ok(());
        }
        let text = match content {
            ResultContent::Text(text) => text.clone(),
            ResultContent::Blocks(blocks) => blocks
                .iter()
                .map(|block| block.text.as_str())
                .collect::<Vec<_>>()
                .join("\n"),
        };
        let line = match self.format {
            Format::Codex => codex_result(call, &text, is_error),
            Format::Gemini => Some(json!({
                "type": "tool_result",
                "timestamp": now(),
                "tool_id": call.id,
                "status": if is_error { "error" } else { "success" },
                "output": text,
            })),
            Format::Claude => None,
        };
        match line {
            Some(line) => self.out.emit(&line),
            None => Ok(()),
        }
    }

    /// A subagent's prompt (Claude Code only).
    pub(super) fn user_text(&mut self, parent: Option<&str>, text: &str) -> io::Result<()> {
        match self.format {
            Format::Claude => self.out.emit(&self.lines.user_text(parent, text)),
            Format::Codex | Format::Gemini => Ok(()),
        }
    }

    /// The agent compacted its context (the Gemini CLI does not say so).
    pub(super) fn compacted(&mut self, trigger: &str, pre_tokens: u64) -> io::Result<()> {
        match self.format {
            Format::Claude => self
                .out
                .emit(&self.lines.compact_boundary(trigger, pre_tokens)),
            Format::Codex => {
                self.record("compacted", json!({"message": "summary"}))?;
                self.record("event_msg", json!({"type": "context_compacted"}))
            }
            Format::Gemini => Ok(()),
        }
    }

    /// The session's end.
    pub(super) fn result(&mut self, end: &ResultLine<'_>) -> io::Result<()> {
        match self.format {
            Format::Claude => self.out.emit(&self.lines.result(end)),
            Format::Codex if end.is_error => self.out.emit(&json!({
                "type": "turn.failed",
                "error": {"message": end.errors.first().map_or(end.text, String::as_str)},
            })),
            Format::Codex => self.out.emit(&json!({
                "type": "turn.completed",
                "usage": openai_usage(&end.totals),
            })),
            Format::Gemini => {
                let totals = end.totals;
                let mut line = json!({
                    "type": "result",
                    "timestamp": now(),
                    "status": if end.is_error { "error" } else { "success" },
                    "stats": {
                        "input_tokens": totals.context_tokens(),
                        "output_tokens": totals.output_tokens,
                        "cached": totals.cache_read_input_tokens,
                        "total_tokens": totals.context_tokens() + totals.output_tokens,
                        "duration_ms": end.duration_ms,
                    },
                });
                if end.is_error {
                    let message = end.errors.first().map_or(end.text, String::as_str);
                    line["error"] = json!({"type": "Error", "message": message});
                }
                self.out.emit(&line)
            }
        }
    }
}

fn input_text<'a>(input: &'a Value, key: &str) -> &'a str {
    input.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// Each item of a `TodoWrite` call's list, in another agent's words.
fn each_todo(input: &Value, item: impl Fn(&Value) -> Value) -> Vec<Value> {
    input
        .get("todos")
        .and_then(Value::as_array)
        .map(|todos| todos.iter().map(item).collect())
        .unwrap_or_default()
}

/// How Codex reports the start of a call: commands start an item; files and todos are
/// reported whole.
fn codex_call(id: &str, name: &str, input: &Value) -> Option<Value> {
    let item = match name {
        "Bash" => json!({
            "id": id, "type": "command_execution", "command": input_text(input, "command"),
            "aggregated_output": "", "exit_code": null, "status": "in_progress",
        }),
        "Read" => json!({
            "id": id, "type": "command_execution",
            "command": format!("cat {}", input_text(input, "file_path")),
            "aggregated_output": "", "exit_code": null, "status": "in_progress",
        }),
        "TodoWrite" => {
            let items = each_todo(input, |todo| {
                json!({
                    "text": input_text(todo, "content"),
                    "completed": input_text(todo, "status") == "completed",
                })
            });
            return Some(
                json!({"type": "item.updated", "item": {"id": id, "type": "todo_list", "items": items}}),
            );
        }
        _ => return None,
    };
    Some(json!({"type": "item.started", "item": item}))
}

/// How Codex reports a call's end.
fn codex_result(call: &CallInfo<'_>, text: &str, is_error: bool) -> Option<Value> {
    let status = if is_error { "failed" } else { "completed" };
    let item = match call.name {
        "Bash" | "Read" => {
            let command = if call.name == "Bash" {
                input_text(call.input, "command").to_owned()
            } else {
                format!("cat {}", input_text(call.input, "file_path"))
            };
            json!({
                "id": call.id, "type": "command_execution", "command": command,
                "aggregated_output": text, "exit_code": i32::from(is_error), "status": status,
            })
        }
        "Write" => json!({
            "id": call.id, "type": "file_change",
            "changes": [{"path": input_text(call.input, "file_path"), "kind": "add"}],
            "status": status,
        }),
        _ => return None,
    };
    Some(json!({"type": "item.completed", "item": item}))
}

/// How the Gemini CLI reports a call.
fn gemini_call(id: &str, name: &str, input: &Value) -> Option<Value> {
    let (tool, parameters) = match name {
        "Bash" => (
            "run_shell_command",
            json!({"command": input_text(input, "command")}),
        ),
        "Write" => ("write_file", input.clone()),
        "Read" => ("read_file", input.clone()),
        "TodoWrite" => {
            let todos = each_todo(input, |todo| {
                json!({
                    "description": input_text(todo, "content"),
                    "status": input_text(todo, "status"),
                })
            });
            ("write_todos", json!({"todos": todos}))
        }
        _ => return None,
    };
    Some(json!({
        "type": "tool_use", "timestamp": now(), "tool_name": tool, "tool_id": id, "parameters": parameters,
    }))
}
