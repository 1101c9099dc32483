//! What the front learned from the server: its `initialize` result and its tool,
//! prompt and resource lists. The front answers those from here while the server
//! starts or restarts, so a client is never held up by a server that is not there yet,
//! and compares the lists across a restart to tell the client what changed. With
//! `remember` (the bridge, whose daemons are shared and outlive it) they are kept in
//! `learned.json` in the state directory, so a front started while the server is down
//! still answers at once.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

const LEARNED_FILE: &str = "learned.json";
/// The most bytes of `learned.json` read back.
const LEARNED_LIMIT: u64 = 64 * 1024 * 1024;
/// The most pages read of one list.
pub(crate) const MAX_PAGES: usize = 100;

/// The listing requests the front can answer itself, and the key of the items in each.
pub(crate) const LISTS: [(&str, &str); 4] = [
    ("tools/list", "tools"),
    ("prompts/list", "prompts"),
    ("resources/list", "resources"),
    ("resources/templates/list", "resourceTemplates"),
];

/// The server's answers, all pages of each list merged.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Learned {
    /// The `initialize` result.
    pub(crate) initialize: Option<Value>,
    /// Each listing method's items, for the methods the server answered.
    pub(crate) lists: BTreeMap<String, Vec<Value>>,
    /// The last answer to `server/discover` (2026-07-28).
    #[serde(default)]
    pub(crate) discover: Option<Discovery>,
    /// The lists being read again, and what they were before.
    #[serde(skip)]
    pub(crate) round: Option<Round>,
    /// Answers held until the client read again a list it was told changed.
    #[serde(skip)]
    pub(crate) relist: Option<Relist>,
}

/// How long answers wait for the client to read a changed list again.
pub(crate) const RELIST_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// Answers held after `list_changed` went out until the client has read one of the
/// changed lists again (Claude Code reads its tools anew on the notification, and a
/// model turn that follows the answer at once must find the new tools), or until the
/// deadline for a client that does not.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Relist {
    /// The listing methods the client was told changed.
    pub(crate) methods: Vec<String>,
    /// Answers (raw id, result) to send once one of them was read.
    pub(crate) answers: Vec<(Vec<u8>, Value)>,
    /// When to send them anyway.
    pub(crate) deadline: std::time::Instant,
}

/// What a server answered to `server/discover`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Discovery {
    /// Its result: it speaks 2026-07-28.
    Answered(Value),
    /// Its error: it does not (a client then falls back to `initialize`).
    Refused(Value),
}

/// One reading of the server's lists.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Round {
    /// The lists as they were before the reading.
    pub(crate) before: BTreeMap<String, Vec<Value>>,
    /// Lists still being read.
    pub(crate) pending: usize,
    /// Tell the client of each list that differs once all are read.
    pub(crate) notify: bool,
    /// Answers (raw id, result) held until the client heard what changed.
    pub(crate) answers: Vec<(Vec<u8>, Value)>,
}

/// A list being read page by page.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Reading {
    /// The listing method.
    pub(crate) method: String,
    /// The items of the pages read so far.
    pub(crate) items: Vec<Value>,
    /// Pages read so far.
    pub(crate) pages: usize,
}

impl Learned {
    /// What was saved in `dir`, or nothing.
    pub(crate) fn load(dir: &Path) -> Self {
        crate::files::read_bytes_limited(&dir.join(LEARNED_FILE), LEARNED_LIMIT)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default()
    }

    /// Save to `dir`, readable by its owner only, never through a link.
    ///
    /// # Errors
    /// The file cannot be written.
    pub(crate) fn save(&self, dir: &Path) -> std::io::Result<()> {
        crate::files::write_private(&dir.join(LEARNED_FILE), &serde_json::to_vec(self)?)
    }

    /// The result for a listing `method`, when the server's list is known.
    pub(crate) fn list_result(&self, method: &str) -> Option<Value> {
        let key = list_key(method)?;
        let items = self.lists.get(method)?;
        Some(json!({ key: items }))
    }

    /// Keep the items of a whole list (`result` answered `method` without a cursor and
    /// has no next page).
    pub(crate) fn learn_list(&mut self, method: &str, result: &Value) {
        let Some(key) = list_key(method) else { return };
        if result.get("nextCursor").is_some_and(|c| !c.is_null()) {
            return;
        }
        if let Some(items) = result.get(key).and_then(Value::as_array) {
            self.lists.insert(method.to_owned(), items.clone());
        }
    }

    /// Whether the server declared the capability `name` (`tools`, `prompts`…) in its
    /// `initialize` result.
    pub(crate) fn has_capability(&self, name: &str) -> bool {
        let discovered = match &self.discover {
            Some(Discovery::Answered(result)) => Some(result),
            _ => None,
        };
        [self.initialize.as_ref(), discovered]
            .into_iter()
            .flatten()
            .filter_map(|answer| answer.get("capabilities"))
            .any(|caps| caps.get(name).is_some_and(|cap| !cap.is_null()))
    }
}

/// The key of the items in a listing method's result.
pub(crate) fn list_key(method: &str) -> Option<&'static str> {
    LISTS
        .iter()
        .find(|(m, _)| *m == method)
        .map(|(_, key)| *key)
}

/// The notification saying the list of `method` changed (`None` for the templates,
/// which have none of their own).
pub(crate) fn list_changed(method: &str) -> Option<String> {
    (method != "resources/templates/list").then(|| {
        format!(
            "notifications/{}/list_changed",
            method.trim_end_matches("/list")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_only_lists_it_knows() {
        let mut learned = Learned::default();
        assert_eq!(learned.list_result("tools/list"), None);
        learned.learn_list("tools/list", &json!({"tools": [{"name": "echo"}]}));
        assert_eq!(
            learned.list_result("tools/list"),
            Some(json!({"tools": [{"name": "echo"}]}))
        );
        learned.learn_list("prompts/list", &json!({"prompts": [], "nextCursor": "2"}));
        assert_eq!(learned.list_result("prompts/list"), None);
        assert_eq!(
            list_changed("tools/list").as_deref(),
            Some("notifications/tools/list_changed")
        );
        assert_eq!(list_changed("resources/templates/list"), None);
    }

    #[test]
    fn round_trips_through_the_state_dir_privately() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("tempdir");
        let learned = Learned {
            initialize: Some(json!({"capabilities": {"tools": {}}})),
            lists: [("tools/list".to_owned(), vec![json!({"name": "echo"})])].into(),
            discover: Some(Discovery::Refused(json!({"code": -32601}))),
            round: None,
            relist: None,
        };
        learned.save(dir.path()).expect("save");
        assert_eq!(Learned::load(dir.path()), learned);
        let mode = std::fs::metadata(dir.path().join(LEARNED_FILE))
            .expect("meta")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        assert!(learned.has_capability("tools"));
        assert!(!learned.has_capability("prompts"));
    }
}
