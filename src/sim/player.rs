//! The sim agent's player: plays one script as Claude Code would, really performing the
//! file writes and shell commands, and prints `stream-json` lines as it goes.
//!
//! Order of output: `system`/`init`, then per turn the assistant lines (one per content
//! block, sharing a message id and usage) followed by one `user` line per tool result,
//! then `result`. A `crash` turn ends the process without a result. Runs inside the
//! `__sim-agent` process; [`crate::commands`] turns the returned [`PlayEnd`] into an exit.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::effects;
use super::formats::{CallInfo, Printer};
use super::lines::{Block, Lines, OwnedTextBlock, ResultContent, ResultLine};
use super::scenario::{
    Action, CompactSpec, CrashSpec, MessageTurn, Scenario, Script, Selector, TaskSpec, Turn,
    UsageSpec,
};
use crate::sim::Usage;

/// Everything the player knows about its surroundings, gathered once at start.
#[derive(Debug, Clone)]
pub struct PlayerEnv {
    /// Which session this is (from `DEBUSSY_*`).
    pub selector: Selector,
    /// The scenario file (for messages) — its directory is `${SCENARIO_DIR}`.
    pub scenario_path: PathBuf,
    /// The working directory, against which relative paths are resolved.
    pub cwd: PathBuf,
    /// The debussy executable, run for `done` actions.
    pub exe: PathBuf,
    /// Model name from `--model`.
    pub model: String,
    /// The prompt read from stdin.
    pub prompt: String,
    /// Environment variables available to `${NAME}` expansion.
    pub vars: BTreeMap<String, String>,
    /// The session continued with `--resume`: the script's `handoff` turns play.
    pub resume: Option<String>,
}

impl PlayerEnv {
    /// Gather the environment of the current process.
    ///
    /// # Errors
    /// When the working directory or executable cannot be determined, or a `DEBUSSY_*`
    /// number is malformed.
    pub fn from_process(
        scenario_path: &Path,
        model: String,
        prompt: String,
    ) -> Result<PlayerEnv, PlayError> {
        let cwd = std::env::current_dir().map_err(|err| PlayError::Setup(err.to_string()))?;
        let exe =
            crate::process::own_executable().map_err(|err| PlayError::Setup(err.to_string()))?;
        let vars: BTreeMap<String, String> = std::env::vars().collect();
        let number = |name: &str, default: u32| -> Result<u32, PlayError> {
            match vars.get(name) {
                None => Ok(default),
                Some(value) => value.trim().parse().map_err(|_| {
                    PlayError::Setup(format!("{name}={value:?} is not a whole number"))
                }),
            }
        };
        let selector = Selector {
            phase: vars
                .get("DEBUSSY_PHASE_ID")
                .filter(|phase| !phase.is_empty())
                .cloned(),
            attempt: number("DEBUSSY_ATTEMPT", 1)?,
            restart: number("DEBUSSY_RESTART", 0)?,
        };
        Ok(PlayerEnv {
            selector,
            scenario_path: std::fs::canonicalize(scenario_path)
                .or_else(|_| std::path::absolute(scenario_path))
                .unwrap_or_else(|_| scenario_path.to_path_buf()),
            cwd,
            exe,
            model,
            prompt,
            vars,
            resume: None,
        })
    }

    /// Whether the session set the variable `name` to something.
    fn is_set(&self, name: &str) -> bool {
        self.vars.get(name).is_some_and(|value| !value.is_empty())
    }

    /// `${SCENARIO_DIR}`: the scenario's directory as the session sees it. A session in a
    /// phase's git worktree (phases side by side) gets the worktree's copy of it, so what
    /// it writes there is the phase's work, committed on the phase's branch, and never
    /// lands in the project's own tree behind the run's back.
    pub(super) fn scenario_dir(&self) -> PathBuf {
        let dir = self
            .scenario_path
            .parent()
            .map_or_else(|| self.cwd.clone(), Path::to_path_buf);
        self.in_workdir(&dir).unwrap_or(dir)
    }

