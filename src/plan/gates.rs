//! `## Gates` bullets: `name: criterion`, with the bullet's inline code span as the
//! command to run.
//!
//! All of these are read the same way (the forms found in real plans):
//!
//! ~~~markdown
//! - tests: `cargo test --all` passes
//! - **lint**: 0 errors (command: `uv run ruff check .`)
//! - tsc: `command: pnpm exec tsc --noEmit` - 0 errors
//! - command: `npm test` ➜ all tests pass      (named after its command)
//! - ruff: 0 errors                            (command from the `gates` config map)
//! - lint: 0 errors                            (command from the code block below)
//!   ```bash
//!   command: npm run lint
//!   ```
//! ~~~

use std::path::Path;

use super::markdown::{Block, Inlines, Section, Span};
use super::model::{Gate, Location};

/// The gates of every `## Gates` section, in order.
pub(crate) fn parse_gates(sections: &[Section<'_>], path: &Path) -> Vec<Gate> {
    let mut gates = Vec::new();
    for section in sections {
        for block in section.blocks {
            if let Block::Item {
                depth: 0,
                content,
                code,
                line,
                ..
            } = block
                && let Some(gate) = parse_gate(content, code, Location::line(path, *line))
            {
                gates.push(gate);
            }
        }
    }
    gates
}

/// One gate bullet; `None` for an empty bullet. The command is the bullet's first inline
/// code span, else the first code block inside the bullet.
pub(crate) fn parse_gate(
    content: &Inlines,
    code_blocks: &[String],
    location: Location,
) -> Option<Gate> {
    let (name, rest) = split_name(content);
    let command = rest
        .0
        .iter()
        .find_map(|span| match span {
            Span::Code(code) => Some(strip_command_prefix(code).trim().to_owned()),
            _ => None,
        })
        .filter(|command| !command.is_empty())
        .or_else(|| {
            code_blocks
                .first()
                .map(|block| strip_command_prefix(block).trim().to_owned())
                .filter(|command| !command.is_empty())
        });
    let criterion = criterion(&rest);
    let name = match (name, &command) {
        (Some(name), _) => name,
        (None, Some(command)) => command.clone(),
        (None, None) if !criterion.is_empty() => {
            return Some(Gate {
                name: criterion,
                criterion: String::new(),
                command: None,
                location,
            });
        }
        (None, None) => return None,
    };
    Some(Gate {
        name,
        criterion,
        command,
        location,
    })
}

/// Split `name: rest` at the first colon that comes before any code span or link. A
/// bullet whose name is literally `command` (or that has no such colon) has no name.
fn split_name(content: &Inlines) -> (Option<String>, Inlines) {
    let mut name = String::new();
    for (index, span) in content.0.iter().enumerate() {
        let Span::Text(text) = span else {
            break;
        };
        if let Some((head, tail)) = text.split_once(':') {
            name.push_str(head);
            let name = clean_name(&name);
            let mut rest = vec![Span::Text(tail.to_owned())];
            rest.extend(content.0[index + 1..].iter().cloned());
            let rest = Inlines(rest);
            return match name {
                Some(name)
                    if !name.eq_ignore_ascii_case("command")
                        && !name.eq_ignore_ascii_case("cmd") =>
                {
                    (Some(name), rest)
                }
                _ => (None, rest),
            };
        }
        name.push_str(text);
    }
    (None, content.clone())
}

fn clean_name(name: &str) -> Option<String> {
    let name = name
        .trim()
        .trim_matches(|c: char| matches!(c, '*' | '_' | '`'))
        .trim();
    (!name.is_empty()).then(|| name.to_owned())
}

fn strip_command_prefix(code: &str) -> &str {
    let trimmed = code.trim_start();
    match trimmed.get(..8) {
        Some(head) if head.eq_ignore_ascii_case("command:") => &trimmed[8..],
        _ => trimmed,
    }
}

/// The bullet's words without the command: `0 errors (command: `x`)` → `0 errors`.
fn criterion(rest: &Inlines) -> String {
    let mut text = String::new();
    let mut command_seen = false;
    for span in &rest.0 {
        match span {
            Span::Text(t) | Span::Link { text: t, .. } => text.push_str(t),
            Span::Code(code) if command_seen => {
                text.push('`');
                text.push_str(code);
                text.push('`');
            }
            Span::Code(_) => command_seen = true,
        }
    }
    let mut text = text
        .replace("(command: )", "")
        .replace("(command:)", "")
        .replace("()", "");
    let separators =
        |c: char| c.is_whitespace() || matches!(c, '-' | '–' | '—' | '➜' | '→' | ':' | ',');
    loop {
        let trimmed = text.trim_matches(separators);
        let stripped = match trimmed.get(..8) {
            Some(head) if head.eq_ignore_ascii_case("command:") => &trimmed[8..],
            _ => trimmed,
        };
        if stripped.len() == text.len() {
            return text;
        }
        text = stripped.to_owned();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::markdown::Document;

    fn gates(markdown: &str) -> Vec<(String, String, Option<String>, usize)> {
        let doc = Document::parse(markdown);
        let sections = doc.sections(|h| h.starts_with("gates"));
        parse_gates(&sections, Path::new("p.md"))
            .into_iter()
            .map(|g| (g.name, g.criterion, g.command, g.location.line.unwrap_or(0)))
            .collect()
    }

    fn gate(
        name: &str,
        criterion: &str,
        command: Option<&str>,
        line: usize,
    ) -> (String, String, Option<String>, usize) {
        (
            name.to_owned(),
            criterion.to_owned(),
            command.map(str::to_owned),
            line,
        )
    }

    #[test]
    fn every_bullet_form_found_in_real_plans() {
        let found = gates(
            "## Gates (must pass before completion)\n\n**ALL gates are BLOCKING.**\n\n\
             - ruff: 0 errors\n\
             - tests: `cargo test --all` passes\n\
             - **lint**: 0 errors (command: `uv run ruff check backend/`)\n\
             - tsc: `command: cd frontend && pnpm exec tsc --noEmit` - 0 errors\n\
             - command: `uv run pyright backend/` ➜ 0 errors\n\
             - lint: `npm run lint` returns 0 errors\n\
             - backend-tests: `uv run pytest tests/ -v` → All tests pass, coverage ≥ 80%\n\
             - `cargo fmt --check`\n\
             - pyright\n\n## Tasks\n- [ ] 1.1: not a gate\n",
        );
        assert_eq!(
            found,
            [
                gate("ruff", "0 errors", None, 5),
                gate("tests", "passes", Some("cargo test --all"), 6),
                gate("lint", "0 errors", Some("uv run ruff check backend/"), 7),
                gate(
                    "tsc",
                    "0 errors",
                    Some("cd frontend && pnpm exec tsc --noEmit"),
                    8
                ),
                gate(
                    "uv run pyright backend/",
                    "0 errors",
                    Some("uv run pyright backend/"),
                    9
                ),
                gate("lint", "returns 0 errors", Some("npm run lint"), 10),
                gate(
                    "backend-tests",
                    "All tests pass, coverage ≥ 80%",
                    Some("uv run pytest tests/ -v"),
                    11
                ),
                gate("cargo fmt --check", "", Some("cargo fmt --check"), 12),
                gate("pyright", "", None, 13),
            ]
        );
    }

    #[test]
    fn nested_bullets_and_empty_code_are_not_commands() {
        let found = gates(
            "## Gates\n- security: no high issues\n  - `bandit -r .` is one way\n- tests: `  ` x\n",
        );
        assert_eq!(found[0], gate("security", "no high issues", None, 2));
        assert_eq!(found.len(), 2);
        assert_eq!(found[1].2, None);
    }

    #[test]
    fn a_code_block_inside_the_bullet_is_the_command() {
        let found = gates(
            "## Gates\n- lint: 0 errors\n  ```bash\n  command: npm run lint\n  ```\n- tests: `pytest` passes\n  ```\n  ignored\n  ```\n",
        );
        assert_eq!(
            found,
            [
                gate("lint", "0 errors", Some("npm run lint"), 2),
                gate("tests", "passes", Some("pytest"), 6)
            ]
        );
    }

    #[test]
    fn a_second_code_span_stays_in_the_criterion() {
        let found = gates("## Gates\n- tests: `pytest` passes, see `tests/`\n");
        assert_eq!(
            found[0],
            gate("tests", "passes, see `tests/`", Some("pytest"), 2)
        );
    }

    #[test]
    fn no_gates_section_means_no_gates() {
        assert!(gates("# Phase\n\n- ruff: 0 errors\n").is_empty());
    }
}
