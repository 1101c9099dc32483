//! Tests of [`ProcessCommand`]'s own parts: display, debug, PATH, shebangs.

use super::*;

#[test]
fn display_quotes_what_needs_it() {
    let command = ProcessCommand::new("claude").args(["-p", "two words", "it's", ""]);
    assert_eq!(command.display(), r"claude -p 'two words' 'it'\''s' ''");
}

#[test]
fn payloads_are_debugged_by_size() {
    let command = ProcessCommand::new("cat").stdin_payload(vec![b'x'; 5000]);
    let debug = format!("{command:?}");
    assert!(debug.contains("Payload(5000 bytes)"), "{debug}");
    assert!(!debug.contains("120, 120"), "{debug}");
}

#[test]
fn spawning_outside_a_runtime_is_an_error() {
    let err = ProcessCommand::new("true").spawn().expect_err("no runtime");
    assert!(
        err.to_string().starts_with("start `true`") && format!("{err:?}").contains("Tokio"),
        "{err:?}"
    );
}

#[test]
fn path_follows_env_overrides() {
    let command = ProcessCommand::new("x").env("PATH", "/a:/b");
    assert_eq!(command.path_var(), Some(OsString::from("/a:/b")));
    let command = ProcessCommand::new("x").env_clear();
    assert_eq!(command.path_var(), None);
    let command = ProcessCommand::new("x").env_remove("PATH");
    assert_eq!(command.path_var(), None);
    assert_eq!(command.searched(), "PATH is empty or unset");
}

#[test]
fn reads_the_shebang_interpreter() {
    let dir = tempfile::tempdir().expect("temp dir");
    let script = dir.path().join("s");
    std::fs::write(&script, "#!/no/such/interp -x\necho hi\n").expect("write");
    assert_eq!(interpreter(&script), Some("/no/such/interp".to_owned()));
    std::fs::write(&script, "echo hi\n").expect("write");
    assert_eq!(interpreter(&script), None);
}
