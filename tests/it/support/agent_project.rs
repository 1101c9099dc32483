//! [`AgentProject`]: a git project in a real agent CLI's sandbox, whose one-phase plan
//! `debussy run` hands to that agent. One type for every agent; each agent's sandbox
//! says where the project is and what environment points the CLI at the model server.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::cli::PinnedCli;
use super::model_server::{ModelServer, Refusal, Scenario, Turn};
use super::project::{self, events_named, run_json};

/// What an agent's sandbox gives a project: which agent it is for, a working directory,
/// and the environment that keeps the agent offline, talking to the scripted model server.
pub trait AgentSandbox: Sized {
    /// `agent.kind`: `codex`, `gemini`.
    const KIND: &'static str;
    /// The agent's name in the plan's title.
    const NAME: &'static str;
    /// The model the configuration names.
    const MODEL: &'static str;
    /// The agent's pinned CLI; see [`super::cli::require`] for what happens when it is
    /// missing.
    fn cli() -> PinnedCli;
    /// A sandbox whose agent talks to `server`.
    fn for_server(server: &ModelServer) -> std::io::Result<Self>;
    /// The project's working tree.
    fn cwd(&self) -> &Path;
    /// The environment `debussy` (and so the agent) runs with.
    fn envs(&self) -> Vec<(String, String)>;
}

/// `AgentSandbox` for an agent module's `Sandbox`, whose `new`, `cwd` and `envs` do the
/// work, with the agent's kind, name, model and `require`.
macro_rules! agent_sandbox {
    ($agent:ident, $kind:literal, $name:literal) => {
        impl AgentSandbox for super::$agent::Sandbox {
            const KIND: &'static str = $kind;
            const NAME: &'static str = $name;
            const MODEL: &'static str = super::$agent::DEFAULT_MODEL;

            fn cli() -> PinnedCli {
                super::$agent::require()
            }

            fn for_server(server: &ModelServer) -> std::io::Result<Self> {
                Self::new(server)
            }

            fn cwd(&self) -> &Path {
                self.cwd()
            }

            fn envs(&self) -> Vec<(String, String)> {
                self.envs()
            }
        }
    };
}

agent_sandbox!(codex, "codex", "Codex");
agent_sandbox!(gemini, "gemini", "Gemini");

/// A git project in an agent's sandbox whose runs use the agent's pinned CLI.
pub struct AgentProject<S> {
    sandbox: S,
    program: PathBuf,
}

impl<S: AgentSandbox> AgentProject<S> {
    /// A project with an empty repository in a new sandbox whose agent, the pinned
    /// CLI, talks to `server`.
    pub fn new(server: &ModelServer) -> Self {
        let program = S::cli().path().to_path_buf();
        let sandbox = S::for_server(server).expect("sandbox");
        project::init_repo(sandbox.cwd());
        AgentProject { sandbox, program }
    }

    /// Its working tree.
    pub fn root(&self) -> &Path {
        self.sandbox.cwd()
    }

    /// The sandbox's home directory, where the agent's own files are.
    pub fn home(&self) -> PathBuf {
        self.sandbox
            .envs()
            .into_iter()
            .find_map(|(key, value)| (key == "HOME").then(|| PathBuf::from(value)))
            .expect("the sandbox sets HOME")
    }

    /// Write `text` to `relative`, creating directories.
    pub fn write(&self, relative: &str, text: &str) {
        project::write_file(self.root(), relative, text);
    }

    /// One phase gated by `gate`, committed with a configuration that runs the agent
    /// with a `window`-token context window and `extra` top-level lines (`timeout: 120`
    /// and `max_retries: 0` unless they set them).
    pub fn plan(&self, gate: &str, window: u64, extra: &str) {
        let (kind, name, model, program) = (S::KIND, S::NAME, S::MODEL, &self.program);
        let mut extra = extra.to_owned();
        for (key, default) in [("timeout", "120"), ("max_retries", "0")] {
            if !extra.contains(&format!("{key}:")) {
                extra = format!("{key}: {default}\n{extra}");
            }
        }
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
                "model: {model}\nrestart_delay: 0\n{extra}\
                 agent:\n  kind: {kind}\n  command: {}\n  model_context_window: {window}\n",
                program.display(),
            ),
        );
        project::commit_all(self.root(), "plan");
    }

    /// The run completed the plan's one phase: the newest commit says so.
    pub fn assert_completed_commit(&self) {
        let messages = project::commit_messages(self.root());
        assert!(
            messages[0].contains("phase 1 - Step 1 completed"),
            "{messages:?}"
        );
    }

    /// The run committed the checkpoint of its first restart.
    pub fn assert_first_checkpoint_committed(&self) {
        let messages = project::commit_messages(self.root());
        assert!(
            messages.iter().any(|m| m.contains("checkpoint (restart 1")),
            "{messages:?}"
        );
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

    /// [`AgentProject::run`], which must take less than `limit`.
    pub fn run_within(&self, limit: Duration) -> (i32, Vec<Value>) {
        let started = Instant::now();
        let run = self.run();
        let took = started.elapsed();
        assert!(took < limit, "the run took {took:?}, not under {limit:?}");
        run
    }
}

