//! The tool calls a sim turn makes: each scenario action becomes the call the model would
//! ask for (its name and input, as Claude Code would print it) and the work the player
//! then really does.

use std::io::Write;
use std::path::PathBuf;

use serde_json::{Value, json};

use super::effects;
use super::player::{PlayError, Player};
use super::scenario::{Action, BashSpec, DoneSpec, ProgressSpec, Todo};
use crate::process::shell_quote;

/// The `Bash` call that runs a `debussy` command line, described to the user as `description`.
fn debussy_call(command: String, description: &str) -> (&'static str, Value, Work) {
    let input = json!({"command": command, "description": description});
    let work = Work::Shell(BashSpec::Full {
        command,
        description: None,
        timeout_ms: None,
    });
    ("Bash", input, work)
}

impl<W: Write> Player<'_, W> {
    /// Turn an action into the tool call the model would make.
    pub(super) fn prepare(&mut self, action: &Action) -> Result<Call, PlayError> {
        let id = self.id("toolu_sim");
        let (name, input, work) = match action {
            Action::Write { path, content } => {
                let path = self.resolve(&self.expand(path)?);
                let content = self.expand(content)?;
                let input = json!({"file_path": path, "content": content});
                ("Write", input, Work::Write { path, content })
            }
            Action::Read(spec) => {
                let path = self.resolve(&self.expand(spec.path())?);
                ("Read", json!({"file_path": path}), Work::Read { path })
            }
            Action::Bash(spec) => {
                let mut input = json!({"command": spec.command()});
                if let (Some(description), Some(object)) =
                    (spec.description(), input.as_object_mut())
                {
                    object.insert("description".to_owned(), json!(description));
                }
                ("Bash", input, Work::Shell(spec.clone()))
            }
            Action::Todos(todos) => ("TodoWrite", self.todo_input(todos)?, Work::Todos),
            Action::Task(task) => {
                let input = json!({
                    "description": self.expand(&task.description)?,
                    "prompt": self.expand(&task.prompt)?,
                    "subagent_type": task.subagent_type,
                });
                ("Task", input, Work::Task)
            }
            Action::Done(done) => debussy_call(
                self.done_command(done)?,
                "Report the phase's status to debussy",
            ),
            Action::Progress(progress) => debussy_call(
                self.progress_command(progress)?,
                "Log a finished step with debussy",
            ),
        };
        Ok(Call {
            id,
            name,
            input,
            work,
        })
    }

    pub(super) fn todo_input(&self, todos: &[Todo]) -> Result<Value, PlayError> {
        let mut list = Vec::with_capacity(todos.len());
        for todo in todos {
            let content = self.expand(&todo.content)?;
            let active = match &todo.active_form {
                Some(active) => self.expand(active)?,
                None => content.clone(),
            };
            list.push(json!({
                "content": content,
                "status": todo.status.as_str(),
                "activeForm": active,
            }));
        }
        Ok(json!({"todos": list}))
    }

    pub(super) fn done_command(&self, done: &DoneSpec) -> Result<String, PlayError> {
        let phase = match done.phase() {
            Some(phase) => phase.to_owned(),
            None => self.env.selector.phase.clone().ok_or(PlayError::NoPhase)?,
        };
        let mut command = format!(
            "{} done --phase {} --status {}",
            shell_quote(&self.env.exe.to_string_lossy()),
            shell_quote(&phase),
            done.status().as_str()
        );
        if let Some(reason) = done.reason() {
            command.push_str(" --reason ");
            command.push_str(&shell_quote(&self.expand(reason)?));
        }
        Ok(command)
    }

    pub(super) fn progress_command(&self, progress: &ProgressSpec) -> Result<String, PlayError> {
        let phase = match progress.phase() {
            Some(phase) => phase.to_owned(),
            None => self.env.selector.phase.clone().ok_or(PlayError::NoPhase)?,
        };
        Ok(format!(
            "{} progress --phase {} {}",
            shell_quote(&self.env.exe.to_string_lossy()),
            shell_quote(&phase),
            shell_quote(&self.expand(progress.step())?)
        ))
    }

    /// Really do what a call says; the text and error flag of its tool result.
    pub(super) async fn perform(&self, call: &Call) -> (String, bool) {
        match &call.work {
            Work::Write { path, content } => effects::write_file(path, content),
            Work::Read { path } => effects::read_file(path),
            Work::Shell(spec) => {
                effects::shell(spec, &self.env.cwd, &self.env.scenario_dir()).await
            }
            Work::Todos => (effects::TODO_ACK.to_owned(), false),
            Work::Task => (String::new(), false),
        }
    }
}

pub(super) struct Call {
    pub(super) id: String,
    pub(super) name: &'static str,
    pub(super) input: Value,
    pub(super) work: Work,
}

pub(super) enum Work {
    Write { path: PathBuf, content: String },
    Read { path: PathBuf },
    Shell(BashSpec),
    Todos,
    Task,
}
