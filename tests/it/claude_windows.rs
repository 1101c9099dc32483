//! debussy's table of Claude Code's context windows (`agent::known_windows::CLAUDE`)
//! against the pinned CLI: each model or alias in it, run with `--model`, reports the
//! window the table says in its `result` (`modelUsage[model].contextWindow`). A new pin
//! that maps an alias to another model, or changes a model's window, fails here rather
//! than in a user's run measured against the wrong window.

use debussy::agent::known_windows::{CLAUDE, Match};
use futures_util::future::join_all;

use crate::support::claude::{self, RUN_TIMEOUT, Sandbox};
use crate::support::model_server::{ModelServer, Scenario};

/// The model `--model` ran and the window Claude Code reported for it.
async fn reported(sandbox: &Sandbox, server: &ModelServer, model: &str) -> (String, u64) {
    let cli = claude::require();
    let command = sandbox.command(&cli, server, model);
    let transcript = claude::run(command, "Say hello.", RUN_TIMEOUT)
        .await
        .unwrap_or_else(|error| panic!("--model {model}: {error}"));
    let ran = transcript
        .system("init")
        .first()
        .and_then(|init| init["model"].as_str().map(str::to_owned))
        .unwrap_or_else(|| panic!("--model {model}: no init line: {:#?}", transcript.lines));
    let result = transcript
        .result()
        .unwrap_or_else(|| panic!("--model {model}: no result: {}", transcript.stderr));
    let window = result["modelUsage"]
        .as_object()
        .and_then(|usage| usage.values().find_map(|m| m["contextWindow"].as_u64()))
        .unwrap_or_else(|| panic!("--model {model}: no contextWindow: {result}"));
    (ran, window)
}

#[tokio::test]
#[ignore = "needs the pinned Claude Code CLI (scripts/test-tools)"]
async fn every_claude_window_in_the_table_is_the_pinned_clis() {
    let server = ModelServer::start(Scenario::new()).expect("model server");
    let sandbox = Sandbox::new().expect("sandbox");
    let models: Vec<_> = CLAUDE
        .iter()
        .filter(|entry| entry.matching == Match::Exact)
        .collect();
    // Two at a time: each start of the CLI is most of a core.
    let mut wrong = Vec::new();
    for pair in models.chunks(2) {
        let runs = pair
            .iter()
            .map(|entry| reported(&sandbox, &server, entry.model));
        for (entry, (ran, window)) in pair.iter().zip(join_all(runs).await) {
            if window != entry.tokens {
                wrong.push(format!(
                    "{} (runs {ran}): table {}, Claude Code {window}",
                    entry.model, entry.tokens
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "windows that differ:\n{}",
        wrong.join("\n")
    );
}
