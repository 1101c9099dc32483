//! What an agent needs on disk for one session: its private home ([`AgentHome`]) and the
//! file followed in it.
//!
//! `prepare_files` makes the home and says which variable names it (`Prepared`). The home
//! is a directory beside the transcript (`…session-K.home/`) into which each entry of the
//! user's own home is linked, but the agent's per-session data, a settings file debussy
//! lays its own keys over (see `layered.rs`) and a directory it adds a file to (the
//! Gemini CLI's `policies/`, whose files are copied). `Followed` then reads the file the
//! agent writes there (Codex's rollout) line by line as it grows: the session polls it on
//! a short tick beside stdout, and once more at the end so nothing written last is lost.

use std::fs::File;
use std::io::{self, Read as _};
use std::path::{Path, PathBuf};

use super::event::SessionWarning;
use super::outcome::SpawnFailure;
use crate::agent::{AgentCommand, AgentHome, Follow, OwnDir};

/// How often the followed file is read while the agent runs.
pub(super) const FOLLOW_INTERVAL: std::time::Duration = std::time::Duration::from_millis(20);

/// Longest line kept from the followed file; a longer one is skipped whole.
const MAX_LINE: usize = 64 * 1024 * 1024;

/// The most copied of one user file into an [`OwnDir`].
const OWN_FILE_LIMIT: u64 = 1024 * 1024;

/// The most read from the followed file at a time.
const FOLLOW_CHUNK: u64 = 8 * 1024 * 1024;

/// The private home for the session whose transcript is `log_path`:
/// `…session-K.home/` beside it.
#[must_use]
pub fn home_path(log_path: &Path) -> PathBuf {
    log_path.with_extension("home")
}

/// Why the agent's home could not be made: what was being done, and what the system
/// said.
#[derive(Debug)]
pub(super) struct HomeError {
    /// What was being done, naming the path (`create …/session-1.home`).
    doing: String,
    source: io::Error,
}

impl HomeError {
    fn new(doing: String) -> impl FnOnce(io::Error) -> HomeError {
        move |source| HomeError { doing, source }
    }
}

impl std::fmt::Display for HomeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.doing, self.source)
    }
}

/// What [`prepare_files`] made for a session.
#[derive(Debug, Default)]
pub(super) struct Prepared {
    /// The variable naming the home to the agent.
    pub(super) env: Vec<(String, String)>,
    /// The file to follow in the home, if any.
    pub(super) followed: Option<Followed>,
}

/// The private home `command` asks for, made beside the transcript `log_path`.
///
/// # Errors
/// When a directory, link or file cannot be made; the message names the path.
pub(super) fn prepare_files(
    command: &AgentCommand,
    log_path: &Path,
) -> Result<Prepared, SpawnFailure> {
    let mut env = Vec::new();
    let mut followed = None;
    if let Some(home) = &command.home {
        let dir = prepare(home, log_path).map_err(|err| {
            SpawnFailure::making(
                format!("prepare the agent's home: {}", err.doing),
                &err.source,
                Some("check that the run directory is writable"),
            )
        })?;
        followed = home
            .follow
            .clone()
            .map(|follow| Followed::new(&dir, follow));
        env.push((home.var.clone(), dir.display().to_string()));
    }
    Ok(Prepared { env, followed })
}

/// Make the private home and link the user's entries into it.
///
/// # Errors
/// When the directory cannot be made or an entry cannot be linked; the message names the
/// path.
pub(super) fn prepare(home: &AgentHome, log_path: &Path) -> Result<PathBuf, HomeError> {
    let dir = home_path(log_path);
    let (Some(parent), Some(name)) = (dir.parent(), dir.file_name()) else {
        return Err(HomeError::new(format!("create {}", dir.display()))(
            io::Error::new(io::ErrorKind::InvalidInput, "it names no directory"),
        ));
    };
    std::fs::create_dir_all(parent)
        .and_then(|()| crate::files::private_dir(parent, Path::new(name)))
        .map_err(HomeError::new(format!("create {}", dir.display())))?;
    let files = match &home.subdir {
        Some(subdir) => crate::files::private_dir(&dir, subdir).map_err(HomeError::new(
            format!("create {}", dir.join(subdir).display()),
        ))?,
        None => dir.clone(),
    };
    if let Some(settings) = &home.settings {
        let user = home
            .link_from
            .as_deref()
            .map(|user| user.join(&settings.name));
        if let Some(text) = super::layered::layered(user.as_deref(), &settings.over) {
            let path = files.join(&settings.name);
            crate::files::write_private(&path, text.as_bytes())
                .map_err(HomeError::new(format!("write {}", path.display())))?;
        }
    }
    if let Some(own) = &home.own_dir {
        own_dir(own, home.link_from.as_deref(), &files)?;
    }
    let Some(user) = home.link_from.as_deref() else {
        return Ok(dir);
    };
    let entries = match std::fs::read_dir(user) {
        Ok(entries) => entries,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(dir),
        Err(err) => return Err(HomeError::new(format!("read {}", user.display()))(err)),
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let text = name.to_string_lossy();
        if is_session_data(&text, &home.skip) {
            continue;
        }
        let link = files.join(&name);
        if link.symlink_metadata().is_ok() {
            continue;
        }
        std::os::unix::fs::symlink(entry.path(), &link).map_err(HomeError::new(format!(
            "link {} to {}",
            link.display(),
            entry.path().display()
        )))?;
    }
    Ok(dir)
}

