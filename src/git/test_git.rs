//! The `git` command for the git layer's tests, which set up and inspect real
//! repositories with the tool users have.

use std::path::{Path, PathBuf};

/// `git args…` in `dir`, which must succeed (with no editor to wait for); its stdout.
pub(crate) fn git(dir: &Path, args: &[&str]) -> String {
    let output = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_EDITOR", "true")
        .output()
        .expect("git");
    assert!(
        output.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}

/// The user's repository at `root` switched to a `feature` branch, with `main` checked
/// out in a linked worktree of its own outside `root`: the directory holding it (removed
/// when dropped) and the worktree's path.
pub(crate) fn main_in_a_worktree_of_its_own(root: &Path) -> (tempfile::TempDir, PathBuf) {
    git(root, &["switch", "-q", "-c", "feature"]);
    let elsewhere = tempfile::tempdir().expect("tempdir");
    let main_tree = elsewhere.path().join("main");
    git(
        root,
        &[
            "worktree",
            "add",
            "-q",
            main_tree.to_str().expect("utf-8"),
            "main",
        ],
    );
    (elsewhere, main_tree)
}

/// A person's `git commit -a` in `dir`, waiting in its editor: git has written
/// `index.lock` and closed it, and renames it over the index when the editor returns.
/// Killed when dropped unfinished.
pub(crate) struct CommitInEditor {
    git: std::process::Child,
    /// Holds the editor script.
    _editor: tempfile::TempDir,
}

impl CommitInEditor {
    /// Start it, and wait until its editor runs.
    pub(crate) fn start(dir: &Path) -> CommitInEditor {
        use std::io::BufRead as _;
        use std::os::unix::fs::PermissionsExt as _;
        use std::process::Stdio;
        let editor = tempfile::tempdir().expect("tempdir");
        let script = editor.path().join("editor");
        std::fs::write(
            &script,
            "#!/bin/sh\necho editing\nread message\necho \"$message\" > \"$1\"\n",
        )
        .expect("editor");
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let mut git = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-a"])
            .current_dir(dir)
            .env("GIT_EDITOR", &script)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("git commit");
        let mut said = String::new();
        std::io::BufReader::new(git.stdout.as_mut().expect("stdout"))
            .read_line(&mut said)
            .expect("read");
        assert_eq!(
            said.trim(),
            "editing",
            "git commit did not reach its editor"
        );
        CommitInEditor {
            git,
            _editor: editor,
        }
    }

    /// The `git commit` process.
    pub(crate) fn pid(&self) -> u32 {
        self.git.id()
    }

    /// Save `message` in the editor; whether the commit then succeeded.
    pub(crate) fn finish(mut self, message: &str) -> bool {
        use std::io::Write as _;
        let mut stdin = self.git.stdin.take().expect("stdin");
        writeln!(stdin, "{message}").expect("answer the editor");
        drop(stdin);
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut self.git.stdout.take().expect("stdout"), &mut rest)
            .expect("read");
        self.git.wait().expect("wait").success()
    }
}

impl Drop for CommitInEditor {
    fn drop(&mut self) {
        if self.git.try_wait().ok().flatten().is_none() {
            let _ = self.git.kill();
            let _ = self.git.wait();
        }
    }
}
