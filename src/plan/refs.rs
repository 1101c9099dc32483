//! Phase references in prose: `Phase 2`, `Phase 3.1`, `Phases 1 and 2`, `Phases 1-3`,
//! and bare id lists (`1, 2`) for `**Depends On:**` values that name no "Phase".
//!
//! Works on words, not regexes over lines, so `phase-1.md` (a file name) is not a
//! reference while `Phase 1 - Foundation` is a reference to phase 1 only.

use super::model::PhaseId;

/// The widest range (`Phases 1-N`) that is expanded into every id in between.
const MAX_RANGE: u64 = 100;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Word(String),
    Punct(char),
}

fn tokenize(text: &str) -> Vec<Token> {
    let mut tokens = Vec::new();
    let mut word = String::new();
    let flush = |word: &mut String, tokens: &mut Vec<Token>| {
        if !word.is_empty() {
            let trimmed = word.trim_end_matches('.').to_owned();
            if !trimmed.is_empty() {
                tokens.push(Token::Word(trimmed));
            }
            word.clear();
        }
    };
    for c in text.chars() {
        if c.is_alphanumeric() || c == '.' {
            word.push(c);
        } else {
            flush(&mut word, &mut tokens);
            if !c.is_whitespace() {
                tokens.push(Token::Punct(c));
            }
        }
    }
    flush(&mut word, &mut tokens);
    tokens
}

fn as_id(token: Option<&Token>) -> Option<PhaseId> {
    match token {
        Some(Token::Word(word)) if word.starts_with(|c: char| c.is_ascii_digit()) => {
            PhaseId::parse(word)
        }
        _ => None,
    }
}

fn is_list_separator(token: &Token) -> bool {
    match token {
        Token::Punct(c) => matches!(c, ',' | '&' | '+' | '/'),
        Token::Word(word) => word.eq_ignore_ascii_case("and"),
    }
}

fn is_range_separator(token: &Token) -> bool {
    match token {
        Token::Punct(c) => matches!(c, '-' | '–' | '—'),
        Token::Word(word) => {
            word.eq_ignore_ascii_case("to") || word.eq_ignore_ascii_case("through")
        }
    }
}

/// Read an id list starting at `tokens[start]`: `1`, `1, 2 and 3`, `1-3`. Returns the ids
/// and the index after the list; no ids when `tokens[start]` is not an id.
fn id_list(tokens: &[Token], start: usize) -> (Vec<PhaseId>, usize) {
    let mut ids = Vec::new();
    let Some(first) = as_id(tokens.get(start)) else {
        return (ids, start);
    };
    ids.push(first);
    let mut at = start + 1;
    loop {
        // A range: `1-3`, `1 to 3`.
        if tokens.get(at).is_some_and(is_range_separator)
            && let Some(end) = as_id(tokens.get(at + 1))
        {
            if let (Some(from), Some(to)) =
                (ids.last().and_then(PhaseId::as_number), end.as_number())
                && from < to
                && to - from <= MAX_RANGE
            {
                ids.extend((from + 1..to).filter_map(|n| PhaseId::parse(&n.to_string())));
            }
            ids.push(end);
            at += 2;
            continue;
        }
        // A list: `1, 2`, `1 and 2`, `1, and 2`.
        let mut next = at;
        while tokens.get(next).is_some_and(is_list_separator) {
            next += 1;
        }
        if next > at
            && let Some(id) = as_id(tokens.get(next))
        {
            ids.push(id);
            at = next + 1;
            continue;
        }
        return (ids, at);
    }
}

/// The phase ids that `text` names with the word "Phase" or "Phases" (any case).
pub(crate) fn phase_refs(text: &str) -> Vec<PhaseId> {
    let tokens = tokenize(text);
    let mut ids = Vec::new();
    let mut at = 0;
    while at < tokens.len() {
        let is_phase_word = matches!(&tokens[at], Token::Word(word)
            if word.eq_ignore_ascii_case("phase") || word.eq_ignore_ascii_case("phases"));
        if !is_phase_word {
            at += 1;
            continue;
        }
        let mut start = at + 1;
        if tokens.get(start) == Some(&Token::Punct('#')) {
            start += 1;
        }
        let (found, next) = id_list(&tokens, start);
        if found.is_empty() {
            at += 1;
        } else {
            ids.extend(found);
            at = next;
        }
    }
    dedup(ids)
}

/// The ids of `text` when it is nothing but an id list (`2`, `1, 2`, `1 and 3`).
pub(crate) fn bare_ids(text: &str) -> Option<Vec<PhaseId>> {
    let tokens = tokenize(text);
    let (ids, end) = id_list(&tokens, 0);
    (!ids.is_empty() && end == tokens.len()).then(|| dedup(ids))
}

fn dedup(ids: Vec<PhaseId>) -> Vec<PhaseId> {
    let mut out: Vec<PhaseId> = Vec::with_capacity(ids.len());
    for id in ids {
        if !out.contains(&id) {
            out.push(id);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(text: &str) -> Vec<String> {
        phase_refs(text).iter().map(ToString::to_string).collect()
    }

    #[test]
    fn single_references() {
        assert_eq!(ids("Phase 1"), ["1"]);
        assert_eq!(ids("[Phase 2: Backend API]"), ["2"]);
        assert_eq!(ids("Phase 1 - Foundation Sprint"), ["1"]);
        assert_eq!(ids("see phase 3.1."), ["3.1"]);
        assert_eq!(ids("Phase #4"), ["4"]);
        assert_eq!(
            ids("Phase 2 Authentication (authenticate middleware)"),
            ["2"]
        );
    }

    #[test]
    fn lists_and_ranges() {
        assert_eq!(ids("Phases 1 and 2"), ["1", "2"]);
        assert_eq!(ids("Phases 1, 2, and 3 are complete"), ["1", "2", "3"]);
        assert_eq!(ids("Phases 1-4 (all modules)"), ["1", "2", "3", "4"]);
        assert_eq!(ids("Phases 2 to 3"), ["2", "3"]);
        assert_eq!(ids("Phase 1 and Phase 3"), ["1", "3"]);
        assert_eq!(ids("Phases 3.1-3.2"), ["3.1", "3.2"]);
        assert_eq!(ids("Phase 1, Phase 1"), ["1"]);
    }

    #[test]
    fn non_references() {
        assert!(ids("phase-1.md").is_empty());
        assert!(ids("N/A (initial phase)").is_empty());
        assert!(ids("this phase depends on nothing").is_empty());
        assert!(ids("Phase: Database").is_empty());
        assert!(ids("").is_empty());
    }

    #[test]
    fn bare_id_lists() {
        let strings = |ids: Option<Vec<PhaseId>>| {
            ids.map(|v| v.iter().map(ToString::to_string).collect::<Vec<_>>())
        };
        assert_eq!(strings(bare_ids("2")), Some(vec!["2".to_owned()]));
        assert_eq!(
            strings(bare_ids("1, 2 and 3.1")),
            Some(vec!["1".to_owned(), "2".to_owned(), "3.1".to_owned()])
        );
        assert_eq!(strings(bare_ids("1 then 2")), None);
        assert_eq!(strings(bare_ids("Foundation")), None);
        assert_eq!(strings(bare_ids("")), None);
    }
}
