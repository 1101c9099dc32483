//! Agents: which ones a phase requires, and which ones exist.
//!
//! A phase requires an agent with an `AGENT:name` marker (usually
//! `- [ ] **AGENT:doc-sync-manager** - sync tasks`) or with a row of an "Agents to Use"
//! table marked REQUIRED. An agent exists when Claude Code ships it ([`BUILTIN_AGENTS`])
//! or when an agent file defines it in one of the searched `.claude/agents/` directories
//! (the project root's, the plan directory's, and the user's). Finding the required
//! agents is pure; [`AgentCatalog::discover`] reads the directories.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::markdown::{Block, Document, Inlines, Span};
use super::model::{Location, RequiredAgent};

/// The subagents Claude Code provides without any agent file.
pub const BUILTIN_AGENTS: &[&str] = &[
    "general-purpose",
    "Explore",
    "Plan",
    "statusline-setup",
    "output-style-setup",
    "claude-code-guide",
];

/// How deep agent directories are searched (Claude Code allows subfolders).
const MAX_DEPTH: usize = 3;
/// Agent files larger than this are not read for a `name:` (the file name still counts).
const MAX_AGENT_FILE: u64 = 1024 * 1024;

/// The agents a phase file requires, deduplicated, in order of first mention.
pub(crate) fn required_agents(doc: &Document, path: &Path) -> Vec<RequiredAgent> {
    let mut mentions: Vec<(usize, String)> = Vec::new();
    for block in &doc.blocks {
        match block {
            Block::Heading { content, line, .. } | Block::Item { content, line, .. } => {
                mentions.extend(markers(content).map(|name| (*line, name)));
            }
            Block::Paragraph(lines) => {
                for l in lines {
                    mentions.extend(markers(&l.content).map(|name| (l.line, name)));
                }
            }
            Block::Table { rows, .. } => {
                for row in rows {
                    for cell in &row.cells {
                        mentions.extend(markers(cell).map(|name| (row.line, name)));
                    }
                }
            }
        }
    }
    for section in doc.sections(|heading| heading.contains("agent")) {
        for block in section.blocks {
            if let Block::Table { header, rows, .. } = block {
                mentions.extend(required_rows(header, rows));
            }
        }
    }
    mentions.sort_by_key(|(line, _)| *line);
    let mut out: Vec<RequiredAgent> = Vec::new();
    for (line, name) in mentions {
        if !out.iter().any(|agent| agent.name == name) {
            out.push(RequiredAgent {
                name,
                location: Location::line(path, line),
            });
        }
    }
    out
}

/// `AGENT:name` markers in inline content (text and code spans). `AGENT` must be upper
/// case and start a word, so `SUBAGENT:` and prose such as "agent: the validator" are
/// not markers.
fn markers(content: &Inlines) -> impl Iterator<Item = String> + '_ {
    content.0.iter().flat_map(|span| {
        let text = match span {
            Span::Text(text) | Span::Code(text) | Span::Link { text, .. } => text.as_str(),
        };
        let mut names = Vec::new();
        for (at, _) in text.match_indices("AGENT:") {
            let starts_word = text[..at]
                .chars()
                .next_back()
                .is_none_or(|c| !c.is_alphanumeric() && c != '_' && c != '-');
            if !starts_word {
                continue;
            }
            let name: String = text[at + 6..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
                .collect();
            let name = name.trim_end_matches('.');
            if !name.is_empty() {
                names.push(name.to_owned());
            }
        }
        names
    })
}

/// Rows of an "Agents to Use" table that are marked REQUIRED, as `(line, name)`.
fn required_rows(header: &[Inlines], rows: &[super::markdown::Row]) -> Vec<(usize, String)> {
    let Some(agent_column) = header.iter().position(|cell| {
        let name = cell.plain().trim().to_lowercase();
        matches!(
            name.as_str(),
            "agent" | "agents" | "agent name" | "subagent" | "name"
        )
    }) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for row in rows {
        let required = row
            .cells
            .iter()
            .enumerate()
            .any(|(column, cell)| column != agent_column && says_required(&cell.plain()));
        if !required {
            continue;
        }
        let Some(cell) = row.cells.get(agent_column) else {
            continue;
        };
        let codes: Vec<&str> = cell.code_spans().collect();
        let names: Vec<String> = if codes.is_empty() {
            vec![cell.plain()]
        } else {
            codes.into_iter().map(str::to_owned).collect()
        };
        for name in names {
            let name = name
                .trim()
                .trim_matches(|c: char| matches!(c, '`' | '*' | '_'))
                .trim();
            if !name.is_empty() && !name.contains(char::is_whitespace) {
                out.push((row.line, name.to_owned()));
            }
        }
    }
    out
}

