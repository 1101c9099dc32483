//! A disk that fills up during a run. The project lives on a small tmpfs of its own,
//! mounted in a user and mount namespace (`unshare -Urm`), so the disk really fills (no
//! root, nothing of the machine's touched). The run must pause at once and say why,
//! spend no attempt on it, and one `--resume` must complete it once there is room,
//! with every piece of work committed.

use std::path::Path;

use serde_json::Value;

use super::kit::{notes, work};
use super::witness::{git, in_a_namespace};
use crate::support::project::{Project, story};
use crate::support::scenario::{Scenario, Script, Turn};

/// Phase 1 writes `greeting.txt`, then fills the disk from its Bash tool (the first
/// time only: a marker beside the project says it did), then writes its notes and
/// reports done. Phase 2 writes `farewell.txt`.
fn filling_the_disk() -> Scenario {
    let fill = "test -e ../filled || { : > ../filled; head -c 64M /dev/zero > ../filler; }; true";
    Scenario::new().scripts([
        Script::phase("1")
            .turn(Turn::write(10, "greeting.txt", "hello"))
            .turn(Turn::say("filling the disk").percent(20).bash(fill))
            .turn(Turn::say("still working").percent(30))
            .turn(notes("1"))
            .turn(Turn::done()),
        work("2", "farewell.txt", "goodbye", 0),
    ])
}

/// What [`on_a_disk`] runs on the tmpfs mounted at `$1/disk` with the options `$7`: the
/// project copied there from `$2`, the disk filled to `$5` KiB left when that is given,
/// a run (with `$6`), the disk emptied (`$1/disk/filler` removed), its `status`, a
/// `--resume`, the project copied back out to `$3/after`; then, the disk full again,
/// `status`, a new run and an MCP supervisor. Each step's output and exit code are in
/// `$3`.
const ON_A_SMALL_DISK: &str = r#"
set -u
disk=$1/disk project=$1/disk/p out=$3 debussy=$4 left=$5 extra=$6 options=$7
mkdir -p "$disk" && mount -t tmpfs -o "$options" none "$disk" || exit 90
cp -a "$2" "$project" && cd "$project" || exit 91
if [ -n "$left" ]; then
    free=$(df -k --output=avail "$disk" | tail -n 1)
    head -c $(( (free - left) * 1024 )) /dev/zero > "$disk/filler" || exit 92
fi
"$debussy" run plan/MASTER_PLAN.md --agent sim --output-format json --restart-delay 0 \
    $extra > "$out/first.jsonl" 2> "$out/first.err"
echo $? > "$out/first.code"
rm -rf "$disk/filler"
"$debussy" status --format json > "$out/status.json" 2>&1
"$debussy" run --resume plan/MASTER_PLAN.md --agent sim --output-format json \
    --restart-delay 0 > "$out/resumed.jsonl" 2> "$out/resumed.err"
echo $? > "$out/resumed.code"
cp -a "$project" "$out/after"
head -c 64M /dev/zero > "$disk/filler"
"$debussy" status --format json > "$out/full-status.json" 2> "$out/full-status.err"
echo $? > "$out/full-status.code"
"$debussy" run plan/MASTER_PLAN.md --agent sim > "$out/full-start.out" 2>&1
echo $? > "$out/full-start.code"
"$debussy" mcp supervise -- true < /dev/null > "$out/full-supervise.out" 2>&1
echo $? > "$out/full-supervise.code"
"#;

/// Play [`ON_A_SMALL_DISK`] with `project` in a namespace of its own, on a 16 MiB disk,
/// the disk filled to `left` KiB before the first run when that is given, which runs
/// with `extra`; the scratch directory where its outputs are.
fn in_a_small_disk(project: &Project, left: Option<u32>, extra: &str) -> tempfile::TempDir {
    on_a_disk(project, "size=16m", left, extra)
}

/// [`in_a_small_disk`] on a tmpfs mounted with `options`.
fn on_a_disk(
    project: &Project,
    options: &str,
    left: Option<u32>,
    extra: &str,
) -> tempfile::TempDir {
    let scratch = tempfile::tempdir().expect("tempdir");
    let out = scratch.path().join("out");
    std::fs::create_dir(&out).expect("out");
    let debussy = project.command(&[]);
    let left = left.map(|kib| kib.to_string()).unwrap_or_default();
    in_a_namespace(
        project,
        scratch.path(),
        ON_A_SMALL_DISK,
        &[
            scratch.path().as_os_str(),
            project.root().as_os_str(),
            out.as_os_str(),
            debussy.get_program(),
            left.as_ref(),
            extra.as_ref(),
            options.as_ref(),
        ],
        "fill a disk of its own (a tmpfs)",
    );
    scratch
}

