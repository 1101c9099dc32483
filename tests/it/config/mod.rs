//! Integration tests for configuration loading, `debussy config` and `debussy init`,
//! driving the real binary in temporary directories.
//!
//! Every command runs with `HOME` and `XDG_CONFIG_HOME` pointing into the test's own
//! temporary directory and with the caller's `DEBUSSY_*` variables removed, so the
//! user's real configuration never leaks in.

mod errors;
mod init;
mod layering;
mod support;