/// A run of the agent `S` whose model never answers: the attempt is timed out by a
/// three-second `timeout`.
pub fn assert_a_silent_model_is_timed_out<S: AgentSandbox>() {
    let server = ModelServer::start(Scenario::new().turn(Turn::reply("late").stall()))
        .expect("model server");
    let project = AgentProject::<S>::new(&server);
    project.plan("true", 100_000, "timeout: 3\n");
    project::assert_timed_out(|| project.run());
    server.release();
}

/// A run of the agent `S` whose key the model server refuses:
/// the attempt ends within a minute as the agent's failure, its error in the CLI's own
/// `words` and naming `key_env`, the variable that fixes it.
pub fn assert_a_bad_key_ends_the_attempt<S: AgentSandbox>(words: &str, key_env: &str) {
    let server = ModelServer::start(
        Scenario::new()
            .turn(Turn::reply("unreachable"))
            .refuse(Refusal::BadKey, None),
    )
    .expect("model server");
    let project = AgentProject::<S>::new(&server);
    project.plan("true", 100_000, "");
    let (code, events) = project.run_within(Duration::from_secs(60));
    assert_eq!(code, 1, "events: {events:#?}");
    let ended = events_named(&events, "session_ended")[0];
    assert_eq!(ended["outcome"], "agent_failure", "{ended:#}");
    let error = project::phase_error(&events);
    assert!(
        error.contains("refused its credentials")
            && error.contains(words)
            && error.contains(key_env),
        "{error}"
    );
}

/// A run of the agent `S` whose usage limit resets in hours (the Gemini CLI's daily
/// quota names no reset: it is midnight Pacific time), past `limits.max_wait`: the run
/// pauses at once (exit 3) saying how long a wait reaches the reset, and spends no
/// attempt on it.
pub fn assert_a_usage_limit_past_max_wait_pauses_the_run<S: AgentSandbox>() {
    let server = ModelServer::start(
        Scenario::new()
            .turn(Turn::reply("unreachable"))
            .refuse(Refusal::UsageLimit, Some(Duration::from_secs(3 * 3600))),
    )
    .expect("model server");
    let project = AgentProject::<S>::new(&server);
    project.plan("true", 100_000, "max_retries: 2\nlimits:\n  max_wait: 1s\n");
    let (code, events) = project.run_within(Duration::from_secs(90));
    assert_eq!(code, 3, "events: {events:#?}");
    let limit = events_named(&events, "limit_reached");
    assert_eq!(limit.len(), 1, "events: {events:#?}");
    assert_eq!(limit[0]["limit"], "limits.max_wait", "{:#}", limit[0]);
    // The reset is known, so is the wait that reaches it (whole hours); an unknown one
    // would double the limit or take the next backoff, whichever is longer.
    let raise = limit[0]["raise_with"].as_str().unwrap_or_default();
    assert!(
        raise.starts_with("--max-wait ") && raise.ends_with('h'),
        "{:#}",
        limit[0]
    );
    assert!(
        limit[0]["detail"]
            .as_str()
            .is_some_and(|detail| detail.starts_with("the agent's usage limit resets at ")),
        "{:#}",
        limit[0]
    );
    assert_eq!(
        events_named(&events, "phase_started").len(),
        1,
        "no attempt spent on the limit: {events:#?}"
    );
}

/// A run of the agent `S` whose model does not exist: the attempt fails at once in the
/// CLI's own `words`, and no retry is spent on it.
pub fn assert_an_unknown_model_fails_without_a_retry<S: AgentSandbox>(words: &str) {
    refused_at_once::<S>(Refusal::UnknownModel, words);
}

/// A run of the agent `S` whose account has no credit left: the attempt fails at once in
/// the CLI's own `words`, saying where to add credit, with no wait and no retry.
pub fn assert_used_up_credit_fails_without_a_wait_or_a_retry<S: AgentSandbox>(
    words: &str,
    billing: &str,
) {
    let error = refused_at_once::<S>(Refusal::NoCredit, words);
    assert!(
        error.contains("no credit left") && error.contains(billing),
        "{error}"
    );
}

