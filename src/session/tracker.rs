//! [`Tracker`]: what a session did, gathered from its events for the report and the
//! activity log: session id, model, the latest todo list, the last main-thread text, the
//! subagent types invoked, the files written, and the final `result`.
//!
//! Pure: no I/O, no clock. The meter (tokens) is separate: see [`crate::context`].
//!
//! Todo lists come from two tool families, whichever the agent used last:
//! - `TodoWrite` (older Claude Code, the sim agent): its input is the whole list;
//! - Claude Code's task tools (2.1.330 has no `TodoWrite`): `TaskCreate {subject}`
//!   answered `Task #N created successfully: …`, `TaskUpdate {taskId, status, subject}`
//!   (status `deleted` removes it), and `TaskList`, answered one `#N [status] subject`
//!   line per task, which replaces what was tracked.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::event::{Activity, ActivityKind, Subagent, Thread};
use crate::agent::{
    AgentEvent, AssistantBlock, DeniedCall, SessionResult, ToolResult, ToolUse, UserBlock,
};
use crate::agent::{Todo, TodoStatus};

/// Tools whose calls start a subagent (`Agent` is the API name; `Task` the older one and
/// what the `init` line lists).
const SUBAGENT_TOOLS: &[&str] = &["Agent", "Task"];

/// Tools that write the file named by their `file_path` (or `notebook_path`) input.
const WRITE_TOOLS: &[&str] = &["Write", "Edit", "MultiEdit", "NotebookEdit"];

/// A tool call waiting for its result.
#[derive(Debug)]
struct Call {
    name: String,
    /// Kept only for calls whose result has effects tracked here.
    input: Option<Value>,
}

/// Which todo source the agent used last.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum TodoSource {
    #[default]
    None,
    TodoWrite,
    Tasks,
}

/// Everything the session reports about what the agent did, kept up to date event by
/// event.
#[derive(Debug, Default)]
pub(crate) struct Tracker {
    cwd: PathBuf,
    session_id: Option<String>,
    model: Option<String>,
    result: Option<SessionResult>,
    /// The latest main-thread text, with the message it came from.
    last_text: Option<(Option<String>, String)>,
    invoked_agents: BTreeSet<String>,
    /// Subagent types first seen since [`Tracker::take_new_agents`] last ran.
    new_agents: Vec<String>,
    files_written: BTreeSet<PathBuf>,
    denied: Vec<DeniedCall>,
    subagents: HashMap<String, Subagent>,
    calls: HashMap<String, Call>,
    todo_list: Vec<Todo>,
    tasks: Vec<(String, Todo)>,
    todo_source: TodoSource,
}

impl Tracker {
    /// A tracker resolving relative file paths against `cwd` (the agent's directory).
    pub(crate) fn new(cwd: &Path) -> Self {
        Tracker {
            cwd: cwd.to_path_buf(),
            ..Tracker::default()
        }
    }

