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
    /// A file the session layer writes for this session, if the agent needs one.
    pub file: Option<SessionFile>,
}

impl AgentCommand {
    /// `program` with `args` and `env` on top of the inherited environment, fed `prompt`
    /// on stdin, with no home or file of its own.
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
            file: None,
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

/// A file of one session's own (the Gemini CLI's settings), written by the session layer
/// beside the transcript and named to the agent in [`SessionFile::var`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionFile {
    /// The environment variable that names the file's path to the agent.
    pub var: String,
    /// The file's name; it is written as `…session-K.NAME`.
    pub name: String,
    /// What the file holds.
    pub contents: String,
}

/// A directory of its own for one session's agent (Codex's `CODEX_HOME`), made by the
/// session layer beside the transcript and named to the agent in [`AgentHome::var`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentHome {
    /// The environment variable that names the directory to the agent.
    pub var: String,
    /// The user's own home for this agent: each of its entries is linked into the
    /// private one, so settings, credentials and instructions stay the user's (and
    /// writes to them go through to the user's files).
    pub link_from: Option<PathBuf>,
    /// Entries of [`link_from`](Self::link_from) not linked (a name prefix match): the
    /// agent's per-session data.
    pub skip: Vec<String>,
    /// A file the agent writes under the home, followed live beside stdout and parsed by
    /// [`AgentBackend::parse_followed_line`](super::AgentBackend::parse_followed_line).
    pub follow: Option<Follow>,
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