fn read(out: &Path, name: &str) -> String {
    std::fs::read_to_string(out.join(name)).unwrap_or_else(|err| panic!("{name}: {err}"))
}

fn events(out: &Path, name: &str) -> Vec<Value> {
    read(out, name)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|err| panic!("{line}: {err}")))
        .collect()
}

/// The first run's events, once it is checked to have paused for the full disk (exit 1,
/// `paused`, `disk_full`, and so recorded, as `status` says once there is room) when
/// debussy could not do what `doing` starts with; and its error.
fn paused_for_the_disk(out: &Path, doing: &str) -> (Vec<Value>, String) {
    let first = events(out, "first.jsonl");
    let said = story(&first);
    let summary = &first.last().expect("events")["summary"];
    assert_eq!(read(out, "first.code").trim(), "1", "{said}");
    assert_eq!(summary["status"], "paused", "{said}");
    assert_eq!(summary["disk_full"], true, "{said}");
    let error = summary["error"].as_str().unwrap_or_default().to_owned();
    assert!(
        error.starts_with(&format!(
            "paused: the disk is full: debussy could not {doing}"
        )),
        "{error}"
    );
    let status: Value = serde_json::from_str(&read(out, "status.json")).expect("status");
    assert_eq!(status["run"]["status"], "paused", "{status:#}");
    assert_eq!(status["run"]["error"], error, "{status:#}");
    (first, error)
}

/// The project after the resume, once the resume is checked to have completed.
fn completed_on_resume(out: &Path) -> std::path::PathBuf {
    let resumed = events(out, "resumed.jsonl");
    let said = story(&resumed);
    assert_eq!(read(out, "resumed.code").trim(), "0", "{said}");
    assert_eq!(
        resumed.last().expect("events")["summary"]["status"],
        "completed",
        "{said}"
    );
    out.join("after")
}

#[test]
#[ignore = "needs unshare (util-linux) and user namespaces, to fill a disk of its own"]
fn a_full_disk_pauses_the_run_at_once_and_one_resume_completes_it_once_there_is_room() {
    let project = Project::new();
    project.plan(
        &[
            ("1", "N/A", "grep -q hello greeting.txt"),
            ("2", "Phase 1", "grep -q goodbye farewell.txt"),
        ],
        &filling_the_disk(),
    );
    let scratch = in_a_small_disk(&project, None, "");
    let out = scratch.path().join("out");

    let (first, error) = paused_for_the_disk(&out, "record");
    let said = story(&first);
    assert!(
        error.contains("database or disk is full")
            && error.ends_with("Free space on it, then resume the run"),
        "{error}"
    );
    let attempts: Vec<&Value> = first
        .iter()
        .filter(|event| event["event"] == "phase_started")
        .collect();
    assert_eq!(
        attempts.len(),
        1,
        "no attempt spent on the full disk: {said}"
    );
    let gates = first
        .iter()
        .filter(|event| event["event"] == "gate_started");
    assert_eq!(gates.count(), 0, "no gate run on work not recorded: {said}");
    let warned = first
        .iter()
        .filter(|event| {
            event["message"]
                .as_str()
                .is_some_and(|message| message.contains("database or disk is full"))
        })
        .count();
    assert_eq!(warned, 1, "the full disk is said once: {said}");

    // The work the pause left in the tree is recorded as its own, in the room debussy
    // keeps for its last records.
    let status: Value = serde_json::from_str(&read(&out, "status.json")).expect("status");
    let kept = status["run"]["pauses"]["1"]["files"].as_array();
    assert!(
        kept.is_some_and(|files| files.contains(&Value::from("greeting.txt"))),
        "{status:#}"
    );

    let after = completed_on_resume(&out);
    let log = git(&after, &["log", "--format=%s"]);
    assert!(
        log.contains("phase 1 - Phase 1 completed") && log.contains("phase 2 - Phase 2 completed"),
        "{log}"
    );
    assert_eq!(read(&after, "greeting.txt"), "hello");
    assert_eq!(read(&after, "farewell.txt"), "goodbye");
    assert_clean(&after);
}

/// Phase 1 writes `greeting.txt` and its notes, then uses up every inode of the disk
/// from its Bash tool (once: a marker beside the project says it did), so that nothing
/// new can be made there, and reports done; phase 2 writes `farewell.txt`.
fn using_up_the_inodes() -> Scenario {
    let fill = "test -e ../filled || { : > ../filled; mkdir ../filler; i=0; \
        while : > ../filler/$i 2>/dev/null; do i=$((i+1)); done; }; true";
    Scenario::new().scripts([
        Script::phase("1")
            .turn(Turn::write(10, "greeting.txt", "hello"))
            .turn(notes("1"))
            .turn(Turn::say("filling the disk").percent(20).bash(fill))
            .turn(Turn::done()),
        work("2", "farewell.txt", "goodbye", 0),
    ])
}

