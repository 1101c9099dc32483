//! `debussy init [DIR] [--force]`: set a project up for debussy.
//!
//! Writes the project's configuration (`.debussy/config.yaml`: `config/default.yaml`
//! with every key commented out, so it sets nothing and the user's own file still
//! applies until a line is uncommented), the bundled example plan (`examples/demo/`, as
//! `plans/example/`) and the Claude Code slash commands that let an agent report to
//! debussy (`.claude/commands/debussy-{done,progress,status}.md`). Every file is compiled
//! into the binary. Existing files are never overwritten without `--force`: a second
//! `init` writes only what is missing and names what it kept. The next steps it prints
//! are the README's "Getting started".

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::cli::{GlobalArgs, InitArgs};
use crate::exit::{CommandResult, Exit, Failure};

/// A file `init` writes: its path under the project directory and its contents.
struct Template {
    path: &'static str,
    contents: Contents,
}

impl Template {
    /// The file at `path` holding `text` as it is.
    const fn text(path: &'static str, text: &'static str) -> Template {
        Template {
            path,
            contents: Contents::Text(text),
        }
    }
}

/// What a template holds.
#[derive(Clone, Copy)]
enum Contents {
    /// This text, as it is.
    Text(&'static str),
    /// The default configuration with every key commented out ([`project_config`]).
    ProjectConfig,
}

impl Contents {
    fn text(self) -> std::borrow::Cow<'static, str> {
        match self {
            Contents::Text(text) => std::borrow::Cow::Borrowed(text),
            Contents::ProjectConfig => std::borrow::Cow::Owned(project_config()),
        }
    }
}

/// The header of the project configuration `init` writes, in place of the default file's.
const PROJECT_CONFIG_HEADER: &str = "\
# debussy configuration for this project (written by `debussy init`).
#
# Every key is listed here commented out, at its default: as written, this file sets
# nothing, so the defaults and your user file ($XDG_CONFIG_HOME/debussy/config.yaml)
# apply. Uncomment a line and change it to set that key for this project; it then
# overrides your user file. Layers, lowest first: built-in defaults, the user file, this
# file (or the file given with --config), DEBUSSY_* environment variables, then
# `debussy run` flags. `debussy config` shows the effective values and where each one
# came from. Reference: docs/config.md.
";

/// `config/default.yaml` with its header replaced and every line that sets a key
/// commented out (`# timeout: 1800`): a file that documents every key and sets none.
fn project_config() -> String {
    let body = crate::config::DEFAULT_FILE
        .split_once("\n\n")
        .map_or(crate::config::DEFAULT_FILE, |(_, body)| body);
    let mut out = PROJECT_CONFIG_HEADER.to_owned();
    out.push('\n');
    for line in body.lines() {
        let trimmed = line.trim_start();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            out.push_str(line);
        } else {
            let indent = &line[..line.len() - trimmed.len()];
            out.push_str(&format!("# {indent}{trimmed}"));
        }
        out.push('\n');
    }
    out
}

/// The next steps `init` prints: the README's "Getting started", from `init` on.
const NEXT_STEPS: &[&str] = &[
    "debussy doctor plans/example",
    "git add -A && git commit -m \"debussy init\"",
    "debussy run plans/example --dry-run",
    "debussy run plans/example --context-threshold 90 --max-restarts 3",
];

const TEMPLATES: &[Template] = &[
    Template {
        path: ".debussy/config.yaml",
        contents: Contents::ProjectConfig,
    },
    Template::text(
        "plans/example/MASTER_PLAN.md",
        include_str!("../../examples/demo/MASTER_PLAN.md"),
    ),
    Template::text(
        "plans/example/phase-1.md",
        include_str!("../../examples/demo/phase-1.md"),
    ),
    Template::text(
        "plans/example/phase-2.md",
        include_str!("../../examples/demo/phase-2.md"),
    ),
    Template::text(
        "plans/example/sim-scenario.yaml",
        include_str!("../../examples/demo/sim-scenario.yaml"),
    ),
    Template::text(".debussy/.gitignore", crate::git::vcs::RUN_DATA_IGNORE),
    Template::text(
        ".claude/commands/debussy-done.md",
        include_str!("../../config/claude/commands/debussy-done.md"),
    ),
    Template::text(
        ".claude/commands/debussy-progress.md",
        include_str!("../../config/claude/commands/debussy-progress.md"),
    ),
    Template::text(
        ".claude/commands/debussy-status.md",
        include_str!("../../config/claude/commands/debussy-status.md"),
    ),
];

