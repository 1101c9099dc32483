//! Tests of `dry_run`.

mod restart_tests {
    use super::super::*;
    use crate::agent::UsageReporting;
    use crate::config::{Config, HandoffMode, RunDuration};

    #[test]
    fn the_dry_run_says_who_writes_the_handoff_and_what_limits_apply() {
        let config = Config {
            max_cost_usd: Some(20.0),
            max_duration: RunDuration::parse("2h").ok(),
            ..Config::default()
        };
        let text = restart_lines(&config, "claude", true, Some(UsageReporting::PerMessage));
        assert!(
            text.contains("agent:         claude, model opus; context exact"),
            "{text}"
        );
        assert!(
            text.contains("agent: the stopped claude session is resumed once"),
            "{text}"
        );
        assert!(text.contains("$20.00 per run, none per phase"), "{text}");
        assert!(text.contains("max duration:  2h"), "{text}");
        assert!(text.contains("after 2 restarts in a row"), "{text}");
        let codex = Config {
            model: String::new(),
            ..config
        };
        let text = restart_lines(&codex, "codex", false, Some(UsageReporting::PerRequest));
        assert!(
            text.contains("the codex agent cannot resume a stopped session"),
            "{text}"
        );
        assert!(
            text.contains(
                "codex, model codex's own default; context exact, from each request's usage"
            ),
            "{text}"
        );
        let mechanical = Config {
            handoff: HandoffMode::Mechanical,
            no_progress_restarts: 0,
            ..Config::default()
        };
        let text = restart_lines(&mechanical, "claude", true, None);
        assert!(
            text.contains("mechanical: debussy writes the checkpoint alone"),
            "{text}"
        );
        assert!(text.contains("no progress:   never"), "{text}");
    }
}

mod plan_tests {
    use super::super::*;
    use crate::config::Config;

    fn loaded() -> Loaded {
        Loaded::defaults(Path::new("/project"))
    }

    #[test]
    fn effective_config_lists_leaves_in_field_order_without_gates() {
        let keys: Vec<String> = effective_config(&loaded())
            .into_iter()
            .map(|(k, _)| k)
            .collect();
        assert_eq!(keys.first().map(String::as_str), Some("model"));
        assert!(keys.contains(&"agent.kind".to_owned()));
        assert!(keys.contains(&"notifications.ntfy.server".to_owned()));
        assert!(!keys.iter().any(|k| k.starts_with("gates")));
        let values: BTreeMap<String, String> = effective_config(&loaded()).into_iter().collect();
        assert_eq!(values["model"], Config::default().model);
        assert_eq!(values["context_threshold"], "80.0");
        assert_eq!(values["agent.command"], "none");
        assert_eq!(values["agent.args"], "[]");
        assert_eq!(values["agent.env"], "{}");
    }

    #[test]
    fn sources_fall_back_to_parents_then_default() {
        let sources: BTreeMap<String, Source> = [
            ("model".to_owned(), Source::Flag("--model".to_owned())),
            (
                "agent.env".to_owned(),
                Source::Env("DEBUSSY_AGENT_ENV".to_owned()),
            ),
            (
                "timeout".to_owned(),
                Source::ProjectFile("/p/.debussy/config.yaml".into()),
            ),
        ]
        .into();
        assert_eq!(source_of(&sources, "model"), "flag --model");
        assert_eq!(
            source_of(&sources, "agent.env.FOO"),
            "env DEBUSSY_AGENT_ENV"
        );
        assert_eq!(
            source_of(&sources, "timeout"),
            "project file /p/.debussy/config.yaml"
        );
        assert_eq!(source_of(&sources, "agent.kind"), "default");
    }
}
