//! The simulated agent's backend: [`SimBackend`] launches the sim agent ([`crate::sim`])
//! and reads its output in the format its scenario speaks.
//!
//! It runs the debussy executable itself (or `agents.sim.command`) as
//! `debussy __sim-agent SCENARIO --model M`, with the prompt on stdin. That process plays a
//! script from a YAML scenario (documented in `docs/sim-agent.md`): it really writes files
//! and runs commands, and prints the real agent's output format, so the rest of debussy
//! cannot tell it from the real agent.
//!
//! The scenario is `agent.scenario` when configured (relative to the project root), else
//! `sim-scenario.yaml` beside the master plan ([`scenario_path`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::{AgentBackend, AgentCommand, AgentError, BackendSettings};
use crate::sim::{SUBCOMMAND, Scenario, formats};

/// File name of the scenario looked for beside the master plan.
pub const DEFAULT_SCENARIO_FILE: &str = "sim-scenario.yaml";

/// Where the sim agent's scenario is: `configured` (`agent.scenario`, relative to
/// `project_root`), else `sim-scenario.yaml` beside `plan_path` (as the plan was read:
/// relative to the current directory, which may be below the project's root), else in
/// `project_root`.
#[must_use]
pub fn scenario_path(
    configured: Option<&Path>,
    project_root: &Path,
    plan_path: Option<&Path>,
) -> PathBuf {
    if let Some(configured) = configured {
        return project_root.join(configured);
    }
    let dir = plan_path
        .map(|plan| std::path::absolute(plan).unwrap_or_else(|_| project_root.join(plan)))
        .and_then(|plan| plan.parent().map(Path::to_path_buf))
        .unwrap_or_else(|| project_root.to_path_buf());
    dir.join(DEFAULT_SCENARIO_FILE)
}

/// The simulated agent backend.
#[derive(Debug)]
pub struct SimBackend {
    program: Option<String>,
    env: BTreeMap<String, String>,
    scenario: PathBuf,
    /// The scenario's output format, read when the backend is made (Claude Code's when
    /// the scenario cannot be read yet: [`AgentBackend::command`] reports why).
    format: formats::Format,
    gemini: super::gemini::stream_json::Parser,
}

impl SimBackend {
    /// A backend playing `scenario`, run by the profile's program if set, else by the
    /// current executable. The profile's `args` are not used: the player takes no options.
    #[must_use]
    pub fn new(settings: &BackendSettings, scenario: PathBuf) -> Self {
        let format = Scenario::load(&scenario)
            .map(|scenario| scenario.format)
            .unwrap_or_default();
        SimBackend {
            program: settings.command.clone(),
            env: settings.env.clone(),
            scenario,
            format,
            gemini: super::gemini::stream_json::Parser::default(),
        }
    }

    /// The scenario file this backend plays.
    #[must_use]
    pub fn scenario(&self) -> &Path {
        &self.scenario
    }

    fn program(&self) -> Result<PathBuf, AgentError> {
        match &self.program {
            Some(program) => super::program::find_program(
                program,
                "set `agents.sim.command` to the path of the debussy binary, or unset it to use the running one",
            ),
            None => crate::process::own_executable().map_err(AgentError::CurrentExe),
        }
    }
}

