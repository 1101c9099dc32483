//! The state directory: a default name per command, and one live supervisor per
//! directory.

use serde_json::json;

use super::support::{Supervisor, WAIT, events_of, read_audit, test_server};

/// Two servers run by the same program (`python3 a.py`, `python3 b.py`) get state
/// directories of their own by default, and `.debussy/mcp/` is kept out of git even
/// where `debussy init` never ran.
#[test]
fn servers_of_the_same_program_get_their_own_state_directories() {
    let project = tempfile::tempdir().expect("tempdir");
    let server = test_server().display().to_string();
    let counter = project.path().join("starts");
    let first = vec![server.clone()];
    let second = vec![
        server,
        "--counter-file".to_owned(),
        counter.display().to_string(),
    ];
    let mut a = Supervisor::start_in(project.path(), &[], &first);
    let mut b = Supervisor::start_in(project.path(), &[], &second);
    a.initialize();
    b.initialize();
    assert_eq!(a.whoami().1, 1);
    assert_eq!(b.whoami().1, 1);
    let a_dir = a.tool_json("server_status", json!({}))["state_dir"].clone();
    let b_dir = b.tool_json("server_status", json!({}))["state_dir"].clone();
    assert_ne!(a_dir, b_dir, "both supervisors write to {a_dir}");
    let mcp = project.path().join(".debussy/mcp");
    for dir in [&a_dir, &b_dir] {
        let dir = std::path::PathBuf::from(dir.as_str().expect("state_dir"));
        assert_eq!(dir.parent(), Some(mcp.as_path()), "{}", dir.display());
        let audit = read_audit(&dir);
        assert_eq!(
            events_of(&audit, "supervisor_started").len(),
            1,
            "{audit:?}"
        );
    }
    let ignore = std::fs::read_to_string(mcp.join(".gitignore")).expect(".gitignore");
    assert_eq!(ignore.lines().last(), Some("*"), "{ignore}");
    assert!(a.close().success());
    assert!(b.close().success());
}

/// A second supervisor on a state directory a live one holds is refused (exit 2), naming
/// the holder's pid and how to give it a directory of its own; the first runs on.
#[test]
fn a_second_supervisor_on_a_held_state_directory_is_refused() {
    let mut first = Supervisor::start(&[]);
    first.initialize();
    let elsewhere = tempfile::tempdir().expect("tempdir");
    let state = first.state_dir.display().to_string();
    let mut second = Supervisor::start_in(
        elsewhere.path(),
        &["--state-dir", &state],
        &[test_server().display().to_string()],
    );
    let status = second.wait_exit(WAIT).expect("the second supervisor exits");
    let stderr = second.stderr();
    assert_eq!(status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(&format!("pid {}", first.pid())), "{stderr}");
    assert!(stderr.contains("--name"), "{stderr}");
    assert_eq!(first.whoami().1, 1);
    let audit = first.audit();
    assert_eq!(
        events_of(&audit, "supervisor_started").len(),
        1,
        "{audit:?}"
    );
    assert!(first.close().success());
    // Once the first is gone, the directory is free again.
    let mut third = Supervisor::start_in(
        elsewhere.path(),
        &["--state-dir", &state],
        &[test_server().display().to_string()],
    );
    third.initialize();
    assert!(third.close().success());
}
