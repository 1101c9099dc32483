//! A phase's gates ([`Gate`]) and the command each runs ([`GateCommand`], from the plan or the config: [`GateOrigin`]).

use std::collections::BTreeMap;

use serde::Serialize;

use super::Location;

/// A check that must pass before a phase counts as done.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gate {
    /// The gate's name (`tests`, `ruff`); for a bullet that names only a command, the command.
    pub name: String,
    /// What passing means, in words (`0 errors`).
    pub criterion: String,
    /// The command written in the plan (the bullet's inline code span), if any.
    pub command: Option<String>,
    /// Where the gate's bullet is.
    pub location: Location,
}

/// Where a gate's command came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GateOrigin {
    /// Written in the phase file.
    Plan,
    /// Taken from the `gates` map of the configuration.
    Config,
}

/// A gate's command, ready to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GateCommand {
    /// The shell command.
    pub command: String,
    /// Where it came from.
    pub origin: GateOrigin,
}

impl Gate {
    /// The command to run for this gate: the plan's own command, else the configured
    /// default for the gate's name (`gates` map; matched exactly, then case-insensitively
    /// with spaces and underscores read as `-`). `None` means the gate cannot be run and
    /// the audit reports it as `UNKNOWN_GATE`.
    #[must_use]
    pub fn resolve(&self, defaults: &BTreeMap<String, String>) -> Option<GateCommand> {
        if let Some(command) = &self.command {
            return Some(GateCommand {
                command: command.clone(),
                origin: GateOrigin::Plan,
            });
        }
        let normalized: String = self
            .name
            .trim()
            .chars()
            .map(|c| {
                if c.is_whitespace() || c == '_' {
                    '-'
                } else {
                    c.to_ascii_lowercase()
                }
            })
            .collect();
        defaults
            .get(&self.name)
            .or_else(|| defaults.get(&normalized))
            .or_else(|| {
                defaults
                    .iter()
                    .find(|(key, _)| key.eq_ignore_ascii_case(&normalized))
                    .map(|(_, command)| command)
            })
            .map(|command| GateCommand {
                command: command.clone(),
                origin: GateOrigin::Config,
            })
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    #[test]
    fn gate_commands_come_from_the_plan_then_the_config() {
        let defaults: BTreeMap<String, String> = [
            ("ruff", "ruff check ."),
            ("type-check", "pyright"),
            ("Coverage", "pytest --cov"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        let gate = |name: &str, command: Option<&str>| Gate {
            name: name.to_owned(),
            criterion: String::new(),
            command: command.map(str::to_owned),
            location: Location::line(Path::new("p.md"), 1),
        };
        let own = gate("ruff", Some("uv run ruff check src")).resolve(&defaults);
        assert_eq!(
            own,
            Some(GateCommand {
                command: "uv run ruff check src".into(),
                origin: GateOrigin::Plan
            })
        );
        let configured = gate("ruff", None).resolve(&defaults);
        assert_eq!(
            configured.map(|c| (c.command, c.origin)),
            Some(("ruff check .".into(), GateOrigin::Config))
        );
        assert_eq!(
            gate("Type check", None)
                .resolve(&defaults)
                .map(|c| c.command),
            Some("pyright".into())
        );
        assert_eq!(
            gate("type_check", None)
                .resolve(&defaults)
                .map(|c| c.command),
            Some("pyright".into())
        );
        assert_eq!(
            gate("coverage", None).resolve(&defaults).map(|c| c.command),
            Some("pytest --cov".into())
        );
        assert_eq!(gate("security", None).resolve(&defaults), None);
    }
}
