//! Whether Claude Code will run debussy's hooks: the `PreCompact` hook that turns the
//! agent's own compaction into a checkpoint restart (see `session::guard`). Claude Code
//! runs none of a session's `--settings` hooks when its settings or its environment turn
//! hooks off, and a `--settings` of the user's in `agent.args` replaces debussy's. The
//! session still restarts after such a compaction, but the agent's summary has replaced
//! its context by then; the check says so before the run rather than after.
//!
//! The rules are Claude Code's: `disableAllHooks` in the user, project and local files
//! counts as Claude Code merges them (a later file's value wins), and `CLAUDE_CODE_SIMPLE`
//! and `CLAUDE_CODE_SAFE_MODE` run without hooks (each seen with the pinned 2.1.332);
//! `disableAllHooks: true` in the managed settings, or `allowManagedHooksOnly: true`
//! there, runs no hook of a session's (as Claude Code's hook loader reads them; the
//! machine's managed file is not written in tests).

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{Check, Target};
use crate::agent::AgentCommand;
use crate::config::ContextLimit;

/// Where Claude Code reads the machine's managed settings on Linux.
const MANAGED_SETTINGS: &str = "/etc/claude-code/managed-settings.json";

/// The variables that start Claude Code without hooks.
const NO_HOOKS_ENV: [&str; 2] = ["CLAUDE_CODE_SIMPLE", "CLAUDE_CODE_SAFE_MODE"];

/// The hooks check for a Claude Code session run as `command`: a warning when Claude Code
/// will not run debussy's hooks, nothing otherwise (or when no session restarts for its
/// context, so the guard has nothing to do).
pub(super) fn hooks_check(target: Target<'_>, command: &AgentCommand) -> Option<Check> {
    if target.loaded.config.context_threshold == ContextLimit::Off {
        return None;
    }
    let env = |name: &str| agent_env(command, name);
    let config_dir = env("CLAUDE_CONFIG_DIR")
        .map(PathBuf::from)
        .or_else(|| env("HOME").map(|home| Path::new(&home).join(".claude")))?;
    let root = &target.loaded.project_root;
    let files = SettingsFiles {
        managed: read(Path::new(MANAGED_SETTINGS)),
        merged: [
            config_dir.join("settings.json"),
            root.join(".claude/settings.json"),
            root.join(".claude/settings.local.json"),
        ]
        .into_iter()
        .filter_map(|path| read(&path))
        .collect(),
    };
    let off = hooks_off(&files, &env, replaces_own_settings(&command.args))?;
    Some(Check::warn("hooks", off.detail(), off.fix()))
}

/// A variable as the agent gets it: its profile's `env` replaces debussy's own.
fn agent_env(command: &AgentCommand, name: &str) -> Option<String> {
    command
        .env
        .get(name)
        .cloned()
        .or_else(|| std::env::var(name).ok())
}

/// One settings file Claude Code reads, parsed.
#[derive(Debug)]
struct SettingsFile {
    path: PathBuf,
    settings: Value,
}

/// A settings file, when it is there and is JSON: one Claude Code cannot parse is its to
/// report.
fn read(path: &Path) -> Option<SettingsFile> {
    let text = crate::files::read_text_limited(path, crate::files::CONFIG_LIMIT).ok()?;
    let settings = serde_json::from_str(&text).ok()?;
    Some(SettingsFile {
        path: path.to_path_buf(),
        settings,
    })
}

/// The settings files that decide whether hooks run.
#[derive(Debug, Default)]
struct SettingsFiles {
    /// The machine's managed settings, which no other file overrides.
    managed: Option<SettingsFile>,
    /// The user, project and local files, in the order Claude Code merges them.
    merged: Vec<SettingsFile>,
}

