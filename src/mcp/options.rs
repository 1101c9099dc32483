//! What one `debussy mcp supervise` or `debussy mcp bridge` run is told: the server
//! command, the state directory, file watching, the daemon's address for the bridge, and
//! the timing and size limits of the front (with the defaults issue 6 gives). Built by
//! the command from its flags and the `mcp` configuration section.

use std::path::PathBuf;
use std::time::Duration;

use crate::config::McpConfig;
use crate::restart::{Backoff, BackoffTier, RestartConfig};

/// Everything the supervisor needs to run.
#[derive(Debug, Clone)]
pub struct SuperviseOptions {
    /// Name used in logs and the default state directory.
    pub name: String,
    /// The server program and its arguments.
    pub command: Vec<String>,
    /// Where the audit log and the restart marker are written.
    pub state_dir: PathBuf,
    /// Add `restart_server`, `verify_server_restarted` and `server_status`.
    pub inject_tools: bool,
    /// Paths whose changes restart the server.
    pub watch: Vec<PathBuf>,
    /// Shell command run after a change, before the restart.
    pub build: Option<String>,
    /// Quiet time before a burst of changes counts as one.
    pub debounce: Duration,
    /// Timing and size limits.
    pub limits: Limits,
    /// When to restart a child that exited, and when to give up.
    pub restart: RestartConfig,
}

/// The proxy's timing and size limits.
#[derive(Debug, Clone, PartialEq)]
pub struct Limits {
    /// How long a restarted child has to answer the replayed `initialize` (default 10 s).
    pub readiness_timeout: Duration,
    /// How long a child has to answer the client's own first `initialize`, before any
    /// child ever did (default 60 s: `npx` and `uv run` may download on a cold cache, and
    /// killing them there only starts the download again).
    pub first_readiness_timeout: Duration,
    /// How long requests in flight may take to finish before a planned restart stops
    /// their child (default 10 s).
    pub drain_grace: Duration,
    /// How long a request may wait for a ready child before it is answered with an
    /// error (default 30 s, under the usual 60 s client timeout).
    pub buffer_deadline: Duration,
    /// How long a request sent to a server may wait for its answer before the client
    /// gets an error instead (default 10 min): an answer lost or sent under another id
    /// never leaves a client waiting forever.
    pub answer_timeout: Duration,
    /// How many messages may wait for a ready child (default 1000).
    pub buffer_max_messages: usize,
    /// How many bytes may wait for a ready child (default 64 MiB).
    pub buffer_max_bytes: usize,
    /// Longest accepted message, on either side (default 16 MiB).
    pub max_line_length: usize,
    /// Stop ladder: time between closing a child's stdin and SIGTERM (default 2 s).
    pub stop_close_grace: Duration,
    /// Stop ladder: time between SIGTERM and SIGKILL (default 3 s).
    pub stop_term_grace: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            readiness_timeout: Duration::from_secs(10),
            first_readiness_timeout: Duration::from_secs(60),
            drain_grace: Duration::from_secs(10),
            buffer_deadline: Duration::from_secs(30),
            answer_timeout: Duration::from_secs(600),
            buffer_max_messages: 1000,
            buffer_max_bytes: 64 * 1024 * 1024,
            max_line_length: super::jsonrpc::framing::DEFAULT_MAX_LINE_LENGTH,
            stop_close_grace: Duration::from_secs(2),
            stop_term_grace: Duration::from_secs(3),
        }
    }
}

impl SuperviseOptions {
    /// Options for `command` with every default: state under `.debussy/mcp/<name>/` of the
    /// current directory, tools injected, nothing watched.
    #[must_use]
    pub fn new(name: impl Into<String>, command: Vec<String>) -> Self {
        let name = name.into();
        SuperviseOptions {
            state_dir: PathBuf::from(".debussy/mcp").join(&name),
            name,
            command,
            inject_tools: true,
            watch: Vec::new(),
            build: None,
            debounce: Duration::from_millis(300),
            limits: Limits::default(),
            restart: RestartConfig::default(),
        }
    }
}

