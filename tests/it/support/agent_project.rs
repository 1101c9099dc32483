//! [`AgentProject`]: a git project in a real agent CLI's sandbox, whose one-phase plan
//! `debussy run` hands to that agent. One type for every agent; each agent's sandbox
//! says where the project is and what environment points the CLI at the model server.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use super::project::{self, run_json};

/// What an agent's sandbox gives a project: a working directory and the environment
/// that keeps the agent offline, talking to the scripted model server.
pub trait AgentSandbox {
    /// The project's working tree.
    fn cwd(&self) -> &Path;
    /// The environment `debussy` (and so the agent) runs with.
    fn envs(&self) -> Vec<(String, String)>;
}

impl AgentSandbox for super::codex::Sandbox {
    fn cwd(&self) -> &Path {
        self.cwd()
    }

    fn envs(&self) -> Vec<(String, String)> {
        self.envs()
    }
}

impl AgentSandbox for super::gemini::Sandbox {
    fn cwd(&self) -> &Path {
        self.cwd()
    }

    fn envs(&self) -> Vec<(String, String)> {
        self.envs()
    }
}

/// The agent a project's runs use.
pub struct Agent {
    /// `agent.kind`: `codex`, `gemini`.
    pub kind: &'static str,
    /// The agent's name in the plan's title.
    pub name: &'static str,
    /// The pinned CLI.
    pub program: PathBuf,
    /// The model the configuration names.
    pub model: &'static str,
}

/// A git project in `sandbox` whose runs use `agent`.
pub struct AgentProject<S> {
    sandbox: S,
    agent: Agent,
}

impl<S: AgentSandbox> AgentProject<S> {
    /// A project with an empty repository in the sandbox's working directory.
    pub fn new(sandbox: S, agent: Agent) -> Self {
        project::init_repo(sandbox.cwd());
        AgentProject { sandbox, agent }
    }

    /// Its working tree.
    pub fn root(&self) -> &Path {
        self.sandbox.cwd()
    }

    /// Write `text` to `relative`, creating directories.
    pub fn write(&self, relative: &str, text: &str) {
        let path = self.root().join(relative);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    }

    /// One phase gated by `gate`, committed with a configuration that runs the agent
    /// with a `window`-token context window, no retries, and `extra` top-level lines
    /// (`timeout: 120` unless they set one).
    pub fn plan(&self, gate: &str, window: u64, extra: &str) {
        let Agent {
            kind,
            name,
            program,
            model,
        } = &self.agent;
        let extra = if extra.contains("timeout:") {
            extra.to_owned()
        } else {
            format!("timeout: 120\n{extra}")
        };
        self.write(
            "plan/MASTER_PLAN.md",
            &format!(
                "# {name} Plan\n\n| Phase | Title | Status |\n|---|---|---|\n| 1 | [Step 1](phase-1.md) | Pending |\n"
            ),
        );
        self.write(
            "plan/phase-1.md",
            &format!(
                "# Phase 1: Step 1\n\n**Status:** Pending\n\n## Gates\n- check: `{gate}` passes\n\n## Tasks\n- [ ] 1.1: Do step 1\n"
            ),
        );
        self.write(
            ".debussy/config.yaml",
            &format!(
                "model: {model}\nrestart_delay: 0\nmax_retries: 0\n{extra}\
                 agent:\n  kind: {kind}\n  command: {}\n  model_context_window: {window}\n",
                program.display(),
            ),
        );
        project::commit_all(self.root(), "plan");
    }

    /// `debussy ARGS` in the project, with only the sandbox's environment.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(super::DEBUSSY);
        command
            .args(args)
            .current_dir(self.root())
            .env_clear()
            .envs(self.sandbox.envs())
            .env("NO_COLOR", "1")
            .stdin(Stdio::null());
        command
    }

    /// `debussy run` of the plan with JSON output, within three minutes: its exit code
    /// and events.
    pub fn run(&self) -> (i32, Vec<Value>) {
        run_json(
            self.command(&["run", "plan/MASTER_PLAN.md", "--output-format", "json"]),
            Duration::from_secs(180),
        )
    }
}
