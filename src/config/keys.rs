//! The table of configuration keys: one entry per leaf, and the only place a key is
//! declared.
//!
//! An entry gives the key's dotted path, what it holds, the upper bound of a number and
//! the `run` flag that sets it, if any. Everything else about a key follows from its
//! entry: its environment variable (`DEBUSSY_` + the path in upper case, see
//! [`super::schema::env_var`]), the "did you mean" lookups and type words of
//! [`super::schema`], the range checks of [`super::validate`], the flag layer
//! ([`super::flags`]) and the clap arguments `crate::cli` builds from [`Flag`]. Tests keep
//! the table equal to the fields of [`Config`](super::Config) and to the keys that
//! `config/default.yaml` and `docs/config.md` list.
//!
//! Serde decides what a value may be; this table exists so that the loader can tell an
//! unknown key from a misplaced one, turn an environment string or a flag into the right
//! YAML scalar, and say in words what a key expects.

/// What a leaf holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A string.
    Str,
    /// A string or `null`.
    OptStr,
    /// A path or `null`.
    OptPath,
    /// `true` or `false`.
    Bool,
    /// A whole number, 0 or more.
    UInt,
    /// A whole number or `null`.
    OptUInt,
    /// A number.
    Float,
    /// A number or `null`.
    OptFloat,
    /// A span of time (`90m`, `2h30m`, seconds) or `null`.
    OptDuration,
    /// One of a fixed set of words.
    Enum(&'static [&'static str]),
    /// A list of strings.
    List,
    /// An open map from names to strings (`gates`, `agent.env`).
    Map,
}

/// How the argument of a value flag is parsed on the command line, before the flag layer
/// checks it like any other layer. A number too large for the type is clap's error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FlagParse {
    /// Any text (words of an [`Kind::Enum`] key are offered for completion, checked later).
    Text,
    /// A whole number that fits 32 bits.
    U32,
    /// A whole number that fits 64 bits.
    U64,
    /// A number.
    F64,
}

/// One spelling of a switch: `--LONG`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Switch {
    /// The long name, without the dashes.
    pub long: &'static str,
    /// Another name clap accepts for it (`--yolo`).
    pub alias: Option<&'static str>,
    /// Its `--help` line.
    pub help: &'static str,
}

/// The `run` flag that sets a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flag {
    /// `--LONG VALUE`; its clap argument id is the key's path.
    Value {
        /// The long name, without the dashes.
        long: &'static str,
        /// The placeholder `--help` shows for the value.
        value_name: &'static str,
        /// How clap parses the value.
        parse: FlagParse,
        /// Its `--help` line.
        help: &'static str,
    },
    /// `--ON` sets `true` (clap id: the key's path) and `--OFF`, when there is one, sets
    /// `false` (clap id: its long name); the last one typed wins.
    Switch {
        /// The spelling that sets `true`.
        on: Switch,
        /// The spelling that sets `false`.
        off: Option<Switch>,
    },
}

impl Flag {
    /// The flag as typed for `value` (`--no-interactive` for a switch set to false).
    pub(crate) fn spelling(&self, on: bool) -> String {
        match self {
            Flag::Value { long, .. } => format!("--{long}"),
            Flag::Switch { on: yes, off, .. } => match (on, off) {
                (false, Some(off)) => format!("--{}", off.long),
                _ => format!("--{}", yes.long),
            },
        }
    }
}

/// One configuration leaf.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Key {
    /// Dotted path, e.g. `agent.kind`.
    pub path: &'static str,
    /// What it holds.
    pub kind: Kind,
    /// The largest value a number may take, and its unit in words; every numeric key
    /// has one, so no figure a user types can overflow a duration or a counter.
    pub max: Option<(f64, &'static str)>,
    /// The `run` flag that sets it, if any.
    pub flag: Option<Flag>,
}

const fn key(path: &'static str, kind: Kind) -> Key {
    Key {
        path,
        kind,
        max: None,
        flag: None,
    }
}

const fn switch(long: &'static str, help: &'static str) -> Switch {
    Switch {
        long,
        alias: None,
        help,
    }
}

