//! Every problem of a scenario at once. serde stops at the first error; to report the
//! rest, the smallest part holding that error is set aside and the text parsed again:
//! an unknown key's line, else the turn (replaced by a pause), else the whole script
//! (replaced by an empty one). Lines are blanked, never removed, so later line numbers
//! still match the file; each part is set aside once at most.

use std::path::Path;

use super::{Scenario, ScenarioError};

/// A stand-in for a broken script: valid, and one line long.
const PLACEHOLDER: &str = "- turns: []";

/// A stand-in for a broken turn: a pause of no time.
const TURN_PLACEHOLDER: &str = "- sleep_ms: 0";

impl Scenario {
    /// The most problems [`Scenario::check`] reports: each costs a parse of the whole
    /// file, and a file broken in thousands of places is fixed a few at a time.
    pub const MAX_PROBLEMS: usize = 10;

    /// Parse `text` and report every broken script, not only the first; `path` is only
    /// used in errors. A problem outside `scripts` (YAML syntax, a top-level key, a
    /// broken definition) ends the search, as nothing after it can be trusted, and so
    /// does the [`MAX_PROBLEMS`](Self::MAX_PROBLEMS)th.
    ///
    /// # Errors
    /// Each problem, in file order.
    pub fn check(text: &str, path: &Path) -> Result<Scenario, Vec<ScenarioError>> {
        let items = script_items(text);
        let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
        let mut errors = Vec::new();
        let mut blanked = vec![false; items.len()];
        let mut set_aside: Vec<(usize, usize)> = Vec::new();
        loop {
            let current = lines.join("\n");
            let error = match Scenario::parse(&current, path) {
                Ok(scenario) if errors.is_empty() => return Ok(scenario),
                Ok(_) => return Err(errors),
                Err(error) => error,
            };
            // Errors carry the original text, for their snippets, and the line of the
            // turn that broke a turn's own rules rather than its list's.
            let error = match error {
                // A problem of the whole file (a top-level value its own rules refuse)
                // has no line.
                ScenarioError::Parse { line, .. } if (1..=lines.len()).contains(&line) => {
                    let line = failing_turn(&lines, line).unwrap_or(line);
                    relocated(error, text, path, line)
                }
                other => other,
            };
            let (line, message) = match &error {
                ScenarioError::Parse { line, message, .. } => (*line, message.clone()),
                ScenarioError::Read { .. } => (0, String::new()),
            };
            if errors
                .iter()
                .any(|said: &ScenarioError| same_place(said, &error))
            {
                // Set aside already, and still failing there: nothing new to learn.
                return Err(errors);
            }
            errors.push(error);
            if line == 0 || line > lines.len() || errors.len() == Self::MAX_PROBLEMS {
                return Err(errors);
            }
            // The narrowest part not set aside yet: the unknown key, its turn, its script.
            let key =
                unknown_key_entry(&lines, line, &message).filter(|span| !set_aside.contains(span));
            if let Some(span) = key {
                set_aside.push(span);
                blank(&mut lines, span, None);
                continue;
            }
            let turn = ["turns", "handoff"]
                .into_iter()
                .find_map(|key| item_under(&lines, line, key))
                .filter(|span| !set_aside.contains(span));
            if let Some(span) = turn {
                set_aside.push(span);
                blank(&mut lines, span, Some(TURN_PLACEHOLDER));
                continue;
            }
            let item = items
                .iter()
                .position(|(first, last)| (*first..=*last).contains(&line))
                .filter(|index| !blanked[*index]);
            let Some(index) = item else {
                return Err(errors);
            };
            blanked[index] = true;
            blank(&mut lines, items[index], Some(PLACEHOLDER));
        }
    }
}

