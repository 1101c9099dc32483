//! A script's turns: assistant messages with their usage, pauses, compactions and crashes.

use serde::Deserialize;
use serde::de::{self, Deserializer};

use super::action::{Action, RawAction};
use crate::sim::Usage;

/// One step of a script.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(try_from = "RawTurn")]
pub enum Turn {
    /// One assistant message: text and tool calls, with the usage its request reports.
    Message(MessageTurn),
    /// A `compact_boundary` line, as when the agent compacts its own context.
    Compact(CompactSpec),
    /// Die abruptly, without a result line.
    Crash(CrashSpec),
    /// Pause, printing nothing.
    Sleep {
        /// How long.
        sleep_ms: u64,
    },
}

/// An assistant message turn.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct MessageTurn {
    /// Pause before the message.
    pub sleep_ms: u64,
    /// Visible text.
    pub say: Option<String>,
    /// Thinking text.
    pub think: Option<String>,
    /// The usage the message reports.
    pub usage: UsageSpec,
    /// Tool calls, run in order after the message.
    pub tools: Vec<Action>,
}

/// How a turn's usage is given.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum UsageSpec {
    /// The previous context plus what was said and returned since, roughly.
    #[default]
    Auto,
    /// Context tokens in use (input + cache read + cache creation).
    Context(u64),
    /// Percent of the scenario's window.
    Percent(f64),
    /// The usage numbers, verbatim.
    Exact(Usage),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTurn {
    #[serde(default)]
    sleep_ms: Option<u64>,
    #[serde(default)]
    say: Option<String>,
    #[serde(default)]
    think: Option<String>,
    #[serde(default)]
    context: Option<u64>,
    #[serde(default)]
    percent: Option<f64>,
    #[serde(default)]
    usage: Option<ExactUsage>,
    #[serde(default)]
    tools: Vec<RawAction>,
    #[serde(default)]
    compact: Option<CompactSpec>,
    #[serde(default)]
    crash: Option<CrashSpec>,
}

impl TryFrom<RawTurn> for Turn {
    type Error = String;
    fn try_from(raw: RawTurn) -> Result<Self, String> {
        let has_message = raw.say.is_some() || raw.think.is_some() || !raw.tools.is_empty();
        let usage_keys = [
            raw.context.is_some(),
            raw.percent.is_some(),
            raw.usage.is_some(),
        ];
        let has_usage = usage_keys.iter().any(|set| *set);
        let special = usize::from(raw.compact.is_some()) + usize::from(raw.crash.is_some());
        if special > 1 || (special == 1 && (has_message || has_usage || raw.sleep_ms.is_some())) {
            return Err(
                "a `compact` or `crash` turn takes no other keys: put it in a turn of its own"
                    .to_owned(),
            );
        }
        if let Some(compact) = raw.compact {
            return Ok(Turn::Compact(compact));
        }
        if let Some(crash) = raw.crash {
            return Ok(Turn::Crash(crash));
        }
        if usage_keys.iter().filter(|set| **set).count() > 1 {
            return Err("give at most one of `context`, `percent` and `usage`".to_owned());
        }
        if !has_message {
            return match (raw.sleep_ms, has_usage) {
                (Some(sleep_ms), false) => Ok(Turn::Sleep { sleep_ms }),
                _ => Err(
                    "a turn needs `say`, `think` or `tools` (or is a lone `sleep_ms`, `compact` or `crash`)"
                        .to_owned(),
                ),
            };
        }
        let usage = match (raw.context, raw.percent, raw.usage) {
            (Some(context), _, _) => UsageSpec::Context(context),
            (_, Some(percent), _) if !(0.0..=1000.0).contains(&percent) => {
                return Err(format!("`percent: {percent}` is out of range (0 to 1000)"));
            }
            (_, Some(percent), _) => UsageSpec::Percent(percent),
            (_, _, Some(usage)) => UsageSpec::Exact(Usage {
                input_tokens: usage.input_tokens,
                cache_read_input_tokens: usage.cache_read_input_tokens,
                cache_creation_input_tokens: usage.cache_creation_input_tokens,
                output_tokens: usage.output_tokens,
            }),
            _ => UsageSpec::Auto,
        };
        Ok(Turn::Message(MessageTurn {
            sleep_ms: raw.sleep_ms.unwrap_or(0),
            say: raw.say,
            think: raw.think,
            usage,
            tools: raw.tools.into_iter().map(|action| action.0).collect(),
        }))
    }
}

/// `usage:` as written in a scenario: the API's four counts, each defaulting to zero.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ExactUsage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    cache_read_input_tokens: u64,
    #[serde(default)]
    cache_creation_input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
}

/// A `compact_boundary` line's metadata.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompactSpec {
    /// `auto` (default) or `manual`.
    #[serde(default = "default_trigger")]
    pub trigger: String,
    /// Context tokens before compaction; default: the context reported so far.
    #[serde(default)]
    pub pre_tokens: Option<u64>,
}

fn default_trigger() -> String {
    "auto".to_owned()
}

/// How the agent dies.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CrashSpec {
    /// Exit code (default 1), used when no signal is given.
    #[serde(default = "default_crash_code")]
    pub exit_code: i32,
    /// A signal to kill itself with (`SIGKILL`, `SIGSEGV`, `SIGABRT`, …).
    #[serde(default, deserialize_with = "signal_name")]
    pub signal: Option<nix::sys::signal::Signal>,
    /// Printed on stderr first.
    #[serde(default)]
    pub stderr: Option<String>,
    /// Print half a JSON line, without its newline, first.
    #[serde(default)]
    pub partial_line: bool,
}

fn default_crash_code() -> i32 {
    1
}

/// A signal by name, with or without the `SIG` prefix.
fn signal_name<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<nix::sys::signal::Signal>, D::Error> {
    let name = String::deserialize(deserializer)?;
    let full = if name.starts_with("SIG") {
        name.clone()
    } else {
        format!("SIG{name}")
    };
    full.parse().map(Some).map_err(|_| {
        de::Error::custom(format!(
            "unknown signal `{name}` (try SIGKILL, SIGSEGV, SIGABRT)"
        ))
    })
}
