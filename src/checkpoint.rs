//! The checkpoint context: what a restarted session is told about the work an earlier
//! session of the same phase already did.
//!
//! Pure and deterministic: the orchestrator gathers the facts (progress log, the agent's
//! latest todo list, git changes, the last assistant message) and this module only
//! renders them. The rendered text goes first in the new session's prompt, then a line
//! `---`, then the phase's original prompt ([`prompt_with_checkpoint`]).

use std::fmt::Write as _;

pub use crate::agent::{Todo, TodoStatus};
use crate::git::{FileChange, diffstat};
use crate::words::plural;

/// The most changed files listed before the rest are summarised.
const MAX_FILES: usize = 100;
/// The most characters kept of the handoff the previous session wrote.
const MAX_HANDOFF: usize = 12_000;
/// The most characters kept of the previous session's last message.
const MAX_LAST_MESSAGE: usize = 2_000;
/// The most progress steps listed: the latest, the earlier ones counted.
const MAX_STEPS: usize = 50;
/// The most todos listed: the first, the rest counted.
const MAX_TODOS: usize = 100;
/// The most characters kept of one progress step or todo: what the agent logs is
/// quoted in every later session's prompt.
const MAX_ITEM: usize = 300;

/// Why a fresh session continues the work of an earlier one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Continuation {
    /// The earlier session was stopped before its context window filled.
    #[default]
    ContextStop,
    /// The agent's usage limit refused the earlier session part way; the limit has reset.
    UsageLimit,
    /// The earlier session lost its API part way (the network, a proxy); the run waited
    /// for it.
    Offline,
}

/// Everything known about the work so far, gathered by the orchestrator.
#[derive(Debug, Clone, Default)]
pub struct CheckpointFacts {
    /// The phase id.
    pub phase_id: String,
    /// The phase title.
    pub phase_title: String,
    /// The restart about to happen (1 for the first restart).
    pub restart_number: u32,
    /// The most restarts allowed in this attempt.
    pub max_restarts: u32,
    /// Why the previous session was stopped, in words (`context at 85.2% of 200,000 tokens`).
    pub stop_reason: String,
    /// The checkpoint commit, if one was made.
    pub commit: Option<String>,
    /// Progress steps the agent logged with `debussy progress`, oldest first.
    pub progress: Vec<String>,
    /// The agent's latest todo list.
    pub todos: Vec<Todo>,
    /// Files changed since the phase started, untracked ones included.
    pub changes: Vec<FileChange>,
    /// The previous session's last assistant text.
    pub last_message: Option<String>,
    /// The handoff the previous session wrote when resumed after its stop, if it did.
    pub handoff: Option<String>,
    /// Why the fresh session continues.
    pub why: Continuation,
    /// The tool call the stop interrupted because it ran past `agent.tool_grace`, in a
    /// few words (`Bash: make test`).
    pub cut_short: Option<String>,
}