/// A run of the agent `S` whose every request is refused with `refusal`: the attempt
/// fails at once in the CLI's own `words`, with no retry and no wait; the phase's error.
fn refused_at_once<S: AgentSandbox>(refusal: Refusal, words: &str) -> String {
    let server = ModelServer::start(
        Scenario::new()
            .turn(Turn::reply("unreachable"))
            .refuse(refusal, None),
    )
    .expect("model server");
    let project = AgentProject::<S>::new(&server);
    project.plan("true", 100_000, "max_retries: 2\n");
    let (code, events) = project.run_within(Duration::from_secs(90));
    assert_eq!(code, 1, "events: {events:#?}");
    assert_eq!(
        events_named(&events, "phase_started").len(),
        1,
        "no retry of a {refusal:?}: {events:#?}"
    );
    assert!(
        events_named(&events, "waiting_for_limit").is_empty(),
        "no wait for a {refusal:?}: {events:#?}"
    );
    let error = project::phase_error(&events);
    assert!(error.contains(words), "{error}");
    error
}

/// A run of the agent `S` whose API cannot be reached (nothing listens where it points
/// any more): once the agent has been cut off for `agent.offline_grace` (1 s here), its
/// session is stopped in the agent's own words, no attempt is spent, and with
/// `limits.max_wait` shorter than the first backoff the run pauses (exit 3) saying the
/// agent could not reach its API. Without the grace the agent retried until the
/// session's timeout (Codex waits for the network without end), then failed the attempt
/// as timed out.
pub fn assert_an_unreachable_api_pauses_without_spending_an_attempt<S: AgentSandbox>(words: &str) {
    let server =
        ModelServer::start(Scenario::new().turn(Turn::reply("unreachable"))).expect("model server");
    let project = AgentProject::<S>::new(&server);
    project.plan("true", 100_000, "max_retries: 2\nlimits:\n  max_wait: 1s\n");
    drop(server);
    let mut command = project.command(&["run", "plan/MASTER_PLAN.md", "--output-format", "json"]);
    command.env("DEBUSSY_AGENT__OFFLINE_GRACE", "1");
    let started = Instant::now();
    let (code, events) = run_json(command, Duration::from_secs(100));
    assert!(started.elapsed() < Duration::from_secs(90), "{events:#?}");
    assert_eq!(code, 3, "events: {events:#?}");
    let ended = events_named(&events, "session_ended");
    assert_eq!(ended.len(), 1, "{events:#?}");
    assert_eq!(ended[0]["outcome"], "agent_failure", "{:#}", ended[0]);
    let limit = events_named(&events, "limit_reached");
    assert_eq!(limit.len(), 1, "events: {events:#?}");
    assert_eq!(limit[0]["limit"], "limits.max_wait", "{:#}", limit[0]);
    // Not even the first wait (30 s) fits in a second, and the hint reaches it.
    assert_eq!(
        limit[0]["detail"],
        "the agent could not reach its API, and a first wait of 30s is past limits.max_wait (1s)",
        "{:#}",
        limit[0]
    );
    assert_eq!(limit[0]["raise_with"], "--max-wait 30s", "{:#}", limit[0]);
    assert_eq!(
        events_named(&events, "phase_started").len(),
        1,
        "no attempt spent on the network: {events:#?}"
    );
    let text = serde_json::to_string(&events).expect("json");
    assert!(text.contains(words), "the agent's own words: {events:#?}");
}

/// A run of the agent `S` whose API nothing answers until the run waits for it: the
/// wait ends at debussy's next try of the address the agent's configuration names, not
/// after the 30 s backoff, and the same attempt completes.
pub fn assert_an_api_that_comes_back_ends_the_wait<S: AgentSandbox>() {
    let port = super::ports::Port::reserve();
    let first = ModelServer::start_at(&port, Scenario::new()).expect("model server");
    let project = AgentProject::<S>::new(&first);
    project.plan("true", 100_000, "");
    drop(first);
    let mut run = project.command(&["run", "plan/MASTER_PLAN.md", "--output-format", "json"]);
    run.env("DEBUSSY_AGENT__OFFLINE_GRACE", "1");
    super::api_returns::assert_the_wait_ends_once_the_api_is_back(run, || {
        ModelServer::start_at(&port, Scenario::new().turn(Turn::reply("Done.")))
            .expect("the API comes up")
    });
}
