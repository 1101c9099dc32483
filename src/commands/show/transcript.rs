//! A saved session transcript in brief, for `debussy show`: main-thread turns, tool
//! calls by tool (subagents' counted apart), the last thing said and the result.

use std::collections::BTreeMap;
use std::io::BufReader;
use std::path::Path;

use serde::Serialize;

use crate::agent::{AgentEvent, AssistantBlock, stream_json};
use crate::files::{LineRead, read_line_limited};
use crate::process::DEFAULT_MAX_LINE;

/// What a session's transcript says, in brief (main thread only, but subagent calls
/// are counted apart).
#[derive(Debug, Default, Serialize)]
pub(super) struct TranscriptSummary {
    pub(super) lines: u64,
    pub(super) turns: u64,
    pub(super) tool_calls: BTreeMap<String, u32>,
    pub(super) subagent_tool_calls: u32,
    pub(super) last_message: Option<String>,
    pub(super) result: Option<String>,
}

/// Read a saved transcript line by line, each line bounded as the session bounds it;
/// `None` when it cannot be opened (a run directory cleaned away, or something other
/// than a regular file in its place).
pub(super) fn summarize(path: &Path) -> Option<TranscriptSummary> {
    let file = crate::files::open_regular(path).ok()?;
    let mut summary = TranscriptSummary::default();
    let mut last_id: Option<String> = None;
    let mut buf = Vec::new();
    let mut reader = BufReader::new(file);
    loop {
        match read_line_limited(&mut reader, &mut buf, DEFAULT_MAX_LINE).ok()? {
            LineRead::End => break,
            LineRead::TooLong { .. } => summary.lines += 1,
            LineRead::Line => {
                summary.lines += 1;
                if let Some(event) = stream_json::parse_line(&buf) {
                    observe(&mut summary, &mut last_id, &event);
                }
            }
        }
    }
    Some(summary)
}

fn observe(summary: &mut TranscriptSummary, last_id: &mut Option<String>, event: &AgentEvent) {
    match event {
        AgentEvent::Assistant(message) if message.parent_tool_use_id.is_some() => {
            summary.subagent_tool_calls += u32::try_from(
                message
                    .content
                    .iter()
                    .filter(|b| matches!(b, AssistantBlock::ToolUse(_)))
                    .count(),
            )
            .unwrap_or(u32::MAX);
        }
        AgentEvent::Assistant(message) => {
            // Claude Code prints one line per content block, all with the message's id.
            if message.message_id.is_none() || message.message_id != *last_id {
                summary.turns += 1;
                last_id.clone_from(&message.message_id);
            }
            for block in &message.content {
                match block {
                    AssistantBlock::ToolUse(call) => {
                        *summary.tool_calls.entry(call.name.clone()).or_default() += 1;
                    }
                    AssistantBlock::Text { text } if !text.trim().is_empty() => {
                        summary.last_message = Some(text.trim().to_owned());
                    }
                    _ => {}
                }
            }
        }
        AgentEvent::Result(result) => {
            summary.result = Some(if result.is_error {
                format!("{} (error)", result.subtype)
            } else {
                result.subtype.clone()
            });
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recorded_subagent_transcript_is_summarized() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/transcripts/claude-task-subagent.jsonl");
        let summary = summarize(&path).expect("the fixture");
        assert_eq!(summary.tool_calls.get("Task"), Some(&1), "{summary:?}");
        assert!(summary.subagent_tool_calls > 0, "{summary:?}");
        assert!(summary.turns > 0 && summary.lines > summary.turns);
        assert_eq!(summary.result.as_deref(), Some("success"));
        assert!(summary.last_message.is_some());
        assert!(summarize(Path::new("/nonexistent.jsonl")).is_none());
    }
}
