//! `debussy run --jobs N`: phases side by side in git worktrees, merged back in
//! completion order, with the sim agent in temporary repositories.

use std::time::Duration;

use serde_json::Value;

use super::kit::{fork, half_done, merging_after, notes, summary, work, work_turns};
use super::witness::git;
use crate::support::processes::process_gone;
use crate::support::project::{self, Project, events_named, sim_run_args, wait_exit};
use crate::support::scenario::{Scenario, Script, Turn};
use crate::support::wait::wait_until;

fn ts(event: &Value) -> jiff::Timestamp {
    event["ts"]
        .as_str()
        .expect("ts")
        .parse()
        .expect("timestamp")
}

/// A plan whose phases 2, 3 and 4 depend on 1, and 5 on all three.
fn diamond(project: &Project, scenario: &Scenario) {
    project.plan(
        &[
            ("1", "N/A", "test -f f1.txt"),
            ("2", "Phase 1", "test -f f2.txt"),
            ("3", "Phase 1", "test -f f3.txt"),
            ("4", "Phase 1", "test -f f4.txt"),
            (
                "5",
                "Phase 2, Phase 3, Phase 4",
                "test -f f2.txt && test -f f3.txt && test -f f4.txt && test -f f5.txt",
            ),
        ],
        scenario,
    );
}

#[test]
fn a_diamond_runs_its_middle_phases_at_once_and_joins_after_their_merges() {
    let project = Project::new();
    let scenario = Scenario::new()
        .script(work("1", "f1.txt", "one", 0))
        .scripts(["2", "3", "4"].map(|id| work(id, &format!("f{id}.txt"), id, 1500)))
        .script(work("5", "f5.txt", "five", 0));
    diamond(&project, &scenario);

    let branch = git(project.root(), &["branch", "--show-current"]);
    let (code, events) = project.run(&["--jobs", "3"]);
    assert_eq!(code, 0, "{events:#?}");
    assert_eq!(summary(&events)["status"], "completed");

    let session = |name: &str, id: &str| {
        ts(events_named(&events, name)
            .into_iter()
            .find(|e| e["phase_id"] == id)
            .unwrap_or_else(|| panic!("{name} of phase {id}")))
    };
    let last_start = ["2", "3", "4"]
        .map(|id| session("session_started", id))
        .into_iter()
        .max()
        .expect("starts");
    let first_end = ["2", "3", "4"]
        .map(|id| session("session_ended", id))
        .into_iter()
        .min()
        .expect("ends");
    assert!(
        last_start < first_end,
        "phases 2, 3 and 4 ran at once: the last started at {last_start}, the first ended at {first_end}"
    );
    let merges = events_named(&events, "merged");
    assert_eq!(merges.len(), 5, "every phase merged: {merges:#?}");
    let commits: Vec<&str> = summary(&events)["commits"]
        .as_array()
        .expect("commits")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let unique: std::collections::BTreeSet<&str> = commits.iter().copied().collect();
    assert_eq!(unique.len(), commits.len(), "each commit once: {commits:?}");
    let merged_middle =
        ["2", "3", "4"].map(|id| ts(merges.iter().find(|e| e["phase_id"] == id).expect("merged")));
    assert!(
        merged_middle
            .iter()
            .all(|merged| *merged < session("session_started", "5")),
        "phase 5 started after the merges"
    );
    for file in ["f1.txt", "f2.txt", "f3.txt", "f4.txt", "f5.txt"] {
        assert!(
            project.root().join(file).exists(),
            "{file} on the run branch"
        );
    }
    assert_eq!(git(project.root(), &["branch", "--show-current"]), branch);
    assert_eq!(
        git(project.root(), &["branch", "--list", "debussy/*"]),
        "",
        "merged phases' branches are removed"
    );
    assert_eq!(
        git(project.root(), &["worktree", "list", "--porcelain"])
            .lines()
            .filter(|l| l.starts_with("worktree "))
            .count(),
        1,
        "merged phases' worktrees are removed"
    );
    project::assert_every_session_in_a_worktree(&events);
}