/// Render the checkpoint context.
#[must_use]
pub fn render(facts: &CheckpointFacts) -> String {
    let (id, stop) = (&facts.phase_id, &facts.stop_reason);
    let (after, why) = match facts.why {
        Continuation::ContextStop => (
            format!("restart {} of {}", facts.restart_number, facts.max_restarts),
            format!("The previous session was stopped before its context window filled ({stop})."),
        ),
        Continuation::UsageLimit => (
            "after a usage limit".to_owned(),
            format!(
                "The agent's usage limit refused the previous session part way ({stop}); the \
                 limit has reset since."
            ),
        ),
        Continuation::Offline => (
            "after the API could not be reached".to_owned(),
            format!(
                "The previous session lost its connection to the API part way ({stop}); \
                 debussy waited before starting this one."
            ),
        ),
    };
    let mut out = format!(
        "# Checkpoint: phase {id} ({}), {after}\n\nYou are continuing phase {id} in a fresh \
         session. {why}",
        facts.phase_title
    );
    match &facts.commit {
        Some(commit) => {
            let _ = write!(out, " Its work is committed to git as {}.", short(commit));
        }
        None => out.push_str(" Its work is in the working tree."),
    }
    out.push_str(
        " Everything below is already done or in progress: continue it, do not redo it.\n",
    );
    if let Some(tool) = &facts.cut_short {
        let _ = writeln!(
            out,
            "\nThe stop interrupted a tool call that ran past its grace: `{}`. It may have \
             left partial work behind (a half-written file, a lock): check its effects \
             before you go on, and run it again if it is still needed.",
            one_line(tool)
        );
    }

    if let Some(handoff) = written(facts.handoff.as_deref()) {
        out.push_str("\n## Handoff from the previous session\n\n");
        out.push_str(
            "The previous session wrote this for you when it was stopped; debussy's own \
             record follows it.\n\n",
        );
        for line in head(handoff, MAX_HANDOFF).lines() {
            // Its headings sit one level below this section's.
            if line.starts_with('#') {
                out.push('#');
            }
            out.push_str(line);
            out.push('\n');
        }
    }

    out.push_str("\n## Progress reported so far\n");
    if facts.progress.is_empty() {
        out.push_str("(none reported)\n");
    }
    let earlier = facts.progress.len().saturating_sub(MAX_STEPS);
    if earlier > 0 {
        let _ = writeln!(
            out,
            "- ({earlier} earlier step{} not shown)",
            plural(earlier)
        );
    }
    for step in &facts.progress[earlier..] {
        let _ = writeln!(out, "- {}", head(&one_line(step), MAX_ITEM));
    }

    if !facts.todos.is_empty() {
        out.push_str("\n## Todo list, as last updated\n");
        for todo in facts.todos.iter().take(MAX_TODOS) {
            let mark = match todo.status {
                TodoStatus::Completed => "[x]",
                TodoStatus::InProgress => "[~]",
                TodoStatus::Pending => "[ ]",
            };
            let note = if todo.status == TodoStatus::InProgress {
                " (in progress when stopped)"
            } else {
                ""
            };
            let _ = writeln!(
                out,
                "- {mark} {}{note}",
                head(&one_line(&todo.content), MAX_ITEM)
            );
        }
        let more = facts.todos.len().saturating_sub(MAX_TODOS);
        if more > 0 {
            let _ = writeln!(out, "- (and {more} more todo{})", plural(more));
        }
    }

    out.push_str("\n## Files changed since the phase started\n");
    if facts.changes.is_empty() {
        out.push_str("(no changes)\n");
    } else {
        let shown = &facts.changes[..facts.changes.len().min(MAX_FILES)];
        out.push_str("```\n");
        out.push_str(&diffstat(shown));
        if facts.changes.len() > MAX_FILES {
            let _ = write!(
                out,
                "\n(and {} more files)",
                facts.changes.len() - MAX_FILES
            );
        }
        out.push_str("\n```\n");
    }

    if let Some(message) = written(facts.last_message.as_deref()) {
        out.push_str("\n## Last message of the previous session\n");
        for line in truncate(message, MAX_LAST_MESSAGE).lines() {
            let _ = writeln!(out, "> {line}");
        }
    }

    out.push_str("\n## How to continue\n");
    out.push_str(
        "- Read the files listed above before changing them; they hold the work so far.\n",
    );
    out.push_str("- Pick up at the first unfinished item; do not start the phase over.\n");
    let _ = writeln!(
        out,
        "- Log each finished step with `debussy progress --phase {} \"<step>\"`.",
        facts.phase_id
    );
    let _ = writeln!(
        out,
        "- When the phase is done, run `debussy done --phase {} --status completed`.",
        facts.phase_id
    );
    out
}

/// The prompt of a restarted session: the checkpoint, a line `---`, the original prompt.
#[must_use]
pub fn prompt_with_checkpoint(checkpoint: &str, original_prompt: &str) -> String {
    format!("{}\n\n---\n\n{original_prompt}", checkpoint.trim_end())
}

/// The original prompt of a session told `prompt`, whose checkpoint was `checkpoint`
/// (none: the prompt is the original), as [`prompt_with_checkpoint`] put them together.
#[must_use]
pub fn original_prompt<'a>(prompt: &'a str, checkpoint: Option<&str>) -> Option<&'a str> {
    match checkpoint {
        None => Some(prompt),
        Some(checkpoint) => prompt
            .strip_prefix(checkpoint.trim_end())
            .and_then(|rest| rest.strip_prefix("\n\n---\n\n")),
    }
}

