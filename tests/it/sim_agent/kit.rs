//! What the sim agent tests share: running the player and reading back what it printed.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use debussy::agent::{AgentEvent, AssistantBlock, UsageReporting, UserBlock, stream_json};

use debussy::context::{ContextMeter, MeterSettings, StopReason, WindowInputs};

use crate::support::scenario::{Action, Scenario, Script, Status, Task, Todo, TodoStatus, Turn};

pub(super) const BIN: &str = crate::support::DEBUSSY;
pub(super) const TIMEOUT: Duration = Duration::from_secs(60);

/// What one run of the player produced.
pub(super) struct Run {
    pub(super) events: Vec<AgentEvent>,
    pub(super) status: std::process::ExitStatus,
    pub(super) stderr: String,
    pub(super) stdout: String,
}

impl Run {
    pub(super) fn result(&self) -> &debussy::agent::SessionResult {
        match self.events.last() {
            Some(AgentEvent::Result(result)) => result,
            other => panic!(
                "last event is not a result: {other:?}\nstderr: {}",
                self.stderr
            ),
        }
    }

    pub(super) fn tool_results(&self) -> Vec<(&str, String, bool, Option<&str>)> {
        self.events
            .iter()
            .filter_map(|event| match event {
                AgentEvent::User(user) => Some(user),
                _ => None,
            })
            .flat_map(|user| {
                user.content.iter().filter_map(move |block| match block {
                    UserBlock::ToolResult(result) => Some((
                        result.tool_use_id.as_str(),
                        result.content.texts().collect::<Vec<_>>().join(""),
                        result.is_error,
                        user.parent_tool_use_id.as_deref(),
                    )),
                    _ => None,
                })
            })
            .collect()
    }

    pub(super) fn tool_uses(&self) -> Vec<(&str, &str, &serde_json::Value, Option<&str>)> {
        self.events
            .iter()
            .filter_map(|event| match event {
                AgentEvent::Assistant(message) => Some(message),
                _ => None,
            })
            .flat_map(|message| {
                message.content.iter().filter_map(move |block| match block {
                    AssistantBlock::ToolUse(call) => Some((
                        call.id.as_str(),
                        call.name.as_str(),
                        &call.input,
                        message.parent_tool_use_id.as_deref(),
                    )),
                    _ => None,
                })
            })
            .collect()
    }

    pub(super) fn meter(&self, threshold: f64) -> (ContextMeter, Vec<StopReason>) {
        let mut meter = ContextMeter::new(
            MeterSettings {
                threshold: threshold.into(),
                tool_call_threshold: 100,
                token_estimate_factor: 1.0,
                usage_reporting: UsageReporting::PerMessage,
                stop_on_compact: true,
                prices: Vec::new(),
            },
            WindowInputs::default(),
        );
        let stops = self
            .events
            .iter()
            .filter_map(|event| meter.observe(event))
            .collect();
        (meter, stops)
    }
}

/// Run the player on `scenario` in `cwd` with `DEBUSSY_*` variables from `env`.
pub(super) fn play(cwd: &Path, scenario: &Path, env: &[(&str, &str)], prompt: &str) -> Run {
    let mut command = Command::new(BIN);
    command
        .args(["__sim-agent"])
        .arg(scenario)
        .args(["--model", "sim-test"])
        .current_dir(cwd)
        .env_remove("DEBUSSY_PHASE_ID")
        .env_remove("DEBUSSY_ATTEMPT")
        .env_remove("DEBUSSY_RESTART")
        .env_remove("DEBUSSY_RUN_ID")
        .env_remove("DEBUSSY_PROJECT_ROOT")
        .envs(env.iter().copied());
    run_with_stdin(command, prompt)
}

/// Play `scenario` from a fresh temp dir, with no `DEBUSSY_*` variables and a prompt it
/// does not check.
pub(super) fn play_alone(scenario: &Scenario) -> Run {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = write(dir.path(), "s.yaml", scenario);
    play(dir.path(), &path, &[], "p")
}

/// Run the player `command` with `prompt` on its stdin, killing it past [`TIMEOUT`].
pub(super) fn run_with_stdin(mut command: Command, prompt: &str) -> Run {
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().expect("spawn debussy");
    let mut stdin = child.stdin.take().expect("stdin");
    match stdin.write_all(prompt.as_bytes()) {
        // A player that refuses its scenario exits without reading its prompt.
        Err(err) if err.kind() == std::io::ErrorKind::BrokenPipe => {}
        written => written.expect("write prompt"),
    }
    drop(stdin);
    let (tx, rx) = mpsc::channel();
    let pid = child.id();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let output = match rx.recv_timeout(TIMEOUT) {
        Ok(output) => output.expect("wait"),
        Err(_) => {
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
            panic!("the sim agent did not finish within {TIMEOUT:?}");
        }
    };
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    Run {
        events: output
            .stdout
            .split(|b| *b == b'\n')
            .filter_map(stream_json::parse_line)
            .collect(),
        status: output.status,
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        stdout,
    }
}

/// Write `scenario` to `name` in `dir`; its path.
pub(super) fn write(dir: &Path, name: &str, scenario: &Scenario) -> PathBuf {
    write_text(dir, name, &scenario.to_yaml())
}

/// Write scenario text that is no scenario of the builder's (a malformed one) to `name`
/// in `dir`; its path.
pub(super) fn write_text(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write scenario");
    path
}

/// Phase 3's script, using every kind of turn and tool call, with a subagent whose
/// context never counts for the main thread.
pub(super) fn workflow() -> Scenario {
    let count = Task::new("Count files", "Count the files in out/", "One file.")
        .turn(Turn::say("Counting.").percent(90).bash("ls out | wc -l"));
    Scenario::new().window(100_000).script(
        Script::phase("3").expect_prompt("Do phase three").turns([
            Turn::say("Planning.")
                .think("Two files, then a check.")
                .percent(20)
                .todos([
                    Todo::with("Write files", TodoStatus::InProgress),
                    Todo::new("Check them"),
                ]),
            Turn::say("Writing.")
                .percent(30)
                .writes("out/a.txt", "alpha ${PHASE}/${ATTEMPT}/${RESTART}\n")
                .writes("${SCENARIO_DIR}/notes.md", "## Summary\n")
                .bash("cat out/a.txt; echo err >&2")
                .bash("exit 3")
                .read("out/a.txt")
                .read("missing.txt"),
            Turn::say("Delegating.")
                .percent(35)
                .tool(Action::Task(count)),
            Turn::say("Reporting.")
                .percent(40)
                .done_as(Status::Completed),
            Turn::say("All done.").context(41_000),
        ]),
    )
}
