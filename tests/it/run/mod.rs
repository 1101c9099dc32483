//! `debussy run` end to end in temporary git repositories, one module an agent: the
//! built-in simulated agent ([`sim`]), and the real Claude Code ([`claude`]), Codex
//! ([`codex`]) and Gemini ([`gemini`]) CLIs against the scripted model server.

mod claude;
mod codex;
mod gemini;
mod sim;