#[test]
#[ignore = "needs unshare (util-linux) and user namespaces, to fill a disk of its own"]
fn a_disk_with_no_room_for_a_sessions_files_pauses_the_run_without_failing_the_phase() {
    let project = Project::new();
    project.plan(
        &[
            ("1", "N/A", "grep -q hello greeting.txt"),
            ("2", "Phase 1", "grep -q goodbye farewell.txt"),
        ],
        &using_up_the_inodes(),
    );
    // Without commits, nothing is made on the disk between phase 1's end and phase 2's
    // session but the session's own directory and transcript.
    let scratch = on_a_disk(
        &project,
        "size=16m,nr_inodes=2000",
        None,
        "--no-auto-commit",
    );
    let out = scratch.path().join("out");

    let (first, error) = paused_for_the_disk(&out, "start the agent's session");
    let said = story(&first);
    assert!(
        error.contains("No space left on device")
            && error.ends_with("Free space on it, then resume the run"),
        "{error}"
    );
    assert!(
        first
            .iter()
            .all(|event| event["event"] != "attempt_failed" && event["status"] != "failed"),
        "a full disk is not the phase's failure: {said}"
    );

    let resumed = events(&out, "resumed.jsonl");
    let attempts: Vec<&Value> = resumed
        .iter()
        .filter(|event| event["event"] == "phase_started")
        .collect();
    assert_eq!(attempts.len(), 1, "{}", story(&resumed));
    assert_eq!(
        attempts[0]["attempt"],
        1,
        "no attempt spent: {}",
        story(&resumed)
    );
    let after = completed_on_resume(&out);
    assert_eq!(read(&after, "greeting.txt"), "hello");
    assert_eq!(read(&after, "farewell.txt"), "goodbye");
}

/// Nothing is left uncommitted in the checkout at `dir`, nor a merge under way.
fn assert_clean(dir: &Path) {
    let tree = git(dir, &["status", "--porcelain"]);
    assert!(tree.is_empty(), "{tree}");
    assert!(
        !dir.join(".git/MERGE_HEAD").exists(),
        "a merge left under way"
    );
}

#[test]
#[ignore = "needs unshare (util-linux) and user namespaces, to fill a disk of its own"]
fn on_a_full_disk_status_still_reads_and_a_new_run_or_supervisor_is_refused_naming_the_disk() {
    let project = Project::new();
    project.plan(
        &[("1", "N/A", "true"), ("2", "Phase 1", "true")],
        &Scenario::new().scripts([work("1", "a.txt", "a", 0), work("2", "b.txt", "b", 0)]),
    );
    let scratch = in_a_small_disk(&project, None, "");
    let out = scratch.path().join("out");
    assert_eq!(read(&out, "resumed.code").trim(), "0");

    let said = read(&out, "full-status.err");
    assert_eq!(read(&out, "full-status.code").trim(), "0", "{said}");
    let status: Value = serde_json::from_str(&read(&out, "full-status.json")).expect("status");
    assert_eq!(status["run"]["status"], "completed", "{status:#}");

    let said = read(&out, "full-start.out");
    assert_eq!(read(&out, "full-start.code").trim(), "1", "{said}");
    let squashed: String = said
        .chars()
        .filter(|c| !c.is_whitespace() && *c != '│')
        .collect();
    assert!(
        squashed.contains("thediskthatholdsitisfull") && squashed.contains("df-h"),
        "{said}"
    );

    // Not a usage error (2): the command line is right, the disk is full.
    let said = read(&out, "full-supervise.out");
    assert_eq!(read(&out, "full-supervise.code").trim(), "1", "{said}");
    assert!(
        said.contains("No space left on device") && said.contains("df -h"),
        "{said}"
    );
}

#[test]
#[ignore = "needs unshare (util-linux) and user namespaces, to fill a disk of its own"]
fn a_phase_worktree_the_disk_has_no_room_for_pauses_the_run_and_resume_completes_it() {
    let project = Project::new();
    // 2.5 MB that git cannot compress: the project and its objects fill most of the
    // disk, and the 1 MiB left cannot hold a worktree of it.
    let noise: Vec<u8> = (0..2_500_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13).to_le_bytes()[0])
        .collect();
    std::fs::write(project.root().join("big.bin"), noise).expect("big file");
    project.plan(
        &[("1", "N/A", "true"), ("2", "Phase 1", "true")],
        &Scenario::new().scripts([work("1", "a.txt", "a", 0), work("2", "b.txt", "b", 0)]),
    );
    let scratch = in_a_small_disk(&project, Some(1024), "--jobs 2");
    let out = scratch.path().join("out");

    let (_, error) = paused_for_the_disk(&out, "make the phase's worktree");
    assert!(error.contains("unable to write file"), "{error}");

    let after = completed_on_resume(&out);
    assert_eq!(read(&after, "a.txt"), "a");
    assert_eq!(read(&after, "b.txt"), "b");
}