impl SuperviseOptions {
    /// Take limits and the restart policy from the `mcp` configuration section.
    ///
    /// # Errors
    /// A duration that is negative, not a number or too large, named by its key.
    pub fn apply_config(&mut self, config: &McpConfig) -> Result<(), String> {
        let secs = |key: &str, value: f64| {
            Duration::try_from_secs_f64(value)
                .map_err(|_| format!("mcp.{key} must be a number of seconds ≥ 0, not {value}"))
        };
        let size = |value: u64| usize::try_from(value).unwrap_or(usize::MAX).max(1);
        let count = |value: u64| u32::try_from(value).unwrap_or(u32::MAX);
        self.limits = Limits {
            readiness_timeout: secs("readiness_timeout", config.readiness_timeout)?,
            first_readiness_timeout: secs(
                "first_readiness_timeout",
                config.first_readiness_timeout,
            )?,
            drain_grace: secs("drain_grace", config.drain_grace)?,
            buffer_deadline: secs("request_deadline", config.request_deadline)?,
            answer_timeout: secs("answer_timeout", config.answer_timeout)?,
            buffer_max_messages: size(config.buffer_max_messages),
            buffer_max_bytes: size(config.buffer_max_bytes),
            max_line_length: size(config.max_line_bytes),
            stop_close_grace: secs("stop_close_grace", config.stop_close_grace)?,
            stop_term_grace: secs("stop_term_grace", config.stop_term_grace)?,
        };
        let backoff = &config.crash_backoff;
        self.restart = RestartConfig {
            restart_interval: secs("restart_interval", config.restart_interval)?,
            backoff: Backoff::new(
                [
                    BackoffTier {
                        up_to: count(backoff.first_count),
                        delay: secs("crash_backoff.first", backoff.first)?,
                    },
                    BackoffTier {
                        up_to: count(backoff.second_until),
                        delay: secs("crash_backoff.second", backoff.second)?,
                    },
                ],
                secs("crash_backoff.after", backoff.after)?,
            ),
            max_crashes: count(config.max_crashes),
            crash_window: secs("crash_window", config.crash_window)?,
            stable_after: secs("stable_after", config.stable_after)?,
        };
        Ok(())
    }
}

/// Everything a bridge needs to run.
#[derive(Debug, Clone)]
pub struct BridgeOptions {
    /// Name used in logs and the default state directory.
    pub name: String,
    /// The daemon program and its arguments.
    pub command: Vec<String>,
    /// The daemon's host (loopback by default).
    pub host: String,
    /// The daemon's port.
    pub port: u16,
    /// The MCP endpoint's path (default `/mcp`).
    pub path: String,
    /// A path that answers 2xx once the daemon is ready; without it, an `initialize`
    /// must succeed.
    pub health: Option<String>,
    /// A path that makes the daemon shut down when POSTed to, tried before SIGTERM.
    pub shutdown_path: Option<String>,
    /// How long a new daemon has to become ready.
    pub ready_timeout: Duration,
    /// Where the record, log, lock, learned lists, audit log and marker are kept.
    pub state_dir: PathBuf,
    /// Add `restart_server`, `verify_server_restarted` and `server_status`.
    pub inject_tools: bool,
    /// Stop the daemon when the bridge ends, if this bridge started it.
    pub stop_daemon_on_exit: bool,
    /// Timing and size limits (the buffer deadline, line length, SIGTERM grace).
    pub limits: Limits,
    /// When to start a daemon again after it went away, and when to give up.
    pub restart: RestartConfig,
}

impl BridgeOptions {
    /// Options for `command` on `port` with every default.
    #[must_use]
    pub fn new(name: String, command: Vec<String>, port: u16) -> Self {
        BridgeOptions {
            state_dir: PathBuf::from(".debussy").join("mcp").join(&name),
            name,
            command,
            host: "127.0.0.1".to_owned(),
            port,
            path: "/mcp".to_owned(),
            health: None,
            shutdown_path: None,
            ready_timeout: Duration::from_secs(6),
            inject_tools: true,
            stop_daemon_on_exit: false,
            limits: Limits::default(),
            restart: RestartConfig::default(),
        }
    }
}