    /// `path` (in the project) in the session's working directory, when the session
    /// works elsewhere than the project root (a worktree) and that copy exists.
    fn in_workdir(&self, path: &Path) -> Option<PathBuf> {
        let root = self.vars.get(crate::run_env::PROJECT_ROOT)?;
        let root = std::fs::canonicalize(root).ok()?;
        let cwd = std::fs::canonicalize(&self.cwd).ok()?;
        if cwd == root {
            return None;
        }
        let relative = path.strip_prefix(&root).ok()?;
        let copy = cwd.join(relative);
        copy.is_dir().then_some(copy)
    }
}

/// How the simulated agent's process should end, as its script says (the sim agent owns
/// it; debussy sees only the exit status).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlayEnd {
    /// Exit with this code.
    Exit(i32),
    /// Kill itself with this signal (exit with the code if the signal does not kill).
    Signal(nix::sys::signal::Signal, i32),
}

/// Why a script could not be played. Reported on stderr and as an error `result` line.
#[derive(Debug, thiserror::Error)]
pub enum PlayError {
    /// The process environment is unusable.
    #[error("{0}")]
    Setup(String),
    /// No script matches this session.
    #[error(
        "no script in {path} matches this session ({selector}); add one with matching `phase`/`attempt`/`restart`, or one without selectors as a default"
    )]
    NoScript {
        /// The scenario file.
        path: String,
        /// The session.
        selector: Selector,
    },
    /// The prompt lacks an expected substring.
    #[error("the prompt does not contain {0:?} (expect_prompt)")]
    PromptMismatch(String),
    /// `${NAME}` names nothing.
    #[error(
        "unknown variable ${{{0}}}: it is neither built in (SCENARIO_DIR, CWD, PHASE, ATTEMPT, RESTART) nor set in the environment"
    )]
    UnknownVariable(String),
    /// A `done` or `progress` action without a phase id.
    #[error(
        "`done` or `progress` needs a phase id: set DEBUSSY_PHASE_ID or write `phase:` in the action"
    )]
    NoPhase,
    /// Printing to stdout failed (the reader went away).
    #[error("write to stdout")]
    Output(#[from] std::io::Error),
}

/// Play the script the scenario has for this session, printing to `out`.
///
/// Errors in the scenario's use (no matching script, unmet `expect_prompt`, unknown
/// variables) end the session with an error `result` line and exit code 1, as a failing
/// agent would; only a broken stdout is returned as `Err`.
///
/// # Errors
/// [`PlayError::Output`] when stdout cannot be written.
pub async fn play<W: Write>(
    scenario: &Scenario,
    env: &PlayerEnv,
    out: W,
) -> Result<PlayEnd, PlayError> {
    let model = scenario.model.clone().unwrap_or_else(|| env.model.clone());
    let mut player = Player {
        scenario,
        env,
        print: Printer::new(
            scenario.format,
            out,
            Lines {
                session_id: env
                    .resume
                    .clone()
                    .unwrap_or_else(|| uuid::Uuid::new_v4().to_string()),
                model,
            },
            env.vars.get("CODEX_HOME").map(std::path::PathBuf::from),
        )?,
        started: Instant::now(),
        next_id: 0,
        thread: Thread::new(12_000),
        totals: Usage::default(),
        cost_usd: 0.0,
        num_turns: 0,
        last_text: None,
    };
    player.print.init(&env.cwd.to_string_lossy())?;
    match player.play_script().await {
        Ok(end) => Ok(end),
        Err(PlayError::Output(err)) => Err(PlayError::Output(err)),
        Err(err) => {
            let message = err.to_string();
            eprintln!("debussy sim agent: {message}");
            player.finish(
                "error_during_execution",
                true,
                &message,
                std::slice::from_ref(&message),
            )?;
            Ok(PlayEnd::Exit(1))
        }
    }
}

/// Context bookkeeping of one conversation thread (the main one or a subagent's).
pub(super) struct Thread {
    /// Context tokens the last message reported.
    context: u64,
    /// Bytes said or returned since, which the next message's context includes.
    added_bytes: u64,
}

impl Thread {
    fn new(context: u64) -> Self {
        Thread {
            context,
            added_bytes: 0,
        }
    }
}

enum Flow {
    Continue,
    End(PlayEnd),
}

