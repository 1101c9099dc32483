//! The simulated agent as a real process: `debussy __sim-agent` in a temp dir, its
//! stream-json read back by debussy's own parser and context meter.

mod endings;
mod kit;
mod playing;
