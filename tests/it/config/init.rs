//! `debussy init`: writing the project files, keeping existing ones, `--force`.

use std::path::Path;

use super::support::{Sandbox, source};

const FILES: &[&str] = &[
    ".debussy/config.yaml",
    "plans/example/MASTER_PLAN.md",
    "plans/example/phase-1.md",
    "plans/example/phase-2.md",
    ".claude/commands/debussy-done.md",
    ".claude/commands/debussy-progress.md",
    ".claude/commands/debussy-status.md",
];

fn repo_file(relative: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(relative))
        .expect("repository file")
}

#[test]
fn writes_config_example_plan_and_slash_commands() {
    let s = Sandbox::new();
    let output = s.debussy(&["init"]).output().expect("runs");
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8(output.stdout).expect("utf-8");
    for file in FILES {
        assert!(s.root.join(file).is_file(), "{file} written");
        assert!(
            stdout.contains(&format!("wrote {file}")),
            "{file} listed in:\n{stdout}"
        );
    }
    let read = |file: &str| std::fs::read_to_string(s.root.join(file)).expect("read");
    // Every key of the default file is there, commented out.
    let written = read(".debussy/config.yaml");
    assert!(written.contains("# timeout: 1800\n"), "{written}");
    assert!(written.contains("#   kind: claude\n"), "{written}");
    for name in ["MASTER_PLAN.md", "phase-1.md", "phase-2.md"] {
        assert_eq!(
            read(&format!("plans/example/{name}")),
            repo_file(&format!("examples/demo/{name}"))
        );
    }

    // The written project file is valid and sets nothing: every value is the default.
    let json = s.config_json(&[], &[]);
    assert_eq!(json["sources"]["timeout"], source("default", None));
    // The model is left to the agent: opus for Claude Code, its own for the others.
    assert_eq!(json["sources"]["model"], source("default", None));
    assert_eq!(json["config"]["model"], "opus");
    let codex = s.config_json(&["--agent", "codex"], &[]);
    assert_eq!(codex["config"]["model"], "");
}

#[test]
fn writes_into_a_named_directory_creating_it() {
    let s = Sandbox::new();
    let output = s.debussy(&["init", "fresh/app"]).output().expect("runs");
    assert!(output.status.success(), "{output:?}");
    for file in FILES {
        assert!(
            s.root.join("fresh/app").join(file).is_file(),
            "{file} written"
        );
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("next:\n  cd fresh/app\n  debussy doctor plans/example\n"),
        "{stdout}"
    );
}

#[test]
fn the_users_own_config_file_still_applies_after_init() {
    let s = Sandbox::new();
    let user = s.user_file("timeout: 99\nagents:\n  claude:\n    model: sonnet\n");
    let output = s.debussy(&["init"]).output().expect("runs");
    assert!(output.status.success(), "{output:?}");
    let json = s.config_json(&[], &[]);
    assert_eq!(json["config"]["timeout"], 99);
    assert_eq!(json["sources"]["timeout"], source("user_file", Some(&user)));
    assert_eq!(json["config"]["model"], "sonnet");
    // Uncommenting a line sets it for the project.
    let path = s.root.join(".debussy/config.yaml");
    let text = std::fs::read_to_string(&path).expect("read");
    std::fs::write(&path, text.replace("# timeout: 1800", "timeout: 1800")).expect("write");
    let json = s.config_json(&[], &[]);
    assert_eq!(json["config"]["timeout"], 1800);
    assert_eq!(
        json["sources"]["timeout"],
        source("project_file", Some(&path))
    );
}

#[test]
fn a_second_init_keeps_existing_files_names_them_and_writes_the_rest() {
    let s = Sandbox::new();
    s.write("plans/example/phase-1.md", "my own phase\n");
    s.write(".claude/commands/debussy-done.md", "my own command\n");
    let output = s.debussy(&["init"]).output().expect("runs");
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8(output.stdout).expect("utf-8");
    assert!(
        stdout.contains("kept plans/example/phase-1.md (exists; --force overwrites it)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("kept .claude/commands/debussy-done.md"),
        "{stdout}"
    );
    assert!(stdout.contains("wrote .debussy/config.yaml"), "{stdout}");
    assert!(s.root.join("plans/example/MASTER_PLAN.md").is_file());
    let kept = std::fs::read_to_string(s.root.join("plans/example/phase-1.md")).expect("read");
    assert_eq!(kept, "my own phase\n");
    let again = s.debussy(&["init"]).output().expect("runs");
    assert!(again.status.success(), "{again:?}");
    assert!(
        !String::from_utf8_lossy(&again.stdout).contains("wrote "),
        "a third init has nothing to write"
    );
}

#[test]
fn force_overwrites_existing_files() {
    let s = Sandbox::new();
    s.write("plans/example/phase-1.md", "my own phase\n");
    let output = s.debussy(&["init", "--force"]).output().expect("runs");
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8(output.stdout).expect("utf-8");
    assert!(
        stdout.contains("overwrote plans/example/phase-1.md"),
        "{stdout}"
    );
    assert!(stdout.contains("wrote .debussy/config.yaml"), "{stdout}");
    let phase = std::fs::read_to_string(s.root.join("plans/example/phase-1.md")).expect("read");
    assert_eq!(phase, repo_file("examples/demo/phase-1.md"));
}