/// Longest readable part of a default name, in bytes (before the hash).
const NAME_WORDS_MAX: usize = 40;

/// The name a server gets when none is given, from its whole command: the file names
/// (without extension) of the words that are not flags, joined with `-` and shortened,
/// then 8 hex digits of a hash of the whole command. `python3 a/server.py` and
/// `python3 b/server.py` thus get names of their own (and state directories of their
/// own), and the same command always gets the same name. Anything but letters, digits,
/// `-`, `_` and `.` becomes `_`.
#[must_use]
pub fn default_name(command: &[String]) -> String {
    let words: Vec<String> = command
        .iter()
        .filter(|word| !word.starts_with('-'))
        .map(|word| {
            let path = std::path::Path::new(word);
            let stem = path
                .file_stem()
                .map_or_else(|| word.clone(), |s| s.to_string_lossy().into_owned());
            clean(&stem)
        })
        .filter(|word| !word.is_empty() && !word.chars().all(|c| c == '.'))
        .collect();
    let mut readable = words.join("-");
    if readable.len() > NAME_WORDS_MAX {
        // `clean` leaves ASCII only, so any byte is a character boundary.
        readable.truncate(NAME_WORDS_MAX);
    }
    let readable = readable.trim_end_matches(['-', '_', '.']);
    let readable = if readable.is_empty() || readable.starts_with('.') {
        format!("server{readable}")
    } else {
        readable.to_owned()
    };
    format!("{readable}-{:08x}", fnv1a(command))
}

fn clean(word: &str) -> String {
    word.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// FNV-1a over the words, each followed by a NUL, folded to 32 bits: stable across
/// Rust releases and platforms (unlike `DefaultHasher`), so a name never changes.
fn fnv1a(command: &[String]) -> u32 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in command
        .iter()
        .flat_map(|word| word.bytes().chain(std::iter::once(0)))
    {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    #[expect(
        clippy::cast_possible_truncation,
        reason = "folding 64 bits to 32 on purpose"
    )]
    let folded = (hash ^ (hash >> 32)) as u32;
    folded
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_config_gives_the_default_limits_and_policy() {
        let mut opts = SuperviseOptions::new("x", vec!["x".into()]);
        opts.apply_config(&McpConfig::default()).expect("valid");
        assert_eq!(opts.limits, Limits::default());
        assert_eq!(opts.restart, RestartConfig::default());
        let bad = McpConfig {
            drain_grace: -1.0,
            ..McpConfig::default()
        };
        let err = opts.apply_config(&bad).expect_err("negative");
        assert!(err.contains("mcp.drain_grace"), "{err}");
    }

    #[test]
    fn default_names_come_from_the_whole_command() {
        let name =
            |c: &[&str]| default_name(&c.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>());
        let (a, b) = (
            name(&["python3", "a/server.py"]),
            name(&["python3", "b/server.py"]),
        );
        assert!(a.starts_with("python3-server-"), "{a}");
        assert!(b.starts_with("python3-server-"), "{b}");
        assert_ne!(a, b);
        assert_eq!(a, name(&["python3", "a/server.py"]), "stable");
        assert_eq!(a.len(), "python3-server-".len() + 8);
        assert!(name(&["/usr/bin/node", "dist/index.js"]).starts_with("node-index-"));
        assert!(name(&["./my server.py", "--port", "3"]).starts_with("my_server-3-"));
        assert!(name(&[]).starts_with("server-"));
        assert!(name(&[".."]).starts_with("server-"));
        let long = name(&["uv", "run", "--with", "mcp", &"x".repeat(200)]);
        assert!(long.len() <= NAME_WORDS_MAX + 9, "{long}");
        for odd in [name(&["/", "."]), name(&["sh", "-c", "cd / && exec ./s"])] {
            assert!(!odd.contains('/') && !odd.starts_with('.'), "{odd}");
        }
    }
}
