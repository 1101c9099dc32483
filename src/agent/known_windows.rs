//! The context windows debussy knows before an agent reports one: per backend, each model
//! id (or family) with the window and where the figure comes from.
//!
//! The table lets the meter measure a session against the right window from its first
//! request: Claude Code reports a model's window only in its final `result`, so without it
//! a fresh project's first session would be measured against the 200,000-token default
//! (and a 1,000,000-token session stopped at a fifth of its room). The agent's own report
//! still wins over the table once it arrives (see `context::window::resolve`).
//!
//! Claude's entries were measured: Claude Code 2.1.330 run with `--model ID` against the
//! scripted model server, reading the model its `init` line names and
//! `result.modelUsage[model].contextWindow`. Aliases resolve as that version resolves
//! them (`opus` runs `claude-opus-5-5`), and a date suffix (`-20250929`) is ignored.
//! `tests/it/claude_windows.rs` measures every entry again with the pinned CLI (2.1.332
//! reports the same), so a new pin that moves a window fails there.

/// How an entry's name matches a model id (lower case, date suffix removed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Match {
    /// The id itself.
    Exact,
    /// Every id that starts with it.
    Prefix,
}

/// One model (or family) with a known window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KnownWindow {
    /// The id, alias or prefix.
    pub model: &'static str,
    /// How `model` matches.
    pub matching: Match,
    /// The window in tokens.
    pub tokens: u64,
    /// Where the figure comes from.
    pub source: &'static str,
}

const fn exact(model: &'static str, tokens: u64, source: &'static str) -> KnownWindow {
    KnownWindow {
        model,
        matching: Match::Exact,
        tokens,
        source,
    }
}

const fn prefix(model: &'static str, tokens: u64, source: &'static str) -> KnownWindow {
    KnownWindow {
        model,
        matching: Match::Prefix,
        tokens,
        source,
    }
}

/// The window of `[1m]` model variants.
pub const ONE_MILLION: u64 = 1_000_000;

const CLAUDE_CODE: &str = "Claude Code 2.1.330, result.modelUsage contextWindow";
const CLAUDE_ALIAS: &str = "Claude Code 2.1.330 runs the alias as this model (init line)";

/// Claude Code's models and aliases.
pub const CLAUDE: &[KnownWindow] = &[
    exact("opus", ONE_MILLION, CLAUDE_ALIAS),
    exact("sonnet", ONE_MILLION, CLAUDE_ALIAS),
    exact("haiku", ONE_MILLION, CLAUDE_ALIAS),
    exact("default", ONE_MILLION, CLAUDE_ALIAS),
    exact("best", ONE_MILLION, CLAUDE_ALIAS),
    exact("opusplan", ONE_MILLION, CLAUDE_ALIAS),
    exact("claude-opus-5-5", ONE_MILLION, CLAUDE_CODE),
    exact("claude-sonnet-5-5", ONE_MILLION, CLAUDE_CODE),
    exact("claude-haiku-5-5", ONE_MILLION, CLAUDE_CODE),
    exact("claude-mythos-5-2", ONE_MILLION, CLAUDE_CODE),
    exact("claude-opus-5", ONE_MILLION, CLAUDE_CODE),
    exact("claude-sonnet-5", ONE_MILLION, CLAUDE_CODE),
    exact("claude-opus-4-7", ONE_MILLION, CLAUDE_CODE),
    exact(
        "claude-opus-4-1",
        ONE_MILLION,
        "Claude Code 2.1.330 runs it as claude-opus-5-5 (init line)",
    ),
    exact("claude-opus-4-6", 200_000, CLAUDE_CODE),
    exact("claude-opus-4-5", 200_000, CLAUDE_CODE),
    exact("claude-opus-4", 200_000, CLAUDE_CODE),
    exact("claude-sonnet-4-6", 200_000, CLAUDE_CODE),
    exact("claude-sonnet-4-5", 200_000, CLAUDE_CODE),
    exact("claude-sonnet-4", 200_000, CLAUDE_CODE),
    exact("claude-haiku-4-5", 200_000, CLAUDE_CODE),
    exact("claude-3-7-sonnet", 200_000, CLAUDE_CODE),
    exact("claude-3-5-haiku", 200_000, CLAUDE_CODE),
];

/// The Codex CLI's models.
pub const CODEX: &[KnownWindow] = &[
    prefix(
        "gpt-5",
        272_000,
        "OpenAI's GPT-5 family; Codex 0.169.0 reports 95 % of it (258,400) as model_context_window in its rollout",
    ),
    prefix("gpt-4.1", 1_047_576, "OpenAI's model page for GPT-4.1"),
    prefix("o3", 200_000, "OpenAI's model page for o3"),
    prefix("o4-mini", 200_000, "OpenAI's model page for o4-mini"),
];

const GEMINI_CLI: &str = "Gemini CLI 0.61.0, tokenLimits.ts";

