//! English for counts, sums and times: the one place that knows "1 file" but "2 files",
//! how a number, a dollar figure and a span are written, and how a moment reads on this
//! machine's clock.

/// `""` for one, `"s"` for any other count: `format!("{n} file{}", plural(n))`.
pub fn plural<N: PartialEq + From<u8>>(count: N) -> &'static str {
    if count == N::from(1) { "" } else { "s" }
}

/// `at` on this machine's clock: `14:05:09 CET` today, `2026-11-27 01:06 CET` on
/// another day.
#[must_use]
pub fn local_time(at: jiff::Timestamp) -> String {
    let zone = jiff::tz::TimeZone::system();
    at_in(at, &jiff::Timestamp::now().to_zoned(zone.clone()), &zone)
}

/// [`local_time`] with the clock given: `now` in `zone`.
fn at_in(at: jiff::Timestamp, now: &jiff::Zoned, zone: &jiff::tz::TimeZone) -> String {
    let zoned = at.to_zoned(zone.clone());
    let format = if zoned.date() == now.date() {
        "%H:%M:%S %Z"
    } else {
        "%Y-%m-%d %H:%M %Z"
    };
    zoned.strftime(format).to_string()
}

/// An RFC 3339 time (as events carry it) on this machine's clock, or as written when it
/// is not one.
#[must_use]
pub fn local_time_of(text: &str) -> String {
    text.parse::<jiff::Timestamp>()
        .map_or_else(|_| text.to_owned(), local_time)
}

/// A number with thousands separators: `1,234,567`.
#[must_use]
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A span of seconds, to the second below an hour: `12s`, `3m05s`, `1h02m`.
#[must_use]
pub fn duration(secs: f64) -> String {
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "durations are small and positive"
    )]
    let s = secs.max(0.0).round() as u64;
    match s {
        s if s >= 3600 => format!("{}h{:02}m", s / 3600, (s % 3600) / 60),
        s if s >= 60 => format!("{}m{:02}s", s / 60, s % 60),
        s => format!("{s}s"),
    }
}

/// Dollars and cents, marked `~` when some of the figure is an estimate: `$0.12`, `~$2.09`.
#[must_use]
pub fn dollars(usd: f64, estimated: bool) -> String {
    if estimated {
        format!("~${usd:.2}")
    } else {
        format!("${usd:.2}")
    }
}

/// A limit in dollars, without trailing zeros: `$5`, `$2.5`, `$0.25`.
#[must_use]
pub fn round_dollars(usd: f64) -> String {
    let text = format!("{usd:.2}");
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// A short duration to the tenth of a second, as a setting reads: `250 ms`, `30 s`,
/// `1.5 s`.
#[must_use]
pub fn precise_span(d: std::time::Duration) -> String {
    if d < std::time::Duration::from_secs(1) {
        format!("{} ms", d.as_millis())
    } else if d.subsec_millis() == 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::{at_in, local_time_of, plural, precise_span, round_dollars, thousands};

    #[test]
    fn one_is_singular_and_every_other_count_plural() {
        assert_eq!(plural(1_u32), "");
        assert_eq!(plural(0_usize), "s");
        assert_eq!(plural(2_u64), "s");
    }

    #[test]
    fn a_time_today_reads_as_the_hour_and_another_day_with_its_date() {
        let zone = jiff::tz::TimeZone::fixed(jiff::tz::offset(1));
        let noon: jiff::Timestamp = "2026-11-25T11:00:00Z".parse().expect("now");
        let now = noon.to_zoned(zone.clone());
        let today: jiff::Timestamp = "2026-11-25T22:47:00Z".parse().expect("today");
        assert!(at_in(today, &now, &zone).starts_with("23:47:00 "));
        let later: jiff::Timestamp = "2026-11-27T00:06:00Z".parse().expect("later");
        assert!(at_in(later, &now, &zone).starts_with("2026-11-27 01:06 "));
        assert_eq!(local_time_of("soon"), "soon");
    }

    #[test]
    fn numbers_are_grouped_by_thousands() {
        for (n, text) in [
            (0, "0"),
            (999, "999"),
            (1_000, "1,000"),
            (26_555, "26,555"),
            (1_000_000, "1,000,000"),
        ] {
            assert_eq!(thousands(n), text);
        }
    }

    #[test]
    fn a_limit_in_dollars_drops_trailing_zeros() {
        assert_eq!(round_dollars(5.0), "5");
        assert_eq!(round_dollars(2.5), "2.5");
        assert_eq!(round_dollars(0.25), "0.25");
    }

    #[test]
    fn a_short_span_reads_in_milliseconds_or_seconds() {
        use std::time::Duration;
        assert_eq!(precise_span(Duration::from_millis(250)), "250 ms");
        assert_eq!(precise_span(Duration::from_secs(30)), "30 s");
        assert_eq!(precise_span(Duration::from_millis(1500)), "1.5 s");
    }
}
