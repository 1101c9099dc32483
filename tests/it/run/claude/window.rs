//! The window from the first request, with the real Claude Code CLI: a fresh project
//! running `opus` measures its first session against the model's real window.

use super::kit::Project;
use crate::support::model_server::{ModelServer, Turn, Usage};
use crate::support::project::events_named as named;

#[test]
#[ignore = "needs the pinned Claude Code CLI (scripts/test-tools)"]
fn a_fresh_project_with_opus_and_300k_of_usage_does_not_stop() {
    let project = Project::planned(&[("1", "test -f a.txt")]);
    let server = ModelServer::serving([
        // 300,000 tokens: 150 % of the 200,000 default, 30 % of opus's 1,000,000.
        project.write_turn_using("a.txt", "a\n", Usage::new(10, 299_000, 990, 50)),
        Turn::reply("Done.").usage(Usage::new(10, 299_500, 990, 20)),
    ]);

    let (code, events) = project.run(&server, &["--model", "opus"]);
    assert_eq!(code, 0, "{events:#?}");
    assert!(named(&events, "restart").is_empty(), "{events:#?}");
    let started = named(&events, "session_started")[0];
    assert_eq!(started["model"], "opus");
    // The gauge measured against the million from the first usage on.
    let contexts = named(&events, "context");
    let first_usage = contexts
        .iter()
        .find(|event| event["snapshot"]["tokens"].as_u64() > Some(100_000))
        .expect("a figure with the usage");
    assert_eq!(first_usage["snapshot"]["window"]["tokens"], 1_000_000);
    let ended = named(&events, "session_ended")[0];
    assert_eq!(
        ended["snapshot"]["window"]["tokens"], 1_000_000,
        "{ended:#}"
    );
    let percent = ended["snapshot"]["percent"].as_f64().expect("percent");
    assert!((percent - 30.05).abs() < 0.1, "{percent}");

    // `status` and `show` say the same figure.
    let status = project.status(&server);
    let session = &status["executions"][0]["sessions"][0];
    assert_eq!(session["context_window"], 1_000_000, "{session:#}");
    assert!((session["context_percent"].as_f64().expect("percent") - percent).abs() < 1e-9);
    let show = project.command(&server, &["show"]).output().expect("show");
    let text = String::from_utf8_lossy(&show.stdout);
    assert!(
        text.contains("at 30.1% of 1,000,000 tokens, window: "),
        "{text}"
    );
}
