//! The context meter: how full an agent's context window is, from the agent's own usage
//! numbers, and when to stop the session for a smart restart.
//!
//! [`ContextMeter`] takes [`crate::agent::AgentEvent`]s one at a time and answers with a
//! [`StopReason`] when a threshold is crossed; [`Snapshot`] is what the HUD shows. The
//! window is resolved by [`window`]; estimates of not-yet-reported content by [`estimate`].
//! Everything here is pure: no I/O, no clock. The state store remembers reported windows
//! across sessions; this module only takes them as input ([`WindowInputs::remembered`])
//! and offers new ones ([`ContextMeter::reported_window`]).

pub mod cost;
pub mod estimate;
mod meter;
pub mod window;

pub use crate::config::ContextLimit;
pub use meter::{ContextMeter, Exactness, MeterSettings, Snapshot, StopReason, percent};
pub use window::{Window, WindowInputs, WindowSource};
