//! Locating a pinned agent CLI that `scripts/test-tools` installs: an override variable,
//! else the project-local install. A test that needs one is `#[ignore]`d, so a plain run
//! reports it as skipped, never as passed; `scripts/check` runs it (`--run-ignored all`),
//! and a missing CLI fails it.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::OnceLock;

/// A CLI the tests run, where to find it, and what looking for it found (once per test
/// process).
#[derive(Debug)]
pub struct Pinned {
    /// Its name in messages (`the Codex CLI`).
    pub name: &'static str,
    /// The variable naming another executable to test against.
    pub override_env: &'static str,
    /// Where `scripts/test-tools` installs it, relative to the crate root.
    pub install_path: &'static str,
    found: OnceLock<Result<PinnedCli, String>>,
}

impl Pinned {
    /// The CLI called `name` in messages, found through `override_env` or at
    /// `install_path`.
    pub const fn new(
        name: &'static str,
        override_env: &'static str,
        install_path: &'static str,
    ) -> Self {
        Pinned {
            name,
            override_env,
            install_path,
            found: OnceLock::new(),
        }
    }

    /// The CLI for a test that needs it; see [`require`].
    pub fn require(&'static self) -> PinnedCli {
        require(self, &self.found)
    }
}

/// A located pinned CLI.
#[derive(Clone, Debug)]
pub struct PinnedCli {
    path: PathBuf,
}

impl PinnedCli {
    /// The executable.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What `--version` prints, e.g. `2.1.330 (Claude Code)`; a CLI that does not answer
    /// fails the test. Asked only by the tests that need it: the Gemini CLI takes a
    /// second of CPU to answer, and every test process would ask it again.
    pub fn version(&self) -> String {
        let output = std::process::Command::new(&self.path)
            .arg("--version")
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|error| {
                panic!("cannot run {} --version: {error}", self.path.display())
            });
        assert!(
            output.status.success(),
            "{} --version failed ({}): {}",
            self.path.display(),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        );
        String::from_utf8_lossy(&output.stdout).trim().to_owned()
    }
}

/// Where to look for the CLI: the override when set and non-empty, else the
/// project-local install under `manifest_dir`.
pub fn candidate(pinned: &Pinned, override_path: Option<OsString>, manifest_dir: &Path) -> PathBuf {
    match override_path {
        Some(path) if !path.is_empty() => PathBuf::from(path),
        _ => manifest_dir.join(pinned.install_path),
    }
}

/// Checks that `path` is there. Whether it runs shows in the tests that run it: the
/// agent tests through debussy's own check of `--version`, which names the program.
pub fn probe(pinned: &Pinned, path: &Path) -> Result<PinnedCli, String> {
    if !path.is_file() {
        return Err(format!(
            "{} is not installed at {} (run scripts/test-tools, or set {})",
            pinned.name,
            path.display(),
            pinned.override_env
        ));
    }
    Ok(PinnedCli {
        path: path.to_owned(),
    })
}

/// The CLI for a test that needs it (looked up once per test process, in
/// `found`). A test that needs it is `#[ignore]`d, so it runs only when asked for
/// (`--run-ignored all`, as `scripts/check` does); a missing CLI then fails it.
pub fn require(pinned: &Pinned, found: &'static OnceLock<Result<PinnedCli, String>>) -> PinnedCli {
    match found
        .get_or_init(|| {
            let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
            let override_path = std::env::var_os(pinned.override_env);
            probe(pinned, &candidate(pinned, override_path, manifest_dir))
        })
        .clone()
    {
        Ok(cli) => cli,
        Err(reason) => missing(pinned.name, &reason),
    }
}

/// Fail a test whose external tool is missing, saying how to install it.
pub fn missing(tool: &str, reason: &str) -> ! {
    panic!(
        "{tool} is required: {reason}. Tests that need an external tool are #[ignore]d and run with `cargo nextest run --run-ignored all` (scripts/check); scripts/test-tools installs what they need"
    )
}
