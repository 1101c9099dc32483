//! `debussy run`: load the configuration and the plan, audit it, pick the output (the
//! HUD on a terminal, else plain lines or JSON), add notifications, hook up Ctrl-C, run
//! the orchestrator and turn its summary into an exit code (0 completed, 1 a phase failed
//! or was blocked, 2 usage or config, 130 interrupted).

mod dry_run;
mod launch;
mod output;
mod overrides;
mod settings;
mod signals;

pub(super) use launch::run;
