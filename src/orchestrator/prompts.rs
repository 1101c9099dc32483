//! The prompts sessions start with: the phase prompt, the full-retry prompt and the
//! targeted remediation prompt. Pure functions of the plan and the findings, so each
//! prompt is snapshot-tested; the checkpoint prefix of a restarted session lives in
//! [`crate::checkpoint`].

use std::fmt::Write as _;
use std::path::Path;

use crate::compliance::{Finding, GateOutcome, REQUIRED_NOTES_SECTIONS};
use crate::plan::{Phase, Plan};

/// The most gate output quoted per failed gate in a remediation prompt.
const MAX_GATE_OUTPUT_LINES: usize = 40;

/// A gate with the command that will run for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptGate {
    /// Gate name.
    pub name: String,
    /// Shell command.
    pub command: String,
}

/// The prompt for a phase's first (or fully retried) attempt.
#[must_use]
pub fn phase_prompt(plan: &Plan, phase: &Phase, gates: &[PromptGate], root: &Path) -> String {
    let id = phase.id.as_str();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "You are working on phase {id} of the plan \"{}\": {}.",
        plan.title, phase.title
    );
    out.push('\n');
    match phase.file.path() {
        Some(file) => {
            let _ = writeln!(
                out,
                "Read the phase file `{}` and carry out its tasks in order.",
                shown(file, root)
            );
        }
        None => out.push_str("Carry out the phase as the master plan describes it.\n"),
    }
    let open: Vec<_> = phase.tasks.iter().filter(|t| !t.done).collect();
    if !open.is_empty() {
        out.push_str("\nTasks:\n");
        for task in open {
            match &task.id {
                Some(task_id) => {
                    let _ = writeln!(out, "- {task_id}: {}", task.text);
                }
                None => {
                    let _ = writeln!(out, "- {}", task.text);
                }
            }
        }
    }
    if !phase.notes_in.is_empty() {
        out.push_str("\nFirst read the notes of earlier phases:\n");
        for notes in &phase.notes_in {
            let _ = writeln!(out, "- `{}`", shown(&notes.path, root));
        }
    }
    if !phase.required_agents.is_empty() {
        out.push_str(
            "\nRequired agents: invoke each of these with the Task tool (as `subagent_type`) \
             and act on what it reports; the run checks that they were invoked:\n",
        );
        for agent in &phase.required_agents {
            let _ = writeln!(out, "- {}", agent.name);
        }
    }
    if !gates.is_empty() {
        out.push_str("\nWhen you finish, these gates are run in the project root and must pass:\n");
        for gate in gates {
            let _ = writeln!(out, "- {}: `{}`", gate.name, gate.command);
        }
    }
    if let Some(notes) = &phase.notes_out {
        let _ = writeln!(
            out,
            "\nWrite your notes to `{}` with the sections {}.",
            shown(&notes.path, root),
            REQUIRED_NOTES_SECTIONS.join(", ")
        );
    }
    out.push_str(&reporting(id));
    out
}

/// How the handoff prompt begins (it identifies a handoff request in a transcript).
pub const HANDOFF_OPENING: &str = "debussy is stopping this session now";

/// The prompt a stopped session is resumed with to write its own handoff: one reply, no
/// tools, fixed sections.
#[must_use]
pub fn handoff_prompt(phase_id: &str, phase_title: &str, stop_reason: &str) -> String {
    format!(
        "{HANDOFF_OPENING} ({stop_reason}). A fresh session with an empty context will \
         continue phase {phase_id} ({phase_title}) from the files in git and from the handoff \
         you write now; it will not see this conversation. You have this one reply and no \
         tools: do not continue the work.\n\n\
         Write the handoff in Markdown with exactly these sections, short and concrete, naming \
         files and functions:\n\n\
         ## Goal\nWhat this phase must achieve, in one or two sentences.\n\n\
         ## Done\nWhat is finished (files, functions, tests).\n\n\
         ## Half done\nWhat was in progress when you were stopped: the file and function, and \
         what is still missing.\n\n\
         ## Next steps\nThe exact next steps, in order.\n\n\
         ## Decisions\nDecisions taken and the reason for each, so they are not revisited.\n\n\
         ## Traps\nWhat did not work, surprising behaviour, commands that fail and why.\n\n\
         Write nothing before the first section or after the last.\n"
    )
}

