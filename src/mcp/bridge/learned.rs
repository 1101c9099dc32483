//! What the bridge learned from the daemon: its `initialize` result and its tool,
//! prompt and resource lists. The bridge answers those requests itself from here, so a
//! client is never held up by a daemon that is starting or restarting. Kept in
//! `learned.json` in the state directory, so a bridge started while the daemon is down
//! still answers at once.

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

const LEARNED_FILE: &str = "learned.json";

/// The listing requests the bridge answers itself, and the key of the items in each.
pub(crate) const LISTS: [(&str, &str); 4] = [
    ("tools/list", "tools"),
    ("prompts/list", "prompts"),
    ("resources/list", "resources"),
    ("resources/templates/list", "resourceTemplates"),
];

/// The daemon's answers, all pages of each list merged.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Learned {
    /// The `initialize` result.
    pub(crate) initialize: Option<Value>,
    /// Each listing method's items, for the methods the daemon answered.
    pub(crate) lists: std::collections::BTreeMap<String, Vec<Value>>,
}

impl Learned {
    /// What was saved in `dir`, or nothing.
    pub(crate) fn load(dir: &Path) -> Self {
        std::fs::read(dir.join(LEARNED_FILE))
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default()
    }

    /// Save to `dir` atomically.
    ///
    /// # Errors
    /// The file cannot be written.
    pub(crate) fn save(&self, dir: &Path) -> std::io::Result<()> {
        let temp = dir.join(format!(".{LEARNED_FILE}.{}.tmp", std::process::id()));
        std::fs::write(&temp, serde_json::to_vec(self)?)?;
        std::fs::rename(&temp, dir.join(LEARNED_FILE))
    }

    /// The result for a listing `method`, when the daemon's list is known.
    pub(crate) fn list_result(&self, method: &str) -> Option<Value> {
        let (_, key) = LISTS.iter().find(|(m, _)| *m == method)?;
        let items = self.lists.get(method)?;
        Some(json!({ *key: items }))
    }

    /// Whether the daemon declared the capability `name` (`tools`, `prompts`…) in its
    /// `initialize` result.
    pub(crate) fn has_capability(&self, name: &str) -> bool {
        self.initialize
            .as_ref()
            .and_then(|init| init.get("capabilities"))
            .and_then(|caps| caps.get(name))
            .is_some_and(|cap| !cap.is_null())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_only_lists_it_knows() {
        let mut learned = Learned::default();
        assert_eq!(learned.list_result("tools/list"), None);
        learned
            .lists
            .insert("tools/list".to_owned(), vec![json!({"name": "echo"})]);
        assert_eq!(
            learned.list_result("tools/list"),
            Some(json!({"tools": [{"name": "echo"}]}))
        );
        assert_eq!(learned.list_result("prompts/list"), None);
    }

    #[test]
    fn round_trips_through_the_state_dir() {
        let dir = tempfile::tempdir().expect("tempdir");
        let learned = Learned {
            initialize: Some(json!({"capabilities": {"tools": {}}})),
            lists: [("tools/list".to_owned(), vec![json!({"name": "echo"})])].into(),
        };
        learned.save(dir.path()).expect("save");
        assert_eq!(Learned::load(dir.path()), learned);
        assert!(learned.has_capability("tools"));
        assert!(!learned.has_capability("prompts"));
    }
}
