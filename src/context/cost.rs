//! What a session's requests cost: the tokens billed, summed over every model request the
//! agent made (main thread and subagents, each message counted once), and a price table
//! by model to turn them into dollars when the agent does not say (a session stopped for
//! its context never prints its `result` line with `total_cost_usd`). Pure.
//!
//! Prices are US dollars per million tokens, from the providers' published list prices;
//! a model not in the table has no estimate (the cost is then unknown, never $0).

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::agent::Usage;
pub use crate::config::Prices;

const fn prices(input: f64, output: f64, cache_write: f64, cache_read: f64) -> Prices {
    Prices::new(input, output, cache_write, cache_read)
}

/// Model-name fragments and their prices; the first fragment the (lowercased) name
/// contains wins, so specific names come before families.
pub const PRICE_TABLE: &[(&str, Prices)] = &[
    ("claude-opus-4-1", prices(15.0, 75.0, 18.75, 1.5)),
    ("claude-opus-4-0", prices(15.0, 75.0, 18.75, 1.5)),
    ("claude-opus-4-2025", prices(15.0, 75.0, 18.75, 1.5)),
    ("claude-3-opus", prices(15.0, 75.0, 18.75, 1.5)),
    ("opus", prices(5.0, 25.0, 6.25, 0.5)),
    ("sonnet", prices(3.0, 15.0, 3.75, 0.3)),
    ("claude-3-5-haiku", prices(0.8, 4.0, 1.0, 0.08)),
    ("haiku", prices(1.0, 5.0, 1.25, 0.1)),
    ("gpt-5-nano", prices(0.05, 0.4, 0.05, 0.005)),
    ("gpt-5-mini", prices(0.25, 2.0, 0.25, 0.025)),
    ("gpt-5", prices(1.25, 10.0, 1.25, 0.125)),
    ("gemini-2.5-flash", prices(0.3, 2.5, 0.3, 0.075)),
    ("gemini-2.5-pro", prices(1.25, 10.0, 1.25, 0.31)),
];

/// The prices of `model` from [`PRICE_TABLE`], if it knows the model.
#[must_use]
pub fn price_for(model: &str) -> Option<Prices> {
    price_with(model, &[])
}

/// The prices of `model`: the first of `overrides` (`agent.prices`) whose fragment the
/// name contains, else [`PRICE_TABLE`].
#[must_use]
pub fn price_with(model: &str, overrides: &[(String, Prices)]) -> Option<Prices> {
    let lower = model.to_ascii_lowercase();
    overrides
        .iter()
        .find(|(fragment, _)| lower.contains(&fragment.to_ascii_lowercase()))
        .map(|(_, prices)| *prices)
        .or_else(|| {
            PRICE_TABLE
                .iter()
                .find(|(fragment, _)| lower.contains(fragment))
                .map(|(_, prices)| *prices)
        })
}

/// Tokens billed, by kind, summed over requests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Billed {
    /// Uncached input.
    pub input: u64,
    /// Input written to the prompt cache.
    pub cache_write: u64,
    /// Input read from the prompt cache.
    pub cache_read: u64,
    /// Generated output.
    pub output: u64,
}

impl Billed {
    /// All four kinds together.
    #[must_use]
    pub fn total(&self) -> u64 {
        self.input
            .saturating_add(self.cache_write)
            .saturating_add(self.cache_read)
            .saturating_add(self.output)
    }

    fn of(usage: &Usage) -> Billed {
        Billed {
            input: usage.input_tokens,
            cache_write: usage.cache_creation_input_tokens,
            cache_read: usage.cache_read_input_tokens,
            output: usage.output_tokens,
        }
    }

    fn max(self, other: Billed) -> Billed {
        Billed {
            input: self.input.max(other.input),
            cache_write: self.cache_write.max(other.cache_write),
            cache_read: self.cache_read.max(other.cache_read),
            output: self.output.max(other.output),
        }
    }

    /// The cost of these tokens at `prices`, in US dollars.
    #[must_use]
    #[expect(clippy::cast_precision_loss, reason = "token counts far below 2^52")]
    pub fn cost(&self, prices: Prices) -> f64 {
        (self.input as f64 * prices.input
            + self.output as f64 * prices.output
            + self.cache_write as f64 * prices.cache_write
            + self.cache_read as f64 * prices.cache_read)
            / 1_000_000.0
    }
}

impl std::ops::Add for Billed {
    type Output = Billed;

    /// Both counts together, kind by kind (saturating).
    fn add(self, other: Billed) -> Billed {
        Billed {
            input: self.input.saturating_add(other.input),
            cache_write: self.cache_write.saturating_add(other.cache_write),
            cache_read: self.cache_read.saturating_add(other.cache_read),
            output: self.output.saturating_add(other.output),
        }
    }
}

impl std::ops::AddAssign for Billed {
    fn add_assign(&mut self, other: Billed) {
        *self = *self + other;
    }
}

