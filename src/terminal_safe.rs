//! Text from outside debussy (what the agent says, its tool output, a plan's titles, a
//! program's version line) made safe to print to a terminal: a control character is
//! shown as an escape (`\u{1b}`), never sent, so nothing the agent writes can set the
//! window's title, clear the screen, move the cursor, write the clipboard (OSC 52) or
//! overwrite a line with a carriage return. Colour (SGR: `ESC [ digits m`) is the one
//! sequence let through: debussy's own tables use it, and it only paints.

use std::borrow::Cow;

/// `text` with every control character but newline and tab escaped, and colour kept.
#[must_use]
pub fn terminal_safe(text: &str) -> Cow<'_, str> {
    escaped(text, Colour::Kept)
}

/// `text` with every control character but newline and tab escaped, colour included: for
/// output debussy never colours itself (the run's plain lines), so an agent's colour
/// cannot hide text (`ESC[8m`) or stay on after the line.
#[must_use]
pub fn plain_text(text: &str) -> Cow<'_, str> {
    escaped(text, Colour::Shown)
}

/// What becomes of a colour sequence.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Colour {
    /// Sent: debussy's own tables use it.
    Kept,
    /// Shown as an escape, as every other sequence is.
    Shown,
}

fn escaped(text: &str, colour: Colour) -> Cow<'_, str> {
    if !text.chars().any(is_unsafe) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if let Some(len) = colour_len(rest).filter(|_| colour == Colour::Kept) {
            out.push_str(&rest[..len]);
            rest = &rest[len..];
            continue;
        }
        if is_unsafe(c) {
            out.extend(c.escape_debug());
        } else {
            out.push(c);
        }
        rest = &rest[c.len_utf8()..];
    }
    Cow::Owned(out)
}

/// C0 and C1 controls and DEL, but for the two that only lay text out.
fn is_unsafe(c: char) -> bool {
    c.is_control() && c != '\n' && c != '\t'
}

/// `text` cut in its middle to at most `max` characters, `…` where it was cut: a value
/// from outside (a config line of 100 KB) quoted in a message keeps its start and its
/// end, and the message stays a few lines long.
#[must_use]
pub fn clipped(text: &str, max: usize) -> Cow<'_, str> {
    let count = text.chars().count();
    if count <= max {
        return Cow::Borrowed(text);
    }
    let tail = max.saturating_sub(1) / 3;
    let head = max.saturating_sub(1) - tail;
    let mut out: String = text.chars().take(head).collect();
    out.push('…');
    out.extend(text.chars().skip(count - tail));
    Cow::Owned(out)
}

/// The length of the colour sequence `text` starts with, if it starts with one.
fn colour_len(text: &str) -> Option<usize> {
    let params = text.strip_prefix("\x1b[")?;
    let digits = params
        .bytes()
        .take_while(|b| b.is_ascii_digit() || *b == b';')
        .count();
    (params.as_bytes().get(digits) == Some(&b'm')).then_some(2 + digits + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_is_borrowed_as_it_is() {
        let text = "phase 1: done\n\tindented, ünïcödé";
        assert!(matches!(terminal_safe(text), Cow::Borrowed(t) if t == text));
    }

    #[test]
    fn colour_passes_and_every_other_sequence_is_shown() {
        assert_eq!(
            terminal_safe("\x1b[1;31mfailed\x1b[0m"),
            "\x1b[1;31mfailed\x1b[0m"
        );
        assert_eq!(
            terminal_safe("a\x1b]0;title\x07b\x1b[2Jc\x1b[1;1Hd"),
            r"a\u{1b}]0;title\u{7}b\u{1b}[2Jc\u{1b}[1;1Hd"
        );
        assert_eq!(
            terminal_safe("\x1b]52;c;aGk=\x1b\\"),
            r"\u{1b}]52;c;aGk=\u{1b}\"
        );
    }

    #[test]
    fn clipped_keeps_the_start_and_the_end() {
        assert!(matches!(clipped("short", 10), Cow::Borrowed("short")));
        assert_eq!(clipped("abcdefghijklmnopqrstuvwxyz", 10), "abcdef…xyz");
        assert_eq!(clipped(&"é".repeat(100), 7).chars().count(), 7);
    }

    #[test]
    fn plain_text_shows_colour_too() {
        assert_eq!(plain_text("a\x1b[8mhidden"), r"a\u{1b}[8mhidden");
        assert_eq!(plain_text("plain"), "plain");
    }

    #[test]
    fn carriage_returns_and_c1_controls_are_shown() {
        assert_eq!(terminal_safe("ok\rFAKE"), r"ok\rFAKE");
        assert_eq!(terminal_safe("\u{9b}31m\u{7f}"), r"\u{9b}31m\u{7f}");
        assert_eq!(terminal_safe("\x1b"), r"\u{1b}");
        assert_eq!(terminal_safe("\x1b[31"), r"\u{1b}[31");
    }
}
