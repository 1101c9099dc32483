//! The commands that finish by hand a merge debussy could not, ready to paste: every path
//! and name quoted for the shell, so a project in `~/My Projects` works as printed.

use std::path::Path;

use crate::process::shell_quote;

use super::Worktree;

/// The commands that merge `worktree`'s branch into `run_branch` by hand, clean up, and
/// go on with `resume` (a command line whose words are quoted already) in `root`. The
/// merge is made in `checkout`, the linked worktree that has `run_branch` checked out,
/// when there is one (git switches no other tree to that branch); else in `root`.
#[must_use]
pub fn finish_by_hand(
    root: &Path,
    checkout: Option<&Path>,
    worktree: &Worktree,
    run_branch: &str,
    resume: &str,
) -> String {
    let quoted = |path: &Path| shell_quote(&path.to_string_lossy());
    let branch = shell_quote(&worktree.branch);
    let same = |a: &Path, b: &Path| {
        a.canonicalize()
            .ok()
            .zip(b.canonicalize().ok())
            .is_some_and(|(a, b)| a == b)
            || a == b
    };
    if let Some(tree) = checkout.filter(|tree| !same(tree, root)) {
        return format!(
            "cd {tree}\n  git merge {branch}\n  # resolve the conflicts, `git add` the files, then:\n  git commit --no-edit\n  git worktree remove {path}\n  git branch -d {branch}\n  cd {root}\n  {resume}",
            tree = quoted(tree),
            path = quoted(&worktree.path),
            root = quoted(root),
        );
    }
    format!(
        "cd {root}\n  git switch {run}\n  git merge {branch}\n  # resolve the conflicts, `git add` the files, then:\n  git commit --no-edit\n  git worktree remove {path}\n  git branch -d {branch}\n  {resume}",
        root = quoted(root),
        run = shell_quote(run_branch),
        path = quoted(&worktree.path),
    )
}

/// `debussy run PLAN --resume`, the plan's path quoted.
#[must_use]
pub fn resume_command(plan: &Path) -> String {
    format!(
        "debussy run {} --resume",
        shell_quote(&plan.to_string_lossy())
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_with_spaces_and_quotes_are_quoted_for_the_shell() {
        let root = Path::new("/home/me/My Projects/it's");
        let worktree = Worktree::of(root, "r1", "3");
        let text = finish_by_hand(
            root,
            Some(root),
            &worktree,
            "main",
            &resume_command(Path::new("/home/me/My Projects/it's/plan/MASTER PLAN.md")),
        );
        assert!(
            text.starts_with("cd '/home/me/My Projects/it'\\''s'\n"),
            "{text}"
        );
        assert!(
            text.contains(
                "git worktree remove '/home/me/My Projects/it'\\''s/.debussy/worktrees/r1/3'"
            ),
            "{text}"
        );
        assert!(text.contains("git merge debussy/r1/phase-3\n"), "{text}");
        assert!(
            text.ends_with(
                "debussy run '/home/me/My Projects/it'\\''s/plan/MASTER PLAN.md' --resume"
            ),
            "{text}"
        );
        // Each line, run by a shell, gets its words back as they were.
        for line in text
            .lines()
            .filter(|l| l.trim_start().starts_with("git worktree"))
        {
            let words = shell_words(line.trim());
            assert_eq!(
                words.last().map(String::as_str),
                Some(worktree.path.to_str().expect("utf-8"))
            );
        }
    }

    #[test]
    fn a_run_branch_checked_out_in_a_linked_worktree_is_merged_there() {
        let root = Path::new("/home/me/it");
        let worktree = Worktree::of(root, "r1", "3");
        let text = finish_by_hand(
            root,
            Some(Path::new("/home/me/it main")),
            &worktree,
            "main",
            "debussy run plan --resume",
        );
        let lines: Vec<&str> = text.lines().map(str::trim).collect();
        assert_eq!(lines[0], "cd '/home/me/it main'");
        assert_eq!(
            lines[1], "git merge debussy/r1/phase-3",
            "no switch: it is on main"
        );
        assert_eq!(
            lines[lines.len() - 2..],
            ["cd /home/me/it", "debussy run plan --resume"]
        );
    }

    /// Split a line as `sh` would (only what `shell_quote` produces: plain words and
    /// single-quoted parts).
    fn shell_words(line: &str) -> Vec<String> {
        let output = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!(
                "for w in {}; do printf '%s\\n' \"$w\"; done",
                line.trim_start_matches("git worktree remove ")
            ))
            .output()
            .expect("sh");
        String::from_utf8_lossy(&output.stdout)
            .lines()
            .map(str::to_owned)
            .collect()
    }
}
