//! Delivery to an ntfy server in its JSON publishing form: `POST {server}/` with
//! `{"topic", "message", "title", "priority", "tags"}` as the body. JSON carries any
//! text as it is, where the header form would need non-ASCII titles encoded.

use std::time::Duration;

use super::{Deliver, Notice, NotifyError};

/// Longest time one POST may take, connecting included.
const TIMEOUT: Duration = Duration::from_secs(10);

/// Posts notices to one ntfy topic.
pub struct Ntfy {
    url: String,
    topic: String,
    agent: ureq::Agent,
}

impl Ntfy {
    /// Post to `topic` on `server` (`https://ntfy.sh`, `http://127.0.0.1:8080`).
    #[must_use]
    pub fn new(server: &str, topic: &str) -> Ntfy {
        let config = ureq::Agent::config_builder()
            .timeout_global(Some(TIMEOUT))
            .user_agent(concat!("debussy/", env!("CARGO_PKG_VERSION")))
            .build();
        Ntfy {
            url: format!("{}/", server.trim_end_matches('/')),
            topic: topic.trim_matches('/').to_owned(),
            agent: ureq::Agent::new_with_config(config),
        }
    }

    /// Where notices are posted: the server's root.
    #[must_use]
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The topic they are published to.
    #[must_use]
    pub fn topic(&self) -> &str {
        &self.topic
    }
}

impl Deliver for Ntfy {
    fn deliver(&mut self, notice: &Notice) -> Result<(), NotifyError> {
        let body = serde_json::json!({
            "topic": self.topic,
            "message": notice.message,
            "title": notice.title,
            "priority": notice.priority.number(),
            "tags": notice.tags,
        });
        self.agent
            .post(&self.url)
            .header("Content-Type", "application/json")
            .send(body.to_string().as_str())
            .map(drop)
            .map_err(|source| NotifyError::Http {
                url: self.url.clone(),
                source: Box::new(source),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn posts_go_to_the_servers_root_with_the_topic_in_the_body() {
        let ntfy = Ntfy::new("https://ntfy.sh/", "/runs");
        assert_eq!(ntfy.url(), "https://ntfy.sh/");
        assert_eq!(ntfy.topic(), "runs");
    }
}
