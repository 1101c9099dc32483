//! What each live child is to the person running debussy, so that a stop or a kill can
//! say what it reaches: "killing the agent" is only true while an agent runs.

/// What a child is, as messages about stopping it name it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Role {
    /// An agent's session.
    Agent,
    /// One of the project's git hooks, by name (`pre-commit`), run around a commit.
    Hook(String),
    /// Anything else: a gate, git itself, an MCP server, a notifier.
    #[default]
    Other,
}

/// What runs now, of what a Ctrl-C's words need to know.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Busy {
    /// An agent session runs.
    pub agent: bool,
    /// The git hooks that run, by name, each once.
    pub hooks: Vec<String>,
}

impl Busy {
    /// What `roles`, the roles of the children alive, add up to.
    #[must_use]
    pub fn of<'a>(roles: impl IntoIterator<Item = &'a Role>) -> Busy {
        let mut busy = Busy::default();
        for role in roles {
            match role {
                Role::Agent => busy.agent = true,
                Role::Hook(name) if !busy.hooks.contains(name) => busy.hooks.push(name.clone()),
                Role::Hook(_) | Role::Other => {}
            }
        }
        busy
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_names_each_hook_once_and_ignores_the_rest() {
        let roles = [
            Role::Other,
            Role::Hook("pre-commit".into()),
            Role::Hook("pre-commit".into()),
            Role::Hook("commit-msg".into()),
        ];
        assert_eq!(
            Busy::of(&roles),
            Busy {
                agent: false,
                hooks: vec!["pre-commit".into(), "commit-msg".into()],
            }
        );
        assert!(Busy::of(&[Role::Agent]).agent);
    }
}
