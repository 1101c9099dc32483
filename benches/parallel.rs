//! Phases side by side: how much sooner four independent phases finish with `--jobs 4`
//! than with `--jobs 1`, and what running a phase in a worktree costs (making the
//! worktree, merging its branch, removing both) in a repository of 5,000 files.
//!
//! Run with `cargo bench --bench parallel`. Without `--bench` (as `cargo test` runs it)
//! it does one short round on a small repository, to check that it works.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use debussy::git::GitCli;
use debussy::git::worktree::{self, MergeOutcome, RunBranch, Worktree};

#[path = "common/figures.rs"]
#[expect(
    dead_code,
    reason = "resident memory is not a figure of this benchmark"
)]
mod figures;

fn git(dir: &Path, args: &[&str]) {
    let status = Command::new("git")
        .args(args)
        .current_dir(dir)
        .stdout(std::process::Stdio::null())
        .status()
        .expect("git");
    assert!(status.success(), "git {args:?}");
}

/// What `git ARGS` in `dir` prints, trimmed.
fn git_stdout(dir: &Path, args: &[&str]) -> String {
    let output = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git");
    assert!(output.status.success(), "git {args:?}");
    String::from_utf8(output.stdout)
        .expect("utf-8")
        .trim()
        .to_owned()
}

fn repository() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    git(dir.path(), &["init", "-q"]);
    git(dir.path(), &["config", "user.name", "Bench"]);
    git(dir.path(), &["config", "user.email", "bench@example.com"]);
    dir
}

fn write(root: &Path, relative: &str, text: &str) {
    let path = root.join(relative);
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}

/// Four phases that depend on nothing, each a sim session of `session_ms`.
fn four_phase_project(session_ms: u64) -> tempfile::TempDir {
    let dir = repository();
    let root = dir.path();
    let mut master = String::from(
        "# Bench - Master Plan\n\n## Phases\n\n| Phase | Title | Status |\n|---|---|---|\n",
    );
    let mut scenario = String::from("scripts:\n");
    for id in 1..=4 {
        master.push_str(&format!(
            "| {id} | [Phase {id}](phase-{id}.md) | Pending |\n"
        ));
        write(
            root,
            &format!("plan/phase-{id}.md"),
            &format!(
                "# Phase {id}: Step {id}\n\n**Status:** Pending\n**Depends On:** N/A\n\n## Gates\n- check: `test -f out-{id}.txt` passes\n\n## Tasks\n- [ ] {id}.1: work\n"
            ),
        );
        scenario.push_str(&format!(
            "  - phase: {id}\n    turns:\n      - say: working\n        percent: 10\n        tools:\n          - write: {{path: out-{id}.txt, content: \"{id}\"}}\n      - sleep_ms: {session_ms}\n      - say: done\n        tools: [{{done: completed}}]\n"
        ));
    }
    write(root, "plan/MASTER_PLAN.md", &master);
    write(root, "plan/sim-scenario.yaml", &scenario);
    git(root, &["add", "-A"]);
    git(root, &["commit", "-qm", "plan"]);
    dir
}

/// Wall time of `debussy run` with `--jobs jobs` on a fresh four-phase project.
fn run_with_jobs(jobs: u32, session_ms: u64) -> Duration {
    let project = four_phase_project(session_ms);
    let started = Instant::now();
    let output = Command::new(env!("CARGO_BIN_EXE_debussy"))
        .args([
            "run",
            "plan/MASTER_PLAN.md",
            "--agent",
            "sim",
            "--output-format",
            "json",
            "--restart-delay",
            "0",
            "--jobs",
            &jobs.to_string(),
        ])
        .current_dir(project.path())
        .output()
        .expect("debussy run");
    let took = started.elapsed();
    assert!(
        output.status.success(),
        "debussy run --jobs {jobs} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    for id in 1..=4 {
        assert!(project.path().join(format!("out-{id}.txt")).exists());
    }
    took
}

/// What running phases in worktrees costs, in milliseconds, in a repository of
/// `files`, the way a run does it: the first phase makes a new worktree; each merged
/// phase's worktree is parked and the next phase takes it up on its own branch; the
/// last one is removed when the run ends. Per phase: taking the worktree up, merging
/// the branch (a merge commit, made in the run's merge worktree), parking the worktree.
/// Also: the first, new worktree, the first merge (which makes the merge worktree), and
/// the final removal.
struct Overhead {
    first: f64,
    first_merge: f64,
    take_up: Vec<f64>,
    merge: Vec<f64>,
    park: Vec<f64>,
    removal: f64,
}

fn worktree_overhead(files: usize, phases: usize) -> Overhead {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(worktree_overhead_async(files, phases))
}

