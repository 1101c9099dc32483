//! The isolated directories every agent CLI test runs in: HOME, TMPDIR and a working
//! directory inside one temp dir, removed on drop, and the environment that points the
//! CLI at them and nowhere else. Each CLI's `Sandbox` adds its own settings and keys.

use std::io;
use std::path::{Path, PathBuf};

use tempfile::TempDir;

/// One agent run's own HOME (with the agent's configuration directory), TMPDIR and
/// working directory.
#[derive(Debug)]
pub struct SandboxDirs {
    dir: TempDir,
    cwd: PathBuf,
}

impl SandboxDirs {
    /// A temp dir named `debussy-AGENT-…` with `home/CONFIG_DIR`, `tmp/` and `work/`.
    pub fn new(agent: &str, config_dir: &str) -> io::Result<Self> {
        let dir = tempfile::Builder::new()
            .prefix(&format!("debussy-{agent}-"))
            .tempdir()?;
        for sub in [
            format!("home/{config_dir}"),
            "tmp".to_owned(),
            "work".to_owned(),
        ] {
            std::fs::create_dir_all(dir.path().join(sub))?;
        }
        let cwd = dir.path().join("work");
        Ok(SandboxDirs { dir, cwd })
    }

    /// The working directory the agent runs in.
    pub fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// The isolated HOME.
    pub fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    /// PATH from the test process; HOME, the XDG directories, TMPDIR, SHELL and LANG
    /// fixed inside the sandbox, so the developer's own settings and keys never leak in.
    pub fn base_envs(&self) -> Vec<(String, String)> {
        let home = self.home();
        let path = |p: PathBuf| p.to_string_lossy().into_owned();
        vec![
            (
                "PATH".to_owned(),
                std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".to_owned()),
            ),
            ("HOME".to_owned(), path(home.clone())),
            ("XDG_CONFIG_HOME".to_owned(), path(home.join(".config"))),
            ("XDG_CACHE_HOME".to_owned(), path(home.join(".cache"))),
            ("XDG_DATA_HOME".to_owned(), path(home.join(".local/share"))),
            ("XDG_STATE_HOME".to_owned(), path(home.join(".local/state"))),
            ("TMPDIR".to_owned(), path(self.dir.path().join("tmp"))),
            ("SHELL".to_owned(), "/bin/bash".to_owned()),
            ("LANG".to_owned(), "C.UTF-8".to_owned()),
        ]
    }
}
