//! What each Ctrl-C (or SIGTERM, SIGHUP) does, in words, for the plain output and the
//! dashboard alike. The first press stops the agent (if one runs) and pauses the run, the second kills
//! the agent, the third exits at once, killing whatever still runs. A gate is killed at
//! the first press, its verdict no longer wanted. A git hook debussy runs around a commit,
//! or a `git merge` that runs the project's hooks, is not the agent: the run pauses once
//! it has finished, and only the third press stops it. So the words depend on what runs
//! at the press ([`Busy`]).

use crate::process::Busy;

/// The line said on the `press`th interrupt (from 1) while `busy` runs.
#[must_use]
pub fn said(press: u8, busy: &Busy) -> String {
    let gates = gates_named(&busy.gates);
    let Some(waits) = waits_named(busy) else {
        return match (press, busy.agent, gates) {
            (1, true, Some(gates)) => format!(
                "stopping the agent, killing {gates} and pausing the run (Ctrl-C again to kill the agent)"
            ),
            (1, false, Some(gates)) => {
                format!("killing {gates} and pausing the run (Ctrl-C twice more to exit at once)")
            }
            (1, true, None) => {
                "stopping the agent and pausing the run (Ctrl-C again to kill it)".into()
            }
            // Between sessions (a restart's delay, a usage limit's wait): nothing to stop.
            (1, false, None) => "pausing the run (Ctrl-C twice more to exit at once)".into(),
            (2, true, None) => "killing the agent (Ctrl-C again to exit at once)".into(),
            (2, true, Some(gates)) => {
                format!("killing the agent and {gates} (Ctrl-C again to exit at once)")
            }
            (2, false, Some(gates)) => format!("killing {gates} (Ctrl-C again to exit at once)"),
            (2, false, None) => "the run is pausing (Ctrl-C again to exit at once)".into(),
            (_, true, None) => "killing the agent and exiting at once".into(),
            (_, true, Some(gates)) => format!("killing the agent and {gates} and exiting at once"),
            (_, false, Some(gates)) => format!("killing {gates} and exiting at once"),
            (_, false, None) => "exiting at once".into(),
        };
    };
    let one = busy.hooks.len() + busy.git.len() == 1;
    let (finishes, runs, it, they) = if one {
        ("finishes", "runs", "it", "it")
    } else {
        ("finish", "run", "them", "they")
    };
    let killing = gates
        .as_ref()
        .map(|gates| format!("killing {gates}; "))
        .unwrap_or_default();
    match (press, busy.agent) {
        (1, true) => format!(
            "{killing}stopping the agent and pausing the run once {waits} {finishes} (Ctrl-C again to kill the agent)"
        ),
        (1, false) => format!(
            "{killing}letting {waits} finish, then pausing the run (Ctrl-C twice more to kill {it} and exit at once)"
        ),
        (2, true) => format!(
            "{killing}killing the agent; {waits} still {runs} (Ctrl-C again to kill {it} and exit at once)"
        ),
        (2, false) => format!(
            "{killing}{waits} still {runs}; the run pauses once {they} {finishes} (Ctrl-C again to kill {it} and exit at once)"
        ),
        _ => match gates {
            Some(gates) => format!("killing {gates} and {waits} and exiting at once"),
            None => format!("killing {waits} and exiting at once"),
        },
    }
}

/// What the dashboard's header says after the `press`th interrupt (1 or 2) while `busy`
/// runs; `None` for a press that ends the dashboard.
#[must_use]
pub fn stage(press: u8, busy: &Busy) -> Option<String> {
    let waits = waits_named(busy);
    let gates = gates_named(&busy.gates);
    Some(match (press, busy.agent, waits, gates) {
        (1, true, None, Some(gates)) => {
            format!("stopping the agent and killing {gates}, then pausing the run")
        }
        (1, false, None, Some(gates)) => format!("killing {gates}, then pausing the run"),
        (1, true, None, None) => "stopping the agent, then pausing the run".into(),
        (1, false, None, None) => "pausing the run".into(),
        (1, true, Some(waits), _) => {
            format!("stopping the agent, then pausing the run after {waits}")
        }
        (1, false, Some(waits), _) => format!("letting {waits} finish, then pausing the run"),
        (2, true, None, Some(gates)) => format!("killing the agent and {gates}"),
        (2, false, None, Some(gates)) => format!("killing {gates}"),
        (2, true, None, None) => "killing the agent".into(),
        (2, false, None, None) => "pausing the run".into(),
        (2, true, Some(waits), _) => format!("killing the agent; waiting for {waits}"),
        (2, false, Some(waits), _) => format!("waiting for {waits}, then pausing the run"),
        _ => return None,
    })
}

