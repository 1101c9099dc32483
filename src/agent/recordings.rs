//! The recorded agent failures of `tests/fixtures/agent-failures/`, read the way a
//! session reads them, for the backends' tests.

use std::path::{Path, PathBuf};

use crate::agent::{AgentEvent, ApiRetry, LastWords};

/// The path of the recording `file`.
pub(crate) fn path(file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/agent-failures")
        .join(file)
}

/// The events of the recording `file`, each line read by `parse`.
pub(crate) fn events<I>(file: &str, parse: impl Fn(&[u8]) -> I) -> Vec<AgentEvent>
where
    I: IntoIterator<Item = AgentEvent>,
{
    let path = path(file);
    let text =
        std::fs::read_to_string(&path).unwrap_or_else(|err| panic!("{}: {err}", path.display()));
    text.lines()
        .flat_map(|line| parse(line.as_bytes()))
        .collect()
}

/// What a session keeps of `events` for its diagnosis.
pub(crate) fn last_words(events: &[AgentEvent]) -> LastWords {
    let mut words = LastWords::default();
    for event in events {
        words.observe(event);
    }
    words
}

/// The agent's own API retries among `events`.
pub(crate) fn retries(events: Vec<AgentEvent>) -> Vec<ApiRetry> {
    events
        .into_iter()
        .filter_map(|event| match event {
            AgentEvent::ApiRetry(retry) => Some(retry),
            _ => None,
        })
        .collect()
}
