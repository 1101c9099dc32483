//! Restarts: by tool, by exit 42, by crash with backoff, of a frozen or killed server, and
//! under load.

use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use serde_json::{Value, json};

use super::support::{Supervisor, WAIT, alive, at, error_message, events_of, signal_pid};

/// Restart the initialized server by `trigger` and wait for the tools' change to be
/// announced: one restart from `source`, to generation 2 in a new process. The audit.
fn restarted_once(
    s: &mut Supervisor,
    source: &str,
    trigger: impl FnOnce(&mut Supervisor),
) -> Vec<Value> {
    let (pid1, _) = s.whoami();
    trigger(s);
    s.notification("notifications/tools/list_changed");
    s.assert_restarted(pid1, 2);
    let audit = s.audit();
    let requested = events_of(&audit, "restart_requested");
    assert_eq!(requested.len(), 1, "{requested:?}");
    assert_eq!(requested[0]["source"], source, "{}", requested[0]);
    audit
}

/// A supervisor whose server command is a shell that starts a `sleep` helper, appending
/// its pid to `pids`, then runs the test server (`launch` = `exec ` makes the shell the
/// server; empty leaves the server the shell's child).
fn with_a_helper(pids: &Path, launch: &str) -> Supervisor {
    let script = format!(
        "sleep 300 & echo $! >> '{}'; {launch}'{}'",
        pids.display(),
        super::support::test_server().display()
    );
    Supervisor::start_command(&[], &["sh".to_owned(), "-c".to_owned(), script])
}

/// The helpers' pids [`with_a_helper`] wrote, one per server start.
fn helper_pids(pids: &Path) -> Vec<u32> {
    std::fs::read_to_string(pids)
        .expect("helper pids")
        .lines()
        .map(|l| l.trim().parse().expect("pid"))
        .collect()
}

#[test]
fn exit_42_restarts_the_server_throttled() {
    let mut s = Supervisor::start(&[]);
    s.initialize();
    let audit = restarted_once(&mut s, "exit42", |s| {
        assert_eq!(s.tool_text("exit_42", json!({})), "exiting with code 42");
    });
    let exited = events_of(&audit, "server_exited");
    assert_eq!(exited[0]["code"], 42);
    assert_eq!(exited[0]["requested"], false);
    // At most one exit-42 restart per second, measured from the previous start: from
    // when each was spawned, which is its line's time less how long starting took
    // (the reaper's handshake can take tens of milliseconds on a loaded machine).
    let spawned = |event: &serde_json::Value| {
        let took = event["start_ms"].as_i64().expect("start_ms");
        at(event) - jiff::SignedDuration::from_millis(took)
    };
    let starts = events_of(&audit, "server_started");
    let gap = spawned(starts[1]).duration_since(spawned(starts[0]));
    // Both figures are whole milliseconds, cut down: each spawn time is off by 1 ms at
    // the most.
    assert!(
        gap.as_millis() >= 998,
        "restarted {gap:?} after the previous spawn"
    );
    assert!(events_of(&audit, "crash_backoff").is_empty());
}

#[test]
fn a_crash_fails_the_call_and_restarts_with_backoff() {
    let mut s = Supervisor::start(&[]);
    s.initialize();
    let (pid1, _) = s.whoami();
    let reply = s.call_tool("crash", json!({}));
    assert_eq!(reply["error"]["code"], -32603, "{reply}");
    let message = error_message(&reply);
    assert!(message.contains("not retried"), "{message}");
    // Held until the new server is up, after the first backoff step (1 s).
    let waited = Instant::now();
    let (pid2, generation) = s.whoami();
    assert!(
        waited.elapsed() >= Duration::from_millis(900),
        "{:?}",
        waited.elapsed()
    );
    assert_ne!(pid1, pid2);
    assert_eq!(generation, 2);
    // A second crash backs off 1 s again (the first three crashes wait 1 s each).
    let reply = s.call_tool("crash", json!({}));
    assert_eq!(reply["error"]["code"], -32603);
    let (_, generation) = s.whoami();
    assert_eq!(generation, 3);
    let status = s.tool_json("server_status", json!({}));
    assert_eq!(status["crash_count"], 2);
    assert_eq!(status["mode"], "running");

    let audit = s.audit();
    let backoffs = events_of(&audit, "crash_backoff");
    assert_eq!(backoffs.len(), 2);
    assert!(
        backoffs.iter().all(|b| b["delay_ms"] == 1000),
        "{backoffs:?}"
    );
    let exited = events_of(&audit, "server_exited");
    assert_eq!(exited[0]["signal"], "SIGABRT", "{}", exited[0]);
    let starts = events_of(&audit, "server_started");
    for (exit, start) in exited.iter().zip(&starts[1..]) {
        let gap = at(start).duration_since(at(exit));
        assert!(gap.as_millis() >= 990, "started {gap:?} after the crash");
    }
    let failed = events_of(&audit, "request_failed_by_restart");
    assert_eq!(failed.len(), 2);
    assert_eq!(failed[0]["method"], "tools/call");
}

