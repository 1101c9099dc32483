//! What the Claude Code run tests share: a git project in a Claude sandbox configured to
//! run the real CLI, usage figures by percent, and the sessions a server saw.

use std::io::{BufRead, BufReader, Lines};
use std::path::Path;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::Duration;

use crate::support::claude::{
    self, ClaudeCli, DEFAULT_ALLOWED_TOOLS, DEFAULT_MODEL, Login, Sandbox,
};
use crate::support::model_server::{ModelServer, RequestKind, Turn, Usage};
use crate::support::project::{self, run_json};
use serde_json::{Value, json};

/// Usage reporting `percent` of a 200,000-token window as context in use.
pub(super) fn usage(percent: u64) -> Usage {
    Usage::new(10, percent * 2_000 - 1_010, 1_000, 50)
}

/// A turn that says `text` and runs `command` with Bash, described by `text`.
pub(super) fn bash_turn(text: &str, command: &str, percent: u64) -> Turn {
    Turn::new()
        .text(text)
        .bash(command, text)
        .usage(usage(percent))
}

/// A git project inside a Claude sandbox, configured to run the real CLI.
pub(super) struct Project {
    pub(super) sandbox: Sandbox,
    pub(super) cli: ClaudeCli,
}

impl Project {
    /// An empty repository in a new sandbox for the pinned CLI.
    pub(super) fn new() -> Project {
        let sandbox = Sandbox::new().expect("sandbox");
        project::init_repo(sandbox.cwd());
        Project {
            sandbox,
            cli: claude::require(),
        }
    }

    /// A project in a new sandbox for the pinned CLI, with `phases` planned as
    /// [`Project::plan`] does.
    pub(super) fn planned(phases: &[(&str, &str)]) -> Project {
        let project = Project::new();
        project.plan(phases);
        project
    }

    /// [`Project::plan`] with Claude Code told the window's size, so that it arms its
    /// own auto-compaction and keeps its compaction reserve free.
    pub(super) fn plan_knowing_the_window(&self, phases: &[(&str, &str)]) {
        self.plan_with_agent(
            phases,
            &format!(
                "{}  env:\n    CLAUDE_CODE_AUTO_COMPACT_WINDOW: \"200000\"\n",
                permission_args_yaml()
            ),
        );
    }

    /// A model turn that says it creates `file` and writes `content` to it with Claude
    /// Code's Write tool, its request filling `percent` of a 200k window.
    pub(super) fn write_turn(&self, file: &str, content: &str, percent: u64) -> Turn {
        self.write_turn_using(file, content, usage(percent))
    }

    /// [`Project::write_turn`] with its request's `usage` given exactly.
    pub(super) fn write_turn_using(&self, file: &str, content: &str, usage: Usage) -> Turn {
        Turn::new()
            .text(format!("Creating {file}."))
            .tool_use(
                "Write",
                json!({"file_path": self.path(file), "content": content}),
            )
            .usage(usage)
    }

    /// `debussy run plan/MASTER_PLAN.md --output-format json` in the background.
    pub(super) fn start_run(&self, server: &ModelServer) -> LiveRun {
        self.start_run_as(server, Login::ApiKey)
    }

    /// [`Project::start_run`] with Claude Code logged in as `login` says.
    pub(super) fn start_run_as(&self, server: &ModelServer, login: Login) -> LiveRun {
        let mut child = self
            .command_as(
                server,
                &["run", "plan/MASTER_PLAN.md", "--output-format", "json"],
                login,
            )
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn");
        let lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        LiveRun { child, lines }
    }

    pub(super) fn root(&self) -> &Path {
        self.sandbox.cwd()
    }

    pub(super) fn path(&self, relative: &str) -> String {
        self.root().join(relative).display().to_string()
    }

    pub(super) fn write(&self, relative: &str, text: &str) {
        project::write_file(self.root(), relative, text);
    }

    /// A plan of phases `(id, gate command)`, each depending on the previous one, and a
    /// config that runs the real CLI.
    pub(super) fn plan(&self, phases: &[(&str, &str)]) {
        self.plan_with_agent(phases, &permission_args_yaml());
    }

