//! Configuration errors: [`ConfigError`] for the loader, [`Invalid`] for a bad value or
//! key, pointing at the file, line, column and key path (or the variable or flag that
//! carried it), rendered by `miette` with the offending text underlined and a hint.

use std::borrow::Cow;
use std::fmt;
use std::path::{Path, PathBuf};

use miette::{Diagnostic, LabeledSpan, NamedSource, SourceSpan};

use super::locate::{Pos, token_len};
use crate::terminal_safe::clipped;

/// Why configuration could not be loaded. Every variant is a usage error (exit 2).
#[derive(Debug, thiserror::Error, Diagnostic)]
pub enum ConfigError {
    /// A configuration file exists but could not be read.
    #[error("failed to read config file {}", path.display())]
    #[diagnostic(
        code(debussy::config::read),
        help("check that the file is readable and is a regular file")
    )]
    Read {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        #[source]
        source: std::io::Error,
    },

    /// The file given with `--config` does not exist.
    #[error("config file {} does not exist", path.display())]
    #[diagnostic(
        code(debussy::config::missing),
        help("check the path given with --config, or drop --config to use .debussy/config.yaml")
    )]
    Missing {
        /// The file as given.
        path: PathBuf,
    },

    /// A `DEBUSSY_*` variable whose value is not valid UTF-8.
    #[error("environment variable {var} is not valid UTF-8")]
    #[diagnostic(
        code(debussy::config::env_encoding),
        help("set {var} to UTF-8 text or unset it")
    )]
    EnvEncoding {
        /// The variable.
        var: String,
    },

    /// The layers were each valid but could not be combined; a bug in debussy.
    #[error("failed to combine the configuration layers: {message}")]
    #[diagnostic(
        code(debussy::config::merge),
        help("please report this as a bug in debussy")
    )]
    Merge {
        /// The deserializer's complaint.
        message: String,
    },

    /// A key or value is wrong.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Invalid(Box<Invalid>),
}

impl From<Box<Invalid>> for ConfigError {
    fn from(invalid: Box<Invalid>) -> Self {
        ConfigError::Invalid(invalid)
    }
}

impl ConfigError {
    /// The [`Invalid`] inside, if this is one.
    #[must_use]
    pub fn invalid(&self) -> Option<&Invalid> {
        match self {
            ConfigError::Invalid(invalid) => Some(invalid),
            _ => None,
        }
    }
}

/// What is wrong with an [`Invalid`] piece of configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Problem {
    /// The file is not well-formed YAML (or repeats a key).
    Syntax,
    /// A key that debussy does not know.
    UnknownKey,
    /// A `DEBUSSY_*` variable that looks like a configuration key but names none.
    UnknownVariable,
    /// A value of the wrong type (a string where a number belongs).
    WrongType,
    /// A value of the right type outside its allowed range.
    OutOfRange,
}

impl Problem {
    fn code(self) -> &'static str {
        match self {
            Problem::Syntax => "debussy::config::syntax",
            Problem::UnknownKey => "debussy::config::unknown_key",
            Problem::UnknownVariable => "debussy::config::unknown_variable",
            Problem::WrongType => "debussy::config::wrong_type",
            Problem::OutOfRange => "debussy::config::out_of_range",
        }
    }
}

/// Where an [`Invalid`] piece of configuration came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// A configuration file, at a 1-based line and column.
    File {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// 1-based column, in characters.
        column: usize,
    },
    /// A `DEBUSSY_*` environment variable.
    Env {
        /// The variable's name.
        var: String,
    },
    /// A command-line flag.
    Flag {
        /// The flag as typed, e.g. `--context-threshold`.
        flag: String,
    },
}

/// A bad key or value, with where it came from and how to fix it.
#[derive(Debug)]
pub struct Invalid {
    /// What kind of problem.
    pub problem: Problem,
    /// The dotted key path (`agent.kind`), when the problem is about one key.
    pub key: Option<String>,
    /// What is wrong, as a lowercase sentence fragment naming the key.
    pub message: String,
    /// How to fix it.
    pub help: Option<String>,
    /// Where it came from.
    pub origin: Origin,
    label: String,
    source_code: Option<NamedSource<String>>,
    span: Option<SourceSpan>,
}

/// The parts of an [`Invalid`] that do not depend on where it came from.
#[derive(Debug)]
pub(crate) struct Complaint {
    pub problem: Problem,
    pub key: Option<String>,
    pub message: String,
    pub label: String,
    pub help: Option<String>,
}

/// The most characters of a message, a label or a hint: past it, what was quoted from
/// the file, the variable or the flag is cut in its middle.
const MAX_SAID: usize = 400;

impl Complaint {
    /// The complaint with each of its texts at most [`MAX_SAID`] characters long.
    fn clipped(self) -> Complaint {
        let clip = |text: String| match clipped(&text, MAX_SAID) {
            Cow::Borrowed(_) => text,
            Cow::Owned(short) => short,
        };
        Complaint {
            message: clip(self.message),
            label: clip(self.label),
            help: self.help.map(clip),
            ..self
        }
    }
}