    /// Take in one event; returns the activity lines it makes.
    pub(crate) fn observe(&mut self, event: &AgentEvent) -> Vec<Activity> {
        let mut out = Vec::new();
        match event {
            AgentEvent::Init(init) => {
                if init.session_id.is_some() {
                    self.session_id.clone_from(&init.session_id);
                }
                if init.model.is_some() {
                    self.model.clone_from(&init.model);
                }
            }
            AgentEvent::Assistant(message) => {
                let thread = self.thread(message.parent_tool_use_id.as_deref());
                if thread.is_main() && self.model.is_none() {
                    self.model.clone_from(&message.model);
                }
                for block in &message.content {
                    match block {
                        AssistantBlock::Text { text } => {
                            if thread.is_main() {
                                self.main_text(
                                    message.message_id.as_ref(),
                                    text,
                                    message.continues,
                                );
                            }
                            if !text.trim().is_empty() {
                                out.push(Activity {
                                    thread: thread.clone(),
                                    kind: ActivityKind::Text { text: text.clone() },
                                });
                            }
                        }
                        AssistantBlock::ToolUse(call) => {
                            self.tool_call(call, &thread);
                            out.push(Activity {
                                thread: thread.clone(),
                                kind: ActivityKind::ToolCall {
                                    id: call.id.clone(),
                                    name: call.name.clone(),
                                    input: call.input.clone(),
                                },
                            });
                        }
                        AssistantBlock::Thinking { .. } | AssistantBlock::Other { .. } => {}
                    }
                }
            }
            AgentEvent::User(message) => {
                let thread = self.thread(message.parent_tool_use_id.as_deref());
                for block in &message.content {
                    if let UserBlock::ToolResult(result) = block
                        && let Some(activity) = self.tool_result(result, &thread)
                    {
                        out.push(activity);
                    }
                }
            }
            AgentEvent::PermissionDenied(denied) => {
                if let Some(name) = &denied.tool_name {
                    self.deny(DeniedCall {
                        tool_name: name.clone(),
                        tool_use_id: denied.tool_use_id.clone(),
                        tool_input: Value::Null,
                    });
                }
                out.push(Activity {
                    thread: Thread::Main,
                    kind: ActivityKind::ToolError {
                        tool_use_id: denied.tool_use_id.clone(),
                        tool: denied.tool_name.clone(),
                        message: format!(
                            "permission denied: {} (see agent.permissions and agent.allowed_tools)",
                            denied
                                .message
                                .as_deref()
                                .or(denied.reason.as_deref())
                                .unwrap_or("refused")
                        ),
                    },
                });
            }
            AgentEvent::CompactBoundary(compact) => {
                let mut text = "the agent compacted its context".to_owned();
                if let Some(trigger) = &compact.trigger {
                    text.push_str(&format!(" ({trigger})"));
                }
                if let Some(pre) = compact.pre_tokens {
                    text.push_str(&format!(" at {} tokens", crate::words::thousands(pre)));
                }
                out.push(notice(text));
            }
            AgentEvent::Status(status) => {
                if let Some(status) = &status.status {
                    out.push(notice(format!("status: {status}")));
                }
            }
            AgentEvent::Result(result) => {
                if self.session_id.is_none() {
                    self.session_id.clone_from(&result.session_id);
                }
                for call in &result.permission_denials {
                    if self.deny(call.clone()) {
                        out.push(Activity {
                            thread: Thread::Main,
                            kind: ActivityKind::ToolError {
                                tool_use_id: call.tool_use_id.clone(),
                                tool: Some(call.tool_name.clone()),
                                message: format!(
                                    "permission denied: {} (allow it with `{}` in agent.allowed_tools)",
                                    call.describe(),
                                    call.suggested_rule()
                                ),
                            },
                        });
                    }
                }
                self.result = Some(result.clone());
            }
            AgentEvent::Text(line) => {
                if !line.line.trim().is_empty() {
                    out.push(notice(line.line.clone()));
                }
            }
            AgentEvent::Hook(_)
            | AgentEvent::Stream(_)
            | AgentEvent::RateLimit(_)
            | AgentEvent::ApiRetry(_)
            | AgentEvent::UsageReport(_)
            | AgentEvent::Unknown(_) => {}
        }
        out
    }

    fn thread(&self, parent: Option<&str>) -> Thread {
        match parent {
            None => Thread::Main,
            Some(id) => {
                Thread::Subagent(self.subagents.get(id).cloned().unwrap_or_else(|| Subagent {
                    parent_tool_use_id: id.to_owned(),
                    subagent_type: None,
                    description: None,
                }))
            }
        }
    }

    fn main_text(&mut self, message_id: Option<&String>, text: &str, continues: bool) {
        match &mut self.last_text {
            Some((id, last)) if id.is_some() && id.as_ref() == message_id => {
                if !continues {
                    last.push('\n');
                }
                last.push_str(text);
            }
            _ => self.last_text = Some((message_id.cloned(), text.to_owned())),
        }
    }