/// Make `own` in `files`: copies of the user's files of it (under `user`), then
/// debussy's.
fn own_dir(own: &OwnDir, user: Option<&Path>, files: &Path) -> Result<(), HomeError> {
    let dir = crate::files::private_dir(files, Path::new(&own.name)).map_err(HomeError::new(
        format!("create {}", files.join(&own.name).display()),
    ))?;
    let theirs = user.map(|user| user.join(&own.name));
    // The agent goes on without the user's files when it cannot read them (not there,
    // not a directory, not readable), and so does the session.
    let entries = match theirs.as_deref().map(std::fs::read_dir) {
        None | Some(Err(_)) => Vec::new(),
        Some(Ok(entries)) => entries.flatten().collect(),
    };
    for entry in entries {
        let name = entry.file_name();
        // What the agent would not read there (a link, a directory, a FIFO) is not
        // copied, nor is a file too large to be one of its own.
        let regular = entry.file_type().is_ok_and(|kind| kind.is_file());
        if !regular || !name.to_string_lossy().ends_with(&own.suffix) || name == own.file.as_str() {
            continue;
        }
        let Ok(bytes) = crate::files::read_bytes_limited(&entry.path(), OWN_FILE_LIMIT) else {
            continue;
        };
        let copy = dir.join(&name);
        crate::files::write_private(&copy, &bytes)
            .map_err(HomeError::new(format!("write {}", copy.display())))?;
    }
    let path = dir.join(&own.file);
    crate::files::write_private(&path, own.contents.as_bytes())
        .map_err(HomeError::new(format!("write {}", path.display())))
}

/// Whether an entry of the user's home is per-session data: a skipped name, or one of
/// the agent's databases and their journals.
fn is_session_data(name: &str, skip: &[String]) -> bool {
    skip.iter().any(|prefix| name.starts_with(prefix.as_str())) || name.contains(".sqlite")
}

/// The file the agent writes under its home, read as it grows.
#[derive(Debug)]
pub(super) struct Followed {
    root: PathBuf,
    follow: Follow,
    file: Option<(PathBuf, File)>,
    partial: Vec<u8>,
    skipping: bool,
}

impl Followed {
    /// Follow `follow` under `home` (the file may not exist yet).
    pub(super) fn new(home: &Path, follow: Follow) -> Self {
        Followed {
            root: home.join(&follow.under),
            follow,
            file: None,
            partial: Vec::new(),
            skipping: false,
        }
    }

    /// The file, once it was found.
    pub(super) fn path(&self) -> Option<&Path> {
        self.file.as_ref().map(|(path, _)| path.as_path())
    }

