//! Questions about how commits descend from each other, asked of the `git` program.
//!
//! A shallow clone's boundary commits keep the ids of parents it never fetched. Git
//! stops there; libgit2's revision walk does not (it fails on the first missing parent),
//! and in a linked worktree libgit2 does not see the boundary at all. Phases that run
//! side by side work in linked worktrees, and CI checkouts are shallow clones, so these
//! questions go to git.

use std::path::Path;

use git2::Oid;

use super::{GitCli, GitCommandError};

impl GitCli {
    /// The commits reachable from `tips` and from none of `hidden`, children before their
    /// parents. Ids that name no commit here are left out, as if not given.
    ///
    /// # Errors
    /// When git fails or prints something that is not a commit id.
    pub async fn only_in(
        &self,
        dir: &Path,
        tips: &[Oid],
        hidden: &[Oid],
    ) -> Result<Vec<Oid>, GitCommandError> {
        if tips.is_empty() {
            return Ok(Vec::new());
        }
        let tips: Vec<String> = tips.iter().map(Oid::to_string).collect();
        let hidden: Vec<String> = hidden.iter().map(|id| format!("^{id}")).collect();
        let mut args = vec!["rev-list", "--topo-order", "--ignore-missing"];
        args.extend(tips.iter().map(String::as_str));
        args.extend(hidden.iter().map(String::as_str));
        let listed = self.run(dir, &args).await?;
        listed
            .lines()
            .map(|line| {
                Oid::from_str(line).map_err(|_| GitCommandError {
                    command: args.join(" "),
                    message: format!("it printed `{line}` where a commit id belongs"),
                })
            })
            .collect()
    }

    /// Whether `ancestor` is `descendant` or one of its ancestors.
    ///
    /// # Errors
    /// When either is not a commit here, or git fails.
    pub async fn is_ancestor(
        &self,
        dir: &Path,
        ancestor: Oid,
        descendant: Oid,
    ) -> Result<bool, GitCommandError> {
        if ancestor == descendant {
            return Ok(true);
        }
        let (ancestor, descendant) = (ancestor.to_string(), descendant.to_string());
        let answer = self
            .answer(
                dir,
                &["merge-base", "--is-ancestor", &ancestor, &descendant],
            )
            .await?;
        Ok(answer.is_some())
    }

    /// Whether merging `other` into `base` would leave `base`'s tree as it is: every
    /// change `other` made is already in `base` (an amended or rebased commit, work
    /// redone after a reset). A merge that conflicts adds something.
    ///
    /// # Errors
    /// When either is not a commit here, or git fails (`git merge-tree --write-tree`
    /// needs git 2.38).
    pub async fn adds_nothing(
        &self,
        dir: &Path,
        base: Oid,
        other: Oid,
    ) -> Result<bool, GitCommandError> {
        let (base, other) = (base.to_string(), other.to_string());
        let merged = self
            .answer(
                dir,
                &["merge-tree", "--write-tree", "--no-messages", &base, &other],
            )
            .await?;
        let Some(merged) = merged else {
            return Ok(false);
        };
        let tree = self
            .run(dir, &["rev-parse", "--verify", &format!("{base}^{{tree}}")])
            .await?;
        Ok(merged.lines().next() == Some(tree.as_str()))
    }
}
