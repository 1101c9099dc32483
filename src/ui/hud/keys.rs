//! Key bindings: which key does what, as one struct with a [`Default`], so the whole
//! keyboard contract is readable in one place (and the hint bar can show it).

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

/// One key, with the modifiers it needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Binding {
    code: KeyCode,
    modifiers: KeyModifiers,
}

impl Binding {
    /// A key pressed without modifiers (Shift is ignored for characters).
    const fn plain(code: KeyCode) -> Binding {
        Binding {
            code,
            modifiers: KeyModifiers::NONE,
        }
    }

    /// A key pressed with Ctrl.
    const fn ctrl(c: char) -> Binding {
        Binding {
            code: KeyCode::Char(c),
            modifiers: KeyModifiers::CONTROL,
        }
    }

    fn matches(&self, key: &KeyEvent) -> bool {
        // Shift is part of the character itself (`Q`), so it is not compared.
        let relevant = key.modifiers & (KeyModifiers::CONTROL | KeyModifiers::ALT);
        let code = match key.code {
            KeyCode::Char(c) if self.modifiers == KeyModifiers::NONE => {
                KeyCode::Char(c.to_ascii_lowercase())
            }
            code => code,
        };
        code == self.code && relevant == self.modifiers
    }
}

/// What a key asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Action {
    /// Pause after the current session, or resume.
    TogglePause,
    /// Restart the session now with a checkpoint.
    RestartNow,
    /// Skip the current phase (asks first).
    SkipPhase,
    /// Focus the next running phase (phases side by side): its log alone, and `s`/`r`
    /// aim at it; past the last, every phase again.
    Focus,
    /// Show tool inputs in full, or compactly.
    ToggleVerbose,
    /// Follow new activity, or stay where the view is.
    ToggleFollow,
    /// One line up.
    ScrollUp,
    /// One line down.
    ScrollDown,
    /// One page up.
    PageUp,
    /// One page down.
    PageDown,
    /// The oldest line kept.
    Top,
    /// The newest line (and follow again).
    Bottom,
    /// Quit: stop the agent and pause the run (asks first).
    Quit,
    /// Ctrl-C: interrupt at once, kill on the second press, exit on the third.
    Interrupt,
    /// Answer yes to a question.
    Yes,
    /// Answer no to a question.
    No,
}

/// The HUD's keyboard.
#[derive(Debug, Clone)]
pub(crate) struct KeyBindings {
    /// Pause after the session / resume.
    pub(crate) pause: Binding,
    /// Manual checkpoint restart.
    pub(crate) restart: Binding,
    /// Skip the phase.
    pub(crate) skip: Binding,
    /// Focus the next running phase.
    pub(crate) focus: Binding,
    /// Verbose tool inputs.
    pub(crate) verbose: Binding,
    /// Auto-scroll.
    pub(crate) follow: Binding,
    /// Quit.
    pub(crate) quit: Binding,
    /// Interrupt (Ctrl-C; raw mode turns it into a key).
    pub(crate) interrupt: Binding,
    /// Scrolling.
    pub(crate) up: Binding,
    pub(crate) down: Binding,
    pub(crate) page_up: Binding,
    pub(crate) page_down: Binding,
    pub(crate) top: Binding,
    pub(crate) bottom: Binding,
    /// Answers.
    pub(crate) yes: [Binding; 2],
    pub(crate) no: [Binding; 2],
}

impl Default for KeyBindings {
    fn default() -> Self {
        KeyBindings {
            pause: Binding::plain(KeyCode::Char('p')),
            restart: Binding::plain(KeyCode::Char('r')),
            skip: Binding::plain(KeyCode::Char('s')),
            focus: Binding::plain(KeyCode::Char('f')),
            verbose: Binding::plain(KeyCode::Char('v')),
            follow: Binding::plain(KeyCode::Char('a')),
            quit: Binding::plain(KeyCode::Char('q')),
            interrupt: Binding::ctrl('c'),
            up: Binding::plain(KeyCode::Up),
            down: Binding::plain(KeyCode::Down),
            page_up: Binding::plain(KeyCode::PageUp),
            page_down: Binding::plain(KeyCode::PageDown),
            top: Binding::plain(KeyCode::Home),
            bottom: Binding::plain(KeyCode::End),
            yes: [
                Binding::plain(KeyCode::Char('y')),
                Binding::plain(KeyCode::Enter),
            ],
            no: [
                Binding::plain(KeyCode::Char('n')),
                Binding::plain(KeyCode::Esc),
            ],
        }
    }
}

