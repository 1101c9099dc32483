//! Tests of phase file parsing on the sample phases in `tests/fixtures/plans/`.

use std::path::PathBuf;

use super::*;

fn parse(text: &str) -> PhaseDoc {
    parse_phase(
        text,
        Path::new("plans/x/phase-2.md"),
        ProblemScope::Phase(1),
    )
}

fn deps(doc: &PhaseDoc) -> Vec<(String, bool)> {
    doc.depends_on
        .iter()
        .map(|d| (d.target.to_string(), d.from_section))
        .collect()
}

#[test]
fn titles() {
    assert_eq!(phase_title("Test Feature Phase 1: Phase One"), "Phase One");
    assert_eq!(phase_title("Phase 3.1: Polish: Final"), "Polish: Final");
    assert_eq!(phase_title("Sprint 1: Foundation"), "Sprint 1: Foundation");
    assert_eq!(phase_title("Phases: overview"), "Phases: overview");
    assert_eq!(
        parse("# Hello Phase 2: Page\n").title.as_deref(),
        Some("Page")
    );
}

#[test]
fn status_and_depends_on_fields() {
    let doc = parse(
        "# X Phase 2: Y\n\n**Status:** In Progress\n**Master Plan:** [m](m.md)\n\
         **Depends On:** [Phase 1: Data](phase-1.md), [Setup](../setup.md)\n",
    );
    assert_eq!(doc.status, Some(PhaseStatus::InProgress));
    assert_eq!(
        deps(&doc),
        [
            ("phase 1".to_owned(), false),
            ("plans/setup.md".to_owned(), false)
        ]
    );
    assert_eq!(doc.depends_on[0].location.line, Some(5));
    assert!(doc.problems.is_empty());
}

#[test]
fn header_fields_may_be_list_items_but_not_later_tasks() {
    let doc = parse(
        "# Phase 2: Y\n\n- **Status:** Done\n- **Depends On:** Phase 1\n\n## Tasks\n- [ ] Status: update the page\n",
    );
    assert_eq!(doc.status, Some(PhaseStatus::Completed));
    assert_eq!(deps(&doc), [("phase 1".to_owned(), false)]);
    let doc = parse("# Phase 2: Y\n\n## Tasks\n- [ ] Status: update the page\n");
    assert_eq!(doc.status, None);
    assert!(doc.problems.is_empty());
}

#[test]
fn depends_on_none_forms_and_bare_ids() {
    for none in [
        "N/A",
        "N/A (initial phase)",
        "None",
        "None (foundational phase)",
        "-",
        "",
    ] {
        let doc = parse(&format!("**Depends On:** {none}\n"));
        assert!(
            doc.depends_on.is_empty() && doc.problems.is_empty(),
            "{none}: {doc:?}"
        );
    }
    let doc = parse("**Depends On:** 1, 3\n");
    assert_eq!(
        deps(&doc),
        [("phase 1".to_owned(), false), ("phase 3".to_owned(), false)]
    );
    let doc = parse("**Depends On:** Phases 1-3\n");
    assert_eq!(doc.depends_on.len(), 3);
}

#[test]
fn unreadable_fields_are_problems() {
    let doc = parse("**Status:** Someday\n\n**Depends On:** the database work\n");
    assert_eq!(doc.status, None);
    let messages: Vec<&str> = doc.problems.iter().map(|p| p.message.as_str()).collect();
    assert_eq!(
        messages,
        [
            "unknown status `Someday`",
            "cannot tell which phases `Depends On: the database work` means"
        ]
    );
    assert_eq!(doc.problems[1].location.line, Some(3));
    assert!(
        doc.problems
            .iter()
            .all(|p| p.scope == ProblemScope::Phase(1))
    );
}

