//! The tokens an agent reports using: per request as the Anthropic API counts them
//! ([`Usage`]), and in reports of their own apart from messages ([`UsageReport`]).

use serde::{Deserialize, Deserializer, Serialize};

/// Token usage as the Anthropic API reports it for one request.
///
/// Missing and `null` counts read as zero; extra fields (`cache_creation`,
/// `server_tool_use`, `service_tier`) are ignored.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Uncached input tokens.
    #[serde(default, deserialize_with = "null_as_zero")]
    pub input_tokens: u64,
    /// Input tokens read from the prompt cache.
    #[serde(default, deserialize_with = "null_as_zero")]
    pub cache_read_input_tokens: u64,
    /// Input tokens written to the prompt cache.
    #[serde(default, deserialize_with = "null_as_zero")]
    pub cache_creation_input_tokens: u64,
    /// Tokens the model generated.
    #[serde(default, deserialize_with = "null_as_zero")]
    pub output_tokens: u64,
}

impl Usage {
    /// The size of the context this request sent: input + cache read + cache creation.
    #[must_use]
    pub fn context_tokens(&self) -> u64 {
        self.input_tokens
            .saturating_add(self.cache_read_input_tokens)
            .saturating_add(self.cache_creation_input_tokens)
    }
}

fn null_as_zero<'de, D: Deserializer<'de>>(deserializer: D) -> Result<u64, D::Error> {
    Ok(Option::<u64>::deserialize(deserializer)?.unwrap_or(0))
}

/// Token usage an agent reports apart from its messages, as Codex writes it to its
/// rollout file: a request's billed tokens, the context it occupies and the window, each
/// when the report carries it.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct UsageReport {
    /// A key for the request the billed tokens are for: reports repeating a key repeat
    /// its usage and count once.
    pub request_id: Option<String>,
    /// Tokens billed for the request, in the Anthropic shape (uncached input, cache
    /// read, cache write, output).
    pub usage: Option<Usage>,
    /// The context occupied after the request, in tokens.
    pub context_tokens: Option<u64>,
    /// The model's context window as the agent counts it.
    pub context_window: Option<u64>,
}
