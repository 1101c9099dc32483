//! Why a scenario file cannot be used, with the file, line and column.

use std::path::{Path, PathBuf};

/// A scenario that cannot be used.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum ScenarioError {
    /// The file could not be read.
    #[error("read sim scenario {}", path.display())]
    #[diagnostic(code(debussy::sim::read))]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The file is not a valid scenario.
    #[error("invalid sim scenario {}: {message}", place(path, *line, *column))]
    #[diagnostic(
        code(debussy::sim::invalid),
        help("the scenario format is described in docs/sim-agent.md")
    )]
    Parse {
        /// The file.
        path: PathBuf,
        /// 1-based line of the problem (0 when unknown).
        line: usize,
        /// 1-based column of the problem (0 when unknown).
        column: usize,
        /// What is wrong.
        message: String,
        /// The file's text, for the rendered snippet.
        #[source_code]
        source_code: std::sync::Arc<miette::NamedSource<String>>,
        /// Where in the text.
        #[label("here")]
        span: Option<miette::SourceSpan>,
    },
}

/// `path:line:column`, or the path alone when the line is unknown.
fn place(path: &Path, line: usize, column: usize) -> String {
    if line == 0 {
        path.display().to_string()
    } else {
        format!("{}:{line}:{column}", path.display())
    }
}

/// The 0-based line and byte offset of the top-level key a message without a place
/// names first (`` `window` must be … ``): the scenario's own rules are checked once the
/// whole file is read, where the parser no longer knows a line.
fn top_level_key(text: &str, message: &str) -> Option<(usize, usize)> {
    let key = message.strip_prefix('`')?.split('`').next()?;
    let mut offset = 0;
    for (index, line) in text.split_inclusive('\n').enumerate() {
        if line
            .strip_prefix(key)
            .is_some_and(|rest| rest.starts_with(':'))
        {
            return Some((index, offset));
        }
        offset += line.len();
    }
    None
}

impl ScenarioError {
    pub(super) fn parse(err: &serde_norway::Error, text: &str, path: &Path) -> Self {
        let location = err.location();
        let (mut line, mut column) = location
            .as_ref()
            .map_or((0, 0), |loc| (loc.line(), loc.column()));
        // serde_norway appends "at line L column C" itself; we print the location up front.
        let mut message = err.to_string();
        if let Some(cut) = message.find(" at line ") {
            message.truncate(cut);
        }
        let mut offset = location.as_ref().map(serde_norway::Location::index);
        if location.is_none()
            && let Some((index, at)) = top_level_key(text, &message)
        {
            (line, column, offset) = (index + 1, 1, Some(at));
        }
        ScenarioError::at(path, text, (line, column), offset, message)
    }

    /// A parse error at `line` and `column` (0 when unknown) of `text`, pointing at byte
    /// `offset` in the rendered snippet.
    pub(super) fn at(
        path: &Path,
        text: &str,
        (line, column): (usize, usize),
        offset: Option<usize>,
        message: String,
    ) -> Self {
        ScenarioError::Parse {
            path: path.to_path_buf(),
            line,
            column,
            message,
            source_code: std::sync::Arc::new(miette::NamedSource::new(
                path.display().to_string(),
                text.to_owned(),
            )),
            span: offset.map(|offset| miette::SourceSpan::from((offset.min(text.len()), 0))),
        }
    }
}