#[test]
fn dependencies_section_reads_phase_items_only() {
    let doc = parse(
        "## Dependencies\n- Previous phase: Phase 1 (models)\n- Previous phases: Phases 3-4\n\
         - External: Phase 9 of the vendor rollout\n- [Phase 5](phase-5.md) must be done\n\n## Risks\n- Phase 6\n",
    );
    assert_eq!(
        deps(&doc),
        [
            ("phase 1".to_owned(), true),
            ("phase 3".to_owned(), true),
            ("phase 4".to_owned(), true),
            ("phase 5".to_owned(), true)
        ]
    );
}

#[test]
fn tasks_with_ids_groups_and_state() {
    let doc = parse(
        "## Tasks\n\n### 1. Setup\n- [ ] 1.1: Create `src/`\n- [x] 1.2 Add config\n\n### 2. More\n\
         - [ ] Untagged task\n  - [ ] 2.1) nested\n- not a checkbox\n\n## Notes\n- [ ] 9.9: elsewhere\n",
    );
    let tasks: Vec<_> = doc
        .tasks
        .iter()
        .map(|t| {
            (
                t.id.as_deref(),
                t.text.as_str(),
                t.done,
                t.group.as_deref(),
                t.location.line,
            )
        })
        .collect();
    assert_eq!(
        tasks,
        [
            (
                Some("1.1"),
                "Create `src/`",
                false,
                Some("1. Setup"),
                Some(4)
            ),
            (Some("1.2"), "Add config", true, Some("1. Setup"), Some(5)),
            (None, "Untagged task", false, Some("2. More"), Some(8)),
            (Some("2.1"), "nested", false, Some("2. More"), Some(9)),
        ]
    );
    assert_eq!(split_task_id("3 apples"), (None, "3 apples".to_owned()));
    assert_eq!(
        split_task_id("3: apples"),
        (Some("3".to_owned()), "apples".to_owned())
    );
}

#[test]
fn notes_in_and_out_resolve_against_the_file() {
    let doc = parse(
        "## Process Wrapper (MANDATORY)\n\
         - [ ] Read previous notes: `notes/a.md`, `../b.md`\n\
         - [ ] **[IMPLEMENTATION]**\n\
         - [ ] Write `notes/NOTES_2.md` (REQUIRED)\n\
         - [ ] Write notes to: `notes/other.md`\n",
    );
    let ins: Vec<&Path> = doc.notes_in.iter().map(|n| n.path.as_path()).collect();
    assert_eq!(
        ins,
        [Path::new("plans/x/notes/a.md"), Path::new("plans/b.md")]
    );
    assert_eq!(
        doc.notes_out
            .as_ref()
            .map(|n| (n.path.clone(), n.location.line)),
        Some((PathBuf::from("plans/x/notes/NOTES_2.md"), Some(4)))
    );
    let steps: Vec<&str> = doc.steps.iter().map(|s| s.text.as_str()).collect();
    assert_eq!(
        steps,
        [
            "Read previous notes: `notes/a.md`, `../b.md`",
            "[IMPLEMENTATION]",
            "Write `notes/NOTES_2.md` (REQUIRED)",
            "Write notes to: `notes/other.md`"
        ]
    );
}

#[test]
fn notes_marked_not_applicable_are_not_inputs() {
    let doc = parse(
        "- [ ] Read previous notes: `notes/NOTES_0.md` (N/A - initial phase)\n\
         - [ ] Read previous notes: None (first phase)\n- [ ] Write notes to: N/A\n",
    );
    assert!(doc.notes_in.is_empty());
    assert!(doc.notes_out.is_none());
}

