//! Delivery to an ntfy server: `POST {server}/{topic}` with the message as the body and
//! `Title`, `Priority` and `Tags` headers (ntfy's publishing API). Header values that are
//! not plain ASCII are sent RFC 2047-encoded, which ntfy decodes.

use std::time::Duration;

use super::{Deliver, Notice, NotifyError};

/// Longest time one POST may take, connecting included.
const TIMEOUT: Duration = Duration::from_secs(10);

/// Posts notices to one ntfy topic.
pub struct Ntfy {
    url: String,
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
            url: format!(
                "{}/{}",
                server.trim_end_matches('/'),
                topic.trim_matches('/')
            ),
            agent: ureq::Agent::new_with_config(config),
        }
    }

    /// Where notices go.
    #[must_use]
    pub fn url(&self) -> &str {
        &self.url
    }
}

impl Deliver for Ntfy {
    fn deliver(&mut self, notice: &Notice) -> Result<(), NotifyError> {
        self.agent
            .post(&self.url)
            .header("Title", header_value(&notice.title))
            .header("Priority", notice.priority.number().to_string())
            .header("Tags", notice.tags.join(","))
            .send(notice.message.as_str())
            .map(drop)
            .map_err(|source| NotifyError::Http {
                url: self.url.clone(),
                source: Box::new(source),
            })
    }
}

/// `text` as it can travel in an HTTP header: as is when printable ASCII, else as an
/// RFC 2047 encoded word (`=?UTF-8?B?…?=`).
fn header_value(text: &str) -> String {
    if text.bytes().all(|b| (0x20..0x7f).contains(&b)) {
        text.to_owned()
    } else {
        format!("=?UTF-8?B?{}?=", base64(text.as_bytes()))
    }
}

/// Standard base64 with padding.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_the_rfc_vectors() {
        for (plain, encoded) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(plain.as_bytes()), encoded);
        }
    }

    #[test]
    fn headers_stay_ascii() {
        assert_eq!(header_value("debussy: run started"), "debussy: run started");
        assert_eq!(header_value("Café"), "=?UTF-8?B?Q2Fmw6k=?=");
    }

    #[test]
    fn urls_join_cleanly() {
        assert_eq!(
            Ntfy::new("https://ntfy.sh/", "/runs").url(),
            "https://ntfy.sh/runs"
        );
    }
}
