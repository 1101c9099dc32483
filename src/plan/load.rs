//! Reading a plan: the master plan, then every phase file its table links.
//!
//! [`load`] is the only part of the plan layer that reads plan files; it hands the text
//! to the pure parsers and assembles a [`Plan`]. A phase file that is missing or
//! unreadable does not stop loading: it is recorded in [`Phase::file`] for the audit to
//! report. Only a master plan that cannot be read at all is an error.

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};

use super::master::parse_master;
use super::model::{
    Dependency, DependencyTarget, Phase, PhaseFile, PhaseId, PhaseStatus, Plan, ProblemScope,
};
use super::phase::{PhaseDoc, RawDependency, parse_phase};

/// The file a plan directory's master plan is expected in.
pub const MASTER_FILE: &str = "MASTER_PLAN.md";

/// A master plan that could not be read.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum PlanError {
    /// The file (or, for a directory, its `MASTER_PLAN.md`) does not exist.
    #[error("master plan {} does not exist", path.display())]
    #[diagnostic(
        code(debussy::plan::not_found),
        help("give the path of the master plan, or a directory that holds a MASTER_PLAN.md")
    )]
    NotFound {
        /// The path looked for.
        path: PathBuf,
    },
    /// The file exists but cannot be read as UTF-8 text.
    #[error("failed to read master plan {}", path.display())]
    #[diagnostic(code(debussy::plan::unreadable))]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
}

/// Read a plan from its master plan file, or from a directory holding `MASTER_PLAN.md`.
///
/// # Errors
/// When the master plan does not exist or cannot be read.
pub fn load(path: &Path) -> Result<Plan, PlanError> {
    let master = if path.is_dir() {
        path.join(MASTER_FILE)
    } else {
        path.to_path_buf()
    };
    let text = read_plan_file(&master).map_err(|source| {
        if source.kind() == io::ErrorKind::NotFound {
            PlanError::NotFound {
                path: master.clone(),
            }
        } else {
            PlanError::Read {
                path: master.clone(),
                source,
            }
        }
    })?;
    Ok(assemble(&master, &text, read_plan_file))
}

/// A plan file's text: only a regular file (a FIFO or a device is refused at once, never
/// waited on), of at most [`PLAN_LIMIT`](crate::files::PLAN_LIMIT) bytes.
fn read_plan_file(path: &Path) -> io::Result<String> {
    crate::files::read_text_limited(path, crate::files::PLAN_LIMIT)
}

/// Build a plan from the master plan's text, reading phase files with `read`.
pub(crate) fn assemble(
    master: &Path,
    text: &str,
    read: impl Fn(&Path) -> io::Result<String>,
) -> Plan {
    let doc = parse_master(text, master);
    let mut problems = doc.problems;
    let mut phases = Vec::with_capacity(doc.rows.len());
    let mut raw_deps = Vec::with_capacity(doc.rows.len());
    for (index, row) in doc.rows.into_iter().enumerate() {
        let (file, parsed) = match &row.file {
            None => (PhaseFile::NoLink, PhaseDoc::default()),
            Some(path) => match read(path) {
                Ok(text) => (
                    PhaseFile::Loaded(path.clone()),
                    parse_phase(&text, path, ProblemScope::Phase(index)),
                ),
                Err(err) if err.kind() == io::ErrorKind::NotFound => {
                    (PhaseFile::NotFound(path.clone()), PhaseDoc::default())
                }
                Err(err) => (
                    PhaseFile::Unreadable {
                        path: path.clone(),
                        reason: err.to_string(),
                    },
                    PhaseDoc::default(),
                ),
            },
        };
        let title = Some(row.title)
            .filter(|t| !t.is_empty())
            .or(parsed.title)
            .unwrap_or_else(|| format!("Phase {}", row.id));
        problems.extend(parsed.problems);
        raw_deps.push(parsed.depends_on);
        phases.push(Phase {
            id: row.id,
            title,
            status: parsed.status.or(row.status).unwrap_or(PhaseStatus::Pending),
            row: super::model::Location::line(master, row.line),
            file,
            depends_on: Vec::new(),
            gates: parsed.gates,
            tasks: parsed.tasks,
            required_agents: parsed.required_agents,
            notes_in: parsed.notes_in,
            notes_out: parsed.notes_out,
            steps: parsed.steps,
            agent: parsed.agent,
            model: parsed.model,
        });
    }
    let by_file: HashMap<PathBuf, PhaseId> = phases
        .iter()
        .filter_map(|phase| Some((phase.file.path()?.to_path_buf(), phase.id.clone())))
        .collect();
    for (phase, raw) in phases.iter_mut().zip(raw_deps) {
        phase.depends_on = resolve_dependencies(&phase.id, raw, &by_file);
    }
    let title = doc.title.unwrap_or_else(|| {
        master.file_stem().map_or_else(
            || master.display().to_string(),
            |s| s.to_string_lossy().into_owned(),
        )
    });
    Plan {
        title,
        master: master.to_path_buf(),
        phases_table: doc
            .table_line
            .map(|line| super::model::Location::line(master, line)),
        phases,
        problems,
    }
}