/// Why `init` wrote nothing, or stopped.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
enum InitError {
    #[error("{} is not a directory", .dir.display())]
    #[diagnostic(
        code(debussy::init::not_a_directory),
        help("give init a project directory")
    )]
    NotADirectory { dir: PathBuf },

    #[error("{} is a symbolic link", .link.display())]
    #[diagnostic(
        code(debussy::init::link),
        help(
            "init writes only inside the project: replace the link with a directory, or remove it"
        )
    )]
    Link { link: PathBuf },

    #[error("failed to write {}", .path.display())]
    #[diagnostic(code(debussy::init::write))]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// What `init` did with one template.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Action {
    /// The file did not exist and was written.
    Wrote,
    /// The file existed and `--force` replaced it.
    Overwrote,
    /// The file existed and was left as it was.
    Kept,
}

impl Action {
    fn verb(self) -> &'static str {
        match self {
            Action::Wrote => "wrote",
            Action::Overwrote => "overwrote",
            Action::Kept => "kept",
        }
    }
}

pub(super) fn run(_global: &GlobalArgs, args: &InitArgs) -> CommandResult {
    let cwd = std::env::current_dir().map_err(|err| {
        Failure::usage(miette::miette!("cannot read the current directory: {err}"))
    })?;
    let dir = match &args.dir {
        Some(dir) => cwd.join(dir),
        None => cwd.clone(),
    };
    let written = match write_templates(&dir, args.force) {
        Ok(written) => written,
        Err(err @ InitError::NotADirectory { .. }) => {
            return Err(Failure::usage(err));
        }
        Err(err) => return Err(Failure::failed(err)),
    };
    let mut out = format!("initialized debussy in {}\n", dir.display());
    for (path, action) in &written {
        let note = if *action == Action::Kept {
            " (exists; --force overwrites it)"
        } else {
            ""
        };
        out.push_str(&format!("  {} {path}{note}\n", action.verb()));
    }
    out.push_str(&next_steps(
        (dir != cwd).then(|| args.dir.as_deref().unwrap_or(&dir)),
    ));
    std::io::stdout()
        .lock()
        .write_all(out.as_bytes())
        .map_err(|source| {
            Failure::failed(InitError::Write {
                path: PathBuf::from("standard output"),
                source,
            })
        })?;
    Ok(Exit::Success)
}

/// The next steps, as the README gives them, after a `cd` into `dir` when init wrote
/// elsewhere.
fn next_steps(dir: Option<&Path>) -> String {
    let mut out = String::from("next:\n");
    if let Some(dir) = dir {
        out.push_str(&format!(
            "  cd {}\n",
            crate::process::shell_quote(&dir.to_string_lossy())
        ));
    }
    for step in NEXT_STEPS {
        out.push_str(&format!("  {step}\n"));
    }
    out
}

/// Write every template under `dir`; returns each relative path and what was done
/// with it. Without `force`, existing files are kept.
fn write_templates(dir: &Path, force: bool) -> Result<Vec<(&'static str, Action)>, InitError> {
    if dir.exists() && !dir.is_dir() {
        return Err(InitError::NotADirectory {
            dir: dir.to_path_buf(),
        });
    }
    let mut written = Vec::new();
    for template in TEMPLATES {
        let path = dir.join(template.path);
        let exists = path.symlink_metadata().is_ok();
        if exists && !force {
            written.push((template.path, Action::Kept));
            continue;
        }
        if let Some(parent) = path.parent() {
            make_dirs(dir, parent)?;
        }
        // A link in the file's place is replaced, never written through.
        crate::files::replace_file(&path, template.contents.text().as_bytes(), 0o644).map_err(
            |source| InitError::Write {
                path: path.clone(),
                source,
            },
        )?;
        let action = if exists {
            Action::Overwrote
        } else {
            Action::Wrote
        };
        written.push((template.path, action));
    }
    Ok(written)
}

