//! [`RunDuration`]: a span of wall time as people write it in a config file or a flag
//! (`90m`, `2h30m`, `1h 15m`, or a bare number of seconds); [`Seconds`]: a time limit
//! written as a whole number of seconds.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The longest span accepted: a year, far past any run.
const MAX_SECS: u64 = 366 * 86_400;

/// A time limit the configuration writes as a whole number of seconds (`timeout: 1800`),
/// read where it is used as a [`Duration`]. The file, `config show` and the schema see
/// the bare number; `config::validate` bounds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Seconds(pub u64);

impl Seconds {
    /// The limit as a span of time.
    #[must_use]
    pub fn duration(self) -> Duration {
        Duration::from_secs(self.0)
    }

    /// Whether it is no time at all.
    #[must_use]
    pub fn is_zero(self) -> bool {
        self.0 == 0
    }
}

impl fmt::Display for Seconds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}s", self.0)
    }
}

/// A positive span of wall time, read from text such as `90m`, `2h30m` or `3600`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunDuration(Duration);

impl RunDuration {
    /// The span.
    #[must_use]
    pub fn get(self) -> Duration {
        self.0
    }

    /// Read `text`: a whole number of seconds, or units as in `2h30m`, `90m`, `1h 15m 30s`,
    /// `1d` (days of 24 hours), `1.5h`. At least a second and at most a year: the limit
    /// counts whole seconds, so `10ms` would be no limit a person meant.
    ///
    /// # Errors
    /// What was wrong, in words, with an example of what works.
    pub fn parse(text: &str) -> Result<RunDuration, String> {
        let trimmed = text.trim();
        let duration = if let Ok(secs) = trimmed.parse::<u64>() {
            Duration::from_secs(secs)
        } else if let Some(units) = units(trimmed) {
            units?
        } else {
            let signed: jiff::SignedDuration = trimmed.parse().map_err(|_| {
                format!(
                    "`{trimmed}` is not a duration; write it as 90m, 2h30m, 1d or a number of seconds"
                )
            })?;
            Duration::try_from(signed)
                .map_err(|_| format!("`{trimmed}` is negative; a duration must be positive"))?
        };
        if duration.is_zero() {
            return Err("a duration must be more than zero".to_owned());
        }
        if duration < Duration::from_secs(1) {
            return Err(format!(
                "`{trimmed}` is less than a second; a duration must be at least 1s"
            ));
        }
        if duration.as_secs() > MAX_SECS {
            return Err(format!("`{trimmed}` is longer than a year"));
        }
        Ok(RunDuration(duration))
    }
}

/// `text` as numbers with units (`1d 2h`, `90m`, `1.5h`, `10ms`): `None` when it is not
/// written that way (jiff reads the other forms), an error past a year.
fn units(text: &str) -> Option<Result<Duration, String>> {
    let mut rest = text;
    let mut total = 0.0_f64;
    let mut any = false;
    while !rest.is_empty() {
        rest = rest.trim_start_matches([' ', ',']);
        let number_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number: f64 = rest[..number_len].parse().ok()?;
        rest = rest[number_len..].trim_start();
        let unit_len = rest
            .find(|c: char| !c.is_ascii_alphabetic())
            .unwrap_or(rest.len());
        let seconds = match rest[..unit_len].to_ascii_lowercase().as_str() {
            "d" | "day" | "days" => 86_400.0,
            "h" | "hr" | "hrs" | "hour" | "hours" => 3_600.0,
            "m" | "min" | "mins" | "minute" | "minutes" => 60.0,
            "s" | "sec" | "secs" | "second" | "seconds" => 1.0,
            "ms" | "msec" | "msecs" | "millisecond" | "milliseconds" => 0.001,
            _ => return None,
        };
        rest = &rest[unit_len..];
        total += number * seconds;
        any = true;
    }
    if !any || !total.is_finite() {
        return None;
    }
    #[expect(
        clippy::cast_precision_loss,
        reason = "a year of seconds is far below 2^52"
    )]
    let max = MAX_SECS as f64;
    if total > max {
        return Some(Err(format!("`{text}` is longer than a year")));
    }
    Some(Ok(Duration::from_secs_f64(total)))
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
            ("1d", 86_400),
            ("2 days", 172_800),
            ("1d 2h", 93_600),
            ("1.5h", 5_400),
            ("90 minutes", 5_400),
            ("PT2H", 7_200),
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
        for text in [
            "soon", "0", "0m", "-5m", "400d", "", "10ms", "999ms", "0.5s", "5x", "1e400s",
        ] {
            let err = RunDuration::parse(text).expect_err(text);
            assert!(!err.is_empty(), "{text}");
        }
        assert!(
            RunDuration::parse("soon")
                .expect_err("text")
                .contains("90m, 2h30m")
        );
        assert_eq!(
            RunDuration::parse("10ms"),
            Err("`10ms` is less than a second; a duration must be at least 1s".to_owned())
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