/// What the next Ctrl-C does after the `press`th (1 or more) while an agent (`agent`),
/// something let finish (`finishing`: a git hook or a git command running hooks) and a
/// gate (`gate`) run or not, for the dashboard's hint bar: the keys and the action.
#[must_use]
pub fn next_press(
    press: u8,
    agent: bool,
    finishing: bool,
    gate: bool,
) -> (&'static str, &'static str) {
    match (press, agent, finishing, gate) {
        (1, true, _, _) => ("Ctrl-C", "kill the agent"),
        (1, false, true, _) => ("Ctrl-C twice", "kill the git hook and exit at once"),
        (1, false, false, _) => ("Ctrl-C twice", "exit at once"),
        (_, _, true, _) => ("Ctrl-C", "kill the git hook and exit at once"),
        (_, _, false, _) => ("Ctrl-C", "exit at once"),
    }
}

/// `the pre-commit hook`, `the pre-commit and commit-msg hooks`, `` `git merge` ``, all
/// of them listed; `None` for none.
fn waits_named(busy: &Busy) -> Option<String> {
    let hooks = match busy.hooks.as_slice() {
        [] => None,
        [one] => Some(format!("the {one} hook")),
        [rest @ .., last] => Some(format!("the {} and {last} hooks", rest.join(", "))),
    };
    let git = busy.git.iter().map(|command| format!("`git {command}`"));
    let all: Vec<String> = hooks.into_iter().chain(git).collect();
    listed(&all)
}

/// `` the gate `tests` ``, `` the gates `lint` and `tests` ``; `None` for none.
fn gates_named(gates: &[String]) -> Option<String> {
    let named: Vec<String> = gates.iter().map(|gate| format!("`{gate}`")).collect();
    let plural = if gates.len() == 1 { "gate" } else { "gates" };
    listed(&named).map(|names| format!("the {plural} {names}"))
}

/// `a`, `a and b`, `a, b and c`; `None` for nothing.
fn listed(items: &[String]) -> Option<String> {
    match items {
        [] => None,
        [one] => Some(one.clone()),
        [rest @ .., last] => Some(format!("{} and {last}", rest.join(", "))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hook() -> Busy {
        Busy {
            agent: false,
            hooks: vec!["pre-commit".into()],
            ..Busy::default()
        }
    }

    #[test]
    fn an_agent_alone_is_stopped_then_killed() {
        let agent = Busy {
            agent: true,
            ..Busy::default()
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
        assert_eq!(
            next_press(1, true, false, false),
            ("Ctrl-C", "kill the agent")
        );
    }

    #[test]
    fn between_sessions_the_run_pauses_and_no_agent_is_named() {
        let idle = Busy::default();
        let said: Vec<String> = (1..=3).map(|press| said(press, &idle)).collect();
        assert_eq!(
            said,
            [
                "pausing the run (Ctrl-C twice more to exit at once)",
                "the run is pausing (Ctrl-C again to exit at once)",
                "exiting at once",
            ]
        );
        assert_eq!(stage(1, &idle).as_deref(), Some("pausing the run"));
        assert_eq!(
            next_press(1, false, false, false),
            ("Ctrl-C twice", "exit at once")
        );
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
            next_press(2, false, true, false),
            ("Ctrl-C", "kill the git hook and exit at once")
        );
    }

    #[test]
    fn an_agent_beside_a_hook_is_killed_while_the_hook_finishes() {
        let both = Busy {
            agent: true,
            hooks: vec!["pre-commit".into(), "commit-msg".into()],
            ..Busy::default()
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
    fn a_gate_is_killed_at_the_first_press_and_the_agent_never_named() {
        let gate = Busy {
            gates: vec!["tests".into()],
            ..Busy::default()
        };
        assert_eq!(
            said(1, &gate),
            "killing the gate `tests` and pausing the run (Ctrl-C twice more to exit at once)"
        );
        assert_eq!(
            said(2, &Busy::default()),
            "the run is pausing (Ctrl-C again to exit at once)"
        );
        assert_eq!(
            stage(1, &gate).as_deref(),
            Some("killing the gate `tests`, then pausing the run")
        );
        assert_eq!(
            next_press(1, false, false, true),
            ("Ctrl-C twice", "exit at once")
        );
    }

    #[test]
    fn a_merge_running_hooks_is_let_finish() {
        let merge = Busy {
            git: vec!["merge".into()],
            ..Busy::default()
        };
        assert_eq!(
            said(1, &merge),
            "letting `git merge` finish, then pausing the run (Ctrl-C twice more to kill it and exit at once)"
        );
        assert_eq!(said(3, &merge), "killing `git merge` and exiting at once");
    }

    #[test]
    fn nothing_running_exits_without_naming_anything() {
        assert_eq!(said(3, &Busy::default()), "exiting at once");
    }
}
