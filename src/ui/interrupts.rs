//! What each Ctrl-C (or SIGTERM, SIGHUP) does, in words, for the plain output and the
//! dashboard alike. The first press stops the agent and pauses the run, the second kills
//! the agent, the third exits at once, killing whatever still runs. A git hook debussy
//! runs around a commit is not the agent: the run pauses once it has finished, and only
//! the third press stops it. So the words depend on what runs at the press ([`Busy`]).

use crate::process::Busy;

/// The line said on the `press`th interrupt (from 1) while `busy` runs.
#[must_use]
pub fn said(press: u8, busy: &Busy) -> String {
    let Some(hooks) = hooks_named(&busy.hooks) else {
        return match (press, busy.agent) {
            (1, _) => "stopping the agent and pausing the run (Ctrl-C again to kill it)".into(),
            (2, _) => "killing the agent (Ctrl-C again to exit at once)".into(),
            (_, true) => "killing the agent and exiting at once".into(),
            (_, false) => "exiting at once".into(),
        };
    };
    let one = busy.hooks.len() == 1;
    let (finishes, runs, it, they) = if one {
        ("finishes", "runs", "it", "it")
    } else {
        ("finish", "run", "them", "they")
    };
    match (press, busy.agent) {
        (1, true) => format!(
            "stopping the agent and pausing the run once {hooks} {finishes} (Ctrl-C again to kill the agent)"
        ),
        (1, false) => format!(
            "letting {hooks} finish, then pausing the run (Ctrl-C twice more to kill {it} and exit at once)"
        ),
        (2, true) => format!(
            "killing the agent; {hooks} still {runs} (Ctrl-C again to kill {it} and exit at once)"
        ),
        (2, false) => format!(
            "{hooks} still {runs}; the run pauses once {they} {finishes} (Ctrl-C again to kill {it} and exit at once)"
        ),
        _ => format!("killing {hooks} and exiting at once"),
    }
}

/// What the dashboard's header says after the `press`th interrupt (1 or 2) while `busy`
/// runs; `None` for a press that ends the dashboard.
#[must_use]
pub fn stage(press: u8, busy: &Busy) -> Option<String> {
    let hooks = hooks_named(&busy.hooks);
    Some(match (press, busy.agent, hooks) {
        (1, _, None) => "stopping the agent, then pausing the run".into(),
        (1, true, Some(hooks)) => {
            format!("stopping the agent, then pausing the run after {hooks}")
        }
        (1, false, Some(hooks)) => format!("letting {hooks} finish, then pausing the run"),
        (2, _, None) => "killing the agent".into(),
        (2, true, Some(hooks)) => format!("killing the agent; waiting for {hooks}"),
        (2, false, Some(hooks)) => format!("waiting for {hooks}, then pausing the run"),
        _ => return None,
    })
}

/// What the next Ctrl-C does after the `press`th (1 or more) while an agent (`agent`)
/// and a git hook (`hook`) run or not, for the dashboard's hint bar: the keys and the
/// action.
#[must_use]
pub fn next_press(press: u8, agent: bool, hook: bool) -> (&'static str, &'static str) {
    match (press, agent, hook) {
        (1, true, _) | (1, false, false) => ("Ctrl-C", "kill the agent"),
        (1, false, true) => ("Ctrl-C twice", "kill the git hook and exit at once"),
        (_, _, true) => ("Ctrl-C", "kill the git hook and exit at once"),
        (_, _, false) => ("Ctrl-C", "exit at once"),
    }
}

/// `the pre-commit hook`, `the pre-commit and commit-msg hooks`; `None` for no hook.
fn hooks_named(hooks: &[String]) -> Option<String> {
    match hooks {
        [] => None,
        [one] => Some(format!("the {one} hook")),
        [rest @ .., last] => Some(format!("the {} and {last} hooks", rest.join(", "))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hook() -> Busy {
        Busy {
            agent: false,
            hooks: vec!["pre-commit".into()],
        }
    }

    #[test]
    fn an_agent_alone_is_stopped_then_killed() {
        let agent = Busy {
            agent: true,
            hooks: Vec::new(),
        };
        assert_eq!(
            said(1, &agent),
            "stopping the agent and pausing the run (Ctrl-C again to kill it)"
        );
        assert_eq!(
            said(2, &agent),
            "killing the agent (Ctrl-C again to exit at once)"
        );
        assert_eq!(said(3, &agent), "killing the agent and exiting at once");
        assert_eq!(stage(2, &agent).as_deref(), Some("killing the agent"));
        assert_eq!(next_press(1, true, false), ("Ctrl-C", "kill the agent"));
    }

    #[test]
    fn a_hook_alone_is_let_finish_and_only_the_third_press_kills_it() {
        let said: Vec<String> = (1..=3).map(|press| said(press, &hook())).collect();
        assert_eq!(
            said,
            [
                "letting the pre-commit hook finish, then pausing the run (Ctrl-C twice more to kill it and exit at once)",
                "the pre-commit hook still runs; the run pauses once it finishes (Ctrl-C again to kill it and exit at once)",
                "killing the pre-commit hook and exiting at once",
            ]
        );
        assert!(said.iter().all(|line| !line.contains("agent")), "{said:?}");
        assert_eq!(
            stage(2, &hook()).as_deref(),
            Some("waiting for the pre-commit hook, then pausing the run")
        );
        assert_eq!(stage(3, &hook()), None);
        assert_eq!(
            next_press(2, false, true),
            ("Ctrl-C", "kill the git hook and exit at once")
        );
    }

    #[test]
    fn an_agent_beside_a_hook_is_killed_while_the_hook_finishes() {
        let both = Busy {
            agent: true,
            hooks: vec!["pre-commit".into(), "commit-msg".into()],
        };
        assert_eq!(
            said(2, &both),
            "killing the agent; the pre-commit and commit-msg hooks still run (Ctrl-C again to kill them and exit at once)"
        );
        assert_eq!(
            said(3, &both),
            "killing the pre-commit and commit-msg hooks and exiting at once"
        );
    }

    #[test]
    fn nothing_running_exits_without_naming_anything() {
        assert_eq!(said(3, &Busy::default()), "exiting at once");
    }
}
