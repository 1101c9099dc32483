//! [`Prices`]: a model's list prices, as `agent.prices` writes them and the cost estimate
//! (`context::cost`) uses them.

use serde::Serialize;

/// List prices of one model, in US dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Prices {
    /// Uncached input.
    pub input: f64,
    /// Generated output.
    pub output: f64,
    /// Input written to the prompt cache.
    pub cache_write: f64,
    /// Input read from the prompt cache.
    pub cache_read: f64,
}

impl Prices {
    /// Prices from the four figures, dollars per million tokens.
    #[must_use]
    pub const fn new(input: f64, output: f64, cache_write: f64, cache_read: f64) -> Prices {
        Prices {
            input,
            output,
            cache_write,
            cache_read,
        }
    }

    /// Prices written as four numbers, dollars per million tokens: `input output
    /// cache_write cache_read` (e.g. `"3 15 3.75 0.3"`), as `agent.prices` holds them.
    ///
    /// # Errors
    /// A message saying what is wrong, when it is not four numbers of 0 or more.
    pub fn parse(text: &str) -> Result<Prices, String> {
        let numbers: Result<Vec<f64>, _> = text.split_whitespace().map(str::parse::<f64>).collect();
        match numbers.as_deref() {
            Ok(&[input, output, cache_write, cache_read])
                if [input, output, cache_write, cache_read]
                    .iter()
                    .all(|n| n.is_finite() && *n >= 0.0) =>
            {
                Ok(Prices::new(input, output, cache_write, cache_read))
            }
            _ => Err(format!(
                "`{text}` is not four prices in dollars per million tokens (input output cache_write cache_read), e.g. \"3 15 3.75 0.3\""
            )),
        }
    }
}
