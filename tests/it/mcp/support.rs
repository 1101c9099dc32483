//! Helpers for the supervisor's end-to-end tests: the test server binary, a raw
//! newline-JSON-RPC client driving `debussy mcp supervise`, and bounded waits.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// The crate root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The debussy binary under test.
pub fn debussy() -> PathBuf {
    PathBuf::from(crate::support::DEBUSSY)
}

/// The rmcp test server (`examples/mcp_test_server.rs`), built once per test run.
pub fn test_server() -> PathBuf {
    crate::support::example_build::mcp_test_server()
}

/// How long any single wait in these tests may take before the test fails.
pub const WAIT: Duration = Duration::from_secs(20);

/// A running `debussy mcp supervise` (or `bridge`) driven through its stdin/stdout by a raw
/// newline-JSON-RPC client. Every line the supervisor writes on stdout must be JSON (the
/// reader thread fails the test otherwise). Dropping it closes stdin and waits (bounded)
/// for the supervisor to exit, then kills it if it did not.
pub struct Supervisor {
    stdin: Option<ChildStdin>,
    lines: Receiver<Value>,
    exit: Receiver<std::process::ExitStatus>,
    exited: Option<std::process::ExitStatus>,
    pid: u32,
    stderr: Arc<Mutex<String>>,
    stderr_closed: Receiver<()>,
    stash: Vec<Value>,
    next_id: u64,
    /// The state directory (audit log, marker); for a supervisor started with
    /// [`Supervisor::start_in`], the parent of the default ones (`.debussy/mcp`).
    pub state_dir: PathBuf,
    /// The supervisor's working directory, removed when it is dropped (unless the
    /// test owns it).
    _dir: Option<tempfile::TempDir>,
}

impl Supervisor {
    /// Supervise the test server with `server_args`, with default supervisor flags.
    pub fn start(server_args: &[&str]) -> Self {
        Self::start_with(&[], server_args)
    }

    /// Supervise the test server, with extra supervisor flags before `--`.
    pub fn start_with(flags: &[&str], server_args: &[&str]) -> Self {
        let mut command = vec![test_server().display().to_string()];
        command.extend(server_args.iter().map(|s| (*s).to_owned()));
        Self::start_command(flags, &command)
    }

    /// Supervise any command.
    pub fn start_command(flags: &[&str], command: &[String]) -> Self {
        Self::start_env(&[], flags, command)
    }