    /// The complete lines written since the last call. `at_end` also returns a last line
    /// without its newline (the agent has exited).
    pub(super) fn read_lines(&mut self, at_end: bool) -> io::Result<Vec<Vec<u8>>> {
        if self.file.is_none() {
            let Some(path) = find(&self.root, &self.follow) else {
                return Ok(Vec::new());
            };
            // Written by the agent: only a regular file is followed (a FIFO would block
            // the open, a device never ends).
            let file = crate::files::open_regular(&path)?;
            self.file = Some((path, file));
        }
        let Some((_, file)) = &mut self.file else {
            return Ok(Vec::new());
        };
        let mut lines = Vec::new();
        let mut buffer = Vec::new();
        loop {
            // A bounded piece at a time: memory stays bounded however fast it grows.
            buffer.clear();
            let read = file.take(FOLLOW_CHUNK).read_to_end(&mut buffer)?;
            for chunk in buffer.split_inclusive(|byte| *byte == b'\n') {
                if chunk.ends_with(b"\n") {
                    if !self.skipping {
                        self.partial.extend_from_slice(&chunk[..chunk.len() - 1]);
                        lines.push(std::mem::take(&mut self.partial));
                    }
                    self.skipping = false;
                } else if !self.skipping {
                    self.partial.extend_from_slice(chunk);
                    if self.partial.len() > MAX_LINE {
                        self.partial = Vec::new();
                        self.skipping = true;
                    }
                }
            }
            // Between ticks one piece is enough; at the end, everything there is.
            if !at_end || (read as u64) < FOLLOW_CHUNK {
                break;
            }
        }
        if at_end && !self.partial.is_empty() {
            lines.push(std::mem::take(&mut self.partial));
        }
        Ok(lines)
    }
}

/// The lines the agent added to the file it writes beside stdout (Codex's rollout), when
/// one is followed. A file that cannot be read any more stops being followed, and the
/// warning says so.
pub(super) fn read_followed(
    followed: &mut Option<Followed>,
    at_end: bool,
) -> Result<Vec<Vec<u8>>, SessionWarning> {
    let Some(file) = followed else {
        return Ok(Vec::new());
    };
    match file.read_lines(at_end) {
        Ok(lines) => Ok(lines),
        Err(err) => {
            let path = file.path().map(Path::to_path_buf).unwrap_or_default();
            *followed = None;
            Err(SessionWarning::Log {
                path,
                message: format!("could not be read, its context figures are lost: {err}"),
            })
        }
    }
}

