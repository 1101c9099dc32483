//! The process to start for one agent session, as plain data for the `process` layer.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use super::shell_quote;

/// A process to start for one agent session, as plain data for the `process` layer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentCommand {
    /// The program: an absolute path when it was found on `PATH`.
    pub program: PathBuf,
    /// Arguments, not including the program.
    pub args: Vec<String>,
    /// Environment variables to set on top of the inherited environment.
    pub env: BTreeMap<String, String>,
    /// Text to write to the child's stdin before closing it; `None` leaves stdin empty.
    pub stdin: Option<String>,
    /// A private home directory the session layer makes for this session, if the agent
    /// needs one.
    pub home: Option<AgentHome>,
}

impl AgentCommand {
    /// `program` with `args` and `env` on top of the inherited environment, fed `prompt`
    /// on stdin, with no home of its own.
    #[must_use]
    pub fn new(
        program: PathBuf,
        args: Vec<String>,
        env: BTreeMap<String, String>,
        prompt: &str,
    ) -> Self {
        AgentCommand {
            program,
            args,
            env,
            stdin: Some(prompt.to_owned()),
            home: None,
        }
    }
}

impl fmt::Display for AgentCommand {
    /// The command line, shell-quoted, for logs (stdin and environment not shown).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&shell_quote(&self.program.to_string_lossy()))?;
        for arg in &self.args {
            write!(f, " {}", shell_quote(arg))?;
        }
        Ok(())
    }
}

/// A directory of its own for one session's agent (Codex's `CODEX_HOME`, the Gemini
/// CLI's `GEMINI_CLI_HOME`), made by the session layer beside the transcript and named to
/// the agent in [`AgentHome::var`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentHome {
    /// The environment variable that names the directory to the agent.
    pub var: String,
    /// Where the agent keeps its files below that directory (`.gemini` under
    /// `GEMINI_CLI_HOME`); `None` when they are in it (`CODEX_HOME`).
    pub subdir: Option<PathBuf>,
    /// The user's own directory of this agent's files: each of its entries is linked
    /// into the private one, so settings, credentials and instructions stay the user's
    /// (and writes to them go through to the user's files).
    pub link_from: Option<PathBuf>,
    /// Entries of [`link_from`](Self::link_from) not linked (a name prefix match): the
    /// agent's per-session data.
    pub skip: Vec<String>,
    /// A JSON settings file written in the private home in place of the user's link.
    pub settings: Option<LayeredSettings>,
    /// A directory of the agent's made afresh in the private home rather than linked.
    pub own_dir: Option<OwnDir>,
    /// A file the agent writes under the home, followed live beside stdout and parsed by
    /// [`AgentBackend::parse_followed_line`](super::AgentBackend::parse_followed_line).
    pub follow: Option<Follow>,
}

/// The user's JSON settings file of an [`AgentHome`] (comments allowed, as the Gemini
/// CLI reads it), with some keys of debussy's laid over it for one session: objects are
/// merged key by key, anything else replaced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LayeredSettings {
    /// The file's name in the agent's directory (`settings.json`).
    pub name: String,
    /// The keys laid over the user's settings.
    pub over: serde_json::Value,
}

/// A directory of an [`AgentHome`] made for one session (the Gemini CLI's `policies/`):
/// the user's regular files in it whose names end with [`suffix`](Self::suffix) are
/// copied (the CLI reads no links there, so none is copied), and debussy's own file is
/// added.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnDir {
    /// The directory's name in the agent's directory.
    pub name: String,
    /// How the names of the user's files to copy end (`.toml`).
    pub suffix: String,
    /// The name of debussy's file in it.
    pub file: String,
    /// What debussy's file holds.
    pub contents: String,
}

/// Which file under an [`AgentHome`] to follow: the first one found under `under`, at
/// any depth, whose name starts with `prefix` and ends with `suffix`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Follow {
    /// The directory to look in, relative to the home.
    pub under: PathBuf,
    /// How the file name begins.
    pub prefix: String,
    /// How the file name ends.
    pub suffix: String,
}