impl Invalid {
    /// A problem in a file's `text` at `pos`; `hint` is the expected token text, used to
    /// size the underline.
    pub(crate) fn in_file(
        complaint: Complaint,
        path: &Path,
        text: &str,
        pos: Pos,
        hint: Option<&str>,
    ) -> Box<Invalid> {
        let complaint = complaint.clipped();
        let offset = pos.offset(text);
        let len = token_len(text, offset, hint);
        Box::new(Invalid {
            problem: complaint.problem,
            key: complaint.key,
            message: complaint.message,
            help: complaint.help,
            origin: Origin::File {
                path: path.to_path_buf(),
                line: pos.line,
                column: pos.column,
            },
            label: complaint.label,
            source_code: Some(NamedSource::new(
                path.display().to_string(),
                text.to_owned(),
            )),
            span: Some(SourceSpan::new(offset.into(), len)),
        })
    }

    /// A problem in the value of an environment variable.
    pub(crate) fn in_env(complaint: Complaint, var: &str) -> Box<Invalid> {
        Invalid::elsewhere(
            complaint,
            Origin::Env {
                var: var.to_owned(),
            },
        )
    }

    /// A problem in the value of a command-line flag.
    pub(crate) fn in_flag(complaint: Complaint, flag: &str) -> Box<Invalid> {
        Invalid::elsewhere(
            complaint,
            Origin::Flag {
                flag: flag.to_owned(),
            },
        )
    }

    fn elsewhere(complaint: Complaint, origin: Origin) -> Box<Invalid> {
        let complaint = complaint.clipped();
        Box::new(Invalid {
            problem: complaint.problem,
            key: complaint.key,
            message: complaint.message,
            help: complaint.help,
            origin,
            label: complaint.label,
            source_code: None,
            span: None,
        })
    }
}

impl fmt::Display for Invalid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.origin {
            Origin::File { path, line, column } => {
                write!(f, "{}:{line}:{column}: {}", path.display(), self.message)
            }
            Origin::Env { var } => write!(f, "environment variable {var}: {}", self.message),
            Origin::Flag { flag } => write!(f, "flag {flag}: {}", self.message),
        }
    }
}

impl std::error::Error for Invalid {}

impl Diagnostic for Invalid {
    fn code<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        Some(Box::new(self.problem.code()))
    }

    fn help<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        self.help
            .as_ref()
            .map(|help| Box::new(help) as Box<dyn fmt::Display + 'a>)
    }

    fn source_code(&self) -> Option<&dyn miette::SourceCode> {
        self.source_code
            .as_ref()
            .map(|source| source as &dyn miette::SourceCode)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        let span = self.span?;
        Some(Box::new(std::iter::once(LabeledSpan::new_with_span(
            Some(self.label.clone()),
            span,
        ))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn complaint() -> Complaint {
        Complaint {
            problem: Problem::OutOfRange,
            key: Some("timeout".into()),
            message: "`timeout` must be greater than 0, found 0".into(),
            label: "must be greater than 0".into(),
            help: Some("set `timeout` to a number of seconds".into()),
        }
    }

    fn render(diagnostic: &dyn Diagnostic) -> String {
        let mut out = String::new();
        miette::GraphicalReportHandler::new_themed(miette::GraphicalTheme::unicode_nocolor())
            .render_report(&mut out, diagnostic)
            .expect("renders");
        out
    }

    #[test]
    fn file_errors_show_location_span_and_help() {
        let text = "model: opus\ntimeout: 0   # nope\n";
        let invalid = Invalid::in_file(
            complaint(),
            Path::new("/p/.debussy/config.yaml"),
            text,
            Pos {
                line: 2,
                column: 10,
            },
            Some("0"),
        );
        assert_eq!(
            invalid.to_string(),
            "/p/.debussy/config.yaml:2:10: `timeout` must be greater than 0, found 0"
        );
        let shown = render(&*invalid);
        assert!(shown.contains("debussy::config::out_of_range"), "{shown}");
        assert!(shown.contains("[/p/.debussy/config.yaml:2:10]"), "{shown}");
        assert!(shown.contains("timeout: 0"), "{shown}");
        assert!(shown.contains("must be greater than 0"), "{shown}");
        assert!(
            shown.contains("help: set `timeout` to a number of seconds"),
            "{shown}"
        );
    }

    #[test]
    fn env_and_flag_errors_name_their_carrier() {
        let env = Invalid::in_env(complaint(), "DEBUSSY_TIMEOUT");
        assert!(
            env.to_string()
                .starts_with("environment variable DEBUSSY_TIMEOUT: ")
        );
        assert!(env.labels().is_none());
        let flag = Invalid::in_flag(complaint(), "--timeout");
        assert!(flag.to_string().starts_with("flag --timeout: "));
        let shown = render(&ConfigError::from(flag));
        assert!(shown.contains("help: set `timeout`"), "{shown}");
    }
}