/// Whether a cell marks its row as required: the word "required" in any case, unless
/// it reads "not required".
fn says_required(text: &str) -> bool {
    let lower = text.to_lowercase();
    lower.match_indices("required").any(|(at, _)| {
        let before = lower[..at].trim_end();
        let whole_word = lower[..at]
            .chars()
            .next_back()
            .is_none_or(|c| !c.is_alphanumeric())
            && lower[at + 8..]
                .chars()
                .next()
                .is_none_or(|c| !c.is_alphanumeric());
        whole_word && !before.ends_with("not")
    })
}

/// Where an available agent comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentSource {
    /// Shipped with Claude Code.
    Builtin,
    /// Defined by this agent file.
    File(PathBuf),
}

/// The agents available to a run: Claude Code's built-ins and the agent files found in
/// the searched directories.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AgentCatalog {
    dirs: Vec<PathBuf>,
    files: BTreeMap<String, PathBuf>,
}

impl AgentCatalog {
    /// Search `dirs` (missing directories are skipped) for agent files: every `*.md`
    /// file defines the agent named by its file stem and by its front matter's `name:`.
    #[must_use]
    pub fn discover(dirs: Vec<PathBuf>) -> Self {
        let mut files = BTreeMap::new();
        for dir in &dirs {
            scan(dir, 0, &mut files);
        }
        AgentCatalog { dirs, files }
    }

    /// A catalog with the given agent files, without reading anything (for tests and
    /// callers that already know the agents).
    #[must_use]
    pub fn from_files(
        dirs: Vec<PathBuf>,
        files: impl IntoIterator<Item = (String, PathBuf)>,
    ) -> Self {
        AgentCatalog {
            dirs,
            files: files.into_iter().collect(),
        }
    }

    /// Where `name` comes from, or `None` when it is neither built in nor defined.
    #[must_use]
    pub fn find(&self, name: &str) -> Option<AgentSource> {
        if BUILTIN_AGENTS.iter().any(|b| b.eq_ignore_ascii_case(name)) {
            return Some(AgentSource::Builtin);
        }
        self.files
            .get(name)
            .map(|path| AgentSource::File(path.clone()))
    }

    /// The directories searched, in order.
    #[must_use]
    pub fn dirs(&self) -> &[PathBuf] {
        &self.dirs
    }
}

/// The agent directories a run can use: `<project root>/.claude/agents`,
/// `<plan dir>/.claude/agents`, and the user's (`$CLAUDE_CONFIG_DIR/agents`, else
/// `~/.claude/agents`), without duplicates.
#[must_use]
pub fn agent_dirs(project_root: &Path, plan_dir: &Path) -> Vec<PathBuf> {
    let user = std::env::var_os("CLAUDE_CONFIG_DIR")
        .filter(|dir| !dir.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|home| !home.is_empty())
                .map(|home| PathBuf::from(home).join(".claude"))
        })
        .map(|dir| dir.join("agents"));
    let mut dirs: Vec<PathBuf> = Vec::new();
    for dir in [
        Some(project_root.join(".claude").join("agents")),
        Some(plan_dir.join(".claude").join("agents")),
        user,
    ]
    .into_iter()
    .flatten()
    {
        if !dirs.contains(&dir) {
            dirs.push(dir);
        }
    }
    dirs
}

fn scan(dir: &Path, depth: usize, files: &mut BTreeMap<String, PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<PathBuf> = entries.filter_map(Result::ok).map(|e| e.path()).collect();
    paths.sort();
    for path in paths {
        if path.is_dir() {
            if depth < MAX_DEPTH {
                scan(&path, depth + 1, files);
            }
            continue;
        }
        if path.extension().is_none_or(|ext| ext != "md") {
            continue;
        }
        if let Some(stem) = path.file_stem().and_then(|s| s.to_str()) {
            files.entry(stem.to_owned()).or_insert_with(|| path.clone());
        }
        // Only a regular file, and a small one: a FIFO is skipped, never waited on.
        if let Ok(text) = crate::files::read_text_limited(&path, MAX_AGENT_FILE)
            && let Some(name) = front_matter_name(&text)
        {
            files.entry(name).or_insert(path);
        }
    }
}

