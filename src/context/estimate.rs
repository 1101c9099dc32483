//! Token estimates for content the agent has not yet reported usage for.
//!
//! Tokenizing with tiktoken's o200k encoding runs at roughly 10 MB/s, far slower than
//! reading a transcript, so [`Pending`] keeps the text of results as they arrive and counts
//! only their bytes. A token covers at least one byte, so the byte count is an upper bound
//! on the token count: the meter tokenizes only when that bound could cross the stop
//! threshold. The tokenizer itself is built once per process, on first use.

use std::sync::OnceLock;

use tiktoken_rs::CoreBPE;

/// Tokens assumed for one image in a tool result: Anthropic's figure for a ~1.15
/// megapixel image, the largest size sent without downscaling.
pub const IMAGE_TOKENS: u64 = 1_600;

/// Bytes per token assumed for display before text is tokenized (typical of English and
/// code under o200k).
const DISPLAY_BYTES_PER_TOKEN: u64 = 4;

/// The o200k tokenizer, built on first use; `None` if it could not be built.
fn tokenizer() -> Option<&'static CoreBPE> {
    static TOKENIZER: OnceLock<Option<CoreBPE>> = OnceLock::new();
    TOKENIZER
        .get_or_init(|| match tiktoken_rs::o200k_base() {
            Ok(bpe) => Some(bpe),
            Err(err) => {
                tracing::warn!("token estimates fall back to bytes/4: the o200k tokenizer failed to load: {err}");
                None
            }
        })
        .as_ref()
}

/// o200k tokens in `text` (bytes/4 if the tokenizer is unavailable).
#[must_use]
pub fn count_tokens(text: &str) -> u64 {
    match tokenizer() {
        Some(bpe) => bpe.count_ordinary(text) as u64,
        None => (text.len() as u64).div_ceil(DISPLAY_BYTES_PER_TOKEN),
    }
}

/// Scale a raw token count by the configured estimate factor, rounding up.
#[must_use]
pub fn scale(tokens: u64, factor: f64) -> u64 {
    if tokens == 0 {
        return 0;
    }
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss,
        reason = "token counts are far below 2^52 and the factor is a small positive ratio"
    )]
    let scaled = (tokens as f64 * factor.max(0.0)).ceil() as u64;
    scaled
}

/// Untokenized text kept before it is tokenized anyway. Far above any threshold in
/// practice (an upper bound of a million tokens), so laziness still saves the work in
/// the common case.
pub const MAX_UNTOKENIZED_BYTES: u64 = 1 << 20;

/// Content seen since the last reported usage, counted lazily.
#[derive(Debug, Clone, Default)]
pub struct Pending {
    /// Tokens of text already tokenized.
    tokens: u64,
    /// Tokens estimated without text (images).
    fixed_tokens: u64,
    /// Bytes of text not yet tokenized.
    untokenized_bytes: u64,
    /// That text.
    texts: Vec<String>,
}

impl Pending {
    /// Record text; it is tokenized when [`Pending::tokenize`] is called, or at once when
    /// more than [`MAX_UNTOKENIZED_BYTES`] wait, so memory stays bounded however much an
    /// agent prints between two usage reports.
    pub fn add_text(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        self.untokenized_bytes += text.len() as u64;
        self.texts.push(text.to_owned());
        if self.untokenized_bytes > MAX_UNTOKENIZED_BYTES {
            self.tokenize();
        }
    }

    /// Record content with a known token estimate (an image).
    pub fn add_tokens(&mut self, tokens: u64) {
        self.fixed_tokens += tokens;
    }

    /// Whether nothing is pending.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.tokens == 0 && self.fixed_tokens == 0 && self.untokenized_bytes == 0
    }

    /// Whether some text has not been tokenized yet.
    #[must_use]
    pub fn has_untokenized(&self) -> bool {
        self.untokenized_bytes > 0
    }

    /// An upper bound of the raw token count (untokenized bytes count one token each).
    #[must_use]
    pub fn upper_bound(&self) -> u64 {
        self.tokens + self.fixed_tokens + self.untokenized_bytes
    }

    /// The raw token count; exact once everything is tokenized, else a bytes/4 guess for
    /// the untokenized part (for display only).
    #[must_use]
    pub fn display_tokens(&self) -> u64 {
        self.tokens + self.fixed_tokens + self.untokenized_bytes.div_ceil(DISPLAY_BYTES_PER_TOKEN)
    }

    /// Tokenize all untokenized text, dropping it.
    pub fn tokenize(&mut self) {
        for text in self.texts.drain(..) {
            self.tokens += count_tokens(&text);
        }
        self.untokenized_bytes = 0;
    }

    /// Forget everything (a new usage figure includes it all).
    pub fn clear(&mut self) {
        *self = Pending::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn untokenized_text_is_bounded() {
        let mut pending = Pending::default();
        let line = "word ".repeat(1_000);
        for _ in 0..300 {
            pending.add_text(&line);
        }
        assert!(pending.untokenized_bytes <= MAX_UNTOKENIZED_BYTES);
        assert!(
            pending.texts.iter().map(String::len).sum::<usize>() as u64 <= MAX_UNTOKENIZED_BYTES
        );
        pending.tokenize();
        assert_eq!(pending.display_tokens(), 300 * count_tokens(&line));
    }

    #[test]
    fn counts_o200k_tokens() {
        assert_eq!(count_tokens(""), 0);
        assert_eq!(count_tokens("hello world"), 2);
        assert!(count_tokens("fn main() { println!(\"hi\"); }") < 20);
    }

    #[test]
    fn scale_rounds_up_and_clamps_negative_factors() {
        assert_eq!(scale(10, 1.0), 10);
        assert_eq!(scale(10, 1.25), 13);
        assert_eq!(scale(10, 0.0), 0);
        assert_eq!(scale(10, -2.0), 0);
        assert_eq!(scale(0, 3.0), 0);
    }

    #[test]
    fn bytes_bound_tokens_until_tokenized() {
        let mut pending = Pending::default();
        assert!(pending.is_empty());
        pending.add_text("hello world");
        pending.add_tokens(IMAGE_TOKENS);
        assert!(pending.has_untokenized());
        assert_eq!(pending.upper_bound(), 11 + IMAGE_TOKENS);
        assert_eq!(pending.display_tokens(), 3 + IMAGE_TOKENS);
        pending.tokenize();
        assert!(!pending.has_untokenized());
        assert_eq!(pending.upper_bound(), 2 + IMAGE_TOKENS);
        assert_eq!(pending.display_tokens(), 2 + IMAGE_TOKENS);
        pending.clear();
        assert!(pending.is_empty());
    }

    #[test]
    fn the_byte_bound_holds_for_unusual_text() {
        for text in [
            "aaaaaaaaaaaaaaaa",
            "日本語のテキスト",
            "🎉🎉🎉",
            "\n\n\n\t \t",
            "x",
        ] {
            assert!(count_tokens(text) <= text.len() as u64, "{text}");
        }
    }
}
