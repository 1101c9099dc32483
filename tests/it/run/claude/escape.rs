//! Nothing the agent starts outlives debussy: the real Claude Code runs each Bash tool
//! command in a session of its own (`setsid`), outside the agent's process group, and an
//! agent may start a `setsid` helper of its own. Both die with debussy, whether it ends
//! normally or is killed with SIGKILL.

use std::time::Duration;

use serde_json::json;

use super::kit::{Project, usage};
use crate::support::model_server::{ModelServer, Turn};
use crate::support::processes::process_gone;
use crate::support::project::wait_exit;
use crate::support::wait::pid_in;

/// The session id of process `pid` (field 6 of its stat).
fn session_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    fields.get(3)?.parse().ok()
}

/// Kill `pid` if it is still alive, so a failing test leaves nothing behind.
fn reap_leftover(pid: u32) {
    if let Ok(pid) = i32::try_from(pid) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
}

#[test]
#[ignore = "needs the pinned Claude Code CLI (scripts/test-tools)"]
fn a_bash_command_in_a_session_of_its_own_dies_with_a_sigkilled_debussy() {
    let project = Project::planned(&[("1", "test -f done.txt")]);
    let pid_file = project.root().join("tool.pid");
    let late = project.root().join("late.txt");
    let server = ModelServer::serving([Turn::new()
        .text("Waiting for the build.")
        .tool_use(
            "Bash",
            json!({
                "command": format!("echo $$ > {}; sleep 300; touch {}", pid_file.display(), late.display()),
                "description": "wait for the build",
            }),
        )
        .usage(usage(10))]);

    let mut live = project.start_run(&server);
    let agent = live.until("session_started")["pid"]
        .as_u64()
        .and_then(|pid| u32::try_from(pid).ok())
        .expect("a session started");
    let tool = pid_in(&pid_file, Duration::from_secs(60));
    let (tool_session, agent_session) = (session_of(tool), session_of(agent));
    if tool_session.is_none() || tool_session == agent_session {
        reap_leftover(tool);
        panic!(
            "the premise failed: Claude Code ran the Bash command in the agent's session \
             ({tool_session:?} = {agent_session:?})"
        );
    }

    nix::sys::signal::kill(live.pid(), nix::sys::signal::Signal::SIGKILL).expect("SIGKILL");
    assert_eq!(wait_exit(&mut live.child, Duration::from_secs(30)), -1);
    let gone = process_gone(u64::from(tool));
    reap_leftover(tool);
    assert!(
        gone,
        "the Bash command (pid {tool}, session {tool_session:?}) outlived a SIGKILLed debussy"
    );
    assert!(process_gone(u64::from(agent)), "the agent outlived debussy");
    assert!(
        !late.exists(),
        "the Bash command went on after debussy died"
    );
}

#[test]
#[ignore = "needs the pinned Claude Code CLI (scripts/test-tools)"]
fn a_setsid_helper_of_the_agent_dies_when_the_run_ends() {
    let project = Project::planned(&[("1", "test -f done.txt")]);
    let pid_file = project.root().join("helper.pid");
    let server = ModelServer::serving([
        Turn::new()
            .text("Starting a watcher.")
            .tool_use(
                "Bash",
                json!({
                    "command": format!(
                        "setsid sh -c 'echo $$ > {}; exec sleep 300' </dev/null >/dev/null 2>&1 &",
                        pid_file.display()
                    ),
                    "description": "start a watcher",
                }),
            )
            .usage(usage(10)),
        project.write_turn("done.txt", "ok\n", 11),
        Turn::reply("Done.").usage(usage(12)),
    ]);

    let (code, events) = project.run(&server, &[]);
    let helper = pid_in(&pid_file, Duration::from_secs(60));
    let gone = process_gone(u64::from(helper));
    reap_leftover(helper);
    assert_eq!(code, 0, "{events:#?}");
    assert!(
        gone,
        "the agent's setsid helper (pid {helper}) outlived the run"
    );
}
