//! File watching and the `--build` step (issue 6, "File watching and build").
//!
//! A debounced watcher (notify-debouncer-full) on the `--watch` paths reports bursts of
//! changes to the dispatcher. Editors that save by writing a temporary file and renaming
//! it over the original produce create/rename events, which count like writes; reads
//! (access events) do not. Changes inside `.git`, `target`, `node_modules` and
//! `__pycache__` are ignored. On a change the dispatcher runs `--build` (through `sh -c`,
//! output to stderr) and restarts only if it succeeds; a change that arrives during a
//! build or restart schedules exactly one more round.

use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use notify_debouncer_full::notify::{EventKind, RecursiveMode};
use notify_debouncer_full::{DebounceEventResult, Debouncer, RecommendedCache, new_debouncer};
use serde_json::json;
use tokio::sync::mpsc;

use super::audit::AuditEvent;
use super::changed_files::ChangedFiles;
use super::coordinator::Source;
use super::state::{Control, Front};
use crate::mcp::backend::Backend;
use crate::mcp::say;
use crate::process::{ProcessCommand, ProcessEvent};

/// Directory names whose changes never trigger a restart.
const IGNORED_DIRS: [&str; 4] = [".git", "target", "node_modules", "__pycache__"];

/// A running watcher; dropping it stops watching.
pub(crate) type Watcher =
    Debouncer<notify_debouncer_full::notify::RecommendedWatcher, RecommendedCache>;

/// Watch `paths` (recursively) and send [`Control::FilesChanged`] after each burst of
/// changes followed by `debounce` of quiet.
pub(crate) fn spawn_watcher(
    paths: &[PathBuf],
    debounce: Duration,
    control: mpsc::UnboundedSender<Control>,
) -> Result<Watcher, String> {
    let mut debouncer =
        new_debouncer(
            debounce,
            None,
            move |result: DebounceEventResult| match result {
                Ok(events) => {
                    let mut changed: Vec<String> = events
                        .iter()
                        .filter(|event| counts(&event.kind))
                        .flat_map(|event| event.paths.iter())
                        .filter(|path| !is_ignored(path))
                        .map(|path| path.display().to_string())
                        .collect();
                    changed.sort();
                    changed.dedup();
                    if !changed.is_empty() {
                        let _ = control.send(Control::FilesChanged(changed));
                    }
                }
                Err(errors) => {
                    for err in errors {
                        say(&format!("file watching: {err}"));
                    }
                }
            },
        )
        .map_err(|err| format!("cannot start watching files: {err}"))?;
    for path in paths {
        debouncer
            .watch(path, RecursiveMode::Recursive)
            .map_err(|err| format!("cannot watch {}: {err}", path.display()))?;
    }
    Ok(debouncer)
}

/// Whether an event is a change (not a mere read or open).
fn counts(kind: &EventKind) -> bool {
    matches!(
        kind,
        EventKind::Create(_) | EventKind::Modify(_) | EventKind::Remove(_) | EventKind::Any
    ) || matches!(
        kind,
        EventKind::Access(notify_debouncer_full::notify::event::AccessKind::Close(
            notify_debouncer_full::notify::event::AccessMode::Write
        ))
    )
}

/// Whether a path lies inside a directory that is never watched.
pub(crate) fn is_ignored(path: &Path) -> bool {
    path.components().any(|component| match component {
        Component::Normal(name) => IGNORED_DIRS.iter().any(|ignored| name == *ignored),
        _ => false,
    })
}

impl<B: Backend> Front<B> {
    /// Watched files changed: build (if asked) and restart, or note them for the round
    /// after the build or restart under way.
    pub(crate) fn on_files_changed(&mut self, changed: ChangedFiles) {
        if self.shutdown.is_some() {
            return;
        }
        let summary = changed.summary();
        if self.restarts.build_running || self.restarts.restart.is_some() {
            let under_way = if self.restarts.build_running {
                "build"
            } else {
                "restart"
            };
            say(&format!(
                "files changed ({summary}) during the {under_way}: one more round follows it"
            ));
            self.restarts.pending_changes.merge(changed);
            return;
        }
        match self.opts.build.clone() {
            Some(build) => {
                say(&format!(
                    "files changed ({summary}): running the build: {build}"
                ));
                self.restarts.build_running = true;
                self.restarts.building_changes = changed;
                spawn_build(build, self.control_tx.clone());
            }
            None => self.request_restart(&format!("files changed: {summary}"), Source::Watch, None),
        }
    }

    /// The build finished: restart if it succeeded, keep the old child if not.
    pub(crate) fn on_build_done(&mut self, ok: bool, detail: &str) {
        self.restarts.build_running = false;
        let built = std::mem::take(&mut self.restarts.building_changes);
        let summary = built.summary();
        if !ok {
            say(&format!(
                "build failed ({detail}): keeping the running server"
            ));
            self.record(
                AuditEvent::BuildFailed,
                json!({"detail": detail, "changes": summary}),
            );
        } else if self.restarts.restart.is_some() {
            // A restart began during the build (a tool call, an exit 42): it may start
            // the code from before the build, so the built changes make one more round.
            say(&format!(
                "build succeeded ({summary}) while a restart is under way: one more round follows it"
            ));
            self.restarts.pending_changes.merge(built);
        } else {
            say("build succeeded: restarting the server");
            self.request_restart(
                &format!("files changed ({summary}) and the build succeeded"),
                Source::Watch,
                None,
            );
        }
        self.after_settled();
    }
}

/// Run the build through `sh -c` in its own process group, its output on stderr, and
/// report the result to the dispatcher.
fn spawn_build(command: String, control: mpsc::UnboundedSender<Control>) {
    tokio::spawn(async move {
        let spawned = ProcessCommand::new("sh")
            .arg("-c")
            .arg(&command)
            .inherit_stderr()
            .spawn();
        let (ok, detail) = match spawned {
            Err(err) => (false, format!("cannot run the build: {err}")),
            Ok(mut child) => {
                let mut exit = None;
                while let Some(event) = child.next_event().await {
                    match event {
                        ProcessEvent::Line { line, .. } => {
                            eprintln!("{}", String::from_utf8_lossy(&line));
                        }
                        ProcessEvent::Exited(report) => exit = Some(report),
                        ProcessEvent::LineTooLong { .. } | ProcessEvent::Leaked(_) => {}
                    }
                }
                let report = match exit {
                    Some(report) => report,
                    None => child.wait().await,
                };
                (report.status.is_success(), report.status.to_string())
            }
        };
        let _ = control.send(Control::BuildDone { ok, detail });
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_and_vcs_directories_are_ignored() {
        assert!(is_ignored(Path::new("/p/.git/index")));
        assert!(is_ignored(Path::new("/p/target/debug/x")));
        assert!(is_ignored(Path::new("web/node_modules/a/b.js")));
        assert!(is_ignored(Path::new("src/__pycache__/m.pyc")));
        assert!(!is_ignored(Path::new("/p/src/server.py")));
        assert!(!is_ignored(Path::new("/p/targets.txt")));
    }
}