impl KeyBindings {
    /// What `key` asks for while no question is open.
    pub(crate) fn action(&self, key: &KeyEvent) -> Option<Action> {
        if !wanted(key) {
            return None;
        }
        let table = [
            (self.interrupt, Action::Interrupt),
            (self.pause, Action::TogglePause),
            (self.restart, Action::RestartNow),
            (self.skip, Action::SkipPhase),
            (self.focus, Action::Focus),
            (self.verbose, Action::ToggleVerbose),
            (self.follow, Action::ToggleFollow),
            (self.quit, Action::Quit),
            (self.up, Action::ScrollUp),
            (self.down, Action::ScrollDown),
            (self.page_up, Action::PageUp),
            (self.page_down, Action::PageDown),
            (self.top, Action::Top),
            (self.bottom, Action::Bottom),
        ];
        table
            .iter()
            .find(|(binding, _)| binding.matches(key))
            .map(|(_, action)| *action)
    }

    /// What `key` answers while a question is open: yes, no, Ctrl-C, or nothing.
    pub(crate) fn answer(&self, key: &KeyEvent) -> Option<Action> {
        if !wanted(key) {
            return None;
        }
        if self.interrupt.matches(key) {
            Some(Action::Interrupt)
        } else if self.yes.iter().any(|b| b.matches(key)) {
            Some(Action::Yes)
        } else if self.no.iter().any(|b| b.matches(key)) {
            Some(Action::No)
        } else {
            None
        }
    }
}

/// Presses and repeats count; releases (reported by some terminals) do not.
fn wanted(key: &KeyEvent) -> bool {
    matches!(key.kind, KeyEventKind::Press | KeyEventKind::Repeat)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(code: KeyCode, modifiers: KeyModifiers) -> KeyEvent {
        KeyEvent::new(code, modifiers)
    }

    /// Each key of `cases`, pressed with its modifiers, is read as its action.
    fn assert_maps(
        read: impl Fn(&KeyEvent) -> Option<Action>,
        cases: &[(KeyCode, KeyModifiers, Option<Action>)],
    ) {
        for &(code, modifiers, want) in cases {
            assert_eq!(read(&key(code, modifiers)), want, "{modifiers:?} {code:?}");
        }
    }

    #[test]
    fn letters_ignore_case_but_not_ctrl() {
        let keys = KeyBindings::default();
        assert_maps(
            |key| keys.action(key),
            &[
                (KeyCode::Char('q'), KeyModifiers::NONE, Some(Action::Quit)),
                (KeyCode::Char('Q'), KeyModifiers::SHIFT, Some(Action::Quit)),
                (
                    KeyCode::Char('c'),
                    KeyModifiers::CONTROL,
                    Some(Action::Interrupt),
                ),
                (KeyCode::Char('c'), KeyModifiers::NONE, None),
                (KeyCode::Char('p'), KeyModifiers::CONTROL, None),
            ],
        );
    }

    #[test]
    fn questions_take_yes_no_and_ctrl_c() {
        let keys = KeyBindings::default();
        assert_maps(
            |key| keys.answer(key),
            &[
                (KeyCode::Enter, KeyModifiers::NONE, Some(Action::Yes)),
                (KeyCode::Esc, KeyModifiers::NONE, Some(Action::No)),
                (
                    KeyCode::Char('c'),
                    KeyModifiers::CONTROL,
                    Some(Action::Interrupt),
                ),
                (KeyCode::Char('p'), KeyModifiers::NONE, None),
            ],
        );
    }

    #[test]
    fn releases_are_ignored() {
        let keys = KeyBindings::default();
        let mut release = key(KeyCode::Char('q'), KeyModifiers::NONE);
        release.kind = KeyEventKind::Release;
        assert_eq!(keys.action(&release), None);
    }
}
