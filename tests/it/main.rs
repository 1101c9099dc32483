//! debussy's integration tests: one test binary, a module per area, and one
//! [`support`] module they share. See `docs/testing.md` for what each area covers and
//! which external tools (the pinned Claude Code CLI, the Python MCP SDK) it needs.

mod support;

mod claude_cli;
mod claude_fixtures;
mod claude_windows;
mod config;
mod doctor;
mod dry_run;
mod hud;
mod inputs;
mod layers;
mod mcp;
mod mcp_agents;
mod mcp_claude;
mod model_server;
mod model_server_holds;
mod notifications;
mod outputs;
mod pipes;
mod plan;
mod profiles;
mod replay;
mod run;
mod session;
mod show;
mod sim_agent;
mod state_commands;
