//! `debussy run` end to end with the real Claude Code CLI against the scripted model
//! server, in temporary git repositories: context restarts whose checkpoint reaches the
//! next session, max restarts exceeded, a failing gate fixed by remediation, and Ctrl-C
//! then `--resume`; the handoff and the compaction guard (`handoff`), the run's limits
//! (`guards`), the agent's failures (`failures`) and usage limits (`usage_limits`), the
//! window from the first request (`window`) and stops at a safe point (`safe_stop`).

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::support::claude::{
    self, ClaudeCli, DEFAULT_ALLOWED_TOOLS, DEFAULT_MODEL, Login, Sandbox,
};
use crate::support::model_server::{ModelServer, RecordedRequest, Scenario, Turn, Usage};
use crate::support::project::{
    self, events_named as named, group_gone, run_json, wait_exit as wait,
};
use serde_json::{Value, json};

/// Usage reporting `percent` of a 200,000-token window as context in use.
fn usage(percent: u64) -> Usage {
    Usage::new(10, percent * 2_000 - 1_010, 1_000, 50)
}

/// A git project inside a Claude sandbox, configured to run the real CLI.
struct Project {
    sandbox: Sandbox,
    cli: ClaudeCli,
}

impl Project {
    fn new(cli: ClaudeCli) -> Project {
        let sandbox = Sandbox::new().expect("sandbox");
        project::init_repo(sandbox.cwd());
        Project { sandbox, cli }
    }

    /// A model turn that says it creates `file` and writes `content` to it with Claude
    /// Code's Write tool, its request filling `percent` of a 200k window.
    fn write_turn(&self, file: &str, content: &str, percent: u64) -> Turn {
        Turn::new()
            .text(format!("Creating {file}."))
            .tool_use(
                "Write",
                json!({"file_path": self.path(file), "content": content}),
            )
            .usage(usage(percent))
    }

    fn root(&self) -> &Path {
        self.sandbox.cwd()
    }

    fn path(&self, relative: &str) -> String {
        self.root().join(relative).display().to_string()
    }

    fn write(&self, relative: &str, text: &str) {
        let path = self.root().join(relative);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    }

    /// A plan of phases `(id, gate command)`, each depending on the previous one, and a
    /// config that runs the real CLI.
    fn plan(&self, phases: &[(&str, &str)]) {
        self.plan_with_agent(phases, &permission_args_yaml());
    }

