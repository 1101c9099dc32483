//! The sim agent in Codex's and the Gemini CLI's formats (the scenario's `format` key):
//! `debussy run` reads each through that agent's parser, Codex's usage through the
//! rollout file the session follows, without the real CLIs.

use super::kit::summary;
use crate::support::project::{Project, events_named};
use crate::support::scenario::{Format, Scenario, Script, Turn};

/// Phase 1 in `format` fills its context to 85 % of a 100,000-token window.
fn scenario(format: Format) -> Scenario {
    Scenario::new()
        .format(format)
        .window(100_000)
        .script(Script::phase("1").restart(0).turns([
            Turn::write(40, "a.txt", "a"),
            Turn::write(85, "a2.txt", "a2"),
            Turn::sleep(5000),
        ]))
        .script(restarted(30))
}

/// Phase 1's session after a restart: told about `a.txt`, it writes `b.txt` at `percent`.
fn restarted(percent: u32) -> Script {
    Script::phase("1")
        .restart(1)
        .expect_prompt("# Checkpoint: phase 1")
        .expect_prompt("a.txt")
        .turns([
            Turn::write(percent, "b.txt", "b"),
            Turn::notes("1"),
            Turn::done(),
        ])
}

#[test]
fn a_codex_format_session_is_measured_from_its_rollout_and_restarted_at_the_threshold() {
    let project = Project::new();
    project.plan(&[("1", "N/A", "test -f b.txt")], &scenario(Format::Codex));
    let (code, events) = project.run(&[]);
    assert_eq!(code, 0, "events: {events:#?}");
    assert_eq!(events_named(&events, "restart").len(), 1, "{events:#?}");
    let stop = events_named(&events, "session_ended")[0].clone();
    let snapshot = &stop["snapshot"];
    // The rollout's figure (85 % of the window) decided the stop. What stdout carried
    // after it (the tool call that followed the model's answer) may be estimated on top.
    assert!(
        snapshot["reported_tokens"].as_u64().unwrap_or(0) >= 85_000,
        "{stop}"
    );
    assert!(
        snapshot["estimated_tokens"].as_u64().unwrap_or(u64::MAX) < 100,
        "{stop}"
    );
    assert_eq!(snapshot["window"]["source"], "reported", "{stop}");
    assert_eq!(snapshot["window"]["tokens"], 100_000, "{stop}");
    assert!(
        snapshot["billed"]["output"].as_u64().unwrap_or(0) > 0,
        "{stop}"
    );
    assert_eq!(summary(&events)["status"], "completed");
    let rollout = find(&project.root().join(".debussy/runs"), "rollout-sim-")
        .expect("the rollout in the session's home");
    assert!(
        rollout.to_string_lossy().contains(".home/sessions/"),
        "{}",
        rollout.display()
    );
}

/// The first file under `dir` whose name starts with `prefix`.
fn find(dir: &std::path::Path, prefix: &str) -> Option<std::path::PathBuf> {
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        if path.is_dir() {
            if let Some(found) = find(&path, prefix) {
                return Some(found);
            }
        } else if entry.file_name().to_string_lossy().starts_with(prefix) {
            return Some(path);
        }
    }
    None
}

#[test]
fn a_gemini_format_session_is_estimated_and_a_large_output_crosses_the_threshold() {
    let project = Project::new();
    // Nothing the script reports counts (the Gemini CLI reports no usage until the end):
    // the 150 KB a command prints, estimated, crosses 80 % of 50,000 tokens.
    let scenario = Scenario::new()
        .format(Format::Gemini)
        .window(50_000)
        .script(Script::phase("1").restart(0).turns([
            Turn::write(99, "a.txt", "a"),
            Turn::say("listing").bash("seq 1 30000"),
            Turn::sleep(5000),
        ]))
        .script(restarted(99));
    project.write(
        ".debussy/config.yaml",
        "agents:\n  sim:\n    model_context_window: 50000\n",
    );
    project.plan(&[("1", "N/A", "test -f b.txt")], &scenario);
    let (code, events) = project.run(&[]);
    assert_eq!(code, 0, "events: {events:#?}");
    let restarts = events_named(&events, "restart");
    assert_eq!(restarts.len(), 1, "{events:#?}");
    let stop = &events_named(&events, "session_ended")[0]["snapshot"];
    assert_eq!(stop["exactness"], "estimated", "{stop}");
    assert!(
        stop["estimated_tokens"].as_u64().unwrap_or(0) >= 40_000,
        "{stop}"
    );
    // The completed session's totals, reported at its end, are billed.
    let finished = summary(&events);
    assert!(
        finished["billed"]["output"].as_u64().unwrap_or(0) > 0,
        "{finished}"
    );
}
