//! A script's turns: messages with their usage and tool calls, compactions and crashes.

use nix::sys::signal::Signal;
use serde::{Serialize, Serializer};

use super::NOTES;
use super::action::{Action, Done, Progress, Status, Todo, Tool};

/// One step of a script.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum Turn {
    /// An assistant message (or, with nothing but a pause, a lone `sleep_ms`).
    Message(Message),
    /// A `compact_boundary` line.
    Compact {
        /// Its metadata.
        compact: Compact,
    },
    /// An abrupt death without a result line.
    Crash {
        /// How.
        crash: Crash,
    },
}

/// An assistant message: text, usage and tool calls; build it through [`Turn`].
#[derive(Debug, Clone, Default, Serialize)]
pub struct Message {
    #[serde(skip_serializing_if = "Option::is_none")]
    sleep_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    say: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    think: Option<String>,
    #[serde(flatten)]
    usage: Option<Usage>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<Tool>,
}

/// The usage a message reports, one way of three.
#[derive(Debug, Clone, Copy, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Usage {
    /// Percent of the scenario's window.
    Percent(u32),
    /// Context tokens in use.
    Context(u64),
    /// The API's four counts, verbatim (`usage`).
    #[serde(rename = "usage")]
    Exact(Tokens),
}

/// A message's usage as the API reports it.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Tokens {
    /// Uncached input tokens.
    pub input_tokens: u64,
    /// Input tokens read from the cache.
    pub cache_read_input_tokens: u64,
    /// Input tokens written to the cache.
    pub cache_creation_input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
}

impl Turn {
    /// A message saying `text`.
    pub fn say(text: &str) -> Turn {
        Turn::Message(Message {
            say: Some(text.to_owned()),
            ..Message::default()
        })
    }

    /// A message that says nothing: only the tool calls added to it.
    pub fn quiet() -> Turn {
        Turn::Message(Message::default())
    }

    /// A pause that prints nothing.
    pub fn sleep(ms: u64) -> Turn {
        Turn::Message(Message {
            sleep_ms: Some(ms),
            ..Message::default()
        })
    }

    /// Say `writing PATH` at `percent` and write `content` to `path`.
    pub fn write(percent: u32, path: &str, content: &str) -> Turn {
        Turn::say(&format!("writing {path}"))
            .percent(percent)
            .writes(path, content)
    }

    /// Write the phase `id`'s notes where the run looks for them (beside the plan).
    pub fn notes(id: &str) -> Turn {
        Turn::notes_to(&format!("${{SCENARIO_DIR}}/notes/phase-{id}.md"))
    }

    /// Write notes ([`NOTES`]) to `path`.
    pub fn notes_to(path: &str) -> Turn {
        Turn::say("notes").writes(path, NOTES)
    }

    /// Say `done` and report the phase completed.
    pub fn done() -> Turn {
        Turn::say("done").done_as(Status::Completed)
    }

    /// A `compact_boundary` line.
    pub fn compact(compact: Compact) -> Turn {
        Turn::Compact { compact }
    }

    /// Die at once, without a result line.
    pub fn crash(crash: Crash) -> Turn {
        Turn::Crash { crash }
    }

    fn message(&mut self) -> &mut Message {
        match self {
            Turn::Message(message) => message,
            Turn::Compact { .. } | Turn::Crash { .. } => {
                panic!("a `compact` or `crash` turn takes no other keys")
            }
        }
    }

    fn with(mut self, change: impl FnOnce(&mut Message)) -> Turn {
        change(self.message());
        self
    }

    /// Think `text` too.
    pub fn think(self, text: &str) -> Turn {
        self.with(|message| message.think = Some(text.to_owned()))
    }

    /// Pause `ms` before the message.
    pub fn sleep_ms(self, ms: u64) -> Turn {
        self.with(|message| message.sleep_ms = Some(ms))
    }

    /// Report `percent` % of the window in use.
    pub fn percent(self, percent: u32) -> Turn {
        self.with(|message| message.usage = Some(Usage::Percent(percent)))
    }

    /// Report `tokens` of context in use.
    pub fn context(self, tokens: u64) -> Turn {
        self.with(|message| message.usage = Some(Usage::Context(tokens)))
    }

    /// Report exactly these counts.
    pub fn usage(self, tokens: Tokens) -> Turn {
        self.with(|message| message.usage = Some(Usage::Exact(tokens)))
    }

    /// Call `action` after the calls already there.
    pub fn tool(self, action: Action) -> Turn {
        self.with(|message| message.tools.push(Tool(action)))
    }

    /// Write `content` to `path`.
    pub fn writes(self, path: &str, content: &str) -> Turn {
        self.tool(Action::write(path, content))
    }

    /// Run `command` with `sh -c`.
    pub fn bash(self, command: &str) -> Turn {
        self.tool(Action::bash(command))
    }

    /// Read `path`.
    pub fn read(self, path: &str) -> Turn {
        self.tool(Action::Read(path.to_owned()))
    }

    /// Report the phase done with `status`.
    pub fn done_as(self, status: Status) -> Turn {
        self.tool(Action::Done(Done::Status(status)))
    }

    /// Log `step` with `debussy progress`.
    pub fn progress(self, step: &str) -> Turn {
        self.tool(Action::Progress(Progress::Step(step.to_owned())))
    }

    /// Replace the todo list.
    pub fn todos(self, todos: impl IntoIterator<Item = Todo>) -> Turn {
        self.tool(Action::Todos(todos.into_iter().collect()))
    }
}

/// A `compact` turn's metadata; [`Compact::default`] leaves both to the player.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Compact {
    #[serde(skip_serializing_if = "Option::is_none")]
    trigger: Option<Trigger>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pre_tokens: Option<u64>,
}

/// Who compacted.
#[derive(Debug, Clone, Copy, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Trigger {
    /// The agent, on its own.
    Auto,
    /// The user, with `/compact`.
    Manual,
}

impl Compact {
    /// A compaction with this trigger.
    pub fn trigger(mut self, trigger: Trigger) -> Compact {
        self.trigger = Some(trigger);
        self
    }

    /// The context before compaction, in place of the context so far.
    pub fn pre_tokens(mut self, tokens: u64) -> Compact {
        self.pre_tokens = Some(tokens);
        self
    }
}

/// How a `crash` turn dies; [`Crash::default`] exits 1.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Crash {
    #[serde(skip_serializing_if = "Option::is_none")]
    exit_code: Option<i32>,
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "signal_name"
    )]
    signal: Option<Signal>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stderr: Option<String>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    partial_line: bool,
}

fn signal_name<S: Serializer>(signal: &Option<Signal>, serializer: S) -> Result<S::Ok, S::Error> {
    match signal {
        Some(signal) => serializer.serialize_str(signal.as_str()),
        None => serializer.serialize_none(),
    }
}

impl Crash {
    /// Exit with `code`.
    pub fn exit(code: i32) -> Crash {
        Crash {
            exit_code: Some(code),
            ..Crash::default()
        }
    }

    /// Kill itself with `signal`.
    pub fn signal(signal: Signal) -> Crash {
        Crash {
            signal: Some(signal),
            ..Crash::default()
        }
    }

    /// Print `text` on stderr first.
    pub fn stderr(mut self, text: &str) -> Crash {
        self.stderr = Some(text.to_owned());
        self
    }

    /// Print half a JSON line, without its newline, first.
    pub fn partial_line(mut self) -> Crash {
        self.partial_line = true;
        self
    }
}
