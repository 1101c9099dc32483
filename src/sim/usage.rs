//! [`Usage`]: the tokens one scripted model request bills, as a scenario gives them and
//! the output formats print them (in the Anthropic shape every format is derived from).

/// Tokens billed for one model request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// Uncached input tokens.
    pub input_tokens: u64,
    /// Input tokens read from the prompt cache.
    pub cache_read_input_tokens: u64,
    /// Input tokens written to the prompt cache.
    pub cache_creation_input_tokens: u64,
    /// Tokens the model generated.
    pub output_tokens: u64,
}

impl Usage {
    /// The size of the context the request sent: input + cache read + cache creation.
    #[must_use]
    pub fn context_tokens(&self) -> u64 {
        self.input_tokens
            .saturating_add(self.cache_read_input_tokens)
            .saturating_add(self.cache_creation_input_tokens)
    }
}
