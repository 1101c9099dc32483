//! debussy never writes through a link committed where it keeps its own files: a
//! repository that tracks `.debussy/runs/run.lock` (or `.debussy/runs`, `.debussy/logs`,
//! `.debussy/worktrees`, `.debussy/state.db`, `.debussy` itself) as a symbolic link to a
//! file or directory outside gets a refusal naming the link, and the outside is left as
//! it was.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::support::project::{Project, sim_run_args, wait_exit};
use crate::support::scenario::{Scenario, Script, Turn};

/// A one-phase plan the sim agent completes.
fn simple_plan(project: &Project) {
    project.plan(
        &[("1", "N/A", "true")],
        &Scenario::new().script(Script::phase("1").turns([Turn::notes("1"), Turn::done()])),
    );
}

/// A fresh clone of `project` (links come out of git as links).
fn clone_of(project: &Project) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let status = Command::new("git")
        .args(["clone", "--quiet"])
        .arg(project.root())
        .arg(dir.path().join("clone"))
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .status()
        .expect("git clone");
    assert!(status.success());
    for (key, value) in [("user.name", "Test"), ("user.email", "test@example.com")] {
        let status = Command::new("git")
            .args(["config", key, value])
            .current_dir(dir.path().join("clone"))
            .status()
            .expect("git config");
        assert!(status.success());
    }
    dir
}

/// `debussy run` in `root` with the sim agent, bounded: its exit code and stderr.
fn run_in(root: &Path) -> (i32, String) {
    let mut child = crate::support::debussy(
        root,
        &sim_run_args("plan/MASTER_PLAN.md", &["--no-interactive"]),
    )
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::piped())
    .spawn()
    .expect("spawn");
    let stderr = child.stderr.take().expect("stderr");
    let reader = std::thread::spawn(move || std::io::read_to_string(stderr).unwrap_or_default());
    let code = wait_exit(&mut child, Duration::from_secs(60));
    (code, reader.join().expect("stderr"))
}

/// Every entry below `dir`, to compare before and after.
fn listing(dir: &Path) -> Vec<String> {
    let mut all: Vec<String> = walk(dir)
        .into_iter()
        .map(|path| path.strip_prefix(dir).expect("below").display().to_string())
        .collect();
    all.sort();
    all
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).expect("read dir").flatten() {
        let path = entry.path();
        if path.is_dir() && !path.is_symlink() {
            found.extend(walk(&path));
        }
        found.push(path);
    }
    found
}

#[test]
fn a_tracked_run_lock_link_in_a_fresh_clone_does_not_overwrite_its_target() {
    let outside = tempfile::tempdir().expect("outside");
    let precious = outside.path().join("precious.txt");
    std::fs::write(&precious, "keep me\n").expect("write");
    let project = Project::new();
    simple_plan(&project);
    std::fs::create_dir_all(project.root().join(".debussy/runs")).expect("mkdir");
    std::os::unix::fs::symlink(&precious, project.root().join(".debussy/runs/run.lock"))
        .expect("link");
    // `runs/` is ignored by the ignore file debussy writes; a repository can still force it.
    let status = Command::new("git")
        .args(["add", "-f", ".debussy/runs/run.lock"])
        .current_dir(project.root())
        .status()
        .expect("git add");
    assert!(status.success());
    project.commit_all("track a lock link");
    let clone = clone_of(&project);
    let root = clone.path().join("clone");
    assert!(
        root.join(".debussy/runs/run.lock").is_symlink(),
        "the clone has the link"
    );

    // Tracked run data is refused first, with the command that untracks it; the link
    // stays in the tree once it is followed, and is refused in turn.
    let (code, stderr) = run_in(&root);
    assert_eq!(
        std::fs::read_to_string(&precious).expect("read"),
        "keep me\n",
        "the link's target was written: {stderr}"
    );
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("run data is tracked by git: .debussy/runs"),
        "{stderr}"
    );
    for args in [
        &["rm", "-r", "-q", "--cached", "--", ".debussy/runs"][..],
        &["commit", "-q", "-m", "untrack the run data"],
    ] {
        let status = Command::new("git")
            .args(args)
            .current_dir(&root)
            .status()
            .expect("git");
        assert!(status.success(), "git {args:?}");
    }
    let (code, stderr) = run_in(&root);
    assert_eq!(
        std::fs::read_to_string(&precious).expect("read"),
        "keep me\n",
        "the link's target was written: {stderr}"
    );
    assert_ne!(code, 0, "{stderr}");
    assert!(
        stderr.contains("run.lock") && stderr.contains("symbolic link"),
        "{stderr}"
    );
}

#[test]
fn links_where_debussy_keeps_its_directories_and_database_are_refused() {
    for (link, target_is_dir) in [
        (".debussy", true),
        (".debussy/runs", true),
        (".debussy/logs", true),
        (".debussy/worktrees", true),
        (".debussy/state.db", false),
    ] {
        let outside = tempfile::tempdir().expect("outside");
        let target = outside.path().join("target");
        if target_is_dir {
            std::fs::create_dir(&target).expect("mkdir");
            std::fs::write(target.join("keep.txt"), "keep me\n").expect("write");
        } else {
            std::fs::write(&target, "keep me\n").expect("write");
        }
        let before = listing(outside.path());
        let project = Project::new();
        simple_plan(&project);
        let path = project.root().join(link);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::os::unix::fs::symlink(&target, &path).expect("link");

        let (code, stderr) = run_in(project.root());
        assert_eq!(listing(outside.path()), before, "{link}: {stderr}");
        if !target_is_dir {
            assert_eq!(std::fs::read_to_string(&target).expect("read"), "keep me\n");
        }
        assert_ne!(code, 0, "{link}: {stderr}");
        assert!(stderr.contains("symbolic link"), "{link}: {stderr}");
    }
}
