//! The files a session writes for itself — its transcript, its stderr log, the agent's
//! private home — are never written through a link, and the directories on the way to
//! them below the project are debussy's own, never a link out of it.

use debussy::session::{SessionControl, SessionOutcome};

use super::common::{SimProject, log_path, run};
use crate::support::scenario::{Scenario, Turn};

/// A project whose agent says hello.
fn project() -> SimProject {
    SimProject::new(&Scenario::playing([Turn::say("hello")]))
}

#[tokio::test]
async fn a_link_on_the_way_to_the_transcript_stops_the_session_before_anything_is_written() {
    let project = project();
    let outside = tempfile::tempdir().expect("outside");
    std::fs::create_dir_all(project.root().join(".debussy/runs")).expect("mkdir");
    std::os::unix::fs::symlink(outside.path(), project.root().join(".debussy/runs/run-1"))
        .expect("link");
    let mut spec = project.spec();
    spec.files_root = Some(project.root().to_path_buf());
    let finished = run(spec, SessionControl::new()).await;
    match &finished.report.outcome {
        SessionOutcome::SpawnError(failure) => {
            assert!(failure.message.contains("symbolic link"), "{failure:?}");
        }
        other => panic!("the session ran: {other:?}"),
    }
    assert_eq!(
        std::fs::read_dir(outside.path()).expect("read").count(),
        0,
        "something was written through the link"
    );
}

#[tokio::test]
async fn a_link_in_the_transcripts_place_is_refused_and_its_target_kept() {
    let project = project();
    let outside = tempfile::tempdir().expect("outside");
    let precious = outside.path().join("precious.txt");
    std::fs::write(&precious, "keep me\n").expect("write");
    let transcript = log_path(project.root());
    std::fs::create_dir_all(transcript.parent().expect("parent")).expect("mkdir");
    std::os::unix::fs::symlink(&precious, &transcript).expect("link");
    let mut spec = project.spec();
    spec.files_root = Some(project.root().to_path_buf());
    let finished = run(spec, SessionControl::new()).await;
    assert!(
        matches!(finished.report.outcome, SessionOutcome::SpawnError(_)),
        "{:?}",
        finished.report.outcome
    );
    assert_eq!(
        std::fs::read_to_string(&precious).expect("read"),
        "keep me\n"
    );
}

#[tokio::test]
async fn with_real_directories_the_session_runs_and_its_files_are_private() {
    use std::os::unix::fs::PermissionsExt as _;
    let project = project();
    let mut spec = project.spec();
    spec.files_root = Some(project.root().to_path_buf());
    let finished = run(spec, SessionControl::new()).await;
    assert!(
        finished.report.outcome.is_success(),
        "{:?}",
        finished.report.outcome
    );
    let dir = log_path(project.root());
    let dir = dir.parent().expect("parent");
    let mode = std::fs::metadata(dir).expect("meta").permissions().mode() & 0o777;
    assert_eq!(mode, 0o700, "{}", dir.display());
}
