//! What each live child is to the person running debussy, so that a stop or a kill can
//! say what it reaches: "killing the agent" is only true while an agent runs.

/// What a child is, as messages about stopping it name it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Role {
    /// An agent's session.
    Agent,
    /// One of the project's git hooks, by name (`pre-commit`), run around a commit.
    Hook(String),
    /// A gate, by name (`tests`): an interrupt kills it.
    Gate(String),
    /// A git command that runs the project's hooks, by its subcommand (`merge`), let
    /// finish as a hook is.
    Git(String),
    /// Anything else: a git query, an MCP server, a notifier.
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
    /// The git commands that run hooks, by subcommand, each once.
    pub git: Vec<String>,
    /// The gates that run, by name, each once.
    pub gates: Vec<String>,
}

impl Busy {
    /// What `roles`, the roles of the children alive, add up to.
    #[must_use]
    pub fn of<'a>(roles: impl IntoIterator<Item = &'a Role>) -> Busy {
        let mut busy = Busy::default();
        for role in roles {
            match role {
                Role::Agent => busy.agent = true,
                Role::Hook(name) => once(&mut busy.hooks, name),
                Role::Git(name) => once(&mut busy.git, name),
                Role::Gate(name) => once(&mut busy.gates, name),
                Role::Other => {}
            }
        }
        busy
    }

    /// Whether something runs that an interrupt lets finish: a git hook, or a git
    /// command that runs hooks.
    #[must_use]
    pub fn finishing(&self) -> bool {
        !self.hooks.is_empty() || !self.git.is_empty()
    }
}

/// Add `name` to `names` unless it is there.
fn once(names: &mut Vec<String>, name: &str) {
    if !names.iter().any(|known| known == name) {
        names.push(name.to_owned());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_names_each_hook_gate_and_git_command_once_and_ignores_the_rest() {
        let roles = [
            Role::Other,
            Role::Hook("pre-commit".into()),
            Role::Hook("pre-commit".into()),
            Role::Hook("commit-msg".into()),
            Role::Gate("tests".into()),
            Role::Gate("tests".into()),
            Role::Git("merge".into()),
        ];
        assert_eq!(
            Busy::of(&roles),
            Busy {
                agent: false,
                hooks: vec!["pre-commit".into(), "commit-msg".into()],
                git: vec!["merge".into()],
                gates: vec!["tests".into()],
            }
        );
        assert!(Busy::of(&[Role::Agent]).agent);
    }
}
