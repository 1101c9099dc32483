//! Shell quoting and how an agent command reads as a shell line.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::*;
use crate::config::AgentKind;

#[test]
fn shell_quote_leaves_plain_words_and_quotes_the_rest() {
    assert_eq!(shell_quote("stream-json"), "stream-json");
    assert_eq!(shell_quote("/usr/bin/claude"), "/usr/bin/claude");
    assert_eq!(shell_quote("a b"), "'a b'");
    assert_eq!(shell_quote("it's"), r"'it'\''s'");
    assert_eq!(shell_quote(""), "''");
}

#[test]
fn command_displays_as_a_shell_line() {
    let command = AgentCommand {
        program: PathBuf::from("/bin/claude"),
        args: vec!["-p".into(), "--model".into(), "opus 4".into()],
        env: BTreeMap::new(),
        stdin: Some("prompt".into()),
        home: None,
    };
    assert_eq!(command.to_string(), "/bin/claude -p --model 'opus 4'");
}

#[test]
fn backend_follows_the_settings_kind() {
    let dir = tempfile::tempdir().expect("tempdir");
    let plan = dir.path().join("MASTER_PLAN.md");
    std::fs::write(dir.path().join("sim-scenario.yaml"), "scripts: []\n").expect("write");
    let context = BackendContext {
        project_root: dir.path(),
        plan_path: Some(&plan),
    };
    let config = crate::config::Config::default();
    let of = |kind| backend(&crate::session::backend_settings(&config, kind), context);
    let claude = of(AgentKind::Claude).expect("claude");
    assert_eq!(claude.name(), "claude");
    assert_eq!(claude.usage_reporting(), UsageReporting::PerMessage);
    let codex = of(AgentKind::Codex).expect("codex");
    assert_eq!(codex.name(), "codex");
    assert_eq!(codex.usage_reporting(), UsageReporting::PerRequest);
    let sim = of(AgentKind::Sim).expect("sim");
    assert_eq!(sim.name(), "sim");
}