/// Make `dir` and the directories above it up to `root`, refusing any of them below
/// `root` that is a symbolic link, so that no template is written outside the project
/// through one.
fn make_dirs(root: &Path, dir: &Path) -> Result<(), InitError> {
    let write_error = |path: &Path| {
        let path = path.to_path_buf();
        move |source| InitError::Write { path, source }
    };
    std::fs::create_dir_all(root).map_err(write_error(root))?;
    let Ok(relative) = dir.strip_prefix(root) else {
        return std::fs::create_dir_all(dir).map_err(write_error(dir));
    };
    let mut at = root.to_path_buf();
    for part in relative.components() {
        at.push(part);
        match at.symlink_metadata() {
            Ok(meta) if meta.file_type().is_symlink() => {
                return Err(InitError::Link { link: at });
            }
            Ok(_) => {}
            Err(_) => std::fs::create_dir(&at).map_err(write_error(&at))?,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::cli::{Cli, Command};

    fn shell_words(line: &str, vars: &[(&str, &str)]) -> Vec<String> {
        crate::cli::docs_tests::shell_words(line, vars, false)
    }

    /// The paths `write_templates` reported with `action`.
    fn paths_with(written: &[(&'static str, Action)], action: Action) -> Vec<&'static str> {
        written
            .iter()
            .filter(|(_, done)| *done == action)
            .map(|(path, _)| *path)
            .collect()
    }

    /// The `debussy …` lines inside the fenced shell blocks of a markdown file.
    fn command_lines(markdown: &str) -> Vec<&str> {
        let mut in_block = false;
        let mut lines = Vec::new();
        for line in markdown.lines() {
            if line.starts_with("```") {
                in_block = !in_block && (line == "```bash" || line == "```sh");
                continue;
            }
            if in_block && (line == "debussy" || line.starts_with("debussy ")) {
                lines.push(line);
            }
        }
        lines
    }

    #[test]
    fn slash_command_lines_parse_with_the_real_cli() {
        let mut total = 0;
        for template in TEMPLATES.iter().filter(|t| t.path.starts_with(".claude/")) {
            let name = template
                .path
                .rsplit('/')
                .next()
                .and_then(|f| f.strip_prefix("debussy-"))
                .and_then(|f| f.strip_suffix(".md"))
                .expect("named debussy-<subcommand>.md");
            let contents = template.contents.text();
            let lines = command_lines(&contents);
            assert!(!lines.is_empty(), "{} has no command lines", template.path);
            for line in lines {
                // Claude Code refuses a command with a variable in it under a prefix rule
                // such as `Bash(debussy done:*)` ("a variable … can't be checked").
                assert!(
                    !line.contains('$'),
                    "{}: `{line}` expands a variable",
                    template.path
                );
                let argv = shell_words(line, &[]);
                let cli = Cli::try_parse_from(&argv).unwrap_or_else(|err| {
                    panic!("{}: `{line}` does not parse: {err}", template.path)
                });
                let matches = match (name, &cli.command) {
                    ("done", Command::Done(done)) => {
                        done.phase.is_none() && done.phase_pos.is_none() && done.status.is_some()
                    }
                    ("progress", Command::Progress(progress)) => {
                        progress.phase.is_none() && !progress.step.is_empty()
                    }
                    ("status", Command::Status(_)) => true,
                    _ => false,
                };
                assert!(
                    matches,
                    "{}: `{line}` is not a full `debussy {name}`",
                    template.path
                );
                total += 1;
            }
            let allowed = format!("allowed-tools: Bash(debussy {name}:*)");
            assert!(
                contents.contains(&allowed),
                "{} lacks `{allowed}`",
                template.path
            );
        }
        assert_eq!(total, 6, "done ×3, progress ×1, status ×2");
        // The check has teeth: a line the CLI does not accept fails to parse.
        let wrong = shell_words("debussy done --phase 1 --status finished", &[]);
        assert!(Cli::try_parse_from(wrong).is_err());
    }

    #[test]
    fn the_next_steps_are_the_readmes_getting_started() {
        let readme = include_str!("../../README.md");
        let section = readme
            .split("## Getting started")
            .nth(1)
            .expect("a Getting started section");
        let block = section
            .split("```sh\n")
            .nth(1)
            .and_then(|rest| rest.split("```").next())
            .expect("a shell block");
        let steps: Vec<&str> = block
            .lines()
            .map(|line| line.split_once("  #").map_or(line, |(command, _)| command))
            .map(str::trim_end)
            .skip_while(|line| *line != "debussy init")
            .skip(1)
            .collect();
        assert_eq!(steps, NEXT_STEPS);
        for step in NEXT_STEPS
            .iter()
            .filter(|step| step.starts_with("debussy "))
        {
            let argv = shell_words(step, &[]);
            assert!(
                Cli::try_parse_from(&argv).is_ok(),
                "`{step}` does not parse"
            );
        }
        assert_eq!(
            next_steps(Some(Path::new("my project"))).lines().nth(1),
            Some("  cd 'my project'")
        );
    }

    #[test]
    fn the_project_config_documents_every_key_and_sets_none() {
        let text = project_config();
        let layer = crate::config::parse_file(Path::new("config.yaml"), &text).expect("valid");
        assert_eq!(
            layer,
            serde_norway::Value::Mapping(serde_norway::Mapping::new())
        );
        for line in crate::config::DEFAULT_FILE
            .lines()
            .skip_while(|l| !l.is_empty())
        {
            let trimmed = line.trim_start();
            if !trimmed.is_empty() && !trimmed.starts_with('#') {
                let commented = format!("# {line}");
                assert!(text.contains(&commented), "`{commented}` missing");
            }
        }
        assert!(text.starts_with(PROJECT_CONFIG_HEADER));
        assert!(
            !text.contains("delete the lines"),
            "the default file's header is replaced"
        );
    }

    #[test]
    fn the_phase_variable_the_commands_rely_on_is_one_the_orchestrator_sets() {
        assert!(crate::config::RESERVED_ENV_VARS.contains(&"DEBUSSY_PHASE_ID"));
    }

    #[test]
    fn shell_words_handle_quotes_and_variables() {
        assert_eq!(
            shell_words(
                r#"debussy done --reason "a b" --phase "$X" 'c d'"#,
                &[("X", "7")]
            ),
            ["debussy", "done", "--reason", "a b", "--phase", "7", "c d"]
        );
    }

    #[test]
    fn writes_every_template_into_an_empty_directory() {
        let temp = tempfile::tempdir().expect("temp dir");
        let dir = temp.path().join("new-project");
        let written = write_templates(&dir, false).expect("writes");
        assert_eq!(written.len(), TEMPLATES.len());
        assert!(written.iter().all(|(_, action)| *action == Action::Wrote));
        for template in TEMPLATES {
            let on_disk = std::fs::read_to_string(dir.join(template.path)).expect("written");
            assert_eq!(on_disk, template.contents.text(), "{}", template.path);
        }
    }

    #[test]
    fn a_second_init_keeps_what_exists_and_writes_what_is_missing() {
        let temp = tempfile::tempdir().expect("temp dir");
        let dir = temp.path();
        std::fs::create_dir_all(dir.join("plans/example")).expect("mkdir");
        std::fs::write(dir.join("plans/example/phase-2.md"), "mine").expect("write");
        let written = write_templates(dir, false).expect("writes the rest");
        assert_eq!(
            paths_with(&written, Action::Kept),
            ["plans/example/phase-2.md"]
        );
        assert_eq!(
            std::fs::read_to_string(dir.join("plans/example/phase-2.md")).expect("read"),
            "mine",
            "an existing file is kept"
        );
        assert!(
            dir.join(".debussy/config.yaml").is_file(),
            "missing files are written"
        );
        let again = write_templates(dir, false).expect("a third init");
        assert!(again.iter().all(|(_, action)| *action == Action::Kept));
        let written = write_templates(dir, true).expect("forced");
        assert_eq!(
            paths_with(&written, Action::Overwrote).len(),
            TEMPLATES.len()
        );
        let phase = std::fs::read_to_string(dir.join("plans/example/phase-2.md")).expect("read");
        assert!(phase.starts_with("# Greeting Demo Phase 2: Say goodbye"));
    }

    #[test]
    fn force_replaces_a_link_in_a_files_place_and_leaves_its_target_alone() {
        let temp = tempfile::tempdir().expect("temp dir");
        let outside = temp.path().join("outside.yaml");
        std::fs::write(&outside, "theirs").expect("write");
        let dir = temp.path().join("project");
        std::fs::create_dir_all(dir.join(".debussy")).expect("mkdir");
        std::os::unix::fs::symlink(&outside, dir.join(".debussy/config.yaml")).expect("link");
        write_templates(&dir, true).expect("forced");
        assert_eq!(std::fs::read_to_string(&outside).expect("read"), "theirs");
        let meta = std::fs::symlink_metadata(dir.join(".debussy/config.yaml")).expect("meta");
        assert!(meta.file_type().is_file());
    }

    #[test]
    fn a_linked_directory_on_the_way_is_refused_and_nothing_written_through_it() {
        let temp = tempfile::tempdir().expect("temp dir");
        let outside = temp.path().join("elsewhere");
        std::fs::create_dir_all(&outside).expect("mkdir");
        let dir = temp.path().join("project");
        std::fs::create_dir_all(&dir).expect("mkdir");
        std::os::unix::fs::symlink(&outside, dir.join(".claude")).expect("link");
        let err = write_templates(&dir, true).expect_err("refused");
        assert!(
            matches!(&err, InitError::Link { link } if link.ends_with(".claude")),
            "{err}"
        );
        assert_eq!(std::fs::read_dir(&outside).expect("read").count(), 0);
    }

    #[test]
    fn a_file_is_not_a_project_directory() {
        let temp = tempfile::tempdir().expect("temp dir");
        let file = temp.path().join("file");
        std::fs::write(&file, "x").expect("write");
        assert!(matches!(
            write_templates(&file, true),
            Err(InitError::NotADirectory { .. })
        ));
    }
}
