//! `show` as text: the attempt's sessions, transcripts, gates, commits and steps.

use std::fmt::Write as _;

use crate::commands::report::{duration_between, local_time, tail};

use super::collect::Shown;

/// How many lines of a gate's output the text shows.
const GATE_OUTPUT_LINES: usize = 15;

/// The attempt as `show` prints it.
pub(super) fn render(shown: &Shown) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Run {}  {}: phase {}, attempt {} of {}{}",
        &shown.run_id[..shown.run_id.len().min(8)],
        shown.plan_title,
        shown.phase_id,
        shown.attempt,
        shown.attempts,
        if shown.remediation { " (fix)" } else { "" }
    );
    let _ = writeln!(
        out,
        "Status:  {}{}",
        shown.status,
        shown
            .outcome
            .as_ref()
            .map(|o| format!(" (last session: {o})"))
            .unwrap_or_default()
    );
    let _ = writeln!(
        out,
        "Started: {}   took {}",
        local_time(&shown.started_at),
        duration_between(&shown.started_at, shown.ended_at.as_deref())
    );
    if let Some(error) = &shown.error {
        let _ = writeln!(out, "Error:   {error}");
    }
    for session in &shown.sessions {
        if session.resumed {
            let _ = writeln!(
                out,
                "\nThe run stopped here; `--resume` went on with the attempt:"
            );
        }
        if session.outcome == "running" {
            let _ = writeln!(out, "\nSession {}: running", session.index + 1);
        } else if session.outcome == "unrecorded" {
            let _ = writeln!(
                out,
                "\nSession {}: no record of its end (the run stopped while it ran)",
                session.index + 1
            );
        } else {
            let source = session
                .window_source
                .as_deref()
                .map(|source| format!(", window: {source}"))
                .unwrap_or_default();
            // A session killed before its first figure has no window to speak of.
            let context = if session.context_window == 0 {
                " (no context figure recorded)".to_owned()
            } else {
                format!(
                    " at {:.1}% of {} tokens{source}",
                    session.context_percent,
                    crate::words::thousands(session.context_window)
                )
            };
            let _ = writeln!(
                out,
                "\nSession {}: {}{context}, {}${:.2}",
                session.index + 1,
                session.outcome.replace('_', " "),
                if session.cost_estimated { "~" } else { "" },
                session.cost_usd
            );
        }
        match (&session.checkpoint, &session.prompt) {
            (Some(checkpoint), _) => {
                out.push_str("  Checkpoint it continued from:\n");
                out.push_str(&indent(checkpoint));
            }
            (None, Some(prompt)) => {
                out.push_str("  Prompt:\n");
                out.push_str(&indent(prompt));
            }
            (None, None) => {
                out.push_str("  Prompt: not recorded (a run before prompts were stored)\n");
            }
        }
        match &session.transcript {
            Some(t) => {
                let calls: Vec<String> = t
                    .tool_calls
                    .iter()
                    .map(|(name, n)| format!("{name} ×{n}"))
                    .collect();
                let _ = writeln!(
                    out,
                    "  Transcript: {} line{}, {} turn{}, tool calls: {}{}",
                    t.lines,
                    crate::words::plural(t.lines),
                    t.turns,
                    crate::words::plural(t.turns),
                    if calls.is_empty() {
                        "none".to_owned()
                    } else {
                        calls.join(", ")
                    },
                    if t.subagent_tool_calls > 0 {
                        format!(" (+{} in subagents)", t.subagent_tool_calls)
                    } else {
                        String::new()
                    }
                );
                if let Some(last) = &t.last_message {
                    let _ = writeln!(out, "  Last said: {}", first_line(last));
                }
                if let Some(result) = &t.result {
                    let _ = writeln!(out, "  Result: {result}");
                }
            }
            None if session.log_path.is_none() => {}
            None => out.push_str("  Transcript: not found\n"),
        }
        if let Some(path) = &session.log_path {
            let _ = writeln!(out, "  Log: {path}");
        }
        if let Some(handoff) = &session.handoff {
            let _ = writeln!(
                out,
                "  Handoff: {}, ${:.2}{}",
                handoff.outcome.replace('_', " "),
                handoff.cost_usd,
                handoff
                    .log_path
                    .as_deref()
                    .map(|path| format!(" ({path})"))
                    .unwrap_or_default()
            );
        }
    }
    if !shown.gates.is_empty() {
        out.push_str("\nGates:\n");
        for gate in &shown.gates {
            let verdict = if gate.passed { "passed" } else { "FAILED" };
            let _ = writeln!(out, "  {} {verdict}: {}", gate.name, gate.command);
            if !gate.output.trim().is_empty() {
                out.push_str(&tail(&gate.output, GATE_OUTPUT_LINES, "      "));
            }
        }
    }
    if !shown.progress.is_empty() {
        out.push_str("\nProgress:\n");
        for step in &shown.progress {
            let _ = writeln!(out, "  - {step}");
        }
    }
    out.push_str("\nCommits: ");
    if shown.commits.is_empty() {
        out.push_str("none\n");
    } else {
        let short: Vec<&str> = shown
            .commits
            .iter()
            .map(|c| &c[..c.len().min(12)])
            .collect();
        let _ = writeln!(out, "{}", short.join(" "));
    }
    out
}

fn indent(text: &str) -> String {
    text.lines().map(|l| format!("    {l}\n")).collect()
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or("")
}