impl Key {
    /// The key with an upper bound `max`, in `unit`.
    const fn at_most(mut self, max: f64, unit: &'static str) -> Key {
        self.max = Some((max, unit));
        self
    }

    /// The key, set by `--long VALUE`.
    const fn flag(
        mut self,
        long: &'static str,
        value_name: &'static str,
        parse: FlagParse,
        help: &'static str,
    ) -> Key {
        self.flag = Some(Flag::Value {
            long,
            value_name,
            parse,
            help,
        });
        self
    }

    /// The boolean key, set by the switch `on` and cleared by `off`.
    const fn switch(mut self, on: Switch, off: Option<Switch>) -> Key {
        self.flag = Some(Flag::Switch { on, off });
        self
    }
}

const DAY: (f64, &str) = (86_400.0, "seconds, a day");
const WINDOW: (f64, &str) = (100_000_000.0, "tokens");
const PERMISSIONS: Kind = Kind::Enum(&["accept-edits", "bypass", "ask"]);

/// Every configuration leaf, in the order of `config/default.yaml` (and of the flags in
/// `debussy run --help`).
pub(crate) const KEYS: &[Key] = &[
    key("model", Kind::Str).flag(
        "model",
        "NAME",
        FlagParse::Text,
        "Model name passed to the agent (`model`)",
    ),
    key("timeout", Kind::UInt)
        .at_most(604_800.0, "seconds, a week")
        .flag(
            "timeout",
            "SECS",
            FlagParse::U64,
            "Seconds before one agent session is stopped (`timeout`)",
        ),
    key("max_retries", Kind::UInt)
        .at_most(100.0, "attempts")
        .flag(
            "max-retries",
            "N",
            FlagParse::U32,
            "Extra attempts per phase after the first (`max_retries`)",
        ),
    // The threshold's range (0 < x ≤ 100, 100 turns restarts off) is checked in
    // `validate`, beside its meaning.
    key("context_threshold", Kind::Float).flag(
        "context-threshold",
        "PERCENT",
        FlagParse::F64,
        "Percent of the context window at which a session is stopped and restarted; 100 disables (`context_threshold`)",
    ),
    key("tool_call_threshold", Kind::UInt)
        .at_most(1_000_000.0, "tool calls")
        .flag(
            "tool-call-threshold",
            "N",
            FlagParse::U32,
            "Main-thread tool calls after which a session is restarted (`tool_call_threshold`)",
        ),
    key("max_restarts", Kind::UInt)
        .at_most(1_000.0, "restarts")
        .flag(
            "max-restarts",
            "N",
            FlagParse::U32,
            "Context restarts allowed per attempt; 0 disables restarts (`max_restarts`)",
        ),
    key("max_cost_usd", Kind::OptFloat)
        .at_most(1_000_000.0, "US dollars")
        .flag(
            "max-cost",
            "USD",
            FlagParse::F64,
            "Pause the run when its cost reaches this many US dollars (`max_cost_usd`)",
        ),
    key("max_phase_cost_usd", Kind::OptFloat)
        .at_most(1_000_000.0, "US dollars")
        .flag(
            "max-phase-cost",
            "USD",
            FlagParse::F64,
            "Pause the run when one phase's cost reaches this many US dollars (`max_phase_cost_usd`)",
        ),
    key("max_duration", Kind::OptDuration).flag(
        "max-duration",
        "DURATION",
        FlagParse::Text,
        "Pause the run when it has been running this long, e.g. 90m or 2h30m (`max_duration`)",
    ),
    key("no_progress_restarts", Kind::UInt)
        .at_most(1_000.0, "restarts")
        .flag(
            "no-progress-restarts",
            "N",
            FlagParse::U32,
            "Fail an attempt after this many context restarts in a row without progress; 0 never (`no_progress_restarts`)",
        ),
    key("handoff", Kind::Enum(&["agent", "mechanical"])).flag(
        "handoff",
        "KIND",
        FlagParse::Text,
        "Who writes a restart's handoff: the stopped agent, or debussy alone (`handoff`)",
    ),
    key("handoff_timeout", Kind::UInt)
        .at_most(3_600.0, "seconds, an hour")
        .flag(
            "handoff-timeout",
            "SECS",
            FlagParse::U64,
            "Seconds the stopped agent has to write its handoff (`handoff_timeout`)",
        ),
    key("restart_delay", Kind::UInt)
        .at_most(3_600.0, "seconds, an hour")
        .flag(
            "restart-delay",
            "SECS",
            FlagParse::U64,
            "Seconds to wait between a context stop and the next session (`restart_delay`)",
        ),
    key("auto_commit", Kind::Bool).switch(
        switch(
            "auto-commit",
            "Commit the agent's work with git after each phase and checkpoint (`auto_commit`)",
        ),
        Some(switch(
            "no-auto-commit",
            "Do not commit anything (`auto_commit: false`)",
        )),
    ),
    key("commit_on_failure", Kind::Bool).switch(
        switch(
            "commit-on-failure",
            "Also commit the work of phases that failed (`commit_on_failure`)",
        ),
        None,
    ),
    key("commit_message_template", Kind::Str),
    key("jobs", Kind::UInt).at_most(64.0, "phases at once").flag(
        "jobs",
        "N",
        FlagParse::U32,
        "Phases run at once, each in its own git worktree; 0: all that are ready (`jobs`)",
    ),
    key("merge_message_template", Kind::Str),
    key("interactive", Kind::Bool).switch(
        switch(
            "interactive",
            "Show the terminal dashboard (`interactive`)",
        ),
        Some(Switch {
            long: "no-interactive",
            alias: Some("yolo"),
            help: "Print plain lines instead of the dashboard (`interactive: false`)",
        }),
    ),
    key("output", Kind::Enum(&["terminal", "file", "both"])),
    key("gate_timeout", Kind::UInt).at_most(DAY.0, DAY.1),
    key("restart_in_fix_sessions", Kind::Bool),
    key("agent.kind", Kind::Enum(&["claude", "codex", "gemini", "sim"])).flag(
        "agent",
        "KIND",
        FlagParse::Text,
        "Which agent backend runs sessions (`agent.kind`)",
    ),
    key("agent.permissions", PERMISSIONS),
    key("agent.allowed_tools", Kind::List),
    key("agent.command", Kind::OptStr).flag(
        "agent-command",
        "PATH",
        FlagParse::Text,
        "Program that runs the chosen agent: its profile's `command` (`agent.command`)",
    ),
    key("agent.args", Kind::List),
    key("agent.env", Kind::Map),
    key("agent.model_context_window", Kind::OptUInt).at_most(WINDOW.0, WINDOW.1),
    key("agent.stop_grace", Kind::Float).at_most(600.0, "seconds"),
    key("agent.tool_grace", Kind::UInt).at_most(3_600.0, "seconds, an hour"),
    key("agent.offline_grace", Kind::UInt).at_most(3_600.0, "seconds, an hour"),
    key("agent.stderr_tail_lines", Kind::UInt).at_most(10_000.0, "lines"),
    key("agent.token_estimate_factor", Kind::Float).at_most(100.0, "times"),
    key("agent.scenario", Kind::OptPath),
    key("agent.prices", Kind::Map),
    // Agent profiles: the same six keys for each kind (`src/config/profiles.rs`).
    key("agents.claude.command", Kind::OptStr),
    key("agents.claude.args", Kind::List),
    key("agents.claude.env", Kind::Map),
    key("agents.claude.model", Kind::OptStr),
    key("agents.claude.permissions", PERMISSIONS),
    key("agents.claude.model_context_window", Kind::OptUInt).at_most(WINDOW.0, WINDOW.1),
    key("agents.codex.command", Kind::OptStr),
    key("agents.codex.args", Kind::List),
    key("agents.codex.env", Kind::Map),
    key("agents.codex.model", Kind::OptStr),
    key("agents.codex.permissions", PERMISSIONS),
    key("agents.codex.model_context_window", Kind::OptUInt).at_most(WINDOW.0, WINDOW.1),
    key("agents.gemini.command", Kind::OptStr),
    key("agents.gemini.args", Kind::List),
    key("agents.gemini.env", Kind::Map),
    key("agents.gemini.model", Kind::OptStr),
    key("agents.gemini.permissions", PERMISSIONS),
    key("agents.gemini.model_context_window", Kind::OptUInt).at_most(WINDOW.0, WINDOW.1),
    key("agents.sim.command", Kind::OptStr),
    key("agents.sim.args", Kind::List),
    key("agents.sim.env", Kind::Map),
    key("agents.sim.model", Kind::OptStr),
    key("agents.sim.permissions", PERMISSIONS),
    key("agents.sim.model_context_window", Kind::OptUInt).at_most(WINDOW.0, WINDOW.1),
    key("gates", Kind::Map),
    key("notifications.enabled", Kind::Bool),
    key(
        "notifications.provider",
        Kind::Enum(&["none", "desktop", "ntfy"]),
    ),
    key("notifications.ntfy.server", Kind::Str),
    key("notifications.ntfy.topic", Kind::OptStr),
    key("mcp.readiness_timeout", Kind::Float).at_most(DAY.0, DAY.1),
    key("mcp.first_readiness_timeout", Kind::Float).at_most(DAY.0, DAY.1),
    key("mcp.drain_grace", Kind::Float).at_most(DAY.0, DAY.1),
    key("mcp.request_deadline", Kind::Float).at_most(DAY.0, DAY.1),
    key("mcp.answer_timeout", Kind::Float).at_most(DAY.0, DAY.1),
    key("mcp.buffer_max_messages", Kind::UInt).at_most(1_000_000.0, "messages"),
    key("mcp.buffer_max_bytes", Kind::UInt).at_most(4_294_967_296.0, "bytes, 4 GiB"),
    key("mcp.max_line_bytes", Kind::UInt).at_most(1_073_741_824.0, "bytes, 1 GiB"),
    key("mcp.stop_close_grace", Kind::Float).at_most(DAY.0, DAY.1),
    key("mcp.stop_term_grace", Kind::Float).at_most(DAY.0, DAY.1),
    key("mcp.restart_interval", Kind::Float).at_most(DAY.0, DAY.1),
    key("mcp.crash_backoff.first", Kind::Float).at_most(DAY.0, DAY.1),
    key("mcp.crash_backoff.first_count", Kind::UInt).at_most(1_000.0, "crashes"),
    key("mcp.crash_backoff.second", Kind::Float).at_most(DAY.0, DAY.1),
    key("mcp.crash_backoff.second_until", Kind::UInt).at_most(1_000.0, "crashes"),
    key("mcp.crash_backoff.after", Kind::Float).at_most(DAY.0, DAY.1),
    key("mcp.max_crashes", Kind::UInt).at_most(1_000.0, "crashes"),
    key("mcp.crash_window", Kind::Float).at_most(DAY.0, DAY.1),
    key("mcp.stable_after", Kind::Float).at_most(DAY.0, DAY.1),
    key("git.run_hooks", Kind::Bool),
    key("git.timeout", Kind::UInt).at_most(DAY.0, DAY.1),
    key("limits.max_wait", Kind::OptDuration).flag(
        "max-wait",
        "DURATION",
        FlagParse::Text,
        "Longest wait for an agent's usage limit to reset before the run pauses, e.g. 6h (`limits.max_wait`)",
    ),
];

/// Sections: mappings with a fixed set of keys (the top level is the section `""`).
pub(crate) const SECTIONS: &[&str] = &[
    "",
    "agent",
    "agents",
    "agents.claude",
    "agents.codex",
    "agents.gemini",
    "agents.sim",
    "notifications",
    "notifications.ntfy",
    "mcp",
    "mcp.crash_backoff",
    "git",
    "limits",
];

/// The keys that a `run` flag sets, with the flag, in table order.
pub(crate) fn flagged() -> impl Iterator<Item = (&'static Key, &'static Flag)> {
    KEYS.iter()
        .filter_map(|key| key.flag.as_ref().map(|flag| (key, flag)))
}
