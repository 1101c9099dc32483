//! `debussy __hook pre-compact` and `debussy __hook post-tool-use`: the hooks debussy
//! gives Claude Code.
//!
//! `pre-compact` runs before Claude Code compacts a session's context, with the hook's
//! JSON on stdin. When the session's debussy listens on the FIFO named in
//! [`GUARD_ENV`](crate::session::guard::GUARD_ENV), the hook tells it and exits 2, which
//! blocks the compaction (stderr is the reason Claude Code records); debussy then stops
//! the session and continues in a fresh one from a checkpoint. When nobody listens it
//! exits 0 without a word and the compaction goes ahead, as without debussy.
//!
//! `post-tool-use` runs after every tool call. When the session has decided to stop (its
//! marker, named in [`STOP_ENV`](crate::session::guard::STOP_ENV), exists) it answers
//! `{"continue": false}`: Claude Code ends the session with the tool's result recorded
//! and before its next model request. Otherwise it says nothing and the agent goes on.

use std::io::Read as _;
use std::path::Path;

use crate::cli::HookArgs;
use crate::exit::{CommandResult, Exit};
use crate::session::guard::{self, GUARD_ENV, STOP_ENV};

/// The most bytes of hook input read (and ignored): Claude Code's input is small JSON.
const MAX_INPUT: u64 = 1 << 20;

/// What `post-tool-use` answers when the session is stopping.
const STOP_AFTER_TOOL: &str = r#"{"continue": false, "stopReason": "debussy stops this session here, after the tool call, and continues the work in a fresh one from a checkpoint"}"#;

/// Why the compaction was blocked, as Claude Code records it.
const BLOCKED: &str = "debussy blocked this compaction: it stops the session and continues the work in a fresh one from a checkpoint";

pub(super) fn run(args: &HookArgs) -> CommandResult {
    let _ = std::io::stdin()
        .take(MAX_INPUT)
        .read_to_end(&mut Vec::new());
    if args.event == crate::cli::HookEvent::PostToolUse {
        if let Some(path) = std::env::var_os(STOP_ENV).filter(|path| !path.is_empty())
            && guard::stop_marked(Path::new(&path))
        {
            println!("{STOP_AFTER_TOOL}");
        }
        return Ok(Exit::Success);
    }
    let Some(path) = std::env::var_os(GUARD_ENV).filter(|path| !path.is_empty()) else {
        return Ok(Exit::Success);
    };
    match guard::notify(Path::new(&path)) {
        Ok(true) => {
            crate::exit::to_stderr(&format!("{BLOCKED}\n"));
            std::process::exit(2)
        }
        Ok(false) => Ok(Exit::Success),
        Err(err) => {
            // Fail open: an agent that compacts loses detail, one that cannot is stuck.
            crate::exit::to_stderr(&format!(
                "debussy: could not reach the session ({err}); letting the compaction go ahead\n"
            ));
            Ok(Exit::Success)
        }
    }
}
