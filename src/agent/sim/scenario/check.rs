//! Every problem of a scenario at once. serde stops at the first error; to report the
//! rest, the script holding that error is blanked out (its lines kept, so later line
//! numbers still match the file) and the text parsed again, once per script at most.

use std::path::Path;

use super::{Scenario, ScenarioError};

/// A stand-in for a broken script: valid, and one line long.
const PLACEHOLDER: &str = "- turns: []";

impl Scenario {
    /// Parse `text` and report every broken script, not only the first; `path` is only
    /// used in errors. A problem outside `scripts` (YAML syntax, a top-level key, a
    /// broken definition) ends the search, as nothing after it can be trusted.
    ///
    /// # Errors
    /// Each problem, in file order.
    pub fn check(text: &str, path: &Path) -> Result<Scenario, Vec<ScenarioError>> {
        let items = script_items(text);
        let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
        let mut errors = Vec::new();
        let mut blanked = vec![false; items.len()];
        loop {
            let current = lines.join("\n");
            let error = match Scenario::parse(&current, path) {
                Ok(scenario) if errors.is_empty() => return Ok(scenario),
                Ok(_) => return Err(errors),
                Err(error) => error,
            };
            // Errors carry the original text, for their snippets.
            let error = match error {
                ScenarioError::Parse { line, .. } => relocated(error, text, path, line),
                read @ ScenarioError::Read { .. } => read,
            };
            let line = match &error {
                ScenarioError::Parse { line, .. } => *line,
                ScenarioError::Read { .. } => 0,
            };
            let item = items
                .iter()
                .position(|(first, last)| (*first..=*last).contains(&line))
                .filter(|index| !blanked[*index]);
            errors.push(error);
            let Some(index) = item else {
                return Err(errors);
            };
            blanked[index] = true;
            let (first, last) = items[index];
            let indent: String = lines[first - 1].chars().take_while(|c| *c == ' ').collect();
            lines[first - 1] = format!("{indent}{PLACEHOLDER}");
            for line in &mut lines[first..last] {
                line.clear();
            }
        }
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
    ScenarioError::Parse {
        path: path.to_path_buf(),
        line,
        column,
        message,
        source_code: std::sync::Arc::new(miette::NamedSource::new(
            path.display().to_string(),
            text.to_owned(),
        )),
        span: (line > 0).then(|| miette::SourceSpan::from((offset.min(text.len()), 0))),
    }
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
        let lines: Vec<usize> = errors
            .iter()
            .map(|e| match e {
                ScenarioError::Parse { line, .. } => *line,
                ScenarioError::Read { .. } => 0,
            })
            .collect();
        assert_eq!(lines, [8, 12, 14], "{errors:?}");
        let text = errors[1].to_string();
        assert!(
            text.starts_with("invalid sim scenario s.yaml:12:"),
            "{text}"
        );
        assert!(text.contains("exit_kode"), "{text}");
    }

    #[test]
    fn a_problem_outside_the_scripts_ends_the_search() {
        let errors = Scenario::check("windw: 5\nscripts:\n  - sya: x\n", Path::new("s.yaml"))
            .expect_err("broken");
        assert_eq!(errors.len(), 1, "{errors:?}");
        let fine = "scripts:\n  - turns: []\n";
        assert!(Scenario::check(fine, Path::new("s.yaml")).is_ok());
    }
}