#[test]
fn sigkill_during_a_slow_call_answers_it_at_once() {
    let mut s = Supervisor::start(&[]);
    s.initialize();
    let (pid, _) = s.whoami();
    let slow = s.request(
        "tools/call",
        json!({"name": "slow", "arguments": {"ms": 30_000}}),
    );
    // Answered in order: once this is back, the slow call is in flight to the server.
    let status = s.tool_json("server_status", json!({}));
    assert_eq!(status["requests_in_flight"], 1, "{status}");
    let killed = Instant::now();
    signal_pid(pid, Signal::SIGKILL);
    let reply = s.response(&slow);
    assert!(
        killed.elapsed() < Duration::from_secs(1),
        "answered after {:?}",
        killed.elapsed()
    );
    assert_eq!(reply["error"]["code"], -32603, "{reply}");
    let said = reply["error"]["message"].as_str().unwrap_or_default();
    assert!(
        said.starts_with("the MCP server exited or crashed while this request was in flight"),
        "{reply}"
    );
    let (pid2, _) = s.whoami();
    assert_ne!(pid, pid2);
}

/// The supervisor told to stop (SIGTERM) while a call is in flight answers it saying
/// the server was shut down, not that it restarted.
#[test]
fn a_call_in_flight_at_shutdown_is_told_the_server_was_shut_down() {
    let mut s = Supervisor::start(&[]);
    s.initialize();
    let slow = s.request(
        "tools/call",
        json!({"name": "slow", "arguments": {"ms": 30_000}}),
    );
    let status = s.tool_json("server_status", json!({}));
    assert_eq!(status["requests_in_flight"], 1, "{status}");
    s.signal(Signal::SIGTERM);
    let reply = s.response(&slow);
    let said = reply["error"]["message"].as_str().unwrap_or_default();
    assert!(
        said.starts_with("the MCP server was shut down while this request was in flight"),
        "{reply}"
    );
    assert!(s.wait_exit(super::support::WAIT).is_some(), "exits");
}

#[test]
fn a_frozen_server_is_restarted_by_the_tool() {
    let mut s = Supervisor::start(&[]);
    s.initialize();
    let (pid, _) = s.whoami();
    signal_pid(pid, Signal::SIGSTOP);
    let restarted = s.tool_json("restart_server", json!({"reason": "frozen"}));
    assert_eq!(restarted["restarted"], true, "{restarted}");
    assert_eq!(restarted["old"]["pid"], pid);
    s.assert_restarted(pid, 2);
    assert!(!alive(pid), "the frozen server {pid} is still there");
}