/// Phases 2 and 3 (after 1) both rewrite `shared.txt`; 3 finishes once 2 is merged.
pub(super) fn conflicting(project: &Project, remediation: Script) {
    let scenario = Scenario::new()
        .script(work("1", "shared.txt", "base\n", 0))
        .script(work("2", "shared.txt", "two\n", 0))
        .script(merging_after(
            "shared.txt",
            "two",
            work_turns("3", "shared.txt", "three\n", 0),
        ))
        .script(remediation);
    let gates = [
        "test -f shared.txt",
        "grep -q two shared.txt",
        "grep -q three shared.txt",
    ];
    fork(project, gates, &scenario);
}

#[test]
fn a_merge_conflict_is_resolved_by_a_remediation_session_in_the_worktree() {
    let project = Project::new();
    let resolve = work("3", "shared.txt", "two\nthree\n", 0)
        .attempt(2)
        .expect_prompt("conflict markers")
        .expect_prompt("shared.txt");
    conflicting(&project, resolve);

    let (code, events) = project.run(&["--jobs", "2"]);
    assert_eq!(code, 0, "{events:#?}");
    let conflicts = events_named(&events, "merge_conflict");
    assert_eq!(conflicts.len(), 1, "{events:#?}");
    assert_eq!(conflicts[0]["phase_id"], "3");
    assert_eq!(conflicts[0]["files"][0], "shared.txt");
    let fix = events_named(&events, "phase_started")
        .into_iter()
        .rfind(|e| e["phase_id"] == "3")
        .expect("the fix session's start");
    assert_eq!(fix["kind"], "merge_fix", "{fix:#}");
    assert_eq!(
        std::fs::read_to_string(project.root().join("shared.txt")).expect("read"),
        "two\nthree\n"
    );
    assert_eq!(summary(&events)["status"], "completed");
    assert_eq!(
        git(
            project.root(),
            &["status", "--porcelain", "--untracked-files=no"]
        ),
        ""
    );
}

/// The session that resolves a merge conflict is said as the merge fix it is, not as a
/// numbered attempt that reads like the phase's last retry.
#[test]
fn a_merge_fix_is_said_as_such_not_as_the_last_attempt() {
    let project = Project::new();
    conflicting(
        &project,
        work("3", "shared.txt", "two\nthree\n", 0).attempt(2),
    );
    let output = project::output_within(
        project.command(&sim_run_args(
            "plan/MASTER_PLAN.md",
            &["--jobs", "2", "--restart-delay", "0"],
        )),
        Duration::from_secs(120),
    );
    let said = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{said}");
    let phase_3: Vec<&str> = said
        .lines()
        .filter(|line| line.contains("phase 3 (3/3)"))
        .collect();
    assert_eq!(phase_3.len(), 2, "the attempt and the fix: {said}");
    assert!(
        phase_3[1].contains("merge fix") && !phase_3[1].contains("attempt"),
        "{}",
        phase_3[1]
    );
}

/// Phase 3's remediation session reports done without touching the conflict.
fn leave_the_markers() -> Script {
    Script::phase("3")
        .attempt(2)
        .turn(Turn::say("I leave the markers"))
        .turn(Turn::done())
}

