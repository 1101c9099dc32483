//! Where one Claude Code run lives: its own HOME, config dir, TMPDIR and working directory, its login, and the harness that puts it beside a model server.

use std::io;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use tokio::process::Command;

use super::{ClaudeCli, DEFAULT_ALLOWED_TOOLS, DEFAULT_MODEL, require};
use crate::support::model_server::ModelServer;
use crate::support::sandbox::SandboxDirs;

/// How the sandboxed Claude Code is logged in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Login {
    /// With an API key (`ANTHROPIC_API_KEY`), as the tests run by default.
    ApiKey,
    /// With a subscription's OAuth token (`CLAUDE_CODE_OAUTH_TOKEN`): Claude Code then
    /// reads the usage limits' headers and reports them (`rate_limit_event`).
    Subscription,
    /// Not at all: no key, no token, no credentials file.
    None,
}

/// An isolated place for one Claude Code run: HOME, config dir, TMPDIR and a working
/// directory inside one temp dir, removed on drop.
#[derive(Debug)]
pub struct Sandbox {
    dirs: SandboxDirs,
}

impl Sandbox {
    /// Creates the temp dir with `home/`, `home/.claude/`, `tmp/` and `work/`.
    pub fn new() -> io::Result<Self> {
        Ok(Self {
            dirs: SandboxDirs::new("claude", ".claude")?,
        })
    }

    /// The working directory Claude Code runs in (where its tools create files).
    pub fn cwd(&self) -> &Path {
        self.dirs.cwd()
    }

    /// The isolated HOME.
    pub fn home(&self) -> PathBuf {
        self.dirs.home()
    }

    /// The isolated `CLAUDE_CONFIG_DIR` (session transcripts land under
    /// `projects/`).
    pub fn config_dir(&self) -> PathBuf {
        self.home().join(".claude")
    }

    /// The complete environment for a Claude Code child talking to `server`: PATH
    /// from the test process, everything else fixed. Use it as-is (after
    /// `env_clear`) so the developer's own Claude settings and keys never leak in.
    pub fn envs(&self, server: &ModelServer) -> Vec<(String, String)> {
        self.envs_with(server, Login::ApiKey)
    }

    /// [`Self::envs`] with Claude Code logged in as `login` says.
    pub fn envs_with(&self, server: &ModelServer, login: Login) -> Vec<(String, String)> {
        let mut envs = self.base_envs(server);
        match login {
            Login::ApiKey => envs.push((
                "ANTHROPIC_API_KEY".to_owned(),
                "sk-ant-test-offline-dummy".to_owned(),
            )),
            Login::Subscription => envs.push((
                "CLAUDE_CODE_OAUTH_TOKEN".to_owned(),
                "sk-ant-oat01-test-offline-dummy".to_owned(),
            )),
            Login::None => {}
        }
        envs
    }

    fn base_envs(&self, server: &ModelServer) -> Vec<(String, String)> {
        let mut envs = self.dirs.base_envs();
        envs.push((
            "CLAUDE_CONFIG_DIR".to_owned(),
            self.config_dir().to_string_lossy().into_owned(),
        ));
        envs.push(("ANTHROPIC_BASE_URL".to_owned(), server.base_url()));
        for (name, value) in [
            ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),
            ("DISABLE_AUTOUPDATER", "1"),
            ("DISABLE_TELEMETRY", "1"),
            ("DISABLE_ERROR_REPORTING", "1"),
            ("ENABLE_TOOL_SEARCH", "false"),
        ] {
            envs.push((name.to_owned(), value.to_owned()));
        }
        envs
    }

    /// `claude -p --output-format stream-json --verbose --model MODEL
    /// --permission-mode acceptEdits --allowedTools …` in [`Self::cwd`] with
    /// [`Self::envs`], stdio piped, in its own process group. Add arguments
    /// (`--resume ID`, `--mcp-config …`) and environment as needed, then
    /// [`ClaudeRun::spawn`] it.
    pub fn command(&self, claude: &ClaudeCli, server: &ModelServer, model: &str) -> Command {
        let mut command = Command::new(claude.path());
        command
            .args([
                "-p",
                "--output-format",
                "stream-json",
                "--verbose",
                "--model",
                model,
            ])
            .args(["--permission-mode", "acceptEdits", "--allowedTools"])
            .arg(DEFAULT_ALLOWED_TOOLS.join(","))
            .current_dir(self.cwd())
            .env_clear()
            .envs(self.envs(server))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        command
    }
}

/// The pinned CLI, a sandbox and a scripted model server playing one scenario: what
/// every test of the real CLI starts from. Areas add their own methods.
pub struct Harness {
    /// The CLI under test.
    pub cli: ClaudeCli,
    /// Its home, working directory and environment.
    pub sandbox: Sandbox,
    /// The model it talks to.
    pub server: ModelServer,
}

impl Harness {
    /// The CLI against a model server playing `scenario` (see [`require`]).
    pub fn new(scenario: crate::support::model_server::Scenario) -> Self {
        Self::with_sandbox(Sandbox::new().expect("create sandbox"), scenario)
    }

    /// Like [`Self::new`], for scenarios that need the sandbox's paths.
    pub fn with_sandbox(
        sandbox: Sandbox,
        scenario: crate::support::model_server::Scenario,
    ) -> Self {
        Self {
            cli: require(),
            sandbox,
            server: ModelServer::start(scenario).expect("start model server"),
        }
    }

    /// The CLI's command line against the server, with [`DEFAULT_MODEL`].
    pub fn command(&self) -> Command {
        self.sandbox.command(&self.cli, &self.server, DEFAULT_MODEL)
    }
}
