//! The run loop: plan → phases in dependency order → attempts → sessions, with gates,
//! compliance, checkpoints, commits and state.

pub mod prompts;
pub mod selection;