/// Blank the 1-based lines `first..=last`, putting `placeholder` (at the first line's
/// indent) in the first one when given.
fn blank(lines: &mut [String], (first, last): (usize, usize), placeholder: Option<&str>) {
    let indent: String = lines[first - 1].chars().take_while(|c| *c == ' ').collect();
    for line in &mut lines[first - 1..last] {
        line.clear();
    }
    if let Some(placeholder) = placeholder {
        lines[first - 1] = format!("{indent}{placeholder}");
    }
}

fn indent_of(line: &str) -> usize {
    line.len() - line.trim_start_matches(' ').len()
}

fn is_content(line: &str) -> bool {
    !line.trim().is_empty() && !line.trim_start().starts_with('#')
}

/// Where a line's key starts: after the dash of a list item.
fn key_indent(line: &str) -> usize {
    indent_of(line) + if is_item(line) { 2 } else { 0 }
}

fn is_item(line: &str) -> bool {
    let rest = line.trim_start_matches(' ');
    rest == "-" || rest.starts_with("- ")
}

/// The last line of the entry that starts at 0-based `start`: the lines after it that are
/// indented deeper (or blank), as 1-based `(first, last)`.
fn entry_span(lines: &[String], start: usize) -> (usize, usize) {
    let indent = indent_of(&lines[start]) + usize::from(is_item(&lines[start])) * 2;
    let mut last = start;
    for (i, line) in lines.iter().enumerate().skip(start + 1) {
        if !is_content(line) {
            continue;
        }
        if indent_of(line) < indent || (indent_of(line) == indent && is_item(line)) {
            break;
        }
        if indent_of(line) <= indent_of(&lines[start]) {
            break;
        }
        last = i;
    }
    (start + 1, last + 1)
}

/// The lines of an unknown key serde complained about (`unknown field `sya``), when the
/// key starts its line: blanking it cannot make anything else wrong.
fn unknown_key_entry(lines: &[String], line: usize, message: &str) -> Option<(usize, usize)> {
    let field = message.split("unknown field `").nth(1)?.split('`').next()?;
    // A key that opens a list item is set aside with its item, not alone.
    let text = &lines[line - 1];
    (!is_item(text) && text.trim_start().starts_with(&format!("{field}:")))
        .then(|| entry_span(lines, line - 1))
}

/// The item of a block list under a `key:` line that holds 1-based `line`, as 1-based
/// `(first, last)`: the innermost such item.
fn item_under(lines: &[String], line: usize, key: &str) -> Option<(usize, usize)> {
    let mut limit = if is_content(&lines[line - 1]) {
        indent_of(&lines[line - 1])
    } else {
        usize::MAX
    };
    for start in (0..line).rev() {
        let candidate = &lines[start];
        if !is_content(candidate) || indent_of(candidate) > limit {
            continue;
        }
        if is_item(candidate) {
            // The key the list belongs to: less indented than the item, or as indented
            // when the list sits at its key's own indent.
            let parent = (0..start).rev().map(|j| &lines[j]).find(|l| {
                is_content(l)
                    && (key_indent(l) < indent_of(candidate)
                        || (key_indent(l) == indent_of(candidate) && !is_item(l)))
            })?;
            let name = parent.trim_start_matches(' ');
            let name = name.strip_prefix("- ").unwrap_or(name);
            if name.trim_end() == format!("{key}:") {
                return Some(entry_span(lines, start));
            }
        }
        limit = indent_of(candidate).saturating_sub(1);
        if indent_of(candidate) == 0 {
            return None;
        }
    }
    None
}

/// serde places an error a turn's own checks raise (`TryFrom`) at the first item of the
/// turn's list. When 1-based `line` is such a first item under `turns:` or `handoff:`, the
/// first item of that list that fails when read alone: its 1-based line.
fn failing_turn(lines: &[String], line: usize) -> Option<usize> {
    let (first, _) = ["turns", "handoff"]
        .into_iter()
        .find_map(|key| item_under(lines, line, key))?;
    if first != line {
        return None;
    }
    let indent = indent_of(&lines[line - 1]);
    let mut start = line - 1;
    loop {
        let (first, last) = entry_span(lines, start);
        let item: String = lines[first - 1..last]
            .iter()
            .map(|l| format!("{}\n", l.get(indent..).unwrap_or("")))
            .collect();
        if serde_norway::from_str::<Vec<super::Turn>>(&item).is_err() {
            return Some(first);
        }
        start = (last..lines.len()).find(|&i| is_content(&lines[i]))?;
        if indent_of(&lines[start]) != indent || !is_item(&lines[start]) {
            return None;
        }
    }
}