#[test]
fn an_unresolvable_conflict_waits_for_a_human_with_the_worktree_kept() {
    let project = Project::new();
    conflicting(&project, leave_the_markers());

    let (code, events) = project.run(&["--jobs", "2"]);
    assert_eq!(code, 1, "{events:#?}");
    let finished = events_named(&events, "phase_finished");
    let three = finished
        .iter()
        .rfind(|e| e["phase_id"] == "3")
        .expect("phase 3 finished");
    assert_eq!(three["status"], "awaiting_human", "{three:#?}");
    let error = three["error"].as_str().expect("error");
    assert!(
        error.contains("conflict markers remain in shared.txt"),
        "{error}"
    );
    let run_id = events[0]["run_id"].as_str().expect("run id");
    let branch = format!("debussy/{run_id}/phase-3");
    assert!(error.contains(&format!("git merge {branch}")), "{error}");
    assert!(
        project
            .root()
            .join(".debussy/worktrees")
            .join(run_id)
            .join("3")
            .join("shared.txt")
            .exists(),
        "the worktree is kept"
    );
    assert_eq!(
        git(
            project.root(),
            &["branch", "--list", "--format=%(refname:short)", &branch]
        ),
        branch
    );
    assert_eq!(
        std::fs::read_to_string(project.root().join("shared.txt")).expect("read"),
        "two\n",
        "the run branch holds phase 2's work, no markers"
    );
    assert_eq!(
        git(
            project.root(),
            &["status", "--porcelain", "--untracked-files=no"]
        ),
        ""
    );
    assert_eq!(summary(&events)["status"], "failed");

    // Finishing by hand as printed, then resuming, completes the run.
    let merge = std::process::Command::new("git")
        .args(["merge", &branch])
        .current_dir(project.root())
        .output()
        .expect("git merge");
    assert!(!merge.status.success(), "the conflict is real");
    project.write("shared.txt", "two\nthree\n");
    git(project.root(), &["add", "shared.txt"]);
    git(project.root(), &["commit", "--no-edit"]);
    assert_eq!(
        git(
            project.root(),
            &["status", "--porcelain", "--untracked-files=no"]
        ),
        ""
    );
    let (code, events) = project.run(&["--jobs", "2", "--resume"]);
    assert_eq!(code, 0, "{events:#?}");
    assert_eq!(git(project.root(), &["branch", "--list", "debussy/*"]), "");
    assert!(
        !project
            .root()
            .join(".debussy/worktrees")
            .join(run_id)
            .exists(),
        "nothing of the run is left under .debussy/worktrees"
    );
}

#[test]
fn ctrl_c_pauses_three_running_phases_and_resume_completes_them() {
    let project = Project::new();
    project.write(".gitignore", "started-*\n");
    let sleeping = |id: &str| {
        Script::phase(id)
            .turn(
                Turn::say("working")
                    .percent(10)
                    .writes(&format!("f{id}.txt"), id)
                    .bash(&format!(
                        "if [ ! -f $DEBUSSY_PROJECT_ROOT/started-{id} ]; then touch $DEBUSSY_PROJECT_ROOT/started-{id}; sleep 60; fi"
                    )),
            )
            .turn(notes(id))
            .turn(Turn::done())
    };
    let scenario = Scenario::new()
        .script(work("1", "f1.txt", "one", 0))
        .scripts(["2", "3", "4"].map(sleeping))
        .script(work("5", "f5.txt", "five", 0));
    diamond(&project, &scenario);

    let (mut child, mut lines) = project.start_run(&["--restart-delay", "0", "--jobs", "3"]);
    let mut agents = Vec::new();
    for line in lines.by_ref().map_while(Result::ok) {
        let event: Value = serde_json::from_str(&line).expect("json");
        if event["event"] == "session_started" && event["phase_id"] != "1" {
            agents.push(event["pid"].as_u64().expect("pid"));
            if agents.len() == 3 {
                break;
            }
        }
    }
    for id in ["2", "3", "4"] {
        wait_until(
            "every agent's sleep to start",
            Duration::from_secs(30),
            || project.root().join(format!("started-{id}")).exists(),
        );
    }
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(child.id()).expect("pid")),
        nix::sys::signal::Signal::SIGINT,
    )
    .expect("SIGINT");
    let rest: Vec<Value> = lines
        .map_while(Result::ok)
        .map(|line| serde_json::from_str(&line).expect("json"))
        .collect();
    let code = wait_exit(&mut child, Duration::from_secs(60));
    assert_eq!(code, 130, "{rest:#?}");
    for pid in agents {
        assert!(process_gone(pid), "agent {pid} survived Ctrl-C");
    }
    let paused: Vec<&str> = events_named(&rest, "phase_finished")
        .iter()
        .filter(|e| e["status"] == "paused")
        .filter_map(|e| e["phase_id"].as_str())
        .collect();
    assert_eq!(paused.len(), 3, "all three paused: {rest:#?}");
    assert_eq!(project.status_json()["run"]["status"], "paused");

    let one_at_a_time = project
        .command(&sim_run_args(
            "plan/MASTER_PLAN.md",
            &["--resume", "--jobs", "1"],
        ))
        .output()
        .expect("resume with one job");
    let said = String::from_utf8_lossy(&one_at_a_time.stderr);
    assert_eq!(one_at_a_time.status.code(), Some(2), "{said}");
    assert!(said.contains("--jobs 2"), "{said}");
    assert_eq!(
        project.status_json()["run"]["status"],
        "paused",
        "refused, nothing changed"
    );

    let (code, events) = project.run(&["--resume"]);
    assert_eq!(code, 0, "{events:#?}");
    assert_eq!(events[0]["resumed"], true);
    for file in ["f2.txt", "f3.txt", "f4.txt", "f5.txt"] {
        assert!(
            project.root().join(file).exists(),
            "{file} on the run branch"
        );
    }
    assert_eq!(git(project.root(), &["branch", "--list", "debussy/*"]), "");
}

