//! Short renderings for narrow rows: a tool call as `Read src/main.rs` or
//! `Bash cargo test…`, text cut to a display width, elapsed times as `03:07`.
//! Pure functions; widths are terminal columns (wide characters count twice).

use std::path::Path;
use std::time::Duration;

use serde_json::Value;
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

/// Longest command or argument summary kept in a compact tool call, in columns.
const SUMMARY_WIDTH: usize = 120;

/// `text` on one line: line breaks and runs of whitespace become single spaces.
pub(crate) fn one_line(text: &str) -> String {
    let mut out = String::with_capacity(text.len().min(512));
    for word in text.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

/// At most `width` columns of `text`, ending in `…` when cut.
pub(crate) fn cut(text: &str, width: usize) -> String {
    if text.width() <= width {
        return text.to_owned();
    }
    if width == 0 {
        return String::new();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in text.chars() {
        let w = c.width().unwrap_or(0);
        if used + w > width - 1 {
            break;
        }
        used += w;
        out.push(c);
    }
    out.push('…');
    out
}

/// Split `text` into rows: the first at most `first` columns wide, the rest at most
/// `rest` columns. Breaks at characters, not words: tool inputs are often one long token.
pub(crate) fn wrap(text: &str, first: usize, rest: usize) -> Vec<String> {
    let mut rows = Vec::new();
    let mut row = String::new();
    let mut used = 0;
    let mut limit = first.max(1);
    for c in text.chars() {
        if c == '\n' {
            rows.push(std::mem::take(&mut row));
            used = 0;
            limit = rest.max(1);
            continue;
        }
        let w = c.width().unwrap_or(0);
        if used + w > limit && used > 0 {
            rows.push(std::mem::take(&mut row));
            used = 0;
            limit = rest.max(1);
        }
        row.push(c);
        used += w;
    }
    if !row.is_empty() || rows.is_empty() {
        rows.push(row);
    }
    rows
}

/// Split prose into rows as [`wrap`] does, but between words: a row ends at the last
/// space that fits, and only a word longer than a whole row is broken inside.
pub(crate) fn wrap_words(text: &str, first: usize, rest: usize) -> Vec<String> {
    let mut rows: Vec<String> = Vec::new();
    let mut row = String::new();
    let mut used = 0;
    let mut limit = first.max(1);
    for line in text.split('\n') {
        for word in line.split(' ').filter(|word| !word.is_empty()) {
            let w = word.width();
            let gap = usize::from(used > 0);
            if used + gap + w <= limit {
                if gap == 1 {
                    row.push(' ');
                }
                row.push_str(word);
                used += gap + w;
                continue;
            }
            if used > 0 {
                rows.push(std::mem::take(&mut row));
                limit = rest.max(1);
            }
            if w <= limit {
                row.push_str(word);
                used = w;
                continue;
            }
            // A word wider than a row: break it by characters.
            let mut pieces = wrap(word, limit, rest.max(1));
            let last = pieces.pop().unwrap_or_default();
            rows.extend(pieces);
            used = last.width();
            row = last;
            limit = rest.max(1);
        }
        rows.push(std::mem::take(&mut row));
        used = 0;
        limit = rest.max(1);
    }
    if rows.len() > 1 && rows.last().is_some_and(String::is_empty) {
        rows.pop();
    }
    rows
}

/// `mm:ss`, or `h:mm:ss` from an hour on.
pub(crate) fn clock(elapsed: Duration) -> String {
    let s = elapsed.as_secs();
    if s >= 3600 {
        format!("{}:{:02}:{:02}", s / 3600, (s % 3600) / 60, s % 60)
    } else {
        format!("{:02}:{:02}", s / 60, s % 60)
    }
}

/// A tool call as a name and a short summary of its input: `("Read", "src/main.rs")`,
/// `("Bash", "cargo test --all")`. Paths under `root` are shown relative to it.
pub(crate) fn tool_call(name: &str, input: &Value, root: Option<&Path>) -> (String, String) {
    let text = |key: &str| input.get(key).and_then(Value::as_str);
    let path = |key: &str| text(key).map(|p| relative(p, root));
    let summary = match name {
        "Read" | "Write" | "Edit" | "MultiEdit" => path("file_path"),
        "NotebookEdit" | "NotebookRead" => path("notebook_path"),
        "LS" => path("path"),
        "Bash" => text("command").map(one_line),
        "BashOutput" | "KillShell" | "KillBash" => text("bash_id")
            .or_else(|| text("shell_id"))
            .map(str::to_owned),
        "Grep" | "Glob" => text("pattern").map(|pattern| match path("path") {
            Some(dir) => format!("{pattern} in {dir}"),
            None => pattern.to_owned(),
        }),
        "WebFetch" => text("url").map(str::to_owned),
        "WebSearch" => text("query").map(str::to_owned),
        "Task" | "Agent" => {
            let description = text("description").unwrap_or_default();
            match text("subagent_type") {
                Some(kind) if description.is_empty() => Some(kind.to_owned()),
                Some(kind) => Some(format!("{kind}: {description}")),
                None => Some(description.to_owned()),
            }
        }
        "TodoWrite" => input.get("todos").and_then(Value::as_array).map(|todos| {
            let done = todos
                .iter()
                .filter(|t| t.get("status").and_then(Value::as_str) == Some("completed"))
                .count();
            format!("{} todos, {done} done", todos.len())
        }),
        _ => None,
    };
    let (name, summary) = match (name.strip_prefix("mcp__"), summary) {
        (Some(rest), None) => {
            let shown = rest.replacen("__", ":", 1);
            (shown, arguments(input))
        }
        (_, Some(summary)) => (name.to_owned(), summary),
        (None, None) => (name.to_owned(), arguments(input)),
    };
    (name, cut(&summary, SUMMARY_WIDTH))
}

/// The input in full, for verbose mode: compact JSON (it wraps better than pretty).
pub(crate) fn full_input(input: &Value) -> String {
    input.to_string()
}

/// An object's arguments as compact JSON, or nothing when there are none.
fn arguments(input: &Value) -> String {
    match input {
        Value::Object(map) if map.is_empty() => String::new(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

fn relative(path: &str, root: Option<&Path>) -> String {
    root.and_then(|root| Path::new(path).strip_prefix(root).ok())
        .filter(|rest| !rest.as_os_str().is_empty())
        .map_or_else(|| path.to_owned(), |rest| rest.display().to_string())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn tool_calls_read_compactly() {
        let root = Path::new("/work/project");
        let cases = [
            (
                "Read",
                json!({"file_path": "/work/project/src/main.rs"}),
                "Read",
                "src/main.rs",
            ),
            (
                "Edit",
                json!({"file_path": "/elsewhere/x.rs", "old_string": "a", "new_string": "b"}),
                "Edit",
                "/elsewhere/x.rs",
            ),
            (
                "Bash",
                json!({"command": "cargo test\n  --all", "description": "run"}),
                "Bash",
                "cargo test --all",
            ),
            (
                "Grep",
                json!({"pattern": "fn main", "path": "/work/project/src"}),
                "Grep",
                "fn main in src",
            ),
            (
                "Task",
                json!({"description": "Review", "subagent_type": "general-purpose", "prompt": "…"}),
                "Task",
                "general-purpose: Review",
            ),
            (
                "TodoWrite",
                json!({"todos": [{"status": "completed"}, {"status": "pending"}]}),
                "TodoWrite",
                "2 todos, 1 done",
            ),
            (
                "mcp__tracker__add_task",
                json!({"title": "x"}),
                "tracker:add_task",
                r#"{"title":"x"}"#,
            ),
            ("Custom", json!({}), "Custom", ""),
        ];
        for (name, input, want_name, want_summary) in cases {
            let (shown, summary) = tool_call(name, &input, Some(root));
            assert_eq!(
                (shown.as_str(), summary.as_str()),
                (want_name, want_summary)
            );
        }
    }

    #[test]
    fn long_commands_are_cut_with_an_ellipsis() {
        let (_, summary) = tool_call("Bash", &json!({"command": "x".repeat(500)}), None);
        assert_eq!(summary.chars().count(), SUMMARY_WIDTH);
        assert!(summary.ends_with('…'));
    }

    #[test]
    fn cutting_counts_columns() {
        assert_eq!(cut("hello", 5), "hello");
        assert_eq!(cut("hello", 4), "hel…");
        assert_eq!(cut("日本語", 4), "日…");
        assert_eq!(cut("abc", 0), "");
    }

    #[test]
    fn prose_wraps_between_words() {
        assert_eq!(
            wrap_words("restart at 86.0%: context reached the threshold", 20, 14),
            ["restart at 86.0%:", "context", "reached the", "threshold"]
        );
        assert_eq!(
            wrap_words("a supercalifragilistic b", 6, 6),
            ["a", "superc", "alifra", "gilist", "ic b"]
        );
        assert_eq!(wrap_words("", 10, 10), [""]);
        assert_eq!(wrap_words("one\ntwo", 10, 10), ["one", "two"]);
    }

    #[test]
    fn wrapping_breaks_at_the_width() {
        assert_eq!(wrap("abcdefgh", 3, 4), ["abc", "defg", "h"]);
        assert_eq!(wrap("", 3, 4), [""]);
        assert_eq!(wrap("ab\ncd", 10, 10), ["ab", "cd"]);
    }

    #[test]
    fn clocks() {
        assert_eq!(clock(Duration::from_secs(65)), "01:05");
        assert_eq!(clock(Duration::from_secs(3725)), "1:02:05");
    }
}