/// Whether two errors name the same line with the same words.
fn same_place(a: &ScenarioError, b: &ScenarioError) -> bool {
    match (a, b) {
        (
            ScenarioError::Parse {
                line: a,
                message: m,
                ..
            },
            ScenarioError::Parse {
                line: b,
                message: n,
                ..
            },
        ) => a == b && m == n,
        _ => false,
    }
}

/// `error` (found in partly blanked text) with the original text as its source code.
fn relocated(error: ScenarioError, text: &str, path: &Path, line: usize) -> ScenarioError {
    let ScenarioError::Parse {
        column, message, ..
    } = error
    else {
        return error;
    };
    let offset: usize = text
        .split_inclusive('\n')
        .take(line.saturating_sub(1))
        .map(str::len)
        .sum::<usize>()
        + column.saturating_sub(1);
    ScenarioError::at(
        path,
        text,
        (line, column),
        (line > 0).then_some(offset),
        message,
    )
}

/// The 1-based first and last line of each item of a block-style top-level `scripts:`
/// list (none for a flow-style list or no list).
fn script_items(text: &str) -> Vec<(usize, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let Some(start) = lines
        .iter()
        .position(|l| l.trim_end() == "scripts:" || l.starts_with("scripts: #"))
    else {
        return Vec::new();
    };
    let indent_of = |l: &str| l.len() - l.trim_start_matches(' ').len();
    let content = |l: &str| !l.trim().is_empty() && !l.trim_start().starts_with('#');
    let Some(first) = (start + 1..lines.len()).find(|&i| content(lines[i])) else {
        return Vec::new();
    };
    let item_indent = indent_of(lines[first]);
    let is_item = |l: &str| {
        indent_of(l) == item_indent && {
            let rest = &l[item_indent..];
            rest == "-" || rest.starts_with("- ")
        }
    };
    if !is_item(lines[first]) {
        return Vec::new();
    }
    let mut items = Vec::new();
    let mut open: Option<usize> = None;
    let mut last_content = first;
    for (i, line) in lines.iter().enumerate().skip(first) {
        if !content(line) {
            continue;
        }
        if is_item(line) {
            if let Some(begin) = open {
                items.push((begin + 1, last_content + 1));
            }
            open = Some(i);
        } else if indent_of(line) <= item_indent {
            break;
        }
        last_content = i;
    }
    if let Some(begin) = open {
        items.push((begin + 1, last_content + 1));
    }
    items
}

#[cfg(test)]
mod tests {
    use super::*;

    const BROKEN: &str = "\
window: 1000
scripts:
  - phase: 1
    turns:
      - say: fine
  - phase: 2
    turns:
      - sya: typo
  # a comment between scripts
  - phase: 3
    turns: []
    exit_kode: 2
  - turns:
      - write: {path: a}
";

    /// The line of each error (0 for a read error).
    fn error_lines(errors: &[ScenarioError]) -> Vec<usize> {
        errors
            .iter()
            .map(|e| match e {
                ScenarioError::Parse { line, .. } => *line,
                ScenarioError::Read { .. } => 0,
            })
            .collect()
    }

    #[test]
    fn items_span_their_lines() {
        assert_eq!(script_items(BROKEN), [(3, 5), (6, 8), (10, 12), (13, 14)]);
        assert!(script_items("scripts: [{turns: []}]\n").is_empty());
        assert_eq!(
            script_items("scripts:\n- turns: []\n- turns: []\nwindow: 5\n"),
            [(2, 2), (3, 3)]
        );
    }

