//! [`RunDuration`]: a span of wall time as people write it in a config file or a flag
//! (`90m`, `2h30m`, `1h 15m`, or a bare number of seconds).

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The longest span accepted: a year, far past any run.
const MAX_SECS: u64 = 366 * 86_400;

/// A positive span of wall time, read from text such as `90m`, `2h30m` or `3600`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunDuration(Duration);

impl RunDuration {
    /// The span.
    #[must_use]
    pub fn get(self) -> Duration {
        self.0
    }

    /// Read `text`: a whole number of seconds, or units as in `2h30m`, `90m`, `1h 15m 30s`.
    ///
    /// # Errors
    /// What was wrong, in words, with an example of what works.
    pub fn parse(text: &str) -> Result<RunDuration, String> {
        let trimmed = text.trim();
        let duration = if let Ok(secs) = trimmed.parse::<u64>() {
            Duration::from_secs(secs)
        } else {
            let signed: jiff::SignedDuration = trimmed.parse().map_err(|_| {
                format!(
                    "`{trimmed}` is not a duration; write it as 90m, 2h30m or a number of seconds"
                )
            })?;
            Duration::try_from(signed)
                .map_err(|_| format!("`{trimmed}` is negative; a duration must be positive"))?
        };
        if duration.is_zero() {
            return Err("a duration must be more than zero".to_owned());
        }
        // `10ms` where seconds were meant would read back as `0s` and act as none.
        if duration < Duration::from_secs(1) {
            return Err(format!(
                "`{trimmed}` is less than a second; durations count whole seconds"
            ));
        }
        if duration.as_secs() > MAX_SECS {
            return Err(format!("`{trimmed}` is longer than a year"));
        }
        Ok(RunDuration(duration))
    }
}

impl fmt::Display for RunDuration {
    /// As `2h30m`, `45m`, `90s`: units down to the second, zeros left out.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let secs = self.0.as_secs();
        let (hours, minutes, seconds) = (secs / 3_600, secs / 60 % 60, secs % 60);
        let mut wrote = false;
        for (value, unit) in [(hours, "h"), (minutes, "m"), (seconds, "s")] {
            if value > 0 {
                write!(f, "{value}{unit}")?;
                wrote = true;
            }
        }
        if !wrote {
            f.write_str("0s")?;
        }
        Ok(())
    }
}

impl Serialize for RunDuration {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for RunDuration {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Secs(u64),
            Text(String),
        }
        let text = match Raw::deserialize(deserializer)? {
            Raw::Secs(secs) => secs.to_string(),
            Raw::Text(text) => text,
        };
        RunDuration::parse(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_units_and_bare_seconds() {
        for (text, secs) in [
            ("90m", 5_400),
            ("2h30m", 9_000),
            ("1h 15m 30s", 4_530),
            ("3600", 3_600),
            (" 45s ", 45),
        ] {
            assert_eq!(
                RunDuration::parse(text).expect(text).get(),
                Duration::from_secs(secs),
                "{text}"
            );
        }
    }

    #[test]
    fn refuses_nonsense_zero_negative_and_huge_spans() {
        for text in ["soon", "0", "0m", "-5m", "400d", "", "10ms", "0.5s"] {
            let err = RunDuration::parse(text).expect_err(text);
            assert!(!err.is_empty(), "{text}");
        }
        assert!(
            RunDuration::parse("soon")
                .expect_err("text")
                .contains("90m, 2h30m")
        );
    }

    #[test]
    fn displays_as_it_is_written_and_round_trips() {
        for text in ["2h30m", "45m", "90s", "1h0m5s"] {
            let duration = RunDuration::parse(text).expect(text);
            assert_eq!(RunDuration::parse(&duration.to_string()), Ok(duration));
        }
        assert_eq!(
            RunDuration::parse("5400").expect("secs").to_string(),
            "1h30m"
        );
        let yaml: Option<RunDuration> = serde_norway::from_str("7200").expect("number");
        assert_eq!(yaml.map(RunDuration::get), Some(Duration::from_secs(7_200)));
    }
}
