//! Whether an API the agent could not reach answers again. While the run waits out an
//! unreachable API ([`super::usage_wait`]), the address the agent talks to — the proxy in
//! its way, else the API's host — is tried every few seconds with a TCP connection; once
//! a try that failed is followed by one that connects, the wait ends instead of sitting
//! out the rest of its backoff (which doubles up to 15 minutes). The agent's own failure
//! counts as the first failed try; but once a wait has ended on an answer and the agent
//! still could not get through (the trouble lies past the first hop), an address that
//! answers from the start proves nothing, and only an answer after a refused try ends a
//! wait.

use std::time::Duration;

use crate::agent::ApiEndpoint;

/// How often the address is tried.
pub(super) const TRY_EVERY: Duration = Duration::from_secs(5);

/// How long one try may take (a name to resolve, a connection to make).
const TRY_LIMIT: Duration = Duration::from_secs(5);

/// The host and port a connection to `endpoint` is made to first: its proxy's, else its
/// own.
pub(super) fn first_hop(endpoint: &ApiEndpoint) -> Option<(String, u16)> {
    let address = endpoint.proxy.as_deref().unwrap_or(&endpoint.url);
    let url = if address.contains("://") {
        reqwest::Url::parse(address)
    } else {
        reqwest::Url::parse(&format!("http://{address}"))
    }
    .ok()?;
    let host = url.host_str()?.trim_matches(['[', ']']).to_owned();
    Some((host, url.port_or_known_default()?))
}

/// Resolves once `host:port` takes a connection after refusing one (or failing to
/// resolve, or timing out); at its first connection when it was `seen_down` already.
pub(super) async fn answers_again(host: String, port: u16, seen_down: bool) {
    comes_back(|| connects(&host, port), seen_down).await;
}

/// Whether a connection to `host:port` is made within [`TRY_LIMIT`].
async fn connects(host: &str, port: u16) -> bool {
    tokio::time::timeout(TRY_LIMIT, tokio::net::TcpStream::connect((host, port)))
        .await
        .is_ok_and(|connection| connection.is_ok())
}

/// Resolves once an `attempt` that succeeds follows a failure (one before the first
/// when `failed`), one attempt every [`TRY_EVERY`].
async fn comes_back<F: Future<Output = bool>>(mut attempt: impl FnMut() -> F, mut failed: bool) {
    let mut tries = tokio::time::interval(TRY_EVERY);
    tries.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tries.tick().await;
        let succeeded = attempt().await;
        if succeeded && failed {
            return;
        }
        failed |= !succeeded;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn endpoint(url: &str, proxy: Option<&str>) -> ApiEndpoint {
        ApiEndpoint {
            url: url.to_owned(),
            proxy: proxy.map(str::to_owned),
        }
    }

    #[test]
    fn the_first_hop_is_the_proxy_else_the_api() {
        assert_eq!(
            first_hop(&endpoint("https://api.anthropic.com", None)),
            Some(("api.anthropic.com".to_owned(), 443))
        );
        assert_eq!(
            first_hop(&endpoint("http://127.0.0.1:4000/v1", None)),
            Some(("127.0.0.1".to_owned(), 4000))
        );
        assert_eq!(
            first_hop(&endpoint(
                "https://api.anthropic.com",
                Some("proxy.corp:3128")
            )),
            Some(("proxy.corp".to_owned(), 3128))
        );
        assert_eq!(
            first_hop(&endpoint("https://x", Some("http://user:pw@[::1]:8080"))),
            Some(("::1".to_owned(), 8080))
        );
        assert_eq!(first_hop(&endpoint("not a url at all", None)), None);
    }

    /// Attempts that answer as `answers` says, in turn, then as its last.
    fn scripted(answers: &'static [bool]) -> impl FnMut() -> std::future::Ready<bool> {
        let mut next = 0;
        move || {
            let answer = answers[next.min(answers.len() - 1)];
            next += 1;
            std::future::ready(answer)
        }
    }

    #[tokio::test(start_paused = true)]
    async fn an_address_that_comes_back_is_noticed_at_the_next_try() {
        let began = tokio::time::Instant::now();
        comes_back(scripted(&[false, false, true]), false).await;
        assert_eq!(began.elapsed(), 2 * TRY_EVERY);
    }

    #[tokio::test(start_paused = true)]
    async fn an_address_that_always_answered_ends_nothing() {
        let watching = comes_back(scripted(&[true]), false);
        assert!(
            tokio::time::timeout(100 * TRY_EVERY, watching)
                .await
                .is_err(),
            "it never failed, so it never came back"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn an_address_the_agent_just_failed_to_reach_is_back_at_its_first_answer() {
        let began = tokio::time::Instant::now();
        comes_back(scripted(&[true]), true).await;
        assert_eq!(began.elapsed(), std::time::Duration::ZERO);
    }

    #[tokio::test]
    async fn a_refused_port_does_not_connect_and_a_listening_one_does() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let port = listener.local_addr().expect("addr").port();
        assert!(connects("127.0.0.1", port).await);
        drop(listener);
        assert!(!connects("127.0.0.1", port).await);
    }
}
