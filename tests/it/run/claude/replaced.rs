//! debussy's executable replaced on disk while a run is live, as an upgrade or a rebuild
//! replaces it: the sessions started afterwards still reach debussy through their hooks.

use std::path::Path;
use std::time::Duration;

use super::kit::{Project, assert_compaction_blocked, usage};
use crate::support::claude::Login;
use crate::support::model_server::{ModelServer, Turn, Usage};
use crate::support::project::run_json;

/// Put a fresh copy of the binary under test at `path` the way `cargo install` and
/// `cargo build` do: written beside it, then renamed over it, so the running process's
/// executable is a deleted file.
fn replace_binary(path: &Path) {
    let fresh = path.with_extension("new");
    std::fs::copy(crate::support::DEBUSSY, &fresh).expect("copy");
    std::fs::rename(&fresh, path).expect("rename over");
}

#[test]
#[ignore = "needs the pinned Claude Code CLI (scripts/test-tools)"]
fn a_binary_replaced_mid_run_still_blocks_the_next_sessions_compaction() {
    let project = Project::new();
    project.plan_knowing_the_window(&[("1", "test -f a.txt"), ("2", "test -f b.txt")]);
    let bin = tempfile::tempdir().expect("tempdir");
    let program = bin.path().join("debussy");
    std::fs::copy(crate::support::DEBUSSY, &program).expect("copy");
    let server = ModelServer::serving([
        project.write_turn("a.txt", "a\n", 10).hold(),
        Turn::reply("Phase 1 is done.").usage(usage(11)),
        // Phase 2 starts after the replacement. One turn takes its context to 90 %: under
        // the 97 % threshold, past Claude Code's own compaction point, which the session's
        // `PreCompact` hook must block.
        project.write_turn_using("b.txt", "b\n", Usage::new(10, 179_000, 1_000, 50)),
        Turn::reply("Phase 2 is done.").usage(usage(21)),
    ]);

    let (code, events) = std::thread::scope(|scope| {
        scope.spawn(|| {
            server
                .wait_for_main_requests(1, Duration::from_secs(90))
                .expect("phase 1's first request");
            replace_binary(&program);
            server.release();
        });
        let args = [
            "run",
            "plan/MASTER_PLAN.md",
            "--output-format",
            "json",
            "--context-threshold",
            "97",
        ];
        run_json(
            project.command_of(&program, &server, &args, Login::ApiKey),
            Duration::from_secs(180),
        )
    });
    assert_eq!(code, 0, "{events:#?}");
    assert_compaction_blocked(&events, &server);
    assert!(project.root().join("b.txt").exists());
}