    fn tool_call(&mut self, call: &ToolUse, thread: &Thread) {
        let name = call.name.as_str();
        if SUBAGENT_TOOLS.contains(&name) {
            let text = |key: &str| {
                call.input
                    .get(key)
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            };
            let subagent_type = text("subagent_type");
            if let Some(kind) = &subagent_type
                && self.invoked_agents.insert(kind.clone())
            {
                self.new_agents.push(kind.clone());
            }
            self.subagents.insert(
                call.id.clone(),
                Subagent {
                    parent_tool_use_id: call.id.clone(),
                    subagent_type,
                    description: text("description"),
                },
            );
        }
        if name == "TodoWrite"
            && thread.is_main()
            && let Some(todos) = call.input.get("todos").and_then(Value::as_array)
        {
            self.todo_list = todos
                .iter()
                .filter_map(|todo| {
                    let content = todo.get("content").and_then(Value::as_str)?;
                    Some(Todo {
                        content: content.to_owned(),
                        status: status(todo.get("status").and_then(Value::as_str)),
                    })
                })
                .collect();
            self.todo_source = TodoSource::TodoWrite;
        }
        let keep_input =
            WRITE_TOOLS.contains(&name) || name == "TaskCreate" || name == "TaskUpdate";
        self.calls.insert(
            call.id.clone(),
            Call {
                name: call.name.clone(),
                input: keep_input.then(|| call.input.clone()),
            },
        );
    }

    fn tool_result(&mut self, result: &ToolResult, thread: &Thread) -> Option<Activity> {
        let call = self.calls.remove(&result.tool_use_id);
        let text = || result.content.texts().collect::<Vec<_>>().join("\n");
        let already_reported = self
            .denied
            .iter()
            .any(|denied| denied.tool_use_id.as_deref() == Some(result.tool_use_id.as_str()));
        if result.is_error && already_reported {
            return None;
        }
        if result.is_error {
            return Some(Activity {
                thread: thread.clone(),
                kind: ActivityKind::ToolError {
                    tool_use_id: Some(result.tool_use_id.clone()),
                    tool: call.map(|call| call.name),
                    message: text(),
                },
            });
        }
        let call = call?;
        let input = call.input.as_ref();
        let field = |key: &str| {
            input
                .and_then(|input| input.get(key))
                .and_then(Value::as_str)
        };
        match call.name.as_str() {
            name if WRITE_TOOLS.contains(&name) => {
                if let Some(path) = field("file_path").or_else(|| field("notebook_path")) {
                    self.files_written.insert(self.cwd.join(path));
                }
            }
            "TaskCreate" => {
                let id =
                    task_number(&text()).map_or_else(|| self.next_task_id(), |n| n.to_string());
                let content = field("subject")
                    .or_else(|| field("description"))
                    .unwrap_or_default();
                self.tasks.retain(|(existing, _)| *existing != id);
                self.tasks.push((
                    id,
                    Todo {
                        content: content.to_owned(),
                        status: TodoStatus::Pending,
                    },
                ));
                self.todo_source = TodoSource::Tasks;
            }
            "TaskUpdate" => {
                let id = input
                    .and_then(|input| input.get("taskId"))
                    .and_then(id_text)?;
                if field("status") == Some("deleted") {
                    self.tasks.retain(|(existing, _)| *existing != id);
                } else if let Some((_, todo)) =
                    self.tasks.iter_mut().find(|(existing, _)| *existing == id)
                {
                    if let Some(new) = field("status") {
                        todo.status = status(Some(new));
                    }
                    if let Some(subject) = field("subject") {
                        subject.clone_into(&mut todo.content);
                    }
                }
                self.todo_source = TodoSource::Tasks;
            }
            "TaskList" => {
                let listed = task_list(&text());
                if !listed.is_empty() {
                    self.tasks = listed;
                    self.todo_source = TodoSource::Tasks;
                }
            }
            _ => {}
        }
        None
    }

    fn next_task_id(&self) -> String {
        let highest = self
            .tasks
            .iter()
            .filter_map(|(id, _)| id.parse::<u64>().ok())
            .max()
            .unwrap_or(0);
        (highest + 1).to_string()
    }