/// The agent's work is 3 MB git cannot compress; then the disk is left with 1 MiB,
/// room for the gates and the records, not for a commit. Once: a resumed session finds
/// the marker.
const BIG_WORK_THEN_FILL: &str = "test -e ../filled || { : > ../filled && \
    head -c 3000000 /dev/urandom > big.bin && \
    free=$(df -k --output=avail .. | tail -n 1) && \
    head -c $(( (free - 1024) * 1024 )) /dev/zero > ../filler; }; true";

/// Phase 1 playing `phase_1` (which does [`BIG_WORK_THEN_FILL`]) then phase 2 writing
/// `b.txt`, on the small disk: the first run must pause because a commit found no room,
/// and the resume must complete with both phases' work committed.
fn a_commit_with_no_room_pauses_and_the_resume_commits(phase_1: impl IntoIterator<Item = Script>) {
    let project = Project::new();
    let scripts: Vec<Script> = phase_1.into_iter().collect();
    project.plan(
        &[("1", "N/A", "test -s big.bin"), ("2", "Phase 1", "true")],
        &Scenario::new()
            .scripts(scripts)
            .script(work("2", "b.txt", "b", 0)),
    );
    let scratch = in_a_small_disk(&project, None, "");
    let out = scratch.path().join("out");

    paused_for_the_disk(&out, "commit the work");

    let after = completed_on_resume(&out);
    assert_eq!(
        git(&after, &["ls-files", "big.bin", "b.txt"]),
        "b.txt\nbig.bin"
    );
    assert_clean(&after);
}

#[test]
#[ignore = "needs unshare (util-linux) and user namespaces, to fill a disk of its own"]
fn completed_work_the_disk_has_no_room_to_commit_pauses_the_run_and_resume_commits_it() {
    a_commit_with_no_room_pauses_and_the_resume_commits([Script::phase("1")
        .turn(
            Turn::say("the big work")
                .percent(10)
                .bash(BIG_WORK_THEN_FILL),
        )
        .turn(notes("1"))
        .turn(Turn::done())]);
}

#[test]
#[ignore = "needs unshare (util-linux) and user namespaces, to fill a disk of its own"]
fn a_checkpoint_the_disk_has_no_room_for_pauses_the_run_and_resume_commits_it() {
    a_commit_with_no_room_pauses_and_the_resume_commits([
        Script::phase("1").restart(0).turns([
            Turn::say("the big work")
                .percent(10)
                .bash(BIG_WORK_THEN_FILL),
            Turn::say("crossing the threshold").percent(90),
            Turn::sleep(10_000),
        ]),
        Script::phase("1").turns([notes("1"), Turn::done()]),
    ]);
}

#[test]
#[ignore = "needs unshare (util-linux) and user namespaces, to fill a disk of its own"]
fn a_merge_the_disk_has_no_room_for_pauses_the_run_and_resume_merges_it() {
    let project = Project::new();
    // Once the phase's work is committed in its worktree, the disk is left with 1 MiB:
    // room for the records, not for the fast-forward that writes big.bin into the
    // user's checkout.
    super::witness::hook(
        project.root(),
        "post-commit",
        "disk=$(git rev-parse --git-common-dir)/../..
test -e \"$disk/filled\" || { : > \"$disk/filled\"
    free=$(df -k --output=avail \"$disk\" | tail -n 1)
    head -c $(( (free - 1024) * 1024 )) /dev/zero > \"$disk/filler\"; }
true",
    );
    let big_work = "test -e big.bin || head -c 3000000 /dev/urandom > big.bin";
    project.plan(
        &[("1", "N/A", "test -s big.bin"), ("2", "Phase 1", "true")],
        &Scenario::new().scripts([
            Script::phase("1")
                .turn(Turn::say("the big work").percent(10).bash(big_work))
                .turn(notes("1"))
                .turn(Turn::done()),
            work("2", "b.txt", "b", 0),
        ]),
    );
    let scratch = in_a_small_disk(&project, None, "--jobs 2");
    let out = scratch.path().join("out");

    paused_for_the_disk(&out, "merge the phase's branch");

    let after = completed_on_resume(&out);
    assert_eq!(read(&after, "b.txt"), "b");
    assert!(after.join("big.bin").exists());
    assert_clean(&after);
}
