//! What the sim agent's tools really do: write and read files, run shell commands, and
//! expand `${NAME}` in scenario text. Each returns a tool result's text and error flag,
//! worded as Claude Code words them.

use std::path::Path;
use std::time::Duration;

use super::scenario::BashSpec;

/// `TodoWrite`'s acknowledgement.
pub(super) const TODO_ACK: &str = "Todos have been modified successfully. Ensure that you continue to use the todo list to track your progress. Please proceed with the current tasks if applicable";

/// Run `sh -c` with the spec's command in `cwd`, with `SCENARIO_DIR` exported; the shell
/// is killed when the timeout expires.
pub(super) async fn shell(spec: &BashSpec, cwd: &Path, scenario_dir: &Path) -> (String, bool) {
    let mut command = tokio::process::Command::new("sh");
    command
        .arg("-c")
        .arg(spec.command())
        .current_dir(cwd)
        .env("SCENARIO_DIR", scenario_dir)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    let timeout = Duration::from_millis(spec.timeout_ms());
    match tokio::time::timeout(timeout, command.output()).await {
        Err(_) => (
            format!("Command timed out after {}ms", spec.timeout_ms()),
            true,
        ),
        Ok(Err(err)) => (format!("Failed to run the command: {err}"), true),
        Ok(Ok(output)) => {
            let mut text = String::from_utf8_lossy(&output.stdout)
                .trim_end()
                .to_owned();
            let stderr = String::from_utf8_lossy(&output.stderr);
            let stderr = stderr.trim_end();
            if !stderr.is_empty() {
                if !text.is_empty() {
                    text.push('\n');
                }
                text.push_str(stderr);
            }
            if output.status.success() {
                (text, false)
            } else {
                let code = output
                    .status
                    .code()
                    .map_or_else(|| "signal".to_owned(), |code| code.to_string());
                (format!("Exit code {code}\n{text}"), true)
            }
        }
    }
}

pub(super) fn write_file(path: &Path, content: &str) -> (String, bool) {
    let existed = path.exists();
    let written = path
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| std::fs::write(path, content));
    match written {
        Err(err) => (format!("Error writing {}: {err}", path.display()), true),
        Ok(()) if existed => (
            format!("The file {} has been updated.", path.display()),
            false,
        ),
        Ok(()) => (
            format!("File created successfully at: {}", path.display()),
            false,
        ),
    }
}

pub(super) fn read_file(path: &Path) -> (String, bool) {
    match std::fs::read_to_string(path) {
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            ("File does not exist.".to_owned(), true)
        }
        Err(err) => (format!("Error reading {}: {err}", path.display()), true),
        Ok(text) => {
            let numbered: Vec<String> = text
                .lines()
                .enumerate()
                .map(|(index, line)| format!("{:>6}\t{line}", index + 1))
                .collect();
            (numbered.join("\n"), false)
        }
    }
}

/// Expand `${NAME}` using `lookup`; `$$` is a literal `$`; a `$` before anything else is
/// kept as is.
/// Errors with the name of the first unknown variable.
pub(super) fn expand(
    text: &str,
    lookup: impl Fn(&str) -> Option<String>,
) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
        } else if let Some(body) = after.strip_prefix('{')
            && let Some(end) = body.find('}')
        {
            let name = &body[..end];
            out.push_str(&lookup(name).ok_or_else(|| name.to_owned())?);
            rest = &body[end + 1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(name: &str) -> Option<String> {
        match name {
            "A" => Some("alpha".to_owned()),
            "EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    #[test]
    fn expands_variables_and_escapes() {
        assert_eq!(expand("x ${A} y", vars).expect("ok"), "x alpha y");
        assert_eq!(expand("${A}${EMPTY}${A}", vars).expect("ok"), "alphaalpha");
        assert_eq!(
            expand("cost $$5 and $HOME", vars).expect("ok"),
            "cost $5 and $HOME"
        );
        assert_eq!(expand("trailing $", vars).expect("ok"), "trailing $");
        assert_eq!(expand("open ${A", vars).expect("ok"), "open ${A");
    }

    #[test]
    fn unknown_variables_are_errors_naming_the_variable() {
        assert_eq!(expand("a ${NOPE} b", vars), Err("NOPE".to_owned()));
    }

    #[test]
    fn read_numbers_lines_like_claude_code() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("f.txt");
        std::fs::write(&path, "one\ntwo\n").expect("write");
        assert_eq!(
            read_file(&path),
            ("     1\tone\n     2\ttwo".to_owned(), false)
        );
        assert_eq!(
            read_file(&dir.path().join("missing")),
            ("File does not exist.".to_owned(), true)
        );
    }

    #[test]
    fn write_creates_directories_and_reports_updates() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("a/b/c.txt");
        let (text, is_error) = write_file(&path, "hi");
        assert!(
            !is_error && text.starts_with("File created successfully"),
            "{text}"
        );
        let (text, _) = write_file(&path, "again");
        assert!(text.contains("has been updated"), "{text}");
        assert_eq!(std::fs::read_to_string(&path).expect("read"), "again");
    }
}