impl AgentBackend for SimBackend {
    fn name(&self) -> &'static str {
        "sim"
    }

    fn can_resume(&self) -> bool {
        self.format == formats::Format::Claude
    }

    fn parse_line(&self, line: &[u8]) -> Vec<super::AgentEvent> {
        match self.format {
            formats::Format::Claude => super::stream_json::parse_line(line).into_iter().collect(),
            formats::Format::Codex => super::codex::exec_json::parse_line(line),
            formats::Format::Gemini => self.gemini.parse_line(line),
        }
    }

    fn diagnose(&self, words: &super::LastWords, now: &jiff::Zoned) -> Option<super::AgentFailure> {
        match self.format {
            formats::Format::Claude => super::claude_failures::diagnose(words),
            formats::Format::Codex => super::codex::failures::diagnose(words, now),
            formats::Format::Gemini => super::gemini::failures::diagnose(words, now),
        }
    }

    fn parse_followed_line(&self, line: &[u8]) -> Vec<super::AgentEvent> {
        match self.format {
            formats::Format::Codex => {
                super::codex::rollout::parse_line(line, super::codex::rollout::Mode::Usage)
            }
            formats::Format::Claude | formats::Format::Gemini => Vec::new(),
        }
    }

    fn usage_reporting(&self) -> super::UsageReporting {
        match self.format {
            formats::Format::Claude => super::UsageReporting::PerMessage,
            formats::Format::Codex => super::UsageReporting::PerRequest,
            formats::Format::Gemini => super::UsageReporting::Nothing,
        }
    }

    /// The player with `--resume ID`: it plays the matching script's `handoff` turns.
    fn resume_command(
        &self,
        resume: &super::ResumeRequest<'_>,
    ) -> Result<AgentCommand, AgentError> {
        let mut command = self.command(resume.prompt, resume.model)?;
        command
            .args
            .extend(["--resume".to_owned(), resume.session_id.to_owned()]);
        Ok(command)
    }

    fn command(&self, prompt: &str, model: &str) -> Result<AgentCommand, AgentError> {
        if !self.scenario.is_file() {
            return Err(AgentError::ScenarioMissing {
                path: self.scenario.clone(),
            });
        }
        // Check the scenario now, so a bad file is reported before anything is spawned.
        Scenario::load(&self.scenario)?;
        Ok(AgentCommand {
            program: self.program()?,
            args: vec![
                SUBCOMMAND.to_owned(),
                self.scenario.to_string_lossy().into_owned(),
                "--model".to_owned(),
                model.to_owned(),
            ],
            env: self.env.clone(),
            stdin: Some(prompt.to_owned()),
            // A Codex scenario writes its rollout where the session follows it, as Codex.
            home: (self.format == formats::Format::Codex)
                .then(|| super::codex::session_home(None, Vec::new())),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sim_settings() -> BackendSettings {
        crate::session::backend_settings(
            &crate::config::Config::default(),
            crate::config::AgentKind::Sim,
        )
    }

    #[test]
    fn scenario_defaults_to_the_plan_directory() {
        let root = Path::new("/project");
        let here = std::env::current_dir().expect("current directory");
        assert_eq!(
            scenario_path(None, root, Some(Path::new("plans/x/MASTER_PLAN.md"))),
            here.join("plans/x/sim-scenario.yaml"),
            "a relative plan path is the current directory's, as the plan was read"
        );
        assert_eq!(
            scenario_path(None, root, Some(Path::new("/abs/MASTER_PLAN.md"))),
            PathBuf::from("/abs/sim-scenario.yaml")
        );
        assert_eq!(
            scenario_path(None, root, None),
            PathBuf::from("/project/sim-scenario.yaml")
        );
    }

    #[test]
    fn configured_scenario_wins_and_is_relative_to_the_project() {
        assert_eq!(
            scenario_path(
                Some(Path::new("demo/sim.yaml")),
                Path::new("/p"),
                Some(Path::new("plan/MASTER_PLAN.md"))
            ),
            PathBuf::from("/p/demo/sim.yaml")
        );
    }

    #[test]
    fn command_reinvokes_debussy_with_the_prompt_on_stdin() {
        let dir = tempfile::tempdir().expect("tempdir");
        let scenario = dir.path().join("s.yaml");
        std::fs::write(&scenario, "scripts:\n  - turns:\n      - say: hi\n").expect("write");
        let backend = SimBackend::new(&sim_settings(), scenario.clone());
        let command = backend.command("the prompt", "sim-model").expect("command");
        assert_eq!(
            command.program,
            std::env::current_exe().expect("current exe")
        );
        assert_eq!(
            command.args,
            [
                SUBCOMMAND,
                &scenario.to_string_lossy(),
                "--model",
                "sim-model"
            ]
        );
        assert_eq!(command.stdin.as_deref(), Some("the prompt"));
    }

    #[test]
    fn missing_and_invalid_scenarios_fail_before_spawning() {
        let dir = tempfile::tempdir().expect("tempdir");
        let missing = dir.path().join("nope.yaml");
        let err = SimBackend::new(&sim_settings(), missing)
            .command("p", "m")
            .expect_err("missing");
        assert!(matches!(err, AgentError::ScenarioMissing { .. }), "{err}");

        let bad = dir.path().join("bad.yaml");
        std::fs::write(&bad, "scripts:\n  - turns: 3\n").expect("write");
        let err = SimBackend::new(&sim_settings(), bad)
            .command("p", "m")
            .expect_err("invalid");
        assert!(err.to_string().contains("bad.yaml:2:"), "{err}");
    }
}