/// The Gemini CLI's models and aliases.
pub const GEMINI: &[KnownWindow] = &[
    prefix("gemma-4", 256_000, GEMINI_CLI),
    prefix("gemini-", 1_048_576, GEMINI_CLI),
    exact("pro", 1_048_576, GEMINI_CLI),
    exact("flash", 1_048_576, GEMINI_CLI),
    exact("flash-lite", 1_048_576, GEMINI_CLI),
    exact("auto", 1_048_576, GEMINI_CLI),
];

/// Every backend's table.
pub const TABLES: &[(&str, &[KnownWindow])] =
    &[("claude", CLAUDE), ("codex", CODEX), ("gemini", GEMINI)];

/// The entry for `model` in any backend's table; see [`lookup_for`].
#[must_use]
pub fn lookup(model: &str) -> Option<KnownWindow> {
    lookup_for(None, model)
}

/// The entry for `model` in the table of the backend named `agent` (`claude`, `codex`,
/// `gemini`; `None`: every backend's; another backend, such as the sim agent, has none):
/// `[1m]` variants of Claude's models are 1,000,000 tokens; else an exact entry, else the
/// longest matching prefix. Case and a trailing date (`-20250929`) do not matter.
#[must_use]
pub fn lookup_for(agent: Option<&str>, model: &str) -> Option<KnownWindow> {
    let tables: &[(&str, &[KnownWindow])] = match agent {
        None => TABLES,
        Some(name) => match TABLES.iter().position(|(backend, _)| *backend == name) {
            Some(at) => &TABLES[at..=at],
            None => return None,
        },
    };
    let lower = model.trim().to_ascii_lowercase();
    if lower.contains("[1m]") && tables.iter().any(|(backend, _)| *backend == "claude") {
        return Some(KnownWindow {
            model: "[1m]",
            matching: Match::Prefix,
            tokens: ONE_MILLION,
            source: "the [1m] variant of a Claude model",
        });
    }
    let id = without_date(&lower);
    let entries = || tables.iter().flat_map(|(_, table)| table.iter());
    entries()
        .find(|entry| entry.matching == Match::Exact && entry.model == id)
        .or_else(|| {
            entries()
                .filter(|entry| entry.matching == Match::Prefix && id.starts_with(entry.model))
                .max_by_key(|entry| entry.model.len())
        })
        .copied()
}

/// `claude-sonnet-4-5-20250929` without its `-20250929`.
fn without_date(id: &str) -> &str {
    match id.rsplit_once('-') {
        Some((head, tail)) if tail.len() == 8 && tail.bytes().all(|b| b.is_ascii_digit()) => head,
        _ => id,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(model: &str) -> Option<u64> {
        lookup(model).map(|entry| entry.tokens)
    }

    #[test]
    fn claude_aliases_resolve_as_the_pinned_cli_runs_them() {
        assert_eq!(tokens("opus"), Some(ONE_MILLION));
        assert_eq!(tokens("claude-opus-5-5"), Some(ONE_MILLION));
        assert_eq!(tokens("claude-sonnet-4-5"), Some(200_000));
        assert_eq!(tokens("claude-haiku-4-5-20251001"), Some(200_000));
        assert_eq!(tokens("Claude-Sonnet-4-5[1M]"), Some(ONE_MILLION));
        assert_eq!(
            tokens("claude-opus-4"),
            Some(200_000),
            "not a prefix of 4-7"
        );
        assert_eq!(tokens("claude-unknown"), None);
    }

    #[test]
    fn codex_and_gemini_families_match_by_prefix() {
        assert_eq!(tokens("gpt-5.5"), Some(272_000));
        assert_eq!(tokens("gpt-5-codex"), Some(272_000));
        assert_eq!(tokens("gemini-2.5-pro"), Some(1_048_576));
        assert_eq!(tokens("gemma-4-31b-it"), Some(256_000));
        assert_eq!(tokens("flash"), Some(1_048_576));
    }

    #[test]
    fn a_backend_reads_its_own_table_only() {
        assert_eq!(
            lookup_for(Some("claude"), "opus").map(|e| e.tokens),
            Some(ONE_MILLION)
        );
        assert_eq!(lookup_for(Some("codex"), "opus"), None);
        assert_eq!(
            lookup_for(Some("sim"), "opus"),
            None,
            "the sim agent has no table"
        );
        assert_eq!(lookup_for(Some("sim"), "x[1m]"), None);
        assert_eq!(
            lookup_for(Some("gemini"), "gemini-2.5-pro").map(|e| e.tokens),
            Some(1_048_576)
        );
    }

    #[test]
    fn every_entry_names_its_source_and_a_window() {
        for (backend, table) in TABLES {
            for entry in *table {
                assert!(!entry.source.is_empty(), "{backend} {}", entry.model);
                assert!(entry.tokens >= 100_000, "{backend} {}", entry.model);
                assert_eq!(entry.model, entry.model.to_ascii_lowercase());
            }
        }
    }
}