/// Why Claude Code will not run debussy's hooks.
#[derive(Debug, PartialEq, Eq)]
enum HooksOff {
    /// A key of the managed settings.
    Managed { path: PathBuf, key: &'static str },
    /// `disableAllHooks: true` in a user, project or local file.
    Disabled { path: PathBuf },
    /// A variable that starts Claude Code without hooks.
    Env { name: &'static str },
    /// A `--settings` in `agent.args`, which replaces debussy's.
    OwnSettings,
}

impl HooksOff {
    fn detail(&self) -> String {
        let why = match self {
            HooksOff::Managed { path, key } => format!("`{key}: true` in {}", path.display()),
            HooksOff::Disabled { path } => format!("`disableAllHooks: true` in {}", path.display()),
            HooksOff::Env { name } => format!("{name} is set in the agent's environment"),
            HooksOff::OwnSettings => {
                "a `--settings` in `agents.claude.args` replaces debussy's".to_owned()
            }
        };
        format!("Claude Code will not run debussy's PreCompact hook: {why}")
    }

    fn fix(&self) -> String {
        let remedy = match self {
            HooksOff::Managed { path, .. } => format!(
                "the machine's managed settings decide this: ask whoever manages {}",
                path.display()
            ),
            HooksOff::Disabled { .. } => "remove the key".to_owned(),
            HooksOff::Env { name } => format!("unset {name}"),
            HooksOff::OwnSettings => {
                "pass your settings another way (a settings file of the project's)".to_owned()
            }
        };
        format!(
            "{remedy} (without the hook, a turn that carries the context past Claude Code's \
             own compaction point is summarised by the agent before debussy can restart the \
             session)"
        )
    }
}

/// Whether hooks are off, and why: the managed settings first, as Claude Code reads them.
fn hooks_off(
    files: &SettingsFiles,
    env: &dyn Fn(&str) -> Option<String>,
    own_settings_replaced: bool,
) -> Option<HooksOff> {
    if let Some(managed) = &files.managed {
        for key in ["disableAllHooks", "allowManagedHooksOnly"] {
            if managed.settings.get(key) == Some(&Value::Bool(true)) {
                return Some(HooksOff::Managed {
                    path: managed.path.clone(),
                    key,
                });
            }
        }
    }
    let deciding = files
        .merged
        .iter()
        .rev()
        .find(|file| file.settings.get("disableAllHooks").is_some());
    if let Some(file) = deciding
        && file.settings.get("disableAllHooks") == Some(&Value::Bool(true))
    {
        return Some(HooksOff::Disabled {
            path: file.path.clone(),
        });
    }
    if let Some(name) = NO_HOOKS_ENV
        .into_iter()
        .find(|name| env(name).is_some_and(|value| truthy(&value)))
    {
        return Some(HooksOff::Env { name });
    }
    own_settings_replaced.then_some(HooksOff::OwnSettings)
}

/// A variable's value as Claude Code reads a switch.
fn truthy(value: &str) -> bool {
    ["1", "true", "yes", "on"]
        .iter()
        .any(|word| value.trim().eq_ignore_ascii_case(word))
}

/// Whether the session's arguments name `--settings` twice: debussy's own, then the
/// user's from `agent.args`, which Claude Code takes instead.
fn replaces_own_settings(args: &[String]) -> bool {
    args.iter()
        .filter(|arg| *arg == "--settings" || arg.starts_with("--settings="))
        .count()
        > 1
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn file(path: &str, settings: Value) -> SettingsFile {
        SettingsFile {
            path: PathBuf::from(path),
            settings,
        }
    }

    fn no_env(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn hooks_run_unless_something_turns_them_off() {
        assert_eq!(hooks_off(&SettingsFiles::default(), &no_env, false), None);
        let files = SettingsFiles {
            managed: Some(file("/m.json", json!({"disableAllHooks": false}))),
            merged: vec![file("/u.json", json!({"hooks": {}}))],
        };
        assert_eq!(hooks_off(&files, &no_env, false), None);
    }

    #[test]
    fn the_managed_settings_turn_them_off_with_either_key() {
        for key in ["disableAllHooks", "allowManagedHooksOnly"] {
            let files = SettingsFiles {
                managed: Some(file("/m.json", json!({ key: true }))),
                // A user file cannot turn back on what the managed settings turn off.
                merged: vec![file("/u.json", json!({"disableAllHooks": false}))],
            };
            assert_eq!(
                hooks_off(&files, &no_env, false),
                Some(HooksOff::Managed {
                    path: PathBuf::from("/m.json"),
                    key
                })
            );
        }
    }

    #[test]
    fn the_last_file_that_sets_disable_all_hooks_decides() {
        let off = SettingsFiles {
            managed: None,
            merged: vec![
                file("/u.json", json!({"disableAllHooks": false})),
                file("/p.json", json!({"disableAllHooks": true})),
                file("/l.json", json!({"model": "opus"})),
            ],
        };
        assert_eq!(
            hooks_off(&off, &no_env, false),
            Some(HooksOff::Disabled {
                path: PathBuf::from("/p.json")
            })
        );
        let back_on = SettingsFiles {
            managed: None,
            merged: vec![
                file("/u.json", json!({"disableAllHooks": true})),
                file("/p.json", json!({"disableAllHooks": false})),
            ],
        };
        assert_eq!(hooks_off(&back_on, &no_env, false), None);
    }

    #[test]
    fn simple_and_safe_mode_turn_them_off() {
        let simple = |name: &str| (name == "CLAUDE_CODE_SIMPLE").then(|| "True".to_owned());
        assert_eq!(
            hooks_off(&SettingsFiles::default(), &simple, false),
            Some(HooksOff::Env {
                name: "CLAUDE_CODE_SIMPLE"
            })
        );
        let off = |name: &str| (name == "CLAUDE_CODE_SAFE_MODE").then(|| "0".to_owned());
        assert_eq!(hooks_off(&SettingsFiles::default(), &off, false), None);
    }

    #[test]
    fn a_second_settings_flag_replaces_debussys() {
        let args = |list: &[&str]| list.iter().map(|a| (*a).to_owned()).collect::<Vec<_>>();
        assert!(!replaces_own_settings(&args(&["-p", "--settings", "{}"])));
        assert!(replaces_own_settings(&args(&[
            "--settings",
            "{}",
            "--settings=mine.json"
        ])));
        assert_eq!(
            hooks_off(&SettingsFiles::default(), &no_env, true),
            Some(HooksOff::OwnSettings)
        );
    }

    #[test]
    fn the_warning_names_the_file_and_the_fix() {
        let off = HooksOff::Disabled {
            path: PathBuf::from("/home/u/.claude/settings.json"),
        };
        assert_eq!(
            off.detail(),
            "Claude Code will not run debussy's PreCompact hook: `disableAllHooks: true` in /home/u/.claude/settings.json"
        );
        assert!(
            off.fix().starts_with("remove the key (without the hook"),
            "{}",
            off.fix()
        );
    }
}