    /// Supervise any command, with extra environment variables for the supervisor.
    pub fn start_env(env: &[(&str, &str)], flags: &[&str], command: &[String]) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let state_dir = dir.path().join("state");
        let mut args = vec!["--state-dir".to_owned(), state_dir.display().to_string()];
        args.extend(flags.iter().map(|f| (*f).to_owned()));
        let cwd = dir.path().to_owned();
        Self::spawn("supervise", &cwd, Some(dir), state_dir, env, &args, command)
    }

    /// Run `debussy mcp bridge` with `flags` (which must include `--port`) in front of
    /// the daemon `command`, with its state in `state_dir` (owned by the test).
    pub fn start_bridge(state_dir: &Path, flags: &[String], command: &[String]) -> Self {
        let mut args = vec!["--state-dir".to_owned(), state_dir.display().to_string()];
        args.extend(flags.iter().cloned());
        let cwd = state_dir.parent().expect("the state dir has a parent");
        Self::spawn(
            "bridge",
            cwd,
            None,
            state_dir.to_owned(),
            &[],
            &args,
            command,
        )
    }

    /// Supervise any command from the working directory `cwd` (owned by the test),
    /// with no `--state-dir` unless `flags` give one.
    pub fn start_in(cwd: &Path, flags: &[&str], command: &[String]) -> Self {
        let flags: Vec<String> = flags.iter().map(|f| (*f).to_owned()).collect();
        let state_dir = cwd.join(".debussy/mcp");
        Self::spawn("supervise", cwd, None, state_dir, &[], &flags, command)
    }

    fn spawn(
        subcommand: &str,
        cwd: &Path,
        dir: Option<tempfile::TempDir>,
        state_dir: PathBuf,
        env: &[(&str, &str)],
        flags: &[String],
        command: &[String],
    ) -> Self {
        let mut child = Command::new(debussy())
            .current_dir(cwd)
            .args(["mcp", subcommand])
            .args(flags)
            .arg("--")
            .args(command)
            .env_remove("DEBUSSY_LOG")
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start debussy mcp");
        let pid = child.id();
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("stdout");
        let stderr_pipe = child.stderr.take().expect("stderr");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let value: Value = serde_json::from_str(&line).unwrap_or_else(|err| {
                    panic!("the supervisor wrote a line that is not JSON on stdout ({err}): {line}")
                });
                if tx.send(value).is_err() {
                    break;
                }
            }
        });
        let stderr = Arc::new(Mutex::new(String::new()));
        let sink = Arc::clone(&stderr);
        let (stderr_tx, stderr_closed) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr_pipe).lines() {
                let Ok(line) = line else { break };
                if std::env::var_os("MCP_TEST_VERBOSE").is_some() {
                    eprintln!("{line}");
                }
                let mut text = sink.lock().expect("lock");
                text.push_str(&line);
                text.push('\n');
            }
            let _ = stderr_tx.send(());
        });
        let (exit_tx, exit) = mpsc::channel();
        std::thread::spawn(move || {
            if let Ok(status) = child.wait() {
                let _ = exit_tx.send(status);
            }
        });
        Supervisor {
            stdin,
            lines,
            exit,
            exited: None,
            pid,
            stderr,
            stderr_closed,
            stash: Vec::new(),
            next_id: 0,
            state_dir,
            _dir: dir,
        }
    }

    /// The supervisor's pid.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Write one message.
    pub fn send(&mut self, message: &Value) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        let mut line = serde_json::to_vec(message).expect("json");
        line.push(b'\n');
        stdin.write_all(&line).expect("write to the supervisor");
        stdin.flush().expect("flush");
    }

    /// Write raw bytes.
    pub fn send_raw(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(bytes).expect("write to the supervisor");
        stdin.flush().expect("flush");
    }

    /// Send a request with a fresh numeric id; returns the id.
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = json!(self.next_id);
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    /// The next message, waiting at most `timeout`.
    pub fn next(&mut self, timeout: Duration) -> Option<Value> {
        if !self.stash.is_empty() {
            return Some(self.stash.remove(0));
        }
        self.lines.recv_timeout(timeout).ok()
    }

    /// Wait for the message matching `pred`, keeping the others for later.
    pub fn wait_for(
        &mut self,
        what: &str,
        timeout: Duration,
        pred: impl Fn(&Value) -> bool,
    ) -> Value {
        if let Some(at) = self.stash.iter().position(&pred) {
            return self.stash.remove(at);
        }
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(value) if pred(&value) => return value,
                Ok(value) => self.stash.push(value),
                Err(_) => panic!(
                    "no {what} within {timeout:?}; got meanwhile: {:?}\nstderr:\n{}",
                    self.stash,
                    self.stderr()
                ),
            }
        }
    }

    /// Wait for the response to `id`.
    pub fn response(&mut self, id: &Value) -> Value {
        let id = id.clone();
        self.wait_for(&format!("response to {id}"), WAIT, move |m| {
            m.get("id") == Some(&id) && m.get("method").is_none()
        })
    }

    /// Wait for a notification `method`.
    pub fn notification(&mut self, method: &str) -> Value {
        let m = method.to_owned();
        self.wait_for(&format!("notification {method}"), WAIT, move |v| {
            v.get("method").and_then(Value::as_str) == Some(&m) && v.get("id").is_none()
        })
    }

    /// Request and wait for the response.
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.request(method, params);
        self.response(&id)
    }

    /// The `initialize` handshake; returns the result.
    pub fn initialize(&mut self) -> Value {
        let reply = self.call("initialize", initialize_params("2025-06-18"));
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        reply
            .get("result")
            .cloned()
            .unwrap_or_else(|| panic!("initialize failed: {reply}"))
    }

    /// Call a tool; returns the whole response.
    pub fn call_tool(&mut self, name: &str, arguments: Value) -> Value {
        self.call("tools/call", json!({"name": name, "arguments": arguments}))
    }

    /// Call a tool that must succeed; returns its text content.
    pub fn tool_text(&mut self, name: &str, arguments: Value) -> String {
        let reply = self.call_tool(name, arguments);
        let result = reply
            .get("result")
            .unwrap_or_else(|| panic!("{name} failed: {reply}\nstderr:\n{}", self.stderr()));
        assert_ne!(result["isError"], true, "{name} returned an error: {reply}");
        result["content"][0]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("{name}: no text content: {reply}"))
            .to_owned()
    }

    /// Call a tool whose text is JSON.
    pub fn tool_json(&mut self, name: &str, arguments: Value) -> Value {
        let text = self.tool_text(name, arguments);
        serde_json::from_str(&text).unwrap_or_else(|err| panic!("{name}: not JSON ({err}): {text}"))
    }

    /// The test server's `whoami`: (pid, generation).
    pub fn whoami(&mut self) -> (u32, u64) {
        let who = self.tool_json("whoami", json!({}));
        let pid = who["pid"]
            .as_u64()
            .and_then(|p| u32::try_from(p).ok())
            .expect("pid");
        (pid, who["generation"].as_u64().expect("generation"))
    }

    /// The server now answering `whoami` is generation `generation`, in a process other
    /// than `old`: its pid.
    pub fn assert_restarted(&mut self, old: u32, generation: u64) -> u32 {
        let (new, now) = self.whoami();
        assert_ne!(new, old, "the server was not restarted");
        assert_eq!(now, generation, "generation of the server {new}");
        new
    }

    /// Everything the supervisor logged on stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr.lock().expect("lock").clone()
    }

    /// Wait until the supervisor's stderr contains `needle` (polled; bounded by WAIT).
    pub fn wait_stderr(&self, needle: &str) {
        let deadline = Instant::now() + WAIT;
        while !self.stderr().contains(needle) {
            assert!(
                Instant::now() < deadline,
                "no {needle:?} on stderr within {WAIT:?}:\n{}",
                self.stderr()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The audit log's events, parsed.
    pub fn audit(&self) -> Vec<Value> {
        read_audit(&self.state_dir)
    }

    /// Close stdin and wait for the supervisor to exit.
    pub fn close(&mut self) -> std::process::ExitStatus {
        self.stdin = None;
        self.wait_exit(WAIT).unwrap_or_else(|| {
            panic!(
                "the supervisor did not exit within {WAIT:?} after stdin closed\nstderr:\n{}",
                self.stderr()
            )
        })
    }

    /// Wait for the supervisor to exit.
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<std::process::ExitStatus> {
        if self.exited.is_none() {
            self.exited = self.exit.recv_timeout(timeout).ok();
            if self.exited.is_some() {
                // The exit can be seen before the last of stderr is read.
                let _ = self.stderr_closed.recv_timeout(WAIT);
            }
        }
        self.exited
    }

    /// Send a signal to the supervisor.
    pub fn signal(&self, signal: nix::sys::signal::Signal) {
        signal_pid(self.pid, signal);
    }
}

impl Drop for Supervisor {
    fn drop(&mut self) {
        self.stdin = None;
        if self.wait_exit(WAIT).is_none() {
            signal_pid(self.pid, nix::sys::signal::Signal::SIGKILL);
            let _ = self.wait_exit(WAIT);
        }
    }
}

/// Send `signal` to `pid`.
pub fn signal_pid(pid: u32, signal: nix::sys::signal::Signal) {
    let pid = nix::unistd::Pid::from_raw(i32::try_from(pid).expect("pid fits"));
    let _ = nix::sys::signal::kill(pid, signal);
}

/// Whether a process with this pid is running. A zombie (dead, not yet reaped by the
/// init process it was handed to) does not count.
pub fn alive(pid: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    // The state follows the command name, which is in parentheses and may hold spaces.
    let state = stat
        .rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().next())
        .unwrap_or("");
    !matches!(state, "Z" | "X" | "")
}

/// The audit log in `state_dir`, parsed.
pub fn read_audit(state_dir: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(state_dir.join("audit.jsonl")).unwrap_or_default();
    text.lines()
        .map(|line| {
            serde_json::from_str(line)
                .unwrap_or_else(|err| panic!("bad audit line ({err}): {line}"))
        })
        .collect()
}

/// The audit events of one type.
pub fn events_of<'a>(events: &'a [Value], event_type: &str) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|e| e["event_type"] == event_type)
        .collect()
}

/// An audit event's timestamp.
pub fn at(event: &Value) -> jiff::Timestamp {
    event["timestamp"]
        .as_str()
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("no timestamp in {event}"))
}

/// The `error.message` of a JSON-RPC reply; empty when it has none.
pub fn error_message(reply: &Value) -> &str {
    reply["error"]["message"].as_str().unwrap_or_default()
}

/// The `initialize` request's params: protocol revision `version`, no capabilities.
pub fn initialize_params(version: &str) -> Value {
    json!({
        "protocolVersion": version,
        "capabilities": {},
        "clientInfo": {"name": "debussy-tests", "version": "1"}
    })
}

/// The `event_type`s of an audit log, in order.
pub fn event_types(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| e["event_type"].as_str().map(str::to_owned))
        .collect()
}