#[test]
fn crash_loops_go_degraded_and_restart_server_recovers() {
    let dir = tempfile::tempdir().expect("tempdir");
    let healthy = dir.path().join("healthy");
    let script = format!(
        "if [ -f '{}' ]; then exec '{}'; else echo 'cannot start' >&2; exit 3; fi",
        healthy.display(),
        super::support::test_server().display()
    );
    std::fs::write(&healthy, "").expect("write");
    // The backoff tiers shortened to a tenth, so the wait for the fifth crash is not the
    // longest in the suite on a loaded host.
    let mut s = Supervisor::start_env(
        &[
            ("DEBUSSY_MCP__CRASH_BACKOFF__FIRST", "0.1"),
            ("DEBUSSY_MCP__CRASH_BACKOFF__SECOND", "0.5"),
        ],
        &[],
        &["sh".to_owned(), "-c".to_owned(), script],
    );
    s.initialize();
    // Break it, then crash it: every restart now fails at once. A request sent meanwhile
    // is held, then failed when the supervisor gives up (5 crashes in 60 s, after
    // 0.1 + 0.1 + 0.1 + 0.5 s of backoff).
    std::fs::remove_file(&healthy).expect("remove");
    let reply = s.call_tool("crash", json!({}));
    assert_eq!(reply["error"]["code"], -32603, "{reply}");
    let reply = s.call_tool("echo", json!({"text": "anyone?"}));
    let message = error_message(&reply);
    assert!(message.contains("degraded"), "{reply}");
    // The server's own words on stderr say why.
    assert!(message.contains("cannot start"), "{reply}");
    let status = s.tool_json("server_status", json!({}));
    assert_eq!(status["mode"], "degraded", "{status}");
    assert_eq!(status["crash_count"], 5);
    assert_eq!(status["last_stderr"], json!(["cannot start"]), "{status}");
    let reply = s.call("tools/list", json!({}));
    let names: Vec<_> = reply["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| t["name"].clone())
        .collect();
    assert!(names.contains(&json!("restart_server")), "{reply}");
    let reply = s.call("resources/list", json!({}));
    assert_eq!(reply["error"]["code"], -32603, "{reply}");

    // Still broken: restart_server says so.
    let reply = s.call_tool("restart_server", json!({"reason": "try again"}));
    assert_eq!(reply["result"]["isError"], true, "{reply}");

    // Fixed: restart_server brings it back, handshake replayed.
    std::fs::write(&healthy, "").expect("write");
    let restarted = s.tool_json("restart_server", json!({"reason": "fixed"}));
    assert_eq!(restarted["restarted"], true, "{restarted}");
    assert_eq!(s.tool_text("echo", json!({"text": "back"})), "back");
    let (_, generation) = s.whoami();
    assert!(generation >= 7, "{generation}");
    let audit = s.audit();
    assert_eq!(events_of(&audit, "degraded").len(), 1, "{audit:?}");
}

/// Pipelined echo, ping and tools/list requests flow without pause while the server is
/// restarted 100 times; every request gets exactly one answer, and none fails.
#[test]
fn a_hundred_restarts_under_a_continuous_stream_lose_nothing() {
    const RESTARTS: usize = 100;
    const WINDOW: usize = 8;
    let mut s = Supervisor::start(&[]);
    s.initialize();
    let mut outstanding: HashMap<String, Option<String>> = HashMap::new();
    let mut sent = 0usize;
    let mut restarts = 0usize;
    let mut answered = 0usize;
    let mut list_changed = 0usize;
    let mut pids = std::collections::HashSet::new();
    let send = |s: &mut Supervisor, id: String, method: &str, params: Value| {
        s.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
    };
    send(
        &mut s,
        "restart-0".into(),
        "tools/call",
        json!({"name": "restart_server", "arguments": {"reason": "load 0"}}),
    );
    outstanding.insert("restart-0".into(), None);
    let started = Instant::now();
    loop {
        while outstanding.len() < WINDOW + 1 && restarts < RESTARTS {
            sent += 1;
            let id = format!("req-{sent}");
            match sent % 10 {
                0 => {
                    send(&mut s, id.clone(), "ping", json!({}));
                    outstanding.insert(id, Some("ping".into()));
                }
                5 => {
                    send(&mut s, id.clone(), "tools/list", json!({}));
                    outstanding.insert(id, Some("list".into()));
                }
                _ => {
                    let text = format!("message {sent} ✓");
                    send(
                        &mut s,
                        id.clone(),
                        "tools/call",
                        json!({"name": "echo", "arguments": {"text": text}}),
                    );
                    outstanding.insert(id, Some(text));
                }
            }
        }
        if restarts == RESTARTS && outstanding.is_empty() {
            break;
        }
        let message = s.next(WAIT).unwrap_or_else(|| {
            panic!(
                "stalled: {} outstanding ({:?}) after {restarts} restarts\nstderr:\n{}",
                outstanding.len(),
                outstanding.keys().collect::<Vec<_>>(),
                s.stderr()
            )
        });
        if message.get("id").is_none() {
            if message["method"] == "notifications/tools/list_changed" {
                list_changed += 1;
            }
            continue;
        }
        let id = message["id"].as_str().expect("string id").to_owned();
        let expected = outstanding.remove(&id).unwrap_or_else(|| {
            panic!("answer to {id} not outstanding (twice, or never asked): {message}")
        });
        assert!(message.get("error").is_none(), "{id} failed: {message}");
        answered += 1;
        match expected.as_deref() {
            None => {
                let text = message["result"]["content"][0]["text"]
                    .as_str()
                    .expect("text");
                let restarted: Value = serde_json::from_str(text).expect("json");
                assert_eq!(restarted["restarted"], true, "{restarted}");
                pids.insert(restarted["new"]["pid"].as_u64().expect("pid"));
                restarts += 1;
                if restarts < RESTARTS {
                    let id = format!("restart-{restarts}");
                    send(
                        &mut s,
                        id.clone(),
                        "tools/call",
                        json!({"name": "restart_server", "arguments": {"reason": format!("load {restarts}")}}),
                    );
                    outstanding.insert(id, None);
                }
            }
            Some("ping") => assert!(message["result"].is_object(), "{message}"),
            Some("list") => assert!(message["result"]["tools"].is_array(), "{message}"),
            Some(text) => assert_eq!(message["result"]["content"][0]["text"], text, "{message}"),
        }
    }
    let elapsed = started.elapsed();
    assert_eq!(answered, sent + RESTARTS);
    assert_eq!(pids.len(), RESTARTS, "every restart brought a new process");
    assert_eq!(list_changed, RESTARTS);
    assert!(
        sent >= RESTARTS * 2,
        "only {sent} requests flowed during the restarts"
    );
    let audit = s.audit();
    assert_eq!(events_of(&audit, "restart_requested").len(), RESTARTS);
    assert!(events_of(&audit, "request_failed_by_restart").is_empty());
    eprintln!("{RESTARTS} restarts with {sent} requests in {elapsed:?}");
    assert!(s.close().success());
}

#[test]
fn sighup_restarts_and_capability_drift_is_recorded() {
    let mut s = Supervisor::start(&["--prompts-from-generation", "2"]);
    let init = s.initialize();
    assert!(init["capabilities"].get("prompts").is_none(), "{init}");
    let audit = restarted_once(&mut s, "signal", |s| s.signal(Signal::SIGHUP));
    let drift = events_of(&audit, "capability_drift");
    assert_eq!(drift.len(), 1, "{audit:?}");
    assert_eq!(drift[0]["field"], "capabilities");
    assert!(drift[0]["before"].get("prompts").is_none(), "{}", drift[0]);
    assert!(drift[0]["after"].get("prompts").is_some(), "{}", drift[0]);
}

/// Wrappers (`npx`, `uv run`, `npm run`) start the real server as a child of their own:
/// stopping the server stops its whole process group, so nothing is left behind.
#[test]
fn a_wrapped_server_leaves_no_orphans() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pids = dir.path().join("helpers");
    let mut s = with_a_helper(&pids, "");
    s.initialize();
    let restarted = s.tool_json("restart_server", json!({"reason": "wrapped"}));
    assert_eq!(restarted["restarted"], true, "{restarted}");
    s.whoami();
    assert!(s.close().success());
    let helpers = helper_pids(&pids);
    assert_eq!(helpers.len(), 2, "{helpers:?}");
    for pid in helpers {
        assert!(
            !alive(pid),
            "helper {pid} of a stopped server is still running"
        );
    }
}

/// SIGKILL gives the supervisor no chance to stop its server: the server's group
/// watchdog kills it, and the helper it started, once the supervisor is gone.
#[test]
fn a_sigkilled_supervisor_takes_its_server_and_the_servers_helpers_along() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pids = dir.path().join("helpers");
    let mut s = with_a_helper(&pids, "exec ");
    s.initialize();
    let (server, _) = s.whoami();
    let [helper] = helper_pids(&pids)[..] else {
        panic!("not one helper: {:?}", helper_pids(&pids))
    };
    assert!(alive(server) && alive(helper));
    signal_pid(s.pid(), Signal::SIGKILL);
    let deadline = Instant::now() + WAIT;
    while alive(server) || alive(helper) {
        assert!(
            Instant::now() < deadline,
            "server {server} or helper {helper} outlived the SIGKILLed supervisor"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
