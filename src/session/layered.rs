//! A user's JSON settings file with debussy's keys laid over it, for one session's
//! private agent home: the Gemini CLI reads `settings.json` with comments allowed, so
//! they are read the same way; objects are merged key by key and anything else is
//! replaced. A file that cannot be read as a JSON object is left as it is (the agent
//! says what is wrong with it, as it would without debussy), and the keys are not laid.

use std::path::Path;

use serde_json::{Map, Value};

/// The most a settings file may hold.
const LIMIT: u64 = 4 * 1024 * 1024;

/// The text of the user's settings at `user` (none when it does not exist) with `over`
/// laid over them, or `None` when the user's file cannot be read as a JSON object.
pub(super) fn layered(user: Option<&Path>, over: &Value) -> Option<String> {
    let mut settings = match user.map(read) {
        None | Some(Ok(None)) => Value::Object(Map::new()),
        Some(Ok(Some(settings))) => settings,
        Some(Err(why)) => {
            tracing::warn!(
                "the agent's settings {} are left as they are: {why}",
                user.map(Path::display)
                    .map(|path| path.to_string())
                    .unwrap_or_default()
            );
            return None;
        }
    };
    lay(&mut settings, over);
    serde_json::to_string_pretty(&settings).ok()
}

/// The user's settings, `Ok(None)` when the file does not exist.
fn read(path: &Path) -> Result<Option<Value>, String> {
    let text = match crate::files::read_text_limited(path, LIMIT) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(err.to_string()),
    };
    let stripped = json_comments::StripComments::new(text.as_bytes());
    match serde_json::from_reader(stripped) {
        Ok(value @ Value::Object(_)) => Ok(Some(value)),
        Ok(_) => Err("it is not a JSON object".to_owned()),
        Err(err) => Err(format!("it is not JSON: {err}")),
    }
}

/// Lay `over` over `base`: objects key by key, anything else replaced.
fn lay(base: &mut Value, over: &Value) {
    match (base, over) {
        (Value::Object(base), Value::Object(over)) => {
            for (key, value) in over {
                match base.get_mut(key) {
                    Some(slot) => lay(slot, value),
                    None => {
                        base.insert(key.clone(), value.clone());
                    }
                }
            }
        }
        (base, over) => *base = over.clone(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn over() -> Value {
        json!({"model": {"compressionThreshold": 0.9}})
    }

    fn parsed(text: &str) -> Value {
        serde_json::from_str(text).expect("JSON")
    }

    #[test]
    fn the_users_settings_keep_everything_but_the_keys_laid_over_them() {
        let dir = tempfile::tempdir().expect("tempdir");
        let user = dir.path().join("settings.json");
        std::fs::write(
            &user,
            "{\n  // the user's model\n  \"model\": {\"name\": \"gemini-2.5-pro\", \"compressionThreshold\": 0.3},\n  /* servers */\n  \"mcpServers\": {\"t\": {\"command\": \"x\"}},\n  \"ui\": {\"theme\": \"$THEME\"}\n}\n",
        )
        .expect("write");
        let text = layered(Some(&user), &over()).expect("layered");
        assert_eq!(
            parsed(&text),
            json!({
                "model": {"name": "gemini-2.5-pro", "compressionThreshold": 0.9},
                "mcpServers": {"t": {"command": "x"}},
                "ui": {"theme": "$THEME"},
            })
        );
    }

    #[test]
    fn without_settings_of_the_users_the_keys_stand_alone() {
        let dir = tempfile::tempdir().expect("tempdir");
        let missing = dir.path().join("settings.json");
        assert_eq!(
            parsed(&layered(Some(&missing), &over()).expect("layered")),
            over()
        );
        assert_eq!(parsed(&layered(None, &over()).expect("layered")), over());
        std::fs::write(&missing, "{\"model\": \"flat\"}").expect("write");
        assert_eq!(
            parsed(&layered(Some(&missing), &over()).expect("layered")),
            over()
        );
    }

    #[test]
    fn settings_that_are_not_a_json_object_are_left_to_the_agent() {
        let dir = tempfile::tempdir().expect("tempdir");
        let user = dir.path().join("settings.json");
        for text in ["{\"model\": {", "[1, 2]", "\u{0}\u{ff}"] {
            std::fs::write(&user, text).expect("write");
            assert_eq!(layered(Some(&user), &over()), None, "{text}");
        }
        std::fs::create_dir(dir.path().join("dir.json")).expect("mkdir");
        assert_eq!(layered(Some(&dir.path().join("dir.json")), &over()), None);
        // A FIFO with no writer is refused, not waited on.
        let fifo = dir.path().join("fifo.json");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).expect("mkfifo");
        assert_eq!(layered(Some(&fifo), &over()), None);
    }
}
