//! English for counts and times: the one place that knows "1 file" but "2 files", and
//! how a moment reads on this machine's clock.

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

#[cfg(test)]
mod tests {
    use super::{at_in, local_time_of, plural};

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
}
