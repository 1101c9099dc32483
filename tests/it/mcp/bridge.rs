//! `debussy mcp bridge` against real streamable-HTTP daemons: the rmcp test server in
//! `--http` mode, frozen, killed mid-call, exiting on its own, shared by two bridges.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use serde_json::{Value, json};

use super::support::{
    Supervisor, WAIT, alive, error_message, events_of, initialize_params, signal_pid, test_server,
};
use crate::support::ports::Port;
use crate::support::wait::wait_until;

/// Whether something listens on `port`.
pub(super) fn listening(port: u16) -> bool {
    std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
}

/// A state directory and port for bridges of one test. Dropping it kills every daemon
/// recorded there that is still running, so a failing test leaves none behind.
pub(super) struct Stage {
    _dir: tempfile::TempDir,
    pub(super) state_dir: PathBuf,
    pub(super) port: u16,
    _reserved: Port,
}

impl Stage {
    pub(super) fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let state_dir = dir.path().join("state");
        let reserved = Port::reserve();
        Stage {
            _dir: dir,
            state_dir,
            port: reserved.number(),
            _reserved: reserved,
        }
    }

    /// A bridge in front of the rmcp test server on this stage's port.
    pub(super) fn bridge(&self, flags: &[&str], server_args: &[&str]) -> Supervisor {
        let mut command = vec![
            test_server().display().to_string(),
            "--http".to_owned(),
            self.port.to_string(),
        ];
        command.extend(server_args.iter().map(|s| (*s).to_owned()));
        self.bridge_command(flags, &command)
    }

    /// A bridge with the default flags in front of the rmcp test server, its handshake
    /// done.
    pub(super) fn ready_bridge(&self) -> Supervisor {
        let mut bridge = self.bridge(&[], &[]);
        bridge.initialize();
        bridge
    }

    /// A bridge in front of any daemon command.
    pub(super) fn bridge_command(&self, flags: &[&str], command: &[String]) -> Supervisor {
        let mut all = vec!["--port".to_owned(), self.port.to_string()];
        if !flags.contains(&"--ready-timeout") {
            all.extend(["--ready-timeout".to_owned(), "15s".to_owned()]);
        }
        all.extend(flags.iter().map(|f| (*f).to_owned()));
        Supervisor::start_bridge(&self.state_dir, &all, command)
    }

    /// Write `yaml` as a configuration file in the state directory: the
    /// `--config PATH` flags that name it.
    pub(super) fn config(&self, yaml: &str) -> [String; 2] {
        std::fs::create_dir_all(&self.state_dir).expect("state dir");
        let config = self.state_dir.join("config.yaml");
        std::fs::write(&config, yaml).expect("write the config");
        ["--config".to_owned(), config.display().to_string()]
    }

    /// Every daemon pid recorded in the state directory.
    pub(super) fn recorded_pids(&self) -> Vec<u32> {
        recorded_pids(&self.state_dir)
    }
}