/// The requests of one session, each counted once.
#[derive(Debug, Clone, Default)]
pub struct Billing {
    /// Per message id: the model and the largest usage seen (Claude Code repeats a
    /// message's usage on each of its lines, output growing).
    requests: HashMap<String, (Option<String>, Billed)>,
}

impl Billing {
    /// Take in the usage of one assistant line.
    pub fn observe(&mut self, message_id: Option<&str>, model: Option<&str>, usage: &Usage) {
        let key = message_id.map_or_else(|| format!("#{}", self.requests.len()), str::to_owned);
        let billed = Billed::of(usage);
        self.requests
            .entry(key)
            .and_modify(|(_, seen)| *seen = seen.max(billed))
            .or_insert_with(|| (model.map(str::to_owned), billed));
    }

    /// Tokens billed so far.
    #[must_use]
    pub fn billed(&self) -> Billed {
        self.requests
            .values()
            .fold(Billed::default(), |sum, (_, billed)| sum + *billed)
    }

    /// The estimated cost so far from [`PRICE_TABLE`]; `None` when no request's model has
    /// a price (then nothing is known, which is not $0).
    #[must_use]
    pub fn estimated_cost(
        &self,
        fallback_model: Option<&str>,
        overrides: &[(String, Prices)],
    ) -> Option<f64> {
        let mut known = false;
        let mut total = 0.0;
        for (model, billed) in self.requests.values() {
            let prices = model
                .as_deref()
                .or(fallback_model)
                .and_then(|model| price_with(model, overrides));
            if let Some(prices) = prices {
                known = true;
                total += billed.cost(prices);
            }
        }
        known.then_some(total)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(input: u64, cache_write: u64, cache_read: u64, output: u64) -> Usage {
        Usage {
            input_tokens: input,
            cache_creation_input_tokens: cache_write,
            cache_read_input_tokens: cache_read,
            output_tokens: output,
        }
    }

    #[test]
    fn names_find_their_family_and_specific_names_win() {
        assert_eq!(
            price_for("claude-sonnet-4-5-20250929").map(|p| p.input),
            Some(3.0)
        );
        assert_eq!(
            price_for("claude-opus-4-1-20250805").map(|p| p.input),
            Some(15.0)
        );
        assert_eq!(price_for("opus").map(|p| p.input), Some(5.0));
        assert_eq!(price_for("claude-haiku-4-5").map(|p| p.output), Some(5.0));
        assert_eq!(price_for("gpt-5-mini").map(|p| p.input), Some(0.25));
        assert_eq!(price_for("gpt-5.5").map(|p| p.output), Some(10.0));
        assert_eq!(
            price_for("gemini-2.5-pro").map(|p| p.cache_read),
            Some(0.31)
        );
        assert_eq!(price_for("llama-3"), None);
    }

    #[test]
    fn each_request_counts_once_with_its_largest_usage() {
        let mut billing = Billing::default();
        billing.observe(
            Some("m1"),
            Some("claude-sonnet-4-5"),
            &usage(10, 1_000, 20_000, 5),
        );
        billing.observe(
            Some("m1"),
            Some("claude-sonnet-4-5"),
            &usage(10, 1_000, 20_000, 300),
        );
        billing.observe(
            Some("m2"),
            Some("claude-sonnet-4-5"),
            &usage(5, 0, 21_300, 100),
        );
        assert_eq!(
            billing.billed(),
            Billed {
                input: 15,
                cache_write: 1_000,
                cache_read: 41_300,
                output: 400
            }
        );
        // 15×3 + 400×15 + 1,000×3.75 + 41,300×0.3 = 45 + 6,000 + 3,750 + 12,390 per MTok.
        let cost = billing.estimated_cost(None, &[]).expect("priced");
        assert!((cost - 0.022_185).abs() < 1e-9, "{cost}");
    }

    #[test]
    fn unknown_models_are_unknown_not_free() {
        let mut billing = Billing::default();
        billing.observe(Some("m1"), Some("llama-3"), &usage(10, 0, 0, 5));
        assert_eq!(billing.estimated_cost(None, &[]), None);
        assert!(
            billing.estimated_cost(Some("sonnet"), &[]).is_none(),
            "the message names its model"
        );
        let overrides = vec![(
            "llama".to_owned(),
            Prices::parse("1.25 10 0 0.125").expect("prices"),
        )];
        let cost = billing
            .estimated_cost(None, &overrides)
            .expect("priced by the override");
        assert!(
            (cost - (10.0 * 1.25 + 5.0 * 10.0) / 1e6).abs() < 1e-12,
            "{cost}"
        );
        assert!(Prices::parse("3 15").is_err());
        assert!(Prices::parse("3 15 x 1").is_err());
        assert!(Prices::parse("3 15 -1 1").is_err());
    }
}
