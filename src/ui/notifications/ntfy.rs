//! Delivery to an ntfy server in its JSON publishing form: `POST {server}/` with
//! `{"topic", "message", "title", "priority", "tags"}` as the body. JSON carries any
//! text as it is, where the header form would need non-ASCII titles encoded.
//!
//! The post is a blocking request ([`crate::http::blocking_client`]) made on the
//! notifier's own thread, the only place [`Deliver::deliver`] runs. The client is built
//! there on the first notice, not in [`Ntfy::new`], which runs inside the run's async
//! runtime, where reqwest's blocking client may not be built.

use std::io::Read;
use std::time::Duration;

use super::{Deliver, Notice, NotifyError};

/// Longest time one POST may take, connecting included.
const TIMEOUT: Duration = Duration::from_secs(10);

/// How much of a refusal's body the error quotes: enough for ntfy's one-line JSON error.
const QUOTED_BYTES: u64 = 300;

/// Posts notices to one ntfy topic.
pub struct Ntfy {
    url: String,
    topic: String,
    client: Option<reqwest::blocking::Client>,
}

impl Ntfy {
    /// Post to `topic` on `server` (`https://ntfy.sh`, `http://127.0.0.1:8080`).
    #[must_use]
    pub fn new(server: &str, topic: &str) -> Ntfy {
        Ntfy {
            url: format!("{}/", server.trim_end_matches('/')),
            topic: topic.trim_matches('/').to_owned(),
            client: None,
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

    /// The client, built on the first call: on the delivering thread, outside any runtime.
    fn client(&mut self) -> Result<reqwest::blocking::Client, NotifyError> {
        if let Some(client) = &self.client {
            return Ok(client.clone());
        }
        let client = crate::http::blocking_client(|builder| {
            builder
                .timeout(TIMEOUT)
                .user_agent(concat!("debussy/", env!("CARGO_PKG_VERSION")))
        })
        .map_err(|source| NotifyError::Client {
            url: self.url.clone(),
            source,
        })?;
        Ok(self.client.insert(client).clone())
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
        let response = self
            .client()?
            .post(&self.url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body.to_string())
            .send()
            .map_err(|source| NotifyError::Http {
                url: self.url.clone(),
                source: source.without_url(),
            })?;
        let status = response.status();
        if status.is_success() {
            return Ok(());
        }
        Err(NotifyError::Refused {
            url: self.url.clone(),
            status,
            said: quote(response),
        })
    }
}

/// The start of a refusal's body on one line (ntfy says why there, with a link to its
/// docs), or nothing when it cannot be read.
fn quote(response: reqwest::blocking::Response) -> String {
    let mut start = Vec::new();
    let _ = response.take(QUOTED_BYTES).read_to_end(&mut start);
    String::from_utf8_lossy(&start)
        .trim_end_matches(char::REPLACEMENT_CHARACTER)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
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