/// The first file under `root`, at any depth, whose name matches `follow`.
fn find(root: &Path, follow: &Follow) -> Option<PathBuf> {
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut entries: Vec<_> = entries.flatten().collect();
        entries.sort_by_key(std::fs::DirEntry::file_name);
        for entry in entries {
            let path = entry.path();
            let name = entry.file_name();
            let name = name.to_string_lossy();
            match entry.file_type() {
                Ok(kind) if kind.is_dir() => dirs.push(path),
                Ok(kind)
                    if kind.is_file()
                        && name.starts_with(follow.prefix.as_str())
                        && name.ends_with(follow.suffix.as_str()) =>
                {
                    return Some(path);
                }
                _ => {}
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;

    use super::*;

    fn follow() -> Follow {
        Follow {
            under: PathBuf::from("sessions"),
            prefix: "rollout-".into(),
            suffix: ".jsonl".into(),
        }
    }

    /// The names in `dir`, sorted.
    fn names_in(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .expect("read")
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn settings_laid_over_the_users_replace_their_link_in_the_agents_directory() {
        let dir = tempfile::tempdir().expect("tempdir");
        let user = dir.path().join("user/.gemini");
        std::fs::create_dir_all(&user).expect("mkdir");
        std::fs::write(user.join("oauth_creds.json"), "{}").expect("write");
        std::fs::write(
            user.join("settings.json"),
            "{\"security\": {\"auth\": {\"selectedType\": \"oauth-personal\"}}}",
        )
        .expect("write");
        let policies = user.join("policies");
        std::fs::create_dir(&policies).expect("mkdir");
        std::fs::write(policies.join("mine.toml"), "# deny rm\n").expect("write");
        std::fs::write(dir.path().join("shared.toml"), "# shared\n").expect("write");
        std::os::unix::fs::symlink(dir.path().join("shared.toml"), policies.join("linked.toml"))
            .expect("link");
        std::fs::write(policies.join("notes.txt"), "not a policy").expect("write");
        let home = AgentHome {
            var: "GEMINI_CLI_HOME".into(),
            subdir: Some(PathBuf::from(".gemini")),
            link_from: Some(user.clone()),
            skip: Vec::new(),
            settings: Some(crate::agent::LayeredSettings {
                name: "settings.json".into(),
                over: serde_json::json!({"model": {"compressionThreshold": 0.9}}),
            }),
            own_dir: Some(OwnDir {
                name: "policies".into(),
                suffix: ".toml".into(),
                file: "debussy.toml".into(),
                contents: "# debussy's\n".into(),
            }),
            follow: None,
        };
        let log = dir.path().join("phase-1-attempt-1-session-1.jsonl");
        let made = prepare(&home, &log).expect("prepare");
        let files = made.join(".gemini");
        assert_eq!(
            std::fs::read_link(files.join("oauth_creds.json")).expect("a link"),
            user.join("oauth_creds.json")
        );
        let settings = files.join("settings.json");
        assert!(
            !settings.is_symlink(),
            "the user's file is not written through"
        );
        let text = std::fs::read_to_string(&settings).expect("read");
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&text).expect("JSON"),
            serde_json::json!({
                "security": {"auth": {"selectedType": "oauth-personal"}},
                "model": {"compressionThreshold": 0.9},
            })
        );
        // The user's policies are copies, beside debussy's; the CLI reads no link there,
        // so neither is a link copied.
        let own = files.join("policies");
        assert!(!own.is_symlink());
        assert_eq!(names_in(&own), ["debussy.toml", "mine.toml"]);
        assert_eq!(
            std::fs::read_to_string(own.join("mine.toml")).expect("read"),
            "# deny rm\n"
        );
        assert_eq!(
            std::fs::read_to_string(own.join("debussy.toml")).expect("read"),
            "# debussy's\n"
        );
        prepare(&home, &log).expect("prepare again");
        // The user's `policies` a file, not a directory: the agent reads none of it, and
        // the session still starts with debussy's own.
        std::fs::remove_dir_all(&policies).expect("remove");
        std::fs::write(&policies, "not a directory").expect("write");
        let again = dir.path().join("phase-1-attempt-1-session-2.jsonl");
        let made = prepare(&home, &again).expect("prepare with a file for policies");
        assert_eq!(names_in(&made.join(".gemini/policies")), ["debussy.toml"]);
    }

    #[test]
    fn the_home_links_the_users_entries_but_per_session_data() {
        let dir = tempfile::tempdir().expect("tempdir");
        let user = dir.path().join("user-home");
        std::fs::create_dir_all(user.join("sessions")).expect("mkdir");
        std::fs::create_dir_all(user.join("prompts")).expect("mkdir");
        for file in [
            "config.toml",
            "auth.json",
            "state_5.sqlite",
            "history.jsonl",
        ] {
            std::fs::write(user.join(file), file).expect("write");
        }
        let home = AgentHome {
            var: "CODEX_HOME".into(),
            subdir: None,
            link_from: Some(user.clone()),
            skip: vec!["sessions".into(), "history.jsonl".into()],
            settings: None,
            own_dir: None,
            follow: None,
        };
        let log = dir.path().join("phase-1-attempt-1-session-1.jsonl");
        let made = prepare(&home, &log).expect("prepare");
        assert_eq!(made, dir.path().join("phase-1-attempt-1-session-1.home"));
        assert_eq!(names_in(&made), ["auth.json", "config.toml", "prompts"]);
        assert_eq!(
            std::fs::read_link(made.join("auth.json")).expect("a link"),
            user.join("auth.json")
        );
        // Again (a resumed session reusing the path): nothing fails.
        prepare(&home, &log).expect("prepare again");
        // A user without a home of their own gets an empty one.
        let none = AgentHome {
            link_from: Some(dir.path().join("missing")),
            ..home
        };
        prepare(&none, &dir.path().join("other.jsonl")).expect("no user home");
    }

    #[test]
    fn the_followed_file_is_found_when_it_appears_and_read_line_by_line() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut followed = Followed::new(dir.path(), follow());
        assert!(followed.read_lines(false).expect("read").is_empty());
        let day = dir.path().join("sessions/2026/11/25");
        std::fs::create_dir_all(&day).expect("mkdir");
        std::fs::write(day.join("other.jsonl"), "not this\n").expect("write");
        let path = day.join("rollout-2026-11-25-abc.jsonl");
        let mut file = File::create(&path).expect("create");
        file.write_all(b"{\"a\":1}\n{\"b\":").expect("write");
        assert_eq!(
            followed.read_lines(false).expect("read"),
            [b"{\"a\":1}".to_vec()]
        );
        assert_eq!(followed.path(), Some(path.as_path()));
        file.write_all(b"2}\n{\"c\":3}").expect("write");
        assert_eq!(
            followed.read_lines(false).expect("read"),
            [b"{\"b\":2}".to_vec()]
        );
        assert_eq!(
            followed.read_lines(true).expect("read"),
            [b"{\"c\":3}".to_vec()]
        );
        assert!(followed.read_lines(true).expect("read").is_empty());
    }
}