    #[test]
    fn every_broken_script_is_reported_with_its_line() {
        let errors = Scenario::check(BROKEN, Path::new("s.yaml")).expect_err("broken");
        let lines = error_lines(&errors);
        assert_eq!(lines, [8, 12, 14], "{errors:?}");
        let text = errors[1].to_string();
        assert!(
            text.starts_with("invalid sim scenario s.yaml:12:"),
            "{text}"
        );
        assert!(text.contains("exit_kode"), "{text}");
    }

    #[test]
    fn every_problem_of_one_script_is_reported() {
        let text = "\
scripts:
  - phase: 1
    turns:
      - sya: typo
      - say: fine
        tools:
          - write: {path: a.txt, content: x}
          - bassh: ls
      - say: fine
        percent: many
    exit_kode: 2
  - turns:
      - say: ok
";
        let errors = Scenario::check(text, Path::new("s.yaml")).expect_err("broken");
        let lines = error_lines(&errors);
        assert_eq!(lines, [4, 8, 10, 11], "{errors:?}");
    }

    #[test]
    fn a_turn_that_fails_its_own_rules_is_named_by_its_line_once() {
        // serde places such an error at the start of the turn's list, whichever turn it is.
        let text = "\
scripts:
  - phase: 2
    turns:
      - say: Writing.
        percent: 50
      - percent: 85
        sleep_ms: 1500
      - tools: [{done: completed}]
    handoff:
      - say: fine
      - context: 5
";
        let errors = Scenario::check(text, Path::new("s.yaml")).expect_err("broken");
        let places: Vec<(usize, usize)> = errors
            .iter()
            .map(|e| match e {
                ScenarioError::Parse { line, column, .. } => (*line, *column),
                ScenarioError::Read { .. } => (0, 0),
            })
            .collect();
        assert_eq!(places, [(6, 7), (11, 7)], "{errors:?}");
    }

    #[test]
    fn a_file_broken_in_thousands_of_places_reports_the_first_few() {
        let mut text = String::from("scripts:\n  - turns:\n");
        for _ in 0..5_000 {
            text.push_str("      - percent: 5\n");
        }
        let errors = Scenario::check(&text, Path::new("s.yaml")).expect_err("broken");
        assert_eq!(errors.len(), Scenario::MAX_PROBLEMS);
        let lines: Vec<usize> = errors
            .iter()
            .map(|e| match e {
                ScenarioError::Parse { line, .. } => *line,
                ScenarioError::Read { .. } => 0,
            })
            .collect();
        assert_eq!(lines, (3..13).collect::<Vec<_>>());
    }

    #[test]
    fn items_under_a_key_are_found_from_any_line_inside_them() {
        let lines: Vec<String> = "scripts:\n  - turns:\n      - say: a\n        tools: []\n      - say: b\n    exit_code: 1\n"
            .lines()
            .map(str::to_owned)
            .collect();
        assert_eq!(item_under(&lines, 4, "turns"), Some((3, 4)));
        assert_eq!(item_under(&lines, 5, "turns"), Some((5, 5)));
        assert_eq!(item_under(&lines, 6, "turns"), None);
        assert_eq!(item_under(&lines, 2, "turns"), None);
    }

    #[test]
    fn a_problem_outside_the_scripts_ends_the_search_unless_it_is_an_unknown_key() {
        let errors = Scenario::check("window: lots\nscripts:\n  - sya: x\n", Path::new("s.yaml"))
            .expect_err("broken");
        assert_eq!(errors.len(), 1, "{errors:?}");
        let errors = Scenario::check("windw: 5\nscripts:\n  - sya: x\n", Path::new("s.yaml"))
            .expect_err("broken");
        assert_eq!(errors.len(), 2, "{errors:?}");
        let fine = "scripts:\n  - turns: []\n";
        assert!(Scenario::check(fine, Path::new("s.yaml")).is_ok());
    }
}