pub(super) struct Player<'a, W: Write> {
    pub(super) scenario: &'a Scenario,
    pub(super) env: &'a PlayerEnv,
    pub(super) print: Printer<W>,
    pub(super) started: Instant,
    pub(super) next_id: u64,
    /// The conversation whose turns are playing: the main one, or a subagent's.
    pub(super) thread: Thread,
    pub(super) totals: Usage,
    pub(super) cost_usd: f64,
    pub(super) num_turns: u32,
    pub(super) last_text: Option<String>,
}

impl<W: Write> Player<'_, W> {
    async fn play_script(&mut self) -> Result<PlayEnd, PlayError> {
        let script: &Script =
            self.scenario
                .select(&self.env.selector)
                .ok_or_else(|| PlayError::NoScript {
                    path: self.env.scenario_path.display().to_string(),
                    selector: self.env.selector.clone(),
                })?;
        if self.env.resume.is_some() {
            return self.play_handoff(script).await;
        }
        if let Some(missing) = script
            .expect_prompt
            .iter()
            .find(|needle| !self.env.prompt.contains(needle.as_str()))
        {
            return Err(PlayError::PromptMismatch(missing.clone()));
        }
        self.thread.added_bytes = self.env.prompt.len() as u64;
        for turn in &script.turns {
            if let Flow::End(end) = self.play_turn(turn, None).await? {
                return Ok(end);
            }
        }
        let text = match &script.result.text {
            Some(text) => self.expand(text)?,
            None => self.last_text.clone().unwrap_or_else(|| "Done".to_owned()),
        };
        self.finish(&script.result.subtype, script.result.is_error(), &text, &[])?;
        Ok(PlayEnd::Exit(script.exit_code))
    }

    /// A resumed session: the script's `handoff` turns, or one message saying what the
    /// script did, then a successful result.
    async fn play_handoff(&mut self, script: &Script) -> Result<PlayEnd, PlayError> {
        self.thread.added_bytes = self.env.prompt.len() as u64;
        let default;
        let turns = match &script.handoff {
            Some(turns) => turns.as_slice(),
            None => {
                default = [Turn::Message(MessageTurn {
                    say: Some(
                        "## Goal\nPhase ${PHASE}, as the plan describes it.\n\n## Done\nThe steps of the previous session (restart ${RESTART}); the checkpoint below lists its files.\n\n## Next steps\nContinue from the first unfinished task.".to_owned(),
                    ),
                    ..MessageTurn::default()
                })];
                &default
            }
        };
        for turn in turns {
            if let Flow::End(end) = self.play_turn(turn, None).await? {
                return Ok(end);
            }
        }
        let text = self.last_text.clone().unwrap_or_default();
        self.finish("success", false, &text, &[])?;
        Ok(PlayEnd::Exit(0))
    }

    fn finish(
        &mut self,
        subtype: &str,
        is_error: bool,
        text: &str,
        errors: &[String],
    ) -> Result<(), PlayError> {
        let duration_ms = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.print.result(&ResultLine {
            subtype,
            is_error,
            text,
            duration_ms,
            num_turns: self.num_turns,
            cost_usd: self.cost_usd,
            totals: self.totals,
            window: self.scenario.window,
            errors,
        })?;
        Ok(())
    }

    async fn play_turn(&mut self, turn: &Turn, parent: Option<&str>) -> Result<Flow, PlayError> {
        match turn {
            Turn::Sleep { sleep_ms } => {
                tokio::time::sleep(Duration::from_millis(*sleep_ms)).await;
                Ok(Flow::Continue)
            }
            Turn::Compact(spec) => {
                self.compact(spec)?;
                Ok(Flow::Continue)
            }
            Turn::Crash(spec) => self.crash(spec).map(Flow::End),
            Turn::Message(message) => self.message(message, parent).await,
        }
    }

    fn compact(&mut self, spec: &CompactSpec) -> Result<(), PlayError> {
        if self.pre_compact_blocked(spec) {
            // As Claude Code: the compaction does not happen and the turn goes on.
            return Ok(());
        }
        let pre_tokens = spec.pre_tokens.unwrap_or(self.thread.context);
        self.print.compacted(&spec.trigger, pre_tokens)?;
        // What survives compaction is a summary: the context starts small again.
        self.thread = Thread::new(pre_tokens / 10);
        Ok(())
    }

    /// Run debussy's `PreCompact` hook, as Claude Code runs the hooks of its settings,
    /// when the session set up a compaction guard; true when the hook blocked it (exit 2).
    fn pre_compact_blocked(&self, spec: &CompactSpec) -> bool {
        if !self.env.is_set(crate::run_env::GUARD_ENV) {
            return false;
        }
        let input = serde_json::json!({
            "hook_event_name": "PreCompact",
            "session_id": self.print.lines.session_id,
            "trigger": spec.trigger,
        });
        let child = std::process::Command::new(&self.env.exe)
            .args(["__hook", "pre-compact"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn();
        let Ok(mut child) = child else { return false };
        if let Some(mut stdin) = child.stdin.take() {
            let _ = stdin.write_all(input.to_string().as_bytes());
        }
        child.wait().is_ok_and(|status| status.code() == Some(2))
    }

    fn crash(&mut self, spec: &CrashSpec) -> Result<PlayEnd, PlayError> {
        if spec.partial_line {
            let cut = format!(
                r#"{{"type":"assistant","message":{{"model":"{}","id":"msg_sim_cut","#,
                self.print.lines.model
            );
            self.print.out.raw(cut.as_bytes())?;
        }
        if let Some(message) = &spec.stderr {
            eprintln!("{message}");
        }
        Ok(match spec.signal {
            Some(signal) => PlayEnd::Signal(signal, spec.exit_code),
            None => PlayEnd::Exit(spec.exit_code),
        })
    }

    async fn message(
        &mut self,
        turn: &MessageTurn,
        parent: Option<&str>,
    ) -> Result<Flow, PlayError> {
        if turn.sleep_ms > 0 {
            tokio::time::sleep(Duration::from_millis(turn.sleep_ms)).await;
        }
        let message_id = self.id("msg_sim");
        let mut blocks = Vec::new();
        if let Some(think) = &turn.think {
            blocks.push(Block::Thinking {
                thinking: self.expand(think)?,
                signature: "",
            });
        }
        if let Some(say) = &turn.say {
            let text = self.expand(say)?;
            if parent.is_none() {
                self.last_text = Some(text.clone());
            }
            blocks.push(Block::Text { text });
        }
        let mut calls = Vec::new();
        for action in &turn.tools {
            let call = self.prepare(action)?;
            blocks.push(Block::ToolUse {
                id: call.id.clone(),
                name: call.name,
                input: call.input.clone(),
            });
            calls.push(call);
        }
        let output_bytes: usize = blocks.iter().map(Block::size).sum();
        let usage = self.usage(turn.usage, parent, output_bytes as u64);
        self.print
            .message(&message_id, parent, &blocks, &usage, self.scenario.window)?;
        for (action, call) in turn.tools.iter().zip(calls) {
            let (content, is_error) = match action {
                Action::Task(task) => {
                    match self.task(task, &call.id).await? {
                        Flow::Continue => {}
                        end @ Flow::End(_) => return Ok(end),
                    }
                    let text = self.expand(&task.result)?;
                    (
                        ResultContent::Blocks(vec![OwnedTextBlock::new(text)]),
                        false,
                    )
                }
                _ => {
                    let (text, is_error) = self.perform(&call).await;
                    (ResultContent::Text(text), is_error)
                }
            };
            self.thread.added_bytes += content.size() as u64;
            let info = CallInfo {
                id: &call.id,
                name: call.name,
                input: &call.input,
            };
            self.print.tool_result(parent, &info, &content, is_error)?;
            if parent.is_none() && self.post_tool_use_stops() {
                // As Claude Code when its `PostToolUse` hook says `continue: false`: the
                // session ends with the tool's result recorded, before the next request.
                let text = self.last_text.clone().unwrap_or_default();
                self.finish("success", false, &text, &[])?;
                return Ok(Flow::End(PlayEnd::Exit(0)));
            }
        }
        Ok(Flow::Continue)
    }

    /// Run debussy's `PostToolUse` hook, as Claude Code runs the hooks of its settings,
    /// when the session named a stop marker; true when it answered `continue: false`.
    fn post_tool_use_stops(&self) -> bool {
        if !self.env.is_set(crate::run_env::STOP_ENV) {
            return false;
        }
        let output = std::process::Command::new(&self.env.exe)
            .args(["__hook", "post-tool-use"])
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .output();
        let Ok(output) = output else { return false };
        serde_json::from_slice::<serde_json::Value>(&output.stdout)
            .is_ok_and(|answer| answer.get("continue") == Some(&serde_json::Value::Bool(false)))
    }

    async fn task(&mut self, task: &TaskSpec, tool_use_id: &str) -> Result<Flow, PlayError> {
        let prompt = self.expand(&task.prompt)?;
        self.print.user_text(Some(tool_use_id), &prompt)?;
        let mut sub = Thread::new(8_000);
        sub.added_bytes = prompt.len() as u64;
        // While the subagent runs, its thread takes the place of the main one (usage is
        // per conversation); the main thread is put back afterwards.
        let saved = std::mem::replace(&mut self.thread, sub);
        let mut flow = Flow::Continue;
        for turn in &task.turns {
            flow = Box::pin(self.play_turn(turn, Some(tool_use_id))).await?;
            if matches!(flow, Flow::End(_)) {
                break;
            }
        }
        self.thread = saved;
        Ok(flow)
    }

    /// The usage the next message of a thread reports, and the bookkeeping it implies.
    fn usage(&mut self, spec: UsageSpec, parent: Option<&str>, output_bytes: u64) -> Usage {
        let window = self.scenario.window;
        let thread = &mut self.thread;
        let previous = thread.context;
        let output_tokens = 20 + output_bytes / 4;
        let usage = match spec {
            UsageSpec::Exact(usage) => usage,
            spec => {
                let context = match spec {
                    UsageSpec::Context(context) => context,
                    #[expect(
                        clippy::cast_possible_truncation,
                        clippy::cast_sign_loss,
                        clippy::cast_precision_loss,
                        reason = "a percent of a window in tokens is far inside u64 and f64 range"
                    )]
                    UsageSpec::Percent(percent) => (window as f64 * percent / 100.0).round() as u64,
                    _ => previous + 200 + thread.added_bytes / 4,
                };
                let cache_read = previous.min(context);
                let input = (context - cache_read).min(3);
                Usage {
                    input_tokens: input,
                    cache_read_input_tokens: cache_read,
                    cache_creation_input_tokens: context - cache_read - input,
                    output_tokens,
                }
            }
        };
        thread.context = usage.context_tokens();
        thread.added_bytes = output_bytes;
        self.num_turns += u32::from(parent.is_none());
        self.totals.input_tokens += usage.input_tokens;
        self.totals.cache_read_input_tokens += usage.cache_read_input_tokens;
        self.totals.cache_creation_input_tokens += usage.cache_creation_input_tokens;
        self.totals.output_tokens += usage.output_tokens;
        #[expect(
            clippy::cast_precision_loss,
            reason = "token counts are far below 2^52"
        )]
        let cost = (usage.input_tokens as f64 * 3.0
            + usage.cache_read_input_tokens as f64 * 0.3
            + usage.cache_creation_input_tokens as f64 * 3.75
            + usage.output_tokens as f64 * 15.0)
            / 1_000_000.0;
        // Rounded to a hundred-millionth of a dollar, so totals print without float noise.
        self.cost_usd = ((self.cost_usd + cost) * 1e8).round() / 1e8;
        usage
    }

    pub(super) fn id(&mut self, prefix: &str) -> String {
        self.next_id += 1;
        let session = self.print.lines.session_id.get(..8).unwrap_or_default();
        format!("{prefix}_{session}_{:03}", self.next_id)
    }

    /// Expand `${NAME}` (and `$$` to `$`) in scenario text.
    pub(super) fn expand(&self, text: &str) -> Result<String, PlayError> {
        effects::expand(text, |name| self.var(name)).map_err(PlayError::UnknownVariable)
    }

    pub(super) fn var(&self, name: &str) -> Option<String> {
        let env = self.env;
        match name {
            "SCENARIO_DIR" => Some(env.scenario_dir().to_string_lossy().into_owned()),
            "CWD" => Some(env.cwd.to_string_lossy().into_owned()),
            "PHASE" => env.selector.phase.clone(),
            "ATTEMPT" => Some(env.selector.attempt.to_string()),
            "RESTART" => Some(env.selector.restart.to_string()),
            _ => env.vars.get(name).cloned(),
        }
    }

    pub(super) fn resolve(&self, path: &str) -> PathBuf {
        self.env.cwd.join(path)
    }
}
