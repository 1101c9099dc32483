//! `--jobs 2` with the real Claude Code CLI: two independent phases whose sessions run at
//! the same time, each in its own worktree, both merged back.

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;

use super::kit::{Project, permission_args_yaml, usage};
use crate::support::claude;
use crate::support::model_server::{ModelServer, RecordedRequest, RequestKind, Scenario, Turn};
use crate::support::project::{self, events_named as named, wait_exit as wait};

/// The prompt of phase `id`'s sessions, which routes the model's answers to its script.
fn phase_prompt(id: &str) -> String {
    format!("You are working on phase {id} of")
}

fn turns(id: &str) -> Vec<Turn> {
    vec![
        // Held open until both sessions are talking to the model at once.
        Turn::new()
            .text("Writing.")
            .bash(format!("printf 'wing {id}\\n' > wing-{id}.txt"), "write")
            .usage(usage(10))
            .hold(),
        Turn::reply("Done.").usage(usage(11)),
    ]
}

fn of_phase(request: &RecordedRequest, id: &str) -> bool {
    matches!(&request.kind, RequestKind::Subagent { key: Some(key), .. } if *key == phase_prompt(id))
}

#[test]
#[ignore = "needs the pinned Claude Code CLI (scripts/test-tools)"]
fn two_real_sessions_run_side_by_side_in_worktrees_and_both_merge() {
    let project = Project::new();
    let mut master = String::from("# Wings\n\n| Phase | Title | Status |\n|---|---|---|\n");
    for id in ["1", "2"] {
        master.push_str(&format!(
            "| {id} | [Wing {id}](phase-{id}.md) | Pending |\n"
        ));
        project.write(
            &format!("plan/phase-{id}.md"),
            &format!(
                "# Phase {id}: Wing {id}\n\n**Status:** Pending\n**Depends On:** N/A\n\n\
                 ## Gates\n- check: `test -s wing-{id}.txt` passes\n\n## Tasks\n- [ ] {id}.1: Write wing {id}\n"
            ),
        );
    }
    project.write("plan/MASTER_PLAN.md", &master);
    project.write(
        ".debussy/config.yaml",
        &format!(
            "model: {}\nrestart_delay: 0\ntimeout: 120\njobs: 2\nagent:\n  kind: claude\n  command: {}\n{}",
            claude::DEFAULT_MODEL,
            project.cli.path().display(),
            permission_args_yaml()
        ),
    );
    project::commit_all(project.root(), "plan");
    let server = ModelServer::start(
        Scenario::new()
            .subagent(phase_prompt("1"), turns("1"))
            .subagent(phase_prompt("2"), turns("2")),
    )
    .expect("model server");

    let mut child = project
        .command(
            &server,
            &["run", "plan/MASTER_PLAN.md", "--output-format", "json"],
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let reader = std::thread::spawn(move || {
        lines
            .map_while(Result::ok)
            .map(|line| serde_json::from_str::<Value>(&line).expect("json"))
            .collect::<Vec<_>>()
    });
    server
        .wait_until(
            "both phases' sessions talking to the model at once",
            Duration::from_secs(90),
            |requests| {
                ["1", "2"]
                    .iter()
                    .all(|id| requests.iter().any(|r| of_phase(r, id)))
            },
        )
        .expect("both sessions at once");
    server.release();
    let code = wait(&mut child, Duration::from_secs(120));
    let events = reader.join().expect("events");
    assert_eq!(code, 0, "{events:#?}");

    for id in ["1", "2"] {
        assert_eq!(
            std::fs::read_to_string(project.root().join(format!("wing-{id}.txt")))
                .expect("merged onto the run's branch"),
            format!("wing {id}\n")
        );
    }
    let merged = named(&events, "merged");
    assert_eq!(merged.len(), 2, "{events:#?}");
    project::assert_every_session_in_a_worktree(&events);
    assert!(
        !project.root().join(".debussy/worktrees").exists()
            || std::fs::read_dir(project.root().join(".debussy/worktrees"))
                .expect("dir")
                .next()
                .is_none(),
        "merged phases leave no worktree behind"
    );
}