#[test]
fn sample_phase_fixture() {
    let text = include_str!("../../tests/fixtures/plans/sample_phase.md");
    let doc = parse_phase(text, Path::new("f/sample_phase.md"), ProblemScope::Phase(0));
    assert!(doc.problems.is_empty(), "{:?}", doc.problems);
    assert_eq!(doc.title.as_deref(), Some("Setup Infrastructure"));
    assert_eq!(doc.status, Some(PhaseStatus::Pending));
    assert!(doc.depends_on.is_empty());
    let gates: Vec<(&str, &str, Option<&str>)> = doc
        .gates
        .iter()
        .map(|g| (g.name.as_str(), g.criterion.as_str(), g.command.as_deref()))
        .collect();
    assert_eq!(
        gates,
        [
            ("ruff", "0 errors", None),
            ("pytest", "all tests passing", None)
        ]
    );
    let tasks: Vec<&str> = doc.tasks.iter().filter_map(|t| t.id.as_deref()).collect();
    assert_eq!(tasks, ["1.1", "1.2", "2.1", "2.2"]);
    let agents: Vec<(&str, Option<usize>)> = doc
        .required_agents
        .iter()
        .map(|a| (a.name.as_str(), a.location.line))
        .collect();
    assert_eq!(
        agents,
        [("doc-sync-manager", Some(11)), ("task-validator", Some(18))]
    );
    assert!(doc.notes_in.is_empty(), "`N/A (first phase)` names no file");
    assert_eq!(
        doc.notes_out.map(|n| n.path),
        Some(PathBuf::from("f/notes/NOTES_test_phase_1.md"))
    );
    assert_eq!(doc.steps.len(), 7);
    assert_eq!(doc.steps[0].done, Some(false));
}

#[test]
fn sample_phase2_fixture() {
    let text = include_str!("../../tests/fixtures/plans/sample_phase2.md");
    let doc = parse_phase(text, Path::new("sample_phase2.md"), ProblemScope::Phase(1));
    assert!(doc.problems.is_empty(), "{:?}", doc.problems);
    assert_eq!(doc.title.as_deref(), Some("Add Logic"));
    assert_eq!(deps(&doc), [("phase 1".to_owned(), false)]);
    let names: Vec<&str> = doc.gates.iter().map(|g| g.name.as_str()).collect();
    assert_eq!(names, ["ruff", "pytest", "coverage"]);
    let done: Vec<(Option<&str>, bool)> = doc
        .tasks
        .iter()
        .map(|t| (t.id.as_deref(), t.done))
        .collect();
    assert_eq!(done, [(Some("1.1"), false), (Some("1.2"), true)]);
    let ins: Vec<&Path> = doc.notes_in.iter().map(|n| n.path.as_path()).collect();
    assert_eq!(ins, [Path::new("notes/NOTES_test_phase_1.md")]);
    assert_eq!(doc.required_agents.len(), 2);
}

#[test]
fn a_bare_phase_file_parses_to_nothing() {
    let doc = parse("Not a valid phase file");
    assert_eq!(doc, PhaseDoc::default());
}

#[test]
fn agent_and_model_fields_name_who_runs_the_phase() {
    let doc = parse(
        "# X Phase 2: Y\n\n**Status:** Pending\n**Agent:** codex\n**Model:** `gpt-5.5`\n\n\
         ## Tasks\n- [ ] 2.1: Agent: claude is not a field down here\n",
    );
    assert_eq!(doc.agent, Some(AgentKind::Codex));
    assert_eq!(doc.model.as_deref(), Some("gpt-5.5"));
    assert!(doc.problems.is_empty(), "{:?}", doc.problems);
    // A required-subagent marker is not the agent field.
    let marker = parse("# X Phase 2: Y\n\nAGENT:code-reviewer - REQUIRED\n");
    assert_eq!(marker.agent, None);
    assert!(marker.problems.is_empty(), "{:?}", marker.problems);
    let unknown = parse("# X Phase 2: Y\n\n**Agent:** gemeni\n");
    assert_eq!(unknown.agent, None);
    let problem = &unknown.problems[0];
    assert_eq!(problem.message, "unknown agent `gemeni`");
    assert_eq!(problem.hint, "use one of: claude, codex, gemini, sim");
    assert_eq!(problem.location.line, Some(3));
}
