//! Locating the real Codex CLI and giving it an isolated home pointed at the scripted
//! model server's Responses API.
//!
//! [`require`] finds the pinned `codex` (installed by `scripts/test-tools` into
//! `.tools/npm`, or named by `DEBUSSY_TEST_CODEX`); a test that needs it is `#[ignore]`d
//! (run with `--run-ignored all`) and fails when it is missing. [`Sandbox`] is a temp dir
//! with an isolated HOME whose `~/.codex/config.toml` names the server as the model
//! provider: debussy links that file into each session's private `CODEX_HOME`, so the
//! tests go through the same path as a user's own configuration.

use std::io;
use std::path::Path;

use super::cli::{Pinned, PinnedCli};
use super::model_server::ModelServer;
use super::sandbox::SandboxDirs;

/// Environment variable naming the `codex` executable to test against.
pub const CODEX_OVERRIDE_ENV: &str = "DEBUSSY_TEST_CODEX";

/// Where `scripts/test-tools` installs the CLI, relative to the crate root.
pub const CODEX_INSTALL_PATH: &str = ".tools/npm/node_modules/.bin/codex";

/// The model the tests ask for: one Codex knows, so it offers its usual tools.
pub const DEFAULT_MODEL: &str = "gpt-5.5";

/// The variable holding the (dummy) key for the scripted provider.
const KEY_ENV: &str = "DEBUSSY_TEST_OPENAI_KEY";

/// The CLI for a test that needs it; see [`super::cli::require`] for what happens when
/// it is missing.
pub fn require() -> PinnedCli {
    static PINNED: Pinned = Pinned::new("the Codex CLI", CODEX_OVERRIDE_ENV, CODEX_INSTALL_PATH);
    PINNED.require()
}

/// An isolated HOME (with `~/.codex/config.toml`), TMPDIR and working directory inside
/// one temp dir, removed on drop.
#[derive(Debug)]
pub struct Sandbox {
    dirs: SandboxDirs,
}

impl Sandbox {
    /// The directories, and a Codex configuration whose model provider is `server`.
    pub fn new(server: &ModelServer) -> io::Result<Self> {
        let dirs = SandboxDirs::new("codex", ".codex")?;
        std::fs::write(
            dirs.home().join(".codex/config.toml"),
            format!(
                "model_provider = \"scripted\"\n\
                 check_for_update_on_startup = false\n\n\
                 [model_providers.scripted]\n\
                 name = \"scripted\"\n\
                 base_url = \"{}/v1\"\n\
                 wire_api = \"responses\"\n\
                 env_key = \"{KEY_ENV}\"\n\
                 request_max_retries = 0\n\
                 stream_max_retries = 0\n",
                server.base_url()
            ),
        )?;
        Ok(Self { dirs })
    }

    /// The working directory.
    pub fn cwd(&self) -> &Path {
        self.dirs.cwd()
    }

    /// The complete environment for debussy and the Codex it starts: PATH from the test
    /// process, everything else fixed, so the developer's own Codex settings and keys
    /// never leak in.
    pub fn envs(&self) -> Vec<(String, String)> {
        let mut envs = self.dirs.base_envs();
        envs.extend([(KEY_ENV.to_owned(), "sk-test-offline-dummy".to_owned())]);
        envs
    }
}