impl Drop for Stage {
    fn drop(&mut self) {
        for pid in self.recorded_pids() {
            if alive(pid) {
                let group = nix::unistd::Pid::from_raw(-i32::try_from(pid).expect("pid fits"));
                let _ = nix::sys::signal::kill(group, Signal::SIGKILL);
                signal_pid(pid, Signal::SIGKILL);
            }
        }
        let deadline = Instant::now() + WAIT;
        while self.recorded_pids().iter().any(|pid| alive(*pid)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

pub(super) fn recorded_pids(state_dir: &Path) -> Vec<u32> {
    let Ok(text) = std::fs::read_to_string(state_dir.join("daemon.json")) else {
        return Vec::new();
    };
    let record: Value = serde_json::from_str(&text).unwrap_or_default();
    record["starts"]
        .as_array()
        .map(|starts| {
            starts
                .iter()
                .filter_map(|s| s["pid"].as_u64())
                .filter_map(|pid| u32::try_from(pid).ok())
                .collect()
        })
        .unwrap_or_default()
}

pub(super) fn restart(bridge: &mut Supervisor, reason: &str) -> Value {
    bridge.tool_json("restart_server", json!({"reason": reason}))
}

#[test]
fn starts_the_daemon_forwards_calls_and_answers_the_lists_itself() {
    let stage = Stage::new();
    let mut bridge = stage.bridge(&[], &[]);
    let init = bridge.initialize();
    assert_eq!(init["serverInfo"]["name"], "rmcp", "{init}");
    let tools = bridge.call("tools/list", json!({}));
    let names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    for name in [
        "echo",
        "whoami",
        "restart_server",
        "verify_server_restarted",
        "server_status",
    ] {
        assert!(names.contains(&name), "{name} missing from {names:?}");
    }
    assert_eq!(
        bridge.tool_text("echo", json!({"text": "héllo ✓"})),
        "héllo ✓"
    );
    let (pid, generation) = bridge.whoami();
    assert_eq!(generation, 1);
    assert_eq!(stage.recorded_pids(), vec![pid]);
    let log = std::fs::read_to_string(stage.state_dir.join("daemon.log")).expect("daemon.log");
    assert!(log.contains("listening on"), "{log}");
    let status = bridge.tool_json("server_status", json!({}));
    assert_eq!(status["mode"], "running", "{status}");
    assert_eq!(status["pid"], pid, "{status}");
    assert_eq!(status["started_by_this_bridge"], true, "{status}");
    assert_eq!(bridge.call("ping", json!({}))["result"], json!({}));

    // The daemon outlives a bridge not asked to stop it.
    assert!(bridge.close().success(), "{}", bridge.stderr());
    assert!(alive(pid) && listening(stage.port));
}

#[test]
fn a_frozen_daemon_is_restarted_through_the_tool_and_the_next_call_reaches_the_new_one() {
    let stage = Stage::new();
    let mut bridge = stage.bridge(&["--ready-timeout", "5s"], &[]);
    bridge.initialize();
    let (old, _) = bridge.whoami();
    signal_pid(old, Signal::SIGSTOP);
    let stuck = bridge.request("tools/call", json!({"name": "whoami", "arguments": {}}));

    let asked = Instant::now();
    let restarted = restart(&mut bridge, "frozen");
    assert_eq!(restarted["status"], "ok", "{restarted}");
    assert_eq!(restarted["restarted"], true, "{restarted}");
    assert_eq!(restarted["previous_stopped"], true, "{restarted}");
    assert_eq!(restarted["old"]["pid"], old, "{restarted}");
    assert!(asked.elapsed() < Duration::from_secs(5), "{restarted}");
    assert!(!alive(old), "the frozen daemon {old} is still there");

    // The call the frozen daemon held is answered: by the old daemon itself when the
    // SIGCONT lets it finish before SIGTERM ends it, else with an error (it may have run).
    let reply = bridge.response(&stuck);
    match reply["result"]["content"][0]["text"].as_str() {
        Some(text) => {
            let who: Value = serde_json::from_str(text).expect("whoami is JSON");
            assert_eq!(who["pid"], old, "{reply}");
        }
        None => assert!(reply.get("error").is_some(), "{reply}"),
    }
    let (new, generation) = bridge.whoami();
    assert_eq!(new, restarted["new"]["pid"], "{restarted}");
    assert_eq!(generation, 2);
    let verified = bridge.tool_json(
        "verify_server_restarted",
        json!({"since_timestamp": restarted_since(&bridge)}),
    );
    assert_eq!(verified["restarted"], true, "{verified}");
    let audit = bridge.audit();
    assert_eq!(events_of(&audit, "restart_requested").len(), 1, "{audit:?}");
    assert!(stage.state_dir.join("restart_marker.json").exists());
}

/// The time of the bridge's first audit line: every start after it counts.
pub(super) fn restarted_since(bridge: &Supervisor) -> String {
    let audit = bridge.audit();
    audit[0]["timestamp"]
        .as_str()
        .expect("timestamp")
        .to_owned()
}

#[test]
fn a_daemon_killed_mid_call_gets_the_call_answered_at_once_and_the_next_call_works() {
    let stage = Stage::new();
    let mut bridge = stage.ready_bridge();
    let (old, _) = bridge.whoami();
    let slow = bridge.request(
        "tools/call",
        json!({"name": "slow", "arguments": {"ms": 30_000}}),
    );
    let log = stage.state_dir.join("daemon.log");
    wait_until("the slow call reaching the daemon", WAIT, || {
        std::fs::read_to_string(&log).is_ok_and(|text| text.contains("slow: sleeping"))
    });
    let killed = Instant::now();
    signal_pid(old, Signal::SIGKILL);
    let reply = bridge.response(&slow);
    let answered = killed.elapsed();
    let message = error_message(&reply);
    assert!(
        message.contains("went away") && message.contains("while this request was in flight"),
        "{reply}"
    );
    assert!(
        answered < Duration::from_secs(1),
        "answered after {answered:?}"
    );

    bridge.assert_restarted(old, 2);
    let audit = bridge.audit();
    assert_eq!(
        events_of(&audit, "request_failed_by_restart").len(),
        1,
        "{audit:?}"
    );
}

#[test]
fn a_daemon_that_exits_42_is_started_again() {
    let stage = Stage::new();
    let mut bridge = stage.ready_bridge();
    let (old, _) = bridge.whoami();
    assert_eq!(
        bridge.tool_text("exit_42", json!({})),
        "exiting with code 42"
    );
    // A request posted in the moment the daemon dies may have reached it: the bridge
    // reports such a request lost. This one is sent once the bridge saw the exit.
    wait_until("the bridge seeing the daemon exit", WAIT, || {
        !events_of(&bridge.audit(), "server_exited").is_empty()
    });
    bridge.assert_restarted(old, 2);
    let audit = bridge.audit();
    let exited = events_of(&audit, "server_exited");
    assert!(
        exited
            .iter()
            .any(|e| e["status"].as_str().is_some_and(|s| s.contains("42"))),
        "{audit:?}"
    );
}

#[test]
fn a_client_that_connects_during_a_restart_gets_initialize_and_tools_list_at_once() {
    let stage = Stage::new();
    // SIGTERM is ignored, so the restart waits out the 3 s SIGTERM grace before SIGKILL.
    let mut first = stage.bridge(&[], &["--ignore-sigterm"]);
    first.initialize();
    let (old, _) = first.whoami();
    let restarting = first.request(
        "tools/call",
        json!({"name": "restart_server", "arguments": {"reason": "slow stop"}}),
    );
    wait_until("the restart starting", WAIT, || {
        !events_of(
            &super::support::read_audit(&stage.state_dir),
            "server_exiting",
        )
        .is_empty()
    });

    let mut second = stage.bridge(&[], &["--ignore-sigterm"]);
    let asked = Instant::now();
    let init = second.initialize();
    let tools = second.call("tools/list", json!({}));
    let took = asked.elapsed();
    assert_eq!(init["serverInfo"]["name"], "rmcp", "{init}");
    assert!(
        tools["result"]["tools"]
            .as_array()
            .is_some_and(|t| t.len() > 3),
        "{tools}"
    );
    assert!(
        alive(old),
        "the restart was over before the second client connected"
    );
    assert!(
        took < Duration::from_secs(1),
        "initialize and tools/list took {took:?}"
    );

    let restarted = first.response(&restarting);
    assert!(restarted.get("result").is_some(), "{restarted}");
    let (new_first, _) = first.whoami();
    let (new_second, _) = second.whoami();
    assert_eq!(new_first, new_second);
    assert_ne!(new_first, old);
}

#[test]
fn two_bridges_share_one_daemon_and_both_survive_a_restart_from_one() {
    let stage = Stage::new();
    let mut first = stage.bridge(&[], &[]);
    let mut second = stage.bridge(&[], &[]);
    first.initialize();
    second.initialize();
    let (pid_first, _) = first.whoami();
    let (pid_second, _) = second.whoami();
    assert_eq!(pid_first, pid_second, "two daemons were started");
    assert_eq!(stage.recorded_pids().len(), 1);

    let restarted = restart(&mut first, "shared");
    assert_eq!(restarted["status"], "ok", "{restarted}");
    let (new_second, generation) = second.whoami();
    assert_eq!(new_second, restarted["new"]["pid"], "{restarted}");
    assert_eq!(generation, 2);
    let (new_first, _) = first.whoami();
    assert_eq!(new_first, new_second);
    assert_eq!(
        stage.recorded_pids().len(),
        2,
        "one start each: the first and the restart"
    );

    // The other way round: the daemon the first bridge started, restarted by the second.
    let again = restart(&mut second, "shared, from the other side");
    assert_eq!(again["status"], "ok", "{again}");
    let (third, generation) = first.whoami();
    assert_eq!(third, again["new"]["pid"], "{again}");
    assert_eq!(generation, 3);
    let status = first.tool_json("server_status", json!({}));
    assert_eq!(
        status["crashes_in_window"], 0,
        "a restart by the other bridge counted as a crash: {status}"
    );
}

#[test]
fn stop_daemon_on_exit_frees_the_port_and_leaves_no_process() {
    let stage = Stage::new();
    let mut bridge = stage.bridge(&["--stop-daemon-on-exit"], &[]);
    bridge.initialize();
    let (pid, _) = bridge.whoami();
    assert!(bridge.close().success(), "{}", bridge.stderr());
    assert!(!alive(pid), "the daemon {pid} outlived the bridge");
    assert!(!listening(stage.port), "port {} is still taken", stage.port);
}

/// Without `--stop-daemon-on-exit`, or with it in a bridge that did not start the daemon,
/// the daemon outlives the bridge, and the bridge says so and why, rather than reporting
/// an exit that did not happen.
#[test]
fn a_bridge_that_ends_says_the_daemon_keeps_running() {
    let stage = Stage::new();
    let mut first = stage.ready_bridge();
    let (pid, generation) = first.whoami();
    let mut second = stage.bridge(&["--stop-daemon-on-exit"], &[]);
    second.initialize();
    for (bridge, why) in [
        (&mut second, "another bridge started it"),
        (&mut first, "the daemon stays for the next client"),
    ] {
        assert!(bridge.close().success(), "{}", bridge.stderr());
        assert!(alive(pid), "the daemon {pid} did not outlive the bridge");
        let stderr = bridge.stderr();
        assert!(
            stderr.contains(&format!(
                "the server (generation {generation}, pid {pid}) keeps running: this bridge ended its session"
            )) && stderr.contains(why),
            "{stderr}"
        );
        assert!(!stderr.contains("exited: unknown exit status"), "{stderr}");
    }
}

#[test]
fn requests_from_the_daemon_reach_the_client_and_its_answers_reach_the_daemon() {
    let stage = Stage::new();
    let mut bridge = stage.bridge(&[], &[]);
    let reply = bridge.call(
        "initialize",
        json!({
            "protocolVersion": "2025-06-18",
            "capabilities": {"roots": {"listChanged": false}},
            "clientInfo": {"name": "debussy-tests", "version": "1"}
        }),
    );
    assert!(reply.get("result").is_some(), "{reply}");
    bridge.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let call = bridge.request("tools/call", json!({"name": "list_roots", "arguments": {}}));
    let ask = bridge.wait_for("roots/list from the daemon", WAIT, |m| {
        m["method"] == "roots/list" && m.get("id").is_some()
    });
    bridge.send(&json!({
        "jsonrpc": "2.0",
        "id": ask["id"],
        "result": {"roots": [{"uri": "file:///work", "name": "work"}]}
    }));
    let answer = bridge.response(&call);
    let text = answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.contains("file:///work"), "{answer}");
}

#[test]
fn a_daemon_that_cannot_start_is_reported_with_its_log() {
    let stage = Stage::new();
    // Every start fails; a short backoff lets the bridge give up in a second.
    let [flag, config] =
        stage.config("mcp:\n  max_crashes: 2\n  crash_backoff:\n    first: 0.05\n");
    let mut bridge = stage.bridge(
        &[&flag, &config, "--ready-timeout", "2s"],
        &["--exit-at-start", "3"],
    );
    let reply = bridge.call("initialize", initialize_params("2025-06-18"));
    let message = error_message(&reply);
    assert!(reply.get("error").is_some(), "{reply}");
    assert!(!message.is_empty(), "{reply}");
    bridge.wait_stderr("exiting at start with code 3");
}

#[test]
fn a_shutdown_path_is_tried_before_signals_and_configure_restart_works_too() {
    let stage = Stage::new();
    let mut bridge = stage.bridge(
        &["--shutdown-path", "/shutdown", "--health", "/health"],
        &[],
    );
    bridge.initialize();
    let (old, _) = bridge.whoami();
    let restarted = bridge.tool_json(
        "configure",
        json!({"action": "restart", "reason": "configure convention"}),
    );
    assert_eq!(restarted["status"], "ok", "{restarted}");
    assert_eq!(restarted["stopped_by"], "shutdown request", "{restarted}");
    assert_eq!(restarted["reason"], "configure convention", "{restarted}");
    assert!(!alive(old));
    let (new, _) = bridge.whoami();
    assert_eq!(new, restarted["new"]["pid"], "{restarted}");
}

#[test]
fn a_daemon_that_keeps_failing_leaves_the_bridge_degraded_until_restart_server() {
    let stage = Stage::new();
    let [flag, config] =
        stage.config("mcp:\n  max_crashes: 2\n  crash_backoff:\n    first: 0.05\n");
    let counter = stage.state_dir.join("starts");
    let counter_arg = counter.display().to_string();
    // Every start fails; the counter file counts the attempts.
    let mut bridge = stage.bridge(
        &[&flag, &config, "--ready-timeout", "2s"],
        &["--exit-at-start", "3", "--counter-file", &counter_arg],
    );
    let reply = bridge.call("initialize", initialize_params("2025-06-18"));
    assert!(reply.get("error").is_some(), "{reply}");
    bridge.wait_stderr("requests get errors until `restart_server` is called");
    let audit = bridge.audit();
    assert_eq!(events_of(&audit, "degraded").len(), 1, "{audit:?}");
    let starts = std::fs::read_to_string(&counter).expect("counter");
    assert_eq!(
        starts.trim(),
        "2",
        "the bridge kept starting a failing daemon"
    );

    let again = bridge.call(
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "x"}}),
    );
    let message = error_message(&again);
    assert!(message.contains("restart_server"), "{again}");
}