    /// The plan of [`Project::plan`] with `agent_yaml` (indented lines) in the `agent`
    /// section instead of explicit permission flags.
    fn plan_with_agent(&self, phases: &[(&str, &str)], agent_yaml: &str) {
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

    fn command(&self, server: &ModelServer, args: &[&str]) -> Command {
        self.command_as(server, args, Login::ApiKey)
    }

    /// [`Project::command`] with Claude Code logged in as `login` says.
    fn command_as(&self, server: &ModelServer, args: &[&str], login: Login) -> Command {
        let mut cmd = Command::new(crate::support::DEBUSSY);
        cmd.args(args)
            .current_dir(self.root())
            .env_clear()
            .envs(self.sandbox.envs_with(server, login))
            .env("NO_COLOR", "1")
            .stdin(Stdio::null());
        cmd
    }

    /// `debussy run plan/MASTER_PLAN.md --output-format json` plus `extra`, bounded.
    fn run(&self, server: &ModelServer, extra: &[&str]) -> (i32, Vec<Value>) {
        let mut args = vec!["run", "plan/MASTER_PLAN.md", "--output-format", "json"];
        args.extend_from_slice(extra);
        run_json(self.command(server, &args), Duration::from_secs(180))
    }

    fn status(&self, server: &ModelServer) -> Value {
        let output = self
            .command(server, &["status", "--format", "json"])
            .output()
            .expect("status");
        serde_json::from_slice(&output.stdout).expect("status json")
    }

    fn commit_messages(&self) -> Vec<String> {
        project::commit_messages(self.root())
    }
}

/// The `agent.args` line (indented for the `agent` section) that lets the CLI edit files
/// and run commands without asking.
fn permission_args_yaml() -> String {
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

/// Main-thread requests grouped by Claude Code session, in order.
fn sessions(server: &ModelServer) -> Vec<Vec<RecordedRequest>> {
    let mut sessions: Vec<(String, Vec<RecordedRequest>)> = Vec::new();
    for request in server.main_requests() {
        let id = request.session_id().unwrap_or_default().to_owned();
        match sessions.iter_mut().find(|(known, _)| *known == id) {
            Some((_, requests)) => requests.push(request),
            None => sessions.push((id, vec![request])),
        }
    }
    sessions.into_iter().map(|(_, requests)| requests).collect()
}

#[test]
#[ignore = "needs the pinned Claude Code CLI (scripts/test-tools)"]
fn phase_one_restarts_twice_and_each_restart_carries_the_checkpoint() {
    let cli = claude::require();
    let project = Project::new(cli);
    project.plan(&[
        ("1", "test -f a.txt && test -f c.txt && test -f e.txt"),
        ("2", "test -f d.txt"),
    ]);
    let server = ModelServer::start(Scenario::new().turns([
        // Phase 1, session 1: writes a.txt, then its context crosses 80 %.
        project.write_turn("a.txt", "a\n", 50),
        Turn::new().text("Next, c.txt.").usage(usage(85)).hold(),
        // Session 2 (restart 1): writes c.txt, crosses again.
        project.write_turn("c.txt", "c\n", 40),
        Turn::new().text("Next, e.txt.").usage(usage(90)).hold(),
        // Session 3 (restart 2): finishes the phase.
        project.write_turn("e.txt", "e\n", 30),
        Turn::reply("Phase 1 is done.").usage(usage(31)),
        // Phase 2: one session.
        project.write_turn("d.txt", "d\n", 10),
        Turn::reply("Phase 2 is done.").usage(usage(11)),
    ]))
    .expect("model server");

    let (code, events) = project.run(&server, &[]);
    assert_eq!(code, 0, "events: {events:#?}");
    assert_eq!(named(&events, "restart").len(), 2);

    let sessions = sessions(&server);
    assert_eq!(
        sessions.len(),
        4,
        "three sessions for phase 1, one for phase 2"
    );
    assert_eq!(
        sessions[0].len(),
        2,
        "the first session was stopped before a third request"
    );
    assert_eq!(
        sessions[1].len(),
        2,
        "the second session was stopped before a third request"
    );
    let second = sessions[1][0].first_user_text();
    assert!(
        second.contains("# Checkpoint: phase 1 (Step 1), restart 1 of 3"),
        "{second}"
    );
    assert!(
        second.contains("a.txt") && second.contains("\n---\n"),
        "{second}"
    );
    let third = sessions[2][0].first_user_text();
    assert!(
        third.contains("restart 2 of 3") && third.contains("a.txt") && third.contains("c.txt"),
        "{third}"
    );
    assert!(
        !sessions[3][0].first_user_text().contains("# Checkpoint"),
        "phase 2 starts fresh"
    );

    let messages = project.commit_messages();
    assert_eq!(
        messages
            .iter()
            .filter(|m| m.contains("checkpoint (restart"))
            .count(),
        2,
        "{messages:?}"
    );
    assert!(
        messages[0].contains("phase 2 - Step 2 completed"),
        "{messages:?}"
    );
    assert!(server.unexpected().is_empty(), "{:#?}", server.unexpected());
}

#[test]
#[ignore = "needs the pinned Claude Code CLI (scripts/test-tools)"]
fn exceeding_max_restarts_fails_with_the_reason_in_state() {
    let cli = claude::require();
    let project = Project::new(cli);
    project.plan(&[("1", "true")]);
    let server = ModelServer::start(Scenario::new().turns([
        Turn::new().text("Working.").usage(usage(85)).hold(),
        Turn::new().text("Still working.").usage(usage(88)).hold(),
    ]))
    .expect("model server");
    let (code, events) = project.run(&server, &["--max-restarts", "1", "--max-retries", "0"]);
    assert_eq!(code, 1, "{events:#?}");
    let status = project.status(&server);
    assert_eq!(status["run"]["status"], "failed");
    assert_eq!(status["executions"][0]["outcome_code"], -3);
    assert!(
        status["executions"][0]["error"]
            .as_str()
            .is_some_and(|e| e.contains("max restarts exceeded"))
    );
}

#[test]
#[ignore = "needs the pinned Claude Code CLI (scripts/test-tools)"]
fn with_the_default_permissions_the_agent_edits_files_and_runs_commands() {
    let cli = claude::require();
    let project = Project::new(cli);
    project.plan_with_agent(&[("1", "test -s out.txt && test -f ran.txt")], "");
    let server = ModelServer::start(
        Scenario::new().turns([
            Turn::new()
                .text("Writing.")
                .tool_use(
                    "Write",
                    json!({"file_path": project.path("out.txt"), "content": "hello\n"}),
                )
                .usage(usage(10)),
            Turn::new()
                .text("Checking.")
                .tool_use(
                    "Bash",
                    json!({"command": "touch ran.txt && debussy progress '1.1: wrote out.txt'", "description": "check"}),
                )
                .usage(usage(11)),
            Turn::reply("Done.").usage(usage(12)),
        ]),
    )
    .expect("model server");
    let (code, events) = project.run(&server, &[]);
    assert_eq!(code, 0, "{events:#?}");
    assert_eq!(
        std::fs::read_to_string(project.root().join("out.txt")).expect("written"),
        "hello\n"
    );
    assert!(project.root().join("ran.txt").exists(), "{events:#?}");
    let summary = named(&events, "run_finished");
    assert!(
        summary[0]["summary"]["phases"][0]
            .get("refused_calls")
            .is_none(),
        "{summary:#?}"
    );
}

#[test]
#[ignore = "needs the pinned Claude Code CLI (scripts/test-tools)"]
fn a_refused_tool_call_is_shown_with_the_rule_that_allows_it() {
    let cli = claude::require();
    let project = Project::new(cli);
    project.plan_with_agent(
        &[("1", "test -s out.txt")],
        "  allowed_tools: [Read, Write]\n",
    );
    let server = ModelServer::start(
        Scenario::new()
            .turns([
                Turn::new()
                    .text("Writing.")
                    .tool_use(
                        "Write",
                        json!({"file_path": project.path("out.txt"), "content": "hello\n"}),
                    )
                    .usage(usage(10)),
                Turn::new()
                    .text("Testing.")
                    .tool_use(
                        "Bash",
                        json!({"command": "npm test -- --ci", "description": "run the tests"}),
                    )
                    .usage(usage(11)),
                Turn::reply("Done.").usage(usage(12)),
            ])
            .when_exhausted(Turn::reply("Nothing more to do.").usage(usage(12))),
    )
    .expect("model server");
    let (_code, events) = project.run(&server, &["--max-retries", "0"]);
    let refused = named(&events, "activity")
        .into_iter()
        .filter(|e| {
            let kind = &e["activity"]["kind"];
            kind["tool"] == "Bash"
                && kind["message"]
                    .as_str()
                    .is_some_and(|m| m.starts_with("permission denied"))
        })
        .count();
    assert_eq!(refused, 1, "{events:#?}");
    let compliance = named(&events, "compliance");
    assert!(
        compliance[0]
            .to_string()
            .contains("add `Bash(npm test:*)` to `agent.allowed_tools`"),
        "{compliance:#?}"
    );
    let summary = &named(&events, "run_finished")[0]["summary"];
    assert_eq!(
        summary["phases"][0]["refused_calls"],
        json!([{"call": "Bash: npm test -- --ci", "allow_with": "Bash(npm test:*)"}]),
        "{summary:#?}"
    );
}

#[test]
#[ignore = "needs the pinned Claude Code CLI (scripts/test-tools)"]
fn a_failing_gate_gets_a_remediation_session_that_fixes_it() {
    let cli = claude::require();
    let project = Project::new(cli);
    project.plan(&[("1", "grep -q right out.txt")]);
    let server = ModelServer::start(
        Scenario::new().turns([
            Turn::new()
                .text("Writing.")
                .tool_use(
                    "Write",
                    json!({"file_path": project.path("out.txt"), "content": "wrong\n"}),
                )
                .usage(usage(10)),
            Turn::reply("Done.").usage(usage(11)),
            // Claude Code refuses to overwrite a file it has not read in this session.
            Turn::new()
                .text("Reading.")
                .tool_use("Read", json!({"file_path": project.path("out.txt")}))
                .usage(usage(10)),
            Turn::new()
                .text("Fixing.")
                .tool_use(
                    "Write",
                    json!({"file_path": project.path("out.txt"), "content": "right\n"}),
                )
                .usage(usage(10)),
            Turn::reply("Fixed.").usage(usage(11)),
        ]),
    )
    .expect("model server");
    let (code, events) = project.run(&server, &[]);
    assert_eq!(code, 0, "{events:#?}");
    let sessions = sessions(&server);
    assert_eq!(sessions.len(), 2);
    let fix = sessions[1][0].first_user_text();
    assert!(
        fix.contains("needs these fixes") && fix.contains("gate `check` failed"),
        "{fix}"
    );
    let status = project.status(&server);
    assert_eq!(status["executions"][1]["remediation"], true);
    assert_eq!(status["executions"][1]["status"], "completed");
}

#[test]
#[ignore = "needs the pinned Claude Code CLI (scripts/test-tools)"]
fn ctrl_c_pauses_without_orphans_and_resume_completes() {
    let cli = claude::require();
    let project = Project::new(cli);
    project.plan(&[("1", "test -f done.txt")]);
    let server = ModelServer::start(
        Scenario::new().turns([
            Turn::new().text("Thinking hard.").stall(),
            Turn::new()
                .text("Writing.")
                .tool_use(
                    "Write",
                    json!({"file_path": project.path("done.txt"), "content": "ok\n"}),
                )
                .usage(usage(10)),
            Turn::reply("Done.").usage(usage(11)),
        ]),
    )
    .expect("model server");

    let mut child = project
        .command(
            &server,
            &["run", "plan/MASTER_PLAN.md", "--output-format", "json"],
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let pid = lines
        .by_ref()
        .map_while(Result::ok)
        .map(|line| serde_json::from_str::<Value>(&line).expect("json"))
        .find(|event| event["event"] == "session_started")
        .and_then(|event| event["pid"].as_u64())
        .expect("a session started");
    server
        .wait_for_main_requests(1, Duration::from_secs(60))
        .expect("the agent asked the model");
    let debussy = nix::unistd::Pid::from_raw(i32::try_from(child.id()).expect("pid"));
    nix::sys::signal::kill(debussy, nix::sys::signal::Signal::SIGINT).expect("SIGINT");
    let _rest: Vec<String> = lines.map_while(Result::ok).collect();
    assert_eq!(wait(&mut child, Duration::from_secs(60)), 130);
    assert!(group_gone(pid), "the agent's process group survived");
    assert_eq!(project.status(&server)["run"]["status"], "paused");

    server.release();
    let (code, events) = project.run(&server, &["--resume"]);
    assert_eq!(code, 0, "{events:#?}");
    assert_eq!(events[0]["resumed"], true);
    assert_eq!(project.status(&server)["run"]["status"], "completed");
}

mod escape;
mod failures;
mod guards;
mod handoff;
mod parallel;
mod safe_stop;
mod usage_limits;
mod window;
