//! The configuration flags of `debussy run` as command-line words, so a run can record
//! how it was started and `--resume` can start it the same way again.
//!
//! Recorded words are parsed back with the same clap definitions as the command line, so
//! what is recorded is exactly what the user could have typed.

use std::collections::BTreeMap;

use clap::Parser;

use crate::cli::RunOverrides;

/// The words of every flag set in `overrides` (`["--agent", "sim", "--max-retries", "0"]`).
#[must_use]
pub(crate) fn to_words(overrides: &RunOverrides) -> Vec<String> {
    crate::config::flag_words(&overrides.values)
}

/// Only the overrides, parsed as `debussy run` parses them.
#[derive(Debug, Parser)]
#[command(name = "debussy-run", no_binary_name = true)]
struct Recorded {
    #[command(flatten)]
    overrides: RunOverrides,
}

/// Why recorded flags could not be reused.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
#[error("failed to read the flags the resumed run was started with ({words}): {message}")]
#[diagnostic(help("pass the flags again on the command line, or start afresh with --restart"))]
pub(crate) struct RecordedFlagsError {
    words: String,
    message: String,
}

/// Fill each flag not typed now from `recorded`; returns the words of the flags reused.
///
/// # Errors
/// When the recorded words do not parse (recorded by an incompatible debussy).
pub(crate) fn reuse(
    now: &mut RunOverrides,
    recorded: &[String],
) -> Result<Vec<String>, RecordedFlagsError> {
    let old = Recorded::try_parse_from(recorded)
        .map_err(|err| RecordedFlagsError {
            words: recorded.join(" "),
            message: err.kind().to_string(),
        })?
        .overrides;
    let before = now.clone();
    for (path, value) in old.values {
        now.values.entry(path).or_insert(value);
    }
    let typed = to_words(&before);
    let all = to_words(now);
    Ok(reused_words(&typed, &all))
}

/// Words in a variable name that mark a secret, which is never written to the state.
const SECRET_WORDS: &[&str] = &["TOKEN", "SECRET", "PASSWORD", "KEY", "AUTH", "CREDENTIAL"];

/// The `DEBUSSY_*` variables worth recording: all but those that look like secrets.
#[must_use]
pub(crate) fn recordable_env(env: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    env.iter()
        .filter(|(name, _)| {
            let upper = name.to_ascii_uppercase();
            !SECRET_WORDS.iter().any(|word| upper.contains(word))
        })
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect()
}

/// Set each recorded variable not set now; returns `NAME=VALUE` for each reused.
pub(crate) fn reuse_env(
    now: &mut BTreeMap<String, String>,
    recorded: &BTreeMap<String, String>,
) -> Vec<String> {
    let mut reused = Vec::new();
    for (name, value) in recorded {
        if !now.contains_key(name) {
            now.insert(name.clone(), value.clone());
            reused.push(format!("{name}={value}"));
        }
    }
    reused
}

/// The flags (with their values) in `all` that are not in `typed`.
fn reused_words(typed: &[String], all: &[String]) -> Vec<String> {
    let groups = |words: &[String]| -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for word in words {
            match out.last_mut() {
                Some(last) if !word.starts_with("--") => {
                    last.push(' ');
                    last.push_str(word);
                }
                _ => out.push(word.clone()),
            }
        }
        out
    };
    let typed = groups(typed);
    groups(all)
        .into_iter()
        .filter(|flag| !typed.contains(flag))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::FlagValue;

    fn parse(words: &[&str]) -> RunOverrides {
        Recorded::try_parse_from(words).expect("parse").overrides
    }

    #[test]
    fn words_parse_back_to_the_same_flags() {
        let typed = parse(&[
            "--agent",
            "sim",
            "--max-retries",
            "0",
            "--context-threshold",
            "72.5",
            "--no-auto-commit",
            "--no-interactive",
        ]);
        let words = to_words(&typed);
        let again = parse(&words.iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!(to_words(&again), words);
    }

    #[test]
    fn flags_typed_now_win_and_the_rest_are_reused_and_named() {
        let mut now = parse(&["--model", "other", "--auto-commit"]);
        let recorded: Vec<String> = ["--agent", "sim", "--model", "m1", "--no-auto-commit"]
            .map(str::to_owned)
            .to_vec();
        let reused = reuse(&mut now, &recorded).expect("reuse");
        assert_eq!(now.values["agent.kind"], FlagValue::Text("sim".into()));
        assert_eq!(now.values["model"], FlagValue::Text("other".into()));
        assert_eq!(now.values["auto_commit"], FlagValue::Switch(true));
        assert_eq!(reused, ["--agent sim"]);
    }

    #[test]
    fn variables_are_reused_unless_set_now_and_secrets_are_never_recorded() {
        let started: BTreeMap<String, String> = [
            ("DEBUSSY_MODEL", "m1"),
            ("DEBUSSY_TIMEOUT", "60"),
            ("DEBUSSY_NOTIFICATIONS__NTFY__TOKEN", "tk_secret"),
            ("DEBUSSY_AGENT__ENV__ANTHROPIC_API_KEY", "sk-secret"),
        ]
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .into();
        let recorded = recordable_env(&started);
        assert_eq!(
            recorded.keys().map(String::as_str).collect::<Vec<_>>(),
            ["DEBUSSY_MODEL", "DEBUSSY_TIMEOUT"]
        );
        let mut now: BTreeMap<String, String> =
            [("DEBUSSY_TIMEOUT".to_owned(), "90".to_owned())].into();
        let reused = reuse_env(&mut now, &recorded);
        assert_eq!(reused, ["DEBUSSY_MODEL=m1"]);
        assert_eq!(now["DEBUSSY_TIMEOUT"], "90");
        assert_eq!(now["DEBUSSY_MODEL"], "m1");
    }

    #[test]
    fn unreadable_recorded_flags_are_an_error_naming_them() {
        let mut now = RunOverrides::default();
        let err = reuse(&mut now, &["--bogus".to_owned()]).expect_err("bogus");
        assert!(err.to_string().contains("--bogus"), "{err}");
    }
}
