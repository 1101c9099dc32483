//! [`SessionSpec`]: everything one session needs to run, as plain values. The caller
//! (the orchestrator) computes paths and reads remembered windows from the state store;
//! this layer never touches configuration files or the database.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::agent::{AgentBackend, BackendSettings, UsageReporting};
use crate::config::{AgentKind, Config, Prices};
use crate::context::{MeterSettings, WindowInputs};

use super::SessionError;

/// The settings agent `kind` runs with, from its profile (`agents.<kind>`). The run's
/// default kind (`agent.kind`) runs `model` (its profile's, or the old `model` key);
/// another kind runs its profile's model, else the kind's default.
#[must_use]
pub fn backend_settings(config: &Config, kind: AgentKind) -> BackendSettings {
    let profile = config.agents.get(kind);
    let model = if kind == config.agent.kind {
        config.model.clone()
    } else {
        profile
            .model
            .clone()
            .unwrap_or_else(|| kind.default_model().to_owned())
    };
    BackendSettings {
        kind,
        command: profile.command.clone(),
        args: profile.args.clone(),
        env: profile.env.clone(),
        model,
        permissions: profile.permissions,
        allowed_tools: config.agent.allowed_tools.clone(),
        model_context_window: profile.model_context_window,
        context_threshold: config.context_threshold,
        scenario: config.agent.scenario.clone(),
    }
}

/// The settings of the run's default kind (`agent.kind`).
#[must_use]
pub fn default_backend_settings(config: &Config) -> BackendSettings {
    backend_settings(config, config.agent.kind)
}

/// The context meter's settings (`context_threshold`, `tool_call_threshold`,
/// `agent.token_estimate_factor`, `agent.prices`) for an agent reporting usage as
/// `usage_reporting` says.
#[must_use]
pub fn meter_settings(config: &Config, usage_reporting: UsageReporting) -> MeterSettings {
    MeterSettings {
        threshold: config.context_threshold,
        tool_call_threshold: config.tool_call_threshold,
        token_estimate_factor: config.agent.token_estimate_factor,
        usage_reporting,
        stop_on_compact: true,
        prices: config
            .agent
            .prices
            .iter()
            .filter_map(|(fragment, text)| {
                Prices::parse(text)
                    .ok()
                    .map(|prices| (fragment.clone(), prices))
            })
            .collect(),
    }
}

/// What to run and how to watch it.
#[derive(Clone)]
pub struct SessionSpec {
    /// The agent backend: builds the command line and parses the output.
    pub backend: Arc<dyn AgentBackend>,
    /// The model name passed to the agent (`--model`).
    pub model: String,
    /// The prompt, written to the agent's stdin (then closed).
    pub prompt: String,
    /// Resume a stopped session for one turn without tools (the agent-written handoff)
    /// instead of starting a fresh one.
    pub resume: Option<Resume>,
    /// The agent's working directory (the project root).
    pub cwd: PathBuf,
    /// Extra environment for the agent, applied last (the run's
    /// [`RunEnv::vars`](crate::run_env::RunEnv::vars), test settings). The backend's own
    /// variables (`agent.env`) come before these.
    pub env: Vec<(String, String)>,
    /// Start from debussy's environment (`true`, the default) or from an empty one, in
    /// which case `env` must provide everything, `PATH` included.
    pub inherit_env: bool,
    /// Stop the session as timed out after this long; `None` for no limit.
    pub timeout: Option<Duration>,
    /// The context meter's thresholds.
    pub meter: MeterSettings,
    /// What to do when the agent is about to compact its own context (Claude Code's
    /// `PreCompact` hook, see [`super::guard`]); off when the session cannot be
    /// restarted, so the agent may compact and carry on.
    pub compaction_guard: super::guard::CompactionGuard,
    /// How the context window is resolved: the configured override, the windows
    /// remembered for models in earlier sessions, the configured model name.
    pub window: WindowInputs,
    /// Time between the steps of the stop ladder (SIGINT, SIGTERM, then SIGKILL).
    pub stop_grace: Duration,
    /// How long a context stop decided while a tool call runs waits for the call's
    /// result before it interrupts it (`agent.tool_grace`); zero stops at once.
    pub tool_grace: Duration,
    /// How long the agent may retry an API it cannot reach, with nothing from the model
    /// in between, before the session is stopped as cut off (`agent.offline_grace`).
    pub offline_grace: Duration,
    /// The agent's last stderr lines kept for the report (`agent.stderr_tail_lines`).
    pub stderr_tail_lines: usize,
    /// Where the raw NDJSON goes
    /// (`.debussy/runs/<run>/<phase>/attempt-<n>-session-<k>.jsonl`); directories are
    /// created, an existing file is replaced (a link in its place is refused).
    pub log_path: PathBuf,
    /// Where debussy's own directories start, when `log_path` is inside a project (its
    /// root): every directory from there to the log's must be a real directory, made by
    /// debussy where missing and never a link, or the session does not start. `None`
    /// (the default) makes the log's directory as it is.
    pub files_root: Option<PathBuf>,
}