/// Links to phase files become ids; a phase naming itself in `## Dependencies` prose is
/// dropped; duplicates keep their first mention.
fn resolve_dependencies(
    own: &PhaseId,
    raw: Vec<RawDependency>,
    by_file: &HashMap<PathBuf, PhaseId>,
) -> Vec<Dependency> {
    let mut out: Vec<Dependency> = Vec::new();
    for dep in raw {
        let target = match dep.target {
            DependencyTarget::File(path) => match by_file.get(&path) {
                Some(id) => DependencyTarget::Id(id.clone()),
                None => DependencyTarget::File(path),
            },
            id @ DependencyTarget::Id(_) => id,
        };
        if dep.from_section && target == DependencyTarget::Id(own.clone()) {
            continue;
        }
        if out.iter().any(|d| d.target == target) {
            continue;
        }
        out.push(Dependency {
            target,
            location: dep.location,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(entries: &[(&str, &str)]) -> impl Fn(&Path) -> io::Result<String> + use<> {
        let map: HashMap<PathBuf, String> = entries
            .iter()
            .map(|(p, t)| (PathBuf::from(p), (*t).to_owned()))
            .collect();
        move |path: &Path| {
            map.get(path)
                .cloned()
                .ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))
        }
    }

    const MASTER: &str = "# Demo - Master Plan\n\n| Phase | Title | Status |\n|---|---|---|\n\
        | 1 | [One](p1.md) | Completed |\n| 2 | [Two](p2.md) | Pending |\n| 3 | [Three](p3.md) | |\n";

    #[test]
    fn phases_merge_the_table_and_their_files() {
        let plan = assemble(
            Path::new("d/MASTER_PLAN.md"),
            MASTER,
            files(&[
                ("d/p1.md", "# X Phase 1: First\n"),
                (
                    "d/p2.md",
                    "# Phase 2: Second\n\n**Status:** Blocked\n**Depends On:** [the first](p1.md), Phase 1\n\n\
                     ## Dependencies\n- Previous phase: Phase 2 itself, Phase 7\n",
                ),
            ]),
        );
        assert_eq!(plan.title, "Demo");
        assert_eq!(plan.phases_table.as_ref().and_then(|l| l.line), Some(3));
        assert_eq!(plan.phases.len(), 3);
        let one = &plan.phases[0];
        assert_eq!(
            (one.title.as_str(), one.status),
            ("One", PhaseStatus::Completed)
        );
        assert_eq!(one.file, PhaseFile::Loaded(PathBuf::from("d/p1.md")));
        assert_eq!(one.row.to_string(), "d/MASTER_PLAN.md:5");
        let two = &plan.phases[1];
        assert_eq!(
            two.status,
            PhaseStatus::Blocked,
            "the phase file's status wins"
        );
        let deps: Vec<String> = two
            .depends_on
            .iter()
            .map(|d| d.target.to_string())
            .collect();
        assert_eq!(deps, ["phase 1", "phase 7"]);
        let three = &plan.phases[2];
        assert_eq!(three.file, PhaseFile::NotFound(PathBuf::from("d/p3.md")));
        assert_eq!(three.status, PhaseStatus::Pending);
        assert!(plan.problems.is_empty());
    }

    #[test]
    fn unreadable_phase_files_are_recorded() {
        let plan = assemble(Path::new("MASTER_PLAN.md"), MASTER, |path: &Path| {
            if path == Path::new("p1.md") {
                Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "stream did not contain valid UTF-8",
                ))
            } else {
                Ok(String::new())
            }
        });
        assert!(matches!(
            &plan.phases[0].file,
            PhaseFile::Unreadable { reason, .. } if reason.contains("UTF-8")
        ));
        assert!(plan.phases[1].file.is_loaded());
    }

    #[test]
    fn a_self_dependency_in_the_field_is_kept() {
        let plan = assemble(
            Path::new("MASTER_PLAN.md"),
            "| Phase | Title |\n|---|---|\n| 1 | [One](p1.md) |\n",
            files(&[("p1.md", "**Depends On:** [Phase 1](p1.md)\n")]),
        );
        let deps: Vec<String> = plan.phases[0]
            .depends_on
            .iter()
            .map(|d| d.target.to_string())
            .collect();
        assert_eq!(deps, ["phase 1"]);
    }

    #[test]
    fn titles_fall_back_to_the_phase_file_then_the_id() {
        let plan = assemble(
            Path::new("m.md"),
            "| # | Link |\n|---|---|\n| 1 | [](a.md) |\n| 2 | [](b.md) |\n",
            files(&[("a.md", "# Feature Phase 1: From File\n")]),
        );
        assert_eq!(plan.title, "m");
        assert_eq!(plan.phases[0].title, "From File");
        assert_eq!(plan.phases[1].title, "Phase 2");
    }

    #[test]
    fn loading_from_disk_and_directories() {
        let temp = tempfile::tempdir().expect("tempdir");
        let dir = temp.path();
        std::fs::write(dir.join(MASTER_FILE), MASTER).expect("write");
        std::fs::write(dir.join("p1.md"), "# Phase 1: A\n").expect("write");
        let plan = load(dir).expect("loads from the directory");
        assert_eq!(plan.master, dir.join(MASTER_FILE));
        assert!(plan.phases[0].file.is_loaded());
        assert!(matches!(
            load(&dir.join("nope.md")),
            Err(PlanError::NotFound { path }) if path == dir.join("nope.md")
        ));
        let empty = dir.join("empty");
        std::fs::create_dir(&empty).expect("mkdir");
        assert!(
            matches!(load(&empty), Err(PlanError::NotFound { path }) if path == empty.join(MASTER_FILE))
        );
        std::fs::write(dir.join("bad.md"), [0xff, 0xfe, 0x00]).expect("write");
        assert!(matches!(
            load(&dir.join("bad.md")),
            Err(PlanError::Read { .. })
        ));
    }
}