    /// The agent's session id (from `init`, else from `result`).
    pub(crate) fn session_id(&self) -> Option<&str> {
        self.session_id.as_deref()
    }

    /// The main model (from `init`, else the first main-thread message).
    pub(crate) fn model(&self) -> Option<&str> {
        self.model.as_deref()
    }

    /// The final `result` line, once it arrived.
    pub(crate) fn result(&self) -> Option<&SessionResult> {
        self.result.as_ref()
    }

    /// The latest main-thread assistant text.
    pub(crate) fn last_text(&self) -> Option<&str> {
        self.last_text.as_ref().map(|(_, text)| text.as_str())
    }

    /// Record a refused call; a call already known by its id is completed with what the
    /// new report adds (its input). Returns whether the call is new.
    fn deny(&mut self, call: DeniedCall) -> bool {
        let known = call.tool_use_id.as_ref().and_then(|id| {
            self.denied
                .iter_mut()
                .find(|seen| seen.tool_use_id.as_ref() == Some(id))
        });
        match known {
            Some(seen) => {
                if seen.tool_input.is_null() {
                    seen.tool_input = call.tool_input;
                }
                false
            }
            None => {
                self.denied.push(call);
                true
            }
        }
    }

    /// Tool calls the permission system refused, in the order they were reported.
    pub(crate) fn permission_denials(&self) -> &[DeniedCall] {
        &self.denied
    }

    /// The `subagent_type`s of every Task/Agent call seen.
    pub(crate) fn invoked_agents(&self) -> &BTreeSet<String> {
        &self.invoked_agents
    }

    /// The subagent types the agent started for the first time since the last call.
    pub(crate) fn take_new_agents(&mut self) -> Vec<String> {
        std::mem::take(&mut self.new_agents)
    }

    /// Files that Write/Edit/MultiEdit/NotebookEdit calls wrote successfully.
    pub(crate) fn files_written(&self) -> &BTreeSet<PathBuf> {
        &self.files_written
    }

    /// The latest todo list, from whichever tool family the agent used last.
    pub(crate) fn todos(&self) -> Vec<Todo> {
        match self.todo_source {
            TodoSource::None => Vec::new(),
            TodoSource::TodoWrite => self.todo_list.clone(),
            TodoSource::Tasks => self.tasks.iter().map(|(_, todo)| todo.clone()).collect(),
        }
    }
}

fn notice(text: String) -> Activity {
    Activity {
        thread: Thread::Main,
        kind: ActivityKind::Notice { text },
    }
}

fn status(text: Option<&str>) -> TodoStatus {
    match text {
        Some("in_progress") => TodoStatus::InProgress,
        Some("completed") => TodoStatus::Completed,
        _ => TodoStatus::Pending,
    }
}

/// A task id given as a string or a number.
fn id_text(value: &Value) -> Option<String> {
    match value {
        Value::String(text) => Some(text.trim_start_matches('#').to_owned()),
        Value::Number(number) => Some(number.to_string()),
        _ => None,
    }
}

/// The number after the first `#` in `text` (`Task #12 created successfully`).
fn task_number(text: &str) -> Option<u64> {
    let (_, after) = text.split_once('#')?;
    let digits: String = after.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// `TaskList`'s answer: one `#N [status] subject` line per task.
fn task_list(text: &str) -> Vec<(String, Todo)> {
    text.lines()
        .filter_map(|line| {
            let rest = line.trim().strip_prefix('#')?;
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            if digits.is_empty() {
                return None;
            }
            let rest = rest[digits.len()..].trim_start().strip_prefix('[')?;
            let (state, subject) = rest.split_once(']')?;
            Some((
                digits,
                Todo {
                    content: subject.trim().to_owned(),
                    status: status(Some(state.trim())),
                },
            ))
        })
        .collect()
}

#[cfg(test)]
#[path = "tracker_tests.rs"]
mod tests;
