//! The MCP supervisor: a JSON-RPC proxy that keeps a stdio MCP client connected across server restarts.
