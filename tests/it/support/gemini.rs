//! Locating the real Gemini CLI and giving it an isolated home pointed at the scripted
//! model server's Gemini API.
//!
//! [`require`] finds the pinned `gemini` (installed by `scripts/test-tools` into
//! `.tools/npm`, or named by `DEBUSSY_TEST_GEMINI`); a test that needs it is `#[ignore]`d
//! (run with `--run-ignored all`) and fails when it is missing. [`Sandbox`] is a temp dir
//! with an isolated HOME whose `~/.gemini/settings.json` selects API-key authentication;
//! [`Sandbox::envs`] points `GOOGLE_GEMINI_BASE_URL` at the server, and keeps the CLI
//! from starting itself again with a larger heap ([`NO_RELAUNCH_ENV`]), which costs 0.8 s
//! of CPU a start. Only the timeout test runs the CLI as users do, so that the
//! two-process tree they run is the one debussy is seen to stop.

use std::io;
use std::path::Path;

pub use debussy::agent::gemini::NO_RELAUNCH_ENV;

use super::cli::{Pinned, PinnedCli};
use super::model_server::ModelServer;
use super::sandbox::SandboxDirs;

/// Environment variable naming the `gemini` executable to test against.
pub const GEMINI_OVERRIDE_ENV: &str = "DEBUSSY_TEST_GEMINI";

/// Where `scripts/test-tools` installs the CLI, relative to the crate root.
pub const GEMINI_INSTALL_PATH: &str = ".tools/npm/node_modules/.bin/gemini";

/// The model the tests ask for.
pub const DEFAULT_MODEL: &str = "gemini-2.5-pro";

/// The CLI for a test that needs it; see [`super::cli::require`] for what happens when
/// it is missing.
pub fn require() -> PinnedCli {
    static PINNED: Pinned = Pinned::new("the Gemini CLI", GEMINI_OVERRIDE_ENV, GEMINI_INSTALL_PATH);
    PINNED.require()
}

/// An isolated HOME (with `~/.gemini/settings.json`), TMPDIR and working directory inside
/// one temp dir, removed on drop.
#[derive(Debug)]
pub struct Sandbox {
    dirs: SandboxDirs,
    base_url: String,
}

impl Sandbox {
    /// The directories, and Gemini settings that authenticate with an API key.
    pub fn new(server: &ModelServer) -> io::Result<Self> {
        let dirs = SandboxDirs::new("gemini", ".gemini")?;
        std::fs::write(
            dirs.home().join(".gemini/settings.json"),
            r#"{"security": {"auth": {"selectedType": "gemini-api-key"}}, "general": {"disableAutoUpdate": true}, "privacy": {"usageStatisticsEnabled": false}}"#,
        )?;
        Ok(Self {
            dirs,
            base_url: server.base_url(),
        })
    }

    /// The working directory.
    pub fn cwd(&self) -> &Path {
        self.dirs.cwd()
    }

    /// The complete environment for debussy and the Gemini CLI it starts: PATH from the
    /// test process, everything else fixed.
    pub fn envs(&self) -> Vec<(String, String)> {
        let mut envs = self.dirs.base_envs();
        envs.extend([
            ("GEMINI_API_KEY".to_owned(), "test-offline-dummy".to_owned()),
            ("GOOGLE_GEMINI_BASE_URL".to_owned(), self.base_url.clone()),
            (NO_RELAUNCH_ENV.to_owned(), "true".to_owned()),
        ]);
        envs
    }
}