#[test]
fn a_context_restart_in_a_worktree_commits_its_checkpoint_on_the_phase_branch() {
    let project = Project::new();
    let scenario = Scenario::new()
        .script(work("1", "f1.txt", "one", 0))
        .script(half_done("2", 95))
        .script(work("2", "f2.txt", "two", 0))
        .script(work("3", "f3.txt", "three", 0));
    project.plan(
        &[
            ("1", "N/A", "test -f f1.txt"),
            ("2", "Phase 1", "test -f f2.txt && test -f half.txt"),
            ("3", "Phase 1", "test -f f3.txt"),
        ],
        &scenario,
    );

    let (mut child, lines) = project.start_run(&["--restart-delay", "2", "--jobs", "2"]);
    let mut run_id = String::new();
    let mut checked = false;
    let mut events = Vec::new();
    for line in lines.map_while(Result::ok) {
        let event: Value = serde_json::from_str(&line).expect("json");
        if event["event"] == "run_started" {
            run_id = event["run_id"].as_str().expect("run id").to_owned();
        }
        if event["event"] == "restart" {
            let commit = event["commit"].as_str().expect("checkpoint commit");
            let branch = format!("debussy/{run_id}/phase-2");
            assert_eq!(git(project.root(), &["rev-parse", &branch]), commit);
            assert_ne!(git(project.root(), &["rev-parse", "HEAD"]), commit);
            assert!(
                !std::process::Command::new("git")
                    .args(["merge-base", "--is-ancestor", commit, "HEAD"])
                    .current_dir(project.root())
                    .status()
                    .expect("git")
                    .success(),
                "the checkpoint is not on the run branch"
            );
            assert!(!project.root().join("half.txt").exists());
            checked = true;
        }
        events.push(event);
    }
    let code = wait_exit(&mut child, Duration::from_secs(60));
    assert_eq!(code, 0, "{events:#?}");
    assert!(checked, "a context restart happened: {events:#?}");
    assert!(
        project.root().join("half.txt").exists(),
        "merged at the end"
    );
}

