//! Layered YAML configuration: defaults < user file < project file < environment < flags.
//!
//! This module owns the configuration's shape ([`Config`] and its sections), its defaults,
//! how the layers are found, checked and merged, and where each value came from. It reads
//! the files and environment it is given; it never touches plans or processes.
//!
//! - [`load()`] finds the layers (user file, project file or `--config`, `DEBUSSY_*`
//!   variables, typed `run` flags), checks each one and merges them at the YAML-value
//!   level, recording the [`Source`] of every leaf.
//! - Bad configuration is a [`ConfigError`] that points at the file, line, column and key
//!   (or the variable or flag) with a hint; it is never a warning.
//! - `config/default.yaml` at the crate root is the commented default file that
//!   `debussy init` writes; tests keep it equal to [`Config::default`], and
//!   `docs/config.md` documents every key.

mod check;
mod context_limit;
mod duplicate;
mod duration;
mod env;
mod error;
mod file;
mod flags;
mod gates;
mod jobs;
pub(crate) mod keys;
mod legacy;
mod load;
mod locate;
mod merge;
mod prices;
mod profiles;
mod provenance;
mod reference;
mod render;
mod schema;
mod section;
mod settings;
mod validate;

pub use context_limit::ContextLimit;
pub use duration::{RunDuration, Seconds};
pub use error::{ConfigError, Invalid, Origin, Problem};
pub use flags::{FlagValue, Overrides, flag_words};
pub use jobs::Jobs;
pub use load::{Discovery, LoadOptions, discover, load};
pub use prices::Prices;
pub use profiles::{AgentKind, AgentPermissions, AgentProfile, AgentProfiles};
pub use provenance::{Loaded, Source};
pub use reference::DEFAULT_FILE;
pub use render::{to_annotated_yaml, to_json};
pub use schema::RESERVED_ENV_VARS;
pub use settings::{
    AgentConfig, Config, DEFAULT_STDERR_TAIL_LINES, GitConfig, HandoffMode, McpBackoffConfig,
    McpConfig, NotificationProvider, NotificationsConfig, NtfyConfig, OutputMode,
    default_allowed_tools,
};

#[cfg(test)]
pub(crate) use file::parse as parse_file;
#[cfg(test)]
pub(crate) use flags::layer as flag_layer;
#[cfg(test)]
pub(crate) use merge::yaml;
#[cfg(test)]
pub(crate) use schema::nested_yaml;
