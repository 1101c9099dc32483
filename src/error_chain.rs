//! One line for an error and its causes, for messages shown to people: the causes
//! (git's or the OS's own words) are where the useful detail is.

/// `err` and each of its sources joined with `: `, skipping a cause whose text the line
/// already holds (wrappers often repeat their source), or which only puts a code in
/// front of the cause before it (SQLite's "Error code 13: database or disk is full"):
/// `commit failed: index is locked`.
pub(crate) fn error_chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut last = text.clone();
    let mut source = err.source();
    while let Some(cause) = source {
        let words = cause.to_string();
        if !text.contains(&words) && !words.ends_with(&last) {
            text.push_str(": ");
            text.push_str(&words);
            last = words;
        }
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("failed to start `x`")]
    struct Outer(#[source] std::io::Error);

    #[derive(Debug, thiserror::Error)]
    #[error("failed to start `x`: not found")]
    struct Repeating(#[source] std::io::Error);

    #[test]
    fn causes_are_joined_once() {
        let io = || std::io::Error::new(std::io::ErrorKind::NotFound, "not found");
        assert_eq!(error_chain(&Outer(io())), "failed to start `x`: not found");
        assert_eq!(
            error_chain(&Repeating(io())),
            "failed to start `x`: not found"
        );
    }

    #[test]
    fn a_cause_that_only_numbers_the_one_before_is_left_out() {
        let full = rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_FULL),
            Some("database or disk is full".into()),
        );
        assert_eq!(
            error_chain(&Recording(full)),
            "failed to record: database or disk is full"
        );
    }

    #[derive(Debug, thiserror::Error)]
    #[error("failed to record")]
    struct Recording(#[source] rusqlite::Error);
}