#[test]
fn clean_keeps_unmerged_work_unless_forced() {
    let project = Project::new();
    conflicting(&project, leave_the_markers());
    let (code, events) = project.run(&["--jobs", "2"]);
    assert_eq!(code, 1, "{events:#?}");
    let run_id = events[0]["run_id"].as_str().expect("run id");
    let worktree = project
        .root()
        .join(".debussy/worktrees")
        .join(run_id)
        .join("3");
    // The user's own branch, named like a phase's but of no run: never debussy's to remove.
    let mine = "debussy/my-notes/phase-1";
    git(project.root(), &["branch", mine, "HEAD"]);

    let clean = |args: &[&str]| {
        let output = project.command(args).output().expect("clean");
        assert!(output.status.success(), "{output:?}");
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    let listed = clean(&["clean", "--dry-run"]);
    assert!(
        listed.contains("kept") && listed.contains("not merged"),
        "{listed}"
    );
    let kept = clean(&["clean"]);
    assert!(kept.contains("kept"), "{kept}");
    assert!(worktree.exists(), "unmerged work is kept");

    let removed = clean(&["clean", "--force"]);
    assert!(removed.contains("removed"), "{removed}");
    assert!(!worktree.exists());
    assert!(!removed.contains("my-notes"), "{removed}");
    assert_eq!(
        git(project.root(), &["branch", "--list", "debussy/*"]).trim(),
        mine
    );
    assert_eq!(
        clean(&["clean"]),
        "no worktrees or branches of debussy runs to clean\n"
    );
}

#[test]
fn a_cost_limit_counts_every_running_phase_and_pauses_them_all() {
    let project = Project::new();
    let expensive = |id: &str| {
        Script::phase(id)
            .turn(
                Turn::say("writing")
                    .percent(1)
                    .writes(&format!("f{id}.txt"), id),
            )
            .turn(Turn::say("thinking hard").percent(30))
            .turn(Turn::sleep(20_000))
    };
    let scenario = Scenario::new().scripts(["1", "2"].map(expensive));
    project.plan(
        &[
            ("1", "N/A", "test -f f1.txt"),
            ("2", "N/A", "test -f f2.txt"),
        ],
        &scenario,
    );

    let (code, events) = project.run(&["--jobs", "2", "--max-cost", "0.5"]);
    assert_eq!(code, 3, "a limit pause exits 3: {events:#?}");
    let costs: Vec<f64> = events_named(&events, "session_ended")
        .iter()
        .filter_map(|e| e["snapshot"]["cost_usd"].as_f64())
        .collect();
    assert_eq!(costs.len(), 2, "{events:#?}");
    assert!(
        costs.iter().all(|cost| *cost < 0.5) && costs.iter().sum::<f64>() >= 0.5,
        "neither phase alone reached the limit, both together did: {costs:?}"
    );
    assert_eq!(
        events_named(&events, "limit_reached").len(),
        1,
        "{events:#?}"
    );
    let paused: Vec<&Value> = summary(&events)["phases"]
        .as_array()
        .expect("phases")
        .iter()
        .filter(|p| p["status"] == "paused")
        .collect();
    assert_eq!(paused.len(), 2, "both phases paused: {events:#?}");
    assert_eq!(summary(&events)["limit"], "max_cost_usd");
}

#[test]
fn the_run_stops_at_the_phase_that_failed_not_the_last_one_started() {
    let project = Project::new();
    let scenario = Scenario::new()
        .script(work("1", "f1.txt", "one", 0))
        .script(work("2", "f2.txt", "two", 0))
        .script(work("3", "f3.txt", "three", 800));
    project.plan(
        &[
            ("1", "N/A", "test -f f1.txt"),
            ("2", "Phase 1", "false"),
            ("3", "Phase 1", "test -f f3.txt"),
        ],
        &scenario,
    );
    let (code, events) = project.run(&["--jobs", "2", "--max-retries", "0"]);
    assert_eq!(code, 1, "{events:#?}");
    let status = project.status_json();
    assert_eq!(status["run"]["current_phase"], "2", "{status:#}");
    assert!(
        status["run"]["error"]
            .as_str()
            .is_some_and(|e| e.starts_with("phase 2 failed")),
        "{status:#}"
    );
    assert!(
        project.root().join("f3.txt").exists(),
        "phase 3, already running, finished and merged"
    );
}