/// The `name:` of a YAML front matter block (`---` … `---`) at the top of a file.
fn front_matter_name(text: &str) -> Option<String> {
    let mut lines = text.lines();
    if lines.next()?.trim_end() != "---" {
        return None;
    }
    for line in lines {
        let line = line.trim_end();
        if line == "---" {
            return None;
        }
        if let Some(value) = line.strip_prefix("name:") {
            let value = value.trim().trim_matches(|c| c == '"' || c == '\'').trim();
            return (!value.is_empty()).then(|| value.to_owned());
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(markdown: &str) -> Vec<(String, usize)> {
        required_agents(&Document::parse(markdown), Path::new("p.md"))
            .into_iter()
            .map(|a| (a.name, a.location.line.unwrap_or(0)))
            .collect()
    }

    #[test]
    fn markers_and_required_table_rows_deduplicated_in_order() {
        let found = names(
            "## Process Wrapper\n\
             - [ ] **AGENT:doc-sync-manager** - sync tasks\n\
             - [ ] Use `AGENT:code-reviewer` then SUBAGENT:ignored\n\
             - [ ] **AGENT:task-validator** - validation\n\n\
             ## Agents to Use\n\n\
             | When | Agent | Purpose |\n|---|---|---|\n\
             | After | `task-validator` | REQUIRED - validation |\n\
             | Start | `doc-sync-manager` | REQUIRED - documentation |\n\
             | UI | `ux-expert` | Design review |\n\
             | Any | `i18n-expert` | Required: translations |\n\
             | Never | `optional-one` | not required |\n",
        );
        assert_eq!(
            found,
            [
                ("doc-sync-manager".to_owned(), 2),
                ("code-reviewer".to_owned(), 3),
                ("task-validator".to_owned(), 4),
                ("i18n-expert".to_owned(), 13),
            ]
        );
    }

    #[test]
    fn table_names_lose_stray_backticks_and_prose_is_skipped() {
        let found = names(
            "## Agents\n\n| Agent | Need |\n|---|---|\n| task-validator` | REQUIRED |\n| any helper you like | REQUIRED |\n",
        );
        assert_eq!(found, [("task-validator".to_owned(), 5)]);
    }

    #[test]
    fn agent_tables_outside_agent_sections_and_code_blocks_are_ignored() {
        let found = names(
            "## Files\n\n| Agent | Need |\n|---|---|\n| x | REQUIRED |\n\n```\n**AGENT:in-code**\n```\n",
        );
        assert!(found.is_empty(), "{found:?}");
    }

    #[test]
    fn builtins_and_files_are_found() {
        let catalog = AgentCatalog::from_files(
            vec![PathBuf::from("a")],
            [("mine".to_owned(), PathBuf::from("a/mine.md"))],
        );
        assert_eq!(catalog.find("Explore"), Some(AgentSource::Builtin));
        assert_eq!(catalog.find("general-purpose"), Some(AgentSource::Builtin));
        assert_eq!(
            catalog.find("mine"),
            Some(AgentSource::File(PathBuf::from("a/mine.md")))
        );
        assert_eq!(catalog.find("theirs"), None);
        assert_eq!(catalog.dirs(), [PathBuf::from("a")]);
    }

    #[test]
    fn discovery_reads_stems_front_matter_and_subfolders() {
        let temp = tempfile::tempdir().expect("tempdir");
        let dir = temp.path().join("agents");
        std::fs::create_dir_all(dir.join("team")).expect("mkdir");
        std::fs::write(dir.join("plain.md"), "# Plain\n").expect("write");
        std::fs::write(
            dir.join("file-name.md"),
            "---\nname: \"declared\"\ndescription: x\n---\nbody\n",
        )
        .expect("write");
        std::fs::write(dir.join("team").join("nested.md"), "x").expect("write");
        std::fs::write(dir.join("notes.txt"), "x").expect("write");
        let catalog = AgentCatalog::discover(vec![dir.clone(), temp.path().join("missing")]);
        for name in ["plain", "file-name", "declared", "nested"] {
            assert!(catalog.find(name).is_some(), "{name} not found");
        }
        assert_eq!(catalog.find("notes"), None);
    }

    #[test]
    fn front_matter_names() {
        assert_eq!(front_matter_name("---\nname: x\n---\n"), Some("x".into()));
        assert_eq!(front_matter_name("---\ntools: y\n---\nname: z\n"), None);
        assert_eq!(front_matter_name("name: x\n"), None);
        assert_eq!(front_matter_name(""), None);
    }

    #[test]
    fn agent_dirs_cover_project_plan_and_user_without_duplicates() {
        let dirs = agent_dirs(Path::new("/p"), Path::new("/p"));
        assert_eq!(dirs[0], PathBuf::from("/p/.claude/agents"));
        assert_eq!(dirs.iter().filter(|d| **d == dirs[0]).count(), 1);
        let dirs = agent_dirs(Path::new("/p"), Path::new("/p/plans/x"));
        assert_eq!(dirs[1], PathBuf::from("/p/plans/x/.claude/agents"));
    }
}