/// The prompt for a full retry: what went wrong, then the phase prompt again.
#[must_use]
pub fn full_retry_prompt(phase_prompt: &str, attempt: u32, findings: &[Finding]) -> String {
    let mut out = format!(
        "Attempt {} of this phase failed its checks, so the phase is being redone. The problems were:\n",
        attempt.saturating_sub(1)
    );
    for finding in findings {
        let _ = writeln!(out, "- [{}] {}", finding.severity, finding.problem);
    }
    out.push_str(
        "Work already in the project may be incomplete or wrong: check it against the \
         phase file rather than trusting it.\n\n---\n\n",
    );
    out.push_str(phase_prompt);
    out
}

/// The prompt for a targeted fix: each problem, what to do, and failed gates' output.
#[must_use]
pub fn remediation_prompt(
    phase: &Phase,
    findings: &[Finding],
    gates: &[GateOutcome],
    root: &Path,
) -> String {
    let id = phase.id.as_str();
    let mut out = format!(
        "Phase {id} ({}) was checked after the previous attempt and needs these fixes. \
         Fix exactly these problems; do not redo work that is already correct.\n\n",
        phase.title
    );
    for (number, finding) in findings.iter().enumerate() {
        let _ = writeln!(
            out,
            "{}. [{}] {}",
            number + 1,
            finding.severity,
            finding.problem
        );
        let _ = writeln!(out, "   Fix: {}", finding.fix);
        if let Some(gate) = gates
            .iter()
            .find(|g| !g.passed && finding.problem.contains(&format!("`{}`", g.name)))
        {
            let tail = last_lines(&gate.output_tail, MAX_GATE_OUTPUT_LINES);
            if !tail.trim().is_empty() {
                out.push_str("   Its output ended with:\n   ```\n");
                for line in tail.lines() {
                    let _ = writeln!(out, "   {line}");
                }
                out.push_str("   ```\n");
            }
        }
    }
    if let Some(file) = phase.file.path() {
        let _ = writeln!(
            out,
            "\nThe phase file `{}` has the full requirements.",
            shown(file, root)
        );
    }
    out.push_str(&reporting(id));
    out
}

/// The prompt of the session that resolves a phase's merge conflicts in its worktree:
/// merging the run's branch into the phase's left `files` in conflict (`conflicts` says
/// which kind each is; a path not among them has markers). The paths are git's, from
/// the repository's top level; `place` is the agent's working directory from there (the
/// project's place in a monorepo, empty at the top).
#[must_use]
pub fn merge_conflict_prompt(
    phase: &Phase,
    run_branch: &str,
    files: &[String],
    conflicts: &[crate::git::Conflict],
    place: &Path,
) -> String {
    let id = phase.id.as_str();
    let mut out = format!(
        "Phase {id} ({}) is done on its own branch, but other phases finished first and \
         changed the same files. Merging the run's branch `{run_branch}` into this branch is \
         in progress in your working directory, and these paths conflict",
        phase.title
    );
    if place.as_os_str().is_empty() {
        out.push_str(":\n\n");
    } else {
        let up = place
            .components()
            .map(|_| "..")
            .collect::<Vec<_>>()
            .join("/");
        let _ = write!(
            out,
            " (named from the repository's top level, `{up}` from your working directory \
             `{}`):\n\n",
            place.display()
        );
    }
    for file in files {
        match conflicts.iter().find(|c| c.path == *file) {
            Some(conflict) if !conflict.kind.settled_by_editing() => {
                let _ = writeln!(out, "- `{file}`: {}", conflict.kind);
            }
            _ => {
                let _ = writeln!(
                    out,
                    "- `{file}`: conflict markers (`<<<<<<<`, `=======`, `>>>>>>>`)"
                );
            }
        }
    }
    out.push_str(
        "\nResolve every conflict so that both sides' work is kept: the other side is the \
         finished work of other phases, this side is this phase's. In a file with markers, \
         remove every marker and leave the file as it should be after both changes. A \
         conflict without markers (a binary file, a file deleted or renamed on one side, a \
         submodule) is settled only in git's index: put the right version in place and \
         `git add` it (or `git rm` it), so that `git diff --name-only --diff-filter=U` lists \
         nothing. The phase's gates run again afterwards. Do not run `git merge --abort`, \
         `git rebase` or `git commit`: debussy concludes the merge when you report the phase \
         completed, once git holds no unmerged path.\n",
    );
    out.push_str(&reporting(id));
    out
}