/// The stopped session a handoff resumes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resume {
    /// The agent's id of the session.
    pub session_id: String,
    /// Its context window in tokens, as the meter measured it.
    pub window: Option<u64>,
}

impl SessionSpec {
    /// A spec from the configuration and the agent's settings, the one way a session's
    /// settings are made (the run takes one per agent and gives each session its prompt,
    /// log path and environment): the model and configured window of `agent` (its
    /// profile), `timeout` (0 means none), `context_threshold`, `tool_call_threshold`,
    /// `agent.token_estimate_factor`, `agent.stop_grace`. The meter trusts usage as the
    /// backend reports it. No remembered windows and no extra environment: set
    /// [`window.remembered`](WindowInputs::remembered) and [`env`](Self::env) after.
    ///
    /// # Errors
    /// [`SessionError::StopGrace`] when `agent.stop_grace` is negative, not finite, or
    /// too large to be a duration.
    pub fn from_config(
        config: &Config,
        agent: &BackendSettings,
        backend: Arc<dyn AgentBackend>,
        prompt: impl Into<String>,
        cwd: impl Into<PathBuf>,
        log_path: impl Into<PathBuf>,
    ) -> Result<Self, SessionError> {
        let grace = config.agent.stop_grace;
        let stop_grace = Duration::try_from_secs_f64(grace)
            .map_err(|_| SessionError::StopGrace { value: grace })?;
        let meter = meter_settings(config, backend.usage_reporting());
        let backend_name = backend.name();
        Ok(SessionSpec {
            backend,
            model: agent.model.clone(),
            prompt: prompt.into(),
            resume: None,
            cwd: cwd.into(),
            env: Vec::new(),
            inherit_env: true,
            timeout: Some(config.timeout.duration()),
            meter,
            compaction_guard: super::guard::CompactionGuard::Off,
            window: WindowInputs {
                configured: agent.model_context_window,
                remembered: std::collections::BTreeMap::new(),
                model: Some(agent.model.clone()),
                agent: Some(backend_name),
            },
            stop_grace,
            tool_grace: config.agent.tool_grace.duration(),
            offline_grace: config.agent.offline_grace.duration(),
            stderr_tail_lines: config.agent.stderr_tail_lines,
            log_path: log_path.into(),
            files_root: None,
        })
    }

    /// Remember that `model` reported a window of `tokens` in an earlier session (what
    /// [`crate::state::Store::context_window`] returned).
    #[must_use]
    pub fn with_remembered_window(mut self, model: impl Into<String>, tokens: u64) -> Self {
        self.window.remembered.insert(model.into(), tokens);
        self
    }

    /// Add environment variables (applied after the backend's own).
    #[must_use]
    pub fn with_env<I, K, V>(mut self, vars: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<String>,
    {
        self.env.extend(
            vars.into_iter()
                .map(|(key, value)| (key.into(), value.into())),
        );
        self
    }
}

impl fmt::Debug for SessionSpec {
    /// The backend by name and the prompt by size: it may be a whole plan.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SessionSpec")
            .field("backend", &self.backend.name())
            .field("model", &self.model)
            .field("prompt_bytes", &self.prompt.len())
            .field("resume", &self.resume)
            .field("cwd", &self.cwd)
            .field("env", &self.env)
            .field("inherit_env", &self.inherit_env)
            .field("timeout", &self.timeout)
            .field("meter", &self.meter)
            .field("compaction_guard", &self.compaction_guard)
            .field("window", &self.window)
            .field("stop_grace", &self.stop_grace)
            .field("tool_grace", &self.tool_grace)
            .field("offline_grace", &self.offline_grace)
            .field("log_path", &self.log_path)
            .field("files_root", &self.files_root)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::claude::ClaudeBackend;
    use crate::config::{AgentConfig, AgentPermissions, ContextLimit, Seconds};