    /// The plan of [`Project::plan`] with `agent_yaml` (indented lines) in the `agent`
    /// section instead of explicit permission flags.
    pub(super) fn plan_with_agent(&self, phases: &[(&str, &str)], agent_yaml: &str) {
        let mut master =
            String::from("# Claude Plan\n\n| Phase | Title | Status |\n|---|---|---|\n");
        let mut previous = "N/A".to_owned();
        for (id, gate) in phases {
            master.push_str(&format!(
                "| {id} | [Step {id}](phase-{id}.md) | Pending |\n"
            ));
            self.write(
                &format!("plan/phase-{id}.md"),
                &format!(
                    "# Phase {id}: Step {id}\n\n**Status:** Pending\n**Depends On:** {previous}\n\n\
                     ## Gates\n- check: `{gate}` passes\n\n## Tasks\n- [ ] {id}.1: Do step {id}\n"
                ),
            );
            previous = format!("Phase {id}");
        }
        self.write("plan/MASTER_PLAN.md", &master);
        self.write(
            ".debussy/config.yaml",
            &format!(
                "model: {DEFAULT_MODEL}\nrestart_delay: 0\ntimeout: 120\nagent:\n  kind: claude\n  command: {}\n{agent_yaml}",
                self.cli.path().display(),
            ),
        );
        project::commit_all(self.root(), "plan");
    }

    pub(super) fn command(&self, server: &ModelServer, args: &[&str]) -> Command {
        self.command_as(server, args, Login::ApiKey)
    }

    /// [`Project::command`] with Claude Code logged in as `login` says.
    pub(super) fn command_as(&self, server: &ModelServer, args: &[&str], login: Login) -> Command {
        self.command_of(Path::new(crate::support::DEBUSSY), server, args, login)
    }

    /// [`Project::command_as`] running the debussy binary at `program`.
    pub(super) fn command_of(
        &self,
        program: &Path,
        server: &ModelServer,
        args: &[&str],
        login: Login,
    ) -> Command {
        let mut cmd = Command::new(program);
        cmd.args(args)
            .current_dir(self.root())
            .env_clear()
            .envs(self.sandbox.envs_with(server, login))
            .env("NO_COLOR", "1")
            .stdin(Stdio::null());
        cmd
    }

    /// `debussy run plan/MASTER_PLAN.md --output-format json` plus `extra`, bounded.
    pub(super) fn run(&self, server: &ModelServer, extra: &[&str]) -> (i32, Vec<Value>) {
        let mut args = vec!["run", "plan/MASTER_PLAN.md", "--output-format", "json"];
        args.extend_from_slice(extra);
        run_json(self.command(server, &args), Duration::from_secs(180))
    }

    pub(super) fn status(&self, server: &ModelServer) -> Value {
        let output = self
            .command(server, &["status", "--format", "json"])
            .output()
            .expect("status");
        serde_json::from_slice(&output.stdout).expect("status json")
    }

    pub(super) fn commit_messages(&self) -> Vec<String> {
        project::commit_messages(self.root())
    }
}

/// The run restarted once for a compaction debussy's hook blocked, and no summarisation
/// request reached the model.
pub(super) fn assert_compaction_blocked(events: &[Value], server: &ModelServer) {
    project::assert_restarted_once_for_a_blocked_compaction(events);
    assert!(
        server.requests_of(&RequestKind::Compact).is_empty(),
        "no summarisation request reached the model: {:#?}",
        server.requests()
    );
}

/// The `agent.args` line (indented for the `agent` section) that lets the CLI edit files
/// and run commands without asking.
pub(super) fn permission_args_yaml() -> String {
    let args: Vec<String> = [
        "--permission-mode",
        "acceptEdits",
        "--allowedTools",
        &DEFAULT_ALLOWED_TOOLS.join(","),
    ]
    .iter()
    .map(|a| format!("\"{a}\""))
    .collect();
    format!("  args: [{}]\n", args.join(", "))
}

/// A run going on in the background, read one JSON event at a time.
pub(super) struct LiveRun {
    pub(super) child: Child,
    lines: Lines<BufReader<ChildStdout>>,
}

impl LiveRun {
    /// The next event named `name`; the run's output ending first fails the test.
    pub(super) fn until(&mut self, name: &str) -> Value {
        self.lines
            .by_ref()
            .map_while(Result::ok)
            .map(|line| serde_json::from_str::<Value>(&line).expect("json"))
            .find(|event| event["event"] == name)
            .unwrap_or_else(|| panic!("the run ended before `{name}`"))
    }

    /// debussy's pid.
    pub(super) fn pid(&self) -> nix::unistd::Pid {
        nix::unistd::Pid::from_raw(i32::try_from(self.child.id()).expect("pid"))
    }

    /// SIGINT to debussy, then its exit code once its output has ended, bounded.
    pub(super) fn interrupt(mut self) -> i32 {
        nix::sys::signal::kill(self.pid(), nix::sys::signal::Signal::SIGINT).expect("SIGINT");
        let _rest: Vec<String> = self.lines.map_while(Result::ok).collect();
        project::wait_exit(&mut self.child, Duration::from_secs(60))
    }
}