async fn worktree_overhead_async(files: usize, phases: usize) -> Overhead {
    let git_cli = GitCli::new(Duration::from_secs(600));
    let dir = repository();
    let root = dir.path();
    for i in 0..files {
        write(
            root,
            &format!("src/module-{}/file-{i}.txt", i % 50),
            &format!("line of file {i}\n"),
        );
    }
    debussy::git::vcs::ignore_run_data(root).expect("ignore run data");
    git(root, &["add", "-A"]);
    git(root, &["commit", "-qm", "files"]);
    let run_branch = git_stdout(root, &["branch", "--show-current"]);
    let ms = |started: Instant| started.elapsed().as_secs_f64() * 1000.0;
    let tip = |root: &Path| git_stdout(root, &["rev-parse", "HEAD"]);
    let mut run = RunBranch {
        name: run_branch.clone(),
        tip: tip(root),
    };
    let place = worktree::merge_place(root, "bench");
    let mut overhead = Overhead {
        first: 0.0,
        first_merge: 0.0,
        take_up: Vec::new(),
        merge: Vec::new(),
        park: Vec::new(),
        removal: 0.0,
    };
    let mut spare: Option<std::path::PathBuf> = None;
    for phase in 0..phases {
        let tree = Worktree::of(root, "bench", &phase.to_string());
        let started = Instant::now();
        match spare.take() {
            Some(parked) => {
                worktree::adopt(&git_cli, root, &parked, &tree, &run_branch)
                    .await
                    .expect("take up");
                overhead.take_up.push(ms(started));
            }
            None => {
                worktree::ensure(&git_cli, root, &tree, &run_branch)
                    .await
                    .expect("worktree");
                overhead.first = ms(started);
            }
        }

        // The phase's work, and another phase's merged meanwhile: not measured.
        write(&tree.path, &format!("phase-{phase}.txt"), "work\n");
        git(&tree.path, &["add", "-A"]);
        git(&tree.path, &["commit", "-qm", "phase work"]);
        write(root, &format!("other-{phase}.txt"), "other\n");
        git(root, &["add", "-A"]);
        git(root, &["commit", "-qm", "other work"]);
        run.tip = tip(root);

        let started = Instant::now();
        let outcome = worktree::merge_into_run(
            &git_cli,
            root,
            &place,
            &mut run,
            &tree.branch,
            "merge",
            false,
        )
        .await
        .expect("merge");
        if phase == 0 {
            overhead.first_merge = ms(started);
        } else {
            overhead.merge.push(ms(started));
        }
        assert!(matches!(
            outcome,
            MergeOutcome::Merged {
                fast_forward: false,
                ..
            }
        ));

        let parked = tree.path.with_file_name(format!(".spare-{phase}"));
        let started = Instant::now();
        worktree::park(&git_cli, root, &tree, &parked)
            .await
            .expect("park");
        overhead.park.push(ms(started));
        spare = Some(parked);
    }
    let started = Instant::now();
    worktree::remove_parked(&git_cli, root, &[spare.expect("a parked worktree"), place])
        .await
        .expect("remove");
    overhead.removal = ms(started);
    overhead
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let full = std::env::args().any(|a| a == "--bench");
    let (session_ms, files, phases) = if full {
        (2_000, 5_000, 10)
    } else {
        (200, 200, 2)
    };

    let one = run_with_jobs(1, session_ms);
    let four = run_with_jobs(4, session_ms);
    println!(
        "four independent phases, sim sessions of {session_ms} ms each:\n  --jobs 1: {:.2} s\n  --jobs 4: {:.2} s\n  speed-up: {:.2}x (goal >= 3.5x)",
        one.as_secs_f64(),
        four.as_secs_f64(),
        one.as_secs_f64() / four.as_secs_f64()
    );

    let mut o = worktree_overhead(files, phases);
    let mut per_phase: Vec<f64> = o
        .take_up
        .iter()
        .zip(&o.merge)
        .zip(&o.park[1..])
        .map(|((a, b), c)| a + b + c)
        .collect();
    println!(
        "per phase in a repository of {files} files ({phases} phases, medians):\n  worktree taken up:  {:.1} ms\n  branch merged:      {:.1} ms\n  worktree parked:    {:.1} ms\n  scheduling cost:    {:.1} ms (p99 {:.1} ms; goal < 150 ms)\nonce per run:\n  first worktree made: {:.1} ms\n  first merge (makes the merge worktree): {:.1} ms\n  last ones removed:   {:.1} ms",
        figures::median(&mut o.take_up),
        figures::median(&mut o.merge),
        figures::median(&mut o.park),
        figures::median(&mut per_phase.clone()),
        figures::Stats::of(&mut per_phase).p99,
        o.first,
        o.first_merge,
        o.removal,
    );
}