fn reporting(id: &str) -> String {
    format!(
        "\nReport as you go:\n\
         - After each finished task: `debussy progress --phase {id} \"<what you did>\"`.\n\
         - When everything is done: `debussy done --phase {id} --status completed`.\n\
         - If you cannot continue without a human: `debussy done --phase {id} --status blocked --reason \"<why>\"`.\n\
         - If the phase cannot be done: `debussy done --phase {id} --status failed --reason \"<why>\"`.\n\
         Do not commit with git yourself: debussy commits your work after each phase.\n"
    )
}

/// A path as the agent (whose working directory is `root`) should see it.
fn shown(path: &Path, root: &Path) -> String {
    let relative = path.strip_prefix(root).unwrap_or(path);
    relative.display().to_string()
}

fn last_lines(text: &str, count: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(count)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compliance::Severity;

    fn demo() -> (Plan, std::path::PathBuf) {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf();
        let plan =
            crate::plan::load(&root.join("examples/demo/MASTER_PLAN.md")).expect("demo plan loads");
        (plan, root)
    }

    fn gates(phase: &Phase) -> Vec<PromptGate> {
        let defaults = crate::config::Config::default().gates;
        phase
            .gates
            .iter()
            .map(|g| PromptGate {
                name: g.name.clone(),
                command: g.resolve(&defaults).map(|c| c.command).unwrap_or_default(),
            })
            .collect()
    }

    #[test]
    fn phase_prompts_of_the_demo_plan() {
        let (plan, root) = demo();
        for phase in &plan.phases {
            insta::assert_snapshot!(
                format!("phase_prompt_{}", phase.id),
                phase_prompt(&plan, phase, &gates(phase), &root)
            );
        }
    }

    #[test]
    fn remediation_prompt_quotes_the_failed_gate() {
        let (plan, root) = demo();
        let phase = &plan.phases[0];
        let findings = vec![
            Finding {
                severity: Severity::Critical,
                problem: "gate `greeting` failed: `test -s demo/greeting.txt`".into(),
                fix: "make `test -s demo/greeting.txt` pass, then run it yourself to confirm"
                    .into(),
                gate: Some("greeting".into()),
            },
            Finding {
                severity: Severity::High,
                problem: "the notes file notes/phase-1.md was not written".into(),
                fix: "write notes/phase-1.md".into(),
                gate: None,
            },
        ];
        let gate_runs = vec![GateOutcome {
            name: "greeting".into(),
            command: "test -s demo/greeting.txt".into(),
            passed: false,
            output_tail: "line 1\nno such file\n".into(),
        }];
        insta::assert_snapshot!(remediation_prompt(phase, &findings, &gate_runs, &root));
    }

    #[test]
    fn a_merge_conflict_in_a_monorepo_says_where_the_paths_start() {
        let (plan, _) = demo();
        let phase = &plan.phases[0];
        let files = ["pkg/app/out.txt".to_owned()];
        let at_top = merge_conflict_prompt(phase, "main", &files, &[], Path::new(""));
        assert!(
            at_top.contains("these paths conflict:\n\n- `pkg/app/out.txt`"),
            "{at_top}"
        );
        let inside = merge_conflict_prompt(phase, "main", &files, &[], Path::new("pkg/app"));
        assert!(
            inside.contains(
                "these paths conflict (named from the repository's top level, `../..` from your working directory `pkg/app`):\n\n- `pkg/app/out.txt`"
            ),
            "{inside}"
        );
    }

    #[test]
    fn handoff_prompt_asks_for_every_section() {
        let prompt = handoff_prompt("2", "Cart API", "context at 81.3% of 200,000 tokens");
        assert!(prompt.starts_with(HANDOFF_OPENING));
        insta::assert_snapshot!(prompt);
    }

    #[test]
    fn full_retry_prompt_leads_with_the_problems() {
        let findings = vec![Finding {
            severity: Severity::Critical,
            problem: "gate `tests` failed: `cargo test`".into(),
            fix: String::new(),
            gate: Some("tests".into()),
        }];
        let prompt = full_retry_prompt("PHASE PROMPT", 2, &findings);
        assert!(prompt.starts_with("Attempt 1 of this phase failed"));
        assert!(prompt.contains("- [critical] gate `tests` failed"));
        assert!(prompt.ends_with("---\n\nPHASE PROMPT"));
    }
}
