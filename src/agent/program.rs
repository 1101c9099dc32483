//! Locating an agent's program, the same way for every backend: a bare name on `PATH`, a
//! path as given, and an error that says where it looked and how to install it.

use std::ffi::OsStr;
use std::path::PathBuf;

use super::AgentError;

/// Find `program` as [`resolve_program`] does, on this process's `PATH`.
///
/// # Errors
/// As [`resolve_program`].
pub(super) fn find_program(program: &str, help: &str) -> Result<PathBuf, AgentError> {
    resolve_program(program, std::env::var_os("PATH").as_deref(), help)
}

/// Find `program`: a name without a `/` is looked up in `path_var` (the value of `PATH`); a
/// path is checked as given. The result must be an executable file.
///
/// # Errors
/// [`AgentError::ProgramNotFound`] naming what was looked for, where, and `help`.
fn resolve_program(
    program: &str,
    path_var: Option<&OsStr>,
    help: &str,
) -> Result<PathBuf, AgentError> {
    let not_found = |searched: String| AgentError::ProgramNotFound {
        program: program.to_owned(),
        searched,
        help: help.to_owned(),
    };
    if program.is_empty() {
        return Err(not_found("the configured program is empty".to_owned()));
    }
    let cwd = std::env::current_dir().unwrap_or_default();
    if program.contains(std::path::MAIN_SEPARATOR) {
        let path = PathBuf::from(program);
        return if which::which_in(&path, None::<&OsStr>, &cwd).is_ok() {
            Ok(path)
        } else if path.exists() {
            Err(not_found(format!(
                "{} exists but is not an executable file",
                path.display()
            )))
        } else {
            Err(not_found(format!("no file at {}", path.display())))
        };
    }
    let Some(path_var) = path_var.filter(|value| !value.is_empty()) else {
        return Err(not_found("PATH is not set".to_owned()));
    };
    which::which_in(program, Some(path_var), &cwd)
        .map_err(|_| not_found(format!("searched PATH={}", path_var.to_string_lossy())))
}

/// An executable shell script called `name` in `dir`: a program for tests to find.
#[cfg(test)]
pub(super) fn executable(dir: &std::path::Path, name: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;

    let path = dir.join(name);
    std::fs::write(&path, "#!/bin/sh\n").expect("write");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    path
}

#[cfg(test)]
mod tests {

    use super::*;

    const INSTALL_HINT: &str =
        "install it with `npm install -g some-agent`, or set `agents.claude.command`";

    #[test]
    fn finds_the_program_on_path() {
        let dir = tempfile::tempdir().expect("tempdir");
        let empty = tempfile::tempdir().expect("tempdir");
        let expected = executable(dir.path(), "claude");
        let path_var = std::env::join_paths([empty.path(), dir.path()]).expect("join");
        let found = resolve_program("claude", Some(&path_var), INSTALL_HINT).expect("found");
        assert_eq!(found, expected);
    }

    #[test]
    fn skips_files_that_are_not_executable() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("claude"), "data").expect("write");
        let err = resolve_program("claude", Some(dir.path().as_os_str()), INSTALL_HINT)
            .expect_err("not executable");
        assert!(matches!(err, AgentError::ProgramNotFound { .. }));
    }

    #[test]
    fn missing_program_names_the_path_searched_and_how_to_install() {
        let dir = tempfile::tempdir().expect("tempdir");
        let err = resolve_program("claude", Some(dir.path().as_os_str()), INSTALL_HINT)
            .expect_err("missing");
        let message = err.to_string();
        assert!(message.contains("`claude` not found"), "{message}");
        assert!(
            message.contains(&format!("PATH={}", dir.path().display())),
            "{message}"
        );
        let help = miette::Diagnostic::help(&err).expect("help").to_string();
        assert!(help.contains("npm install -g some-agent"), "{help}");
        assert!(help.contains("agents.claude.command"), "{help}");
    }

    #[test]
    fn missing_path_variable_is_reported() {
        let err = resolve_program("claude", None, INSTALL_HINT).expect_err("no PATH");
        assert!(err.to_string().contains("PATH is not set"), "{err}");
    }

    #[test]
    fn explicit_paths_are_checked_as_given() {
        let dir = tempfile::tempdir().expect("tempdir");
        let program = executable(dir.path(), "my-claude");
        let as_text = program.to_string_lossy().into_owned();
        assert_eq!(
            resolve_program(&as_text, None, INSTALL_HINT).expect("found"),
            program
        );
        let missing = dir.path().join("nope");
        let err =
            resolve_program(&missing.to_string_lossy(), None, INSTALL_HINT).expect_err("missing");
        assert!(err.to_string().contains("no file at"), "{err}");
    }
}
