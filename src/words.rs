//! English for counts: the one place that knows "1 file" but "2 files".

/// `""` for one, `"s"` for any other count: `format!("{n} file{}", plural(n))`.
pub fn plural<N: PartialEq + From<u8>>(count: N) -> &'static str {
    if count == N::from(1) { "" } else { "s" }
}

#[cfg(test)]
mod tests {
    use super::plural;

    #[test]
    fn one_is_singular_and_every_other_count_plural() {
        assert_eq!(plural(1_u32), "");
        assert_eq!(plural(0_usize), "s");
        assert_eq!(plural(2_u64), "s");
    }
}