fn short(commit: &str) -> &str {
    commit.get(..12).unwrap_or(commit)
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Keep the first `max` characters: a handoff leads with its goal and what is done.
fn head(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}

/// Keep the last `max` characters: the end of a message says where the work stopped.
fn truncate(text: &str, max: usize) -> String {
    let count = text.chars().count();
    if count <= max {
        return text.to_owned();
    }
    let tail: String = text.chars().skip(count - max).collect();
    format!("…{tail}")
}

/// `text` trimmed, when there is some.
fn written(text: Option<&str>) -> Option<&str> {
    text.map(str::trim).filter(|text| !text.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::ChangeKind;

    fn facts() -> CheckpointFacts {
        CheckpointFacts {
            phase_id: "2".into(),
            phase_title: "Build the API".into(),
            restart_number: 1,
            max_restarts: 3,
            stop_reason: "context at 85.2% of 200,000 tokens".into(),
            commit: Some("0123456789abcdef0123".into()),
            progress: vec!["created the router".into(), "added  the\n handlers".into()],
            todos: vec![
                Todo {
                    content: "Router".into(),
                    status: TodoStatus::Completed,
                },
                Todo {
                    content: "Handlers".into(),
                    status: TodoStatus::InProgress,
                },
                Todo {
                    content: "Tests".into(),
                    status: TodoStatus::Pending,
                },
            ],
            changes: vec![
                FileChange {
                    path: "src/api.rs".into(),
                    kind: ChangeKind::Added,
                    insertions: 40,
                    deletions: 0,
                },
                FileChange {
                    path: "src/main.rs".into(),
                    kind: ChangeKind::Modified,
                    insertions: 3,
                    deletions: 1,
                },
            ],
            last_message: Some("Now writing the handlers for /tasks.".into()),
            handoff: None,
            why: Continuation::ContextStop,
            cut_short: None,
        }
    }

    #[test]
    fn renders_everything_known() {
        insta::assert_snapshot!(render(&facts()));
    }

    #[test]
    fn renders_a_bare_checkpoint() {
        let bare = CheckpointFacts {
            phase_id: "1".into(),
            phase_title: "Setup".into(),
            restart_number: 2,
            max_restarts: 2,
            stop_reason: "compact boundary".into(),
            ..CheckpointFacts::default()
        };
        insta::assert_snapshot!(render(&bare));
    }

    #[test]
    fn names_the_tool_call_a_stop_cut_short() {
        let text = render(&CheckpointFacts {
            cut_short: Some("Bash: sleep 100 && touch done".into()),
            ..facts()
        });
        assert!(
            text.contains("The stop interrupted a tool call that ran past its grace: `Bash: sleep 100 && touch done`."),
            "{text}"
        );
    }

    #[test]
    fn a_continuation_after_a_usage_limit_says_so() {
        let text = render(&CheckpointFacts {
            why: Continuation::UsageLimit,
            stop_reason: "“You've hit your 5-hour limit”".into(),
            ..facts()
        });
        assert!(
            text.starts_with("# Checkpoint: phase 2 (Build the API), after a usage limit\n"),
            "{text}"
        );
        assert!(text.contains("the limit has reset since"), "{text}");
        assert!(!text.contains("context window filled"), "{text}");
        let offline = render(&CheckpointFacts {
            why: Continuation::Offline,
            stop_reason: "“cannot reach the API: fetch failed”".into(),
            ..facts()
        });
        assert!(
            offline.starts_with(
                "# Checkpoint: phase 2 (Build the API), after the API could not be reached\n\n\
                 You are continuing phase 2 in a fresh session. The previous session lost its \
                 connection to the API part way (“cannot reach the API: fetch failed”)"
            ),
            "{offline}"
        );
    }

    #[test]
    fn renders_the_agents_handoff_first_with_its_headings_nested() {
        let with_handoff = CheckpointFacts {
            handoff: Some(
                "## Goal\nA cart API.\n\n## Half done\n`src/api.rs`: `delete_item` lacks its test.\n"
                    .into(),
            ),
            ..facts()
        };
        let text = render(&with_handoff);
        let handoff = text
            .find("## Handoff from the previous session")
            .expect("section");
        assert!(handoff < text.find("## Progress reported so far").expect("progress"));
        assert!(text.contains("\n### Half done\n"), "{text}");
        insta::assert_snapshot!(text);
    }

    #[test]
    fn is_deterministic() {
        assert_eq!(render(&facts()), render(&facts()));
    }

    #[test]
    fn long_file_lists_and_messages_are_bounded() {
        let mut many = facts();
        many.changes = (0..250)
            .map(|i| FileChange {
                path: format!("f{i}.txt"),
                kind: ChangeKind::Added,
                insertions: 1,
                deletions: 0,
            })
            .collect();
        many.last_message = Some(format!("{}THE END", "x".repeat(10_000)));
        let text = render(&many);
        assert!(text.contains("(and 150 more files)"));
        assert!(!text.contains("f200.txt"));
        assert!(text.contains("THE END"), "the end of the message is kept");
        assert!(text.len() < 12_000);
    }

    #[test]
    fn many_long_progress_steps_and_todos_are_bounded() {
        let mut many = facts();
        many.progress = (0..200)
            .map(|i| format!("step {i}: {}", "p".repeat(2_000)))
            .collect();
        many.todos = (0..300)
            .map(|i| Todo {
                content: format!("todo {i}: {}", "t".repeat(2_000)),
                status: TodoStatus::Pending,
            })
            .collect();
        let text = render(&many);
        assert!(text.contains("(150 earlier steps not shown)"), "{text}");
        assert!(!text.contains("step 149:") && text.contains("step 199:"));
        assert!(text.contains("(and 200 more todos)"), "{text}");
        assert!(text.contains("todo 99:") && !text.contains("todo 100:"));
        assert!(text.len() < 60_000, "{} bytes", text.len());
    }

    #[test]
    fn restarted_prompt_is_checkpoint_then_rule_then_original() {
        let prompt = prompt_with_checkpoint("# Checkpoint\n\n", "Do phase 2.");
        assert_eq!(prompt, "# Checkpoint\n\n---\n\nDo phase 2.");
    }

    #[test]
    fn the_original_prompt_is_read_back_from_a_restarted_sessions_prompt() {
        let told = prompt_with_checkpoint("# Checkpoint\n\nfiles\n", "Fix these:\n---\n1.");
        assert_eq!(
            original_prompt(&told, Some("# Checkpoint\n\nfiles\n")),
            Some("Fix these:\n---\n1.")
        );
        assert_eq!(original_prompt("Phase 1", None), Some("Phase 1"));
        assert_eq!(original_prompt("Phase 1", Some("# Other")), None);
    }
}