    fn backend() -> Arc<dyn AgentBackend> {
        Arc::new(ClaudeBackend::new(&default_backend_settings(
            &Config::default(),
        )))
    }

    fn spec(config: &Config, prompt: &str) -> Result<SessionSpec, SessionError> {
        let agent = default_backend_settings(config);
        SessionSpec::from_config(config, &agent, backend(), prompt, "/p", "/p/log.jsonl")
    }

    #[test]
    fn takes_its_settings_from_the_configuration() {
        let config = Config {
            model: "sonnet".into(),
            timeout: Seconds(90),
            context_threshold: ContextLimit::At(70.0),
            agent: AgentConfig {
                stop_grace: 0.25,
                ..AgentConfig::default()
            },
            ..Config::default()
        };
        let mut config = config;
        config.agents.claude.model_context_window = Some(500_000);
        let spec = spec(&config, "do it")
            .expect("spec")
            .with_remembered_window("sonnet", 300_000)
            .with_env([("DEBUSSY_RUN_ID", "r1")]);
        assert_eq!(spec.model, "sonnet");
        assert_eq!(spec.timeout, Some(Duration::from_secs(90)));
        assert_eq!(spec.stop_grace, Duration::from_millis(250));
        assert!(spec.meter.threshold == ContextLimit::At(70.0));
        assert_eq!(spec.meter.usage_reporting, UsageReporting::PerMessage);
        assert_eq!(spec.window.configured, Some(500_000));
        assert_eq!(spec.window.remembered.get("sonnet"), Some(&300_000));
        assert_eq!(spec.env, [("DEBUSSY_RUN_ID".to_owned(), "r1".to_owned())]);
        let debug = format!("{spec:?}");
        assert!(
            debug.contains("\"claude\"") && debug.contains("prompt_bytes: 5"),
            "{debug}"
        );
    }

    #[test]
    fn a_bad_stop_grace_is_an_error_naming_the_key() {
        for grace in [-1.0, f64::NAN, f64::INFINITY] {
            let config = Config {
                agent: AgentConfig {
                    stop_grace: grace,
                    ..AgentConfig::default()
                },
                ..Config::default()
            };
            let err = spec(&config, "").expect_err("invalid");
            assert!(err.to_string().contains("agent.stop_grace"), "{err}");
        }
    }

    #[test]
    fn each_kind_reads_its_own_profile() {
        let mut config = Config {
            model: "sonnet".into(),
            ..Config::default()
        };
        config.agents.claude.command = Some("/opt/claude".into());
        config.agents.codex.command = Some("/opt/codex".into());
        config.agents.codex.args = vec!["-c".into(), "x=1".into()];
        config.agents.codex.model_context_window = Some(400_000);
        config.agents.gemini.model = Some("gemini-2.5-pro".into());
        config.agents.gemini.permissions = AgentPermissions::Bypass;

        let claude = default_backend_settings(&config);
        assert_eq!(claude.kind, AgentKind::Claude);
        assert_eq!(claude.command.as_deref(), Some("/opt/claude"));
        assert_eq!(claude.model, "sonnet");

        let codex = backend_settings(&config, AgentKind::Codex);
        assert_eq!(codex.command.as_deref(), Some("/opt/codex"));
        assert_eq!(codex.args, ["-c", "x=1"]);
        assert_eq!(codex.model, "", "Codex runs its own default model");
        assert_eq!(codex.model_context_window, Some(400_000));
        assert_eq!(codex.permissions, AgentPermissions::AcceptEdits);

        let gemini = backend_settings(&config, AgentKind::Gemini);
        assert_eq!(gemini.command, None, "never another kind's program");
        assert_eq!(gemini.model, "gemini-2.5-pro");
        assert_eq!(gemini.permissions, AgentPermissions::Bypass);
        assert_eq!(gemini.with_model("gemini-3").model, "gemini-3");

        assert_eq!(backend_settings(&config, AgentKind::Sim).model, "opus");
    }

    #[test]
    fn the_meter_takes_the_configured_thresholds() {
        let config = Config {
            context_threshold: ContextLimit::At(65.0),
            tool_call_threshold: 7,
            agent: AgentConfig {
                token_estimate_factor: 1.2,
                ..AgentConfig::default()
            },
            ..Config::default()
        };
        let settings = meter_settings(&config, UsageReporting::PerMessage);
        assert_eq!(settings.threshold, ContextLimit::At(65.0));
        assert_eq!(settings.tool_call_threshold, 7);
        assert_eq!(settings.token_estimate_factor, 1.2);
    }
}
